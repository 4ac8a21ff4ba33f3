-- Stage one source's port events in a temporary table (an anti-join against port_events is
-- then a fast hash join). event_batch is the columns registered from Python; event_us is
-- microseconds since the Unix epoch, UTC. The casts fix the types of all-NULL columns.
create or replace temp table staged_events as
select line_no::integer as line_no, make_timestamp(event_us) as event_at,
       state::varchar as state, device::varchar as device, port_name::varchar as port_name,
       guid::varchar as guid, port::integer as port, peer_device::varchar as peer_device,
       peer_port_name::varchar as peer_port_name, peer_guid::varchar as peer_guid,
       peer_port::integer as peer_port, cable_serial::varchar as cable_serial,
       code::varchar as code, message::varchar as message
from event_batch;
