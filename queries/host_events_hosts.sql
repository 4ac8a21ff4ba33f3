-- The hosts some host-event source (boot records, Slurm node events) speaks of, and the kinds
-- of those sources, for the coverage notes: which hosts had any host evidence at all.
select distinct e.host, s.kind
from host_events e join sources s using (source_id);
