-- A file ingested again with other options: delete what the sources $source_ids (a list)
-- stored in host_events (source_forget_* run in Store.forget_sources, sources last).
delete from host_events where list_contains($source_ids, source_id);
