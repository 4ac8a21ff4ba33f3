-- Schema version 4: where things are (site / row / rack / U per node, faceplate labels per
-- port) and the replacements technicians recorded, to tell later whether they helped.
create table if not exists inventory (
    source_id integer not null,
    name varchar not null,
    site varchar,
    row_name varchar,
    rack varchar,
    u varchar
);

create table if not exists port_labels (
    source_id integer not null,
    name varchar not null,
    port integer not null,
    label varchar not null
);

create sequence if not exists replacement_ids start 1;

create table if not exists replacements (
    replacement_id integer primary key default nextval('replacement_ids'),
    ticket varchar not null,
    part varchar not null,              -- cable, transceiver-a, transceiver-b, switch-port
    replaced_at timestamp not null,
    a_guid varchar not null,
    a_port integer not null,
    b_guid varchar,
    b_port integer,
    a_name varchar,
    b_name varchar,
    old_serials varchar[],              -- serial numbers known at those ports before the swap
    recorded_at timestamp not null
);
