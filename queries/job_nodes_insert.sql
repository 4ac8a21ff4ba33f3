-- The hosts of jobs: one row per (job, host).
insert into job_nodes (job_id, start_at, host)
select unnest($job_id), unnest($start_at), unnest($host);
