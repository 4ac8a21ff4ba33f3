-- Schema version 1: the fabric (nodes, ports, links) and counters, every row stamped with the
-- time it was seen (seen_at, UTC) and the source it came from. Later versions are forward
-- migrations in queries/migrations/NNNN_name.sql.
create table if not exists schema_version (
    version integer not null,
    applied_at timestamp not null
);

create sequence if not exists source_ids start 1;

create table if not exists sources (
    source_id integer primary key default nextval('source_ids'),
    kind varchar not null,
    path varchar not null,
    sha256 varchar not null,
    origin varchar not null,            -- 'file', 'local' or the management host of a sweep
    observed_at timestamp,              -- --at: when the snapshot was taken (UTC)
    explicit_at boolean not null,       -- whether observed_at was given (re-ingest key)
    ingested_at timestamp not null,
    lines_total integer not null,
    lines_unparsed integer not null,
    records integer not null
);

create table if not exists nodes (
    source_id integer not null,
    seen_at timestamp not null,
    guid varchar not null,
    node_type varchar not null,
    description varchar not null,
    name varchar not null,
    model varchar,
    device varchar,
    num_ports integer,
    lid integer
);

create table if not exists ports (
    source_id integer not null,
    seen_at timestamp not null,
    guid varchar not null,
    port integer not null,
    port_guid varchar,
    lid integer,
    state varchar,
    phys_state varchar,
    width varchar,
    speed varchar,
    could_be_width varchar,
    could_be_speed varchar
);

create table if not exists links (
    source_id integer not null,
    seen_at timestamp not null,
    a_guid varchar not null,
    a_port integer not null,
    b_guid varchar not null,
    b_port integer not null,
    width varchar,
    speed varchar
);

create table if not exists counters (
    source_id integer not null,
    seen_at timestamp not null,
    guid varchar not null,
    port integer,                       -- null: the switch aggregate (ibqueryerrors "port ALL")
    counter varchar not null,
    value bigint not null
);
