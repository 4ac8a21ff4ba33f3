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
and `nccl_env` (`NCCL_IB_TIMEOUT set by environment to 22.`, src/misc/param.cc, INFO only).

`first` keeps, per (host, hca, peer), the first network error (earlier time when both are known,
else line order) plus, per (host, rank, kind), the first non-network error; `first_errors`
applies the same rule to errors gathered from several files of one job (one log per rank).
`hosts` are the hosts named by recognised lines, `hca_ports` (host, hca) -> port from `Using`
lists and async events (also filled into an error whose HCA is known from its own line),
`addresses` the OOB/bootstrap address -> host from `NET/IB : Using ... OOB if:ip<0>` and
`Bootstrap : Using if:ip<0>`, which maps a peer back to its host when all ranks log together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import NamedTuple

from auditor.models import JobError
from auditor.parse._logline import LINE_ERRORS, MONTHS, Stamp, infer_years

MESSAGE_LIMIT = 512

# ---------------------------------------------------------------------------------------------
# Results


@dataclass(slots=True)
class JoblogResult:
    errors: list[JobError] = field(default_factory=list)
    first: list[JobError] = field(default_factory=list)
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)  # line_no, line, reason
    ignored: int = 0
    hosts: set[str] = field(default_factory=set)
    hca_ports: dict[tuple[str, str], int] = field(default_factory=dict)
    addresses: dict[str, str] = field(default_factory=dict)  # OOB / bootstrap address -> host
    nccl_versions: list[str] = field(default_factory=list)  # "2.21.5", in order of appearance
    # NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT as NCCL reports them "set by environment" (INFO only)
    nccl_env: dict[str, int] = field(default_factory=dict)

    @property
    def dated(self) -> tuple[datetime, datetime] | None:
        """The earliest and latest stamp of the log's failure lines, if any has one."""
        ats = [e.at for e in self.errors if e.at is not None]
        return (min(ats), max(ats)) if ats else None


def first_errors(errors: Iterable[JobError]) -> list[JobError]:
    """The first network error per (host, hca, peer) and the first other error per (host, rank,
    kind), in input order. "First" is the earlier `at` when both are known, else the earlier
    input. Rank is in the second key because every rank reports its own watchdog timeout."""
    best: dict[tuple[object, ...], tuple[int, JobError]] = {}
    for i, e in enumerate(errors):
        key: tuple[object, ...] = (
            (True, e.host, e.hca, e.peer) if e.network else (False, e.host, e.rank, e.kind)
        )
        seen = best.get(key)
        if seen is None or (seen[1].at is not None and e.at is not None and e.at < seen[1].at):
            best[key] = (i, e)
    return [e for _, e in sorted(best.values(), key=lambda pair: pair[0])]


# ---------------------------------------------------------------------------------------------
# ibv_wc_status

_STATUS_NAMES: tuple[str, ...] = (
    "IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR", "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
)
# No ACK within the retry budget (the link-loss signature), garbled or missing responses, HCA fatal.
_NETWORK_STATUSES = frozenset({7, 12, 19, 20})
# Length, QP-state, protection and access errors, local or reported by the remote: memory
# registration / GPUDirect / ACS / IOMMU set-up problems, not cables.
_SETUP_STATUSES = frozenset({1, 2, 3, 4, 6, 8, 9, 10, 14, 15, 17, 18})


def _status_kind(code: int) -> tuple[str, bool]:
    if code == 5:
        return "flush_error", True
    if code in _SETUP_STATUSES:
        return "setup_error", False
    return "completion_error", code in _NETWORK_STATUSES


def _status_name(code: int) -> str | None:
    return _STATUS_NAMES[code] if 0 <= code < len(_STATUS_NAMES) else None


# ibv_wc_status_str() and UCX's mlx5 syndrome texts, for lines that print no number.
_STATUS_TEXTS: tuple[tuple[str, int], ...] = (
    ("transport retry count", 12),
    ("rnr retry count", 13),
    ("receive-no-ready retry count", 13),
    ("work request flushed", 5),
    ("wr flushed", 5),
    ("local protection", 4),
)


def _status_from_text(text: str) -> int | None:
    low = text.lower()
    for words, code in _STATUS_TEXTS:
        if words in low:
            return code
    return None


# ---------------------------------------------------------------------------------------------
# Evidence read from a message (also from a PyTorch "Last error:" text without a host prefix)


class _Evidence(NamedTuple):
    kind: str
    network: bool
    peer: str | None = None
    status: int | None = None
    status_name: str | None = None
    hca: str | None = None
    hca_port: int | None = None
    ib: bool = False  # an IB completion or async event (what makes a remote_error network)


# `from peer X<port>` is absent before 2.10 and empty when NCCL could not name the socket. The
# resiliency path (2.29+) logs `with error (devIndex=0, wc->status=(IBV_WC_...)12`.
_COMPLETION_RE = re.compile(
    r"Got completion (?:from peer (?:(?P<peer>\S+?)(?:<\d+>)?)? ?)?with "
    r"(?:error (?P<old>\d+)\b"
    r"|status=(?:(?P<name>IBV_WC_\w+)\((?P<named>\d+)\)|(?P<num>\d+))"
    r"|error \(devIndex=\d+, wc->status=\((?P<rname>\w+)\)(?P<rnum>\d+))"
)
_HCA_TAIL_RE = re.compile(r"\bhca ([\w.-]+)")
_ASYNC_RE = re.compile(
    r"NET/IB\w* ?: (?:(?P<hca>[\w.-]+):(?P<port>\d+) )?"
    r"(?:Got (?:non-fatal |fatal )?async (?:error )?event ?: ?"
    r"|async fatal event(?: on (?P<obj>QP|CQ|SRQ|WQ)[^:]*)?: )(?P<ev>.*)"
)
# ibv_event_type_str() values: matched as a closed set so trailing text on a flattened PyTorch
# line ("... Exception raised from ...") is not taken as part of the event.
_ASYNC_EVENTS_RE = re.compile(
    r"(port error|port active|local catastrophic error|CQ error"
    r"|local work queue catastrophic error|invalid request local work queue error"
    r"|local access violation work queue error|communication established|send queue drained"
    r"|path migrated|path migration request error|LID change|P_Key change|SM change"
    r"|SRQ catastrophic error|SRQ limit reached|last WQE reached|client reregistration"
    r"|GID table change|WQ fatal|unknown)(?:\((\d+)\))?",
    re.IGNORECASE,
)
_NETWORK_EVENTS = frozenset({"port error", "port active", "local catastrophic error"})
_SOCKET_PEER_RE = re.compile(r"(?:from|to|peer) (?P<peer>[^\s<]+)<\d+>")
_SOCKET_WORDS = (
    "Call to recv", "Call to send", "onnection closed by remote peer", "onnect to ",
    "Connection reset by peer", "Connection refused", "message truncated",
)
_SOCKET_CONTEXT = ("NCCL WARN", "socketProgress", "ncclSocket", "ncclOsSocket", "NET/Socket")
_UCX_DEV_RE = re.compile(r" on (?P<hca>[\w.-]+):(?P<port>\d+)/(?:IB|RoCE)")


def _completion(text: str) -> _Evidence | str | None:
    i = text.find("Got completion")
    if i < 0:
        return None
    m = _COMPLETION_RE.match(text, i)
    if m is None:
        if text.startswith("Got completion for ", i):  # TRACE: a successful request
            return None
        return "unreadable IB completion error"
    raw = m.group("old") or m.group("named") or m.group("num") or m.group("rnum")
    code = int(raw)
    if code == 0:  # TRACE prints successful completions in the same words
        return None
    kind, network = _status_kind(code)
    hca = _HCA_TAIL_RE.search(text, m.end())
    name = m.group("name") or m.group("rname") or _status_name(code)
    return _Evidence(kind, network, m.group("peer") or None, code, name,
                     hca.group(1) if hca else None, None, True)


def _async(text: str) -> _Evidence | str | None:
    i = text.find("NET/IB")
    m = _ASYNC_RE.match(text, i) if i >= 0 else None
    if m is None:
        if "async event" in text or "async fatal" in text or "async error" in text:
            return "unreadable IB async event"
        return None
    ev = _ASYNC_EVENTS_RE.match(m.group("ev").strip())
    if ev is None:
        if not m.group("ev").strip():
            return "IB async event without an event name"
        network = False  # an event name this version of the table does not know
    else:
        network = m.group("obj") is None and ev.group(1).lower() in _NETWORK_EVENTS
    port = m.group("port")
    return _Evidence("async_event", network, None, None, None, m.group("hca"),
                     int(port) if port else None, True)


def _socket(text: str) -> _Evidence:
    m = _SOCKET_PEER_RE.search(text)
    return _Evidence("socket_error", True, m.group("peer") if m else None)


def _gpu(text: str) -> _Evidence | None:
    if "ut of memory" in text or "OutOfMemoryError" in text:
        return _Evidence("oom", False)
    if any(w in text for w in _GPU_WORDS):
        return _Evidence("gpu_error", False)
    return None


_GPU_WORDS = (
    "CUDA error", "Cuda failure", "cuda runtime error", "ECC error", "illegal memory access",
    "unhandled cuda error", "fallen off the bus", "NVRM: Xid",
)


def _embedded(text: str) -> _Evidence | str | None:
    """What a PyTorch `Last error:` text (NCCL's ncclGetLastError, no host prefix) says."""
    if "Got completion" in text:
        return _completion(text)
    if "NET/IB" in text and "async" in text:
        return _async(text)
    if any(w in text for w in _SOCKET_WORDS):
        return _socket(text)
    return _gpu(text)


# NCCL results as PyTorch names them, in its detail string or in ncclGetErrorString() words.
_NCCL_TOKEN_RE = re.compile(
    r"\bnccl(RemoteError|SystemError|InternalError|UnhandledCudaError|InvalidUsage"
    r"|InvalidArgument)\b"
)
_TOKEN_RESULTS = {
    "RemoteError": "remote", "SystemError": "system", "InternalError": "internal",
    "UnhandledCudaError": "cuda", "InvalidUsage": "usage", "InvalidArgument": "usage",
}
_RESULT_WORDS: tuple[tuple[str, str], ...] = (
    ("remote process exited or there was a network error", "remote"),
    ("unhandled cuda error", "cuda"),
    ("unhandled system error", "system"),
    ("internal error", "internal"),
    ("invalid usage", "usage"),
    ("invalid argument", "usage"),
)
_NCCL_GATES = (
    "NCCL error", "Last error:", "ncclRemoteError", "ncclSystemError", "ncclInternalError",
    "ncclUnhandledCudaError", "ncclInvalid", "remote process exited or there was a network error",
)


def _nccl_result(text: str) -> str | None:
    m = _NCCL_TOKEN_RE.search(text)
    if m is not None:
        return _TOKEN_RESULTS[m.group(1)]
    for words, result in _RESULT_WORDS:
        if words in text:
            return result
    return None


def _nccl_kind(result: str | None, ev: _Evidence | None) -> tuple[str, bool]:
    if ev is not None and ev.ib:
        return "remote_error", ev.network
    if ev is not None and ev.kind in ("oom", "gpu_error"):
        return ev.kind, False
    if result == "cuda":
        return "gpu_error", False
    if result == "remote":
        return "remote_error", False
    return "nccl_error", False


# ---------------------------------------------------------------------------------------------
# Line envelope: shipper stamp, stream prefixes, NCCL / UCX / syslog host prefixes, times

# A collector's stamp at the very start: ISO 8601 / RFC 3339 (any fraction, `Z`, `+08:00`, also
# space-separated), CRI `stdout F `, then mpirun --tag-output `[1,12]<stdout>:` and srun -l `3: `.
_LEAD_RE = re.compile(
    # Ray prints each worker's output behind `(RayTrainWorker pid=355353) ` (NVIDIA/nccl#1212).
    r"\s*(?:\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\) )?"
    r"(?:(?P<Y>\d{4})-(?P<M>\d\d)-(?P<D>\d\d)[T ](?P<h>\d\d):(?P<m>\d\d)"
    r"(?::(?P<s>\d\d)(?:[.,](?P<f>\d{1,9}))?)?(?: ?(?P<z>Z|[+-]\d\d:?\d\d))?:?\s+"
    r"(?:(?:stdout|stderr) [FP] )?)?"
    # Open MPI's --timestamp-output: ctime(3), glued to the --tag-output tag (NVIDIA/nccl#957).
    r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<cmon>[A-Z][a-z]{2}) +(?P<cd>\d{1,2}) "
    r"(?P<ch>\d\d):(?P<cm>\d\d):(?P<cs>\d\d) (?P<cy>\d{4}) ?)?"
    r"(?:\[\d+,(?P<mpi>\d+)\]<(?:stdout|stderr)>:)?"
    r"(?:(?P<task>\d+): )?"
)
# torchrun --tee `[default3]:`, `[rank13]:` (one or more, e.g. `[default0]:[rank0]:`).
_TAGS_RE = re.compile(r"(?:\[[A-Za-z][\w-]*?\d+\]:)+")
_RANK_TAG_RE = re.compile(r"\[rank(\d+)\]:")
_PG0_RANK_RE = re.compile(r"\[PG (?:ID )?0 (?:PG GUID 0(?:\([^)]*\))? )?Rank (\d+)\]")
# NCCL debug prefix (src/debug.cc): optional WARN timestamp (>= 2.26), host:pid:tid [cudaDev].
_NCCL_PREFIX_RE = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\] )?"
    r"(?<![\w.-])(?P<host>[\w.-]+):(?P<pid>\d+):\d+ \[(?P<dev>\d+)\] "
)
_UCX_PREFIX_RE = re.compile(r"(?:^|\[)(?P<host>[\w.-]+):\d+:\d+(?::\d+)?\] ")
_SYSLOG_RE = re.compile(
    r"(?:<\d+>)?(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<f>\d{1,9}))? (?P<host>[\w.-]+) "
)
_KERNEL_HOST_RE = re.compile(r"(?:^|\s)([\w.-]+) kernel: ")
_BRACKET_DATE_RE = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\]"
)
# glog: PyTorch c10 `[E218 04:54:22.864467604 file:line]` (month not zero-padded) and the
# torchelastic agent `E0517 08:24:03.805000 <tid> file:line]`.
_GLOG_RE = re.compile(r"(?<![\w.])[IWEF](\d{3,4}) (\d\d):(\d\d):(\d\d)\.(\d{1,9})\b")
_CTIME_RE = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d) (?P<y>\d{4})\]"
)
_NCCL_LEVEL_RE = re.compile(r"NCCL (?:WARN|INFO|TRACE) ")
# `ts` (moreutils) and similar wrappers: a syslog-style stamp with no host after it.
_TS_RE = re.compile(
    r"(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<f>\d{1,9}))? "
)
# src/init.cc VERSION_STRING "NCCL version 2.21.5+cuda12.4" (INFO); PyTorch's error text
# repeats it ("NCCL error: ..., NCCL version 2.20.5").
_VERSION_RE = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
# src/misc/param.cc (2.18.3-1 ... 2.30.7-1): INFO(NCCL_ENV, "%s set by environment to %lld.")
_ENV_RE = re.compile(r"\b(NCCL_IB_TIMEOUT|NCCL_IB_RETRY_CNT) set by environment to (-?\d+)")
_RAN_FOR_RE = re.compile(r"ran for (\d+) milliseconds")
# Merged stdout/stderr is written by several processes with their own buffers: a line printed
# after a stamped one may carry an instant a little before it.
_NEIGHBOUR_SLACK = timedelta(seconds=2)


def _micros(frac: str | None) -> int:
    return int(frac[:6].ljust(6, "0")) if frac else 0


def _zone(z: str) -> tzinfo:
    if z == "Z":
        return UTC
    sign = -1 if z[0] == "-" else 1
    digits = z[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


# year, month, day, hour, minute, second, microsecond of a wall-clock time
_Parts = tuple[int, int, int, int, int, int, int]


def _wall(p: _Parts, tz: tzinfo) -> datetime | None:
    """A wall-clock time in `tz` -> aware UTC, None if impossible (Feb 30, hour 25...)."""
    try:
        return datetime(p[0], p[1], p[2], p[3], p[4], p[5], p[6], tzinfo=tz).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


@dataclass(slots=True)
class _Line:
    """What the envelope of one (failure or state) line says."""

    body: str  # the line after the collector stamp and mpirun/srun prefixes
    stream: str  # the prefixes that tell one process's output from another's ("" if none)
    text_start: int  # where the text starts in `body` after torchrun tags
    zoned: datetime | None = None  # collector stamp with a zone
    naive: _Parts | None = None  # collector stamp without a zone
    syslog: Stamp | None = None
    host: str | None = None
    dev: str | None = None  # NCCL [cudaDev]
    pid: str | None = None
    rank: int | None = None
    msg_start: int = 0


def _envelope(line: str) -> _Line:
    lead = _LEAD_RE.match(line)
    zoned: datetime | None = None
    naive: _Parts | None = None
    stream = ""
    pos = 0
    rank: int | None = None
    if lead is not None:
        pos = lead.end()
        if lead.group("Y"):
            parts: _Parts = (
                int(lead.group("Y")), int(lead.group("M")), int(lead.group("D")),
                int(lead.group("h")), int(lead.group("m")), int(lead.group("s") or 0),
                _micros(lead.group("f")),
            )
            z = lead.group("z")
            if z:
                zoned = _wall(parts, _zone(z))
            else:
                naive = parts
        elif lead.group("cy") and (cmon := MONTHS.get(lead.group("cmon"))) is not None:
            naive = (int(lead.group("cy")), cmon, int(lead.group("cd")), int(lead.group("ch")),
                     int(lead.group("cm")), int(lead.group("cs")), 0)
        mpi = lead.group("mpi")
        if mpi is not None:
            stream = f"mpi{mpi}"
            rank = int(mpi)
        if lead.group("task") is not None:
            stream += f"task{lead.group('task')}"
    body = line[pos:] if pos else line
    syslog: Stamp | None = None
    host: str | None = None
    if body[:1] == "<" or body[:3] in MONTHS:  # a syslog envelope (e.g. kernel Xid lines)
        sm = _SYSLOG_RE.match(body)
        mon = MONTHS.get(sm.group("mon")) if sm else None
        if sm is not None and mon is not None:
            syslog = (mon, int(sm.group("d")), int(sm.group("h")), int(sm.group("m")),
                      int(sm.group("s")), _micros(sm.group("f")))
            host = sm.group("host")
            body = body[sm.end():]
        else:
            ts = _TS_RE.match(body)
            mon = MONTHS.get(ts.group("mon")) if ts else None
            if ts is not None and mon is not None:
                syslog = (mon, int(ts.group("d")), int(ts.group("h")), int(ts.group("m")),
                          int(ts.group("s")), _micros(ts.group("f")))
                body = body[ts.end():]
    text_start = 0
    tags = _TAGS_RE.search(body)
    if tags is not None:
        # The outermost tag names the process; c10d adds `[rankN]:` to its C++ lines only, not
        # to the Python traceback lines that follow them.
        run = tags.group(0)
        stream += run[: run.index("]:") + 2]
        text_start = tags.end()
        rt = _RANK_TAG_RE.search(tags.group(0))
        if rt is not None:
            rank = int(rt.group(1))
    info = _Line(body, stream, text_start, zoned, naive, syslog, host, rank=rank)
    prefix = _NCCL_PREFIX_RE.search(body, text_start)
    if prefix is not None:
        info.host, info.dev, info.pid = prefix.group("host", "dev", "pid")
        level = _NCCL_LEVEL_RE.match(body, prefix.end())
        if level is None:  # WARN lines carry `file:line [(func)] ` before the level
            level = _NCCL_LEVEL_RE.search(body, prefix.end(), prefix.end() + 160)
        info.msg_start = level.end() if level is not None else prefix.end()
    else:
        level = _NCCL_LEVEL_RE.search(body, text_start, text_start + 160)
        info.msg_start = level.end() if level is not None else text_start
        if host is None:
            ucx = _UCX_PREFIX_RE.match(body, text_start)
            if ucx is not None:
                info.host = ucx.group("host")
                info.msg_start = ucx.end()
            elif " kernel: " in body:
                kh = _KERNEL_HOST_RE.search(body)
                info.host = kh.group(1) if kh else None
        else:
            info.host = host
    if info.rank is None and "Rank " in body:
        pg = _PG0_RANK_RE.search(body)
        if pg is not None:
            info.rank = int(pg.group(1))
    return info


# ---------------------------------------------------------------------------------------------
# Parse state

_IGNORED = "ignored"  # a handler's "this line is mine and it is not an error" answer
_PENDING_LINES = 16  # how far the lines of one PyTorch error may be spread by other ranks
_ELASTIC_FAILED_RE = re.compile(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)"
)
_XID_RE = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+)")
_BLOCK_FIELD_RE = re.compile(
    r"(time|host|rank|exitcode|error_file|traceback|signal)\s*: ?(.*)$"
)
_UNSHOWN_FIELDS = frozenset({"time", "host", "traceback"})  # time/host have their own fields
_BLOCK_ENTRY_RE = re.compile(r"\[(\d+)\]:$")
_BLOCK_TIME_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)_(\d\d):(\d\d):(\d\d)$")
# The OOB part may be empty (`; OOB :`, NVIDIA/nccl#224): the device list still counts.
_USING_RE = re.compile(r"NET/IB\w* ?: Using (?P<devs>.*?); OOB (?:[\w.-]+:(?P<ip>\S+?)<\d+>)?")
_USING_DEV_RE = re.compile(r"\[(\d+)\]([\w.-]+):(\d+)/")
_BOOTSTRAP_RE = re.compile(r"Bootstrap ?: Using [\w.-]+:(?P<ip>\S+?)<\d+>")
_CHANNEL_RE = re.compile(r"via NET/IB\w*/(\d+)")
_USING_FAST_RE = re.compile(r"([\w.-]+):(\d+):\d+ \[\d+\] NCCL INFO (NET/IB\w* ?: Using .*)$")
_CHANNEL_FAST_RE = re.compile(
    r"([\w.-]+):\d+:\d+ \[(\d+)\] NCCL INFO Channel [^\n]*? via NET/IB\w*/(\d+)"
)


@dataclass(slots=True)
class _Draft:
    kind: str
    network: bool
    line_no: int
    line: str
    message: str
    at: datetime | int | None = None  # int: index into _Run.yearless
    host: str | None = None
    hca: str | None = None
    hca_port: int | None = None
    peer: str | None = None
    status: int | None = None
    status_name: str | None = None
    rank: int | None = None
    drop: str | None = None  # set: goes to unparsed with this reason instead
    stream: str = ""
    pid: str | None = None
    ran_ms: int | None = None

    def take(self, ev: _Evidence) -> None:
        self.peer = ev.peer or self.peer
        self.status = ev.status if ev.status is not None else self.status
        self.status_name = ev.status_name or self.status_name
        self.hca = ev.hca or self.hca
        self.hca_port = ev.hca_port if ev.hca_port is not None else self.hca_port


@dataclass(slots=True)
class _Pending:
    """A PyTorch NCCL error whose `ncclXxxError:` / `Last error:` lines may follow."""

    draft: _Draft
    result: str | None
    born: int  # _Run.count when it was opened
    left: int = 3
    want_text: bool = False


@dataclass(slots=True)
class _Block:
    """A torchelastic ChildFailedError summary being read."""

    opened: bool = False
    section: str = "Failures"
    entry: _Draft | None = None
    index: str = ""
    fields: dict[str, str] = field(default_factory=dict)


Outcome = _Draft | str | None  # error, unparsed reason (or _IGNORED), None = not recognised


class _Run:
    def __init__(self, tz: tzinfo) -> None:
        self.tz = tz
        self.drafts: list[_Draft] = []
        self.result = JoblogResult()
        # NET/IB Using lists by ("p", host, pid), ("s", stream) and ("h", host): processes of one
        # host may see different lists when NCCL_IB_HCA pins one NIC per rank.
        self.using: dict[tuple[str, ...], list[tuple[str, int] | None]] = {}
        self.using_memo: dict[tuple[str, str], list[tuple[str, int] | None]] = {}
        self.count = 0  # lines seen, to expire continuations of a stream that went quiet
        self.channels: dict[tuple[str, str], set[int]] = {}
        self.stream_hosts: dict[str, str] = {}
        self.pending: dict[str, _Pending] = {}
        self.block: _Block | None = None
        self.yearless: list[Stamp] = []
        self.newest: datetime | None = None
        self.versions: list[str] = []
        self.env: dict[str, int] = {}

    # -- driver ---------------------------------------------------------------------------

    def line(self, line_no: int, line: str) -> None:
        res = self.result
        self.count += 1
        if self.pending:
            # Another rank's interleaved output may sit between the lines of one error, but not
            # for long; a stream that went quiet must not keep every later line on the slow path.
            stale = [k for k, p in self.pending.items() if self.count - p.born > _PENDING_LINES]
            for k in stale:
                del self.pending[k]
        if self.pending or self.block is not None:
            env = _envelope(line)
            if self.pending and self._continuation(env):
                res.ignored += 1
                return
            if self.block is not None:
                out = self._block_line(self.block, line_no, line, env)
                if out is not None:
                    self._record(line_no, line, out)
                    return
        self._record(line_no, line, self._dispatch(line_no, line))

    def _record(self, line_no: int, line: str, out: Outcome) -> None:
        if out is None or out is _IGNORED:
            self.result.ignored += 1
        elif isinstance(out, str):
            self.result.unparsed.append((line_no, line, out))
        else:
            self.drafts.append(out)

    def _dispatch(self, line_no: int, line: str) -> Outcome:
        if "NCCL" in line and ("version" in line or "set by environment" in line):
            self._nccl_meta(line)
        if "NET/IB" in line:
            if "via NET/IB" in line:
                self._channel(line)
                return _IGNORED
            if "Using" in line and "OOB" in line:
                self._using(line)
                return _IGNORED
            if "Last error" not in line and "NCCL error" not in line:
                out = self._ib(line_no, line)
                if out is not None:
                    return out
        if ("rror" in line or "xited" in line or "ncclInvalid" in line) and any(
            g in line for g in _NCCL_GATES
        ):
            out = self._nccl_error(line_no, line)
            if out is not None:
                return out
        if "atchdog" in line or "operation timeout" in line or "Heartbeat monitor" in line:
            out = self._watchdog(line_no, line)
            if out is not None:
                return out
        if "(exitcode: " in line:
            return self._elastic(line_no, line)
        if "ChildFailedError" in line or "Root Cause (first observed failure)" in line:
            self._close_block()
            self.block = _Block(opened="Root Cause" in line)
            return _IGNORED
        if "Bootstrap" in line and "Using" in line:
            self._bootstrap(line)
            return _IGNORED
        if (
            ("WARN" in line or "ocket" in line)
            and any(c in line for c in _SOCKET_CONTEXT)
            and any(w in line for w in _SOCKET_WORDS)
        ):
            return self._make(line_no, line, _envelope(line), _socket(line))
        if "ibv_" in line or "poll_cq" in line or "cq_poll" in line or "etry count" in line:
            out = self._verbs(line_no, line)
            if out is not None:
                return out
        if "NVRM: Xid" in line:
            return self._xid(line_no, line)
        if (
            "emory" in line or "CUDA error" in line or "uda failure" in line or "ECC" in line
            or "uda runtime" in line or "unhandled cuda" in line or "fallen off" in line
        ):
            ev = _gpu(line)
            if ev is not None:
                return self._make(line_no, line, _envelope(line), ev)
        return None

    def _nccl_meta(self, line: str) -> None:
        v = _VERSION_RE.search(line)
        if v is not None and v.group(1) not in self.versions and len(self.versions) < 8:
            self.versions.append(v.group(1))
        env = _ENV_RE.search(line)
        if env is not None:
            self.env.setdefault(env.group(1), int(env.group(2)))

    # -- building errors ------------------------------------------------------------------

    def _time(self, env: _Line) -> datetime | int | None:
        if env.zoned is not None:
            return self._dated(env.zoned)
        shipper = _wall(env.naive, self.tz) if env.naive is not None else None
        if shipper is not None:
            # The program's own stamp below wins (finer, S11's collector prints minutes), but a
            # collector's date still dates the yearless glog stamps of the same log.
            self._dated(shipper)
        body = env.body
        if "[" in body:
            bd = _BRACKET_DATE_RE.search(body)
            if bd is not None:
                at = _wall((int(bd.group(1)), int(bd.group(2)), int(bd.group(3)),
                            int(bd.group(4)), int(bd.group(5)), int(bd.group(6)),
                            _micros(bd.group(7))), self.tz)
                return self._dated(at) if at is not None else None
        g = _GLOG_RE.search(body)
        if g is not None:
            md = g.group(1)
            stamp = (int(md[:-2]), int(md[-2:]), int(g.group(2)), int(g.group(3)),
                     int(g.group(4)), _micros(g.group(5)))
            return self._yearless(stamp)
        if "[" in body:
            ct = _CTIME_RE.search(body)
            mon = MONTHS.get(ct.group("mon")) if ct else None
            if ct is not None and mon is not None:
                at = _wall((int(ct.group("y")), mon, int(ct.group("d")), int(ct.group("h")),
                            int(ct.group("m")), int(ct.group("s")), 0), self.tz)
                return self._dated(at) if at is not None else None
        if env.syslog is not None:
            return self._yearless(env.syslog)
        return shipper

    def _yearless(self, stamp: Stamp) -> int | None:
        if not (1 <= stamp[0] <= 12 and 1 <= stamp[1] <= 31):
            return None
        self.yearless.append(stamp)
        return len(self.yearless) - 1

    def _dated(self, at: datetime) -> datetime:
        if self.newest is None or at > self.newest:
            self.newest = at
        return at

    def _host(self, env: _Line) -> str | None:
        if env.host is not None:
            self.result.hosts.add(env.host)
            if env.stream:
                self.stream_hosts[env.stream] = env.host
            return env.host
        return self.stream_hosts.get(env.stream) if env.stream else None

    def _message(self, env: _Line) -> str:
        return env.body[env.msg_start:].strip()[:MESSAGE_LIMIT]

    def _make(self, line_no: int, line: str, env: _Line, ev: _Evidence,
              kind: str | None = None, network: bool | None = None) -> _Draft:
        d = _Draft(
            kind or ev.kind, ev.network if network is None else network, line_no, line,
            self._message(env), self._time(env), self._host(env), ev.hca, ev.hca_port,
            ev.peer, ev.status, ev.status_name, env.rank, stream=env.stream, pid=env.pid,
        )
        if ev.ib or d.kind in ("setup_error", "poll_error"):
            self._locate(d, env.dev)
        return d

    def _devices(self, d: _Draft, host: str) -> list[tuple[str, int] | None] | None:
        if d.pid is not None and ("p", host, d.pid) in self.using:
            return self.using[("p", host, d.pid)]
        if d.stream and ("s", d.stream) in self.using:
            return self.using[("s", d.stream)]
        return self.using.get(("h", host))

    def _locate(self, d: _Draft, dev: str | None) -> None:
        """Fill the HCA (and port) of an IB error from the host's earlier init lines."""
        host = d.host
        if host is None:
            return
        if d.hca is None:
            devs = self._devices(d, host)
            pick: tuple[str, int] | None = None
            if devs and len(devs) == 1:
                pick = devs[0]
            elif devs and dev is not None and d.kind != "async_event":
                # An async event belongs to a device, not to the GPU named in the prefix.
                nets = self.channels.get((host, dev))
                if nets is not None and len(nets) == 1:
                    (n,) = nets
                    pick = devs[n] if n < len(devs) else None
            if pick is not None:
                d.hca, d.hca_port = pick
        if d.hca is not None:
            if d.hca_port is None:
                d.hca_port = self.result.hca_ports.get((host, d.hca))
            else:
                self.result.hca_ports[(host, d.hca)] = d.hca_port

    # -- recognisers ----------------------------------------------------------------------

    def _ib(self, line_no: int, line: str) -> Outcome:
        if "Got completion" in line:
            ev = _completion(line)
        elif "async" in line:
            ev = _async(line)
        else:
            return None
        if ev is None or isinstance(ev, str):
            return ev
        return self._make(line_no, line, _envelope(line), ev)

    def _nccl_error(self, line_no: int, line: str) -> Outcome:
        env = _envelope(line)
        text = env.body[env.text_start:]
        result = _nccl_result(text)
        i = text.find("Last error:")
        tail = text[i + len("Last error:"):].strip() if i >= 0 else ""
        if result is None and not tail:
            return None  # a bare "Last error:" line: the next line is read on its own
        emb = _embedded(tail) if tail else None
        ev = emb if isinstance(emb, _Evidence) else None
        kind, network = _nccl_kind(result, ev)
        d = self._make(line_no, line, env, ev or _Evidence(kind, network), kind, network)
        if not tail:
            self.pending[env.stream] = _Pending(d, result, self.count)
        return d

    def _continuation(self, env: _Line) -> bool:
        p = self.pending.get(env.stream)
        if p is None:
            return False
        text = env.body[env.text_start:].strip()
        if p.want_text:
            del self.pending[env.stream]
            self._merge(p, text)
            return True
        if text.startswith("Last error:"):
            tail = text[len("Last error:"):].strip()
            if tail:
                del self.pending[env.stream]
                self._merge(p, tail)
            else:
                p.want_text = True
            return True
        token = _NCCL_TOKEN_RE.match(text)
        if token is not None and p.left > 1:
            p.result = p.result or _TOKEN_RESULTS[token.group(1)]
            p.left -= 1
            p.draft.message = (p.draft.message + " " + text)[:MESSAGE_LIMIT]
            kind, network = _nccl_kind(p.result, None)
            p.draft.kind, p.draft.network = kind, network
            return True
        del self.pending[env.stream]
        return False

    def _merge(self, p: _Pending, tail: str) -> None:
        d = p.draft
        d.message = (d.message + " Last error: " + tail)[:MESSAGE_LIMIT]
        emb = _embedded(tail)
        ev = emb if isinstance(emb, _Evidence) else None
        d.kind, d.network = _nccl_kind(p.result, ev)
        if ev is not None:
            d.take(ev)
            if ev.ib:
                self._locate(d, None)

    def _watchdog(self, line_no: int, line: str) -> Outcome:
        if "watchdog got stuck" in line or "Heartbeat monitor timed out" in line:
            return self._make(line_no, line, _envelope(line), _Evidence("watchdog_stuck", False))
        i = line.find("terminated with exception:")
        what = line[i + len("terminated with exception:"):] if i >= 0 else line
        j = what.find("atchdog caught ")
        if "ollective operation timeout" in what:
            kind = "watchdog_timeout"
        elif j >= 0:
            rest = what[j + len("atchdog caught "):].strip()
            # A what() wrapped at the terminal width ("... Watchdog caught colle") still names it.
            timeout = rest and "collective operation timeout".startswith(rest)
            kind = "watchdog_timeout" if timeout else "watchdog_error"
        elif i >= 0:
            gpu = _gpu(what)
            kind = gpu.kind if gpu is not None else "watchdog_error"
        else:
            return None
        d = self._make(line_no, line, _envelope(line), _Evidence(kind, False))
        if kind == "watchdog_timeout":
            ran = _RAN_FOR_RE.search(what)
            d.ran_ms = int(ran.group(1)) if ran is not None else None
        return d

    def _elastic(self, line_no: int, line: str) -> Outcome:
        if "failed (exitcode: " not in line:
            return None
        if _ELASTIC_FAILED_RE.search(line) is None:
            return "unreadable torchelastic failure"
        return self._make(line_no, line, _envelope(line), _Evidence("elastic_failed", False))

    def _verbs(self, line_no: int, line: str) -> Outcome:
        env: _Line | None = None
        code = _status_from_text(line) if "etry count" in line or "ib_mlx5" in line or (
            "poll" in line) else None
        if code is not None:
            kind, network = _status_kind(code)
            env = _envelope(line)
            dev = _UCX_DEV_RE.search(line)
            ev = _Evidence(kind, network, None, code, _status_name(code),
                           dev.group("hca") if dev else None,
                           int(dev.group("port")) if dev else None, True)
            return self._make(line_no, line, env, ev)
        if "poll_cq" in line or "cq_poll" in line:
            if "fail" in line or "returned -" in line or "error" in line:
                return self._make(line_no, line, _envelope(line), _Evidence("poll_error", True))
            return None
        if "Call to ibv_" in line and "ibv_get_async_event" not in line:
            # ibv_get_async_event fails as the async thread winds down after a fatal event.
            return self._make(line_no, line, _envelope(line), _Evidence("setup_error", False))
        return None

    def _xid(self, line_no: int, line: str) -> Outcome:
        if _XID_RE.search(line) is None:
            return "unreadable Xid line"
        return self._make(line_no, line, _envelope(line), _Evidence("gpu_error", False))

    # -- init lines (state) ---------------------------------------------------------------

    def _using(self, line: str) -> None:
        # Every process prints its list once: parse each distinct (host, list) once.
        fast = _USING_FAST_RE.match(line)
        if fast is not None:
            host, pid, tail = fast.groups()
            known = self.using_memo.get((host, tail))
            if known is not None:
                self.result.hosts.add(host)
                self._register(known, host, pid, "")
                return
        env = _envelope(line)
        found = self._host(env)
        m = _USING_RE.search(env.body)
        if found is None or m is None:
            return
        devs: list[tuple[str, int] | None] = []
        for idx, hca, port in _USING_DEV_RE.findall(m.group("devs")):
            i = int(idx)
            if i >= 64:  # a corrupt index must not allocate a huge list
                continue
            devs.extend([None] * (i + 1 - len(devs)))
            devs[i] = (hca, int(port))
            self.result.hca_ports[(found, hca)] = int(port)
        if m.group("ip"):
            self.result.addresses[m.group("ip")] = found
        if fast is not None:
            self.using_memo[(fast.group(1), fast.group(3))] = devs
        self._register(devs, found, env.pid, env.stream)

    def _register(
        self, devs: list[tuple[str, int] | None], host: str, pid: str | None, stream: str
    ) -> None:
        self.using[("h", host)] = devs
        if pid is not None:
            self.using[("p", host, pid)] = devs
        if stream:
            self.using[("s", stream)] = devs

    def _bootstrap(self, line: str) -> None:
        env = _envelope(line)
        host = self._host(env)
        m = _BOOTSTRAP_RE.search(env.body)
        if host is not None and m is not None:
            self.result.addresses[m.group("ip")] = host

    def _channel(self, line: str) -> None:
        fast = _CHANNEL_FAST_RE.match(line)
        if fast is not None:  # the usual bare NCCL INFO line: no collector or torchrun prefix
            host, dev, net = fast.groups()
            self.result.hosts.add(host)
        else:
            env = _envelope(line)
            m = _CHANNEL_RE.search(env.body)
            host, dev, net = self._host(env), env.dev, m.group(1) if m else None
            if host is None or dev is None or net is None:
                return
        nets = self.channels.get((host, dev))
        if nets is None:
            self.channels[(host, dev)] = {int(net)}
        elif len(nets) < 64:
            nets.add(int(net))

    # -- torchelastic ChildFailedError block ----------------------------------------------

    def _block_line(self, block: _Block, line_no: int, line: str, env: _Line) -> Outcome:
        text = env.body.strip()
        if text and set(text) == {"="}:
            if block.opened:
                self._close_block()
            else:
                block.opened = True
            return _IGNORED
        if text and set(text) == {"-"}:
            self._flush_entry()
            return _IGNORED
        if text in ("Failures:", "Root Cause (first observed failure):"):
            self._flush_entry()
            block.section = "Failures" if text == "Failures:" else "Root Cause"
            return _IGNORED
        if text == "<NO_OTHER_FAILURES>" or (text.endswith(" FAILED") and block.entry is None):
            return _IGNORED
        entry = _BLOCK_ENTRY_RE.match(text)
        if entry is not None:
            self._flush_entry()
            block.index = entry.group(1)
            d = _Draft("elastic_failed", False, line_no, line, "", rank=env.rank)
            block.entry, block.fields = d, {}
            self._describe(block)
            return d
        fm = _BLOCK_FIELD_RE.match(text)
        if fm is not None and block.entry is not None:
            self._field(block, block.entry, fm.group(1), fm.group(2).strip())
            return _IGNORED
        if not env.body[:1].isspace():  # indented lines are a traceback inside the block
            self._close_block()
        return None

    def _field(self, block: _Block, d: _Draft, key: str, value: str) -> None:
        block.fields[key] = value
        if key == "time":
            tm = _BLOCK_TIME_RE.match(value)
            at = None
            if tm is not None:
                y, mo, dd, h, mi, sec = (int(g) for g in tm.groups())
                at = _wall((y, mo, dd, h, mi, sec, 0), self.tz)
            d.at = self._dated(at) if at is not None else None
        elif key == "host" and value:
            d.host = value
            self.result.hosts.add(value)
        elif key == "rank":
            head = value.split(" ", 1)[0]
            if head.lstrip("-").isdigit():
                d.rank = int(head)
        self._describe(block)

    def _describe(self, block: _Block) -> None:
        if block.entry is None:
            return
        shown = [f"{k}: {v}" for k, v in block.fields.items() if k not in _UNSHOWN_FIELDS]
        block.entry.message = (
            f"ChildFailedError {block.section} [{block.index}]: " + "; ".join(shown)
        )[:MESSAGE_LIMIT]

    def _flush_entry(self) -> None:
        block = self.block
        if block is None or block.entry is None:
            return
        if not block.fields:
            block.entry.drop = "torchelastic failure entry without fields"
        block.entry, block.fields = None, {}

    def _close_block(self) -> None:
        self._flush_entry()
        self.block = None

    # -- result ---------------------------------------------------------------------------

    def finish(self, year: int | None, reference: datetime | None) -> JoblogResult:
        self._close_block()
        resolved: list[datetime | None] = []
        if self.yearless:
            ref = reference if reference is not None else self.newest
            try:
                resolved = infer_years(self.yearless, year=year, reference=ref, tz=self.tz)
            except LINE_ERRORS:  # year= outside datetime's range
                resolved = [None] * len(self.yearless)
        res = self.result
        res.nccl_versions = self.versions
        res.nccl_env = self.env
        kept = [d for d in self.drafts if d.drop is None]
        res.unparsed += [(d.line_no, d.line, d.drop) for d in self.drafts if d.drop is not None]
        ats = [d.at if not isinstance(d.at, int) else resolved[d.at] for d in kept]
        before, after = _neighbours(ats)
        for d, at, lo, hi in zip(kept, ats, before, after, strict=True):
            if d.hca is not None and d.hca_port is None and d.host is not None:
                # A device's port number is fixed per host: a later `Using` line still tells it.
                d.hca_port = res.hca_ports.get((d.host, d.hca))
            res.errors.append(JobError(
                at, d.kind, d.network, d.host, d.hca, d.hca_port, d.peer, d.status,
                d.status_name, d.rank, d.line_no, d.message,
                None if at is not None or lo is None else lo - _NEIGHBOUR_SLACK,
                None if at is not None or hi is None else hi + _NEIGHBOUR_SLACK,
                d.ran_ms,
            ))
        res.unparsed.sort(key=lambda u: u[0])
        res.first = first_errors(res.errors)
        return res


def _neighbours(ats: list[datetime | None]
                ) -> tuple[list[datetime | None], list[datetime | None]]:
    """Per line (in file order), the latest stamp before it and the earliest after it."""
    before: list[datetime | None] = []
    latest: datetime | None = None
    for at in ats:
        before.append(latest)
        if at is not None and (latest is None or at > latest):
            latest = at
    after: list[datetime | None] = [None] * len(ats)
    earliest: datetime | None = None
    for i in range(len(ats) - 1, -1, -1):
        after[i] = earliest
        at = ats[i]
        if at is not None and (earliest is None or at < earliest):
            earliest = at
    return before, after


def parse_joblog(
    lines: Iterable[tuple[int, str]],
    *,
    tz: tzinfo = UTC,
    year: int | None = None,
    reference: datetime | None = None,
) -> JoblogResult:
    """Failure evidence in one job log; see the module docstring for formats and rules.

    `tz`: the zone of stamps printed without one (NCCL, torchelastic, glog, the ChildFailedError
    block). `year`: the year of the first yearless (glog / syslog) stamp; otherwise years come
    from `reference` (e.g. the job's end or the file's mtime) or the newest dated line."""
    run = _Run(tz)
    res = run.result
    for line_no, raw in lines:
        line = raw.rstrip("\r\n")
        if not line or line.isspace():
            res.ignored += 1
            continue
        try:
            run.line(line_no, line)
        except LINE_ERRORS as exc:
            res.unparsed.append((line_no, line, f"unreadable ({type(exc).__name__})"))
    return run.finish(year, reference)
