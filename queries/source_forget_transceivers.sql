-- A file ingested again with other options: delete what the sources $source_ids (a list)
-- stored in transceivers (the cabling plan's parts; source_forget_* run in
-- Store.forget_sources, sources last).
delete from transceivers where list_contains($source_ids, source_id);
