-- A run for a window already remembered replaces it (a re-run of the same night): the run.
delete from suspect_runs where since = $since and until = $until;
