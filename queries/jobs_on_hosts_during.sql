-- The jobs that ran on a host during a span, for many (host, span) asks at once: for each ask
-- i, the jobs of [$since, $until] (the newest record of each job id and start; ended jobs end
-- after $since, running ones started before $until) that had started and were running at some
-- moment of [$ask_lo[i], $ask_hi[i]] on the host $ask_host[i] (as job_nodes names it), each
-- job once with all its hosts and the distinct asks ($ask_id[i]) it answers. A long flap asks
-- for its span on its cable's hosts (or on its leaf's): every flap's span crossed with every
-- flapping host was most of a 65,536-GPU month's 207,000 jobs, read with their host lists
-- (issue #25). The job logs without a job ask jobs_of_logs.sql, which reads no host lists.
-- A job's hosts come back as one string, sorted and joined by commas (store/jobs.py splits it; a
-- stored host name never holds a comma, JobTable.append refuses one), NULL for none.
with asks as (
    select unnest($ask_id::bigint[]) as ask, unnest($ask_lo::timestamp[]) as lo,
           unnest($ask_hi::timestamp[]) as hi, unnest($ask_host::varchar[]) as host
),
near as (
    select a.ask, a.lo, n.job_id, n.start_at
    from asks a
    join job_nodes n on n.host = a.host and n.start_at <= a.hi
    -- No run of the window has a lower job id. Slurm's ids rise with time and job_nodes is in
    -- ingest order: DuckDB skips the row groups of older jobs (issue #13).
    where n.job_id >= (select min(job_id) from jobs
                       where (end_at is null or end_at >= $since)
                         and (start_at is null or start_at <= $until))
),
latest as (
    -- Job id and start are what the window function partitions by: leaving the runs on no
    -- host asked about out first changes no run's newest record.
    select j.*
    from jobs j
    semi join near n on j.job_id = n.job_id and j.start_at = n.start_at
    where (j.end_at is null or j.end_at >= $since)
      and (j.start_at is null or j.start_at <= $until)
    qualify row_number() over (partition by j.job_id, j.start_at order by j.source_id desc) = 1
),
chosen as (
    select l.job_id, l.start_at, list(distinct n.ask order by n.ask) as asks
    from near n
    join latest l on l.job_id = n.job_id and l.start_at = n.start_at
    where n.lo <= coalesce(l.end_at, 'infinity'::timestamp)
    group by l.job_id, l.start_at
),
hosts as (
    select n.job_id, n.start_at, array_to_string(list_sort(list(n.host)), ',') as hosts
    from job_nodes n
    semi join chosen c on n.job_id = c.job_id and n.start_at = c.start_at
    group by n.job_id, n.start_at
)
select l.job_id, l.state, l.start_at, l.end_at, l.name, l.gpus, h.hosts, c.asks
from chosen c
join latest l on l.job_id = c.job_id and l.start_at = c.start_at
left join hosts h on h.job_id = c.job_id and h.start_at = c.start_at
order by l.end_at nulls last, l.job_id;
