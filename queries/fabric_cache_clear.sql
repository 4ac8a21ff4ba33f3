-- Drop the cached snapshot (a new one replaces it).
delete from fabric_cache;
