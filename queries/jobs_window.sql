-- Jobs that ran in [$since, $until] (the newest record of each job id and start), with their
-- hosts. Ended jobs end after $since; running ones (end null) started before $until.
-- The hosts are one grouped join, not a subquery per job: 30 days hold ~100,000 jobs, and the
-- correlated form was most of `suspects --since 30d` (issue #13).
with latest as (
    select *
    from jobs
    where (end_at is null or end_at >= $since) and (start_at is null or start_at <= $until)
    qualify row_number() over (partition by job_id, start_at order by source_id desc) = 1
),
hosts as (
    select n.job_id, n.start_at, list(n.host order by n.host) as hosts
    from job_nodes n
    semi join latest l on n.job_id = l.job_id and n.start_at is not distinct from l.start_at
    group by n.job_id, n.start_at
)
select l.job_id, l.state, l.start_at, l.end_at, l.name, l.gpus,
       coalesce(h.hosts, []) as hosts
from latest l
left join hosts h on h.job_id = l.job_id and h.start_at is not distinct from l.start_at
order by l.end_at nulls last, l.job_id;
