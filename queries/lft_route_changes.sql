-- The times in ($since, $until] at which a forwarding-table capture changed some switch's table
-- (the routes in effect changed then; the captures between them repeat the same routes).
select distinct captured_at
from lft_captures
where captured_at > $since and captured_at <= $until and changed > 0
order by captured_at;
