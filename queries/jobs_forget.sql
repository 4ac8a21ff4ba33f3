-- Drop earlier records of jobs a newer export describes again (same job id and start): the
-- newer state wins (a running job that has since failed).
delete from jobs
using (select unnest($job_id) as job_id, unnest($start_at) as start_at) d
where jobs.job_id = d.job_id and jobs.start_at is not distinct from d.start_at;
