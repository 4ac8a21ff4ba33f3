-- Schema version 9 (issue #14): NCCL port failover (>= 2.29, NCCL_IB_RESILIENCY_PORT_FAILOVER=1)
-- names the failed device by its index within a merged NIC; the job log's `Made virtual device`
-- lines turn it into the HCA (`hca`) or, with several merged NICs, the HCAs it may be.
alter table job_errors add column if not exists dev_index integer;
alter table job_errors add column if not exists hca_candidates varchar[];
