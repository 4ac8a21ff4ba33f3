-- The suspects one nightly run showed, one row each (issue #15).
insert into remembered_suspects (run_id, rank, component, a_guid, a_port, a_name, b_guid, b_port,
                                 b_name, score, points, rules, rule_points, first_at, last_at,
                                 flaps, jobs_failed, gpu_hours_lost, job_ids, job_died_at,
                                 job_gpu_hours)
select $run_id, unnest($rank), unnest($component), unnest($a_guid), unnest($a_port),
       unnest($a_name), unnest($b_guid), unnest($b_port), unnest($b_name), unnest($score),
       unnest($points), unnest($rules), unnest($rule_points), unnest($first_at),
       unnest($last_at), unnest($flaps), unnest($jobs_failed), unnest($gpu_hours_lost),
       unnest($job_ids), unnest($job_died_at), unnest($job_gpu_hours);
