-- How many forwarding-table captures are stored, the first and the last one's time.
select count(*) as captures, min(captured_at) as first_at, max(captured_at) as last_at
from lft_captures;
