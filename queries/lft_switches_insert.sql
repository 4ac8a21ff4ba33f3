-- Bulk insert of the forwarding tables a capture changed; every list parameter has one
-- element per switch ($ports: blobs, one out-port byte per DLID from 0).
insert into lft_switches (source_id, captured_at, guid, lid, description, first_lid, last_lid,
                          digest, ports)
select $source_id, $captured_at, unnest($guid), unnest($lid), unnest($description),
       unnest($first_lid), unnest($last_lid), unnest($digest), unnest($ports);
