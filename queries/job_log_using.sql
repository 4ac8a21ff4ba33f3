-- The `NET/IB : Using` lists of the logs $sources, each as two lists of text, hosts and HCAs in
-- step: as a list of structs (a dict per pair in Python) a day's logs of a 65,536-GPU fabric,
-- 675,800 pairs, were 1 s of `suspects` (issue #25). Logs without one are left out.
select source_id, [u.host for u in using_hcas] as hosts, [u.hca for u in using_hcas] as devices
from job_logs
where source_id in (select unnest($sources::bigint[])) and len(using_hcas) > 0
order by source_id;
