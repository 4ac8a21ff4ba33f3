-- Jobs of the window (the newest record of each job id and start) in state $state that ran
-- through one of the spans [$span_lo[i], $span_hi[i]] whole: started by its start and ended at
-- or after its end, on at least one of the hosts $hosts (as job_nodes names them), with all
-- their hosts. The jobs that lived through a flap next to those hosts (issue #15).
-- A job's hosts come back as one string, sorted and joined by commas (store/jobs.py splits it; a
-- stored host name never holds a comma, JobTable.append refuses one), NULL for none: DuckDB
-- turning 155,000 names into Python lists cost ~13 ms of CPU more at 30 days (issue #13).
with near as (
    -- Only the runs on a host asked about (issue #13: at 30 days 12,937 jobs ran through a
    -- flap, ~4,000 of them next to one; the others were read, split and indexed for nothing).
    -- Job id and start are what `latest` partitions by: leaving other runs out before the
    -- window function changes no run's newest record.
    select distinct job_id, start_at
    from job_nodes
    where host in (select unnest($hosts::varchar[]))
      -- No run of the window has a lower job id. Slurm's ids rise with time and job_nodes
      -- is in ingest order: DuckDB skips the row groups of older jobs (issue #13: at 24h
      -- 13 -> 8 ms; at 30 days, whose runs span the table, it costs 2-3 ms).
      and job_id >= (select min(job_id) from jobs
                     where (end_at is null or end_at >= $since)
                       and (start_at is null or start_at <= $until))
),
latest as (
    select j.*
    from jobs j
    semi join near n on j.job_id = n.job_id and j.start_at = n.start_at
    where (j.end_at is null or j.end_at >= $since)
      and (j.start_at is null or j.start_at <= $until)
    qualify row_number() over (partition by j.job_id, j.start_at order by j.source_id desc) = 1
),
spans as (
    select unnest($span_lo::timestamp[]) as lo, unnest($span_hi::timestamp[]) as hi
),
chosen as (
    select l.* from latest l
    -- A semi join, not exists (...): 12 ms less CPU at 30 days, 84 spans (issue #13).
    semi join spans s on l.start_at <= s.lo and l.end_at >= s.hi
    where l.state = $state and l.start_at is not null and l.end_at is not null
),
hosts as (
    select n.job_id, n.start_at, array_to_string(list_sort(list(n.host)), ',') as hosts
    from job_nodes n
    semi join chosen c on n.job_id = c.job_id and n.start_at is not distinct from c.start_at
    group by n.job_id, n.start_at
)
select c.job_id, c.state, c.start_at, c.end_at, c.name, c.gpus, h.hosts
from chosen c
left join hosts h on h.job_id = c.job_id and h.start_at is not distinct from c.start_at
order by c.end_at, c.job_id;
