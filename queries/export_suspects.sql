-- `auditor export`: the ranked suspects of one day's window (given as column lists), as Parquet
-- at $path.
copy (
    select unnest($rank::integer[]) as rank, unnest($component::varchar[]) as component,
           unnest($score::double[]) as score, unnest($a_name::varchar[]) as a_name,
           unnest($a_guid::varchar[]) as a_guid, unnest($a_port::integer[]) as a_port,
           unnest($a_label::varchar[]) as a_label, unnest($b_name::varchar[]) as b_name,
           unnest($b_guid::varchar[]) as b_guid, unnest($b_port::integer[]) as b_port,
           unnest($b_label::varchar[]) as b_label, unnest($flaps::integer[]) as flaps,
           unnest($downtime_s::double[]) as downtime_s,
           unnest($jobs_failed::integer[]) as jobs_failed,
           unnest($gpu_hours_lost::double[]) as gpu_hours_lost,
           unnest($first_at::timestamp[]) as first_at, unnest($last_at::timestamp[]) as last_at,
           unnest($action::varchar[]) as action, unnest($evidence::varchar[][]) as evidence
) to $path (format parquet);
