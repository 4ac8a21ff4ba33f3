-- Jobs that ended in [$since, $until] in one of $states (the newest record of each job id and
-- start decides its state), with their hosts: the failed jobs the ranking explains. Only
-- these are read whole: 30 days hold ~100,000 jobs, and reading all of them with their host
-- lists was 1.2 s of CPU of `suspects --since 30d` (issue #13).
-- A job's hosts come back as one string, sorted and joined by commas (store/jobs.py splits it; a
-- stored host name never holds a comma, JobTable.append refuses one), NULL for none: DuckDB
-- turning 155,000 names into Python lists cost ~13 ms of CPU more at 30 days (issue #13).
with latest as (
    select *
    from jobs
    where end_at >= $since and (start_at is null or start_at <= $until)
    qualify row_number() over (partition by job_id, start_at order by source_id desc) = 1
),
chosen as (
    select * from latest where state in (select unnest($states)) and end_at <= $until
),
hosts as (
    select n.job_id, n.start_at, array_to_string(list_sort(list(n.host)), ',') as hosts
    from job_nodes n
    semi join chosen c on n.job_id = c.job_id and n.start_at is not distinct from c.start_at
    group by n.job_id, n.start_at
)
select c.job_id, c.state, c.start_at, c.end_at, c.name, c.gpus, h.hosts
from chosen c
left join hosts h on h.job_id = c.job_id and h.start_at is not distinct from c.start_at
order by c.end_at nulls last, c.job_id;
