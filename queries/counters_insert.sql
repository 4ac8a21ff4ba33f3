-- Bulk insert of counter readings of one source (one row per port and counter).
insert into counters (source_id, seen_at, guid, port, counter, value)
select $source_id, $seen_at, unnest($guid), unnest($port), unnest($counter), unnest($value);
