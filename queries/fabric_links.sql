-- Links of the topology snapshot taken at $seen_at, each once.
select a_guid, a_port, b_guid, b_port, max(width) as width, max(speed) as speed
from links
where seen_at = $seen_at
group by a_guid, a_port, b_guid, b_port
order by a_guid, a_port;
