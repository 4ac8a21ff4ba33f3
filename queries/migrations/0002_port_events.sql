-- Schema version 2: the switch-side evidence. Port state changes from every source, what each
-- source could not use (per reason), per-device collection status, SNMP port readings,
-- the cable/transceiver inventory, and the width of every IBTA counter (for saturation).
create table if not exists port_events (
    source_id integer not null,
    line_no integer not null,           -- line in the source file (0 for polls and snapshots)
    event_at timestamp not null,        -- UTC
    state varchar not null,             -- down, up, flap, unhealthy, switch_down, ...
    device varchar,                     -- as the source printed it
    port_name varchar,
    guid varchar,                       -- resolved through the fabric graph
    port integer,
    peer_device varchar,
    peer_port_name varchar,
    peer_guid varchar,
    peer_port integer,
    cable_serial varchar,
    code varchar,
    origin varchar not null,            -- syslog, ufm-events, opensm, snmp, topology, dmesg, ...
    message varchar
);

create table if not exists source_issues (
    source_id integer not null,
    reason varchar not null,
    lines integer not null,
    first_line_no integer,
    example varchar
);

create table if not exists device_status (
    checked_at timestamp not null,
    device varchar not null,
    collector varchar not null,         -- snmp, ssh, host
    status varchar not null,            -- ok, timeout, auth_failed, parse_failed, error, ...
    detail varchar
);

create table if not exists snmp_ports (
    polled_at timestamp not null,
    device varchar not null,
    if_index integer not null,
    if_name varchar,
    oper_status varchar,
    admin_status varchar,
    last_change_ticks bigint,
    sys_uptime_ticks bigint,
    in_errors bigint,
    out_errors bigint,
    hc_in_octets hugeint,
    hc_out_octets hugeint,
    symbol_errors bigint,
    phys_state varchar,
    guid varchar,
    port integer
);

create table if not exists transceivers (
    seen_at timestamp not null,
    device varchar not null,
    port_name varchar not null,
    guid varchar,
    port integer,
    present boolean,
    vendor varchar,
    part_number varchar,
    serial_number varchar,
    length varchar,
    cable_type varchar,
    revision varchar
);

create table if not exists counter_widths (
    counter varchar primary key,
    bits integer not null
);

-- IBTA PortCounters field widths: 4- and 8-bit counters saturate within minutes on a bad link.
insert into counter_widths values
    ('SymbolErrorCounter', 16), ('LinkErrorRecoveryCounter', 8), ('LinkDownedCounter', 8),
    ('PortRcvErrors', 16), ('PortRcvRemotePhysicalErrors', 16), ('PortRcvSwitchRelayErrors', 16),
    ('PortXmitDiscards', 16), ('PortXmitConstraintErrors', 8), ('PortRcvConstraintErrors', 8),
    ('LocalLinkIntegrityErrors', 4), ('ExcessiveBufferOverrunErrors', 4), ('VL15Dropped', 16),
    ('PortXmitWait', 32), ('QP1Dropped', 16)
on conflict do nothing;
