-- `auditor fleet`: how many flaps one fabric's day in an export holds, and how many of them
-- are still down ($file: its one Parquet file, named literally; $fabric and $day come from its
-- checked path). The columns are cast to what export writes, so a file of another shape fails
-- here (the caller warns and reads the rest).
select $fabric as fabric, $day as day, count(*) as flaps,
       count(*) filter (where up_at is null) as still_down
from (
    select cast(down_at as timestamp) as down_at, cast(up_at as timestamp) as up_at
    from read_parquet($file, hive_partitioning = false)
);
