-- Ports of the topology snapshot taken at $seen_at; sources of one snapshot fill each other's gaps.
select guid, port,
       max(port_guid) as port_guid,
       max(lid) as lid,
       max(state) as state,
       max(phys_state) as phys_state,
       max(width) as width,
       max(speed) as speed,
       max(could_be_width) as could_be_width,
       max(could_be_speed) as could_be_speed
from ports
where seen_at = $seen_at
group by guid, port
order by guid, port;
