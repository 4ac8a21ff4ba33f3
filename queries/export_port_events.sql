-- `auditor export`: the port events of the day [$day, $day + 1 day), as Parquet at $path.
copy (
    select event_at, state, device, port_name, guid, port, peer_device, peer_port_name,
           peer_guid, peer_port, cable_serial, code, origin, message
    from port_events
    where event_at >= $day and event_at < $day + interval 1 day
    order by event_at, guid nulls last, port nulls last, origin, state, source_id, line_no
) to $path (format parquet);
