"""One audit of a window: everything the report shows, read from the store and ranked.

`audit` correlates and ranks, then adds what a technician needs to act on each suspect the
report shows (where its ends are, which part sits in them, its flaps and failed jobs, its
corner of the fabric, its modules' diagnostics history) and what the operator reads about the
whole window (which devices were audited, flaps per switch over time, how earlier swaps are
doing, the optics watch list). `auditor.report.build` writes the report document from the
result without reading the store.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor import graph
from auditor.analyse import replacements
from auditor.analyse.coverage import Coverage as SeenCoverage
from auditor.analyse.coverage import blind_spots
from auditor.analyse.evidence import Evidence
from auditor.analyse.flaps import Flap
from auditor.analyse.optics.model import WatchList
from auditor.analyse.optics.outputs import Trace, trace
from auditor.analyse.pipeline import RankSettings, rank_window
from auditor.analyse.rank import Suspect

if TYPE_CHECKING:
    from auditor.analyse.cohorts import Cohorts
    from auditor.analyse.outcomes import Outcomes
    from auditor.analyse.paths import Routes
    from auditor.store.rows import DeviceStatusRow, LocationRow, TransceiverRow
from auditor.config import OpticsSettings, OutcomesSettings
from auditor.models import Link, NodeType
from auditor.store import Store

HEATMAP_BINS = 24
# A spine has hundreds of neighbours: a dozen per end is enough to orient a technician.
HOOD_PEERS = 12
SWITCH_COLLECTORS = ("snmp", "ssh")
HOST_COLLECTOR = "host"


@dataclass(frozen=True, slots=True)
class Place:
    """One end of a suspect as a technician finds it: the faceplate label (the inventory's
    override, else the one derived from the node type) and the node's inventory location."""

    name: str
    guid: str
    port: int | None
    label: str
    site: str | None
    row: str | None
    rack: str | None
    u: str | None


@dataclass(frozen=True, slots=True)
class Part:
    """The module in a suspect's ports: the first end's vendor, part number and length, and the
    serial numbers of both ends (a cable's two transceivers may report different ones)."""

    vendor: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    length: str | None = None


@dataclass(frozen=True, slots=True)
class HoodNode:
    guid: str
    name: str
    tier: int  # 0 spine (or any switch without hosts), 1 leaf, 2 HCA


@dataclass(frozen=True, slots=True)
class HoodEdge:
    a: str
    b: str
    ports: tuple[int, int]  # a's port, b's port
    suspect: bool
    jobs: tuple[str, ...] = ()  # failed jobs whose routes shown (`HoodPath`) cross it


@dataclass(frozen=True, slots=True)
class HoodPath:
    """A failed job's route through a suspect link (issue #23, with forwarding tables): from
    one of its hosts to another on one rail, the cables it crosses in order ((node, port,
    node, port) each, from the source)."""

    job_id: str
    source: str
    dest: str
    rail: int
    cables: tuple[tuple[str, int, str, int], ...]


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    nodes: list[HoodNode]
    edges: list[HoodEdge]
    paths: list[HoodPath] = field(default_factory=list)


@dataclass(slots=True)
class Finding:
    """A suspect the report shows, with what it takes to act on it."""

    rank: int  # 1 is the first to act on
    suspect: Suspect
    ends: list[Place]
    part: Part
    flaps: list[Flap]  # its timeline: the link's flaps, or the switch's or host's events'
    jobs: list[dict[str, Any]]  # failed jobs blamed on it (correlate's records)
    neighbourhood: Neighbourhood
    # The diagnostics history of the modules in its ports, one trace per module (issue #14).
    optics: list[Trace] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DeviceStatus:
    device: str
    collector: str  # snmp, ssh, host
    status: str  # ok, timeout, auth_failed, ...
    detail: str | None


@dataclass(frozen=True, slots=True)
class Coverage:
    switches_ok: int
    switches_total: int
    hosts_ok: int
    hosts_total: int
    failed: list[DeviceStatus]  # every device whose last collection was not ok
    blind_spots: list[str] = field(default_factory=list)  # coverage.blind_spots' notes
    # the window's port events per switch-side source (coverage.EVENT_SOURCES' keys, #24)
    event_sources: dict[str, int] = field(default_factory=dict)
    fabric_sources: dict[str, dict[str, int]] = field(default_factory=dict)  # and its sources
    sources_note: str = ""


@dataclass(frozen=True, slots=True)
class Heatmap:
    bins: list[datetime]  # the start of each bin
    rows: list[tuple[str, list[int]]]  # switch name, flaps per bin; only switches that flapped


@dataclass(slots=True)
class Audit:
    evidence: Evidence
    suspects: list[Suspect]  # every one, best first
    findings: list[Finding]  # the ones the report shows, best first
    flaps: int  # distinct flaps in the window (a flap of a switch event is counted once)
    coverage: Coverage
    heatmap: Heatmap
    tracking: list[dict[str, Any]]  # replacements.status, judged at the window's end
    # Transceiver diagnostics trends (issue #14): every watch, and the settings that judged them.
    watch: WatchList | None = None
    optics_settings: OpticsSettings = field(default_factory=OpticsSettings)
    # What the earlier nightly runs' suspects turned out to be, and the parts' cohorts (#15);
    # None when the audit was not asked for them.
    outcomes: Outcomes | None = None
    cohorts: Cohorts | None = None

    @property
    def since(self) -> datetime:
        return self.evidence.since

    @property
    def until(self) -> datetime:
        return self.evidence.until


def audit(store: Store, since: datetime, until: datetime,
          settings: RankSettings | None = None, *, limit: int = 50,
          judge: bool = True) -> Audit:
    """The audit of [since, until] (naive UTC), ranked by the one pipeline
    (`pipeline.rank_window`); `limit` suspects (0: all) get a finding. With `judge`, also what
    the remembered suspects of `[outcomes] since` before `until` turned out to be."""
    settings = settings or RankSettings()
    cfg = settings.ranking
    ranking = rank_window(store, since, until, settings, judge=judge)
    ev, ranked, judged = ranking.evidence, ranking.suspects, ranking.outcomes
    verify_days = settings.verify_days
    shown = ranked[:limit] if limit else ranked
    locs, labels = store.locations(), store.port_labels()
    # The findings' modules only: every module as a row was 0.6 s of `report` at 65,536 GPUs
    # (393,216 of them, issue #25); the cohorts count theirs in SQL.
    modules = {(t["guid"], t["port"]): t for t in store.transceivers_at(
        [(e["guid"], e["port"]) for s in shown for e in s.ends]) if t["guid"]}
    g = ev.graph if ev.graph is not None else graph.build_graph(ev.fabric)
    findings = [_finding(ev, g, i, s, locs, labels, modules) for i, s in enumerate(shown, 1)]
    _job_paths(store, ev, g, findings, settings.aliases)
    if ev.watch is not None:
        # every finding's ports in one read: one a port was 13 s of `report` at 65,536 GPUs
        ev.watch.prefetch_ports([(e["guid"], e["port"]) for f in findings
                                 for e in f.suspect.ends if e["port"] is not None])
        for f in findings:
            f.optics = _traces(ev.watch, f.suspect.ends)
    all_flaps = {id(f) for le in ev.links.values() for f in le.flaps} | {
        id(f) for n in ev.nodes for f in n.flaps}
    return Audit(
        evidence=ev, suspects=ranked, findings=findings, flaps=len(all_flaps),
        coverage=_coverage(store.device_status(), blind_spots(store, ev)),
        heatmap=_heatmap(ev),
        # A swap recorded in the window's last second is judged too.
        tracking=replacements.status(store, until + timedelta(seconds=1), verify_days),
        watch=ev.watch, optics_settings=cfg.optics,
        outcomes=judged, cohorts=_cohorts(store, judged),
    )


def judge_again(result: Audit, store: Store, settings: OutcomesSettings,
                verify_days: float = 7.0) -> None:
    """Judge the remembered suspects anew into `result` (the nightly run, once it has
    remembered its own)."""
    from auditor.analyse import outcomes as outcomes_mod

    result.outcomes = outcomes_mod.judge(store, result.until - settings.span, result.until,
                                         settings, verify_days)
    result.cohorts = _cohorts(store, result.outcomes)


def _cohorts(store: Store, judged: Outcomes | None) -> Cohorts | None:
    if judged is None:
        return None
    from auditor.analyse.cohorts import cohorts

    return cohorts(store, judged)


def _traces(watch: WatchList, ends: list[dict[str, Any]]) -> list[Trace]:
    """The newest module in each end's port that has a diagnostics history."""
    out = []
    for e in ends:
        if e["port"] is None:
            continue
        found = watch.at_port(e["guid"], e["port"])
        if found and (t := trace(found[-1], watch.watches)) is not None:
            out.append(t)
    return out


def _finding(ev: Evidence, g: graph.FabricGraph, rank_no: int, s: Suspect,
             locs: dict[str, LocationRow], labels: dict[tuple[str, int], str],
             modules: dict[tuple[str, int | None], TransceiverRow]) -> Finding:
    first = s.ends[0]["guid"]
    le = ev.links.get(tuple(sorted((e["guid"], e["port"]) for e in s.ends)))
    if le is not None:
        flaps, jobs = le.flaps, le.jobs
    else:  # a switch or host event: every event of that node in the window
        flaps = [f for n in ev.nodes if s.component in ("switch", "host") and n.guid == first
                 for f in n.flaps]
        jobs = [j for n in ev.nodes if n.guid == first for j in n.jobs]
    return Finding(rank=rank_no, suspect=s, ends=[_place(locs, labels, e) for e in s.ends],
                   part=_part(modules, s.ends), flaps=flaps, jobs=jobs,
                   neighbourhood=_neighbourhood(ev, g, s.ends))


def _place(locs: dict[str, LocationRow], labels: dict[tuple[str, int], str],
           end: dict[str, Any]) -> Place:
    loc: LocationRow | dict[str, None] = locs.get(end["name"], {})
    label = labels.get((end["name"], end["port"])) if end["port"] is not None else None
    return Place(name=end["name"], guid=end["guid"], port=end["port"],
                 label=label or end.get("label") or "", site=loc.get("site"),
                 row=loc.get("row_name"), rack=loc.get("rack"), u=loc.get("u"))


def _part(modules: dict[tuple[str, int | None], TransceiverRow], ends: list[dict[str, Any]]
          ) -> Part:
    found = [modules[(e["guid"], e["port"])] for e in ends if (e["guid"], e["port"]) in modules]
    if not found:
        return Part()
    first = found[0]
    return Part(vendor=first["vendor"], part_number=first["part_number"],
                serial_number=" / ".join(dict.fromkeys(
                    str(m["serial_number"]) for m in found if m["serial_number"])) or None,
                length=first["length"])


def _neighbourhood(ev: Evidence, g: graph.FabricGraph, ends: list[dict[str, Any]]
                   ) -> Neighbourhood:
    nodes: dict[str, HoodNode] = {}

    def add(guid: str) -> None:
        data = g.nodes[guid]
        tier = 2 if data["node_type"] == NodeType.HCA else (1 if graph.is_leaf(g, guid) else 0)
        nodes[guid] = HoodNode(guid=guid, name=data["name"], tier=tier)

    for guid in (e["guid"] for e in ends if e["guid"] in g):
        add(guid)
        for peer in sorted(g.neighbors(guid))[:HOOD_PEERS]:
            add(peer)
    suspect = {(e["guid"], e["port"]) for e in ends}
    edges = [HoodEdge(a=u, b=v, ports=(k[1], k[3]),
                      suspect={(k[0], k[1]), (k[2], k[3])} == suspect)
             for u, v, k in g.edges(list(nodes), keys=True) if u in nodes and v in nodes]
    return Neighbourhood(nodes=list(nodes.values()), edges=edges)


def _job_paths(store: Store, ev: Evidence, g: graph.FabricGraph, findings: list[Finding],
               aliases: dict[str, str]) -> None:
    """With forwarding tables stored: each suspect link's neighbourhood gets the routes of the
    failed jobs blamed on it that cross it (the tables in effect when each job died), their
    cables and nodes added to the plot."""
    wanted = {j["job_id"] for f in findings if len(f.suspect.ends) == 2 for j in f.jobs}
    if not wanted or not store.lft_captures_span()[0]:
        return
    from auditor.analyse import routing
    from auditor.analyse.evidence import NETWORK_STATES, HostResolver

    resolver = HostResolver(ev.fabric, store.host_addresses(), aliases)
    hosts = {r["job_id"]: sorted({h for n in r["hosts"] if (h := resolver.host(n))})
             for r in store.jobs_ended(ev.since, ev.until, NETWORK_STATES)
             if r["job_id"] in wanted}
    tables: dict[datetime, Routes | None] = {}
    for f in findings:
        cable = frozenset((e["guid"], e["port"]) for e in f.suspect.ends)
        if len(cable) != 2 or any(p is None for _, p in cable):
            continue
        paths: list[HoodPath] = []
        for job in f.jobs:
            capture = store.lft_capture_at(job["died_at"])
            if capture is None or len(hosts.get(job["job_id"], ())) < 2:
                continue
            if capture[0] not in tables:
                tables[capture[0]] = routing.routes_at(store, job["died_at"], ev.fabric)
            routes = tables[capture[0]]
            if routes is None:
                continue
            left = routing.PATHS_SHOWN - len(paths)
            for a, b, rail, route in routing.paths_through(routes, ev.fabric, cable,
                                                           hosts[job["job_id"]], aliases,
                                                           left):
                paths.append(HoodPath(job["job_id"], a, b, rail, tuple(
                    _cable_from(lk, hop) for lk, hop in zip(
                        route.links, [route.source, *((h.switch, h.out_port)
                                                      for h in route.hops)], strict=False))))
            if len(paths) >= routing.PATHS_SHOWN:
                break
        if paths:
            f.neighbourhood = _with_paths(f.neighbourhood, g, paths)


def _cable_from(link: Link, near: tuple[str, int]) -> tuple[str, int, str, int]:
    """A route's cable as (node, port, node, port) from the end it leaves by."""
    a, b = (link.a_guid, link.a_port), (link.b_guid, link.b_port)
    if b == near:
        a, b = b, a
    return (a[0], a[1], b[0], b[1])


def _with_paths(hood: Neighbourhood, g: graph.FabricGraph, paths: list[HoodPath]
                ) -> Neighbourhood:
    """`hood` with the nodes and cables of `paths` in it, each cable naming the jobs."""
    nodes = {n.guid: n for n in hood.nodes}
    jobs: dict[frozenset[tuple[str, int]], list[str]] = defaultdict(list)
    cables: dict[frozenset[tuple[str, int]], tuple[str, int, str, int]] = {}
    for p in paths:
        for a, pa, b, pb in p.cables:
            key = frozenset({(a, pa), (b, pb)})
            cables.setdefault(key, (a, pa, b, pb))
            if p.job_id not in jobs[key]:
                jobs[key].append(p.job_id)
            for guid in (a, b):
                if guid not in nodes and guid in g:
                    data = g.nodes[guid]
                    tier = 2 if data["node_type"] == NodeType.HCA else (
                        1 if graph.is_leaf(g, guid) else 0)
                    nodes[guid] = HoodNode(guid=guid, name=data["name"], tier=tier)
    edges = []
    for e in hood.edges:
        key = frozenset({(e.a, e.ports[0]), (e.b, e.ports[1])})
        edges.append(HoodEdge(e.a, e.b, e.ports, e.suspect, tuple(jobs.get(key, ()))))
        cables.pop(key, None)
    edges += [HoodEdge(a, b, (pa, pb), False, tuple(jobs[key]))
              for key, (a, pa, b, pb) in cables.items() if a in nodes and b in nodes]
    return Neighbourhood(nodes=list(nodes.values()), edges=edges, paths=paths)


def _coverage(status: list[DeviceStatusRow], seen: SeenCoverage) -> Coverage:
    switches = [s for s in status if s["collector"] in SWITCH_COLLECTORS]
    hosts = [s for s in status if s["collector"] == HOST_COLLECTOR]
    return Coverage(
        switches_ok=sum(s["status"] == "ok" for s in switches), switches_total=len(switches),
        hosts_ok=sum(s["status"] == "ok" for s in hosts), hosts_total=len(hosts),
        failed=[DeviceStatus(device=s["device"], collector=s["collector"], status=s["status"],
                             detail=s["detail"]) for s in status if s["status"] != "ok"],
        blind_spots=seen.notes, fabric_sources=seen.fabric_sources,
        sources_note=seen.sources_note, event_sources=dict(seen.event_sources))


def _heatmap(ev: Evidence, bins: int = HEATMAP_BINS) -> Heatmap:
    span = (ev.until - ev.since) / bins
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * bins)
    flaps = [f for le in ev.links.values() for f in le.flaps] + [
        f for n in ev.nodes for f in n.flaps]
    for f in flaps:
        if f.down_at is None or not ev.since <= f.down_at <= ev.until:
            continue
        i = min(bins - 1, int((f.down_at - ev.since) / span))
        for guid, _ in f.ends:
            node = ev.fabric.nodes.get(guid)
            if node is not None and node.node_type == NodeType.SWITCH:
                counts[node.name][i] += 1
    return Heatmap(bins=[ev.since + span * i for i in range(bins)],
                   rows=sorted(counts.items()))
