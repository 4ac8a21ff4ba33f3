"""The ground truth: what `generate` injected, as truth.json holds it (`GroundTruth.to_json()`),
and the records it is made of: link ends, flaps, bad cables, switch reboots, maintenance,
failed jobs and the hosts that reported them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from auditor.simulate.scenario.clock import _iso


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
    # frequent_flaps, rare_long_flaps, symbol_errors, switch_reboot, maintenance, reseat;
    # adaptive_routing, port_failover (harmless_flaps); host_reboot (host_reboots)
    cause: str
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
class AgeingOptic:
    """A host port's transceiver that aged (its diagnostics drift), then flapped (issue #14)."""

    link: str
    host: str
    device: str  # mlx5_N
    port_name: str  # mlx5_N/1
    serial_number: str
    part_number: str
    kind: str  # laser_ageing, rx_sag, hot_module
    lane: int | None  # the lane that ages (1-4); None: the whole module (hot_module)
    onset: datetime  # the drift starts
    first_flap: datetime
    flaps: int
    ends: tuple[End, End]


@dataclass(frozen=True, slots=True)
class HarmlessLink:
    """A sound link whose long flaps something absorbed (`harmless_flaps`): not a bad cable."""

    link: str
    kind: str  # "host" (HCA - leaf) or "switch" (leaf - spine)
    mechanism: str  # adaptive_routing (a leaf uplink) or port_failover (an HCA cable)
    ends: tuple[End, End]
    flaps: tuple[Interval, ...]
    # Per flap: the jobs whose traffic crossed it. A host cable: the jobs on its host. A leaf
    # uplink: the jobs with hosts under the leaf and outside it (adaptive routing spreads the
    # flows leaving the leaf over all its uplinks); with `lfts`, the jobs whose connections'
    # routes in the tables of the moment crossed it (`ar_crossed_by` then holds the former).
    crossed_by: tuple[tuple[str, ...], ...]
    ar_crossed_by: tuple[tuple[str, ...], ...] | None = None  # lfts only (absent from JSON else)


@dataclass(frozen=True, slots=True)
class LftCapture:
    """One `dump_lfts.sh` capture (`lfts`): the tables the subnet manager had set when it ran."""

    file: str  # relative to the scenario directory
    at: datetime  # when the capture ran
    routed_at: datetime  # when the SM finished setting these tables (its sweep's end)
    reason: str  # "initial", "reroute" (a link or switch left the routes), "restore"
    avoids: tuple[str, ...]  # leaf-spine links the tables route around (down at that sweep)
    absent_switches: tuple[str, ...]  # switches the dump could not reach (rebooting)
    # HCA ports (`<host>/<mlx5_N>`) some dumped leaf has no route to (their cable is down, or
    # every spine lost its link to their leaf)
    unrouted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reroute:
    """A leaf-spine link down long enough for the subnet manager to route around it (`lfts`)."""

    link: str
    cause: str  # the cause of the flap (frequent_flaps, switch_reboot, adaptive_routing, ...)
    down_at: datetime
    up_at: datetime
    rerouted_at: datetime  # the SM's tables without it were set
    restored_at: datetime | None  # the SM's tables with it again were set (None: after the end)
    captures: tuple[str, ...]  # the captures taken while the tables avoided it, and the next


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
class HostFailedJob:
    """A job killed by its host's crash (`host_reboots`): not a network failure."""

    job_id: str  # as sacct prints it
    nodes: tuple[str, ...]
    host: str  # the host that crashed
    start: datetime
    end: datetime  # sacct's End: slurmctld set the node DOWN (NODE_FAIL), or the batch exited
    state: str  # NODE_FAIL, or FAILED when its peers' NCCL ended it before slurmctld noticed
    exit_code: str  # as sacct prints it
    batch_host: str  # where the batch script (and srun, which writes the log) ran
    log_cut: bool  # the batch host crashed: the log stops at the crash, no peer saw anything
    error_at: datetime | None  # the peers' first NCCL completion error (None: none printed)
    reporters: tuple[Reporter, ...]  # peers whose NCCL names the crashed host, one per rail
    nccl_version: str
    ib_timeout: int
    death_s: float
    nccl_debug: str
    launcher: str


@dataclass(frozen=True, slots=True)
class HostReboot:
    """A host that crashed and rebooted undeclared while it ran a job (`host_reboots`)."""

    host: str
    at: datetime  # the crash; every HCA link of the host went down within 1 s of it
    boot_at: datetime  # the kernel started: slurmctld's boot_time, journalctl's FIRST ENTRY
    up_at: datetime  # the last HCA link up again (the driver loaded, the links trained)
    slurmd_at: datetime  # slurmd registered again
    down_at: datetime  # slurmctld set the node DOWN: the NODE_FAIL jobs' End
    down_by: str  # "not_responding" (SlurmdTimeout ran out first) or "unexpectedly_rebooted"
    resumed_at: datetime | None  # an admin resumed the node; None: still DOWN at the end
    links: tuple[str, ...]  # its HCA links, rail order
    flaps: tuple[Interval, ...]  # one per link, same order
    jobs: tuple[str, ...]  # the job it was running (killed), as sacct prints it
    job_states: tuple[str, ...]
    records: str  # what the site kept: none, slurm (events, slurmctld.log), boots, both


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
    # Transceivers that aged before they flapped (optics only; also in `bad_cables`).
    ageing_optics: tuple[AgeingOptic, ...] = ()
    harmless_links: tuple[HarmlessLink, ...] = ()  # harmless_flaps only (absent from JSON else)
    # host_reboots and host_records only (absent from JSON else): the crashed hosts, the jobs
    # they killed (not in network_failed_jobs) and what the site keeps of its hosts.
    host_reboots: tuple[HostReboot, ...] = ()
    host_failed_jobs: tuple[HostFailedJob, ...] = ()
    host_records: str = "none"
    # lfts only (absent from JSON else): how the tables were made, every capture, and the
    # leaf-spine links the subnet manager routed around.
    routing: dict[str, Any] | None = None
    lft_captures: tuple[LftCapture, ...] = ()
    reroutes: tuple[Reroute, ...] = ()
    schema: int = 1

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types: datetimes as ISO 8601 UTC with `Z`, tuples as lists."""
        data = asdict(self)
        if not self.scenario.get("optics"):
            del data["ageing_optics"]  # without optics truth.json is what it always was
        if not data["harmless_links"]:
            del data["harmless_links"]  # the option off: truth.json as it was without it
        if not self.host_reboots and self.host_records == "none":
            del data["host_reboots"], data["host_failed_jobs"], data["host_records"]
        if self.routing is None:
            del data["routing"], data["lft_captures"], data["reroutes"]  # lfts off
        for link in data.get("harmless_links", []):
            if link["ar_crossed_by"] is None:
                del link["ar_crossed_by"]
        return {"schema": data.pop("schema"), **_jsonable(data)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
