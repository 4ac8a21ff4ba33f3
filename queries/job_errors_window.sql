-- Job-log failure lines between $since and $until, every undated line logged for a job that had
-- not ended before $jobs_since, and every line (dated or not) of the logs given (the caller
-- matches logs to jobs and places untimed lines by their bounds).
select e.source_id, e.job_id, e.event_at, e.kind, e.network, e.host, e.hca, e.hca_port, e.peer,
       e.status, e.status_name, e.rank, e.is_first, e.line_no, e.message, e.not_before,
       e.not_after, e.ran_ms, e.dev_index, e.hca_candidates
from job_errors e
where (e.event_at between $since and $until)
   or (e.event_at is null and e.job_id is not null
       and e.job_id in (select job_id from jobs where end_at is null or end_at >= $jobs_since))
   or list_contains($sources, e.source_id)
order by e.event_at nulls last, e.source_id, e.line_no;
