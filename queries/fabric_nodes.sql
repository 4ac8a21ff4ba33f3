-- Nodes of the topology snapshot taken at $seen_at (several sources of one snapshot merged).
select guid,
       any_value(node_type) as node_type,
       max(description) as description,
       max(name) as name,
       max(model) as model,
       max(device) as device,
       max(lid) as lid
from nodes
where seen_at = $seen_at
group by guid
order by guid;
