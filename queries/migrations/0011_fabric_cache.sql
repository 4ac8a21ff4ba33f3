-- Schema version 11: the newest topology snapshot kept ready to read (issue #13). Building the
-- fabric from the nodes, ports and links tables (and every port's last peer, and every node's
-- newest name) was 90 ms of every `suspects`, `report` and `watch-list`, three quarters of it
-- DuckDB handing 400,000 values to Python one by one. The ingest that stores a snapshot writes
-- its rows here once, as one marshal blob; `fingerprint` names the topology sources it was
-- built from, and a reader whose sources differ ignores the row and reads the tables.
create table if not exists fabric_cache (
    seen_at timestamp not null,
    fingerprint varchar not null,
    body blob not null
);
