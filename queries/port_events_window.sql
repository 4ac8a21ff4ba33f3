-- Port events between $since and $until (UTC), oldest first, with where they came from.
select e.event_at, e.state, e.device, e.port_name, e.guid, e.port, e.peer_device,
       e.peer_port_name, e.peer_guid, e.peer_port, e.cable_serial, e.code, e.origin,
       e.source_id, e.line_no, s.path, e.message
from port_events e
join sources s using (source_id)
where e.event_at >= $since and e.event_at <= $until
order by e.event_at, e.guid, e.port;
