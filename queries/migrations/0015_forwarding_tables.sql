-- Schema version 15: the switches' unicast forwarding tables (LFTs) with their history (issue
-- #23). A fabric of 4,096 hosts is ~400 switches x ~4,500 DLIDs a capture, and a sweep a
-- minute captures it 1,440 times a day, nearly always unchanged: so a capture stores only the
-- tables that differ (by `digest`) from the switch's table in effect before it, each as one
-- blob of out ports (byte d: the out port for DLID d, 255 for no route, from DLID 0 to
-- last_lid). The table in effect at a time is each switch's newest row at or before it. A
-- whole-fabric capture without a switch it had before stores a row with digest 'absent' and
-- an empty blob for it (the switch did not answer: no table until one has it again).
-- `lft_captures` keeps every capture (its time, how many tables it held and stored, the LMC its
-- owners showed), so "no change" is told from "not captured".
create table if not exists lft_captures (
    source_id integer not null,
    captured_at timestamp not null,
    switches integer not null,
    changed integer not null,
    lmc integer not null
);

create table if not exists lft_switches (
    source_id integer not null,
    captured_at timestamp not null,
    guid varchar not null,
    lid integer,
    description varchar not null,
    first_lid integer not null,
    last_lid integer not null,
    digest varchar not null,
    ports blob not null
);
