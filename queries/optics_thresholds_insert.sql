-- The alarm/warning thresholds the modules of one ingest report (null: none).
insert into optics_thresholds (source_id, read_at, device, port_name, serial_number, quantity,
                               low_alarm, low_warning, high_warning, high_alarm)
select $source_id, unnest($read_at), unnest($device), unnest($port_name),
       unnest($serial_number), unnest($quantity), unnest($low_alarm), unnest($low_warning),
       unnest($high_warning), unnest($high_alarm);
