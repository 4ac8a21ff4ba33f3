-- Host events (boots, crashes, Slurm node states) from one source.
insert into host_events (source_id, host, event_at, kind, end_at, reason, line_no, message)
select $source_id, unnest($host), unnest($event_at), unnest($kind), unnest($end_at), unnest($reason),
       unnest($line_no), unnest($message);
