-- `auditor fleet`: the suspects of one fabric's day in an export ($file: its one Parquet file,
-- named literally; $fabric and $day come from its checked path, not from Hive partitioning).
-- Every column is cast to what export writes, so a file of another shape fails here (the
-- caller warns and reads the rest); so does a time outside [$earliest, $latest). At most
-- $max_rows rows, best first: a file holding more is no day of export's (the caller warns).
select $fabric as fabric, $day as day, rank, component, score, a_name, a_guid, a_port,
       a_label, b_name, b_guid, b_port, b_label, flaps, downtime_s, jobs_failed,
       gpu_hours_lost,
       case when first_at is null or (first_at >= $earliest and first_at < $latest)
            then first_at else error('a time outside the years auditor reads') end as first_at,
       case when last_at is null or (last_at >= $earliest and last_at < $latest)
            then last_at else error('a time outside the years auditor reads') end as last_at,
       action, evidence
from (
    select cast(rank as integer) as rank, cast(component as varchar) as component,
           cast(score as double) as score, cast(a_name as varchar) as a_name,
           cast(a_guid as varchar) as a_guid, cast(a_port as integer) as a_port,
           cast(a_label as varchar) as a_label, cast(b_name as varchar) as b_name,
           cast(b_guid as varchar) as b_guid, cast(b_port as integer) as b_port,
           cast(b_label as varchar) as b_label, cast(flaps as integer) as flaps,
           cast(downtime_s as double) as downtime_s, cast(jobs_failed as integer) as jobs_failed,
           cast(gpu_hours_lost as double) as gpu_hours_lost,
           cast(first_at as timestamp) as first_at, cast(last_at as timestamp) as last_at,
           cast(action as varchar) as action, cast(evidence as varchar[]) as evidence
    from read_parquet($file, hive_partitioning = false)
)
order by rank
limit $max_rows;
