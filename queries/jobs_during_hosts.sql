-- jobs_during.sql for the jobs that ran on at least one of the hosts $hosts (as job_nodes names
-- them), with all their hosts: the jobs that may have lived through a long flap of those
-- hosts' cables (issue #13: at 30 days 5,410 jobs ran during such a flap, a few hundred on a
-- host of its link; the others were read and indexed for nothing).
-- A job's hosts come back as one string, sorted and joined by commas (store/jobs.py splits it; a
-- stored host name never holds a comma, JobTable.append refuses one), NULL for none.
with near as (
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
    -- As in jobs_during.sql: a semi join without an OR in its condition. Every span's lo is a
    -- time.
    semi join spans s on s.hi >= l.start_at and s.lo <= coalesce(l.end_at, 'infinity'::timestamp)
    where l.start_at is not null
),
hosts as (
    select n.job_id, n.start_at, array_to_string(list_sort(list(n.host)), ',') as hosts
    from job_nodes n
    semi join chosen c on n.job_id = c.job_id and n.start_at = c.start_at
    group by n.job_id, n.start_at
)
select c.job_id, c.state, c.start_at, c.end_at, c.name, c.gpus, h.hosts
from chosen c
left join hosts h on h.job_id = c.job_id and h.start_at = c.start_at
order by c.end_at nulls last, c.job_id;
