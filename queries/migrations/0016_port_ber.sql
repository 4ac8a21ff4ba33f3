-- Schema version 16 (issue #24): the bit error rates a port's PHY reports itself (ibdiagnet
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
