-- Port events derived from two topology snapshots: every link end present at $prev_at and gone
-- at $seen_at went down in between (unless still LinkUp there, or its node is gone while its
-- old peer port carries a link: a GUID that changed); every end linked at $seen_at but not at
-- $prev_at came up.
-- Stamped at $seen_at (the first time the change was seen) with origin 'topology'.
insert into port_events (source_id, line_no, event_at, state, device, port_name, guid, port,
                         peer_device, peer_port_name, peer_guid, peer_port, origin, message)
with now_ends as (
    select a_guid as guid, a_port as port, b_guid as peer_guid, b_port as peer_port
    from links where seen_at = $seen_at
    union
    select b_guid, b_port, a_guid, a_port from links where seen_at = $seen_at
),
prev_ends as (
    select a_guid as guid, a_port as port, b_guid as peer_guid, b_port as peer_port
    from links where seen_at = $prev_at
    union
    select b_guid, b_port, a_guid, a_port from links where seen_at = $prev_at
),
names as (
    select guid, max(name) as name from nodes where seen_at in ($seen_at, $prev_at) group by guid
),
changes as (
    select 'down' as state, p.* from prev_ends p
    where not exists (select 1 from now_ends n where n.guid = p.guid and n.port = p.port)
      -- still up with no peer the tool could place ("Port not available"): not down
      and not exists (select 1 from ports q where q.seen_at = $seen_at and q.guid = p.guid
                      and q.port = p.port and q.phys_state = 'LinkUp')
      -- its node is gone but the port it was cabled to is cabled to another node now: the
      -- node changed its GUID (an HCA swapped, two nodes sharing one), no link went down
      and not (p.guid not in (select guid from nodes where seen_at = $seen_at)
               and exists (select 1 from now_ends n where n.guid = p.peer_guid
                           and n.port = p.peer_port))
    union all
    select 'up', n.* from now_ends n
    where not exists (select 1 from prev_ends p where p.guid = n.guid and p.port = n.port)
)
select $source_id, 0, $seen_at, c.state, a.name, cast(c.port as varchar), c.guid, c.port,
       b.name, cast(c.peer_port as varchar), c.peer_guid, c.peer_port, 'topology',
       'link ' || c.state || ' between snapshots ' || strftime($prev_at, '%Y-%m-%dT%H:%M:%S')
       || ' and ' || strftime($seen_at, '%Y-%m-%dT%H:%M:%S')
from changes c
left join names a on a.guid = c.guid
left join names b on b.guid = c.peer_guid;
