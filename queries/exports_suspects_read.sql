-- `auditor fleet`: the suspects of several fabrics' exports ($files: the Parquet files of
-- `<export>/suspects/fabric=*/day=*/`), the fabric and the day taken from the Hive path.
select fabric, cast(day as varchar) as day, rank, component, score, a_name, a_guid, a_port,
       a_label, b_name, b_guid, b_port, b_label, flaps, downtime_s, jobs_failed,
       gpu_hours_lost, first_at, last_at, action, evidence
from read_parquet($files, hive_partitioning = true, hive_types_autocast = false)
where cast(day as varchar) >= $first_day and cast(day as varchar) <= $last_day
order by fabric, day, rank;
