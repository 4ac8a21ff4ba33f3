-- Bulk insert of the nodes one source saw, from node_batch: the columns registered from Python
-- (store/topology.py), one row per node.
insert into nodes (source_id, seen_at, guid, node_type, description, name, model, device,
                   num_ports, lid)
select $source_id, $seen_at, guid::varchar, node_type::varchar, description::varchar,
       name::varchar, model::varchar, device::varchar, null, lid::integer
from node_batch;
