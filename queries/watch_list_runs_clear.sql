-- Before a new computation is stored: the one before it goes.
delete from watch_list_runs;
