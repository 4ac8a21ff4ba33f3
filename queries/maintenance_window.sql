-- Maintenance windows that overlap [$since, $until].
select distinct target, start_at, end_at, reason
from maintenance
where end_at >= $since and start_at <= $until
order by start_at;
