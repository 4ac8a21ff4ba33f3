-- Place port events that had no fabric position once a topology snapshot names their device:
-- the parallel lists $device, $port_name, $guid, $port say where each (device, port name) is.
-- Events already placed are left as they are.
update port_events
set guid = m.guid, port = m.port
from (select unnest($device::varchar[]) as device, unnest($port_name::varchar[]) as port_name,
             unnest($guid::varchar[]) as guid, unnest($port::integer[]) as port) as m
where port_events.guid is null
  and port_events.device = m.device
  and port_events.port_name is not distinct from m.port_name;
