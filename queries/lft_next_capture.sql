-- The first forwarding-table capture after $at (a capture ingested out of order has a later
-- one to keep right): its source and time.
select source_id, captured_at
from lft_captures
where captured_at > $at
order by captured_at, source_id
limit 1;
