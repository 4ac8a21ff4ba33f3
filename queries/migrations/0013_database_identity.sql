-- Schema version 13: the database's identity (issue #21). `auditor export` records it with each
-- fabric's partitions and refuses to overwrite the partitions another database wrote: the
-- default fabric name is the file's name, and every pod's file is auditor.duckdb by default.
-- One row, written when the database is created, or when an older one is migrated: a random
-- UUID (copies of the file share it, as they share its history).
create table if not exists database_identity (
    id varchar not null,
    created_at timestamp not null
);
insert into database_identity
select cast(gen_random_uuid() as varchar), now() at time zone 'UTC'
where not exists (select 1 from database_identity);
