-- What each job log says about its NCCL, its rails and its time span, one row per log.
insert into job_logs (source_id, job_id, hosts, first_at, last_at, written_at, nccl_versions,
                      ib_timeout, ib_retry_cnt, using_hcas, ib_hca)
select unnest($source_id), unnest($job_id), unnest($hosts), unnest($first_at),
       unnest($last_at), unnest($written_at), unnest($nccl_versions), unnest($ib_timeout),
       unnest($ib_retry_cnt), unnest($using::struct(host varchar, hca varchar)[][]),
       unnest($ib_hca);
