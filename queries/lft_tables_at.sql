-- Each switch's forwarding table in effect at $at: its newest row at or before it, unless that
-- row says the table was absent (a whole-fabric capture without it).
select guid, lid, description, first_lid, last_lid, ports
from (select *, row_number() over (partition by guid order by captured_at desc) as k
      from lft_switches
      where captured_at <= $at) as t
where k = 1 and digest <> 'absent'
order by guid;
