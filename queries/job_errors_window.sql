-- Job-log failure lines between $since and $until (undated lines of logs ingested for a job
-- come along; the caller matches them to jobs).
select job_id, event_at, kind, network, host, hca, hca_port, peer, status, status_name, rank,
       is_first, line_no, message
from job_errors
where (event_at between $since and $until) or (event_at is null and job_id is not null)
order by event_at nulls last, line_no;
