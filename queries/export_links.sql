-- `auditor export`: the links of every topology snapshot taken on the day [$day, $day + 1 day),
-- each once per snapshot, as Parquet at $path.
copy (
    select seen_at, a_guid, a_port, b_guid, b_port, max(width) as width, max(speed) as speed
    from links
    where seen_at >= $day and seen_at < $day + interval 1 day
    group by seen_at, a_guid, a_port, b_guid, b_port
    order by seen_at, a_guid, a_port, b_guid, b_port
) to $path (format parquet);
