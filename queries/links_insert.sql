-- Bulk insert of links seen by one source; (a_guid, a_port) < (b_guid, b_port).
insert into links (source_id, seen_at, a_guid, a_port, b_guid, b_port, width, speed)
select $source_id, $seen_at, unnest($a_guid), unnest($a_port), unnest($b_guid),
       unnest($b_port), unnest($width), unnest($speed);
