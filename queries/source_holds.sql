-- Mark what the ibdiagnet run stored as source $source_id holds: a topology snapshot
-- ($has_topology) and counter readings ($has_counters).
update sources set has_topology = $has_topology, has_counters = $has_counters
where source_id = $source_id;
