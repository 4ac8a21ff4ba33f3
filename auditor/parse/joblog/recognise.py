"""Evidence read from a message (also from a PyTorch "Last error:" text without a host
prefix): IB completion and async errors, NCCL socket errors, GPU causes, and the NCCL result
PyTorch names."""

from __future__ import annotations

import re
from typing import NamedTuple

from auditor.parse.joblog.statuses import status_kind, status_name


class Evidence(NamedTuple):
    kind: str
    network: bool
    peer: str | None = None
    status: int | None = None
    status_name: str | None = None
    hca: str | None = None
    hca_port: int | None = None
    ib: bool = False  # an IB completion or async event (what makes a remote_error network)
    dev_index: int | None = None  # NCCL resiliency: the device's index within its merged NIC


# `from peer X<port>` is absent before 2.10 and empty when NCCL could not name the socket. The
# resiliency path (2.29+) logs `with error (devIndex=0, wc->status=(IBV_WC_...)12`.
_COMPLETION_RE = re.compile(
    r"Got completion (?:from peer (?:(?P<peer>\S+?)(?:<\d+>)?)? ?)?with "
    r"(?:error (?P<old>\d+)\b"
    r"|status=(?:(?P<name>IBV_WC_\w+)\((?P<named>\d+)\)|(?P<num>\d+))"
    r"|error \(devIndex=(?P<rdev>\d+), wc->status=\((?P<rname>\w+)\)(?P<rnum>\d+))"
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
SOCKET_WORDS = (
    "Call to recv", "Call to send", "onnection closed by remote peer", "onnect to ",
    "Connection reset by peer", "Connection refused", "message truncated",
)
SOCKET_CONTEXT = ("NCCL WARN", "socketProgress", "ncclSocket", "ncclOsSocket", "NET/Socket")
UCX_DEV_RE = re.compile(r" on (?P<hca>[\w.-]+):(?P<port>\d+)/(?:IB|RoCE)")


def read_completion(text: str) -> Evidence | str | None:
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
    kind, network = status_kind(code)
    hca = _HCA_TAIL_RE.search(text, m.end())
    name = m.group("name") or m.group("rname") or status_name(code)
    rdev = m.group("rdev")
    return Evidence(kind, network, m.group("peer") or None, code, name,
                     hca.group(1) if hca else None, None, True,
                     int(rdev) if rdev is not None else None)


# NCCL port failover, src/transport/net_ib/p2p_resiliency.cc at v2.29.7-1 (off unless
# NCCL_IB_RESILIENCY_PORT_FAILOVER=1, :12). `devIndex` indexes the devices of the merged NIC
# (`NET/IB : Made virtual device [n] name=mlx5_0+mlx5_1 ...`, net_ib/init.cc:190) the
# communicator runs on. :312 WARN, once per communicator and device, just after :40 judged the
# error "not fatal" (the job goes on over the NIC's other devices):
_FAILED_DEVICE_RE = re.compile(r"NET/IB: \w+: Device (?P<dev>\d+) marked as failed\.")
# :95 WARN: no QP on a working device was left to take the failed one's traffic; the
# communicator returns ncclInternalError, so the job dies of the port loss after all.
_NO_REPLACEMENT_RE = re.compile(
    r"NET/IB: \w+: Could not find a replacement QP for the failed QP with qpIndex=\d+ "
    r"\(devIndex=(?P<dev>\d+)\)"
)


def read_failover(text: str) -> Evidence | str | None:
    """A port failover (`port_failover`, not network: the job lived on) or a failover that
    found no replacement (`failover_failed`, network); None for other resiliency lines."""
    if "marked as failed." in text and "was already marked" not in text:
        m = _FAILED_DEVICE_RE.search(text)
        if m is None:
            return "unreadable NCCL port failover"
        return Evidence("port_failover", False, dev_index=int(m.group("dev")))
    if "Could not find a replacement QP" in text:
        m = _NO_REPLACEMENT_RE.search(text)
        if m is None:
            return "unreadable NCCL port failover"
        return Evidence("failover_failed", True, dev_index=int(m.group("dev")))
    return None


def read_async(text: str) -> Evidence | str | None:
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
    return Evidence("async_event", network, None, None, None, m.group("hca"),
                     int(port) if port else None, True)


def read_socket(text: str) -> Evidence:
    m = _SOCKET_PEER_RE.search(text)
    return Evidence("socket_error", True, m.group("peer") if m else None)


def read_gpu(text: str) -> Evidence | None:
    if "ut of memory" in text or "OutOfMemoryError" in text:
        return Evidence("oom", False)
    if any(w in text for w in _GPU_WORDS):
        return Evidence("gpu_error", False)
    return None


_GPU_WORDS = (
    "CUDA error", "Cuda failure", "cuda runtime error", "ECC error", "illegal memory access",
    "unhandled cuda error", "fallen off the bus", "NVRM: Xid",
)


def read_embedded(text: str) -> Evidence | str | None:
    """What a PyTorch `Last error:` text (NCCL's ncclGetLastError, no host prefix) says."""
    if "Got completion" in text:
        return read_completion(text)
    if "NET/IB" in text and "async" in text:
        return read_async(text)
    if any(w in text for w in SOCKET_WORDS):
        return read_socket(text)
    return read_gpu(text)


# NCCL results as PyTorch names them, in its detail string or in ncclGetErrorString() words.
# `(?<!\wnccl)` is a `\b` before `nccl`, put after it so the search looks for the literal
# (15 us -> 0.3 us on a 575-character line).
NCCL_TOKEN_RE = re.compile(
    r"nccl(?<!\wnccl)(RemoteError|SystemError|InternalError|UnhandledCudaError|InvalidUsage"
    r"|InvalidArgument)\b"
)
TOKEN_RESULTS = {
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
NCCL_GATES = (
    "NCCL error", "Last error:", "ncclRemoteError", "ncclSystemError", "ncclInternalError",
    "ncclUnhandledCudaError", "ncclInvalid", "remote process exited or there was a network error",
)


def nccl_result(text: str) -> str | None:
    m = NCCL_TOKEN_RE.search(text)
    if m is not None:
        return TOKEN_RESULTS[m.group(1)]
    for words, result in _RESULT_WORDS:
        if words in text:
            return result
    return None


def nccl_kind(result: str | None, ev: Evidence | None) -> tuple[str, bool]:
    if ev is not None and ev.ib:
        return "remote_error", ev.network
    if ev is not None and ev.kind in ("oom", "gpu_error"):
        return ev.kind, False
    if result == "cuda":
        return "gpu_error", False
    if result == "remote":
        return "remote_error", False
    return "nccl_error", False
