-- The jobs each job log without a job may belong to: for each ask i, the jobs of [$since,
-- $until] (the newest record of each job id and start) that had started, were running at some
-- moment of [$ask_lo[i], $ask_hi[i]] on the host $ask_host[i] (as job_nodes names it) and ran
-- on every fabric host the log $ask_source[i] names. Names are brought to fabric hosts by the
-- caller's maps ($log_name[k] -> $log_host[k] for the names logs print, $job_name[k] ->
-- $job_host[k] for job_nodes'); a name that is in neither is no host. Each (log, job run) once.
-- No host lists come back (issue #25: a month's 13,000 logs had 16,600 candidate jobs with 1.25
-- million host names at 65,536 GPUs, read to be compared in Python).
with asks as (
    select unnest($ask_source::bigint[]) as source_id, unnest($ask_lo::timestamp[]) as lo,
           unnest($ask_hi::timestamp[]) as hi, unnest($ask_host::varchar[]) as host
),
near as (
    select a.source_id, a.lo, n.job_id, n.start_at
    from asks a
    join job_nodes n on n.host = a.host and n.start_at <= a.hi
    -- No run of the window has a lower job id, and job_nodes is in ingest order: DuckDB skips
    -- the row groups of older jobs.
    where n.job_id >= (select min(job_id) from jobs
                       where (end_at is null or end_at >= $since)
                         and (start_at is null or start_at <= $until))
),
latest as (
    select j.job_id, j.start_at, j.end_at
    from jobs j
    semi join near n on j.job_id = n.job_id and j.start_at = n.start_at
    where (j.end_at is null or j.end_at >= $since)
      and (j.start_at is null or j.start_at <= $until)
    qualify row_number() over (partition by j.job_id, j.start_at order by j.source_id desc) = 1
),
candidates as (
    select distinct n.source_id, l.job_id, l.start_at, l.end_at
    from near n
    join latest l on l.job_id = n.job_id and l.start_at = n.start_at
    where n.lo <= coalesce(l.end_at, 'infinity'::timestamp)
),
log_names as (
    select unnest($log_name::varchar[]) as name, unnest($log_host::varchar[]) as host
),
job_names as (
    select unnest($job_name::varchar[]) as name, unnest($job_host::varchar[]) as host
),
wanted as (
    select distinct g.source_id, m.host
    from (select source_id, unnest(hosts) as name
          from job_logs
          where source_id in (select source_id from candidates)) g
    join log_names m on m.name = g.name
),
need as (
    select source_id, count(*) as hosts from wanted group by source_id
),
ran as (
    select distinct n.job_id, n.start_at, m.host
    from job_nodes n
    semi join (select distinct job_id, start_at from candidates) c
        on n.job_id = c.job_id and n.start_at = c.start_at
    join job_names m on m.name = n.host
),
covered as (
    select c.source_id, c.job_id, c.start_at, count(*) as hosts
    from candidates c
    join wanted w on w.source_id = c.source_id
    join ran r on r.job_id = c.job_id and r.start_at = c.start_at and r.host = w.host
    group by c.source_id, c.job_id, c.start_at
)
select c.source_id, c.job_id, c.start_at, c.end_at
from candidates c
join covered v on v.source_id = c.source_id and v.job_id = c.job_id
    and v.start_at = c.start_at
join need d on d.source_id = c.source_id and d.hosts = v.hosts
order by c.source_id, c.end_at nulls last, c.job_id, c.start_at;
