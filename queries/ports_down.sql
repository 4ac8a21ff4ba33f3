-- Ports that carried a link in an earlier topology snapshot but carry none in the snapshot taken
-- at $seen_at (and are not LinkUp there), on nodes that are still present; with their last
-- peer (GUID, port, name as last seen) and when they went down.
with ends as (
    select seen_at, a_guid as guid, a_port as port, b_guid as peer_guid, b_port as peer_port
    from links where seen_at <= $seen_at
    union all
    select seen_at, b_guid, b_port, a_guid, a_port
    from links where seen_at <= $seen_at
),
last_up as (
    select guid, port,
           max(seen_at) as last_seen_up,
           arg_max(peer_guid, seen_at) as peer_guid,
           arg_max(peer_port, seen_at) as peer_port
    from ends
    group by guid, port
),
snaps as (
    select distinct observed_at from sources
    where (kind in ('ibnetdiscover', 'iblinkinfo') or (kind = 'ibdiagnet' and has_topology))
      and observed_at <= $seen_at
)
select l.guid, l.port, l.peer_guid, l.peer_port, l.last_seen_up,
       (select min(s.observed_at) from snaps s where s.observed_at > l.last_seen_up) as down_since,
       (select max(n.name) from nodes n
        where n.guid = l.peer_guid and n.seen_at = l.last_seen_up) as peer_name
from last_up l
where l.last_seen_up < $seen_at
  and l.guid in (select guid from nodes where seen_at = $seen_at)
  -- up (LinkUp) with no peer the tool could place ("Port not available") is not down
  and not exists (select 1 from ports p where p.seen_at = $seen_at and p.guid = l.guid
                  and p.port = l.port and p.phys_state = 'LinkUp')
order by l.guid, l.port;
