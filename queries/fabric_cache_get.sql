-- The cached newest topology snapshot (schema 14, indexes since 18): its time, the snapshot
-- before, the topology sources it was built from, its format, its lookup lists, each part's
-- index columns and the indexes made of them.
select seen_at, prev_at, fingerprint, format, lookup, nodes, ports, links, peers, names, changed,
       keys, adjacent, rates, rated
from fabric_cache;
