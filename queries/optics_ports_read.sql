-- The ports (GUID, port) the topology placed a module reading in, within [$since, $until]: the
-- watch list keeps a module's Rx and Tx series past its bucket only when the port at the other
-- end of its link was read too (the link budget rule compares the two).
select distinct guid, port
from optics_readings
where read_at >= $since and read_at <= $until and guid is not null and port is not null;
