-- The LID of every port of the newest topology at or before $at, with the node GUID it belongs
-- to. Used to resolve bare LIDs (perfquery, iblinkinfo peers) in other captures. A capture
-- older than every snapshot uses the first one (see port_guid_owners).
select lid, guid
from ports
where seen_at = (select coalesce(max(seen_at) filter (where seen_at <= $at), min(seen_at))
                 from ports)
  and lid is not null and lid <> 0;
