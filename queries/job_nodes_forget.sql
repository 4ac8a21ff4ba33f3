-- Drop the host lists of the staged jobs (same job id and start), about to be re-inserted.
delete from job_nodes
using staged_jobs d
where job_nodes.job_id = d.job_id and job_nodes.start_at is not distinct from d.start_at;
