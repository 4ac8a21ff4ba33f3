-- Drop earlier records of the staged jobs (same job id and start): the newer state wins (a
-- running job that has since failed).
delete from jobs
using staged_jobs d
where jobs.job_id = d.job_id and jobs.start_at is not distinct from d.start_at;
