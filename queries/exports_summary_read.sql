-- `auditor fleet`: per fabric and day, how many flaps the export holds ($files: the Parquet
-- files of `<export>/flaps/fabric=*/day=*/`).
select fabric, cast(day as varchar) as day, count(*) as flaps,
       count(*) filter (where up_at is null) as still_down
from read_parquet($files, hive_partitioning = true, hive_types_autocast = false)
where cast(day as varchar) >= $first_day and cast(day as varchar) <= $last_day
group by fabric, day
order by fabric, day;
