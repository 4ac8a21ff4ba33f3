-- Schema version 10 (8 and 9 are the outcomes and the job-error devices of issues #15 and #14):
-- the rails a job used, so a job that ran through a flap and completed counts as evidence that
-- the flap was harmless only where its traffic crossed that cable (issue #15). Per job log:
-- the (host, HCA) pairs of its `NET/IB : Using` lists (the HCAs NCCL opened on each host), and
-- NCCL_IB_HCA as NCCL printed it (`NCCL_IB_HCA set to ^mlx5_1`), both INFO lines only.
alter table job_logs add column if not exists using_hcas struct(host varchar, hca varchar)[];
alter table job_logs add column if not exists ib_hca varchar;
