"""The text each tool and log writes: the switches' syslog, ibqueryerrors snapshots and a
failed job's merged output (NCCL as each release words it, PyTorch, torchelastic, CUDA, the
launcher's prefixes). sacct.txt is written in `jobs`, the topology and site files in `fabric`.

Logging: both switch ends of a leaf-spine link log each flap; a host link is logged by its leaf
only. Each switch clock is off by up to `max_clock_skew_s`; lines are in arrival order, so their
stamps are not strictly sorted. LinkDownedCounter is 8-bit (sticks at 255), the error counters
16-bit. `lost_switch_logs` switches never reached the collector: none of their lines is in the
log (the counters still count). They are leaves of bad cables whose flaps killed jobs where
there are such (host cables first: nothing else logs those), then other leaves.

Job logs are written as the job's release words them (each rule cites the NCCL tag it was read
at, see `_completion_msg`): `Got completion with error` (<= 2.9), `from peer` (2.10), ` (Recv)`
(2.18), `status=12 opcode=0 len=0` (2.20), `NET/IB:` and `hca mlx5_N` (2.22), `status=
IBV_WC_RETRY_EXC_ERR(12) ... reqSize= req_type=` (2.28.7), without size and type (2.29), a
`Got CQE with error` line first (2.30); the async port event likewise. NCCL >= 2.26 stamps its
WARN lines `[%F %T] ` unless `nccl_stamps` is False; older ones have no time at all (PyTorch's
glog lines always have MMDD and time). `info_share` of the jobs run at NCCL_DEBUG=INFO: rank 0's
version line (an INFO line from 2.22, bare before), the `NET/IB : Using` list and `NCCL_IB_TIMEOUT
set by environment to N.` when it is set, from each node's GPU 0 process or, when
`channel_lines` (None: for releases < 2.22, whose errors name no HCA), from every GPU's process
with its `Channel ... via NET/IB/<rail>` lines; the other jobs run at WARN: the bare version
line and the WARN lines only. With `launcher_prefixes` each log gets
one launcher's style on every line: none, `srun --label` (`12: `, the node's task), `torchrun
--tee` (`[default3]:`, the worker's local rank), moreutils `ts` (`Nov 29 05:43:54 `) or a CRI
runtime (`2026-11-29T05:43:54.123456789Z stdout F `). With `sacct_steps` sacct.txt lists each
allocation's `.batch`, `.extern` and `.0` steps (as `sacct -P` without -X does), a few runs of
jobs become array tasks (`123_7`, JobIDRaw their own number) and one completed job a het job
(`123+0`, `123+1`). `REALISTIC` holds the options of such a cluster.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol

from auditor.simulate.scenario.clock import _Clock, _ctime, _iso
from auditor.simulate.scenario.fabric import _Fabric
from auditor.simulate.scenario.faults import _COUNTERS, _counter_values, _NodeKey, _Plan
from auditor.simulate.scenario.options import CAUSE_HOST_REBOOT, GPUS_PER_NODE, Scenario

_XIDS: dict[int, str] = {
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
        "partition 6, subpartition 0.",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    95: "Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No",
    119: "Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 "
         "(GSP_RM_CONTROL) (0x20802a02 0x8).",
}
_PCI_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


# --------------------------------------------------------------------------- switch log


def _switch_log(sc: Scenario, fab: _Fabric, plan: _Plan, clock: _Clock,
                skew: list[float], rng: random.Random, lost: set[int],
                reboot_rng: random.Random | None = None) -> str:
    """rsyslog RSYSLOG_FileFormat lines (`<RFC 3339> <host> <tag>[pid]: <msg>`) in arrival order;
    each stamp is the sender's clock. Onyx port events read `mgmtd[pid]: [mgmtd.NOTICE]:
    Interface IB1/17 changed state to DOWN`; the config line is verbatim from a Samara/MLNX-OS
    capture (reference/switch/syslog-samples.txt). The `lost` switches' lines are drawn and
    dropped, so the other switches' lines are the same with or without them. The flaps of
    crashed hosts (`host_reboots`) draw from `reboot_rng`, so the other lines do not move."""
    pids = [(rng.randint(2000, 9000), rng.randint(1000, 1999)) for _ in fab.switches]
    # A rebooted switch is silent while it boots and runs a new mgmtd afterwards.
    rebooting = {sw: (at, up) for sw, at, up, _ in plan.reboots}
    new_mgmtd = {sw: rng.randint(2000, 9000) for sw in sorted(rebooting)}
    lines: list[tuple[float, int, str]] = []

    def mgmtd(sw: int, t: float) -> str:
        after = sw in rebooting and t > rebooting[sw][0] + 10.0
        return f"mgmtd[{new_mgmtd[sw] if after else pids[sw][0]}]"

    def emit(sw: int, true_t: float, tag: str, msg: str, draw: random.Random = rng) -> None:
        stamp = _iso(clock.at(true_t + skew[sw])).replace("Z", "+00:00")
        arrival = true_t + draw.uniform(0.001, 0.05)
        if sw not in lost:
            lines.append((arrival, len(lines), f"{stamp} {fab.switches[sw].name} {tag}: {msg}"))

    for f in plan.flaps:
        draw = reboot_rng if reboot_rng is not None and f.cause == CAUSE_HOST_REBOOT else rng
        for sw, port in fab.logging_ends(f.link):
            for t, state in ((f.down, "DOWN"), (f.up, "UP")):
                # Each end notices the change on its own, a fraction of a second apart.
                emit(sw, t + draw.uniform(0.0, 0.3), mgmtd(sw, t),
                     f"[mgmtd.NOTICE]: Interface IB1/{port} changed state to {state}", draw)

    total = sc.days * 86400.0
    for sw in range(len(fab.switches)):
        ntpd = pids[sw][1]
        n = round(sc.noise_per_switch_per_day * sc.days * rng.uniform(0.5, 1.5))
        for _ in range(n):
            t = rng.uniform(0.0, total)
            pick = rng.randrange(6)
            if sw in rebooting and rebooting[sw][0] - 700 <= t <= rebooting[sw][1]:
                continue
            if pick == 0:
                emit(sw, t, mgmtd(sw, t),
                     "[mgmtd.NOTICE]: Configuration saved to database initial")
            elif pick == 1:
                emit(sw, t, f"ntpd[{ntpd}]", f"synchronized to 10.0.0.{rng.randint(1, 4)}, "
                                              f"stratum {rng.randint(2, 3)}")
            elif pick == 2:
                emit(sw, t, f"cli[{rng.randint(10000, 60000)}]",
                     "[cli.NOTICE]: user admin: Executing command: show interfaces ib status")
            else:
                session = rng.randint(10000, 60000)
                peer = f"10.0.{rng.randint(0, 3)}.{rng.randint(2, 250)}"
                emit(sw, t, f"sshd[{session}]", f"Accepted publickey for admin from {peer} "
                                                f"port {rng.randint(32768, 60999)} ssh2")
                emit(sw, t + 0.08, f"sshd[{session}]",
                     "pam_unix(sshd:session): session opened for user admin by (uid=0)")
                if pick == 5:
                    emit(sw, t + rng.uniform(5, 600), f"sshd[{session}]",
                         "pam_unix(sshd:session): session closed for user admin")
    lines.sort()
    return "".join(line + "\n" for _, _, line in lines)


# --------------------------------------------------------------------------- counters


def _items(values: dict[str, int]) -> str:
    return " ".join(f"[{name} == {values[name]}]" for name, _ in _COUNTERS if name in values)


def _ibqueryerrors(fab: _Fabric, plan: _Plan, t: float, node_order: list[_NodeKey]) -> str:
    """ibqueryerrors' default report (cf. demo_data and tests/fixtures/ibqueryerrors): switch
    blocks `Errors for 0x<guid> "<desc>"` with the `port ALL` aggregate, CA blocks `Errors for
    "<desc>"` keyed by the port GUID, GUIDs unpadded (%PRIx64), then the summary."""
    by_node: dict[_NodeKey, list[tuple[int, dict[str, int]]]] = {}
    for key in sorted(plan.ports):
        kind, idx, port = key
        values = _counter_values(plan.ports[key], t, plan.resets.get((kind, idx), []))
        if values:
            by_node.setdefault((kind, idx), []).append((port, values))
    out: list[str] = []
    bad_ports = 0
    for node in node_order:
        rows = by_node.get(node)
        if not rows:
            continue
        kind, idx = node
        bad_ports += len(rows)
        if kind == "S":
            s = fab.switches[idx]
            out.append(f'Errors for 0x{s.guid:x} "{s.desc}"')
            total: dict[str, int] = {}
            for _, values in rows:
                for name, v in values.items():
                    total[name] = total.get(name, 0) + v
            widths = dict(_COUNTERS)
            total = {n: min(v, widths[n]) for n, v in total.items()}
            out.append(f"   GUID 0x{s.guid:x} port ALL: {_items(total)}")
            out += [f"   GUID 0x{s.guid:x} port {port}: {_items(values)}" for port, values in rows]
        else:
            h = fab.hcas[idx]
            out.append(f'Errors for "{fab.hosts[h.host]} {h.device}"')
            out += [f"   GUID 0x{h.guid + 1:x} port 1: {_items(values)}" for _, values in rows]
    nodes = len(fab.switches) + len(fab.hcas)
    ports = 2 * len(fab.links)
    out += ["", f"## Summary: {nodes} nodes checked, {len(by_node)} bad nodes found",
            f"##          {ports} ports checked, {bad_ports} ports have errors beyond threshold",
            "## Thresholds: ", "## Suppressed:"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- NCCL releases

# Facts below were read in the NVIDIA/nccl sources at the release tags named (`git show
# <tag>:<file>`); a version between two tags takes the rule of the older one.
# First line of the WARN() of a failed completion and of an async port event, per tag
# (`git grep -n 'Got completion\|Got async\|Got non-fatal async' <tag> -- 'src/transport/
# net_ib*'`): src/transport/net_ib.cc, from v2.29.2-1 net_ib/p2p.cc and net_ib/common.cc.
_NCCL_LINES: dict[tuple[int, int, int], tuple[int, int]] = {
    (2, 8, 3): (839, 74), (2, 8, 4): (839, 74), (2, 9, 6): (843, 74), (2, 9, 8): (846, 74),
    (2, 9, 9): (846, 74), (2, 10, 3): (881, 74), (2, 11, 4): (883, 74), (2, 12, 7): (1190, 94),
    (2, 12, 10): (1198, 94), (2, 12, 12): (1198, 94), (2, 13, 4): (1238, 94),
    (2, 14, 3): (1237, 93), (2, 15, 1): (1237, 93), (2, 15, 5): (1237, 93),
    (2, 16, 2): (1243, 95), (2, 16, 5): (1252, 95), (2, 17, 1): (1261, 95),
    (2, 18, 1): (1294, 95), (2, 18, 3): (1295, 95), (2, 18, 5): (1295, 95),
    (2, 18, 6): (1295, 95), (2, 19, 1): (1333, 95), (2, 19, 3): (1333, 95),
    (2, 19, 4): (1333, 95), (2, 20, 3): (1696, 100), (2, 20, 5): (1696, 100),
    (2, 21, 5): (1909, 101), (2, 22, 3): (1984, 103), (2, 23, 4): (2121, 171),
    (2, 24, 3): (2244, 173), (2, 25, 1): (2244, 173), (2, 26, 2): (2358, 179),
    (2, 26, 3): (2359, 179), (2, 26, 5): (2359, 179), (2, 26, 6): (2359, 179),
    (2, 27, 3): (2449, 199), (2, 27, 5): (2451, 199), (2, 27, 6): (2458, 199),
    (2, 27, 7): (2458, 199), (2, 28, 3): (2470, 212), (2, 28, 7): (2543, 253),
    (2, 28, 9): (2543, 253), (2, 29, 2): (550, 88), (2, 29, 3): (550, 88),
    (2, 29, 7): (651, 134), (2, 30, 3): (648, 159), (2, 30, 4): (648, 159),
    (2, 30, 7): (688, 179),
}
# v2.30.3-1 src/transport/net_ib/p2p.cc:783 (v2.30.7-1 :854 without the function name): a
# `Got CQE with error` WARN comes just before the completion details.
_CQE_LINES = {(2, 30, 3): 783, (2, 30, 4): 783, (2, 30, 7): 854}
_WC_STATUS = {12: "IBV_WC_RETRY_EXC_ERR", 5: "IBV_WC_WR_FLUSH_ERR"}  # ibvWcStatusStr
_WC_OPCODE = {0: "IBV_WC_SEND", 1: "IBV_WC_RDMA_WRITE"}  # ibvWcOpcodeStr (v2.28.7-1)
_LAUNCHERS = ("none", "srun", "torchrun", "ts", "cri")


def _known_tag(v: tuple[int, int, int]) -> tuple[int, int, int]:
    return max((k for k in _NCCL_LINES if k <= v), default=min(_NCCL_LINES))


def _cuda_for(v: tuple[int, int, int]) -> str:
    # The CUDA of the common builds of each release (pip wheels, NGC containers): cosmetic.
    minor = v[1]
    for upto, cuda in ((15, "11.8"), (18, "12.1"), (19, "12.3"), (22, "12.4"), (25, "12.6"),
                       (26, "12.8"), (28, "12.9")):
        if minor <= upto:
            return cuda
    return "13.0"


def _completion_msg(v: tuple[int, int, int], peer: str, status: int, opcode: int,
                    req_size: int, vendor: int, req: str, hca: str) -> str:
    """A failed work completion on IB (no RoCE GIDs) as each release words it."""
    if v < (2, 10, 0):  # v2.8.3-1 .. v2.9.9-1: no peer
        return (f"NET/IB : Got completion with error {status}, opcode {opcode}, len 0, "
                f"vendor err {vendor}")
    if v < (2, 20, 0):  # v2.10.3-1: the peer; v2.18.1-1: the request type " (%s)"
        tail = f" ({req})" if v >= (2, 18, 0) else ""
        return (f"NET/IB : Got completion from peer {peer} with error {status}, opcode {opcode}, "
                f"len 0, vendor err {vendor}{tail}")
    if v < (2, 22, 0):  # v2.20.3-1 .. v2.21.5-1
        return (f"NET/IB : Got completion from peer {peer} with status={status} opcode={opcode} "
                f"len=0 vendor err {vendor} ({req})")
    if v < (2, 28, 7):  # v2.22.3-1 .. v2.28.3-1: `NET/IB:` and the HCA
        return (f"NET/IB: Got completion from peer {peer} with status={status} opcode={opcode} "
                f"len=0 vendor err {vendor} ({req}) hca {hca}")
    named = (f"NET/IB: Got completion from peer {peer} with status={_WC_STATUS[status]}"
             f"({status}) opcode={_WC_OPCODE[opcode]}({opcode}) ")
    if v < (2, 29, 0):  # v2.28.7-1, v2.28.9-1
        return f"{named}reqSize={req_size} vendor_err={vendor} req_type={req} hca {hca}"
    # v2.29.2-1 on (net_ib/p2p.cc): no size or type; the four empty GID fields leave 2 spaces.
    return f"{named}vendor_err={vendor}  hca {hca}"


def _async_msg(v: tuple[int, int, int], hca: str) -> str:
    """An IBV_EVENT_PORT_ERR (10, "port error") from NCCL's async thread."""
    if v < (2, 20, 0):  # up to v2.19.4-1: no device
        return "NET/IB : Got async event : port error"
    if v < (2, 23, 0):  # v2.20.3-1 .. v2.22.3-1
        return f"NET/IB : {hca}:1 Got async event : port error"
    if v < (2, 28, 7):  # v2.23.4-1 .. v2.28.3-1
        return f"NET/IB : {hca}:1 Got async error event: port error"
    return f"NET/IB : {hca}:1 Got non-fatal async event: port error(10)"  # v2.28.7-1 on


# --------------------------------------------------------------------------- job logs


@dataclass(slots=True)
class _Style:
    """How one job's log is written: its NCCL release and settings, its launcher."""

    version: str
    v: tuple[int, int, int]
    ib_timeout: int
    timeout_set: bool
    death_s: float
    info: bool  # NCCL_DEBUG=INFO (else WARN)
    stamps: bool  # NCCL WARN lines carry `[%F %T] ` (>= 2.26 unless turned off)
    channels: bool  # INFO logs carry every GPU's Using and Channel lines
    launcher: str
    rng: random.Random  # this job's own stream for the formatting extras

    @property
    def debug(self) -> str:
        return "INFO" if self.info else "WARN"


class _LogJob(Protocol):
    """What a job's log needs of the job (`jobs._Job`): named here so formats sits below jobs."""

    hosts: list[int]
    start: float
    style: _Style


class _Line(NamedTuple):
    """One line of a job's merged output and who wrote it, for the launcher prefixes."""

    t: float  # when it was written (seconds into the window)
    host: int | None  # the node (srun task) it came from; None: not a task (the epilog)
    dev: int | None  # the worker (local rank = GPU) it came from; None: the launcher itself
    err: bool  # stderr (PyTorch, torchelastic) rather than stdout (NCCL)
    text: str


def _glog(dt: datetime, level: str, rng: random.Random) -> str:
    # PyTorch's glog prefix: level letter, MMDD, time with nanoseconds, no year or zone.
    return f"{level}{dt:%m%d %H:%M:%S}.{dt.microsecond:06d}{rng.randint(0, 999):03d}"


def _nccl_ts(dt: datetime) -> str:
    return f"[{dt:%Y-%m-%d %H:%M:%S}]"


class _JobLogs:
    """Lines a failed job's merged stdout/stderr would hold, in the wording of the job's NCCL
    release (see `_completion_msg`; NCCL >= 2.26 stamps WARN lines only, `[%F %T]`, here UTC;
    INFO lines have no time). Shapes from reference/jobs/nccl-samples.txt and README.md:
    completion errors, PyTorch ProcessGroupNCCL glog lines, torchelastic's failure line and
    ChildFailedError block. Every draw from the shared stream happens whatever the job's style,
    so a style changes no other job; the style's extras come from the job's own stream."""

    def __init__(self, fab: _Fabric, clock: _Clock, rng: random.Random) -> None:
        self.fab, self.clock, self.rng = fab, clock, rng
        self.pids: dict[int, int] = {}  # host -> pid of its GPU 0 process, current job

    def _proc(self) -> tuple[int, int]:
        pid = self.rng.randint(20000, 400000)
        return pid, pid + self.rng.randint(20, 400)

    def _who(self, job: _LogJob, h: int, dev: int, pid: int, tid: int) -> str:
        if job.style.channels:  # one process per GPU, numbered from the host's first
            pid, tid = self.pids[h] + dev, self.pids[h] + dev + (tid - pid)
        return f"{self.fab.hosts[h]}:{pid}:{tid} [{dev}]"

    def _warn(self, job: _LogJob, t: float, who: str, where: str, msg: str) -> str:
        stamp = f"{_nccl_ts(self.clock.at(t))} " if job.style.stamps else ""
        return f"{stamp}{who} {where} NCCL WARN {msg}"

    def header(self, job: _LogJob) -> list[_Line]:
        """NCCL's start-up lines. Rank 0 prints `NCCL version` at WARN too: bare through
        printf up to v2.21.5-1 (init.cc showVersion), at VERSION level (bare) under WARN and
        as an INFO line under INFO from v2.22.3-1. At INFO each process prints the `NET/IB :
        Using` list, its `Channel` lines and the parameters set by environment (src/misc/
        param.cc, `%s set by environment to %lld.`): every GPU's process with `channels`,
        else only GPU 0's of each node."""
        fab, st = self.fab, job.style
        rails = fab.sc.hcas_per_host
        ro = " [RO]" if st.v >= (2, 12, 0) else " "  # relaxed ordering, v2.12.7-1 on
        devs = " ".join(f"[{r}]mlx5_{r}:1/IB" for r in range(rails)) + ro
        banner = f"NCCL version {st.version}+cuda{_cuda_for(st.v)}"
        out: list[_Line] = []
        n_hosts = len(job.hosts)
        began = job.start + st.rng.uniform(12.0, 40.0)  # python, torch and NCCL start up
        for n, h in enumerate(job.hosts):
            pid, _ = self._proc()
            self.pids[h] = pid
            host = fab.hosts[h]
            t = began + st.rng.uniform(0.0, 0.5)
            if n == 0 and (not st.info or st.v < (2, 22, 0)):
                out.append(_Line(t, h, 0, False, banner))
            if not st.info:
                continue
            for dev in range(GPUS_PER_NODE) if st.channels else (0,):
                p = pid + dev
                who = f"{host}:{p}:{p} [{dev}] NCCL INFO"
                if n == 0 and dev == 0 and st.v >= (2, 22, 0):
                    out.append(_Line(t, h, dev, False, f"{who} {banner}"))
                out.append(_Line(t, h, dev, False,
                                 f"{who} NET/IB : Using {devs}; OOB ib0:{fab.ips[h]}<0>"))
                if st.channels:
                    out += [_Line(t + 1.0, h, dev, False, f"{who} {text}")
                            for text in self._channels(st, n, n_hosts, dev)]
                if st.timeout_set:
                    out.append(_Line(t + 1.5, h, dev, False, f"{who} NCCL_IB_TIMEOUT set by "
                                                            f"environment to {st.ib_timeout}."))
        return out

    def _channels(self, st: _Style, n: int, n_hosts: int, dev: int) -> list[str]:
        """The network hops of GPU `dev` of the n-th node: a ring over the nodes on each GPU,
        two channels per GPU, through NIC `dev mod rails` (rail-optimised), as src/transport/
        net.cc prints them: `Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s`
        (nvmlDev from v2.18.3-1, the bus id `%lx` before; no `/connIndex` before v2.12.7-1)."""
        rails = self.fab.sc.hcas_per_host
        me = n * GPUS_PER_NODE + dev
        nxt = (n + 1) % n_hosts * GPUS_PER_NODE + dev
        prv = (n - 1) % n_hosts * GPUS_PER_NODE + dev
        gpu = str(dev) if st.v >= (2, 18, 3) else f"{_PCI_BUSES[dev]}000"
        out = []
        for c in (dev, dev + GPUS_PER_NODE):
            ch = f"Channel {c:02d}/0" if st.v >= (2, 12, 0) else f"Channel {c:02d}"
            via = f"via NET/IB/{dev % rails}/GDRDMA"
            out.append(f"{ch} : {prv}[{gpu}] -> {me}[{gpu}] [receive] {via}")
            out.append(f"{ch} : {me}[{gpu}] -> {nxt}[{gpu}] [send] {via}")
        return out

    def elastic(self, host: int, rank: int, t: float, exitcode: int,
                signal: bool) -> list[_Line]:
        pid, _ = self._proc()
        at = self.clock.at(t)
        fqdn = f"{self.fab.hosts[host]}.{self.fab.sc.domain}"
        trace = (f"Signal 6 (SIGABRT) received by PID {pid}" if signal
                 else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
        texts = [
            f"{_glog(at, 'E', self.rng)[:-3]} {self.rng.randint(10**14, 10**15)} "
            "torch/distributed/elastic/multiprocessing/api.py:874] failed "
            f"(exitcode: {exitcode}) local_rank: {rank % GPUS_PER_NODE} (pid: {pid}) of binary: "
            "/usr/bin/python3",
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            "train.py FAILED",
            "------------------------------------------------------------",
            "Failures:",
            "  <NO_OTHER_FAILURES>",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            f"  time      : {at:%Y-%m-%d_%H:%M:%S}",
            f"  host      : {fqdn}",
            f"  rank      : {rank} (local_rank: {rank % GPUS_PER_NODE})",
            f"  exitcode  : {exitcode} (pid: {pid})",
            "  error_file: <N/A>",
            f"  traceback : {trace}",
            "============================================================",
        ]
        return [_Line(t, host, None, True, text) for text in texts]

    def oom(self, h: int, dev: int, rank: int, t: float) -> list[_Line]:
        """A CUDA out-of-memory in one rank: PyTorch's traceback on the worker's stderr."""
        rng = self.rng
        need, cap = rng.choice((1.5, 2.0, 3.5, 8.0)), 79.19
        texts = [
            f"[rank{rank}]: Traceback (most recent call last):",
            f'[rank{rank}]:   File "/workspace/train.py", line {rng.randint(200, 900)}, in '
            "<module>",
            f"[rank{rank}]:     loss.backward()",
            f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            f"{need:.2f} GiB. GPU {dev} has a total capacity of {cap:.2f} GiB of which "
            f"{rng.uniform(0.2, 1.4):.2f} GiB is free. Including non-PyTorch memory, this "
            f"process has {cap - 1.2:.2f} GiB memory in use. Of the allocated memory "
            f"{cap - 4.5:.2f} GiB is allocated by PyTorch, and 2.61 GiB is reserved by PyTorch "
            "but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        ]
        return [_Line(t, h, dev, True, text) for text in texts]

    def xid(self, h: int, dev: int, rank: int, t: float, xid: int) -> list[_Line]:
        """An Xid that kills the GPU: the node's kernel line, then the rank's CUDA error."""
        rng = self.rng
        at = self.clock.at(t)
        bus = _PCI_BUSES[dev]
        who = "pid='<unknown>', name=<unknown>" if xid == 79 else \
            f"pid={rng.randint(20000, 400000)}, name=python3"
        # The site's epilog appends the node's kernel lines (pdsh style, `dmesg -T`).
        return [
            _Line(t, None, None, False,
                  f"{self.fab.hosts[h]}: [{_ctime(at)}] NVRM: Xid (PCI:0000:{bus}:00): {xid}, "
                  f"{who}, {_XIDS[xid]}"),
            _Line(t, h, dev, True,
                  f"[rank{rank}]: RuntimeError: CUDA error: unspecified launch failure"),
            _Line(t, h, dev, True,
                  f"[rank{rank}]: CUDA kernel errors might be asynchronously reported at some "
                  "other API call, so the stacktrace below might be incorrect."),
        ]

    def network(self, job: _LogJob, pairs: list[tuple[int, int, int, float]],
                async_hosts: list[tuple[int, int, float]]
                ) -> tuple[list[_Line], dict[int, int]]:
        """pairs: (host, peer host, rail, time) for each reporting side. Returns the lines and
        the [cudaDev] each reporting host printed."""
        fab, rng, st = self.fab, self.rng, job.style
        v = st.v
        rails = fab.sc.hcas_per_host
        tag = _known_tag(v)
        complete_line, async_line = _NCCL_LINES[tag]
        new_files = v >= (2, 29, 0)
        complete_at = f"transport/net_ib{'/p2p' if new_files else ''}.cc:{complete_line}"
        async_at = f"transport/net_ib{'/common' if new_files else ''}.cc:{async_line}"
        code = 6 if v >= (2, 13, 0) else 2  # ncclRemoteError from v2.13.4-1, ncclSystemError
        blocks: list[tuple[float, list[_Line]]] = []
        devs: dict[int, int] = {}
        for h, rail, t in async_hosts:
            pid, tid = self._proc()
            rng.randint(100, 160)  # was the line number; kept so the stream does not move
            dev = rail  # the first GPU on that rail
            who = self._who(job, h, dev, pid, tid)
            text = self._warn(job, t, who, async_at, _async_msg(v, f"mlx5_{rail}"))
            blocks.append((t, [_Line(t, h, dev, False, ""), _Line(t, h, dev, False, text)]))
        for h, peer, rail, t in pairs:
            pid, tid = self._proc()
            on_rail = [d for d in range(GPUS_PER_NODE) if d % rails == rail]
            dev = devs[h] = on_rail[rng.randrange(len(on_rail))]
            who = self._who(job, h, dev, pid, tid)
            port = rng.randint(32768, 60999)
            send = rng.random() < 0.5
            opcode = 0 if send else 1
            req = "Send" if send else "Recv"
            req_size = rng.choice((131072, 262144, 524288))
            rng.randint(2200, 2400)  # was the line number; kept so the stream does not move
            hca = f"mlx5_{rail}"
            peer_at = f"{fab.ips[peer]}<{port}>"
            err = _completion_msg(v, peer_at, 12, opcode, req_size, 129, req, hca)
            flush = _completion_msg(v, peer_at, 5, opcode, 0, 249, req, hca)
            lines: list[_Line] = []
            for msg, fallout in ((err, st.info), (flush, False)):
                # Each WARN starts with a newline (src/debug.cc), so a blank line comes first.
                if v >= (2, 30, 3):
                    lines += [_Line(t, h, dev, False, ""),
                              _Line(t, h, dev, False, self._cqe(job, t, who, send))]
                lines += [_Line(t, h, dev, False, ""),
                          _Line(t, h, dev, False, self._warn(job, t, who, complete_at, msg))]
                if fallout:
                    lines += [_Line(t, h, dev, False, f"{who} NCCL INFO {text}") for text in (
                        f"transport/net.cc:1302 -> {code}", f"proxy.cc:698 -> {code}",
                        f"proxy.cc:878 -> {code} [Progress Thread]")]
            blocks.append((t, lines))
            rank = job.hosts.index(h) * GPUS_PER_NODE + dev
            wt_s = t + rng.uniform(0.5, 3.0)
            wt = self.clock.at(wt_s)
            wt2 = wt + timedelta(microseconds=rng.randint(2, 900))
            pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
            seq = rng.randint(1000, 90000)
            if code == 6:
                what = "remote process exited or there was a network error"
                detail = ("ncclRemoteError: A call failed possibly due to a network error or a "
                          "remote process exiting prematurely.")
            else:  # PyTorch built against NCCL < 2.13 (no ncclRemoteError)
                what = "unhandled system error (run with NCCL_DEBUG=INFO for details)"
                detail = ("ncclSystemError: System call (e.g. socket, malloc) or external "
                          "library call failed or device error. It can be also caused by "
                          "unexpected exit of a remote peer.")
            texts = [
                f"[rank{rank}]:[{_glog(wt, 'E', rng)} ProcessGroupNCCL.cpp:1785] {pg} Exception "
                f"(either an error or timeout) detected by watchdog at work: {seq}, last "
                f"enqueued NCCL work: {seq + 2}, last completed NCCL work: {seq - 1}.",
                f"[rank{rank}]:[{_glog(wt2, 'E', rng)} ProcessGroupNCCL.cpp:1895] {pg} Process "
                f"group watchdog thread terminated with exception: NCCL error: {what}, NCCL "
                f"version {st.version}",
                f"[rank{rank}]: {detail}",
                f"[rank{rank}]: Last error:",
                f"[rank{rank}]: {err}",
            ]
            blocks.append((t + 3.0, [_Line(wt_s, h, dev, True, text) for text in texts]))
        blocks.sort(key=lambda b: b[0])
        return [line for _, block in blocks for line in block], devs

    def _cqe(self, job: _LogJob, t: float, who: str, send: bool) -> str:
        # v2.30.3-1 src/transport/net_ib/p2p.cc:783 ncclIbTest (v2.30.7-1 :854, no function).
        st = job.style
        line = _CQE_LINES[max((k for k in _CQE_LINES if k <= st.v), default=(2, 30, 3))]
        fn = "ncclIbTest: " if st.v < (2, 30, 7) else ""
        req, comm = (0x7F0000000000 + st.rng.randrange(1 << 36) * 16 for _ in range(2))
        msg = (f"NET/IB: {fn}Got CQE with error (devIndex=0, req={req:#x}, comm={comm:#x} "
               f"({'send' if send else 'recv'}), wr_id={st.rng.randrange(1 << 16)}, "
               f"qp_num={st.rng.randrange(1 << 12, 1 << 20)})")
        where = f"transport/net_ib/p2p.cc:{line}"
        return self._warn(job, t, who, where, msg)

    def render(self, job: _LogJob, lines: list[_Line]) -> str:
        """The log as the job's launcher leaves it: srun --label puts the task (one per node,
        `%*d: ` padded to the widest, SchedMD/slurm src/common/write_labelled_message.c
        _build_label, src/api/step_io.c _wid) before every line of the task; torchrun --tee
        `[default<local rank>]:` before its workers' lines; moreutils ts `%b %d %H:%M:%S `
        and a CRI runtime `<RFC 3339 nano> stdout|stderr F ` before every line."""
        st = job.style
        if st.launcher == "none":
            return "\n".join(line.text for line in lines) + "\n"
        task = {h: n for n, h in enumerate(job.hosts)}
        width = len(str(len(job.hosts) - 1))
        out: list[str] = []
        last_ns = 0
        for line in lines:
            text = line.text
            if st.launcher == "srun" and line.host is not None:
                text = f"{task[line.host]:>{width}}: {text}"
            elif st.launcher == "torchrun" and line.dev is not None:
                text = f"[default{line.dev}]:{text}"
            elif st.launcher in ("ts", "cri"):
                # Stamped as the lines arrive: never earlier than the line before.
                ns = max(last_ns + st.rng.randrange(2000, 40000),
                         round(line.t * 1e6) * 1000 + st.rng.randrange(1000))
                last_ns = ns
                at = self.clock.at(ns // 1000 / 1e6)
                if st.launcher == "ts":
                    text = f"{at:%b %d %H:%M:%S} {text}"
                else:  # Go's time.RFC3339Nano drops trailing zeros of the fraction
                    frac = f"{at.microsecond:06d}{ns % 1000:03d}".rstrip("0")
                    stamp = f"{at:%Y-%m-%dT%H:%M:%S}{'.' + frac if frac else ''}Z"
                    text = f"{stamp} {'stderr' if line.err else 'stdout'} F {text}"
            out.append(text)
        return "\n".join(out) + "\n"
