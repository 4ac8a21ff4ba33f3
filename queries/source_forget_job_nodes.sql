-- A file ingested again with other options: delete the hosts of the jobs the sources
-- $source_ids (a list) stored (run before source_forget_jobs; a job id and start has one row).
delete from job_nodes n
where exists (select 1 from jobs j
              where list_contains($source_ids, j.source_id) and j.job_id = n.job_id
                and j.start_at is not distinct from n.start_at);
