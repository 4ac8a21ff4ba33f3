-- The cohorts' parts (issue #15): the newest module known in every switch port (as
-- transceivers_latest picks it), present and in a known port, one part per serial number (else
-- device:port); each field its first non-empty value in (device, port_name) order, the
-- firmware the newest its module reported (as optics_firmware_latest), and its incidents: the
-- most of any of its ports ($guids[i], $ports[i] had $incidents[i]). As rows of five values,
-- ordered by the part: 393,216 modules as Python rows and a Part each were 2 s of `report` at
-- 65,536 GPUs (issue #25).
with latest as (
    select device, port_name, arg_max(guid, seen_at) as guid, arg_max(port, seen_at) as port,
           arg_max(present, seen_at) as present, arg_max(vendor, seen_at) as vendor,
           arg_max(part_number, seen_at) as part_number,
           arg_max(serial_number, seen_at) as serial_number, arg_max(lot, seen_at) as lot
    from transceivers
    group by device, port_name
),
firmware as (
    select serial_number, arg_max(firmware, read_at) as firmware
    from optics_readings
    where serial_number is not null and firmware is not null
    group by serial_number
),
incident as (
    select unnest($guids::varchar[]) as guid, unnest($ports::integer[]) as port,
           unnest($incidents::integer[]) as incidents
),
parts as (
    select coalesce(nullif(l.serial_number, ''), l.device || ':' || l.port_name) as ident,
           row_number() over (order by l.device, l.port_name) as i,
           l.part_number, l.vendor, l.lot, f.firmware, coalesce(n.incidents, 0) as incidents
    from latest l
    left join firmware f on f.serial_number = coalesce(l.serial_number, '')
    left join incident n on n.guid = l.guid and n.port = l.port
    where l.guid is not null and l.port is not null and l.present is distinct from false
)
select ident,
       arg_min(part_number, i) filter (where part_number <> '') as part_number,
       arg_min(vendor, i) filter (where vendor <> '') as vendor,
       arg_min(firmware, i) filter (where firmware <> '') as firmware,
       arg_min(lot, i) filter (where lot <> '') as lot,
       max(incidents) as incidents
from parts
group by ident
order by ident;
