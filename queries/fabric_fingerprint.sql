-- The topology sources stored (their number, and the sum and the greatest of their ids): any
-- ingest or forget of a snapshot changes it, so a fabric_cache row built under another
-- fingerprint is stale.
select count(*)::varchar || ':' || coalesce(sum(source_id), 0)::varchar || ':'
       || coalesce(max(source_id), 0)::varchar
from sources
where (kind in ('ibnetdiscover', 'iblinkinfo') or (kind = 'ibdiagnet' and has_topology));
