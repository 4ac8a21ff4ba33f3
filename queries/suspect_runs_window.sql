-- The nightly runs that judged a moment in (since, until], oldest first.
select run_id, run_at, since, until, shown
from suspect_runs
where until > $since and until <= $until
order by until, run_id;
