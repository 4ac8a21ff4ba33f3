-- Job logs that may hold evidence for [$since, $until]: logged for a job that had not ended
-- before $jobs_since (a job the window can rank or count as healthy), or with a stamp or a
-- write time in (or a day around) the window. Undated logs without a job are matched by their
-- write time. A month of logs labelled with their job was every row of this query, 60 ms and
-- the loops over it, for the few hundred jobs a day's ranking looks at (issue #13).
-- The hosts a log names and its time span serve only to match a log without a job to one
-- (correlate._match_logs): NULL for a log labelled with its job (issue #13: at 30 days 6,105
-- labelled logs' 82,000 host names and 18,000 stamps made this query 38 ms, 15 ms without).
-- The Using lists as two lists of text, hosts and HCAs in step: as a list of structs (a dict per
-- pair in Python) a day's logs of a 65,536-GPU fabric, 675,800 pairs, were 1 s of `suspects`
-- (issue #25).
select source_id, job_id,
       case when job_id is null then hosts end as hosts,
       case when job_id is null then first_at end as first_at,
       case when job_id is null then last_at end as last_at,
       case when job_id is null then written_at end as written_at,
       nccl_versions, ib_timeout, ib_retry_cnt,
       [u.host for u in coalesce(using_hcas, [])] as using_hosts,
       [u.hca for u in coalesce(using_hcas, [])] as using_devices, ib_hca
from job_logs
where (job_id is not null
       and job_id in (select job_id from jobs where end_at is null or end_at >= $jobs_since))
   or (job_id is null
       and coalesce(last_at, written_at) >= $since - interval 1 day
       and coalesce(first_at, written_at) <= $until + interval 1 day)
order by source_id;
