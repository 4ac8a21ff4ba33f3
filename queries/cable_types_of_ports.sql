-- The cable type of the newest known module in each switch port (as transceivers_latest picks
-- it), for the ports ($guids[i], $ports[i]) only: the BER rule's media, without turning every
-- module of the fabric into Python rows (24,576 of them cost 80 ms of each `suspects`).
with latest as (
    select device, port_name, arg_max(guid, seen_at) as guid, arg_max(port, seen_at) as port,
           arg_max(cable_type, seen_at) as cable_type
    from transceivers
    group by device, port_name
),
wanted as (
    select unnest($guids::varchar[]) as guid, unnest($ports::integer[]) as port
)
select l.guid, l.port, l.cable_type
from latest l
semi join wanted w on l.guid = w.guid and l.port = w.port
where l.cable_type is not null
order by l.device, l.port_name;
