-- The stored watch list computation (at most one row).
select computed_at, took_s, since, until, readings, newest_read_at, newest_source_id, settings,
       modules
from watch_list_runs
order by computed_at desc
limit 1;
