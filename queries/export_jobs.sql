-- `auditor export`: the jobs that ended on the day [$day, $day + 1 day), or are still running
-- and started that day (the newest record of each job id and start), with their hosts, as
-- Parquet at $path.
copy (
    with latest as (
        select *
        from jobs
        qualify row_number() over (partition by job_id, start_at order by source_id desc) = 1
    ),
    chosen as (
        select * from latest
        where coalesce(end_at, start_at) >= $day
          and coalesce(end_at, start_at) < $day + interval 1 day
    )
    select c.job_id, c.state, c.start_at, c.end_at, c.name, c.partition, c.gpus, c.exit_code,
           coalesce((select list(n.host order by n.host) from job_nodes n
                     where n.job_id = c.job_id and n.start_at is not distinct from c.start_at),
                    []) as hosts
    from chosen c
    order by coalesce(c.end_at, c.start_at), c.job_id
) to $path (format parquet);
