-- Bulk insert of port events of one source, skipping events already stored from another file
-- (rotated or re-shipped logs repeat lines): same time, device, port, state, code and origin.
insert into port_events (source_id, line_no, event_at, state, device, port_name, guid, port,
                         peer_device, peer_port_name, peer_guid, peer_port, cable_serial, code,
                         origin, message)
select $source_id, e.line_no, e.event_at, e.state, e.device, e.port_name, e.guid, e.port,
       e.peer_device, e.peer_port_name, e.peer_guid, e.peer_port, e.cable_serial, e.code,
       $origin, e.message
from (
    select unnest($line_no) as line_no, unnest($event_at) as event_at, unnest($state) as state,
           unnest($device) as device, unnest($port_name) as port_name, unnest($guid) as guid,
           unnest($port) as port, unnest($peer_device) as peer_device,
           unnest($peer_port_name) as peer_port_name, unnest($peer_guid) as peer_guid,
           unnest($peer_port) as peer_port, unnest($cable_serial) as cable_serial,
           unnest($code) as code, unnest($message) as message
) e
where not exists (
    select 1 from port_events p
    where p.event_at = e.event_at and p.state = e.state and p.origin = $origin
      and p.device is not distinct from e.device
      and p.port_name is not distinct from e.port_name
      and p.code is not distinct from e.code
);
