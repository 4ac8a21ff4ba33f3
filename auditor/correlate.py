"""Correlation: flaps, counters, jobs and job-log errors joined along the fabric graph.

Everything here gathers evidence per link (and per switch or host for common-mode events);
`rank.py` turns it into scores, verdicts and actions.

- Common mode: many ports of one switch (or every HCA link of one host) going down within
  seconds is one event on that node (a reboot, a power loss), not N cable faults.
- Maintenance: flaps of a declared target inside its window are kept but not held against it.
- A failed job is network-caused when a flap that lasted long enough to kill NCCL lies on its
  footprint shortly before it died, or when its NCCL errors name failing (host, peer) pairs.
  Pairs vote for the links on their paths (as in 007); in a storm the link that failed first
  takes the job, not the loudest one. A job whose logs show only GPU errors or OOM is blamed on
  nothing in the network.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import networkx as nx

from auditor import graph
from auditor.errors import AuditorError
from auditor.flaps import Flap, PortKey, flaps
from auditor.health import degraded_links
from auditor.models import Fabric, NodeType
from auditor.parse.joblog import ipoib_link_local_to_guid
from auditor.portmap import port_number
from auditor.store import Store

LinkKey = tuple[PortKey, ...]  # one or two ends, sorted

# NCCL's default IB timeout (4.096 us * 2^20 per attempt, 7 retries) gives about 7 s before a
# QP errors out with IBV_WC_RETRY_EXC_ERR; Databricks measured the same: a port down longer
# than that kills the jobs across it, shorter flaps are absorbed.
NCCL_DEATH_S = 7.0
NETWORK_STATES = {"FAILED", "NODE_FAIL", "TIMEOUT"}
# A switch reboot takes all its ports down within a second or two; give clock skew room.
COMMON_MODE_WINDOW = timedelta(seconds=30)


@dataclass(slots=True)
class Settings:
    before: timedelta = timedelta(minutes=15)  # flap -> job death: NCCL timeout plus margin
    after: timedelta = timedelta(minutes=1)  # clock skew between switches and hosts
    gpus_per_node: int = 8
    symbol_errors_per_hour: float = 120.0  # IBTA BER 1e-12 at HDR, as NVSentinel uses
    link_error_recovery_per_hour: float = 300.0  # NVSentinel: > 5 per minute
    common_mode_min_ports: int = 3
    common_mode_fraction: float = 0.5


@dataclass(slots=True)
class LinkEvidence:
    link: LinkKey
    flaps: list[Flap] = field(default_factory=list)
    maintenance_flaps: int = 0
    common_mode_flaps: int = 0
    counters: dict[PortKey, dict[str, int]] = field(default_factory=dict)
    rising: dict[PortKey, int] = field(default_factory=dict)  # intervals with new symbol errors
    saturated: set[str] = field(default_factory=set)
    hours: float = 0.0  # span of counter readings in the window
    jobs: list[dict[str, Any]] = field(default_factory=list)
    votes: float = 0.0
    voters: set[str] = field(default_factory=set)
    degraded: str = ""  # "running at 1X HDR, could be 4X HDR" from the newest snapshot


@dataclass(slots=True)
class NodeEvent:
    """A common-mode event: many ports of one node down together."""

    guid: str
    at: datetime
    up_at: datetime | None
    ports: set[int]
    flaps: list[Flap]
    jobs: list[dict[str, Any]] = field(default_factory=list)
    maintenance: bool = False


@dataclass(slots=True)
class Evidence:
    fabric: Fabric
    since: datetime
    until: datetime
    links: dict[LinkKey, LinkEvidence]
    nodes: list[NodeEvent]
    jobs_failed: int
    jobs_network: int
    jobs_other: int
    jobs_unexplained: int
    names: dict[str, tuple[str, str]]


def settings_from(r: Any) -> Settings:
    """Correlation settings from the config's `[ranking]` (auditor.config.RankingSettings)."""
    return Settings(before=timedelta(minutes=r.before_minutes),
                    after=timedelta(minutes=r.after_minutes), gpus_per_node=r.gpus_per_node,
                    symbol_errors_per_hour=r.symbol_errors_per_hour,
                    link_error_recovery_per_hour=r.link_error_recovery_per_hour,
                    common_mode_min_ports=r.common_mode_min_ports,
                    common_mode_fraction=r.common_mode_fraction)


def link_of(ends: list[PortKey]) -> LinkKey:
    return tuple(sorted(ends))


def _maintenance_targets(rows: list[dict[str, Any]], fabric: Fabric
                         ) -> list[tuple[set[str], set[PortKey], datetime, datetime]]:
    """(node GUIDs, ports) each window covers."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for n in fabric.nodes.values():
        by_name[n.name.lower()].append(n.guid)
    out = []
    for r in rows:
        nodes: set[str] = set()
        ports: set[PortKey] = set()
        for part in re.split(r"<->", r["target"]):
            name, _, port = part.strip().partition(":")
            guids = by_name.get(name.lower(), [])
            if not port:
                nodes.update(guids)
                continue
            number = int(port) if port.isdigit() else port_number(port)
            ports.update((g, number) for g in guids if number is not None)
        out.append((nodes, ports, r["start_at"], r["end_at"]))
    return out


def _in_maintenance(f: Flap, windows: list[tuple[set[str], set[PortKey], datetime, datetime]]
                    ) -> bool:
    if f.down_at is None:
        return False
    for nodes, ports, start, end in windows:
        if start <= f.down_at <= end and any(g in nodes or (g, p) in ports for g, p in f.ends):
            return True
    return False


def _linked_ports(fabric: Fabric) -> dict[str, int]:
    count: dict[str, int] = defaultdict(int)
    for lk in fabric.links:
        count[lk.a_guid] += 1
        count[lk.b_guid] += 1
    return count


def _common_mode(candidates: list[Flap], fabric: Fabric, cfg: Settings) -> list[NodeEvent]:
    """Clusters of flaps on one node within COMMON_MODE_WINDOW covering enough of its ports."""
    linked = _linked_ports(fabric)
    by_node: dict[str, list[tuple[Flap, int]]] = defaultdict(list)
    for f in candidates:
        if f.down_at is None or f.counted_from is not None:
            continue
        for guid, port in f.ends:
            by_node[guid].append((f, port))
    events: list[NodeEvent] = []
    for guid, items in by_node.items():
        node = fabric.nodes.get(guid)
        total = linked.get(guid, 0)
        if node is None or total < 2:
            continue
        need = max(cfg.common_mode_min_ports, int(total * cfg.common_mode_fraction + 0.5))
        if node.node_type == NodeType.HCA:
            need = total  # a host event takes every one of its HCA links down
        items.sort(key=lambda fp: fp[0].down_at or datetime.min)  # noqa: DTZ901
        i = 0
        while i < len(items):
            start = items[i][0].down_at
            assert start is not None  # noqa: S101 - filtered above
            j = i
            ports: set[int] = set()
            while j < len(items) and (items[j][0].down_at or start) - start <= COMMON_MODE_WINDOW:
                ports.add(items[j][1])
                j += 1
            if len(ports) >= min(need, total) and len(ports) >= 2:
                group = [fp[0] for fp in items[i:j]]
                ups = [f.up_at for f in group if f.up_at]
                events.append(NodeEvent(guid, start, max(ups) if ups else None, ports, group))
                i = j
            else:
                i += 1
    return events


def _counter_evidence(deltas: list[dict[str, Any]], peers: dict[PortKey, PortKey],
                      links: dict[LinkKey, LinkEvidence]) -> None:
    for d in deltas:
        if not d["delta"] or d["counter"] == "LinkDownedCounter":
            continue
        key = (d["guid"], d["port"])
        peer = peers.get(key)
        link = link_of([key, peer] if peer else [key])
        ev = links.setdefault(link, LinkEvidence(link))
        per_port = ev.counters.setdefault(key, defaultdict(int))
        per_port[d["counter"]] += d["delta"]
        if d["saturated"]:
            ev.saturated.add(d["counter"])
        if d["counter"] == "SymbolErrorCounter":
            ev.rising[key] = ev.rising.get(key, 0) + 1
        hours = (d["seen_at"] - d["prev_at"]).total_seconds() / 3600
        ev.hours = max(ev.hours, hours)


class _HostResolver:
    """Job logs name hosts by short name, FQDN, Slurm NodeName or pod name, and peers by
    IPoIB/OOB address: bring them all to the fabric's host names."""

    def __init__(self, fabric: Fabric, addresses: dict[str, str],
                 aliases: dict[str, str]) -> None:
        self.hosts = {n.name.lower(): n.name for n in fabric.nodes.values()
                      if n.node_type == NodeType.HCA}
        self.addresses = {a.split("%", 1)[0].lower(): h for a, h in addresses.items()}
        self.aliases = {k.lower(): v for k, v in aliases.items()}
        # An IPoIB link-local address embeds the port GUID (RFC 4391): a peer named by one
        # resolves with no hosts file at all.
        self.port_hosts = {
            p.port_guid: fabric.nodes[p.guid].name for p in fabric.ports.values()
            if p.port_guid and p.guid in fabric.nodes
            and fabric.nodes[p.guid].node_type == NodeType.HCA}

    def host(self, name: str | None) -> str | None:
        if not name:
            return None
        key = name.strip().lower().split("%", 1)[0]  # fe80::...%ib0: the scope is local
        if key.startswith("fe80:"):
            guid = ipoib_link_local_to_guid(key)
            if guid in self.port_hosts:
                return self.port_hosts[guid]
        key = self.aliases.get(key, key).lower()
        if key in self.hosts:
            return self.hosts[key]
        short = key.split(".", 1)[0]
        short = self.aliases.get(short, short).lower()
        if short in self.hosts:
            return self.hosts[short]
        via = self.addresses.get(key)
        return self.host(via) if via and via.lower() != key else None


def _footprint(g: nx.MultiGraph, hosts: list[str], hca_of: dict[str, list[str]]
               ) -> set[LinkKey]:
    guids = [guid for h in hosts for guid in hca_of.get(h, [])]
    links: set[LinkKey] = set()
    leaves: set[str] = set()
    for guid in guids:
        for k in graph.node_links(g, guid):
            links.add(link_of([(k[0], k[1]), (k[2], k[3])]))
        leaves.update(graph.leaf_of(g, guid))
    if len(leaves) > 1:
        for leaf in leaves:
            for k in graph.uplinks(g, leaf):
                links.add(link_of([(k[0], k[1]), (k[2], k[3])]))
    return links


def gather(store: Store, since: datetime, until: datetime, cfg: Settings | None = None,
           aliases: dict[str, str] | None = None) -> Evidence:
    """All evidence for [since, until] (naive UTC)."""
    cfg = cfg or Settings()
    times = store.snapshot_times(until, limit=2)
    if not times:
        raise AuditorError("no topology snapshot yet: ingest ibnetdiscover or iblinkinfo "
                           "output (or run `auditor sweep`) first")
    fabric = store.fabric(times[0])
    g = graph.build_graph(fabric)
    names = store.node_names()
    peers = store.port_peers(until)
    look_from = since - cfg.before
    all_flaps = flaps(store, look_from, until, peers)
    windows = _maintenance_targets(store.maintenance(look_from, until), fabric)

    maint = {id(f) for f in all_flaps if _in_maintenance(f, windows)}
    rest = [f for f in all_flaps if id(f) not in maint]
    node_events = _common_mode(rest, fabric, cfg)
    event_of = {id(f): node_ev for node_ev in node_events for f in node_ev.flaps}

    links: dict[LinkKey, LinkEvidence] = {}
    for f in all_flaps:
        if f.down_at is None or (f.down_at < since and (f.up_at or until) < since):
            continue
        link = link_of(f.ends)
        lev = links.setdefault(link, LinkEvidence(link))
        if id(f) in event_of:
            lev.common_mode_flaps += 1
        elif id(f) in maint:
            lev.maintenance_flaps += 1
        elif f.down_at >= since or f.up_at is None or f.up_at >= since:
            lev.flaps.append(f)
    _counter_evidence(store.counter_deltas(since, until), peers, links)
    # Of the snapshot before, only its links count (a second whole fabric cost 0.15 s).
    previous = store.fabric_links(times[1]) if len(times) > 1 else None
    for d in degraded_links(fabric, previous):
        link = link_of([(d.ends[0].guid, d.ends[0].port), (d.ends[1].guid, d.ends[1].port)])
        links.setdefault(link, LinkEvidence(link)).degraded = (
            f"running at {d.width} {d.speed}, could be {d.possible_width} {d.possible_speed} "
            f"({d.reason})")

    # -- jobs ------------------------------------------------------------------------------
    resolver = _HostResolver(fabric, store.host_addresses(), aliases or {})
    hca_of: dict[str, list[str]] = defaultdict(list)
    for n in fabric.nodes.values():
        if n.node_type == NodeType.HCA:
            hca_of[n.name].append(n.guid)
    errors = store.job_errors(look_from, until + cfg.after + timedelta(minutes=10))
    # Index once: a month holds thousands of failed jobs and tens of thousands of error lines.
    errors_by_job: dict[str, list[dict[str, Any]]] = defaultdict(list)
    errors_by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in errors:
        if e["job_id"] is not None:
            errors_by_job[e["job_id"]].append(e)
        elif e["event_at"] is not None and (who := resolver.host(e["host"])):
            errors_by_host[who].append(e)
    flaps_by_link: dict[LinkKey, list[Flap]] = defaultdict(list)
    for f in all_flaps:
        if f.down_at is not None:
            flaps_by_link[link_of(f.ends)].append(f)
    failed = failed_net = failed_other = unexplained = 0
    for job in store.jobs(since, until):
        if job["state"] not in NETWORK_STATES and job["state"] != "OUT_OF_MEMORY":
            continue
        if job["end_at"] is None or not since <= job["end_at"] <= until:
            continue
        failed += 1
        hosts = [h for h in (resolver.host(x) for x in job["hosts"]) if h]
        start, end = job["start_at"] or job["end_at"], job["end_at"]
        late = end + timedelta(minutes=10)
        mine = errors_by_job.get(job["job_id"], []) + [
            e for h in set(hosts) for e in errors_by_host.get(h, [])
            if start <= e["event_at"] <= late]
        net = [e for e in mine if e["network"]]
        other = [e for e in mine if not e["network"] and e["kind"] in ("oom", "gpu_error")]
        if job["state"] == "OUT_OF_MEMORY" or (other and not net):
            failed_other += 1
            continue
        died = min([e["event_at"] for e in net if e["event_at"]] + [end])
        gpus = job["gpus"] or cfg.gpus_per_node * max(1, len(job["hosts"]))
        record = {"job_id": job["job_id"], "name": job["name"], "state": job["state"],
                  "died_at": died, "gpu_hours": gpus * (end - start).total_seconds() / 3600,
                  "hosts": len(job["hosts"])}
        footprint = _footprint(g, hosts, hca_of)
        # The flap that killed it: long enough for NCCL to give up, on the footprint, in the
        # window before death; the earliest such flap initiated the storm.
        suspects: list[tuple[datetime, LinkKey, Flap]] = []
        for link, f in ((lk, f) for lk in footprint for f in flaps_by_link.get(lk, [])):
            if f.down_at is None:
                continue
            lasted = f.duration_s if f.duration_s is not None else (
                (died - f.down_at).total_seconds() if f.up_at is None else None)
            if lasted is not None and lasted < NCCL_DEATH_S:
                continue
            if died - cfg.before <= f.down_at <= died + cfg.after:
                suspects.append((f.down_at, link, f))
        pairs = _pair_paths(g, net, resolver, hca_of)
        if suspects:
            failed_net += 1
            suspects.sort(key=lambda s: s[0])
            _, link, f = suspects[0]
            node_ev = event_of.get(id(f))
            explained = {link_of(x.ends) for x in node_ev.flaps} if node_ev else {link}
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
            best = max(votes.values())
            for vlink, weight in votes.items():
                voted = links.setdefault(vlink, LinkEvidence(vlink))
                voted.votes += weight
                voted.voters.add(job["job_id"])
                if weight == best:
                    voted.jobs.append(record | {"by_votes": True})
        else:
            unexplained += 1
    return Evidence(fabric, since, until, links, node_events, failed, failed_net, failed_other,
                    unexplained, names)


def _pair_paths(g: nx.MultiGraph, errors: list[dict[str, Any]], resolver: _HostResolver,
                hca_of: dict[str, list[str]]) -> list[list[LinkKey]]:
    """The links each failing (host, peer) pair's traffic can cross. Only the first errors
    count (within 60 s of the job's first network error): later ones are fallout of the first
    broken QP."""
    dated = [e for e in errors if e["peer"] and e["event_at"] is not None]
    if not dated:
        return []
    first = min(e["event_at"] for e in dated)
    pairs: set[tuple[str, str]] = set()
    for e in dated:
        if (e["event_at"] - first).total_seconds() > 60:
            continue
        a, b = resolver.host(e["host"]), resolver.host(e["peer"])
        if a and b and a != b:
            pairs.add((min(a, b), max(a, b)))
    paths = []
    for a, b in sorted(pairs):
        path = graph.links_between(g, hca_of.get(a, []), hca_of.get(b, []))
        if path:
            paths.append([link_of([(k[0], k[1]), (k[2], k[3])]) for k in path])
    return paths


def _votes(paths: list[list[LinkKey]]) -> dict[LinkKey, float]:
    """Each pair spreads one vote over the links of its paths (as in 007)."""
    votes: dict[LinkKey, float] = defaultdict(float)
    for path in paths:
        for link in path:
            votes[link] += 1.0 / len(path)
    return dict(votes)


__all__ = ["Evidence", "LinkEvidence", "NodeEvent", "Settings", "gather"]
