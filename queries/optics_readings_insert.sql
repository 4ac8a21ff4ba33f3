-- Transceiver diagnostics of one ingest: one row per lane (see migration 0007).
insert into optics_readings (source_id, read_at, device, port_name, guid, port, vendor,
                             part_number, serial_number, firmware, temperature_c, vcc_v, lane,
                             tx_bias_ma, tx_power_dbm, rx_power_dbm)
select $source_id, unnest($read_at), unnest($device), unnest($port_name), unnest($guid),
       unnest($port), unnest($vendor), unnest($part_number), unnest($serial_number),
       unnest($firmware), unnest($temperature_c), unnest($vcc_v), unnest($lane),
       unnest($tx_bias_ma), unnest($tx_power_dbm), unnest($rx_power_dbm);
