-- The ports of the newest topology at or before $at whose port GUID is not their node's GUID (CA
-- ports), with the node GUID they belong to. Used to resolve CA port GUIDs in other captures.
-- GUIDs do not change with time: a capture older than every snapshot uses the first one. One
-- scalar subquery, so the time is a constant filter of the scan (two coalesced subqueries made
-- a nested-loop join: 22 ms instead of 7 ms over 30 snapshots of 24,576 ports).
select port_guid, guid, port
from ports
where seen_at = (select coalesce(max(seen_at) filter (where seen_at <= $at), min(seen_at))
                 from ports)
  and port_guid is not null and port_guid <> guid;
