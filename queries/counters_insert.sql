-- Bulk insert of counter readings of one source (one row per port and counter). counter_batch
-- is the columns registered from Python (store._counter_columns); port -1 stands for NULL, the
-- switch aggregate (ibqueryerrors "port ALL").
insert into counters (source_id, seen_at, guid, port, counter, value)
select $source_id, $seen_at, guid::varchar, nullif(port, -1)::integer, counter::varchar,
       value::bigint
from counter_batch;
