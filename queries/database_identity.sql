-- This database's identity (migration 0013): the id it was given when it was created.
select id from database_identity order by created_at, id limit 1;
