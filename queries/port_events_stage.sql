-- Stage one source's port events in a temporary table (an anti-join against port_events is
-- then a fast hash join). event_us: microseconds since the Unix epoch, UTC.
create or replace temp table staged_events as
select unnest($line_no) as line_no, make_timestamp(unnest($event_us)) as event_at,
       unnest($state) as state, unnest($device) as device, unnest($port_name) as port_name,
       unnest($guid) as guid, unnest($port) as port, unnest($peer_device) as peer_device,
       unnest($peer_port_name) as peer_port_name, unnest($peer_guid) as peer_guid,
       unnest($peer_port) as peer_port, unnest($cable_serial) as cable_serial,
       unnest($code) as code, unnest($message) as message;
