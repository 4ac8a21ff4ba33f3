-- The newest known module in each switch port (as transceivers_latest picks it), for the ports
-- ($guids[i], $ports[i]) only (a port may be null): the report's findings' parts, without
-- turning every module of the fabric into Python rows (393,216 at 65,536 GPUs, issue #25).
with latest as (
    select device, port_name, arg_max(guid, seen_at) as guid, arg_max(port, seen_at) as port,
           arg_max(present, seen_at) as present, arg_max(vendor, seen_at) as vendor,
           arg_max(part_number, seen_at) as part_number,
           arg_max(serial_number, seen_at) as serial_number, arg_max(length, seen_at) as length,
           arg_max(cable_type, seen_at) as cable_type, max(seen_at) as seen_at,
           arg_max(revision, seen_at) as revision, arg_max(lot, seen_at) as lot
    from transceivers
    group by device, port_name
),
wanted as (
    select unnest($guids::varchar[]) as guid, unnest($ports::integer[]) as port
)
select l.*
from latest l
semi join wanted w on l.guid = w.guid and l.port is not distinct from w.port
order by l.device, l.port_name;
