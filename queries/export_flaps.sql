-- `auditor export`: the link flaps the analysis found for one day (given as column lists), as
-- Parquet at $path.
copy (
    select unnest($a_name::varchar[]) as a_name, unnest($a_guid::varchar[]) as a_guid,
           unnest($a_port::integer[]) as a_port, unnest($b_name::varchar[]) as b_name,
           unnest($b_guid::varchar[]) as b_guid, unnest($b_port::integer[]) as b_port,
           unnest($down_at::timestamp[]) as down_at, unnest($up_at::timestamp[]) as up_at,
           unnest($duration_s::double[]) as duration_s,
           unnest($approximate::boolean[]) as approximate,
           unnest($sources::varchar[][]) as sources
) to $path (format parquet);
