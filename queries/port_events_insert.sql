-- Move the staged events into port_events, skipping events already stored from another file
-- (rotated or re-shipped logs repeat lines): same time, device, port, state, code and origin.
insert into port_events (source_id, line_no, event_at, state, device, port_name, guid, port,
                         peer_device, peer_port_name, peer_guid, peer_port, cable_serial, code,
                         origin, message)
select $source_id, e.line_no, e.event_at, e.state, e.device, e.port_name, e.guid, e.port,
       e.peer_device, e.peer_port_name, e.peer_guid, e.peer_port, e.cable_serial, e.code,
       $origin, e.message
from staged_events e
-- Plain equalities (coalesced) let DuckDB answer this with a hash anti-join.
where not exists (
    select 1 from port_events p
    where p.event_at = e.event_at and p.state = e.state and p.origin = $origin
      and coalesce(p.device, '') = coalesce(e.device, '')
      and coalesce(p.port_name, '') = coalesce(e.port_name, '')
      and coalesce(p.code, '') = coalesce(e.code, '')
);
