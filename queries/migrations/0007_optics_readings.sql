-- Schema version 7: transceiver diagnostics (DDM / DOM) as history (issue #14). One row per
-- lane of each module reading, the module's own fields repeated on every lane; a module
-- without per-lane values has one row with lane null. The module's alarm and warning
-- thresholds are kept per reading (firmware can change them); a threshold of 0 or absent is
-- stored as null ("none"), never as a limit.
create table if not exists optics_readings (
    source_id bigint,
    read_at timestamp not null,
    device varchar not null,           -- the switch or host the module sits in
    port_name varchar not null,        -- as the device names it: IB1/17, mlx5_0/1, ...
    guid varchar,                      -- the port, when the topology places it
    port integer,
    vendor varchar,
    part_number varchar,
    serial_number varchar,
    firmware varchar,
    temperature_c double,
    vcc_v double,
    lane integer,
    tx_bias_ma double,
    tx_power_dbm double,
    rx_power_dbm double
);

create table if not exists optics_thresholds (
    source_id bigint,
    read_at timestamp not null,
    device varchar not null,
    port_name varchar not null,
    serial_number varchar,
    quantity varchar not null,         -- temperature_c, vcc_v, tx_bias_ma, tx_power_dbm, rx_power_dbm
    low_alarm double,
    low_warning double,
    high_warning double,
    high_alarm double
);
