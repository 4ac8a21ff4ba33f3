-- The newest forwarding-table capture at or before $at: its time and LMC (none: no row).
select captured_at, max(lmc) as lmc
from lft_captures
where captured_at = (select max(captured_at) from lft_captures where captured_at <= $at)
group by captured_at;
