-- Schema version 6: what changes an ingest's result besides the file's content (the kind it
-- was read as, the job a log was given to, the year and time zone of zoneless stamps, ...),
-- stored beside the content key. The same file ingested with other options replaces what it
-- stored before; with the same options it is a no-op. Sources from before have none (null).
alter table sources add column if not exists options varchar;
