-- Declared maintenance windows from one file.
insert into maintenance (source_id, target, start_at, end_at, reason)
select $source_id, unnest($target), unnest($start_at), unnest($end_at), unnest($reason);
