-- Every ingested source, newest first.
select source_id, kind, path, origin, observed_at, ingested_at, lines_total, lines_unparsed,
       records, sha256
from sources
order by ingested_at desc, source_id desc;
