-- The cached snapshot, if one was built.
select seen_at, fingerprint, body from fabric_cache;
