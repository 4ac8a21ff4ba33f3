-- `auditor export`: the nodes of every topology snapshot taken on the day [$day, $day + 1 day),
-- as Parquet at $path (the fabric and the day are the Hive partition the path names).
copy (
    select seen_at, guid, node_type, description, name, model, device, num_ports, lid
    from nodes
    where seen_at >= $day and seen_at < $day + interval 1 day
    order by seen_at, guid
) to $path (format parquet);
