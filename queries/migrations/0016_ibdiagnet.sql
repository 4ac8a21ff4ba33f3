-- Schema version 16 (issue #24, ibdiagnet runs). port_ber: the bit error rates a port's PHY reports itself (ibdiagnet
-- --get_phy_info, PHY_DB16), not computed from counters: raw (pre-FEC), effective (post-FEC)
-- and symbol BER, null where the run gave none. `origin` names the table and field mapping.
create table if not exists port_ber (
    source_id integer not null,
    seen_at timestamp not null,
    guid varchar not null,
    port integer not null,
    raw_ber double,
    effective_ber double,
    symbol_ber double,
    origin varchar not null
);

-- What an ibdiagnet run's source holds: a run whose db_csv has no NODES table (--disable_output
-- csv:nodes) and no net_dump is no topology snapshot, one without PM_INFO no counter reading,
-- and the queries that find snapshots (snapshot_times, counter_deltas, ...) must not take it
-- for one. Null for every other kind, whose kind says what it holds.
alter table sources add column if not exists has_topology boolean;
alter table sources add column if not exists has_counters boolean;
