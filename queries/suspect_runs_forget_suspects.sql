-- A run for a window already remembered replaces it (a re-run of the same night): its suspects.
delete from remembered_suspects
where run_id in (select run_id from suspect_runs where since = $since and until = $until);
