"""Seeded synthetic scenarios: a fat-tree fabric, a window of faults, and the files they leave.

For tests, the demo and the ranking benchmark; `auditor simulate` (and `auditor demo`) import
it when run, no other command does.

    truth = generate(tmp_path, seed=7, spines=4, leaves=8, hosts_per_leaf=4)

writes, in the formats the auditor's parsers read (provenance next to each writer):

    topology/ibnetdiscover.txt           default ibnetdiscover form, taken before any fault
    logs/switches.log                    Onyx port events through rsyslog's RFC 3339 file format,
                                         plus sshd/ntpd/cli/config noise (none from the
                                         `lost_switch_logs` switches)
    counters/ibqueryerrors-HHMM.txt      cumulative counter snapshots every `snapshot_every_h`
                                         (`ibqueryerrors-YYYYMMDD-HHMM.txt` when days > 1)
    jobs/sacct.txt                       `sacct -P -X` with AllocTRES, hostlist-compressed nodes
                                         (`sacct -P` with step lines when `sacct_steps`)
    jobs/logs/<jobid>.log                NCCL / PyTorch / torchelastic / CUDA lines of every
                                         FAILED job (`<jobid>` as sacct prints it)
    hosts                                /etc/hosts form: the IPoIB (ib0) address of each host
    maintenance.csv                      target,start,end,reason of the re-imaged hosts
    truth.json                           `GroundTruth.to_json()`: everything that was injected

Fabric: `leaves` leaves each with one uplink to every spine (leaf ports 1..H hosts, H+s spine s;
spine port l is leaf l). With `hcas_per_host` R > 1 (the rails, at most one per GPU) the layout
is rail-optimised: leaves form groups of R (a scalable unit, SU), leaf k of an SU takes mlx5_k
of each of the SU's H hosts, so hosts = leaves / R * H; GPU d of a host uses rail d mod R.
GUIDs, OUIs and LIDs are drawn from the seed; names follow the prefixes.

Fault model (counts left at None scale with the fabric; every fault sits on its own link(s)):

- frequent_flaps: a bad cable with 4-9 flaps of 2-40 s.
- rare_long_flaps: a bad cable with 1-2 flaps of 60-600 s.
- symbol_errors: SymbolErrorCounter rising (accelerating) from an onset, with 0-2 short flaps;
  on both ends (cause "cable") or on one end only (cause "transceiver").
- switch_reboot: every port of one switch goes down within 2 s and comes back 2-4 min later; the
  switch's counters restart from 0.
- maintenance: a re-imaged host (a declared window in maintenance.csv) reboots 3-6 times; every
  HCA link of it flaps and its HCA counters restart from 0 at each boot; jobs avoid it (drained).
- reseat: one flap shorter than 5 s on an otherwise healthy link (harmless).
- Background that is not a fault: constant old LinkDownedCounter / SymbolErrorCounter values and
  slowly rising PortXmitDiscards (congestion) on a few healthy ports.

Logging: both switch ends of a leaf-spine link log each flap; a host link is logged by its leaf
only. Each switch clock is off by up to `max_clock_skew_s`; lines are in arrival order, so their
stamps are not strictly sorted. LinkDownedCounter is 8-bit (sticks at 255), the error counters
16-bit. `lost_switch_logs` switches never reached the collector: none of their lines is in the
log (the counters still count). They are leaves of bad cables whose flaps killed jobs where
there are such (host cables first: nothing else logs those), then other leaves.

Jobs (10 min - 6 h, 2-64 nodes, about 80 % of the node-hours unless `jobs_per_day` is set; nodes
picked as a run of free neighbours or at random): a job's footprint is its hosts' HCA links plus
the leaf-spine links its NCCL ring crosses (one ring per rail over the hosts in job order; traffic
to a host goes down through spine `host index mod spines`, as D-mod-K fat-tree routing does).
Each job draws an NCCL release from `nccl_versions` and an NCCL_IB_TIMEOUT from `ib_timeouts`
(None: the release's default, 14 up to 2.13, 18 up to 2.22, 20 after; a number: set by
environment). Its death time is 4.096 us x 2^timeout x (NCCL_IB_RETRY_CNT 7 + 1): 8.59 s at 18,
34.4 s at 20. A footprint link down for longer than that fails the job that long (plus 0-2 s)
after the flap (after the job's start if the link was already down): completion errors from the
two hosts of a connection that crossed it, each naming the other's IPoIB address and printed by
a GPU on that rail, a port-error async event on hosts whose own port went down, PyTorch's
watchdog and torchelastic. Shorter flaps are survived (`survived_long_flaps` counts the jobs
that outlived one over 7 s). Other jobs fail from a CUDA OOM or an Xid (no IB errors in their
logs) or are cancelled; jobs still going at the end are RUNNING.

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

Everything derives from the seed and the window start: same arguments, same bytes. Formatting
options draw from streams of their own: a job's fate does not depend on `info_share`,
`nccl_stamps`, `channel_lines`, `launcher_prefixes`, `sacct_steps` or `lost_switch_logs`.
"""

from __future__ import annotations

import json
import math
import random
import re
from bisect import bisect_left, bisect_right, insort
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, Unpack

from auditor.parse.hostlist import compress_hostlist

__all__ = [
    "DEFAULT_START",
    "REALISTIC",
    "BadCable",
    "End",
    "FlapRecord",
    "GroundTruth",
    "Interval",
    "Maintenance",
    "NetworkFailedJob",
    "OtherJob",
    "Reporter",
    "Scenario",
    "ScenarioOptions",
    "Snapshot",
    "SwitchReboot",
    "generate",
    "ib_timeout_default",
    "nccl_death_s",
    "write_scenario",
]

DEFAULT_START = datetime(2026, 11, 29, tzinfo=UTC)
GPUS_PER_NODE = 8
CPUS_PER_NODE = 112
MEM_GB_PER_NODE = 1800
MAX_SWITCH_PORTS = 254

# model -> (PCI device id, ibnetdiscover NumPorts incl. port 0, link speed, HCA device id)
_MODELS: dict[str, tuple[int, int, str, int]] = {
    "MQM8700": (0xD2F0, 41, "HDR", 0x101B),  # Quantum HDR, ConnectX-6
    "MQM9700": (0xD2F2, 65, "NDR", 0x1021),  # Quantum-2 NDR, ConnectX-7
}
# NVIDIA/Mellanox OUIs seen in real GUIDs; some start with 0 so unpadded printing is exercised.
_SWITCH_OUIS = (0xB8599F, 0x98039B, 0x1070FD, 0x9C0591, 0xFC6A1C, 0xE8EBD3)
_HCA_OUIS = (0x0C42A1, 0x043F72, 0x946DAE, 0x506B4B, 0xB83FD2, 0x58A2E1)
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,30}")

# ibqueryerrors prints counters in this order; widths per IBTA PortCounters.
_COUNTERS: tuple[tuple[str, int], ...] = (
    ("SymbolErrorCounter", 0xFFFF),
    ("LinkErrorRecoveryCounter", 0xFF),
    ("LinkDownedCounter", 0xFF),
    ("PortRcvErrors", 0xFFFF),
    ("PortXmitDiscards", 0xFFFF),
)

FAULT_FREQUENT = "frequent_flaps"
FAULT_RARE = "rare_long_flaps"
FAULT_SYMBOL = "symbol_errors"
CAUSE_REBOOT = "switch_reboot"
CAUSE_MAINTENANCE = "maintenance"
CAUSE_RESEAT = "reseat"

_JOB_NAMES = ("llm-pretrain", "moe-sft", "vlm-train", "rlhf-ppo", "dpo-align", "asr-finetune",
              "diffusion-xl", "eval-harness", "nccl-tests", "embed-distill")
_JOB_SIZES = (2, 4, 8, 16, 32, 64)
_JOB_SIZE_WEIGHTS = (25, 25, 20, 15, 10, 5)
_XIDS: dict[int, str] = {
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
        "partition 6, subpartition 0.",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    95: "Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No",
    119: "Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 "
         "(GSP_RM_CONTROL) (0x20802a02 0x8).",
}
_JOB_MIN_S, _JOB_MAX_S = 600.0, 6 * 3600.0  # job lengths are log-uniform in between
_PCI_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


class ScenarioOptions(TypedDict, total=False):
    """`Scenario` fields other than the size and seed, for `generate(**options)`."""

    start: datetime
    hcas_per_host: int
    host_prefix: str
    leaf_prefix: str
    spine_prefix: str
    switch_model: str
    domain: str
    frequent_flappers: int | None
    rare_flappers: int | None
    symbol_error_cables: int | None
    switch_reboots: int
    reimaged_hosts: int | None
    reseat_flaps: int | None
    jobs_per_day: int | None
    non_network_failure_rate: float
    cancel_rate: float
    noise_per_switch_per_day: float
    snapshot_every_h: float
    max_clock_skew_s: float
    nccl_versions: tuple[str, ...]
    ib_timeouts: tuple[int | None, ...]
    info_share: float
    nccl_stamps: bool
    channel_lines: bool | None
    launcher_prefixes: bool
    sacct_steps: bool
    lost_switch_logs: int


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything that determines a scenario's files; see the module docstring."""

    seed: int
    spines: int
    leaves: int
    hosts_per_leaf: int
    days: float = 1.0
    start: datetime = DEFAULT_START
    hcas_per_host: int = 1
    host_prefix: str = "node"
    leaf_prefix: str = "leaf"
    spine_prefix: str = "spine"
    switch_model: str = "MQM8700"
    domain: str = "cluster.internal"  # torchelastic prints the agent's FQDN
    # Fault counts; None = scaled to the fabric (`fault_counts`).
    frequent_flappers: int | None = None
    rare_flappers: int | None = None
    symbol_error_cables: int | None = None
    switch_reboots: int = 1
    reimaged_hosts: int | None = None
    reseat_flaps: int | None = None
    jobs_per_day: int | None = None  # None: about 75 % utilisation
    non_network_failure_rate: float = 0.06  # share of jobs that die of OOM or an Xid
    cancel_rate: float = 0.03
    noise_per_switch_per_day: float = 24.0
    snapshot_every_h: float = 4.0
    max_clock_skew_s: float = 2.0
    # Job evidence (see "Job logs" in the module docstring). Each job draws its NCCL release and
    # NCCL_IB_TIMEOUT (None: the release's default, not printed; a number: set by environment,
    # printed at INFO); a link down longer than the job's death time kills it.
    nccl_versions: tuple[str, ...] = ("2.28.7",)
    ib_timeouts: tuple[int | None, ...] = (18,)
    info_share: float = 1.0  # share of jobs run with NCCL_DEBUG=INFO; the others with WARN
    nccl_stamps: bool = True  # False: NCCL_DEBUG_TIMESTAMP_LEVELS=none (no WARN stamps >= 2.26)
    channel_lines: bool | None = None  # per-GPU Using/Channel lines at INFO; None: NCCL < 2.22
    launcher_prefixes: bool = False  # one launcher style per job log: srun -l, torchrun, ts, CRI
    sacct_steps: bool = False  # sacct without -X: steps, a few array tasks and a het job
    lost_switch_logs: int = 0  # switches whose lines are missing from logs/switches.log

    def __post_init__(self) -> None:
        for name in ("spines", "leaves", "hosts_per_leaf", "hcas_per_host"):
            if getattr(self, name) < 1:
                raise ValueError(f"Scenario.{name} must be >= 1")
        if self.hcas_per_host > GPUS_PER_NODE:
            raise ValueError(f"hcas_per_host (rails) must be <= {GPUS_PER_NODE}, one per GPU")
        if self.leaves % self.hcas_per_host:
            raise ValueError("leaves must be a multiple of hcas_per_host (one leaf per rail)")
        if self.hosts < 2:
            raise ValueError("a scenario needs at least 2 hosts (jobs span 2+ nodes)")
        if self.hosts_per_leaf + self.spines > MAX_SWITCH_PORTS or self.leaves > MAX_SWITCH_PORTS:
            raise ValueError(f"switches have at most {MAX_SWITCH_PORTS} ports")
        if not 0.25 <= self.days <= 31:
            raise ValueError("days must be in [0.25, 31]")
        if self.start.tzinfo is None:
            raise ValueError("start must be timezone-aware")
        for name in ("host_prefix", "leaf_prefix", "spine_prefix"):
            if not _NAME_RE.fullmatch(getattr(self, name)):
                raise ValueError(f"Scenario.{name} must match {_NAME_RE.pattern}")
        if self.leaf_prefix == self.spine_prefix:
            raise ValueError("leaf_prefix and spine_prefix must differ")
        if self.switch_model not in _MODELS:
            raise ValueError(f"switch_model must be one of {sorted(_MODELS)}")
        for name in ("non_network_failure_rate", "cancel_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"Scenario.{name} must be in [0, 1]")
        # Lists from callers become tuples, so the scenario stays hashable and prints the same.
        object.__setattr__(self, "nccl_versions", tuple(self.nccl_versions))
        object.__setattr__(self, "ib_timeouts", tuple(self.ib_timeouts))
        if not self.nccl_versions or not self.ib_timeouts:
            raise ValueError("nccl_versions and ib_timeouts must not be empty")
        for version in self.nccl_versions:
            parse_nccl_version(version)
        for timeout in self.ib_timeouts:
            if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)
                                        or not 1 <= timeout <= 31):
                raise ValueError("ib_timeouts must be None or NCCL_IB_TIMEOUT values in 1..31")
        if not 0.0 <= self.info_share <= 1.0:
            raise ValueError("Scenario.info_share must be in [0, 1]")
        if not 0 <= self.lost_switch_logs <= self.spines + self.leaves:
            raise ValueError("lost_switch_logs must be between 0 and the number of switches")
        if self.snapshot_every_h < 0.25 or self.max_clock_skew_s < 0:
            raise ValueError("snapshot_every_h >= 0.25, max_clock_skew_s >= 0")
        if self.noise_per_switch_per_day < 0 or self.switch_reboots < 0:
            raise ValueError("rates and counts must be >= 0")
        if self.switch_reboots > self.spines + self.leaves:
            raise ValueError("more switch reboots than switches")
        counts = self.fault_counts()
        if min(counts.values()) < 0:
            raise ValueError("fault counts must be >= 0")
        cables = sum(counts[k] for k in (FAULT_FREQUENT, FAULT_RARE, FAULT_SYMBOL, CAUSE_RESEAT))
        if cables > (self.host_links + self.switch_links) // 2:
            raise ValueError("too many faulty cables for this fabric")
        if counts[CAUSE_MAINTENANCE] > max(1, self.hosts // 4):
            raise ValueError("too many re-imaged hosts for this fabric")

    @property
    def hosts(self) -> int:
        return self.leaves // self.hcas_per_host * self.hosts_per_leaf

    @property
    def host_links(self) -> int:
        return self.hosts * self.hcas_per_host

    @property
    def switch_links(self) -> int:
        return self.leaves * self.spines

    @property
    def end(self) -> datetime:
        return self.start.astimezone(UTC) + timedelta(days=self.days)

    def fault_counts(self) -> dict[str, int]:
        """Fault counts with the None ones scaled to the fabric (about one per 1,000 links)."""
        links = self.host_links + self.switch_links

        def pick(value: int | None, default: int) -> int:
            return default if value is None else value

        return {
            FAULT_FREQUENT: pick(self.frequent_flappers, max(1, links // 1000)),
            FAULT_RARE: pick(self.rare_flappers, max(1, links // 1500)),
            FAULT_SYMBOL: pick(self.symbol_error_cables, max(1, links // 1000)),
            CAUSE_REBOOT: self.switch_reboots,
            CAUSE_MAINTENANCE: pick(self.reimaged_hosts, max(1, self.hosts // 200)),
            CAUSE_RESEAT: pick(self.reseat_flaps, max(2, links // 500)),
        }

    def params(self) -> dict[str, Any]:
        out = asdict(self)
        out["start"] = _iso(self.start.astimezone(UTC))
        out["nccl_versions"] = list(self.nccl_versions)
        out["ib_timeouts"] = list(self.ib_timeouts)
        return out


# Job evidence as a large cluster writes it (the realistic kind of the ranking benchmark; needs
# `leaves` a multiple of 8): a mix of NCCL releases, most at their default NCCL_IB_TIMEOUT and
# some pinned to 22, 30 % of jobs at NCCL_DEBUG=WARN, no NCCL stamps (an old PyTorch wheel or
# NCCL_DEBUG_TIMESTAMP_LEVELS=none), launcher prefixes, sacct steps and one switch whose
# syslog never reached the collector.
REALISTIC: ScenarioOptions = {
    "hcas_per_host": 8,
    "nccl_versions": ("2.18.3", "2.19.4", "2.21.5", "2.23.4", "2.27.7", "2.29.2"),
    "ib_timeouts": (None, None, None, 22),
    "info_share": 0.7,
    "nccl_stamps": False,
    "channel_lines": True,
    "launcher_prefixes": True,
    "sacct_steps": True,
    "lost_switch_logs": 1,
}


# --------------------------------------------------------------------------- ground truth


@dataclass(frozen=True, slots=True)
class End:
    """One end of a link. Switch ends carry the Onyx label, HCA ends the device and port GUID."""

    kind: str  # "switch" or "hca"
    name: str  # switch name or host name
    guid: str  # node GUID, 0x + 16 hex digits
    port: int
    port_name: str | None = None  # IB1/<port>
    device: str | None = None  # mlx5_N
    port_guid: str | None = None


@dataclass(frozen=True, slots=True)
class Interval:
    down_at: datetime
    up_at: datetime
    duration_s: float


@dataclass(frozen=True, slots=True)
class FlapRecord:
    link: str
    ends: tuple[End, ...]
    down_at: datetime  # physical time (UTC); switch stamps add their clock skew
    up_at: datetime
    duration_s: float
    cause: str  # frequent_flaps, rare_long_flaps, symbol_errors, switch_reboot, maintenance, reseat
    logged_by: tuple[str, ...]  # switches whose log lines show it


@dataclass(frozen=True, slots=True)
class BadCable:
    link: str
    kind: str  # "host" (HCA - leaf) or "switch" (leaf - spine)
    fault: str  # frequent_flaps, rare_long_flaps, symbol_errors
    cause: str  # "cable", or "transceiver" when the symbol errors show on one end only
    ends: tuple[End, End]
    flaps: tuple[Interval, ...]
    symbol_error_ends: tuple[int, ...] = ()  # indices into `ends` whose symbol errors rise
    symbol_onset: datetime | None = None


@dataclass(frozen=True, slots=True)
class SwitchReboot:
    name: str
    guid: str
    tier: str  # "leaf" or "spine"
    at: datetime  # first port down
    up_at: datetime  # last port up
    links: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Maintenance:
    target: str  # host name, as in maintenance.csv
    start: datetime
    end: datetime
    reason: str
    links: tuple[str, ...]
    flaps: tuple[Interval, ...]  # per HCA link: each reboot flaps every rail of the host


@dataclass(frozen=True, slots=True)
class Reporter:
    """A host whose NCCL log names the other side of the break."""

    host: str
    hca: str
    peer_host: str
    peer_ip: str
    at: datetime
    cuda_dev: int  # the [cudaDev] of the NCCL line: a GPU on the HCA's rail
    rank: int  # global rank of that process (node index x 8 + cudaDev)


@dataclass(frozen=True, slots=True)
class NetworkFailedJob:
    job_id: str  # as sacct prints it (`123`, or `123_7` for an array task)
    nodes: tuple[str, ...]
    start: datetime
    error_at: datetime  # first NCCL completion error
    end: datetime
    culprit_link: str
    culprit_cause: str  # the fault (or event) of the culprit flap
    flap_down_at: datetime
    flap_up_at: datetime
    reporters: tuple[Reporter, ...]
    nccl_version: str  # the release the job ran (its log's wording and stamps follow it)
    ib_timeout: int  # NCCL_IB_TIMEOUT in effect
    ib_timeout_set: bool  # set by environment (printed at INFO), else the release's default
    death_s: float  # 4.096 us x 2^ib_timeout x (retry count 7 + 1): shorter flaps are survived
    rail: int  # the rail of the connection that broke; reporters name its HCA
    hca: str  # mlx5_<rail>
    nccl_debug: str  # "INFO" or "WARN"
    launcher: str  # prefix style of the log: none, srun, torchrun, ts, cri


@dataclass(frozen=True, slots=True)
class OtherJob:
    """A job that failed for a non-network reason (oom, xid) or was cancelled."""

    job_id: str
    nodes: tuple[str, ...]
    start: datetime
    end: datetime
    state: str
    kind: str  # "oom", "xid" or "cancelled"
    host: str | None = None  # where the GPU error happened
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    file: str  # relative to the scenario directory
    at: datetime


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """What `generate` injected; `to_json()` is written to truth.json (schema 1).

    Links are named `<host>/<mlx5_N>:1=<leaf>:<port>` (HCA end first) or
    `<leaf>:<port>=<spine>:<port>`; `ends` give both as name, node GUID, port (+ the Onyx label
    of a switch port, the device and port GUID of an HCA). Times are physical UTC; switch log
    stamps add `clock_skew_s`. `flaps` holds every injected flap, each fault record its own;
    `logged_by` leaves out the `lost_switch_logs`.
    """

    seed: int
    scenario: dict[str, Any]
    window_start: datetime
    window_end: datetime
    topology_at: datetime
    fabric: dict[str, int]  # switches, spines, leaves, hosts, hcas, links, host_links, ...
    clock_skew_s: dict[str, float]  # switch name -> its clock minus true time
    snapshots: tuple[Snapshot, ...]
    bad_cables: tuple[BadCable, ...]
    switch_reboots: tuple[SwitchReboot, ...]
    maintenance: tuple[Maintenance, ...]
    reseat_flaps: tuple[FlapRecord, ...]
    flaps: tuple[FlapRecord, ...]  # every injected flap, sorted by time
    jobs_total: int
    job_states: dict[str, int]
    network_failed_jobs: tuple[NetworkFailedJob, ...]
    non_network_failed_jobs: tuple[OtherJob, ...]
    cancelled_jobs: tuple[OtherJob, ...]
    # Jobs that outlived a flap on their footprint longer than 7 s but not longer than their
    # death time (a long NCCL_IB_TIMEOUT rides it out).
    survived_long_flaps: int = 0
    lost_switch_logs: tuple[str, ...] = ()  # switches with no line in logs/switches.log
    array_jobs: tuple[str, ...] = ()  # sacct JobIDs of array tasks (`123_7`), sacct_steps only
    het_jobs: tuple[str, ...] = ()  # het job ids (`123` of `123+0`, `123+1`), sacct_steps only
    schema: int = 1

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types: datetimes as ISO 8601 UTC with `Z`, tuples as lists."""
        data = asdict(self)
        return {"schema": data.pop("schema"), **_jsonable(data)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# --------------------------------------------------------------------------- fabric


@dataclass(frozen=True, slots=True)
class _Switch:
    name: str
    guid: int
    lid: int
    leaf: bool
    num_ports: int
    desc: str


@dataclass(frozen=True, slots=True)
class _Hca:
    host: int
    rail: int
    guid: int  # node GUID; port 1 GUID = node GUID + 1, as in ibsim and the demo capture
    lid: int

    @property
    def device(self) -> str:
        return f"mlx5_{self.rail}"


@dataclass(frozen=True, slots=True)
class _Link:
    leaf: int  # switch index of the leaf end
    leaf_port: int
    hca: int | None  # host link: the HCA (its port 1)
    spine: int | None  # leaf-spine link: the spine
    spine_port: int = 0


@dataclass(slots=True)
class _Fabric:
    sc: Scenario
    speed: str
    switches: list[_Switch]
    hcas: list[_Hca]
    hosts: list[str]
    ips: list[str]
    links: list[_Link]
    host_hcas: list[list[int]]
    host_su: list[int]
    switch_links: list[list[int]]  # switch index -> link indices
    hca_link: list[int]
    # switch index -> [(port, "S"|"H", peer index, peer port)], by port
    adjacency: list[list[tuple[int, str, int, int]]]
    uplink: dict[tuple[int, int], int]  # (leaf, spine) -> link index

    def spine_for(self, hca: int) -> int:
        """The spine that traffic to this HCA crosses. Fat-tree routing (D-mod-K) picks the
        down path by destination, spreading a leaf's hosts and consecutive leaves over the
        spines, so it is fixed per destination whatever the source."""
        return self.hcas[hca].host % self.sc.spines

    def ring_links(self, hosts: list[int]) -> dict[int, tuple[int, int, int]]:
        """Leaf-spine links an NCCL ring over `hosts` (in job order, one ring per rail)
        uses, each mapped to the first (host, peer host, rail) whose traffic crosses it."""
        out: dict[int, tuple[int, int, int]] = {}
        n = len(hosts)
        for i in range(n if n > 2 else 1):
            a, b = hosts[i], hosts[(i + 1) % n]
            if self.host_su[a] == self.host_su[b]:
                continue  # same leaf: the traffic never leaves it
            for rail in range(self.sc.hcas_per_host):
                ha, hb = self.host_hcas[a][rail], self.host_hcas[b][rail]
                la, lb = self.links[self.hca_link[ha]].leaf, self.links[self.hca_link[hb]].leaf
                sa, sb = self.spine_for(ha), self.spine_for(hb)
                # a -> b goes up la to sb and down to lb; b -> a up lb to sa, down to la.
                for leaf, spine in ((la, sb), (lb, sb), (lb, sa), (la, sa)):
                    out.setdefault(self.uplink[(leaf, spine)], (a, b, rail))
        return out

    def link_id(self, i: int) -> str:
        lk = self.links[i]
        leaf = f"{self.switches[lk.leaf].name}:{lk.leaf_port}"
        if lk.hca is not None:
            h = self.hcas[lk.hca]
            return f"{self.hosts[h.host]}/{h.device}:1={leaf}"
        assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
        return f"{leaf}={self.switches[lk.spine].name}:{lk.spine_port}"

    def switch_end(self, sw: int, port: int) -> End:
        s = self.switches[sw]
        return End("switch", s.name, _guid(s.guid), port, port_name=f"IB1/{port}")

    def ends(self, i: int) -> tuple[End, End]:
        lk = self.links[i]
        leaf = self.switch_end(lk.leaf, lk.leaf_port)
        if lk.hca is not None:
            h = self.hcas[lk.hca]
            hca = End("hca", self.hosts[h.host], _guid(h.guid), 1, device=h.device,
                      port_guid=_guid(h.guid + 1))
            return hca, leaf
        assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
        return leaf, self.switch_end(lk.spine, lk.spine_port)

    def logging_ends(self, i: int) -> list[tuple[int, int]]:
        """(switch, port) of each end that writes to the switch log: HCAs do not."""
        lk = self.links[i]
        out = [(lk.leaf, lk.leaf_port)]
        if lk.spine is not None:
            out.append((lk.spine, lk.spine_port))
        return out


def _build_fabric(sc: Scenario, rng: random.Random) -> _Fabric:
    _, model_ports, speed, _ = _MODELS[sc.switch_model]
    rails, per_leaf = sc.hcas_per_host, sc.hosts_per_leaf
    n_sw, n_hosts = sc.spines + sc.leaves, sc.hosts
    n_hca = n_hosts * rails
    sw_oui, ca_oui = rng.choice(_SWITCH_OUIS), rng.choice(_HCA_OUIS)
    sw_serials = rng.sample(range(1, 1 << 24), n_sw)
    # CA serials are even so that port GUID = node GUID + 1 never hits another CA.
    ca_serials = [2 * s for s in rng.sample(range(1, 1 << 23), n_hca)]
    lids = rng.sample(range(1, n_sw + n_hca + 1), n_sw + n_hca)  # opensm's order is not ours

    def sw_width(n: int) -> int:
        return max(2, len(str(n)))

    hw = max(3, len(str(n_hosts)))
    hosts = [f"{sc.host_prefix}-{i + 1:0{hw}d}" for i in range(n_hosts)]
    switches: list[_Switch] = []
    for s in range(sc.spines):
        name = f"{sc.spine_prefix}{s + 1:0{sw_width(sc.spines)}d}"
        switches.append(_Switch(name, (sw_oui << 40) | (0x0300 << 24) | sw_serials[s], lids[s],
                                False, max(model_ports, sc.leaves + 1),
                                f"MF0;{name}:{sc.switch_model}/U1"))
    for j in range(sc.leaves):
        name = f"{sc.leaf_prefix}{j + 1:0{sw_width(sc.leaves)}d}"
        k = sc.spines + j
        switches.append(_Switch(name, (sw_oui << 40) | (0x0300 << 24) | sw_serials[k], lids[k],
                                True, max(model_ports, per_leaf + sc.spines + 1),
                                f"MF0;{name}:{sc.switch_model}/U1"))
    second = rng.randint(16, 200)
    ips = [f"10.{second}.{i // 250}.{i % 250 + 1}" for i in range(n_hosts)]

    hcas: list[_Hca] = []
    links: list[_Link] = []
    host_hcas: list[list[int]] = []
    host_su: list[int] = []
    hca_link: list[int] = []
    switch_links: list[list[int]] = [[] for _ in range(n_sw)]
    adjacency: list[list[tuple[int, str, int, int]]] = [[] for _ in range(n_sw)]
    for h in range(n_hosts):
        su, pos = divmod(h, per_leaf)
        host_su.append(su)
        mine: list[int] = []
        for r in range(rails):
            idx = len(hcas)
            hcas.append(_Hca(h, r, (ca_oui << 40) | (0x0300 << 24) | ca_serials[idx],
                             lids[n_sw + idx]))
            leaf = sc.spines + su * rails + r
            links.append(_Link(leaf, pos + 1, idx, None))
            hca_link.append(len(links) - 1)
            switch_links[leaf].append(len(links) - 1)
            adjacency[leaf].append((pos + 1, "H", idx, 1))
            mine.append(idx)
        host_hcas.append(mine)
    for j in range(sc.leaves):
        leaf = sc.spines + j
        for s in range(sc.spines):
            links.append(_Link(leaf, per_leaf + s + 1, None, s, j + 1))
            switch_links[leaf].append(len(links) - 1)
            switch_links[s].append(len(links) - 1)
            adjacency[leaf].append((per_leaf + s + 1, "S", s, j + 1))
            adjacency[s].append((j + 1, "S", leaf, per_leaf + s + 1))
    for ports in adjacency:
        ports.sort()
    uplink = {(lk.leaf, lk.spine): i for i, lk in enumerate(links) if lk.spine is not None}
    return _Fabric(sc, speed, switches, hcas, hosts, ips, links, host_hcas, host_su,
                   switch_links, hca_link, adjacency, uplink)


# --------------------------------------------------------------------------- faults


@dataclass(slots=True)
class _Flap:
    link: int
    down: float  # seconds after the window start, physical time
    up: float
    cause: str


@dataclass(slots=True)
class _SymbolFault:
    onset: float
    rate_h: float  # errors per hour at onset
    accel_h2: float  # errors per hour^2: a degrading optic gets worse

    def errors(self, t: float) -> float:
        if t <= self.onset:
            return 0.0
        h = (t - self.onset) / 3600.0
        return self.rate_h * h + self.accel_h2 * h * h


@dataclass(slots=True)
class _PortCounters:
    baseline: dict[str, int] = field(default_factory=dict)  # from before the window
    downs: list[float] = field(default_factory=list)
    symbol: _SymbolFault | None = None
    discards_h: float = 0.0


_PortKey = tuple[str, int, int]  # ("S", switch, port) or ("H", hca, 1)
_NodeKey = tuple[str, int]


@dataclass(slots=True)
class _Plan:
    flaps: list[_Flap] = field(default_factory=list)
    bad: list[tuple[int, str, str, list[_Flap], tuple[int, ...], float | None]] = field(
        default_factory=list)  # link, fault, cause, flaps, symbol ends, onset
    reboots: list[tuple[int, float, float, list[int]]] = field(default_factory=list)
    maintenance: list[tuple[int, float, float, list[_Flap]]] = field(default_factory=list)
    reseats: list[_Flap] = field(default_factory=list)
    ports: dict[_PortKey, _PortCounters] = field(default_factory=dict)
    resets: dict[_NodeKey, list[float]] = field(default_factory=dict)

    def port(self, key: _PortKey) -> _PortCounters:
        pc = self.ports.get(key)
        if pc is None:
            pc = self.ports[key] = _PortCounters()
        return pc


def _port_keys(fab: _Fabric, i: int) -> list[_PortKey]:
    lk = fab.links[i]
    keys: list[_PortKey] = [("S", lk.leaf, lk.leaf_port)]
    if lk.hca is not None:
        keys.insert(0, ("H", lk.hca, 1))
    else:
        assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
        keys.append(("S", lk.spine, lk.spine_port))
    return keys


def _spaced_times(rng: random.Random, n: int, lo: float, hi: float, gap: float) -> list[float]:
    """n sorted times in [lo, hi] at least `gap` apart (the span must allow it)."""
    span = hi - lo - gap * (n - 1)
    if span <= 0:
        raise ValueError("window too short for the requested faults")
    raw = sorted(rng.uniform(0, span) for _ in range(n))
    return [lo + t + gap * k for k, t in enumerate(raw)]


def _plan_faults(sc: Scenario, fab: _Fabric, rng: random.Random) -> _Plan:
    plan = _Plan()
    total = sc.days * 86400.0
    lo, hi = 600.0, total - 900.0  # keep every flap (and its up line) inside the window
    counts = sc.fault_counts()
    used: set[int] = set()

    def add(link: int, down: float, dur: float, cause: str) -> _Flap:
        f = _Flap(link, down, down + dur, cause)
        plan.flaps.append(f)
        for key in _port_keys(fab, link):
            plan.port(key).downs.append(down)
        return f

    # Switch reboots first: their links and hosts are then off limits for the other faults, so
    # every fault in the truth is separable.
    rebooted = rng.sample(range(len(fab.switches)), counts[CAUSE_REBOOT])
    for sw in rebooted:
        at = rng.uniform(lo + 0.15 * (hi - lo), hi - 0.15 * (hi - lo))
        boot = rng.uniform(120.0, 240.0)
        mine = sorted(fab.switch_links[sw])
        last_up = at
        for i in mine:
            used.add(i)
            down = at + rng.uniform(0.0, 2.0)
            last_up = max(last_up, add(i, down, at + boot + rng.uniform(0.0, 5.0) - down,
                                       CAUSE_REBOOT).up)
        # Counters restart when the switch's firmware comes up, before its ports train.
        plan.resets.setdefault(("S", sw), []).append(at + boot - 1.0)
        plan.reboots.append((sw, at, last_up, mine))
    blocked_hosts = {fab.hcas[hca].host for i in used if (hca := fab.links[i].hca) is not None}

    hosts = [h for h in range(len(fab.hosts)) if h not in blocked_hosts]
    for h in rng.sample(hosts, min(counts[CAUSE_MAINTENANCE], len(hosts))):
        n = rng.randint(3, 6)
        start = rng.uniform(lo, max(lo + 1, hi - 4 * 3600.0))
        times = _spaced_times(rng, n, start + rng.uniform(120, 600),
                              min(start + rng.uniform(2700, 9000), hi), 240.0)
        mine_flaps: list[_Flap] = []
        for t in times:
            dur = rng.uniform(30.0, 200.0)  # a reboot: the link is down while the host boots
            for hca in fab.host_hcas[h]:
                link = fab.hca_link[hca]
                used.add(link)
                mine_flaps.append(add(link, t + rng.uniform(0, 1.0), dur, CAUSE_MAINTENANCE))
                # The HCA's counters restart when the driver loads, just before the link is up.
                plan.resets.setdefault(("H", hca), []).append(t + dur - 1.0)
        # People declare round times a little wider than the work.
        w_start = math.floor((start - 60) / 300) * 300.0
        w_end = math.ceil((max(f.up for f in mine_flaps) + rng.uniform(180, 900)) / 300) * 300.0
        plan.maintenance.append((h, w_start, w_end, mine_flaps))

    free = [i for i in range(len(fab.links)) if i not in used]
    rng.shuffle(free)
    by_kind = {
        "host": [i for i in free if fab.links[i].hca is not None],
        "switch": [i for i in free if fab.links[i].hca is None],
    }

    def take(k: int) -> int:
        # Alternate host and leaf-spine links so both kinds carry every fault type.
        kinds = ("switch", "host") if k % 2 == 0 else ("host", "switch")
        for kind in kinds:
            if by_kind[kind]:
                return by_kind[kind].pop()
        raise ValueError("not enough healthy links for the requested faults")

    k = rng.randrange(2)
    for _ in range(counts[FAULT_FREQUENT]):
        link, k = take(k), k + 1
        n = rng.randint(4, 9)
        fl = [add(link, t, rng.uniform(2.0, 40.0), FAULT_FREQUENT)
              for t in _spaced_times(rng, n, lo, hi, 120.0)]
        plan.bad.append((link, FAULT_FREQUENT, "cable", fl, (), None))
    for _ in range(counts[FAULT_RARE]):
        link, k = take(k), k + 1
        n = rng.randint(1, 2)
        fl = [add(link, t, rng.uniform(60.0, 600.0), FAULT_RARE)
              for t in _spaced_times(rng, n, lo, hi, 1800.0)]
        plan.bad.append((link, FAULT_RARE, "cable", fl, (), None))
    for _ in range(counts[FAULT_SYMBOL]):
        link, k = take(k), k + 1
        onset = rng.uniform(0.0, 0.4 * total)
        n = rng.choice((0, 0, 1, 2))
        fl = [add(link, t, rng.uniform(2.0, 10.0), FAULT_SYMBOL)
              for t in _spaced_times(rng, n, max(lo, onset), hi, 600.0)]
        rate = math.exp(rng.uniform(math.log(30.0), math.log(600.0)))
        keys = _port_keys(fab, link)
        one_sided = rng.random() < 0.4
        sides = (rng.randrange(2),) if one_sided else (0, 1)
        for s in sides:
            # The two ends of a bad cable see different rates (each lane pair degrades alone).
            r = rate * rng.uniform(0.6, 1.4)
            plan.port(keys[s]).symbol = _SymbolFault(onset, r, r * rng.uniform(0.05, 0.3))
        plan.bad.append((link, FAULT_SYMBOL, "transceiver" if one_sided else "cable", fl, sides,
                         onset))
    for _ in range(counts[CAUSE_RESEAT]):
        link, k = take(k), k + 1
        plan.reseats.append(add(link, rng.uniform(lo, hi), rng.uniform(1.0, 4.8), CAUSE_RESEAT))

    # A cable that has flapped for weeks may already sit near the 8-bit ceiling of
    # LinkDownedCounter, so the window shows it saturate.
    frequent = [b for b in plan.bad if b[1] == FAULT_FREQUENT]
    if frequent and rng.random() < 0.5:
        key = _port_keys(fab, frequent[0][0])[-1]
        plan.port(key).baseline["LinkDownedCounter"] = 255 - rng.randint(1, 3)

    # Background that must not be blamed: old constant counts and congestion discards.
    quiet = by_kind["host"] + by_kind["switch"]
    rng.shuffle(quiet)
    n_bg = max(2, len(fab.links) // 100)
    for i in quiet[:n_bg]:
        key = rng.choice(_port_keys(fab, i))
        if rng.random() < 0.5:
            plan.port(key).baseline["LinkDownedCounter"] = rng.randint(1, 6)
        else:
            plan.port(key).baseline["SymbolErrorCounter"] = rng.randint(1, 60)
    for i in quiet[n_bg:2 * n_bg]:
        if fab.links[i].hca is None:
            plan.port(rng.choice(_port_keys(fab, i))).discards_h = rng.uniform(0.5, 40.0)
    plan.flaps.sort(key=lambda f: (f.down, f.link))
    return plan


# --------------------------------------------------------------------------- time helpers


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _guid(g: int) -> str:
    return f"0x{g:016x}"


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.start = start.astimezone(UTC)

    def at(self, seconds: float) -> datetime:
        # Whole microseconds, so the same float always prints the same stamp.
        return self.start + timedelta(microseconds=round(seconds * 1e6))


def _ctime(dt: datetime) -> str:
    return f"{dt:%a %b} {dt.day:2d} {dt:%H:%M:%S %Y}"


# --------------------------------------------------------------------------- ibnetdiscover


def _ibnetdiscover(fab: _Fabric, at: datetime) -> str:
    """The default ibnetdiscover form, byte-for-byte the layout of the ibsim capture in
    auditor/demo_data: records in reverse discovery order (switches, then CAs), GUIDs unpadded
    in the id lines and port GUIDs, zero-padded in the quoted node ids."""
    sw_devid, _, _, ca_devid = _MODELS[fab.sc.switch_model]
    speed = f"4x{fab.speed}"
    first = fab.hcas[0]
    seen_sw: set[int] = set()
    seen_ca = {0}
    order_sw: list[int] = []
    order_ca = [0]
    queue = deque([fab.links[fab.hca_link[0]].leaf])
    seen_sw.add(queue[0])
    while queue:  # breadth first from the sweeping host's HCA, as ibnetdiscover walks
        sw = queue.popleft()
        order_sw.append(sw)
        for _, kind, peer, _ in fab.adjacency[sw]:
            if kind == "H" and peer not in seen_ca:
                seen_ca.add(peer)
                order_ca.append(peer)
            elif kind == "S" and peer not in seen_sw:
                seen_sw.add(peer)
                queue.append(peer)
    out = ["#", f"# Topology file: generated on {_ctime(at)}", "#",
           f"# Initiated from node {first.guid:016x} port {first.guid + 1:016x}"]
    for sw in reversed(order_sw):
        s = fab.switches[sw]
        out += ["", "vendid=0x2c9", f"devid=0x{sw_devid:x}", f"sysimgguid=0x{s.guid:x}",
                f"switchguid=0x{s.guid:x}({s.guid:x})",
                f'Switch\t{s.num_ports} "S-{s.guid:016x}"\t\t# "{s.desc}" enhanced port 0 '
                f"lid {s.lid} lmc 0"]
        for port, kind, peer, peer_port in fab.adjacency[sw]:
            if kind == "H":
                h = fab.hcas[peer]
                out.append(f'[{port}]\t"H-{h.guid:016x}"[1]({h.guid + 1:x}) \t\t# '
                           f'"{fab.hosts[h.host]} {h.device}" lid {h.lid} {speed}')
            else:
                p = fab.switches[peer]
                out.append(f'[{port}]\t"S-{p.guid:016x}"[{peer_port}]\t\t# "{p.desc}" '
                           f"lid {p.lid} {speed}")
    for ca in reversed(order_ca):
        h = fab.hcas[ca]
        lk = fab.links[fab.hca_link[ca]]
        s = fab.switches[lk.leaf]
        desc = f"{fab.hosts[h.host]} {h.device}"
        out += ["", "vendid=0x2c9", f"devid=0x{ca_devid:x}", f"sysimgguid=0x{h.guid:x}",
                f"caguid=0x{h.guid:x}", f'Ca\t1 "H-{h.guid:016x}"\t\t# "{desc}"',
                f'[1]({h.guid + 1:x}) \t"S-{s.guid:016x}"[{lk.leaf_port}]\t\t# lid {h.lid} '
                f'lmc 0 "{s.desc}" lid {s.lid} {speed}']
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- switch log


def _switch_log(sc: Scenario, fab: _Fabric, plan: _Plan, clock: _Clock,
                skew: list[float], rng: random.Random, lost: set[int]) -> str:
    """rsyslog RSYSLOG_FileFormat lines (`<RFC 3339> <host> <tag>[pid]: <msg>`) in arrival order;
    each stamp is the sender's clock. Onyx port events read `mgmtd[pid]: [mgmtd.NOTICE]:
    Interface IB1/17 changed state to DOWN`; the config line is verbatim from a Samara/MLNX-OS
    capture (reference/switch/syslog-samples.txt). The `lost` switches' lines are drawn and
    dropped, so the other switches' lines are the same with or without them."""
    pids = [(rng.randint(2000, 9000), rng.randint(1000, 1999)) for _ in fab.switches]
    # A rebooted switch is silent while it boots and runs a new mgmtd afterwards.
    rebooting = {sw: (at, up) for sw, at, up, _ in plan.reboots}
    new_mgmtd = {sw: rng.randint(2000, 9000) for sw in sorted(rebooting)}
    lines: list[tuple[float, int, str]] = []

    def mgmtd(sw: int, t: float) -> str:
        after = sw in rebooting and t > rebooting[sw][0] + 10.0
        return f"mgmtd[{new_mgmtd[sw] if after else pids[sw][0]}]"

    def emit(sw: int, true_t: float, tag: str, msg: str) -> None:
        stamp = _iso(clock.at(true_t + skew[sw])).replace("Z", "+00:00")
        arrival = true_t + rng.uniform(0.001, 0.05)
        if sw not in lost:
            lines.append((arrival, len(lines), f"{stamp} {fab.switches[sw].name} {tag}: {msg}"))

    for f in plan.flaps:
        for sw, port in fab.logging_ends(f.link):
            for t, state in ((f.down, "DOWN"), (f.up, "UP")):
                # Each end notices the change on its own, a fraction of a second apart.
                emit(sw, t + rng.uniform(0.0, 0.3), mgmtd(sw, t),
                     f"[mgmtd.NOTICE]: Interface IB1/{port} changed state to {state}")

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


def _counter_values(pc: _PortCounters, t: float, resets: list[float]) -> dict[str, int]:
    last = max((r for r in resets if r <= t), default=None)
    base = pc.baseline if last is None else {}
    since = last if last is not None else -math.inf
    downs = sum(1 for d in pc.downs if since < d <= t)
    sym = 0.0
    if pc.symbol is not None:
        sym = pc.symbol.errors(t) - (pc.symbol.errors(last) if last is not None else 0.0)
    hours = (t - (last if last is not None else 0.0)) / 3600.0
    raw = {
        "SymbolErrorCounter": base.get("SymbolErrorCounter", 0) + int(sym),
        "LinkErrorRecoveryCounter": int(sym / 1500.0),
        "LinkDownedCounter": base.get("LinkDownedCounter", 0) + downs,
        "PortRcvErrors": int(sym / 40.0),
        "PortXmitDiscards": int(pc.discards_h * max(hours, 0.0)),
    }
    return {name: min(raw[name], width) for name, width in _COUNTERS if raw[name] > 0}


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
IB_RETRY_CNT = 7  # NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7): every tag v2.8.3-1 .. v2.30.7-1
_NCCL_VERSION_RE = re.compile(r"2\.(\d{1,2})\.(\d{1,2})")
_MIN_NCCL = (2, 8, 0)
_ERROR_JITTER_S = 2.0  # the completion error comes 0-2 s after the QP's last retry ran out
_LONG_FLAP_S = 7.0  # `survived_long_flaps` counts footprint flaps longer than this
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


def parse_nccl_version(text: str) -> tuple[int, int, int]:
    """`2.21.5` -> (2, 21, 5); only NCCL 2.8 and later are modelled."""
    m = _NCCL_VERSION_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"NCCL version {text!r}: expected 2.MINOR.PATCH, e.g. 2.21.5")
    version = (2, int(m.group(1)), int(m.group(2)))
    if version < _MIN_NCCL:
        raise ValueError(f"NCCL version {text}: only 2.8.0 and later are modelled")
    return version


def ib_timeout_default(version: str) -> int:
    """NCCL_IB_TIMEOUT when the environment does not set it: NCCL_PARAM(IbTimeout,
    "IB_TIMEOUT", N) in src/transport/net_ib.cc (net_ib/connect.cc from v2.29.2-1) is 14 up
    to v2.13.4-1, 18 from v2.14.3-1 to v2.22.3-1 and 20 from v2.23.4-1."""
    v = parse_nccl_version(version)
    return 14 if v < (2, 14, 0) else 18 if v < (2, 23, 0) else 20


def nccl_death_s(ib_timeout: int, retry_cnt: int = IB_RETRY_CNT) -> float:
    """How long a dead link takes to fail an NCCL connection: the QP sends retry_cnt + 1
    times, each waiting the IB local ACK timeout of 4.096 us x 2^timeout (ibv_modify_qp
    `timeout`, `retry_cnt` as net_ib.cc sets them): 14 -> 0.54 s, 18 -> 8.59 s, 20 -> 34.4 s."""
    return 4.096e-6 * float(2**ib_timeout) * (retry_cnt + 1)


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


# --------------------------------------------------------------------------- jobs


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


def _job_style(sc: Scenario, rng: random.Random) -> _Style:
    # Always the same draws, so one option does not move the others.
    version = rng.choice(sc.nccl_versions)
    timeout = rng.choice(sc.ib_timeouts)
    info = rng.random() < sc.info_share
    launcher = rng.choice(_LAUNCHERS)
    v = parse_nccl_version(version)
    effective = ib_timeout_default(version) if timeout is None else timeout
    # NCCL_DEBUG_TIMESTAMP_LEVELS appeared in v2.26.2-1 src/debug.cc (default: WARN only).
    stamps = sc.nccl_stamps and v >= (2, 26, 0)
    channels = sc.channel_lines if sc.channel_lines is not None else v < (2, 22, 0)
    return _Style(version, v, effective, timeout is not None, nccl_death_s(effective), info,
                  stamps, channels and info, launcher if sc.launcher_prefixes else "none", rng)


@dataclass(slots=True)
class _Job:
    job_id: int
    name: str
    hosts: list[int]
    start: float
    planned_end: float
    style: _Style
    state: str = "COMPLETED"
    exit_code: str = "0:0"
    end: float | None = None  # None: still running when the window closes
    log: str | None = None
    network: NetworkFailedJob | None = None
    other: OtherJob | None = None
    culprit: int | None = None  # the link whose flap killed it
    survived: bool = False  # outlived a long flap on its footprint
    sacct_id: str | None = None  # `123_7` for an array task

    @property
    def label(self) -> str:
        return self.sacct_id or str(self.job_id)


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

    def _who(self, job: _Job, h: int, dev: int, pid: int, tid: int) -> str:
        if job.style.channels:  # one process per GPU, numbered from the host's first
            pid, tid = self.pids[h] + dev, self.pids[h] + dev + (tid - pid)
        return f"{self.fab.hosts[h]}:{pid}:{tid} [{dev}]"

    def _warn(self, job: _Job, t: float, who: str, where: str, msg: str) -> str:
        stamp = f"{_nccl_ts(self.clock.at(t))} " if job.style.stamps else ""
        return f"{stamp}{who} {where} NCCL WARN {msg}"

    def header(self, job: _Job) -> list[_Line]:
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

    def network(self, job: _Job, pairs: list[tuple[int, int, int, float]],
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

    def _cqe(self, job: _Job, t: float, who: str, send: bool) -> str:
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

    def render(self, job: _Job, lines: list[_Line]) -> str:
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


def _schedule_jobs(sc: Scenario, fab: _Fabric, plan: _Plan, clock: _Clock,
                   rng: random.Random) -> list[_Job]:
    total = sc.days * 86400.0
    n_hosts = len(fab.hosts)
    sizes = [(s, w) for s, w in zip(_JOB_SIZES, _JOB_SIZE_WEIGHTS, strict=True)
             if s <= max(2, n_hosts // 2)]
    if sc.jobs_per_day is not None:
        per_day = float(sc.jobs_per_day)
    else:  # enough jobs to keep about 80 % of the node-hours busy
        mean_size = sum(s * w for s, w in sizes) / sum(w for _, w in sizes)
        mean_h = (_JOB_MAX_S - _JOB_MIN_S) / math.log(_JOB_MAX_S / _JOB_MIN_S) / 3600.0
        per_day = max(12.0, 0.8 * n_hosts * 24.0 / (mean_size * mean_h))
    n_jobs = round(per_day * sc.days)
    drained = {h: (s - 1800.0, e) for h, s, e, _ in plan.maintenance}  # drained 30 min early
    shortest = min(nccl_death_s(ib_timeout_default(v) if t is None else t)
                   for v in sc.nccl_versions for t in sc.ib_timeouts)
    killers = sorted((f for f in plan.flaps if f.up - f.down > min(shortest, _LONG_FLAP_S)),
                     key=lambda f: (f.down, f.link))
    host_flaps: dict[int, list[_Flap]] = {}
    for f in plan.flaps:
        hca = fab.links[f.link].hca
        if hca is not None:
            host_flaps.setdefault(fab.hcas[hca].host, []).append(f)
    logs = _JobLogs(fab, clock, rng)
    free_at = [0.0] * n_hosts
    pool = [(0.0, h) for h in range(n_hosts)]  # (free from, host), sorted
    arrivals = sorted(rng.uniform(0.0, total - 600.0) for _ in range(n_jobs))
    base_id = rng.randint(100000, 900000)
    jobs: list[_Job] = []
    for a in arrivals:
        size = rng.choices([s for s, _ in sizes], [w for _, w in sizes])[0]
        dur = math.exp(rng.uniform(math.log(_JOB_MIN_S), math.log(_JOB_MAX_S)))
        start = float(math.ceil(a))
        n_free = bisect_right(pool, (start, n_hosts))
        if n_free < size:
            # Wait until enough nodes are free, as the scheduler would.
            nth = pool[size - 1][0]  # inf: held by jobs that outlive the window
            start = max(start, float(math.ceil(nth)) if nth < total else total)
            n_free = bisect_right(pool, (start, n_hosts))
        if start >= total - 60.0:
            continue

        def ok(h: int, start: float = start, dur: float = dur) -> bool:
            # A re-imaged host takes no job that would overlap its (drained) window.
            win = drained.get(h)
            return win is None or start + dur <= win[0] or start >= win[1]

        chosen: list[int] = []
        if rng.random() < 0.5:  # topology-aware placement: the next free nodes from a point
            first = rng.randrange(n_hosts)
            for k in range(n_hosts):
                h = (first + k) % n_hosts
                if free_at[h] <= start and ok(h):
                    chosen.append(h)
                    if len(chosen) == size:
                        break
        else:
            picks = rng.sample(range(n_free), min(n_free, size + len(drained)))
            chosen = [pool[i][1] for i in picks if ok(pool[i][1])][:size]
        if len(chosen) < size:
            continue
        job_id = base_id + len(jobs)
        # The job's NCCL, settings and launcher come from a stream of its own.
        style = _job_style(sc, random.Random(f"{sc.seed}:joblog:{job_id}"))  # noqa: S311
        job = _Job(job_id, f"{rng.choice(_JOB_NAMES)}-{rng.randint(1, 99):02d}",
                   sorted(chosen), start, start + round(dur), style)
        outlived = _decide(sc, fab, job, killers, host_flaps, logs, rng)
        until = job.end if job.end is not None else total
        job.survived = any(up <= until for up in outlived)
        for h in job.hosts:
            del pool[bisect_left(pool, (free_at[h], h))]
            free_at[h] = job.end if job.end is not None else math.inf
            insort(pool, (free_at[h], h))
        jobs.append(job)
    return jobs


def _decide(sc: Scenario, fab: _Fabric, job: _Job, killers: list[_Flap],
            host_flaps: dict[int, list[_Flap]], logs: _JobLogs,
            rng: random.Random) -> list[float]:
    """Set the job's fate: the earliest of a network death, a GPU failure, a cancel. A flap on
    the job's footprint kills it when the link stays down longer than the job's death time
    (its NCCL_IB_TIMEOUT); the completion error comes that long after the flap (after the
    job's start if the link was already down). Returns the up times of the footprint flaps
    longer than 7 s that were too short to kill it."""
    total = sc.days * 86400.0
    clock = logs.clock
    hosts = set(job.hosts)
    ring: dict[int, tuple[int, int, int]] | None = None  # computed on the first need
    death = job.style.death_s
    jitter = rng.uniform(0.0, _ERROR_JITTER_S)
    net: tuple[float, _Flap, tuple[int, int, int]] | None = None
    outlived: list[float] = []
    for f in killers:  # sorted by down: the first hit has the earliest effective start
        if f.down >= job.planned_end:
            break
        if f.up <= job.start:
            continue
        eff = max(f.down, job.start)
        kills = f.up - eff > death
        if kills and eff + death + jitter >= job.planned_end:
            continue  # the job is done before NCCL gives up
        if not kills and f.up - eff <= _LONG_FLAP_S:
            continue
        lk = fab.links[f.link]
        if lk.hca is not None:
            if fab.hcas[lk.hca].host not in hosts:
                continue
            hca = fab.hcas[lk.hca]
            i = job.hosts.index(hca.host)
            # The host behind the dead port and its ring neighbour report each other.
            pair: tuple[int, int, int] | None = (
                hca.host, job.hosts[(i + 1) % len(job.hosts)], hca.rail)
        else:
            if ring is None:
                ring = fab.ring_links(job.hosts)
            pair = ring.get(f.link)
            if pair is None:
                continue
        assert pair is not None  # noqa: S101 - set on both branches
        if not kills:
            outlived.append(f.up)
            continue
        net = (eff + death + jitter, f, pair)
        break
    gpu_at = (job.start + rng.uniform(0.05, 0.95) * (job.planned_end - job.start)
              if rng.random() < sc.non_network_failure_rate else math.inf)
    cancel_at = (job.start + rng.uniform(0.02, 0.9) * (job.planned_end - job.start)
                 if rng.random() < sc.cancel_rate else math.inf)
    net_at = net[0] if net is not None else math.inf
    first = min(net_at, gpu_at, cancel_at, job.planned_end)
    nodes = tuple(fab.hosts[h] for h in job.hosts)
    if first >= total:
        job.state, job.end = "RUNNING", None
        return outlived
    if first == job.planned_end:
        job.end = job.planned_end
        return outlived
    if first == cancel_at:
        job.state = f"CANCELLED by {rng.randint(51000, 51999)}"
        job.end = float(math.ceil(first))
        job.other = OtherJob(str(job.job_id), nodes, clock.at(job.start), clock.at(job.end),
                             "CANCELLED", "cancelled")
        return outlived
    job.state = "FAILED"
    if first == net_at and net is not None:
        _network_failure(fab, job, net[1], net_at, net[2], host_flaps, logs, rng)
        return outlived
    # A GPU failure: CUDA OOM in one rank, or an Xid that kills the GPU; no IB errors.
    h = rng.choice(job.hosts)
    dev = rng.randrange(GPUS_PER_NODE)
    rank = job.hosts.index(h) * GPUS_PER_NODE + dev
    at = clock.at(first)
    lines = logs.header(job)
    if rng.random() < 0.6:
        kind, xid = "oom", None
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
        lines += [_Line(first, h, dev, True, text) for text in texts]
        exit_at = first + rng.uniform(1.0, 3.0)
        lines += logs.elastic(h, rank, exit_at, 1, False)
        job.exit_code = "1:0"
    else:
        kind = "xid"
        xid = rng.choice(sorted(_XIDS))
        bus = _PCI_BUSES[dev]
        who = "pid='<unknown>', name=<unknown>" if xid == 79 else \
            f"pid={rng.randint(20000, 400000)}, name=python3"
        # The site's epilog appends the node's kernel lines (pdsh style, `dmesg -T`).
        lines += [
            _Line(first, None, None, False, f"{fab.hosts[h]}: [{_ctime(at)}] NVRM: Xid "
                                            f"(PCI:0000:{bus}:00): {xid}, {who}, {_XIDS[xid]}"),
            _Line(first, h, dev, True,
                  f"[rank{rank}]: RuntimeError: CUDA error: unspecified launch failure"),
            _Line(first, h, dev, True,
                  f"[rank{rank}]: CUDA kernel errors might be asynchronously reported at some "
                  "other API call, so the stacktrace below might be incorrect."),
        ]
        exit_at = first + rng.uniform(1.0, 3.0)
        lines += logs.elastic(h, rank, exit_at, -6, True)
        job.exit_code = "0:6"
    job.end = float(math.ceil(exit_at + rng.uniform(1.0, 10.0)))  # srun tears the step down
    job.log = logs.render(job, lines)
    job.other = OtherJob(str(job.job_id), nodes, clock.at(job.start), clock.at(job.end),
                         "FAILED", kind, fab.hosts[h], xid)
    return outlived


def _network_failure(fab: _Fabric, job: _Job, flap: _Flap, error_at: float,
                     pair: tuple[int, int, int], host_flaps: dict[int, list[_Flap]],
                     logs: _JobLogs, rng: random.Random) -> None:
    """Completion errors from both hosts of a connection that crossed the dead link, each
    naming the other's IPoIB address, then PyTorch's watchdog and torchelastic."""
    clock = logs.clock
    a, b, rail = pair
    t_a = error_at
    t_b = error_at + rng.uniform(0.0, 1.5)
    eff = max(flap.down, job.start)
    async_hosts: list[tuple[int, int, float]] = []
    for h in job.hosts:  # every job host whose own HCA link was down then sees a port error
        for f in host_flaps.get(h, []):
            if f.down <= eff + 2.0 and f.up > eff:
                f_hca = fab.links[f.link].hca
                assert f_hca is not None  # noqa: S101 - host_flaps holds host links only
                async_hosts.append((h, fab.hcas[f_hca].rail, max(f.down, job.start) + 0.2))
    lines = logs.header(job)
    failed, devs = logs.network(job, [(a, b, rail, t_a), (b, a, rail, t_b)], async_hosts)
    lines += failed
    exit_at = max(t_a, t_b) + rng.uniform(3.0, 10.0)
    lines += logs.elastic(a, job.hosts.index(a) * GPUS_PER_NODE, exit_at, -6, True)
    job.log = logs.render(job, lines)
    job.exit_code = rng.choice(("1:0", "0:6"))
    job.end = float(math.ceil(exit_at + rng.uniform(1.0, 10.0)))
    job.culprit = flap.link
    dev = f"mlx5_{rail}"
    st = job.style
    reporters = tuple(
        Reporter(fab.hosts[h], dev, fab.hosts[p], fab.ips[p], clock.at(t), devs[h],
                 job.hosts.index(h) * GPUS_PER_NODE + devs[h])
        for h, p, t in ((a, b, t_a), (b, a, t_b)))
    job.network = NetworkFailedJob(
        str(job.job_id), tuple(fab.hosts[h] for h in job.hosts), clock.at(job.start),
        clock.at(error_at), clock.at(job.end), fab.link_id(flap.link), flap.cause,
        clock.at(flap.down), clock.at(flap.up), reporters, st.version, st.ib_timeout,
        st.timeout_set, round(st.death_s, 6), rail, dev, st.debug, st.launcher)


def _assign_sacct_ids(jobs: list[_Job], rng: random.Random) -> tuple[list[str], int | None]:
    """A few runs of consecutive submissions become the tasks of an array job (JobID
    `<first task's JobIDRaw>_<index>`, same name) and one completed job becomes a het job.
    Returns the array task ids and the het job's id."""
    by_id = sorted(jobs, key=lambda j: j.job_id)
    arrays: list[str] = []
    n_arrays = min(3, max(1, len(by_id) // 30))
    taken: set[int] = set()
    for _ in range(n_arrays):
        size = rng.randint(2, 4)
        if len(by_id) < size + 1:
            break
        i = rng.randrange(len(by_id) - size)
        group = by_id[i:i + size]
        if any(j.job_id in taken for j in group):
            continue
        first = rng.choice((0, 1, rng.randint(2, 40)))
        for k, j in enumerate(group):
            j.sacct_id = f"{group[0].job_id}_{first + k}"
            j.name = group[0].name
            taken.add(j.job_id)
            arrays.append(j.sacct_id)
    done = [j for j in by_id if j.state == "COMPLETED" and j.job_id not in taken]
    het = rng.choice(done).job_id if done else None
    return arrays, het


def _sacct(fab: _Fabric, jobs: list[_Job], clock: _Clock, steps: bool = False,
           het: int | None = None, rng: random.Random | None = None) -> str:
    """`sacct -P -X --format=JobID,JobIDRaw,JobName,Partition,State,ExitCode,Start,End,NNodes,
    NodeList,AllocTRES` (reference/jobs/sacct-samples.txt): times in slurmctld's local time,
    here UTC, no zone; End `Unknown` while running. With `steps` (no -X) each allocation is
    followed by its `.batch` (first node), `.extern` and `.0` (the srun of torchrun) steps,
    with the states steps get: `.extern` COMPLETED, `.0` FAILED or CANCELLED when the job
    failed, CANCELLED when it was cancelled."""
    out = ["JobID|JobIDRaw|JobName|Partition|State|ExitCode|Start|End|NNodes|NodeList|AllocTRES"]
    next_raw = max((j.job_id for j in jobs), default=0) + 1

    def tres(n: int, billing: bool = True) -> str:
        bill = f"billing={n * CPUS_PER_NODE}," if billing else ""
        return (f"{bill}cpu={n * CPUS_PER_NODE},gres/gpu={n * GPUS_PER_NODE},"
                f"mem={n * MEM_GB_PER_NODE}G,node={n}")

    def stamp(t: float | None) -> str:
        return "Unknown" if t is None else f"{clock.at(t):%Y-%m-%dT%H:%M:%S}"

    for job in sorted(jobs, key=lambda j: j.job_id):
        parts: list[tuple[str, str, list[int]]] = [(job.label, str(job.job_id), job.hosts)]
        if steps and job.job_id == het:
            cut = max(1, len(job.hosts) // 4)  # a small first component (e.g. the data loaders)
            parts = [(f"{job.job_id}+0", str(job.job_id), job.hosts[:cut]),
                     (f"{job.job_id}+1", str(next_raw), job.hosts[cut:])]
            next_raw += 1
        if steps:
            assert rng is not None  # noqa: S101 - steps need the stream
            kind = job.state.split(" ")[0]  # `CANCELLED by 51234` only on the allocation line
            span = (job.end - job.start) / 2 if job.end is not None else 25.0
            launch = float(math.ceil(job.start + min(rng.randint(2, 25), span)))
            # srun's step fails with the task that failed, or is cancelled when the batch
            # script tears it down first.
            step = rng.choice(("FAILED", "FAILED", "CANCELLED")) if kind == "FAILED" else kind
            code = {"FAILED": job.exit_code, "CANCELLED": "0:15"}
        for p, (label, raw, hosts) in enumerate(parts):
            n = len(hosts)
            nodes = compress_hostlist(fab.hosts[h] for h in hosts)
            out.append(f"{label}|{raw}|{job.name}|gpu|{job.state}|{job.exit_code}|"
                       f"{stamp(job.start)}|{stamp(job.end)}|{n}|{nodes}|{tres(n)}")
            if not steps:
                continue
            rows = [(".batch", "batch", kind, code.get(kind, "0:0"), job.start, 1,
                     fab.hosts[hosts[0]], tres(1, billing=False))] if p == 0 else []
            rows.append((".extern", "extern", "RUNNING" if job.end is None else "COMPLETED",
                         "0:0", job.start, n, nodes, tres(n)))
            rows.append((".0", "torchrun", step, code.get(step, "0:0"), launch, n, nodes,
                         tres(n, billing=False)))
            for suffix, name, state, exit_code, begin, count, where, alloc in rows:
                out.append(f"{label}{suffix}|{raw}{suffix}|{name}||{state}|{exit_code}|"
                           f"{stamp(begin)}|{stamp(job.end)}|{count}|{where}|{alloc}")
    return "\n".join(out) + "\n"


def _lost_switches(sc: Scenario, fab: _Fabric, plan: _Plan, jobs: list[_Job],
                   rng: random.Random) -> list[int]:
    """The switches whose syslog never reached the collector: leaves of bad cables whose flaps
    killed jobs first (host cables before leaf-spine ones: only the leaf logs a host link),
    then leaves of other bad cables, other leaves, spines, and rebooted switches last."""
    if sc.lost_switch_logs == 0:
        return []
    killed = {j.culprit for j in jobs if j.culprit is not None}
    rebooted = {sw for sw, _, _, _ in plan.reboots}
    tiers: list[set[int]] = [set() for _ in range(6)]
    for link, *_ in plan.bad:
        tier = (0 if fab.links[link].hca is not None else 1) if link in killed else 2
        tiers[tier].add(fab.links[link].leaf)
    for sw, s in enumerate(fab.switches):
        tiers[5 if sw in rebooted else 3 if s.leaf else 4].add(sw)
    order: list[int] = []
    for members in tiers:
        mine = sorted(members - set(order))
        rng.shuffle(mine)
        order += mine
    return order[:sc.lost_switch_logs]


# --------------------------------------------------------------------------- driver


def generate(out_dir: Path, *, seed: int, spines: int, leaves: int, hosts_per_leaf: int,
             days: float = 1.0, **options: Unpack[ScenarioOptions]) -> GroundTruth:
    """Write a scenario's files under `out_dir` and return (and write) its ground truth."""
    return write_scenario(out_dir, Scenario(seed=seed, spines=spines, leaves=leaves,
                                            hosts_per_leaf=hosts_per_leaf, days=days, **options))


def write_scenario(out_dir: Path, sc: Scenario) -> GroundTruth:
    """Write `sc` under `out_dir`. Files this module wrote there before (job logs, counter
    snapshots) are removed first so a re-run with other settings leaves no stale ones."""

    def rng_for(part: str) -> random.Random:
        # One stream per part: changing the job count does not move the faults.
        return random.Random(f"{sc.seed}:{part}")  # noqa: S311 - synthetic data, not secrets

    clock = _Clock(sc.start)
    total = sc.days * 86400.0
    fab = _build_fabric(sc, rng_for("fabric"))
    plan = _plan_faults(sc, fab, rng_for("faults"))
    rng_log = rng_for("logs")
    skew = [round(rng_log.uniform(-1, 1) * sc.max_clock_skew_s, 3) for _ in fab.switches]

    for sub in ("topology", "logs", "counters", "jobs/logs"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    for stale in [*(out_dir / "jobs" / "logs").glob("*.log"),
                  *(out_dir / "counters").glob("ibqueryerrors-*.txt")]:
        stale.unlink()

    def write(rel: str, text: str) -> None:
        (out_dir / rel).write_text(text, encoding="utf-8", newline="\n")

    # Jobs first (their stream is their own): the lost switch logs depend on which jobs died.
    jobs = _schedule_jobs(sc, fab, plan, clock, rng_for("jobs"))
    lost = _lost_switches(sc, fab, plan, jobs, rng_for("lost"))
    arrays: list[str] = []
    het: int | None = None
    rng_sacct = rng_for("sacct")
    if sc.sacct_steps:
        arrays, het = _assign_sacct_ids(jobs, rng_sacct)
        for job in jobs:
            if job.sacct_id is not None:
                if job.network is not None:
                    job.network = replace(job.network, job_id=job.sacct_id)
                if job.other is not None:
                    job.other = replace(job.other, job_id=job.sacct_id)

    topology_at = 120.0 + rng_log.uniform(0, 60)
    write("topology/ibnetdiscover.txt", _ibnetdiscover(fab, clock.at(topology_at)))
    write("logs/switches.log", _switch_log(sc, fab, plan, clock, skew, rng_log, set(lost)))

    node_order: list[_NodeKey] = [("S", i) for i in range(len(fab.switches))]
    node_order += [("H", i) for i in range(len(fab.hcas))]
    snapshots: list[Snapshot] = []
    k = 0
    while k * sc.snapshot_every_h * 3600.0 < total:
        t = k * sc.snapshot_every_h * 3600.0
        at = clock.at(t)
        name = f"{at:%H%M}" if sc.days <= 1 else f"{at:%Y%m%d-%H%M}"
        rel = f"counters/ibqueryerrors-{name}.txt"
        write(rel, _ibqueryerrors(fab, plan, t, node_order))
        snapshots.append(Snapshot(rel, at))
        k += 1

    write("jobs/sacct.txt", _sacct(fab, jobs, clock, sc.sacct_steps, het, rng_sacct))
    for job in jobs:
        if job.log is not None:
            write(f"jobs/logs/{job.label}.log", job.log)

    write("hosts", "# IPoIB (ib0) addresses of the compute nodes\n127.0.0.1\tlocalhost\n" + "".join(
        f"{ip}\t{host} {host}-ib0\n" for host, ip in zip(fab.hosts, fab.ips, strict=True)))
    maint = sorted(plan.maintenance, key=lambda m: (m[1], m[0]))
    write("maintenance.csv", "target,start,end,reason\n" + "".join(
        f"{fab.hosts[h]},{_iso(clock.at(s)).replace('.000000', '')},"
        f"{_iso(clock.at(e)).replace('.000000', '')},re-image OPS-{4000 + n}\n"
        for n, (h, s, e, _) in enumerate(maint)))

    write("inventory.csv", _inventory(fab))
    write("cabling.csv", _cabling(fab))
    truth = _truth(sc, fab, plan, jobs, clock, skew, topology_at, snapshots, maint, lost,
                   arrays, het)
    write("truth.json", json.dumps(truth.to_json(), indent=1) + "\n")
    return truth


def _inventory(fab: _Fabric) -> str:
    """Where things stand: each leaf at the top of its own rack with its hosts below it, the
    spines in racks of their own, two rows per site."""
    rows = ["name,site,row,rack,u"]
    leaves = [i for i, s in enumerate(fab.switches) if s.leaf]
    spines = [i for i, s in enumerate(fab.switches) if not s.leaf]
    rack_of: dict[int, str] = {}
    for n, i in enumerate(leaves):
        rack_of[i] = f"R{n + 1:03d}"
        rows.append(f"{fab.switches[i].name},DC1,{'A' if n % 2 == 0 else 'B'},{rack_of[i]},42")
    for n, i in enumerate(spines):
        rows.append(f"{fab.switches[i].name},DC1,C,S{n // 8 + 1:02d},{40 - 2 * (n % 8)}")
    placed: set[int] = set()
    filled: dict[int, int] = {}  # leaf -> hosts already racked under it
    row_of = {leaf: "A" if n % 2 == 0 else "B" for n, leaf in enumerate(leaves)}
    for link in fab.links:
        if link.hca is None or fab.hcas[link.hca].host in placed:
            continue
        host = fab.hcas[link.hca].host  # racked under the leaf of its first HCA
        placed.add(host)
        slot = filled.get(link.leaf, 0)
        filled[link.leaf] = slot + 1
        rows.append(f"{fab.hosts[host]},DC1,{row_of[link.leaf]},"
                    f"{rack_of.get(link.leaf, 'R000')},{2 + 4 * slot}")
    return "\n".join(rows) + "\n"


def _cabling(fab: _Fabric) -> str:
    """The cabling plan: copper DAC from hosts to their leaf, optics between leaves and spines,
    with serial numbers as printed on the cable label."""
    rows = ["a_name,a_port,b_name,b_port,vendor,part_number,serial_number,length,type"]
    for n, link in enumerate(fab.links):
        leaf = fab.switches[link.leaf]
        if link.hca is not None:
            hca = fab.hcas[link.hca]
            rows.append(f"{fab.hosts[hca.host]},{hca.device}/1,{leaf.name},IB1/{link.leaf_port},"
                        f"NVIDIA,MCP1650-H002E30,MT2331VS{10000 + n:05d},2m,DAC")
        elif link.spine is not None:
            spine = fab.switches[link.spine]
            rows.append(f"{leaf.name},IB1/{link.leaf_port},{spine.name},IB1/{link.spine_port},"
                        f"NVIDIA,MFS1S00-H010V,MT2330FT{10000 + n:05d},10m,AOC")
    return "\n".join(rows) + "\n"


def _truth(sc: Scenario, fab: _Fabric, plan: _Plan, jobs: list[_Job], clock: _Clock,
           skew: list[float], topology_at: float, snapshots: list[Snapshot],
           maint: list[tuple[int, float, float, list[_Flap]]], lost: list[int],
           arrays: list[str], het: int | None) -> GroundTruth:
    def interval(f: _Flap) -> Interval:
        return Interval(clock.at(f.down), clock.at(f.up), round(f.up - f.down, 6))

    def record(f: _Flap) -> FlapRecord:
        return FlapRecord(fab.link_id(f.link), fab.ends(f.link), clock.at(f.down), clock.at(f.up),
                          round(f.up - f.down, 6), f.cause,
                          tuple(fab.switches[sw].name for sw, _ in fab.logging_ends(f.link)
                                if sw not in lost))

    bad = tuple(
        BadCable(fab.link_id(link), "host" if fab.links[link].hca is not None else "switch",
                 fault, cause, fab.ends(link), tuple(interval(f) for f in fl), sides,
                 clock.at(onset) if onset is not None else None)
        for link, fault, cause, fl, sides, onset in plan.bad)
    reboots = tuple(
        SwitchReboot(fab.switches[sw].name, _guid(fab.switches[sw].guid),
                     "leaf" if fab.switches[sw].leaf else "spine", clock.at(at),
                     clock.at(last_up), tuple(fab.link_id(i) for i in links))
        for sw, at, last_up, links in plan.reboots)
    maintenance = tuple(
        Maintenance(fab.hosts[h], clock.at(s), clock.at(e), f"re-image OPS-{4000 + n}",
                    tuple(fab.link_id(fab.hca_link[c]) for c in fab.host_hcas[h]),
                    tuple(interval(f) for f in fl))
        for n, (h, s, e, fl) in enumerate(maint))
    states: dict[str, int] = {}
    for job in jobs:
        state = job.state.split(" ")[0]
        states[state] = states.get(state, 0) + 1
    fabric = {
        "spines": sc.spines, "leaves": sc.leaves, "switches": len(fab.switches),
        "hosts": len(fab.hosts), "hcas": len(fab.hcas), "links": len(fab.links),
        "host_links": sc.host_links, "switch_links": sc.switch_links,
        "hcas_per_host": sc.hcas_per_host,
    }
    return GroundTruth(
        seed=sc.seed, scenario=sc.params(), window_start=clock.at(0.0),
        window_end=clock.at(sc.days * 86400.0), topology_at=clock.at(topology_at), fabric=fabric,
        clock_skew_s={s.name: skew[i] for i, s in enumerate(fab.switches)},
        snapshots=tuple(snapshots), bad_cables=bad, switch_reboots=reboots,
        maintenance=maintenance, reseat_flaps=tuple(record(f) for f in plan.reseats),
        flaps=tuple(record(f) for f in plan.flaps), jobs_total=len(jobs), job_states=states,
        network_failed_jobs=tuple(j.network for j in jobs if j.network is not None),
        non_network_failed_jobs=tuple(j.other for j in jobs
                                      if j.other is not None and j.other.kind != "cancelled"),
        cancelled_jobs=tuple(j.other for j in jobs
                             if j.other is not None and j.other.kind == "cancelled"),
        survived_long_flaps=sum(1 for j in jobs if j.survived),
        lost_switch_logs=tuple(sorted(fab.switches[sw].name for sw in lost)),
        array_jobs=tuple(arrays), het_jobs=(str(het),) if het is not None else (),
    )
