-- Cache the newest topology snapshot (auditor/store/fabric_codec.py _encode_fabric says what
-- each part holds).
insert into fabric_cache (seen_at, prev_at, fingerprint, format, lookup, nodes, ports, links,
                          peers, names, changed, keys, adjacent, rates, rated)
values ($seen_at, $prev_at, $fingerprint, $format, $lookup, $nodes, $ports, $links, $peers,
        $names, $changed, $keys, $adjacent, $rates, $rated);
