-- Job logs that may hold evidence for [$since, $until]: logged for a job, or with a stamp or a
-- write time in (or a day around) the window. Undated logs without a job are matched by their
-- write time.
select source_id, job_id, hosts, first_at, last_at, written_at, nccl_versions, ib_timeout,
       ib_retry_cnt, coalesce(using_hcas, []) as using_hcas, ib_hca
from job_logs
where job_id is not null
   or (coalesce(last_at, written_at) >= $since - interval 1 day
       and coalesce(first_at, written_at) <= $until + interval 1 day)
order by source_id;
