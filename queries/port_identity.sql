-- What the newest topology at or before $at knows of port GUIDs and LIDs: for each port GUID or
-- LID, the node GUID it belongs to. Used to resolve CA port GUIDs and bare LIDs in other captures.
select port_guid, lid, guid, port
from ports
-- GUIDs do not change with time: a capture older than every snapshot uses the first one.
where seen_at = coalesce((select max(seen_at) from ports where seen_at <= $at),
                         (select min(seen_at) from ports))
  and (port_guid is not null or lid is not null);
