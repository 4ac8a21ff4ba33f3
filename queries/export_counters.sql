-- `auditor export`: the counter readings taken on the day [$day, $day + 1 day), as Parquet at
-- $path.
copy (
    select seen_at, guid, port, counter, max(value) as value
    from counters
    where seen_at >= $day and seen_at < $day + interval 1 day
    group by seen_at, guid, port, counter
    order by seen_at, guid, port nulls first, counter
) to $path (format parquet);
