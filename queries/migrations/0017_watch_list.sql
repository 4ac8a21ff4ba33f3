-- Schema version 17: the optics watch list precomputed (issue #25). At 4,096 modules x 30 days
-- the list cost 6-8 s of every `suspects` and `report`, and grows with the modules: the nightly
-- run (or `auditor watch-list --refresh`) computes it once and keeps the newest computation
-- here. One row in watch_list_runs, its entries in watch_list_entries; a new computation
-- replaces both. The readers use it only while the readings it was computed from are the ones
-- their own window holds (watch_list_runs' readings, newest_read_at and newest_source_id, as
-- `optics_fingerprint` counts them), and the [optics] settings are the same.
create table if not exists watch_list_runs (
    computed_at timestamp not null,    -- wall clock, UTC, when it was computed
    took_s double not null,
    since timestamp not null,          -- the readings' window it was computed on
    until timestamp not null,
    readings bigint not null,          -- lane rows of optics_readings in [since, until]
    newest_read_at timestamp,          -- the newest of them
    newest_source_id bigint,           -- the newest source among them
    settings varchar not null,         -- the [optics] settings, as JSON
    modules integer not null           -- modules with readings in the window
);

create table if not exists watch_list_entries (
    rank integer not null,             -- 1: the strongest
    device varchar not null,
    port_name varchar not null,
    serial_number varchar,
    part_number varchar,
    vendor varchar,
    firmware varchar,
    guid varchar,
    port integer,
    lane integer,                      -- null: the module as a whole
    days integer not null,
    last_at timestamp not null,
    peer_guid varchar,
    peer_port integer,
    peer_name varchar,
    -- the findings as JSON: [[rule, quantity, sentence, strength, days_to_threshold,
    -- threshold, trending_past_warning], ...] in the order they were found
    findings varchar not null
);
