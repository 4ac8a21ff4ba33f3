-- Before a new computation is stored: the entries of the one before it go.
delete from watch_list_entries;
