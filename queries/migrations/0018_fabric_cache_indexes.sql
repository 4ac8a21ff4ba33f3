-- Schema version 18 (issue #25). fabric_cache format 5 keeps, beside the snapshot's parts, the
-- indexes a command reads to make only the nodes', ports' and links' objects it asks about
-- (auditor/store/fabric_codec.py says what each holds): keys, adjacent, rates, rated. The old
-- row is dropped; the store rebuilds the cache from the tables after this step.
delete from fabric_cache;
alter table fabric_cache add column if not exists keys blob;
alter table fabric_cache add column if not exists adjacent blob;
alter table fabric_cache add column if not exists rates blob;
alter table fabric_cache add column if not exists rated blob;
