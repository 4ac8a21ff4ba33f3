-- Links of the snapshot taken at $prev_at whose width or speed differ from the same link in
-- the snapshot taken at $seen_at (links missing from either are left out): all a ranking needs
-- of the snapshot before. Reading its 12,288 links whole cost 30-40 ms per `suspects`.
with now as (
    select a_guid, a_port, b_guid, b_port, max(width) as width, max(speed) as speed
    from links where seen_at = $seen_at
    group by a_guid, a_port, b_guid, b_port
),
before as (
    select a_guid, a_port, b_guid, b_port, max(width) as width, max(speed) as speed
    from links where seen_at = $prev_at
    group by a_guid, a_port, b_guid, b_port
)
select b.a_guid, b.a_port, b.b_guid, b.b_port, b.width, b.speed
from before b
join now n using (a_guid, a_port, b_guid, b_port)
where b.width is distinct from n.width or b.speed is distinct from n.speed
order by b.a_guid, b.a_port;
