-- A source forgotten: delete what the sources $source_ids (a list) stored in lft_switches
-- (source_forget_* run in Store.forget_sources, sources last).
delete from lft_switches where list_contains($source_ids, source_id);
