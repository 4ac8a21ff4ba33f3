-- Every ingested source, newest first, with the options it was read with (JSON text or null).
select source_id, kind, path, origin, observed_at, ingested_at, lines_total, lines_unparsed,
       records, sha256, options
from sources
order by ingested_at desc, source_id desc;
