-- Schema version 5: job evidence as clusters write it. Untimed job-log lines keep the bounds
-- their stamped neighbours give, watchdog timeouts how long the stuck collective ran, and each
-- job log what NCCL said about itself (version, IB timeout and retry count set by environment)
-- and when it was written, so a log can be matched to its job by host and time.
alter table job_errors add column if not exists not_before timestamp;
alter table job_errors add column if not exists not_after timestamp;
alter table job_errors add column if not exists ran_ms bigint;

create table if not exists job_logs (
    source_id integer not null,
    job_id varchar,                     -- given with --job; else matched when ranking
    hosts varchar[] not null,           -- hosts named by the log's lines, as printed
    first_at timestamp,                 -- earliest and latest stamp of its failure lines
    last_at timestamp,
    written_at timestamp,               -- the file's mtime when it was ingested
    nccl_versions varchar[] not null,
    ib_timeout integer,                 -- NCCL_IB_TIMEOUT set by environment (INFO line)
    ib_retry_cnt integer
);
