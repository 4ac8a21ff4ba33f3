-- Failure lines of job logs, one row per line (source and job given per row, so a command that
-- ingests thousands of logs inserts them in one statement).
insert into job_errors (source_id, job_id, line_no, event_at, kind, network, host, hca,
                        hca_port, peer, status, status_name, rank, is_first, message,
                        not_before, not_after, ran_ms, dev_index,
                        hca_candidates)
select unnest($source_id), unnest($job_id), unnest($line_no), unnest($event_at), unnest($kind),
       unnest($network), unnest($host), unnest($hca), unnest($hca_port), unnest($peer),
       unnest($status), unnest($status_name), unnest($rank), unnest($is_first),
       unnest($message), unnest($not_before), unnest($not_after), unnest($ran_ms),
       unnest($dev_index), unnest($hca_candidates);
