-- A file ingested again with other options: delete what the sources $source_ids (a list)
-- stored in optics_readings (source_forget_* run in Store.forget_sources, sources last).
delete from optics_readings where list_contains($source_ids, source_id);
