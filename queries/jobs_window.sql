-- Jobs that ran in [$since, $until] (the newest record of each job id and start), with their
-- hosts. Ended jobs end after $since; running ones (end null) started before $until.
with latest as (
    select *
    from jobs
    where (end_at is null or end_at >= $since) and (start_at is null or start_at <= $until)
    qualify row_number() over (partition by job_id, start_at order by source_id desc) = 1
)
select l.job_id, l.state, l.start_at, l.end_at, l.name, l.gpus,
       coalesce((select list(n.host order by n.host) from job_nodes n
                 where n.job_id = l.job_id and n.start_at is not distinct from l.start_at),
                []) as hosts
from latest l
order by l.end_at nulls last, l.job_id;
