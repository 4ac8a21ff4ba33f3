-- Every host name sacct gave a job, once each: `gather` resolves them to fabric hosts (aliases,
-- short names, addresses) and asks jobs_on_hosts_during for the jobs on a host by the names it
-- was given (issue #13: 4,096 names read in ~5 ms, while the fabric is built).
select distinct host
from job_nodes
order by host;
