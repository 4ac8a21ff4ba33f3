-- The suspects of the nightly runs that judged a moment in (since, until], in run order.
select s.until as run_until, r.run_id, r.rank, r.component, r.a_guid, r.a_port, r.a_name,
       r.b_guid, r.b_port, r.b_name, r.score, r.points, r.rules, r.rule_points, r.first_at,
       r.last_at, r.flaps, r.jobs_failed, r.gpu_hours_lost, r.job_ids, r.job_died_at,
       r.job_gpu_hours
from remembered_suspects r
join suspect_runs s using (run_id)
where s.until > $since and s.until <= $until
order by s.until, r.run_id, r.rank;
