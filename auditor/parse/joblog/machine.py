"""Parse state: one pass over a log's lines, the errors drafted from them, what init lines
say about hosts, HCAs and addresses, and the result (`parse_joblog`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from auditor.models import JobError
from auditor.parse._logline import LINE_ERRORS, MONTHS, Stamp, infer_years
from auditor.parse.joblog.envelope import (
    BRACKET_DATE_RE,
    CTIME_RE,
    GLOG_RE,
    Line,
    micros,
    read_envelope,
    wall,
)
from auditor.parse.joblog.recognise import (
    NCCL_GATES,
    NCCL_TOKEN_RE,
    SOCKET_CONTEXT,
    SOCKET_WORDS,
    TOKEN_RESULTS,
    UCX_DEV_RE,
    Evidence,
    nccl_kind,
    nccl_result,
    read_async,
    read_completion,
    read_embedded,
    read_failover,
    read_gpu,
    read_socket,
)
from auditor.parse.joblog.result import MESSAGE_LIMIT, JoblogResult, first_errors
from auditor.parse.joblog.statuses import status_from_text, status_kind, status_name

# src/init.cc VERSION_STRING "NCCL version 2.21.5+cuda12.4" (INFO); PyTorch's error text
# repeats it ("NCCL error: ..., NCCL version 2.20.5").
_VERSION_RE = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
# src/misc/param.cc (2.18.3-1 ... 2.30.7-1): INFO(NCCL_ENV, "%s set by environment to %lld.")
# A `\b` before the name, written as the look-behinds after it: the search then looks for the
# literal names instead of trying every position (4 us -> 1 us; every rank prints the line).
_ENV_RE = re.compile(r"(NCCL_IB_TIMEOUT|NCCL_IB_RETRY_CNT)(?<!\wNCCL_IB_TIMEOUT)"
                     r"(?<!\wNCCL_IB_RETRY_CNT) set by environment to (-?\d+)")
# A string setting is not a NCCL_PARAM: src/transport/net_ib.cc (net_ib/init.cc from 2.29)
# prints INFO(NCCL_NET|NCCL_ENV, "NCCL_IB_HCA set to %s") once, with its `^` / `=` prefixes.
_IB_HCA_RE = re.compile(r"\bNCCL_IB_HCA set to (\S+)")
_RAN_FOR_RE = re.compile(r"ran for (\d+) milliseconds")
# Merged stdout/stderr is written by several processes with their own buffers: a line printed
# after a stamped one may carry an instant a little before it.
_NEIGHBOUR_SLACK = timedelta(seconds=2)

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
# src/transport/net_ib/init.cc:190 at v2.29.7-1 (INFO): every physical device first becomes a
# virtual one of its own (ndevs=1, :380), then each merged NIC (NCCL_IB_MERGE_NICS) gets the
# next index, named by its devices joined with `+` (:166-171) in the order `devIndex` counts.
_VDEVICE_RE = re.compile(
    r"NET/IB\w* ?: Made virtual device \[(?P<n>\d+)\] name=(?P<name>\S+) speed=-?\d+ "
    r"ndevs=(?P<ndevs>\d+)"
)
# The statuses NCCL's resiliency treats as survivable (p2p_resiliency.cc:29-33, v2.29.7-1).
_SURVIVABLE_STATUSES = frozenset({5, 12})
_USING_FAST_RE = re.compile(r"([\w.-]+):(\d+):\d+ \[\d+\] NCCL INFO (NET/IB\w* ?: Using .*)$")
_CHANNEL_FAST_RE = re.compile(
    r"([\w.-]+):\d+:\d+ \[(\d+)\] NCCL INFO Channel [^\n]*? via NET/IB\w*/(\d+)"
)
# The devices of a `Using` list by index (None: an index the list skips), its (HCA, port) pairs
# in the order printed, and the OOB address.
_Devices = tuple[tuple[str, int] | None, ...]
_UsingList = tuple[_Devices, tuple[tuple[str, int], ...], str | None]


def _read_using(text: str) -> _UsingList | None:
    """What the first `NET/IB : Using ...; OOB ...` in `text` says, None if there is none."""
    m = _USING_RE.search(text)
    if m is None:
        return None
    devs: list[tuple[str, int] | None] = []
    ports: list[tuple[str, int]] = []
    for idx, hca, port in _USING_DEV_RE.findall(m.group("devs")):
        i = int(idx)
        if i >= 64:  # a corrupt index must not allocate a huge list
            continue
        devs.extend([None] * (i + 1 - len(devs)))
        devs[i] = (hca, int(port))
        ports.append((hca, int(port)))
    return tuple(devs), tuple(ports), m.group("ip")


# A host prints the same list in every job: 75,000 lines, 4,096 distinct, in the 6,105 logs of
# the scale scenario, 3 us of regex each (issue #13). Short texts only, so the cache stays small.
_read_using_cached = lru_cache(maxsize=8192)(_read_using)
_CACHED_USING = 256  # characters


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
    dev_index: int | None = None
    hca_candidates: tuple[str, ...] = ()

    def take(self, ev: Evidence) -> None:
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
        self.using: dict[tuple[str, ...], _Devices] = {}
        self.using_memo: dict[tuple[str, str], _Devices] = {}
        # Merged NICs (more than one device) by ("p", host, pid) and ("h", host): index -> the
        # physical HCAs in devIndex order.
        self.vdevices: dict[tuple[str, ...], dict[int, tuple[str, ...]]] = {}
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
            env = read_envelope(line)
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
        if "NCCL" in line and ("version" in line or "set by environment" in line
                               or "NCCL_IB_HCA set to" in line):
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
            g in line for g in NCCL_GATES
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
            and any(c in line for c in SOCKET_CONTEXT)
            and any(w in line for w in SOCKET_WORDS)
        ):
            return self._make(line_no, line, read_envelope(line), read_socket(line))
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
            ev = read_gpu(line)
            if ev is not None:
                return self._make(line_no, line, read_envelope(line), ev)
        return None

    def _nccl_meta(self, line: str) -> None:
        # Each search only where its words are: every rank prints its environment lines
        # (75,000 of them in the scale scenario's logs) and rank 0 its version line.
        if "NCCL version" in line:
            v = _VERSION_RE.search(line)
            if v is not None and v.group(1) not in self.versions and len(self.versions) < 8:
                self.versions.append(v.group(1))
        if "set by environment" in line:
            env = _ENV_RE.search(line)
            if env is not None:
                self.env.setdefault(env.group(1), int(env.group(2)))
        if "NCCL_IB_HCA set to" in line:
            hca = _IB_HCA_RE.search(line)
            if hca is not None and self.result.ib_hca is None:
                self.result.ib_hca = hca.group(1)[:MESSAGE_LIMIT]

    # -- building errors ------------------------------------------------------------------

    def _time(self, env: Line) -> datetime | int | None:
        if env.zoned is not None:
            return self._dated(env.zoned)
        shipper = wall(env.naive, self.tz) if env.naive is not None else None
        if shipper is not None:
            # The program's own stamp below wins (finer, S11's collector prints minutes), but a
            # collector's date still dates the yearless glog stamps of the same log.
            self._dated(shipper)
        body = env.body
        if "[" in body:
            bd = BRACKET_DATE_RE.search(body)
            if bd is not None:
                at = wall((int(bd.group(1)), int(bd.group(2)), int(bd.group(3)),
                            int(bd.group(4)), int(bd.group(5)), int(bd.group(6)),
                            micros(bd.group(7))), self.tz)
                return self._dated(at) if at is not None else None
        g = GLOG_RE.search(body)
        if g is not None:
            md = g.group(1)
            stamp = (int(md[:-2]), int(md[-2:]), int(g.group(2)), int(g.group(3)),
                     int(g.group(4)), micros(g.group(5)))
            return self._yearless(stamp)
        if "[" in body:
            ct = CTIME_RE.search(body)
            mon = MONTHS.get(ct.group("mon")) if ct else None
            if ct is not None and mon is not None:
                at = wall((int(ct.group("y")), mon, int(ct.group("d")), int(ct.group("h")),
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

    def _host(self, env: Line) -> str | None:
        if env.host is not None:
            self.result.hosts.add(env.host)
            if env.stream:
                self.stream_hosts[env.stream] = env.host
            return env.host
        return self.stream_hosts.get(env.stream) if env.stream else None

    def _message(self, env: Line) -> str:
        return env.body[env.msg_start:].strip()[:MESSAGE_LIMIT]

    def _make(self, line_no: int, line: str, env: Line, ev: Evidence,
              kind: str | None = None, network: bool | None = None) -> _Draft:
        d = _Draft(
            kind or ev.kind, ev.network if network is None else network, line_no, line,
            self._message(env), self._time(env), self._host(env), ev.hca, ev.hca_port,
            ev.peer, ev.status, ev.status_name, env.rank, stream=env.stream, pid=env.pid,
            dev_index=ev.dev_index,
        )
        if ev.dev_index is not None and d.hca is None:
            self._merged_device(d, env.dev)
        if ev.ib or d.kind in ("setup_error", "poll_error"):
            self._locate(d, env.dev)
        return d

    def _devices(self, d: _Draft, host: str) -> _Devices | None:
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

    def _merged_device(self, d: _Draft, dev: str | None) -> None:
        """The HCA a resiliency `devIndex` stands for: the device at that index of the merged
        NIC the rank's `Channel` lines use when they name one only, else of the host's only
        merged NIC; with several, the HCAs it may be (`hca_candidates`)."""
        host, i = d.host, d.dev_index
        if host is None or i is None:
            return
        merged = (self.vdevices.get(("p", host, d.pid)) if d.pid is not None else None
                  ) or self.vdevices.get(("h", host))
        if not merged:
            return
        nets = self.channels.get((host, dev)) if dev is not None else None
        if nets is not None and len(nets) == 1:
            (n,) = nets
            names = merged.get(n)
            if names is not None:
                d.hca = names[i] if i < len(names) else None
                return
        found = sorted({names[i] for names in merged.values() if i < len(names)})
        if len(found) == 1:
            d.hca = found[0]
        elif found:
            d.hca_candidates = tuple(found)

    # -- recognisers ----------------------------------------------------------------------

    def _ib(self, line_no: int, line: str) -> Outcome:
        if "Got completion" in line:
            ev = read_completion(line)
        elif "async" in line:
            ev = read_async(line)
        elif "Made virtual device" in line:
            self._vdevice(line)
            return _IGNORED
        elif "Replacing QP" in line:
            # p2p_resiliency.cc:88 (INFO, one per QP, unstamped): the :312 WARN just before it
            # names the same device once, stamped.
            return _IGNORED
        elif "failed" in line or "replacement QP" in line:
            ev = read_failover(line)
        else:
            return None
        if ev is None or isinstance(ev, str):
            return ev
        return self._make(line_no, line, read_envelope(line), ev)

    def _nccl_error(self, line_no: int, line: str) -> Outcome:
        env = read_envelope(line)
        text = env.body[env.text_start:]
        result = nccl_result(text)
        i = text.find("Last error:")
        tail = text[i + len("Last error:"):].strip() if i >= 0 else ""
        if result is None and not tail:
            return None  # a bare "Last error:" line: the next line is read on its own
        emb = read_embedded(tail) if tail else None
        ev = emb if isinstance(emb, Evidence) else None
        kind, network = nccl_kind(result, ev)
        d = self._make(line_no, line, env, ev or Evidence(kind, network), kind, network)
        if not tail:
            self.pending[env.stream] = _Pending(d, result, self.count)
        return d

    def _continuation(self, env: Line) -> bool:
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
        token = NCCL_TOKEN_RE.match(text)
        if token is not None and p.left > 1:
            p.result = p.result or TOKEN_RESULTS[token.group(1)]
            p.left -= 1
            p.draft.message = (p.draft.message + " " + text)[:MESSAGE_LIMIT]
            kind, network = nccl_kind(p.result, None)
            p.draft.kind, p.draft.network = kind, network
            return True
        del self.pending[env.stream]
        return False

    def _merge(self, p: _Pending, tail: str) -> None:
        d = p.draft
        d.message = (d.message + " Last error: " + tail)[:MESSAGE_LIMIT]
        emb = read_embedded(tail)
        ev = emb if isinstance(emb, Evidence) else None
        d.kind, d.network = nccl_kind(p.result, ev)
        if ev is not None:
            d.take(ev)
            if ev.ib:
                self._locate(d, None)

    def _watchdog(self, line_no: int, line: str) -> Outcome:
        if "watchdog got stuck" in line or "Heartbeat monitor timed out" in line:
            return self._make(line_no, line, read_envelope(line), Evidence("watchdog_stuck", False))
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
            gpu = read_gpu(what)
            kind = gpu.kind if gpu is not None else "watchdog_error"
        else:
            return None
        d = self._make(line_no, line, read_envelope(line), Evidence(kind, False))
        if kind == "watchdog_timeout":
            ran = _RAN_FOR_RE.search(what)
            d.ran_ms = int(ran.group(1)) if ran is not None else None
        return d

    def _elastic(self, line_no: int, line: str) -> Outcome:
        if "failed (exitcode: " not in line:
            return None
        if _ELASTIC_FAILED_RE.search(line) is None:
            return "unreadable torchelastic failure"
        return self._make(line_no, line, read_envelope(line), Evidence("elastic_failed", False))

    def _verbs(self, line_no: int, line: str) -> Outcome:
        env: Line | None = None
        code = status_from_text(line) if "etry count" in line or "ib_mlx5" in line or (
            "poll" in line) else None
        if code is not None:
            kind, network = status_kind(code)
            env = read_envelope(line)
            dev = UCX_DEV_RE.search(line)
            ev = Evidence(kind, network, None, code, status_name(code),
                           dev.group("hca") if dev else None,
                           int(dev.group("port")) if dev else None, True)
            return self._make(line_no, line, env, ev)
        if "poll_cq" in line or "cq_poll" in line:
            if "fail" in line or "returned -" in line or "error" in line:
                return self._make(line_no, line, read_envelope(line), Evidence("poll_error", True))
            return None
        if "Call to ibv_" in line and "ibv_get_async_event" not in line:
            # ibv_get_async_event fails as the async thread winds down after a fatal event.
            return self._make(line_no, line, read_envelope(line), Evidence("setup_error", False))
        return None

    def _xid(self, line_no: int, line: str) -> Outcome:
        if _XID_RE.search(line) is None:
            return "unreadable Xid line"
        return self._make(line_no, line, read_envelope(line), Evidence("gpu_error", False))

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
        if fast is not None and not line[0].isdigit() and "]:" not in line:
            # The bare NCCL INFO line: it starts with the host (a lead read_envelope would take
            # starts with a digit, or with `(`, `[` or a weekday and a space) and has no
            # torchrun tag, so its envelope is this prefix alone (issue #13: every rank prints
            # one, 75,000 envelope reads in the scale scenario).
            found, stream = host, ""
            self.result.hosts.add(host)
            # No `NET/IB ... Using` can start before the tail: its search there is the line's.
            listed = (_read_using_cached(tail) if len(tail) <= _CACHED_USING
                      else _read_using(tail))
        else:
            env = read_envelope(line)
            found, pid, stream = self._host(env), env.pid, env.stream
            listed = _read_using(env.body)
        if found is None or listed is None:
            return
        devs, ports, ip = listed
        for hca, port in ports:
            self.result.hca_ports[(found, hca)] = port
            self.result.using.add((found, hca))
        if ip:
            self.result.addresses[ip] = found
        if fast is not None:
            self.using_memo[(host, tail)] = devs
        self._register(devs, found, pid, stream)

    def _register(
        self, devs: _Devices, host: str, pid: str | None, stream: str
    ) -> None:
        self.using[("h", host)] = devs
        if pid is not None:
            self.using[("p", host, pid)] = devs
        if stream:
            self.using[("s", stream)] = devs

    def _vdevice(self, line: str) -> None:
        env = read_envelope(line)
        host = self._host(env)
        m = _VDEVICE_RE.search(env.body)
        if host is None or m is None or int(m.group("ndevs")) < 2:
            return  # a plain physical device: a communicator on it has nothing to fail over to
        names = tuple(m.group("name").split("+"))
        for key in (("h", host), ("p", host, env.pid)) if env.pid is not None else (("h", host),):
            merged = self.vdevices.setdefault(key, {})
            if len(merged) < 64:
                merged[int(m.group("n"))] = names

    def _bootstrap(self, line: str) -> None:
        env = read_envelope(line)
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
            env = read_envelope(line)
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

    def _block_line(self, block: _Block, line_no: int, line: str, env: Line) -> Outcome:
        text = env.body.strip()
        if text and not text.strip("="):
            if block.opened:
                self._close_block()
            else:
                block.opened = True
            return _IGNORED
        if text and not text.strip("-"):
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
                at = wall((y, mo, dd, h, mi, sec, 0), self.tz)
            d.at = self._dated(at) if at is not None else None
        elif key == "host" and value:
            d.host = value
            self.result.hosts.add(value)
        elif key == "rank":
            head = value.split(" ", 1)[0]
            if head.lstrip("-").isdigit():
                d.rank = int(head)

    def _describe(self, block: _Block) -> None:
        # Once, when the entry is complete (`_flush_entry`): its section, index and fields
        # cannot change before, and nothing reads the message sooner.
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
        self._describe(block)
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
        _demote_survived(kept)
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
                d.ran_ms, d.dev_index, d.hca_candidates,
            ))
        res.unparsed.sort(key=lambda u: u[0])
        res.first = first_errors(res.errors)
        return res


def _survived_key(d: _Draft) -> tuple[str | None, str | None, int | None]:
    return d.host, d.pid, d.dev_index


def _demote_survived(kept: list[_Draft]) -> None:
    """A resiliency completion error (p2p_resiliency.cc:802) that its process then failed over
    from (:312 names the same device) did not end the job: not network. A fatal status (not
    flush or retry-exceeded, :29-35) stays network whatever followed."""
    failed_over = {_survived_key(d) for d in kept if d.kind == "port_failover"}
    if not failed_over:
        return
    for d in kept:
        if (d.network and d.dev_index is not None and d.status in _SURVIVABLE_STATUSES
                and d.kind != "failover_failed" and _survived_key(d) in failed_over):
            d.network = False


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
    """Failure evidence in one job log; formats and rules: the package docstring (__init__.py).

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
