-- The times of topology snapshots at or before $at, newest first (at most $limit).
select distinct observed_at
from sources
where (kind in ('ibnetdiscover', 'iblinkinfo') or (kind = 'ibdiagnet' and has_topology))
  and observed_at <= $at
order by observed_at desc
limit $limit;
