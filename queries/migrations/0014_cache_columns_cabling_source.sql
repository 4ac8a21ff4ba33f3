-- Schema version 14 (issue #21). fabric_cache as typed columns whose reading allocates only
-- from the bytes actually there (auditor/store/fabric_codec.py _encode_fabric). Schema 11's
-- marshal blob claimed its own counts: 5 bytes claiming 2**31 items made every command that
-- reads the fabric ask for 16 GiB, and a body of the right fingerprint but the wrong shape
-- crashed them.
-- The old row is dropped; the store rebuilds the cache from the tables after this step.
drop table if exists fabric_cache;
create table fabric_cache (
    seen_at timestamp not null,     -- the newest snapshot
    prev_at timestamp,              -- the snapshot before it (null: none)
    fingerprint varchar not null,   -- the topology sources it was built from (fabric_fingerprint)
    format integer not null,
    lookup blob not null,           -- JSON [strings, numbers]: every distinct value once
    nodes blob not null,            -- each part: uint32 LE indexes into lookup, column by column
    ports blob not null,
    links blob not null,
    peers blob not null,
    names blob not null,
    changed blob not null
);

-- The cabling plan's part records name the source that stored them, as every other kind's
-- records do, so a source forgotten (the same file read again with other options) takes them
-- along. Rows stored before have none; so do a sweep's, which come from no file.
alter table transceivers add column if not exists source_id integer;
