-- A second capture taken at the same instant as one stored: its tables replace the stored
-- rows of the same switches at $captured_at ($guid: a list).
delete from lft_switches where captured_at = $captured_at and list_contains($guid, guid);
