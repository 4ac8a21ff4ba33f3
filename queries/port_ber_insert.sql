-- The BERs ports reported themselves in one ibdiagnet run (PHY_DB16), under its source.
insert into port_ber (source_id, seen_at, guid, port, raw_ber, effective_ber, symbol_ber, origin)
select $source_id, $seen_at, unnest($guid), unnest($port), unnest($raw_ber),
       unnest($effective_ber), unnest($symbol_ber), unnest($origin);
