"""Blame: which failed job died of what (issue #22: out of `correlate.gather`).

Each failed job of the window is first read as facts (`failed_jobs`: its hosts, its network
errors, its NCCL death time and the interval its fault began in), so that NODE_FAILs and the
hosts a job's peers lost can count as host evidence before the host events are judged; then each
is blamed (`blame_jobs`): killed by its host (issue #20), by the first flap on its footprint
that lasted at least its death time, by the links its failing NCCL pairs vote for (007), or by
nothing the evidence shows. A job whose logs show only GPU errors or OOM is blamed on nothing in
the network.

- Time of the first error: its own stamp; for untimed NCCL lines the interval between the
  stamped lines around it; else the watchdog's stamp less the time the stuck collective ran;
  else the job's sacct Start and End. The interval is kept and used, never a guessed stamp. A
  port-error async event is printed when the port goes down: the fault's own moment.
- Rails: an error that names its HCA (or whose rank's `NET/IB : Using` list does) puts that
  rail on trial: that HCA's cable, the same rail on the job's other hosts and that rail's leaf
  uplinks, never the host's other rails. A port-error async event of an HCA votes for its cable.
- A link-down only LinkDownedCounter saw (no log, e.g. the switch's syslog is lost) joins a job
  whose NCCL named that HCA between the two counter readings: it is the flap that killed it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor import graph
from auditor.analyse import hosts
from auditor.analyse.evidence import (
    DURATION_TOLERANCE_S,
    HOST_STATE,
    NETWORK_STATES,
    WATCHDOG_AFTER,
    WATCHDOG_BEFORE,
    Cables,
    Hcas,
    HostResolver,
    LinkEvidence,
    NodeEvent,
    link_keys,
    link_of,
)
from auditor.analyse.flaps import Flap
from auditor.analyse.routed import RouteBook, ar_alternatives, by_rail
from auditor.config import RankingSettings
from auditor.models import LinkKey
from auditor.nccl import DeathTime, job_death

if TYPE_CHECKING:
    from auditor.analyse.paths import PortRef
    from auditor.store.rows import JobEndedRow, JobErrorRow


@dataclass(slots=True)
class JobView:
    """What the correlation knows of one failed job's log evidence."""

    errors: list[JobErrorRow]
    versions: list[str]
    env: dict[str, int]


@dataclass(slots=True)
class FailedJob:
    """One failed job of the window as the blame reads it."""

    job: JobEndedRow
    hosts: list[str]  # its fabric hosts
    start: datetime
    end: datetime
    net: list[JobErrorRow]  # its network error lines
    death: DeathTime
    fault_lo: datetime
    fault_hi: datetime
    record: dict[str, Any]
    endpoint: str | None  # the host its peers on several rails lost (hosts.nccl_endpoint)


def _interval(e: JobErrorRow, start: datetime, end: datetime) -> tuple[datetime, datetime, str]:
    if e["event_at"] is not None:
        return e["event_at"], e["event_at"], "stamp"
    lo, hi = e["not_before"], e["not_after"]
    how = "neighbours" if lo is not None or hi is not None else "sacct"
    return (lo if lo is not None else start), (hi if hi is not None else end), how


_HOW = {
    frozenset({"stamp"}): "its NCCL error's stamp",
    frozenset({"neighbours"}): "the stamped lines around its untimed NCCL errors",
    frozenset({"sacct"}): "sacct Start and End (its NCCL errors carry no time)",
}


def fault_window(view: JobView, death: DeathTime, start: datetime, end: datetime
                  ) -> tuple[datetime, datetime, str]:
    """When the fault that killed the job began, as an interval, and where that comes from:
    the first network error less the death time (a port-error async event is printed when the
    port goes down, not when NCCL gives up: it is the fault's own moment), else a watchdog
    timeout, else sacct."""
    net = [e for e in view.errors if e["network"]]
    lo_d, hi_d = timedelta(seconds=min(death.lo, 1e6)), timedelta(seconds=min(death.hi, 1e6))
    if net:
        spans = [_interval(e, start, end) for e in net]
        # The fault lies before every error's upper bound and after the lowest lower one.
        now = [e["kind"] == "async_event" for e in net]
        first_lo = min(sp[0] - (timedelta(0) if at_once else hi_d)
                       for sp, at_once in zip(spans, now, strict=True))
        first_hi = min(sp[1] - (timedelta(0) if at_once else lo_d)
                       for sp, at_once in zip(spans, now, strict=True))
        how = _HOW.get(frozenset(sp[2] for sp in spans),
                       "its NCCL errors: stamped, and untimed ones bounded by the stamped "
                       "lines around them or by sacct Start")
        return max(start, min(first_lo, first_hi)), max(start, first_hi), how
    hung = [(e["event_at"], e["ran_ms"]) for e in view.errors
            if e["kind"] == "watchdog_timeout" and e["ran_ms"] and e["event_at"] is not None]
    if hung:
        began = min(at - timedelta(milliseconds=ran_ms) for at, ran_ms in hung)
        return max(start, began - WATCHDOG_BEFORE), began + WATCHDOG_AFTER, "the watchdog"
    return start, max(start, end - lo_d), "sacct Start and End"


def _footprint(fp: Footprints, guids: list[str], lo: datetime, hi: datetime) -> set[LinkKey]:
    """The HCA cables of `guids` and, when they hang off several leaves, the links between
    them: those that flapped (`cables.flapped`), the only ones a job's footprint is asked
    about. Between leaves: the links the forwarding tables in effect during [lo, hi] route the
    job's traffic over (issue #23; `routed.py`), else every uplink of those leaves."""
    cables = fp.cables
    links: set[LinkKey] = set()
    leaves: set[str] = set()
    cables.hcas(guids)
    for guid in guids:
        flapped, leaves_of = cables.hca(guid)
        links.update(flapped)
        leaves.update(leaves_of)
    if len(leaves) > 1:
        routed = fp.routed(guids, lo, hi)
        if routed is not None:
            links.update(routed & cables.flapped)
            return links
        for leaf in leaves:
            links.update(cables.uplinks(leaf))
    return links


_NEAR = timedelta(minutes=5)


_WHY = {"rails": "its rails went down together", "records": "its boot or Slurm records",
        "counters": "its HCA counters restarted", "node_fail": "Slurm's NODE_FAIL",
        "nccl": "its peers' NCCL errors on several rails"}


def _why(ev: NodeEvent) -> str:
    return ", ".join(_WHY[w] for w in sorted(ev.why) if w in _WHY)


def blame_host(fj: FailedJob, suspects: list[tuple[datetime, LinkKey, Flap]],
                event_of: dict[int, NodeEvent], host_events_of: dict[str, list[NodeEvent]]
                ) -> tuple[NodeEvent | None, str] | None:
    """Whether a failed job was killed by one of its hosts going away, and by which event, with
    the rule that says so; None: not by its host (the network's rules apply). A job whose first
    dead link went down with its host, one that failed while a host of it went away (before any
    other link of it died), and a NODE_FAIL job with no link of it dead first are its host's."""
    first = suspects[0] if suspects else None
    first_ev = event_of.get(id(first[2])) if first is not None else None
    if first_ev is not None and first_ev.host is not None:
        return first_ev, (f"its first dead link went down with host {first_ev.host} "
                          f"({_why(first_ev)})")
    node_fail = fj.job["state"] == HOST_STATE
    lo = (fj.start if node_fail else fj.fault_lo) - _NEAR
    hi = (fj.end if node_fail else fj.fault_hi) + _NEAR
    around = sorted((ev for h in sorted(set(fj.hosts)) for ev in host_events_of.get(h, [])
                     if lo <= ev.at <= hi),
                    key=lambda ev: (ev.host != fj.endpoint, ev.at))
    if around and around[0].host == fj.endpoint:
        # Its peers on several rails lost this one host, which said nothing itself: no cable
        # fault looks like that (007's common element), whatever else flapped in its window.
        return around[0], (f"its peers on several rails lost host {fj.endpoint}, which went "
                           f"away then ({_why(around[0])})")
    if first is not None:
        # A link of the job died that no host event explains: the network's, unless one of its
        # hosts had already gone.
        if not around or min(ev.at for ev in around) >= first[0]:
            return None
        gone = min(around, key=lambda ev: ev.at)
        return gone, f"host {gone.host} went away before any other link of it died ({_why(gone)})"
    if around:
        return around[0], f"host {around[0].host} went away as it failed ({_why(around[0])})"
    if node_fail:
        return None, "Slurm ended it NODE_FAIL and no link of it died first"
    return None


def killers(candidates: list[tuple[LinkKey, Flap]], named_links: set[LinkKey],
             fault: tuple[datetime, datetime], death: DeathTime, start: datetime,
             cfg: RankingSettings, absorbed: Callable[[LinkKey], bool] | None = None
             ) -> list[tuple[datetime, LinkKey, Flap]]:
    """The flaps that can have killed a job, earliest first (the first one started the storm):
    on its footprint, long enough for its NCCL to give up, beginning (for the job) inside the
    fault window. A link-down only a counter saw qualifies when the job's errors name that
    HCA's host and the counter stepped across the fault window. `absorbed` (`[fabric]
    adaptive_routing`): the up links whose flaps adaptive routing carries the traffic around;
    they come after every other candidate (issue #23: a harmless uplink's flap ten minutes
    before a switch reboot took the job the reboot killed)."""
    lo, hi = fault
    skew = cfg.after
    out: list[tuple[datetime, LinkKey, Flap]] = []
    for link, f in candidates:
        if f.down_at is None:
            continue
        if f.counted_from is not None:
            if link in named_links and f.counted_from <= hi + skew and f.down_at >= lo - skew:
                out.append((max(f.counted_from, lo), link, f))
            continue
        if f.up_at is not None and f.up_at <= start:
            continue  # over before the job began (a host's reboot hours earlier)
        began = max(f.down_at, start)
        if not max(lo - skew, hi - cfg.before) <= began <= hi + skew:
            continue
        lasted = f.duration_s if f.duration_s is not None else math.inf  # still down
        if lasted + DURATION_TOLERANCE_S < death.lo:
            continue  # shorter than this job's NCCL waits: absorbed, however close
        out.append((began, link, f))
    # Ties (several flaps already down when the job started) go to the same link every run.
    # A fault dated to the second (a stamped NCCL error and a known death time) was begun by
    # the candidate nearest it: a flap that began 36 s earlier on the job's path was crossed
    # for those 36 s without killing it, one 1 s earlier was not (issue #23); the clocks'
    # skew (`after`) keeps both candidates.
    exact = lo == hi
    out.sort(key=lambda s: (absorbed is not None and absorbed(s[1]),
                            abs((s[0] - lo).total_seconds()) if exact else 0.0, s[0], s[1]))
    return out


def top_voted(votes: dict[LinkKey, float], links: dict[LinkKey, LinkEvidence]
               ) -> LinkKey | None:
    """The one link a job's votes blame (007: the top-voted link). A tie (pairs whose paths
    spread over equal-cost routes, or a host's rails when no error names its HCA) goes to the
    one tied link that other evidence already points at; otherwise nobody takes the job."""
    best = max(votes.values())
    top = [lk for lk, w in votes.items() if w == best]
    if len(top) > 1:
        top = [lk for lk in top if (le := links.get(lk)) is not None and (
            le.flaps or le.jobs or le.port_errors or le.rising or le.degraded)]
    return top[0] if len(top) == 1 else None


def first_errors(errors: list[JobErrorRow]) -> list[JobErrorRow]:
    """The errors that start a job's trouble: those within 60 s of its first dated network
    error, and the first untimed error of each (host, HCA, peer); later ones are fallout of the
    first broken QP."""
    dated = [(e["event_at"], e) for e in errors if e["event_at"] is not None]
    first = min((at for at, _ in dated), default=None)
    keep = [e for at, e in dated if first is not None and (at - first).total_seconds() <= 60]
    return keep + [e for e in errors if e["event_at"] is None and e["is_first"]]


def pair_paths(fp: Footprints, errors: list[JobErrorRow], lo: datetime, hi: datetime
               ) -> list[list[LinkKey]]:
    """The links each failing (host, peer) pair's traffic can cross, on the rail the error
    names (NCCL connects HCA r of one host to HCA r of the other in a rail-optimised fabric),
    and for a port-error async event the HCA's own cable. With forwarding tables (issue #23)
    a pair's links are those its routes cross both ways during [lo, hi] (the job's fault
    window); without, every link of the graph's shortest paths between the two."""
    g, resolver, hcas, cables = fp.g, fp.resolver, fp.hcas, fp.cables
    pairs: set[tuple[str, str | None, str]] = set()
    own: set[tuple[str, str]] = set()
    for e in first_errors(errors):
        a = resolver.host(e["host"])
        if a is None:
            continue
        if e["kind"] == "async_event":
            own.add((a, e["hca"] or ""))  # no device (NCCL < 2.20): one of the host's HCAs
            continue
        b = resolver.host(e["peer"])
        if b and a != b:
            pairs.add((a, e["hca"], b))
    paths = []
    for a, dev, b in sorted(pairs, key=lambda p: (p[0], p[1] or "", p[2])):
        far = hcas.rail([b], {dev}) if dev else []
        near, far = hcas.named(a, dev), far or hcas.of.get(b, [])
        routed = fp.routed(near + far, lo, hi)
        if routed:
            paths.append(sorted(routed))
            continue
        path = graph.links_between(g, near, far)
        if path:
            paths.append(link_keys(path))
    for a, dev in sorted(own):
        own_links = [lk for guid in hcas.named(a, dev or None) for lk in cables.of(guid)]
        if own_links:
            paths.append(own_links)
    return paths


def _votes(paths: list[list[LinkKey]]) -> dict[LinkKey, float]:
    """Each pair spreads one vote over the links of its paths (as in 007)."""
    votes: dict[LinkKey, float] = defaultdict(float)
    for path in paths:
        for link in path:
            votes[link] += 1.0 / len(path)
    return dict(votes)


@dataclass(slots=True)
class FailedJobs:
    """The window's failed jobs as `failed_jobs` read them: those the network or a host may have
    killed (`jobs`), the counts, the jobs with no log, and the host evidence they carry."""

    jobs: list[FailedJob]
    failed: int  # every failed job ending in the window
    other: int  # GPU errors or OOM: nothing in the network
    no_logs: list[str]  # no job log and no error line of their hosts (coverage)
    node_fail: dict[str, list[tuple[datetime, str]]]  # fabric host -> (end, job) NODE_FAILs
    nccl_ends: dict[str, list[hosts.NcclEndpoint]]  # a host its peers on several rails lost


def failed_jobs(ended: list[JobEndedRow], since: datetime, until: datetime,
                views: dict[str, JobView], errors_by_host: dict[str, list[JobErrorRow]],
                resolver: HostResolver, cfg: RankingSettings, in_use: list[str]
                ) -> FailedJobs:
    """Each failed job ending in [since, until] as facts: its fabric hosts, its network
    errors (its log's, and its hosts' lines of no job in its run), its NCCL death time and the
    interval its fault began in; jobs with only GPU or OOM errors are counted apart."""
    failed = failed_other = 0
    no_logs: list[str] = []
    dead: list[FailedJob] = []
    node_fail: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    nccl_ends: dict[str, list[hosts.NcclEndpoint]] = defaultdict(list)
    for job in ended:
        if job["state"] not in NETWORK_STATES and job["state"] != "OUT_OF_MEMORY":
            continue
        if job["end_at"] is None or not since <= job["end_at"] <= until:
            continue
        failed += 1
        job_hosts = [h for h in resolver.each(job["hosts"]) if h]
        start, end = job["start_at"] or job["end_at"], job["end_at"]
        late = end + timedelta(minutes=10)
        view = views.get(job["job_id"]) or JobView([], [], {})
        mine = view.errors + [
            e for h in set(job_hosts) for e in errors_by_host.get(h, [])
            if e["event_at"] is not None and start <= e["event_at"] <= late]  # all dated
        if job["job_id"] not in views and not mine:
            no_logs.append(job["job_id"])
        view = JobView(mine, view.versions, view.env)
        net = [e for e in mine if e["network"]]
        other = [e for e in mine if not e["network"] and e["kind"] in ("oom", "gpu_error")]
        if job["state"] == "OUT_OF_MEMORY" or (other and not net):
            failed_other += 1
            continue
        death = job_death(view.versions, view.env, site_version=cfg.nccl_version,
                          site_timeout=cfg.nccl_ib_timeout, versions_in_use=in_use)
        fault_lo, fault_hi, timed_by = fault_window(view, death, start, end)
        dated = [e["event_at"] for e in net if e["event_at"]]
        died = min(dated) if dated else fault_hi + timedelta(seconds=min(death.lo, 1e6))
        gpus = job["gpus"] or cfg.gpus_per_node * max(1, len(job["hosts"]))
        record = {"job_id": job["job_id"], "name": job["name"], "state": job["state"],
                  "died_at": min(died, end),
                  "gpu_hours": gpus * (end - start).total_seconds() / 3600,
                  "hosts": len(job["hosts"]),
                  "fault_between": (fault_lo, fault_hi), "timed_by": timed_by,
                  "nccl_rule": death.rule}
        endpoint = hosts.nccl_endpoint(net, resolver.host)
        if endpoint is not None:
            nccl_ends[endpoint[0]].append(hosts.NcclEndpoint(
                endpoint[0], job["job_id"], fault_lo, fault_hi, endpoint[1], endpoint[2]))
        if job["state"] == HOST_STATE:
            for fabric_host in set(job_hosts):
                node_fail[fabric_host].append((end, job["job_id"]))
        dead.append(FailedJob(job, job_hosts, start, end, net, death, fault_lo, fault_hi,
                               record, endpoint[0] if endpoint else None))
    return FailedJobs(dead, failed, failed_other, no_logs, node_fail, nccl_ends)


@dataclass(slots=True)
class Footprints:
    """What the blame asks of the fabric: every flap by link, each node's cables and each
    leaf's uplinks (of those that flapped), the HCAs by host and device, the host names."""

    g: graph.FabricGraph
    flaps_by_link: dict[LinkKey, list[Flap]]
    cables: Cables
    hcas: Hcas
    resolver: HostResolver
    book: RouteBook | None

    def __init__(self, g: graph.FabricGraph, all_flaps: list[Flap], hcas: Hcas,
                 resolver: HostResolver, book: RouteBook | None = None) -> None:
        self.g, self.hcas, self.resolver, self.book = g, hcas, resolver, book
        self.flaps_by_link = defaultdict(list)
        for f in all_flaps:
            if f.down_at is not None:
                self.flaps_by_link[link_of(f.ends)].append(f)
        self.cables = Cables(g, set(self.flaps_by_link))

    def hca_ports(self, guids: list[str]) -> list[tuple[PortRef, str | None]]:
        """The cabled ports of HCAs `guids`, each with its device (its rail)."""
        return [((g, p), self.hcas.device_of.get(guid)) for guid in dict.fromkeys(guids)
                for lk in self.cables.of(guid) for g, p in lk if g == guid and p is not None]

    def ring_routed(self, hosts: list[list[str]], at: datetime) -> set[LinkKey] | None:
        """The links the routes in effect at `at` send a job's NCCL ring over, both ways:
        `hosts` holds each host's HCAs in the job's order. NCCL numbers the nodes by their
        first rank (src/init.cc:1096-1109 at NVIDIA/nccl v2.28.7-1) and every ring goes from
        node n to node n + 1 and round (src/graph/connect.cc:94-112); launchers give ranks node
        by node in the allocation's order, so the ring runs over the job's hosts as listed.
        Each consecutive pair on each rail (HCAs of one device); None: the tables cannot say."""
        if not self.book:
            return None
        assert self.book is not None  # noqa: S101 - for mypy: bool() above
        capture = self.book.capture_at(at)
        if capture is None:
            return None
        ring = [h for h in hosts if h]
        out: set[LinkKey] = set()
        for i in range(len(ring) if len(ring) > 2 else 1):
            pair = self.hca_ports(ring[i] + ring[(i + 1) % len(ring)])
            for rail in by_rail(pair):
                if len(rail) < 2:
                    continue
                found = self.book.crossed(capture, rail)
                if found is None:
                    return None
                out |= found
        return out

    def routed(self, guids: list[str], lo: datetime, hi: datetime) -> set[LinkKey] | None:
        """The links the forwarding tables in effect during [lo, hi] route traffic between
        the HCAs `guids` over, rail by rail, both ways; None without tables that can say."""
        if not self.book:
            return None
        assert self.book is not None  # noqa: S101 - for mypy: bool() above
        return self.book.crossed_during(lo, hi, by_rail(self.hca_ports(guids)))


def blame_jobs(dead: list[FailedJob], fp: Footprints, links: dict[LinkKey, LinkEvidence],
               event_of: dict[int, NodeEvent], host_events_of: dict[str, list[NodeEvent]],
               maint: set[int], cfg: RankingSettings) -> tuple[int, int, int]:
    """Blame each failed job (into `links` and the node events' jobs): its host, the first
    flap on its footprint long enough to kill it, the links its NCCL pairs vote for, or
    nothing. Returns how many the network killed, how many their host, how many nothing
    explains."""
    flaps_by_link, cables, hcas, resolver = fp.flaps_by_link, fp.cables, fp.hcas, fp.resolver
    failed_net = failed_host = unexplained = 0
    absorbed: Callable[[LinkKey], bool] | None = None
    if cfg.adaptive_routing:
        ar: dict[LinkKey, bool] = {}

        def absorbed(link: LinkKey) -> bool:
            if link not in ar:
                ar[link] = ar_alternatives(link, fp.g, None) > 0
            return ar[link]
    for fj in dead:
        job, start, net, death = fj.job, fj.start, fj.net, fj.death
        fault_lo, fault_hi, record, job_hosts = fj.fault_lo, fj.fault_hi, fj.record, fj.hosts
        # The rails its errors name (an HCA per error); none named: every rail of its hosts.
        named = {(h, e["hca"]) for e in net if e["hca"] and (h := resolver.host(e["host"]))}
        devices = {d for _, d in named}
        guids = hcas.rail(job_hosts, devices) if devices else []
        footprint = _footprint(fp, guids or [x for h in job_hosts
                                             for x in hcas.of.get(h, [])],
                               fault_lo - cfg.before, fault_hi + cfg.after)
        # The HCA cables the job's own errors point at: the HCA each names, or every HCA of a
        # reporting host whose errors name none (WARN-only logs of NCCL < 2.22).
        reporters = {h for e in net if (h := resolver.host(e["host"]))}
        unnamed = reporters - {h for h, _ in named}
        named_links = {lk for guid in ([x for h, d in named for x in hcas.named(h, d)]
                                       + [x for h in unnamed for x in hcas.of.get(h, [])])
                       for lk in cables.of(guid)}
        suspects = killers([(lk, f) for lk in footprint for f in flaps_by_link.get(lk, [])],
                            named_links, (fault_lo, fault_hi), death, start, cfg, absorbed)
        by_host = blame_host(fj, suspects, event_of, host_events_of)
        if by_host is not None:
            # Killed by its host, not by the network (issue #20): the host suspect takes it,
            # and its errors vote for no cable.
            failed_host += 1
            gone_with, rule = by_host
            if gone_with is not None:
                gone_with.jobs.append(record | {"killed_by": "host", "host_rule": rule})
            continue
        if job["state"] == HOST_STATE and suspects:
            record = record | {"state_note": (
                "ended NODE_FAIL, but a link of it died first by the usual rules: counted as "
                "the network's")}
        pairs = pair_paths(fp, net, fault_lo - cfg.before, fault_hi + cfg.after)
        # Links that went down with a whole switch or host, or in maintenance, around the
        # fault: the job's errors on them are that event's, not the cable's.
        near = timedelta(minutes=5)
        evented = {lk for lk in footprint | named_links for f in flaps_by_link.get(lk, [])
                   if (id(f) in event_of or id(f) in maint) and f.down_at is not None
                   and fault_lo - near <= f.down_at <= fault_hi + near}
        for e in net:  # the HCA itself saw its port go down: evidence on that cable
            if e["kind"] == "async_event" and e["hca"] and (h := resolver.host(e["host"])):
                guid = hcas.by_device.get((h, e["hca"]))
                for lk in cables.of(guid) if guid else ():
                    if lk not in evented:
                        links.setdefault(lk, LinkEvidence(lk)).port_errors.add(job["job_id"])
        pairs = [p for p in pairs if not (len(p) == 1 and p[0] in evented)]
        if suspects:
            failed_net += 1
            _, link, f = suspects[0]
            node_ev = event_of.get(id(f))
            explained = {link_of(x.ends) for x in node_ev.flaps} if node_ev else {link}
            explained |= evented
            if f.counted_from is not None:
                record = record | {"counted_flap": True}
            if node_ev is not None:
                node_ev.jobs.append(record)
            elif id(f) not in maint:
                links.setdefault(link, LinkEvidence(link)).jobs.append(record)
            # Pairs whose path crosses the link (or event) that killed the job are explained
            # by it; only the others still vote (007's explaining away).
            votes = _votes([p for p in pairs if not explained & set(p)])
            for vlink, weight in votes.items():
                voted = links.setdefault(vlink, LinkEvidence(vlink))
                voted.votes += weight
                voted.voters.add(job["job_id"])
        elif votes := _votes(pairs):
            failed_net += 1
            for vlink, weight in votes.items():
                voted = links.setdefault(vlink, LinkEvidence(vlink))
                voted.votes += weight
                voted.voters.add(job["job_id"])
            blamed = top_voted(votes, links)
            if blamed is not None:
                links[blamed].jobs.append(record | {"by_votes": True})
        else:
            unexplained += 1
    return failed_net, failed_host, unexplained
