-- `auditor export`: what the nightly runs' suspects of the 90 days (`[outcomes] since`) before
-- the end of one day had turned out to be by then (analyse/outcomes.py, given as column lists),
-- as Parquet at $path: one judgement per suspect and day, so a day's partition is the state of
-- every suspect as of that day.
copy (
    select unnest($component::varchar[]) as component,
           unnest($a_name::varchar[]) as a_name, unnest($a_guid::varchar[]) as a_guid,
           unnest($a_port::integer[]) as a_port, unnest($b_name::varchar[]) as b_name,
           unnest($b_guid::varchar[]) as b_guid, unnest($b_port::integer[]) as b_port,
           unnest($rules::varchar[][]) as rules, unnest($first_at::timestamp[]) as first_at,
           unnest($first_seen::timestamp[]) as first_seen,
           unnest($last_seen::timestamp[]) as last_seen, unnest($nights::integer[]) as nights,
           unnest($verdict::varchar[]) as verdict, unnest($young::boolean[]) as young,
           unnest($followed_part::boolean[]) as followed_part,
           unnest($reason::varchar[]) as reason, unnest($ticket::varchar[]) as ticket,
           unnest($fixed_at::timestamp[]) as fixed_at,
           unnest($days_to_fix::double[]) as days_to_fix,
           unnest($gpu_hours_lost::double[]) as gpu_hours_lost
) to $path (format parquet);
