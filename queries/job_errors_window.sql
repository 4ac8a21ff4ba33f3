-- Job-log failure lines between $since and $until, every undated line logged for a job that had
-- not ended before $jobs_since, and every line (dated or not) of the logs given (the caller
-- matches logs to jobs and places untimed lines by their bounds).
-- Only the columns `gather` reads: the message (~200 characters a line), status, rank, the HCA
-- port and device index and the line number were 7 of 20 columns nobody read (issue #13: at
-- 30 days 21,102 lines, 43 -> 27 ms to fetch them).
select e.source_id, e.job_id, e.event_at, e.kind, e.network, e.host, e.hca, e.peer,
       e.is_first, e.not_before, e.not_after, e.ran_ms, e.hca_candidates
from job_errors e
where (e.event_at between $since and $until)
   or (e.event_at is null and e.job_id is not null
       and e.job_id in (select job_id from jobs where end_at is null or end_at >= $jobs_since))
   or list_contains($sources, e.source_id)
order by e.event_at nulls last, e.source_id, e.line_no;
