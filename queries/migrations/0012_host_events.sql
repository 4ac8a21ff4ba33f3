-- Schema version 12: what happened to whole hosts (issue #20). A host that reboots, crashes or
-- is set DOWN by Slurm takes every one of its rails down: Slurm's node events (sacctmgr show
-- event, slurmctld.log) and the hosts' own boot records (journalctl --list-boots, last -x, the
-- kernel log's boot banner) say so. `host` is the name the source printed (resolved to a fabric
-- host when read, as job hosts are); kinds are models.HOST_EVENT_KINDS.
create table if not exists host_events (
    source_id integer not null,
    host varchar not null,
    event_at timestamp not null,
    kind varchar not null,
    end_at timestamp,
    reason varchar,
    line_no integer,
    message varchar
);
