-- The newest known module in every switch port.
select device, port_name, arg_max(guid, seen_at) as guid, arg_max(port, seen_at) as port,
       arg_max(present, seen_at) as present, arg_max(vendor, seen_at) as vendor,
       arg_max(part_number, seen_at) as part_number,
       arg_max(serial_number, seen_at) as serial_number, arg_max(length, seen_at) as length,
       arg_max(cable_type, seen_at) as cable_type, max(seen_at) as seen_at,
       arg_max(revision, seen_at) as revision, arg_max(lot, seen_at) as lot
from transceivers
group by device, port_name
order by device, port_name;
