-- Bulk insert of nodes seen by one source; every list parameter has one element per node.
insert into nodes (source_id, seen_at, guid, node_type, description, name, model, device,
                   num_ports, lid)
select $source_id, $seen_at, unnest($guid), unnest($node_type), unnest($description),
       unnest($name), unnest($model), unnest($device), unnest($num_ports), unnest($lid);
