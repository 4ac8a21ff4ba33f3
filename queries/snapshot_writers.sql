-- The sources whose nodes, ports or links make the topology snapshot taken at $seen_at (what
-- fabric_nodes, fabric_ports and fabric_links read of it).
select source_id from nodes where seen_at = $seen_at
union
select source_id from ports where seen_at = $seen_at
union
select source_id from links where seen_at = $seen_at;
