-- Records one ingested file and returns its id. $options: what besides the content changes the
-- result (JSON text), or null.
insert into sources (kind, path, sha256, origin, observed_at, explicit_at, ingested_at,
                     lines_total, lines_unparsed, records, options)
values ($kind, $path, $sha256, $origin, $observed_at, $explicit_at, $ingested_at,
        $lines_total, $lines_unparsed, $records, $options)
returning source_id;
