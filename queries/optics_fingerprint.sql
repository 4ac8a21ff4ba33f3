-- What a watch list computed on the readings of [$since, $until] depends on, in one row: how
-- many lane rows, the newest read time and the newest source among them. A precomputed list is
-- used only when its window's figures are the request's (no reading added, aged out or forgotten).
select count(*) as readings, max(read_at) as newest_read_at, max(source_id) as newest_source_id
from optics_readings
where read_at >= $since and read_at <= $until;
