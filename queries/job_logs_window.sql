-- Job logs that may hold evidence for [$since, $until]: logged for a job that had not ended
-- before $jobs_since (a job the window can rank or count as healthy), or with a stamp or a
-- write time in (or a day around) the window. Undated logs without a job are matched by their
-- write time. A month of logs labelled with their job was every row of this query, 60 ms and
-- the loops over it, for the few hundred jobs a day's ranking looks at (issue #13).
-- The hosts a log names and its time span serve only to match a log without a job to one
-- (correlate._match_logs): NULL for a log labelled with its job (issue #13: at 30 days 6,105
-- labelled logs' 82,000 host names and 18,000 stamps made this query 38 ms, 15 ms without).
-- Of the Using lists only their length: the lists themselves are read for the few jobs the
-- healthy-job evidence judges (job_log_using.sql; issue #25: a month's 3.8 million (host, HCA)
-- pairs at 65,536 GPUs, read for every log, were seconds and hundreds of MB of `suspects`).
select source_id, job_id,
       case when job_id is null then hosts end as hosts,
       case when job_id is null then first_at end as first_at,
       case when job_id is null then last_at end as last_at,
       case when job_id is null then written_at end as written_at,
       nccl_versions, ib_timeout, ib_retry_cnt,
       len(coalesce(using_hcas, [])) as using_pairs, ib_hca
from job_logs
where (job_id is not null
       and job_id in (select job_id from jobs where end_at is null or end_at >= $jobs_since))
   or (job_id is null
       and coalesce(last_at, written_at) >= $since - interval 1 day
       and coalesce(first_at, written_at) <= $until + interval 1 day)
order by source_id;
