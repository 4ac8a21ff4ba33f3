-- Bulk insert of ports seen by one source; every list parameter has one element per port.
insert into ports (source_id, seen_at, guid, port, port_guid, lid, state, phys_state, width,
                   speed, could_be_width, could_be_speed)
select $source_id, $seen_at, unnest($guid), unnest($port), unnest($port_guid), unnest($lid),
       unnest($state), unnest($phys_state), unnest($width), unnest($speed),
       unnest($could_be_width), unnest($could_be_speed);
