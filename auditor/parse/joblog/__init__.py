"""Parse a training job's own log (NCCL, PyTorch c10d, torchelastic, UCX, CUDA/NVRM) into
`JobError` records, so a failed job can be blamed on a link, an HCA port or a GPU.

Input is `(line_no, line)` pairs in file order (terminators optional). Every line gets exactly
one outcome: a `JobError` in `errors`, an entry in `unparsed` (line_no, line, reason) when it
looks like a failure line but cannot be read, or a count in `ignored`. Nothing raises for a line.
Provenance of every format: /work/shared/reference/jobs/README.md and nccl-samples.txt, plus the
NCCL sources (`git log -S`) and the GitHub issues named in tests/fixtures/joblog/*.json.

Kinds (`network` = the line itself points at the fabric):

* `completion_error` / `flush_error` / `setup_error`: NCCL `NET/IB : Got completion ... with
  error N` (<=2.9 no peer; 2.10-2.19 `from peer <ip><port>`, ` (Send)`, GIDs on RoCE), `with
  status=N` (2.20-2.28.3, `NET/IB:` from 2.22, ` hca mlx5_N` from 2.22), `status=NAME(N)`
  (2.28.7 `reqSize= ... req_type=`, >=2.29 `vendor_err=`), the HPC-X `ib_plugin.c` and
  `NET/IBP`/`NET/IBext` copies, NCCL's resiliency (>= 2.29.7) `Got completion with error
  (devIndex=..., wc->status=(NAME)N`, UCX
  `Transport retry count exceeded on mlx5_0:1/IB` and any `transport retry counter exceeded`
  (ibv_wc_status_str). Status 12 RETRY_EXC (link loss), 7 BAD_RESP, 19 FATAL, 20 RESP_TIMEOUT ->
  completion_error, network; 5 WR_FLUSH -> flush_error, network (fallout on a QP already in
  error); local/remote access, protection and length errors (1-4, 6, 8-10, 14, 15, 17, 18) ->
  setup_error, not network (GPUDirect/ACS/IOMMU/registration); any other status ->
  completion_error, not network. Status 0 (TRACE success lines) is ignored. `Call to ibv_*
  failed` (not poll) -> setup_error. `Call to ibv_poll_cq() returned -1` (or any "poll_cq" /
  "cq_poll" failure without a status text) -> `poll_error`, network.
* `async_event`: `NET/IB : Got async event : port error` (<=2.19, no device: the HCA is taken
  only when the host's `NET/IB : Using` list has one device), `NET/IB : mlx5_3:1 Got async event :`
  (2.20-2.22), `Got async error event:` (2.23-2.28.3), `Got non-fatal async event: port
  error(10)` (>=2.28.7), `async fatal event[ on QP|CQ|SRQ (...)]: ...` (>=2.23). Network for
  port error, port active and local catastrophic error (HCA fatal); QP/CQ/SRQ, LID/SM/P_Key/GID
  changes are not.
  `PORT_ERR` may come from the other port of a dual-port card (open-mpi/ompi#180).
* `port_failover` (not network: the job went on) / `failover_failed` (network): NCCL >= 2.29
  with NCCL_IB_RESILIENCY_PORT_FAILOVER=1, `Device N marked as failed.` / `Could not find a
  replacement QP ... (devIndex=N)` (src/transport/net_ib/p2p_resiliency.cc:312 / :95 at
  v2.29.7-1). `dev_index` is N, the device's place in its merged NIC; the HCA comes from the
  `NET/IB : Made virtual device [n] name=mlx5_0+mlx5_1 ... ndevs=2` lines (init.cc:190) of the
  process (or host): the NIC the rank's `via NET/IB/<n>` names, else the host's only merged NIC,
  else `hca_candidates` lists the HCAs it may be. Without those INFO lines no HCA is guessed.
  A resiliency completion error (`Got completion with error (devIndex=N, ...`, status 5 or 12)
  of a process that then failed over from device N is not network. `Replacing QP` (:88) is
  ignored: the :312 WARN before it says the same, stamped.
* `remote_error`: PyTorch `NCCL error[ in: file:line], remote process exited or there was a
  network error, NCCL version ...`, `ncclRemoteError: ...`, `Last error: <text>` on the same line
  or the next lines (same stream); also ncclSystem/InternalError whose Last error is NET/IB text
  (IB errors returned ncclSystemError before 2.13). Network only when the Last error text is an
  IB completion/async error (then its peer, status and HCA are taken); a socket Last error gives
  the peer but not network. Other NCCL results -> `nccl_error` (unhandled cuda error ->
  `gpu_error`).
* `watchdog_timeout` (`Watchdog caught collective operation timeout: WorkNCCL(...) ran for N
  milliseconds`, older `Caught collective operation timeout`, also when cut mid-word inside
  `watchdog thread terminated with exception: ...`), `watchdog_error` (other watchdog
  exceptions), `watchdog_stuck` (`watchdog got stuck`, `Heartbeat monitor timed out`): all not
  network, they are symptoms.
* `elastic_failed`: torchelastic `failed (exitcode: -6) local_rank: 0 (pid: ...) of binary: ...`
  and each `[N]:` entry of a `ChildFailedError` block (`time : 2023-05-19_16:39:58` in `tz`,
  `host :` the agent's FQDN as printed, `rank :` global rank). Not network.
* `socket_error`: NCCL socket transport lines naming a peer (`Call to recv from <ip><port>
  failed`, `Connection closed by remote peer <host><port>`, `connect to <ip><port> failed`);
  only NCCL's own wording (an `NCCL WARN` line or NCCL's socket function names), never c10d's
  TCPStore. Network.
* `oom` (`CUDA out of memory`, `torch[.cuda].OutOfMemoryError`, `Cuda failure 'out of memory'`,
  kernel `Out of memory: Killed process`), `gpu_error` (`CUDA error: ...`, `Cuda failure`,
  `uncorrectable ECC error`, `an illegal memory access`, `GPU has fallen off the bus`,
  `NVRM: Xid (PCI:...): N, ...`): not network, so a job that died of its GPU is not blamed on
  the fabric.

Known fallout and summaries are ignored: NCCL `... -> 6` return-code lines, `Got CQE with error`
(2.30 prints it just before the completion line that has the details), `communicator encountered
a fatal error`, `[Service thread] Connection closed by localRank`, `Exception ... detected by
watchdog at work`, `Some NCCL operations have failed or timed out`, `Call to
ibv_get_async_event failed`.

Per line: host = the NCCL prefix `host:pid:tid [dev]` (short name or pod name), else a UCX
`[host:pid:tid:tid]` prefix, a syslog envelope host (`<host> kernel:`), else the host learned for
the line's stream (torchrun `[default3]:` / `[rankN]:`, `mpirun --tag-output` `[1,N]<stdout>:`,
`srun -l` `N: `) from an earlier NCCL line of that stream; rank = `[rankN]:`, the mpirun rank, a
default-PG `[PG 0 Rank n]`/`[PG ID 0 PG GUID 0(default_pg) Rank n]` (a bare `[Rank n]` is a
sub-group rank, NVIDIA/nccl#1610, and is not used). HCA = `hca mlx5_N` (>=2.22) or the device
of the async event; before that from the host's `NET/IB : Using [0]mlx5_0:1/IB ...` list, by
the `via NET/IB/<n>` index of the `Channel` lines of the same `host [cudaDev]` when they name one
index only (or the only device). `hca_port` from the same list. `peer` = the remote OOB address
without `<port>`, as printed (IPv6 `%ib0` scope and host names kept).

Times (`at`, aware UTC), first found of: a log shipper's ISO stamp with a zone at the start of
the line (`2026-11-30T06:28:57.123Z `, CRI `... stdout F `, `2025-11-09 15:39:31.043 +08:00 `);
a bracketed `[YYYY-MM-DD HH:MM:SS[.fff]]` (NCCL >= 2.26 WARN lines, torchelastic `,877`) or the
block's `time :` in `tz`; a glog `E0517 08:24:03.805000` / `[E218 04:54:22.864467604` (MMDD, no
year) or a syslog `Nov 30 06:28:57` envelope: years by `_logline.infer_years` from `year=`, else
`reference=`, else the newest dated failure line (a zoneless collector date counts);
`[Fri Aug 30 11:43:14 2024]` (dmesg -T) in `tz`; a zoneless shipper stamp in `tz`. None when
there is none (NCCL < 2.26) or the year is unknown. Rollovers are seen across failure lines
only (other lines are not time-parsed).

Untimed lines (NCCL before 2.26 stamps nothing; from 2.26 only WARN lines, src/debug.cc) get
`not_before` / `not_after`: the latest stamp of a failure line before them and the earliest
after them in the file, widened by 2 s for interleaved buffers. A watchdog timeout keeps
`ran_ms` (`ran for N milliseconds`: the stuck collective started that long before its stamp).
Stamps also come from `ts`-style `Nov 22 05:43:54 ` wrappers, Open MPI's ctime
`--timestamp-output`, and behind Ray's `(RayTrainWorker pid=N) ` prefix.

What the log says about its NCCL: `nccl_versions` (`NCCL version 2.21.5+cuda12.4`, a bare
printf by rank 0 up to 2.21, an INFO line from 2.22, and PyTorch's `..., NCCL version 2.20.5`)
and `nccl_env` (`NCCL_IB_TIMEOUT set by environment to 22.`, src/misc/param.cc, INFO only);
`ib_hca` (`NCCL_IB_HCA set to ^mlx5_1`, src/transport/net_ib.cc, INFO only, as printed) and
`using`, the (host, HCA) pairs of the `NET/IB : Using` lists: the rails the job used.

`first` keeps, per (host, hca, peer), the first network error (earlier time when both are known,
else line order) plus, per (host, rank, kind), the first non-network error; `first_errors`
applies the same rule to errors gathered from several files of one job (one log per rank).
`hosts` are the hosts named by recognised lines, `hca_ports` (host, hca) -> port from `Using`
lists and async events (also filled into an error whose HCA is known from its own line),
`addresses` the OOB/bootstrap address -> host from `NET/IB : Using ... OOB if:ip<0>` and
`Bootstrap : Using if:ip<0>`, which maps a peer back to its host when all ranks log together.

The package, by what the code is (imports go one way: statuses <- recognise <- machine,
envelope <- machine, result <- machine):

* `result.py`: `JoblogResult`, `first_errors` and `MESSAGE_LIMIT`.
* `statuses.py`: the ibv_wc_status table: names, which codes are network, flush or set-up
  errors, and the code a status text without a number stands for.
* `recognise.py`: what one message says (`Evidence`): IB completion and async errors, NCCL
  socket errors, GPU causes, an embedded `Last error:` text, the NCCL result PyTorch names.
* `envelope.py`: what surrounds the message (`read_envelope` -> `Line`): collector stamps,
  mpirun / srun / torchrun stream tags and ranks, NCCL / UCX / syslog host prefixes, and the
  date patterns a line's time is read from.
* `machine.py`: `parse_joblog` and its per-log state (`_Run`): which recogniser a line goes to,
  PyTorch errors spread over several lines, the torchelastic ChildFailedError block, the
  `Using` / `Channel` / `Bootstrap` init lines, and the years and neighbour times of the result.
"""

from __future__ import annotations

from auditor.parse.joblog.machine import parse_joblog
from auditor.parse.joblog.result import MESSAGE_LIMIT, JoblogResult, first_errors

__all__ = ["MESSAGE_LIMIT", "JoblogResult", "first_errors", "parse_joblog"]
