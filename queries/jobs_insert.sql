-- The staged jobs, as one source's; jobs_forget removed older records of the same (job id, start).
insert into jobs (source_id, job_id, state, start_at, end_at, name, partition, gpus, exit_code,
                  line_no)
select $source_id, job_id, state, start_at, end_at, name, partition, gpus, exit_code, line_no
from staged_jobs;
