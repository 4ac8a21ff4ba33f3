-- The hosts of the staged jobs: one row per (job, host), in the order the NodeList names them.
insert into job_nodes (job_id, start_at, host)
select job_id, start_at, unnest(string_split(nodes, ','))
from staged_jobs
where nodes <> '';
