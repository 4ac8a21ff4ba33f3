-- Drop the host lists of the jobs about to be re-inserted (same job id and start).
delete from job_nodes
using (select unnest($job_id) as job_id, unnest($start_at) as start_at) d
where job_nodes.job_id = d.job_id and job_nodes.start_at is not distinct from d.start_at;
