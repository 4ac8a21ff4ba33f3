-- Records several ingested files at once, with the ids source_ids_next handed out (one row
-- per file; see source_insert for the columns).
insert into sources (source_id, kind, path, sha256, origin, observed_at, explicit_at,
                     ingested_at, lines_total, lines_unparsed, records, options)
select unnest($source_id), unnest($kind), unnest($path), unnest($sha256), unnest($origin),
       unnest($observed_at), unnest($explicit_at), unnest($ingested_at), unnest($lines_total),
       unnest($lines_unparsed), unnest($records), unnest($options);
