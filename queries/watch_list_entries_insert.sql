-- A computation's entries, one list per column (one statement for the whole list).
insert into watch_list_entries (rank, device, port_name, serial_number, part_number, vendor,
                                firmware, guid, port, lane, days, last_at, peer_guid, peer_port,
                                peer_name, findings)
select unnest($rank), unnest($device), unnest($port_name), unnest($serial_number),
       unnest($part_number), unnest($vendor), unnest($firmware), unnest($guid), unnest($port),
       unnest($lane), unnest($days), unnest($last_at), unnest($peer_guid), unnest($peer_port),
       unnest($peer_name), unnest($findings);
