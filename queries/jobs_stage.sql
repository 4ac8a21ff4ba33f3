-- Stage one file's jobs in a temporary table, so the statements after it read them once.
-- job_batch is the columns registered from Python (store._jobs_columns): start_at and end_at are
-- UTC, nodes a job's host names joined by commas. The casts fix the types of all-NULL columns.
create or replace temp table staged_jobs as
select job_id::varchar as job_id, state::varchar as state, start_at::timestamp as start_at,
       end_at::timestamp as end_at, nodes::varchar as nodes, name::varchar as name,
       partition::varchar as partition, gpus::integer as gpus, exit_code::varchar as exit_code,
       line_no::integer as line_no
from job_batch;
