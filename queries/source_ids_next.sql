-- $n new source ids, ascending: a command that ingests thousands of files takes its ids in one
-- statement and inserts its sources in one more (sources_insert_many).
select nextval('source_ids') as source_id from range($n) order by source_id;
