-- Where a module with one of $serials was seen after $after: (serial, device, port, GUID, time).
select serial_number, device, port_name, guid, port, max(seen_at) as seen_at
from transceivers
where serial_number in (select unnest($serials)) and seen_at > $after
group by serial_number, device, port_name, guid, port;
