-- Schema version 8 (issue #15): what each nightly run ranked, so that the swaps and flaps that
-- follow can tell which suspects were right (auditor/analyse/outcomes.py), and the lot of a
-- part from the cabling plan (cohorts). A run is its window; its suspects are those its report
-- showed, each with the rules that ranked it and the failed jobs blamed on it (to add up the
-- GPU-hours lost before a fix without counting a job twice when windows overlap).
create sequence if not exists suspect_run_ids start 1;

create table if not exists suspect_runs (
    run_id integer primary key default nextval('suspect_run_ids'),
    run_at timestamp not null,          -- when the run started (UTC, wall clock)
    since timestamp not null,           -- its window (UTC); `until` is the moment it judged
    until timestamp not null,
    shown integer not null              -- suspects remembered (the report's)
);

create table if not exists remembered_suspects (
    run_id integer not null,
    rank integer not null,
    component varchar not null,         -- the verdict: cable, transceiver, switch_port, ...
    a_guid varchar not null,
    a_port integer,                     -- null: a whole switch or host
    a_name varchar,
    b_guid varchar,
    b_port integer,
    b_name varchar,
    score double not null,
    points double not null,
    rules varchar[] not null,           -- auditor.analyse.rank.RULES, weightiest first
    rule_points double[] not null,      -- the points of each, in the same order
    first_at timestamp,                 -- its first and last evidence in the run's window
    last_at timestamp,
    flaps integer not null,
    jobs_failed integer not null,
    gpu_hours_lost double not null,
    job_ids varchar[] not null,         -- the failed jobs blamed on it
    job_died_at timestamp[] not null,
    job_gpu_hours double[] not null
);

alter table transceivers add column if not exists lot varchar;
