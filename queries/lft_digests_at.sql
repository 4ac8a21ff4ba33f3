-- The digest of each switch's forwarding table in effect at $at (its newest row at or before).
select guid, arg_max(digest, captured_at) as digest
from lft_switches
where captured_at <= $at
group by guid;
