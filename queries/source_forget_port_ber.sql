-- A run ingested again with other options: delete what the sources $source_ids (a list)
-- stored in port_ber (source_forget_* run in Store.forget_sources, sources last).
delete from port_ber where list_contains($source_ids, source_id);
