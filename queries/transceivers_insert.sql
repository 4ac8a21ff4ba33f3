-- Cable / transceiver inventory read from one switch (or the cabling plan: lot from #15, and
-- $source_id, the plan's source; null for a sweep's).
insert into transceivers (seen_at, device, port_name, guid, port, present, vendor, part_number,
                          serial_number, length, cable_type, revision, lot, source_id)
select $seen_at, $device, unnest($port_name), unnest($guid), unnest($port), unnest($present),
       unnest($vendor), unnest($part_number), unnest($serial_number), unnest($length),
       unnest($cable_type), unnest($revision), unnest($lot), $source_id;
