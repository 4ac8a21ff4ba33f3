-- Bulk insert of the links one source saw, from link_batch: the columns registered from Python
-- (store/topology.py), one row per link; (a_guid, a_port) < (b_guid, b_port).
insert into links (source_id, seen_at, a_guid, a_port, b_guid, b_port, width, speed)
select $source_id, $seen_at, a_guid::varchar, a_port::integer, b_guid::varchar,
       b_port::integer, width::varchar, speed::varchar
from link_batch;
