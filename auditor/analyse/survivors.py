"""Healthy-job evidence (issue #15): jobs whose traffic crossed a link while it was down for
longer than they could have waited, and that completed anyway (or ran on long past it: a
failure dated later, a cancel or time limit past any watchdog's timeout).

An RC queue pair that loses its path dies after its NCCL death time (`auditor.nccl`). A job that
was running across a link through a flap longer than that, and ran on to COMPLETED, was not
hurt by it: something carried its traffic (NCCL's port failover, from 2.29 when enabled;
adaptive routing around a leaf uplink) or the flap was not where its traffic went. Such flaps
are evidence against a deadly cable; `rank.py` weighs them (killing evidence always wins).

Whether a job's traffic crossed a link is what this module takes care with:

- a job on one host never crosses a cable: NCCL talks within a node over NVLink/PCIe/SHM;
- an HCA cable carries a job's traffic only if the job used that HCA (that rail). What its logs
  say decides: the HCAs its errors name, its `NET/IB : Using` lists (the host's own, else the
  job's other hosts': nodes of one job run the same NCCL settings), NCCL_IB_HCA as NCCL printed
  it; a host with one HCA has no choice. Unknown: the crossing counts `RAIL_UNKNOWN`;
- a leaf uplink carries a job's traffic only if the job has hosts (on that leaf's rail) under
  the leaf and outside it, and then only the flows the routing puts on that spine: see
  `_uplink_share`;
- NCCL opens only the ports that are up when it starts (ncclIbInit skips a port that is not
  ACTIVE), so the job must have been running `RAN_BEFORE` before the flap, and must have run
  `RAN_AFTER` past the link's return (a job that ended with the flap proves nothing);
- the flap must be longer than the longest the job could have waited: its own NCCL version and
  NCCL_IB_TIMEOUT when its log is an INFO log (INFO prints NCCL_IB_TIMEOUT when set); else the
  longest wait of any NCCL in use here or any NCCL_IB_TIMEOUT a log of the window shows (a
  WARN-only log does not say whether the job set one).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypeAlias

from auditor import graph
from auditor.analyse.evidence import (
    HealthyJob,
    HostResolver,
    LinkEvidence,
    jobs_by_host,
)
from auditor.analyse.flaps import Flap
from auditor.config import RankingSettings
from auditor.models import Fabric, LinkKey, NodeType
from auditor.nccl import (
    RETRY_CNT_DEFAULT,
    UNKNOWN_BOUNDS,
    death_s,
    default_ib_timeout,
    ib_hca_selects,
    job_death,
)

if TYPE_CHECKING:
    from auditor.store.rows import (
        FinishedJobRow,
        JobDuringRow,
        JobErrorRow,
        JobLogRow,
        JobLogUsingRow,
    )

# NCCL starts tens of seconds after the job (Python, torch, the rendezvous): before that no port
# is open, and a port that is down when NCCL starts is never used.
RAN_BEFORE = timedelta(minutes=2)
# Still running this long after the link came back: PyTorch's NCCL watchdog ends a collective
# stuck on a broken connection after its timeout (10 min by default), so such a job was not
# stuck on it (the margin the survivors shown beside the flaps already use).
RAN_AFTER = timedelta(minutes=10)
# A job that COMPLETED was not broken by a flap it ran through (a broken connection ends in an
# NCCL error or a watchdog abort, never in exit 0): it needs only to have run past the link's
# return, by more than the clocks of switches and hosts may differ.
RAN_AFTER_COMPLETED = timedelta(minutes=1)
# A job the user cancelled or the time limit stopped was not broken by a flap it ran through if
# it ran on this long past the link's return: a connection the flap broke ends in an NCCL error
# the watchdog aborts on at once, and a collective stuck without one is aborted by PyTorch's
# watchdog after its timeout, 10 min by default for NCCL (pytorch/pytorch
# torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp kProcessGroupNCCLDefaultTimeout; 30 min for
# the other backends, init_process_group's documented default), so a job still running 30 min on
# was not hung by it (issue #23: a job cancelled 44 minutes after a harmless flap it crossed).
STOPPED = frozenset({"CANCELLED", "TIMEOUT"})
STOPPED_AFTER = timedelta(minutes=30)
# A flap measured on second-resolution stamps may read a little long.
MARGIN_S = 0.5
# How sure a crossing of an HCA cable is when nothing says which HCAs the job used: NCCL opens
# every HCA of a host by default, but NCCL_IB_HCA (or a GPU without a NIC of its own) may leave
# one out.
RAIL_UNKNOWN = 0.5
# Sites raise NCCL_IB_TIMEOUT to ride out port flaps (Databricks' GPU reliability post,
# 2026-07-01: "tuned their NCCL_IB_TIMEOUT defaults to be more resilient to transient port-down
# events"; NVIDIA's NCCL user guide, Environment Variables, NCCL_IB_TIMEOUT: increasing it "can
# help on very large networks"), and only an INFO log prints the value a job set. A job whose
# own log does not say may have waited 2^TIMEOUT_RAISE times the site's wait: a flap shorter
# than that is a half-sure trial of it (issue #23: a bad cable's 87 s flap was cleared by a job
# with NCCL_IB_TIMEOUT=22, 137 s, in WARN-only logs).
TIMEOUT_RAISE = 2
# A ring over hosts under the leaf and elsewhere crosses the leaf's edge at least twice, and
# NCCL's channels run both ways: at least this many flows cross a leaf's uplinks.
_EDGE_FLOWS = 4


@dataclass(slots=True)
class _Rails:
    """What a job's logs say about its NCCL and the HCAs it used, by fabric host."""

    using: dict[str, set[str]] = field(default_factory=dict)  # once `_read_using` has read it
    named: dict[str, set[str]] = field(default_factory=dict)
    ib_hca: str | None = None
    versions: list[str] = field(default_factory=list)
    env: dict[str, int] = field(default_factory=dict)
    with_using: list[int] = field(default_factory=list)  # the logs with Using lists

    @property
    def info(self) -> bool:
        """An INFO log: NCCL printed its Using lists and any setting made by environment."""
        return bool(self.with_using) or self.ib_hca is not None or bool(self.env)


def _rails(logs: Sequence[JobLogRow], matched: Mapping[int, str],
           errors: Mapping[str, Sequence[JobErrorRow]],
           host_of: Callable[[str], str | None]) -> dict[str, _Rails]:
    out: dict[str, _Rails] = defaultdict(_Rails)
    for lg in logs:
        job_id = lg["job_id"] or matched.get(lg["source_id"])
        if job_id is None:
            continue
        r = out[job_id]
        if lg["using_pairs"]:
            r.with_using.append(lg["source_id"])
        r.ib_hca = r.ib_hca or lg["ib_hca"]
        r.versions += [v for v in lg["nccl_versions"] if v not in r.versions]
        for key, value in (("NCCL_IB_TIMEOUT", lg["ib_timeout"]),
                           ("NCCL_IB_RETRY_CNT", lg["ib_retry_cnt"])):
            if value is not None:
                r.env.setdefault(key, value)
    for job_id, errs in errors.items():
        for e in errs:
            if e["hca"] and e["host"] and (h := host_of(e["host"])) is not None:
                out[job_id].named.setdefault(h, set()).add(e["hca"])
    return out


# (log source ids) -> those logs' Using lists (Store.job_log_using)
UsingOf: TypeAlias = "Callable[[Sequence[int]], Sequence[JobLogUsingRow]]"


def _read_using(rails: Mapping[str, _Rails], job_ids: Collection[str], using_of: UsingOf,
                host_of: Callable[[str], str | None]) -> None:
    """Read the Using lists of the logs of `job_ids` into their rails, in one read, once per
    ranking (`_healthy_jobs`): only the jobs the healthy-job evidence judges need them
    (issue #25: a month's logs named 3.8 million (host, HCA) pairs at 65,536 GPUs)."""
    owner = {src: job_id for job_id in job_ids if (r := rails.get(job_id)) is not None
             for src in r.with_using}
    for row in using_of(sorted(owner)):
        r = rails[owner[row["source_id"]]]
        # Each host's HCAs first, then the host resolved once: a 2,048-host job's log names
        # 16,384 pairs.
        devices: dict[str, set[str]] = defaultdict(set)
        for host, device in zip(row["hosts"], row["devices"], strict=True):
            devices[host].add(device)
        for host, named in devices.items():
            if (h := host_of(host)) is not None:
                r.using.setdefault(h, set()).update(named)


def _rail_use(r: _Rails | None, host: str, device: str | None, port: int,
              hcas_on_host: int, gpus_per_host: float | None = None) -> tuple[float, str]:
    """How sure it is that the job used this HCA of `host`: 1, 0 (it did not) or
    RAIL_UNKNOWN, and what says so. A job whose GPUs fill its hosts (at least one per HCA)
    uses every rail: NCCL sends each GPU's traffic through its local NIC
    (ncclTopoGetLocalNet, src/graph/topo.cc:1635 at NVIDIA/nccl v2.28.7-1: the NETs of the
    best path from that GPU), and a rail-optimised server gives each GPU its own."""
    if r is not None and device is not None:
        if device in r.named.get(host, ()):
            return 1.0, "its errors name the HCA"
        if host in r.using:
            return (1.0, "its Using list names the HCA") if device in r.using[host] else (0.0, "")
        if r.using:  # the job's other hosts: one job runs one NCCL configuration
            used = set().union(*r.using.values())
            return (1.0, "its Using lists name the HCA") if device in used else (0.0, "")
        if r.ib_hca is not None:
            picked = ib_hca_selects(r.ib_hca, device, port)
            return (1.0, f"NCCL_IB_HCA={r.ib_hca} picks the HCA") if picked else (0.0, "")
    if hcas_on_host == 1:
        return 1.0, "the host's only HCA"
    if gpus_per_host is not None and gpus_per_host >= hcas_on_host:
        return 1.0, "its GPUs fill the host, one HCA each"
    return RAIL_UNKNOWN, "rail not known"


def _uplink_share(uplinks: int) -> float:
    """The chance that a job with hosts under a leaf and outside it sent traffic over one given
    uplink of that leaf: each of its (at least `_EDGE_FLOWS`) flows leaving or entering the leaf
    takes one of the leaf's K uplinks, picked by destination (D-mod-K, ftree, up/down). Adaptive
    routing would spread every flow over all K (a sure crossing), but the routing is not seen
    here, so the lower figure is used."""
    k = max(uplinks, 1)
    return 1.0 - (1.0 - 1.0 / k) ** _EDGE_FLOWS


def _longest_wait(settings: Sequence[tuple[int, int | None]], cfg: RankingSettings,
                  in_use: Sequence[str]) -> float:
    """The longest any job here may wait for a dead link, when its own log does not say:
    `settings` holds the (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT) its logs set by environment."""
    waits = [job_death([], {}, site_version=cfg.nccl_version, site_timeout=cfg.nccl_ib_timeout,
                       versions_in_use=in_use).hi]
    waits += [death_s(timeout, retry if retry is not None else RETRY_CNT_DEFAULT)
              for timeout, retry in settings]
    return max(waits)


# (from, to, fabric host): the jobs that ran on the host at some moment of the span are read.
Ask = tuple[datetime, datetime, str]


@dataclass(slots=True)
class _Plan:
    """What `_healthy_plan` found to ask about, and what `_healthy_jobs` judges with."""

    informative: dict[LinkKey, list[tuple[int, datetime, datetime, float]]]
    crossings: dict[LinkKey, tuple[dict[str, tuple[str | None, int]], float, bool]]
    wanted: set[str]
    asks: list[Ask]
    rails: dict[str, _Rails]
    wait_of: Callable[[str], float]
    using_of: UsingOf | None


def _healthy_plan(flaps_by_link: Mapping[LinkKey, Sequence[Flap]], host_of: Callable[
                      [str], str | None], fabric: Fabric, g: graph.FabricGraph,
                  logs: Sequence[JobLogRow], matched: Mapping[int, str],
                  errors: Mapping[str, Sequence[JobErrorRow]], cfg: RankingSettings,
                  in_use: Sequence[str], settings: Sequence[tuple[int, int | None]],
                  using_of: UsingOf | None = None) -> _Plan | None:
    """What the healthy-job evidence needs to read: the flaps some job may have outlived, the
    hosts whose traffic may cross them and the spans to ask about (None: nothing to ask)."""
    site_wait = _longest_wait(settings, cfg, in_use)
    rails = _rails(logs, matched, errors, host_of)

    # Thousands of logs share a handful of NCCL versions and settings.
    waits: dict[tuple[tuple[str, ...], tuple[tuple[str, int], ...]], float] = {}

    def wait_of(job_id: str) -> float:
        r = rails.get(job_id)
        if r is None or not r.info:
            return site_wait
        key = (tuple(r.versions), tuple(sorted(r.env.items())))
        if key not in waits:
            waits[key] = job_death(r.versions, r.env, site_version=cfg.nccl_version,
                                   site_timeout=cfg.nccl_ib_timeout, versions_in_use=in_use).hi
        return waits[key]

    shortest = min([site_wait, *(wait_of(j) for j in rails)])
    if math.isinf(shortest):
        return None
    # (index, down, up, seconds) of the flaps some job may have outlived; a link-down only a
    # counter saw has no time to hold a job against.
    informative: dict[LinkKey, list[tuple[int, datetime, datetime, float]]] = {}
    for link, fl in flaps_by_link.items():
        mine = [(i, f.down_at, f.up_at, f.duration_s or 0.0) for i, f in enumerate(fl)
                if f.counted_from is None and f.down_at is not None and f.up_at is not None]
        mine = [m for m in mine if m[3] - MARGIN_S > shortest]
        if mine:
            informative[link] = mine
    if not informative:
        return None
    crossings = {link: c for link in informative if (c := _crossing(link, fabric, g))}
    wanted = {h for c in crossings.values() for h in c[0]}
    # Each flap's span on the hosts whose traffic may cross its link, not every span on every
    # such host (at 65,536 GPUs x 30 days, the month's jobs, issue #25).
    asks = [(down - RAN_BEFORE, up + RAN_AFTER, h) for link, c in crossings.items()
            for _, down, up, _ in informative[link] for h in c[0]]
    return _Plan(informative, crossings, wanted, asks, rails, wait_of, using_of)


# Whether the forwarding tables route a job's traffic over a link at a moment: (the job's fabric
# hosts in its order, the rail's HCA device, the link, the moment) -> "ring" (the routes of its
# NCCL ring cross it), "pairs" (only those of pairs its ring does not use), "no", or None when
# the tables cannot say.
Crosses = Callable[[Sequence[str], str | None, LinkKey, datetime], str | None]


# PyTorch's NCCL watchdog checks each communicator for an NCCL async error once a loop and
# sleeps kWatchdogThreadSleepMillis between loops: 1000 ms at pytorch/pytorch@0007e752
# torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, 10,000 in older releases, 100 in newer
# ones. So a broken connection's error reaches the watchdog's log line within 10 s.
WATCHDOG_POLL = timedelta(seconds=10)
# PyTorch's stamped lines that report an NCCL error the watchdog caught (auditor/parse/joblog:
# `remote_error` is its "NCCL error ... remote process exited or there was a network error",
# `watchdog_error` its other watchdog exceptions).
_SURFACED = frozenset({"remote_error", "watchdog_error"})


def _failed_later(jobs: Sequence[JobDuringRow], errors: Mapping[str, Sequence[JobErrorRow]],
                  wait_of: Callable[[str], float]) -> dict[str, datetime]:
    """The jobs that did not complete but whose log dates their trouble: each with the earliest
    moment its trouble can have begun. NCCL prints a broken connection's error when the QP
    dies, its death time after the flap began, so a job whose first such error came
    `RAN_AFTER` past a flap's end had outlived that flap and died of something later. Untimed
    NCCL errors (WARN-only logs) are dated by PyTorch's stamped line of the error it caught (an
    error, not a timeout): the error reached it within `WATCHDOG_POLL`, and the connection died at
    most the job's death time before that. A failed job with no dated trouble, or whose
    watchdog timed out (a hang: the timeout is the user's, any length), is left out."""
    out: dict[str, datetime] = {}
    for job in jobs:
        if job["state"] == "COMPLETED":
            continue
        rows = errors.get(job["job_id"], ())
        net = [e for e in rows if e["network"]]
        first = [e["event_at"] or e["not_before"] for e in net]
        if net and all(t is not None for t in first):
            out[job["job_id"]] = min(t for t in first if t is not None)
            continue
        if any(e["kind"] == "watchdog_timeout" for e in rows):
            continue
        caught = [e["event_at"] for e in rows
                  if e["kind"] in _SURFACED and e["event_at"] is not None]
        wait = wait_of(job["job_id"])
        if caught and not math.isinf(wait):
            out[job["job_id"]] = min(caught) - WATCHDOG_POLL - timedelta(seconds=wait)
    return out


def _healthy_jobs(plan: _Plan, jobs: list[FinishedJobRow], host_of: Callable[[str], str | None],
                  fabric: Fabric, crosses: Crosses | None = None,
                  failed_later: Mapping[str, datetime] | None = None
                  ) -> dict[LinkKey, list[HealthyJob]]:
    """Per link, the COMPLETED jobs whose traffic crossed it through one of its flaps longer
    than they could wait (see the module docstring), of the `jobs` read for the plan. With
    forwarding tables (`crosses`, issue #23) a leaf uplink's crossing is known, not a share."""
    informative, crossings, wanted, rails, wait_of = (
        plan.informative, plan.crossings, plan.wanted, plan.rails, plan.wait_of)
    # A month of a large fabric returns thousands of jobs with tens of hosts each: each name is
    # resolved once, and only the hosts whose traffic may cross a flapping link are indexed,
    # by the names that resolve to them. A job's own hosts are worked out only once it ran
    # through a flap next to them (at 30d, 13,000 jobs' host sets were 20-28 ms, issue #13).
    names = {x: host_of(x) for x in set().union(*[job["hosts"] for job in jobs])}
    near = {x: h for x, h in names.items() if h and h in wanted}
    near_names = set(near)
    by_host: dict[str, list[FinishedJobRow]] = defaultdict(list)
    for job in jobs:
        if hit := near_names.intersection(job["hosts"]):
            for h in {near[x] for x in hit}:
                by_host[h].append(job)
    hosts_of: dict[int, frozenset[str]] = {}

    def job_hosts_of(job: FinishedJobRow) -> frozenset[str]:
        found = hosts_of.get(id(job))
        if found is None:
            found = hosts_of[id(job)] = frozenset(filter(None, map(names.__getitem__,
                                                                    job["hosts"])))
        return found

    hca_count: dict[str, int] = defaultdict(int)
    for n in fabric.nodes.values():
        if n.node_type == NodeType.HCA:
            hca_count[n.name] += 1

    # First the jobs that ran through each flap long enough to tell, then, with the Using lists
    # of only those jobs read, which rail each used (issue #25: the Using lists of every job
    # next to a flap were 2 s of `suspects --since 30d` at 65,536 GPUs).
    judged: dict[LinkKey, list[tuple[int, datetime, float, float, FinishedJobRow]]] = {}
    for link, crossing in sorted(crossings.items()):
        spans_of = informative[link]
        hosts_here, share, uplink = crossing
        # Each job once, where the first of its hosts here (in order) lists it: whether it
        # crossed depends on the job and the flap, not on the host it was found by (a job on
        # 10 hosts under a flapping leaf was judged 10 times per flap, issue #13).
        candidates: list[FinishedJobRow] = []
        listed: set[int] = set()
        for h in sorted(hosts_here):
            for job in by_host.get(h, []):
                if id(job) not in listed:
                    listed.add(id(job))
                    candidates.append(job)
        # when each ran, for one pass per flap over plain tuples
        # (a COMPLETED job need not have run past the link's return: one the flap had broken
        # would have ended FAILED, its watchdog aborting the stuck collective, at most its
        # death time after the flap began; but its last RAN_AFTER may have been idle on the
        # network, a final checkpoint or teardown, so it must have ended RAN_AFTER past that
        # moment: a job that completed 14 minutes into a 15-minute flap of its rail's cable
        # lived through it, issue #23)
        times = [(job["start_at"], job["end_at"], job["state"] == "COMPLETED")
                 for job in candidates]
        for i, down, up, lasted in spans_of:
            began, back = down - RAN_BEFORE, up + RAN_AFTER
            through = [k for k, (start, end, done) in enumerate(times) if start <= began and (
                end >= back or (done and end - RAN_AFTER >= down))]
            for job in map(candidates.__getitem__, through):
                job_id = job["job_id"]
                wait = wait_of(job_id)
                if not lasted - MARGIN_S > wait:
                    continue
                if job["end_at"] < up + RAN_AFTER_COMPLETED and (
                        job["end_at"] - RAN_AFTER < down + timedelta(seconds=wait)):
                    continue  # ended inside the flap too soon after its NCCL would give up
                if failed_later and job_id in failed_later and failed_later[job_id] < back:
                    continue  # its trouble began during or soon after this flap
                if job["state"] in STOPPED and job["end_at"] < up + STOPPED_AFTER:
                    continue  # cancelled or stopped before a watchdog would have ended it
                job_hosts = job_hosts_of(job)
                if len(job_hosts) < 2:
                    continue  # one node: its ranks talk over NVLink, PCIe or shared memory
                if uplink and job_hosts <= hosts_here.keys():
                    continue  # all its hosts under this leaf: its traffic never leaves it
                judged.setdefault(link, []).append((i, down, lasted, wait, job))
    if plan.using_of is not None:
        _read_using(rails, {j[4]["job_id"] for found in judged.values() for j in found},
                    plan.using_of, host_of)

    out: dict[LinkKey, list[HealthyJob]] = {}
    for link, through_flaps in judged.items():
        hosts_here, share, uplink = crossings[link]
        where = f", a leaf uplink carrying {share:.2f} of its flows" if uplink else ""
        here = set(hosts_here)
        found: list[HealthyJob] = []
        seen: set[tuple[int, str]] = set()  # (flap, job): a requeued job's runs count once
        for i, down, lasted, wait, job in through_flaps:
            job_id = job["job_id"]
            if (i, job_id) in seen:
                continue
            job_hosts = job_hosts_of(job)
            r = rails.get(job_id)
            per_host = job["gpus"] / len(job["hosts"]) if job["gpus"] and job["hosts"] \
                else None
            best = (0.0, "")
            for host in sorted(job_hosts & here):
                device, port = hosts_here[host]
                best = max(best, _rail_use(r, host, device, port, hca_count[host],
                                           per_host))
            if best[0] <= 0.0:
                continue  # it did not use this rail
            weight, how = best[0] * share, best[1] + where
            if uplink and crosses is not None:
                device = hosts_here[min(job_hosts & here)][0]
                ordered = list(dict.fromkeys(
                    y for x in job["hosts"] if (y := names[x]) is not None))
                routed = crosses(ordered, device, link, down)
                if routed == "no":
                    continue  # its routes kept off this uplink when it went down
                if routed == "ring":
                    weight, how = best[0], best[1] + (
                        ", its NCCL ring's routes cross it (forwarding tables)")
                elif routed == "pairs":
                    how = best[1] + (", the routes of some of its host pairs cross it, not "
                                     f"its ring's: {share:.2f} of its flows")
            if not (r is not None and r.info) and lasted - MARGIN_S <= (
                    wait * 2 ** TIMEOUT_RAISE):
                weight *= 0.5
                how += (f", NCCL_IB_TIMEOUT not known (a job that set it {TIMEOUT_RAISE} "
                        f"higher waits {wait * 2 ** TIMEOUT_RAISE:.0f} s)")
            seen.add((i, job_id))
            found.append(HealthyJob(job_id, i, round(weight, 3), how))
        if found:
            out[link] = found
    return out


# -- jobs that ran through a flap and lived: one read, two kinds of evidence ------------------


def lived_through(links: dict[LinkKey, LinkEvidence],
                  jobs_asked: Callable[[list[Ask]], Sequence[JobDuringRow]],
                  resolver: HostResolver, fabric: Fabric, g: graph.FabricGraph,
                  logs: Sequence[JobLogRow], matched: Mapping[int, str],
                  errors: Mapping[str, Sequence[JobErrorRow]], cfg: RankingSettings,
                  in_use: Sequence[str], settings: Sequence[tuple[int, int | None]],
                  crosses: Crosses | None = None,
                  scheduled: Callable[[str, datetime, datetime], bool] | None = None,
                  using_of: UsingOf | None = None) -> None:
    """The jobs that ran through the window's flaps and lived, from one read (issue #22: one
    mechanism): on each link, `survived` (the jobs on an HCA's host that ran through a flap of
    its cable longer than any NCCL since 2.14 waits and did not die of it: the flap did not
    touch their traffic, shown beside the flaps) and `healthy` (the COMPLETED jobs whose
    traffic crossed the link through a flap longer than they could wait, with how sure the
    crossing is: they take points off its flaps). `jobs_asked(asks)`: the jobs running
    during one of the (from, to, host) asks' spans on a host named by a name that resolves to
    its fabric host, each once with all its hosts (more may come back). `in_use` and `settings`:
    the NCCL versions and the (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT) pairs of all the logs.
    `scheduled(host, lo, hi)`: whether the scheduler's records cover the host over that span;
    a long flap of a host's cable that such records show no job running through goes to the
    link's `idle_flaps` (its length harmed no job). `using_of`: the Using lists of logs
    (Store.job_log_using), read only for the jobs judged (without, none are known)."""
    long_flaps, survivor_asks = _survivor_plan(links, fabric)
    plan = _healthy_plan({k: le.flaps for k, le in links.items() if le.flaps}, resolver.host,
                         fabric, g, logs, matched, errors, cfg, in_use, settings, using_of)
    asks = survivor_asks + (plan.asks if plan is not None else [])
    if not asks:
        return
    jobs = list(jobs_asked(asks))
    if survivor_asks:
        _mark_survivors(links, jobs_by_host(jobs, resolver, long_flaps), fabric, scheduled)
    if plan is not None:
        # ran through a flap whole and COMPLETED, or failed of something else long after it:
        # judged per flap below
        later = _failed_later(jobs, errors, plan.wait_of)
        completed = [j for j in jobs if (j["state"] in STOPPED or j["state"] == "COMPLETED"
                                         or j["job_id"] in later)
                     and j["start_at"] is not None and j["end_at"] is not None]
        for link, found in _healthy_jobs(plan, completed, resolver.host, fabric,
                                         crosses, later).items():
            links[link].healthy = found


# NCCL 2.14 onwards waits at most this long for a dead link at its default NCCL_IB_TIMEOUT
# (20 from 2.23.4: 34 s): a job that ran on a cable's host through a longer flap and lived was
# not on that cable.
_DEADLY_S = death_s(default_ib_timeout(UNKNOWN_BOUNDS[1]) or 20)
_SURVIVED_AFTER = timedelta(minutes=10)  # still running this long after the link came back


def _long(f: Flap) -> bool:
    return f.down_at is not None and f.up_at is not None and (f.duration_s or 0) > _DEADLY_S


def _hca_hosts(le: LinkEvidence, fabric: Fabric) -> set[str]:
    return {fabric.nodes[g].name for g, _ in le.link
            if g in fabric.nodes and fabric.nodes[g].node_type == NodeType.HCA}


def _survivor_plan(links: dict[LinkKey, LinkEvidence], fabric: Fabric
                   ) -> tuple[list[tuple[datetime, datetime]], list[Ask]]:
    """The spans of the long flaps, and each on its cable's hosts: only the jobs that ran on
    such a host during its cable's flap are asked for (issue #13: at 30 days 100 jobs of the
    5,410 that ran during one; issue #25: every long flap's span on every such host was most
    of a 65,536-GPU month's jobs)."""
    long_flaps: list[tuple[datetime, datetime]] = []
    asks: list[Ask] = []
    for le in links.values():
        spans = [(f.down_at, f.up_at) for f in le.flaps
                 if f.down_at is not None and f.up_at is not None and _long(f)]
        if spans:
            long_flaps += spans
            asks += [(lo, hi, h) for h in sorted(_hca_hosts(le, fabric)) for lo, hi in spans]
    return long_flaps, asks


def _mark_survivors(links: dict[LinkKey, LinkEvidence],
                    by_host: dict[str, list[JobDuringRow]], fabric: Fabric,
                    scheduled: Callable[[str, datetime, datetime], bool] | None) -> None:
    for le in links.values():
        hosts = _hca_hosts(le, fabric)
        for f in le.flaps:
            if not hosts or f.down_at is None or f.up_at is None or not _long(f):
                continue
            down, up = f.down_at, f.up_at
            # No job on the host at any moment of the flap, by records that cover it: a
            # cable's downtime costs a job only when one runs on its host (issue #23).
            if scheduled is not None and all(scheduled(h, down, up) for h in hosts) and not any(
                    job["start_at"] <= up and (job["end_at"] is None or job["end_at"] >= down)
                    for h in hosts for job in by_host.get(h, [])):
                le.idle_flaps.append(f)
            for h in hosts:
                for job in by_host.get(h, []):
                    # Still running 10 minutes after the link came back: it lived through it.
                    after = job["end_at"] is None or job["end_at"] > f.up_at + _SURVIVED_AFTER
                    if job["start_at"] <= f.down_at and after:
                        le.survived.add(job["job_id"])


def _crossing(link: LinkKey, fabric: Fabric, g: graph.FabricGraph
              ) -> tuple[dict[str, tuple[str | None, int]], float, bool] | None:
    """The hosts whose traffic may cross `link`, each with the HCA (device, port) it would use,
    the share of a crossing job's flows that do, and whether it is a leaf uplink: an HCA cable,
    its host, all of them; a leaf uplink, the hosts cabled to the leaf, `_uplink_share`. Other
    links (between spines, or not in the fabric): None, no evidence."""
    ends = [(fabric.nodes.get(guid), port) for guid, port in link]
    if any(n is None for n, _ in ends) or len(ends) != 2:
        return None
    hcas = [(n, p) for n, p in ends if n is not None and n.node_type == NodeType.HCA]
    if hcas:
        node, port = hcas[0]
        return {node.name: (node.device, port)}, 1.0, False
    leaves = [n for n, _ in ends if n is not None and n.guid in g and graph.is_leaf(g, n.guid)]
    if len(leaves) != 1:
        return None
    leaf = leaves[0].guid
    under: dict[str, tuple[str | None, int]] = {}
    for peer in g.neighbors(leaf):
        hca = fabric.nodes.get(peer)
        if hca is not None and hca.node_type == NodeType.HCA:
            # The HCA's own port on this leaf (a dual-port HCA cabled twice keeps the lower).
            ports = sorted(k[1] if k[0] == peer else k[3] for k in g[leaf][peer])
            under.setdefault(hca.name, (hca.device, ports[0]))
    return under, _uplink_share(len(graph.uplinks(g, leaf))), True


__all__ = ["HealthyJob", "lived_through"]
