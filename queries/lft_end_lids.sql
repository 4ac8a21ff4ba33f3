-- The CA and router ports of the topology snapshot taken at $seen_at that have a LID: the ends
-- of the routes (a route ends at the port owning its DLID). Only what routing needs, read
-- without building the whole fabric (4,096 hosts: 0.2 s of the fabric's objects).
select p.guid, p.port, max(p.lid) as lid
from ports p
where p.seen_at = $seen_at
  and p.lid is not null and p.lid <> 0
  and exists (select 1 from nodes n
              where n.seen_at = $seen_at and n.guid = p.guid
                and n.node_type in ('hca', 'router'))
group by p.guid, p.port
order by p.guid, p.port;
