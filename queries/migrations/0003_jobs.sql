-- Schema version 3: jobs and what they say about the network. Job allocations (one row per
-- job id and start; a requeued job keeps its id), the hosts of each, failure lines from job
-- logs, host addresses (IPoIB / OOB / GID) and declared maintenance windows.
create table if not exists jobs (
    source_id integer not null,
    job_id varchar not null,
    state varchar not null,
    start_at timestamp,
    end_at timestamp,
    name varchar,
    partition varchar,
    gpus integer,
    exit_code varchar,
    line_no integer
);

create table if not exists job_nodes (
    job_id varchar not null,
    start_at timestamp,
    host varchar not null
);

create table if not exists job_errors (
    source_id integer not null,
    job_id varchar,                     -- given with --job, or matched by host and time
    line_no integer not null,
    event_at timestamp,
    kind varchar not null,
    network boolean not null,
    host varchar,
    hca varchar,
    hca_port integer,
    peer varchar,
    status integer,
    status_name varchar,
    rank integer,
    is_first boolean not null,          -- first error of its (host, HCA, peer)
    message varchar
);

create table if not exists host_addresses (
    source_id integer not null,
    address varchar not null,
    host varchar not null
);

create table if not exists maintenance (
    source_id integer,                  -- null: declared in the config file
    target varchar not null,
    start_at timestamp not null,
    end_at timestamp not null,
    reason varchar
);
