-- Records one ingested file and returns its id.
insert into sources (kind, path, sha256, origin, observed_at, explicit_at, ingested_at,
                     lines_total, lines_unparsed, records)
values ($kind, $path, $sha256, $origin, $observed_at, $explicit_at, $ingested_at,
        $lines_total, $lines_unparsed, $records)
returning source_id;
