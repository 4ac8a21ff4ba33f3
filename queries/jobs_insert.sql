-- Jobs of one source; the caller removed older records of the same (job id, start) first.
insert into jobs (source_id, job_id, state, start_at, end_at, name, partition, gpus, exit_code,
                  line_no)
select $source_id, unnest($job_id), unnest($state), unnest($start_at), unnest($end_at),
       unnest($name), unnest($partition), unnest($gpus), unnest($exit_code), unnest($line_no);
