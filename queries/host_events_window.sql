-- Host events that touch [$since, $until]: those that began in it, and the Slurm states still
-- open at $since (end_at null or after it). The same event from two sources (a boot in
-- journalctl and in last -x) is one row per source: the reader merges them.
select distinct e.host, e.event_at as "at", e.kind, e.end_at, e.reason, s.kind as source_kind
from host_events e join sources s using (source_id)
where (e.event_at >= $since and e.event_at <= $until)
   or (e.event_at < $since and (e.end_at is null or e.end_at >= $since)
       and e.kind in ('down', 'drain', 'not_responding'))
order by e.event_at, e.host, e.kind;
