-- The cohorts' counts (issue #25): the parts of cohort_parts.sql counted in SQL. Per field
-- (part_number, vendor, firmware, lot) and known value: its parts, those with an incident, their
-- incidents, and (of a vendor, firmware or lot) its most common part number, a tie to the one
-- whose first part comes first in ident order; and one row of field '' with the totals of
-- every part. 196,608 parts as Python rows, counted there, were 0.5 s of `report` at 65,536
-- GPUs. $guids, $ports and $incidents as for cohort_parts.
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
),
per_part as materialized (
    select ident,
           arg_min(part_number, i) filter (where part_number <> '') as part_number,
           arg_min(vendor, i) filter (where vendor <> '') as vendor,
           arg_min(firmware, i) filter (where firmware <> '') as firmware,
           arg_min(lot, i) filter (where lot <> '') as lot,
           max(incidents) as incidents
    from parts
    group by ident
),
numbered as materialized (
    select *, row_number() over (order by ident) as k from per_part
),
long as (
    select 'part_number' as field, part_number as value, part_number as number, incidents, k
    from numbered
    union all select 'vendor', vendor, part_number, incidents, k from numbered
    union all select 'firmware', firmware, part_number, incidents, k from numbered
    union all select 'lot', lot, part_number, incidents, k from numbered
),
pairs as (
    select field, value, number, count(*) as n, min(k) as first_k
    from long
    where value is not null and number is not null
    group by field, value, number
),
top as (
    select field, value, first(number order by n desc, first_k asc) as top_number
    from pairs
    group by field, value
),
counts as (
    select field, value, count(*) as parts, count(*) filter (where incidents <> 0) as hit,
           coalesce(sum(incidents) filter (where incidents <> 0), 0) as incidents
    from long
    where value is not null
    group by field, value
)
select c.field, c.value, c.parts, c.hit, c.incidents, t.top_number
from counts c
left join top t on t.field = c.field and t.value = c.value
union all
select '', null, count(*), count(*) filter (where incidents <> 0),
       coalesce(sum(incidents), 0), null
from per_part;
