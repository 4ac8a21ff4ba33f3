-- One forwarding-table capture: $source_id, $captured_at, $switches (tables it held),
-- $changed (tables stored: those that differed), $lmc.
insert into lft_captures (source_id, captured_at, switches, changed, lmc)
values ($source_id, $captured_at, $switches, $changed, $lmc);
