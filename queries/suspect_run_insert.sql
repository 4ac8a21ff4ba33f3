-- One nightly run's window (issue #15); its suspects follow in remembered_suspects_insert.
insert into suspect_runs (run_at, since, until, shown)
values ($run_at, $since, $until, $shown)
returning run_id;
