-- The NCCL versions and the NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT pairs of every log that may
-- hold evidence for [$since, $until] (labelled with a job, or dated near the window): what
-- the site runs, for the jobs whose own log does not say. Distinct values only.
with logs as (
    select nccl_versions, ib_timeout, ib_retry_cnt
    from job_logs
    where job_id is not null
       or (coalesce(last_at, written_at) >= $since - interval 1 day
           and coalesce(first_at, written_at) <= $until + interval 1 day)
)
select 'version' as what, v as version, null::integer as ib_timeout,
       null::integer as ib_retry_cnt
from (select distinct unnest(nccl_versions) as v from logs)
union all
select distinct 'wait', null, ib_timeout, ib_retry_cnt
from logs
where ib_timeout is not null;
