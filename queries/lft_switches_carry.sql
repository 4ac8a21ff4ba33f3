-- A capture ingested before a later one ($next_at, of $next_source_id) changed the tables of
-- the switches $guid: the later capture, which stored only what changed from the tables in
-- effect before it, saw the older tables where it stored nothing, so it gets a copy of each
-- (the switch's newest row before $at).
insert into lft_switches (source_id, captured_at, guid, lid, description, first_lid, last_lid,
                          digest, ports)
select $next_source_id, $next_at, guid, lid, description, first_lid, last_lid, digest, ports
from (select *, row_number() over (partition by guid order by captured_at desc) as k
      from lft_switches
      where captured_at < $at and list_contains($guid, guid)) as prev
where k = 1
  and not exists (select 1 from lft_switches n
                  where n.guid = prev.guid and n.captured_at = $next_at);
