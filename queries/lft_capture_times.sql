-- The times of the forwarding-table captures in ($since, $until], in order.
select distinct captured_at
from lft_captures
where captured_at > $since and captured_at <= $until
order by captured_at;
