"""What a scenario is made of: `Scenario` (every argument that determines its files),
`ScenarioOptions` (its fields for `generate(**options)`), the node and switch models and the
names of the faults."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from auditor.simulate.scenario.clock import _iso
from auditor.simulate.scenario.releases import parse_nccl_version

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
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,30}")

FAULT_FREQUENT = "frequent_flaps"
FAULT_RARE = "rare_long_flaps"
FAULT_SYMBOL = "symbol_errors"
FAULT_AGEING = "ageing_optics"  # a transceiver that aged, then flapped (optics.py, issue #14)
CAUSE_REBOOT = "switch_reboot"
CAUSE_MAINTENANCE = "maintenance"
CAUSE_RESEAT = "reseat"
# Flaps of sound links that something absorbs (`harmless_flaps`): every job lives through them.
CAUSE_ADAPTIVE_ROUTING = "adaptive_routing"  # a leaf uplink; the leaf routes around it
CAUSE_PORT_FAILOVER = "port_failover"  # a host's HCA cable; NCCL moves the rail's connections
ABSORBED_CAUSES = frozenset({CAUSE_ADAPTIVE_ROUTING, CAUSE_PORT_FAILOVER})
# A host that crashed and rebooted undeclared (`host_reboots`, reboots.py): every rail drops.
CAUSE_HOST_REBOOT = "host_reboot"
# A leaf uplink that stops passing traffic once without going down (`silent_uplink`): no port
# event, no counter, no trap to the SM; only the job whose traffic it carried sees it.
FAULT_SILENT = "silent_stall"
# What a site keeps of its hosts (`host_records`): only sacct's NODE_FAIL, Slurm's node events
# and slurmctld.log, the hosts' boot records, or both.
HOST_RECORDS = ("none", "slurm", "boots", "both")


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
    optics: bool
    ageing_optics: int | None
    outcomes: bool
    harmless_flaps: int
    host_reboots: int
    host_records: str | None
    lfts: bool
    silent_uplink: bool
    cores: int
    pods: int
    job_sizes: tuple[tuple[int, int], ...] | None
    vendor_formats: bool


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything that determines a scenario's files; see the docstrings of the package and of
    its fabric, faults, formats and jobs modules."""

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
    # Transceiver diagnostics (optics.py, issue #14): a daily `ethtool -m` of every host port,
    # and `ageing_optics` modules (None: one per 32 host links, at least 3) that age, then flap.
    optics: bool = False
    ageing_optics: int | None = None
    # Weeks of faults with the swaps technicians made and one bad lot of cables (campaign.py,
    # issue #15); the fault counts left at None are then 0 (the campaign places its own).
    outcomes: bool = False
    # Sound links whose long flaps are absorbed (see harmless.py); 0 leaves every file as it was.
    harmless_flaps: int = 0
    # Hosts that crash and reboot undeclared while running a job (reboots.py, issue #20), and
    # what the site keeps of its hosts (HOST_RECORDS; None: "both" when hosts reboot, else
    # "none"). 0 and None leave every file as it was.
    host_reboots: int = 0
    host_records: str | None = None
    # The switches' forwarding tables (routing.py, issue #23): the subnet manager's routes,
    # its reroutes around leaf-spine links that stay down, `lfts/dump_lfts-<time>.txt`
    # captures, and jobs' fates from the tables in effect. False leaves every file as it was.
    lfts: bool = False
    # One leaf uplink that stalls once, long enough to kill exactly one job, and leaves no
    # other trace (silent.py). False leaves every file as it was.
    silent_uplink: bool = False
    # Three tiers (issue #25): `pods` pods of leaves // pods leaves and spines // pods spines
    # (every leaf linked to every spine of its pod), and `cores` cores in one plane per spine
    # position, each linked to that position's spine of every pod, as trees.FatTree3 lays them
    # out. 0 (two tiers) leaves every file as it was.
    cores: int = 0
    pods: int = 1
    # Job sizes in hosts, drawn with the weights (None: 2..64 hosts, the two-tier benchmark's).
    job_sizes: tuple[tuple[int, int], ...] | None = None
    # The same fabric and switch-side flaps also as an NVIDIA site keeps them (issue #24):
    # ibdiagnet2.db_csv runs, NVOS event tables, UFM REST events under `vendor/`, listed in
    # truth.json's `vendor_formats`. Written beside the Onyx/ibnetdiscover files, from them;
    # False leaves every file as it was.
    vendor_formats: bool = False

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
        if self.cores:
            self._check_tiers()
        elif self.hosts_per_leaf + self.spines > MAX_SWITCH_PORTS or self.leaves > MAX_SWITCH_PORTS:
            raise ValueError(f"switches have at most {MAX_SWITCH_PORTS} ports")
        if self.job_sizes is not None:
            object.__setattr__(self, "job_sizes", tuple((int(s), int(w))
                                                        for s, w in self.job_sizes))
            if not self.job_sizes or min(min(s, w) for s, w in self.job_sizes) < 1:
                raise ValueError("job_sizes: (hosts, weight) pairs, each >= 1")
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
        if not 0 <= self.lost_switch_logs <= self.spines + self.leaves + self.cores:
            raise ValueError("lost_switch_logs must be between 0 and the number of switches")
        if self.ageing_optics is not None and (self.ageing_optics < 0 or not self.optics):
            raise ValueError("ageing_optics needs optics and must be >= 0")
        if self.outcomes and self.days < 14:
            raise ValueError("outcomes needs days >= 14 (swaps are verified after 7 clean days)")
        if self.snapshot_every_h < 0.25 or self.max_clock_skew_s < 0:
            raise ValueError("snapshot_every_h >= 0.25, max_clock_skew_s >= 0")
        if self.harmless_flaps < 0:
            raise ValueError("harmless_flaps must be >= 0")
        if not 0 <= self.host_reboots <= max(1, self.hosts // 4):
            raise ValueError("host_reboots must be between 0 and a quarter of the hosts")
        if self.host_records is not None and self.host_records not in HOST_RECORDS:
            raise ValueError(f"host_records must be one of {', '.join(HOST_RECORDS)}")
        if self.silent_uplink and self.leaves // self.hcas_per_host < 2:
            raise ValueError("silent_uplink needs hosts under two leaves of a rail "
                             "(leaves >= 2 x hcas_per_host)")
        if self.noise_per_switch_per_day < 0 or self.switch_reboots < 0:
            raise ValueError("rates and counts must be >= 0")
        if self.switch_reboots > self.spines + self.leaves + self.cores:
            raise ValueError("more switch reboots than switches")
        counts = self.fault_counts()
        if min(counts.values()) < 0:
            raise ValueError("fault counts must be >= 0")
        cables = sum(counts[k] for k in (FAULT_FREQUENT, FAULT_RARE, FAULT_SYMBOL, CAUSE_RESEAT))
        cables += self.harmless_flaps + self.silent_uplink
        if cables > (self.host_links + self.switch_links) // 2:
            raise ValueError("too many faulty cables for this fabric")
        if counts[CAUSE_MAINTENANCE] > max(1, self.hosts // 4):
            raise ValueError("too many re-imaged hosts for this fabric")

    def _check_tiers(self) -> None:
        if self.cores < 0 or self.pods < 1 or self.leaves % self.pods or self.spines % self.pods:
            raise ValueError("three tiers: pods >= 1 dividing leaves and spines, cores >= 0")
        if self.cores % self.spines_per_pod:
            raise ValueError("cores must be a multiple of the spines per pod (a plane each)")
        if self.leaves_per_pod % self.hcas_per_host:
            raise ValueError("the leaves per pod must be a multiple of hcas_per_host")
        if max(self.hosts_per_leaf + self.spines_per_pod,
               self.leaves_per_pod + self.cores // self.spines_per_pod,
               self.pods) > MAX_SWITCH_PORTS:
            raise ValueError(f"switches have at most {MAX_SWITCH_PORTS} ports")
        if self.lfts or self.silent_uplink or self.outcomes or self.harmless_flaps:
            raise ValueError("three tiers do not model lfts, silent_uplink, outcomes or "
                             "harmless_flaps")

    @property
    def spines_per_pod(self) -> int:
        return self.spines // self.pods if self.cores else self.spines

    @property
    def leaves_per_pod(self) -> int:
        return self.leaves // self.pods if self.cores else self.leaves

    @property
    def hosts(self) -> int:
        return self.leaves // self.hcas_per_host * self.hosts_per_leaf

    @property
    def records(self) -> str:
        """What the site keeps of its hosts (`host_records` with its default applied)."""
        if self.host_records is not None:
            return self.host_records
        return "both" if self.host_reboots else "none"

    @property
    def host_links(self) -> int:
        return self.hosts * self.hcas_per_host

    @property
    def switch_links(self) -> int:
        if self.cores:
            return self.leaves * self.spines_per_pod + self.spines * (self.cores
                                                                      // self.spines_per_pod)
        return self.leaves * self.spines

    @property
    def end(self) -> datetime:
        return self.start.astimezone(UTC) + timedelta(days=self.days)

    def fault_counts(self) -> dict[str, int]:
        """Fault counts with the None ones scaled to the fabric (about one per 1,000 links)."""
        links = self.host_links + self.switch_links

        def pick(value: int | None, default: int) -> int:
            return default if value is None else value

        def fault(value: int | None, default: int) -> int:
            # The outcomes campaign places every fault with an outcome itself.
            return pick(value, 0 if self.outcomes else default)

        return {
            FAULT_FREQUENT: fault(self.frequent_flappers, max(1, links // 1000)),
            FAULT_RARE: fault(self.rare_flappers, max(1, links // 1500)),
            FAULT_SYMBOL: fault(self.symbol_error_cables, max(1, links // 1000)),
            CAUSE_REBOOT: self.switch_reboots,
            CAUSE_MAINTENANCE: pick(self.reimaged_hosts, max(1, self.hosts // 200)),
            CAUSE_RESEAT: fault(self.reseat_flaps, max(2, links // 500)),
        }

    def params(self) -> dict[str, Any]:
        out = asdict(self)
        out["start"] = _iso(self.start.astimezone(UTC))
        out["nccl_versions"] = list(self.nccl_versions)
        out["ib_timeouts"] = list(self.ib_timeouts)
        if not self.optics:
            # Off (the default): truth.json stays byte for byte what it was before optics.
            del out["optics"], out["ageing_optics"]
        if not self.outcomes:
            del out["outcomes"]  # off (the default): truth.json is what it was before #15
        if not self.harmless_flaps:
            del out["harmless_flaps"]  # off: truth.json stays what it was before the option
        if not self.host_reboots:
            del out["host_reboots"]  # off: truth.json stays what it was before the option
        if self.host_records is None:
            del out["host_records"]
        if not self.lfts:
            del out["lfts"]  # off: truth.json stays what it was before the option
        if not self.silent_uplink:
            del out["silent_uplink"]
        if not self.cores:
            del out["cores"], out["pods"]  # two tiers: truth.json is what it was before #25
        if self.job_sizes is None:
            del out["job_sizes"]
        else:
            out["job_sizes"] = [list(pair) for pair in self.job_sizes]
        if not self.vendor_formats:
            del out["vendor_formats"]  # off: truth.json stays what it was before the option
        return out
