-- The sources already ingested with this content (and, when --at was given, this time), with
-- the options each was ingested with. Params: $sha256, $explicit_at (bool), $observed_at.
select source_id, options
from sources
where sha256 = $sha256
  and (not $explicit_at or (explicit_at and observed_at = $observed_at))
order by source_id;
