-- Like port_events_stage, for the common case of events that name no peer, cable or code
-- (switch syslog, SNMP): six fewer columns to hand over from Python.
create or replace temp table staged_events as
select unnest($line_no) as line_no, make_timestamp(unnest($event_us)) as event_at,
       unnest($state) as state, unnest($device) as device, unnest($port_name) as port_name,
       unnest($guid) as guid, unnest($port) as port, null::varchar as peer_device,
       null::varchar as peer_port_name, null::varchar as peer_guid, null::integer as peer_port,
       null::varchar as cable_serial, null::varchar as code, unnest($message) as message;
