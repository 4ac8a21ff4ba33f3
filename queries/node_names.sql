-- The newest name of every node GUID ever seen (names outlive the node's presence).
select guid, arg_max(name, seen_at) as name, arg_max(node_type, seen_at) as node_type
from nodes
group by guid;
