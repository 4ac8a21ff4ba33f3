-- The cached newest topology snapshot (schema 14): its time, the snapshot before, the topology
-- sources it was built from, its format, its lookup lists and each part's index columns.
select seen_at, prev_at, fingerprint, format, lookup, nodes, ports, links, peers, names, changed
from fabric_cache;
