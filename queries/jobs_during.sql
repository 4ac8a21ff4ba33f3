-- Jobs that ran in [$since, $until] (the newest record of each job id and start; ended jobs end
-- after $since, running ones started before $until) and that had started and were running at
-- some moment of one of the spans [$span_lo[i], $span_hi[i]], with their hosts: the jobs a log
-- written then may belong to, or that ran through a long flap.
-- A job's hosts come back as one string, sorted and joined by commas (store/jobs.py splits it; a
-- stored host name never holds a comma, JobTable.append refuses one), NULL for none: DuckDB
-- turning 155,000 names into Python lists cost ~13 ms of CPU more at 30 days (issue #13).
with latest as (
    select *
    from jobs
    where (end_at is null or end_at >= $since) and (start_at is null or start_at <= $until)
    qualify row_number() over (partition by job_id, start_at order by source_id desc) = 1
),
spans as (
    select unnest($span_lo::timestamp[]) as lo, unnest($span_hi::timestamp[]) as hi
),
chosen as (
    select l.* from latest l
    -- A semi join, not exists (...): 15 ms less CPU at 30 days (issue #13); with an OR in
    -- its condition it became a nested loop, 3 times slower. Every span's lo is a time.
    semi join spans s on s.hi >= l.start_at and s.lo <= coalesce(l.end_at, 'infinity'::timestamp)
    where l.start_at is not null
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
order by c.end_at nulls last, c.job_id;
