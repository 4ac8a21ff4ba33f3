-- Bulk insert of the ports one source saw, from port_batch: the columns registered from Python
-- (store/topology.py), one row per port.
insert into ports (source_id, seen_at, guid, port, port_guid, lid, state, phys_state, width,
                   speed, could_be_width, could_be_speed)
select $source_id, $seen_at, guid::varchar, port::integer, port_guid::varchar, lid::integer,
       state::varchar, phys_state::varchar, width::varchar, speed::varchar,
       could_be_width::varchar, could_be_speed::varchar
from port_batch;
