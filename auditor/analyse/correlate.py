"""Correlation: flaps, counters, jobs and job-log errors joined along the fabric graph.

Everything here gathers evidence per link (and per switch or host for common-mode events);
`rank.py` turns it into scores, verdicts and actions.

- Common mode: many ports of one switch (or every HCA link of one host) going down within
  seconds is one event on that node (a reboot, a power loss), not N cable faults.
- Maintenance: flaps of a declared target inside its window are kept but not held against it.
- A failed job is network-caused when a flap that lasted at least the job's own NCCL death time
  (`auditor.nccl`: from the NCCL version and NCCL_IB_TIMEOUT its log shows, else the site's
  default, else the bounds of the versions in use) lies on its footprint and began one death
  time before the job's first network error, or when its NCCL errors name failing (host, peer)
  pairs. Pairs vote for the links on their paths (as in 007); in a storm the link that failed
  first takes the job, not the loudest one. A job whose logs show only GPU errors or OOM is
  blamed on nothing in the network.
- Time of the first error: its own stamp; for untimed NCCL lines the interval between the
  stamped lines around it; else the watchdog's stamp less the time the stuck collective ran;
  else the job's sacct Start and End. The interval is kept and used, never a guessed stamp.
- Rails: an error that names its HCA (or whose rank's `NET/IB : Using` list does) puts that
  rail on trial: that HCA's cable, the same rail on the job's other hosts and that rail's leaf
  uplinks, never the host's other rails. A port-error async event of an HCA votes for its cable.
- A link-down only LinkDownedCounter saw (no log, e.g. the switch's syslog is lost) joins a job
  whose NCCL named that HCA between the two counter readings: it is the flap that killed it.
- A port NCCL failed over from (>= 2.29, NCCL_IB_RESILIENCY_PORT_FAILOVER=1; the job log's
  `Device N marked as failed.` WARN, its HCA from the log's merged-NIC lines) is evidence on
  that HCA's cable, or on each HCA it may be, whatever became of the job (issue #14).
- Logs ingested without a job id are matched to the job that ran on the hosts they name at the
  time they show (or, undated, when the file was written), so their GPU causes and untimed lines
  count as if `--job` had been given.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from auditor import graph
from auditor.analyse import ber, hosts
from auditor.analyse.flaps import LOOKBACK, Flap, PortKey, flaps
from auditor.analyse.health import degraded_links
from auditor.analyse.healthy import HealthyJob, healthy_jobs
from auditor.analyse.optics import WatchList, watch_list
from auditor.config import RankingSettings
from auditor.errors import AuditorError
from auditor.models import Fabric, NodeType, ipoib_link_local_to_guid
from auditor.nccl import UNKNOWN_BOUNDS, DeathTime, death_s, default_ib_timeout, job_death
from auditor.portmap import port_number
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.store.rows import (
        CounterStepRow,
        EventRow,
        JobDuringRow,
        JobEndedRow,
        JobThroughRow,
        MaintenanceRow,
    )

LinkKey = tuple[PortKey, ...]  # one or two ends, sorted

# The shortest flap that counts as "long" in the evidence and the ranking: NCCL 2.14-2.22's
# default death time (IB timeout 18, retry count 7: 8 x 4.096 us x 2^18 = 8.6 s). Whether a flap
# killed a given job is decided with that job's own death time (auditor.nccl).
NCCL_DEATH_S = 8.6
# How long a log's write time (mtime) may trail its job's end and still name it.
LOG_WRITE_SLACK = timedelta(minutes=10)
# A watchdog timeout: the stuck collective started `ran_ms` before its stamp; the fault lies a
# little before (the last collective that completed) or just after that start.
WATCHDOG_BEFORE = timedelta(seconds=60)
WATCHDOG_AFTER = timedelta(seconds=10)
# A flap measured on second-resolution stamps may read a little short of its true length.
DURATION_TOLERANCE_S = 0.5
NETWORK_STATES = {"FAILED", "NODE_FAIL", "TIMEOUT"}  # the failed jobs the correlation reads
# Slurm ends a job NODE_FAIL when it sets one of its nodes DOWN: its host went away, not the
# network, unless a link of the job died first by the usual rules (issue #20).
HOST_STATE = "NODE_FAIL"
# A switch reboot takes all its ports down within a second or two; give clock skew room.
COMMON_MODE_WINDOW = timedelta(seconds=30)


@dataclass(slots=True)
class LinkEvidence:
    """Everything gathered against one link."""

    link: LinkKey
    flaps: list[Flap] = field(default_factory=list)
    maintenance_flaps: int = 0
    common_mode_flaps: int = 0
    counters: dict[PortKey, dict[str, int]] = field(default_factory=dict)
    rising: dict[PortKey, int] = field(default_factory=dict)  # intervals with new symbol errors
    symbol_ber: dict[PortKey, ber.PortBer] = field(default_factory=dict)  # ports with errors
    saturated: set[str] = field(default_factory=set)
    hours: float = 0.0  # span of counter readings in the window
    jobs: list[dict[str, Any]] = field(default_factory=list)
    votes: float = 0.0
    voters: set[str] = field(default_factory=set)
    degraded: str = ""  # "running at 1X HDR, could be 4X HDR" from the newest snapshot
    port_errors: set[str] = field(default_factory=set)  # jobs whose HCA saw this port go down
    survived: set[str] = field(default_factory=set)  # jobs that ran across a deadly flap and lived
    # NCCL port failovers off this link's HCA port (issue #14): at, host, job id, the HCAs the
    # log says it may have been when it cannot say which (else empty)
    failovers: list[dict[str, Any]] = field(default_factory=list)
    # COMPLETED jobs whose traffic crossed it through a flap longer than they could wait (#15)
    healthy: list[HealthyJob] = field(default_factory=list)
    # a single-rail host's cable with a reboot-long flap and no host records (#20): why the
    # verdict cannot rule out the host
    host_note: str = ""


@dataclass(slots=True)
class NodeEvent:
    """A common-mode event: many ports of one switch down together, or a host that went away
    (its rails down together, or a flap its own or Slurm's records tie to it: analyse/hosts.py).
    A host event's `guid` is its lowest HCA node GUID (the suspect's end) and `host` its name."""

    guid: str
    at: datetime
    up_at: datetime | None
    ports: set[int]
    flaps: list[Flap]
    jobs: list[dict[str, Any]] = field(default_factory=list)
    maintenance: bool = False
    host: str | None = None
    rails_down: int = 0  # of `rails`, the host's linked HCA ports
    rails: int = 0
    why: set[str] = field(default_factory=set)  # rails, records, counters, node_fail, nccl
    said: list[str] = field(default_factory=list)  # that evidence in words
    boot_at: datetime | None = None


@dataclass(slots=True)
class Evidence:
    """All evidence for one window, as the ranking reads it."""

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
    # failed jobs of the window with no job log and no error line of their hosts (coverage)
    jobs_without_logs: list[str] = field(default_factory=list)
    # Transceiver diagnostics trends over `[optics] history_days` before `until` (issue #14).
    watch: WatchList | None = None
    # the port events gather read (from a day before the lookback to `until`), oldest first
    events: list[EventRow] = field(default_factory=list)
    jobs_host: int = 0  # failed jobs killed by their host going away (issue #20)
    hosts: HostCoverage | None = None  # what host evidence the window had


@dataclass(slots=True)
class HostCoverage:
    """Which hosts had host evidence (boot records, Slurm node events), for the coverage notes
    and for the cables of single-rail hosts that no record can clear."""

    hosts: int = 0  # fabric hosts with HCA links
    by_source: dict[str, int] = field(default_factory=dict)  # source kind -> hosts it names
    without: list[str] = field(default_factory=list)  # hosts no host-event source names


def link_of(ends: list[PortKey]) -> LinkKey:
    return tuple(sorted(ends))


def _maintenance_targets(rows: list[MaintenanceRow], fabric: Fabric
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
    # A link-down only a counter saw happened somewhere between the two readings.
    first = f.counted_from if f.counted_from is not None else f.down_at
    for nodes, ports, start, end in windows:
        if first <= end and start <= f.down_at and any(
                g in nodes or (g, p) in ports for g, p in f.ends):
            return True
    return False


def _linked_ports(fabric: Fabric) -> dict[str, int]:
    count: dict[str, int] = defaultdict(int)
    for lk in fabric.links:
        count[lk.a_guid] += 1
        count[lk.b_guid] += 1
    return count


def _common_mode(candidates: list[Flap], fabric: Fabric, cfg: RankingSettings) -> list[NodeEvent]:
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
        if node.node_type == NodeType.HCA:
            continue  # a host's HCAs are judged together (analyse/hosts.py)
        need = max(cfg.common_mode_min_ports, int(total * cfg.common_mode_fraction + 0.5))
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


def _counter_evidence(deltas: list[CounterStepRow], peers: dict[PortKey, PortKey],
                      links: dict[LinkKey, LinkEvidence]
                      ) -> dict[PortKey, list[CounterStepRow]]:
    """Counter increases into the links' evidence; returns every SymbolErrorCounter interval
    (those without new errors too) of the ports that had symbol errors, for their BER."""
    symbols: dict[PortKey, list[CounterStepRow]] = defaultdict(list)
    for d in deltas:
        if d["counter"] == "SymbolErrorCounter":
            symbols[(d["guid"], d["port"])].append(d)
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
    return {k: rows for k, rows in symbols.items() if any(d["delta"] for d in rows)}


def _link_rates(fabric: Fabric, keys: set[PortKey]
                ) -> tuple[dict[PortKey, tuple[str, str]], tuple[str, str] | None]:
    """(width, speed) of the ports `keys` (their link's, else the port's own while it is
    Active), and the fabric's most common one. Of the ports asked about only: all 24,576 were
    5 ms of every `suspects` (issue #13)."""
    rates: dict[PortKey, tuple[str, str]] = {}
    for key in keys:
        p = fabric.ports.get(key)
        if p is not None and p.width and p.speed and p.state == "Active":
            rates[key] = (p.width, p.speed)
    counted: Counter[tuple[str, str]] = Counter()
    for lk in fabric.links:
        if lk.width and lk.speed:
            rate = (lk.width, lk.speed)
            if (a := (lk.a_guid, lk.a_port)) in keys:
                rates[a] = rate
            if (b := (lk.b_guid, lk.b_port)) in keys:
                rates[b] = rate
            counted[rate] += 1
    # A tie goes to the first in sorted order: the same rate in every process.
    usual = max(sorted(counted), key=lambda r: counted[r]) if counted else None
    return rates, usual


_BerReads = tuple[list[tuple[Any, ...]], dict[tuple[str, int], str]]


def _ber_reads(store: Store, since: datetime, until: datetime,
               symbols: dict[PortKey, list[CounterStepRow]], peers: dict[PortKey, PortKey]
               ) -> _BerReads:
    """What the BER of the ports with symbol errors needs from the store: the data counter
    steps and the cable types of them and their peers."""
    if not symbols:
        return [], {}
    wanted = {k for k in set(symbols) | {peers[key] for key in symbols if key in peers}
              if k[1] is not None}
    # Only the counters read below: a port's PortRcvData, its peer's PortXmitData (issue #13:
    # both counters of both ends were twice the rows, 88 ms of `suspects --since 30d`).
    series = {(*key, "PortRcvData") for key in symbols if key[1] is not None} | {
        (*peer, "PortXmitData") for key in symbols
        if (peer := peers.get(key)) is not None and peer[1] is not None}
    return store.data_deltas(since, until, sorted(series)), store.cable_types(sorted(wanted))


def _ber_evidence(fabric: Fabric, reads: _BerReads,
                  symbols: dict[PortKey, list[CounterStepRow]], peers: dict[PortKey, PortKey],
                  links: dict[LinkKey, LinkEvidence]) -> None:
    """The symbol BER of every port that had symbol errors: per counter interval, its errors
    over the bits it received (its PortRcvData, else its peer's PortXmitData over the same
    readings, else the link's width x data rate x time; auditor/analyse/ber.py)."""
    if not symbols:
        return
    steps, cables = reads
    data: dict[tuple[str, int, str], dict[tuple[datetime, datetime], int]] = defaultdict(dict)
    for guid, port, counter, prev_at, seen_at, delta in steps:
        data[(guid, port, counter)][(prev_at, seen_at)] = delta
    rates, usual = _link_rates(fabric, set(symbols) | {
        peer for key in symbols if (peer := peers.get(key)) is not None})
    for key, rows in symbols.items():
        peer = peers.get(key)
        rate = rates.get(key) or (rates.get(peer) if peer else None)
        assumed = "" if rate else " (the fabric's usual: no snapshot shows this link's)"
        width, speed = rate or usual or (None, None)
        nominal = ber.nominal(width, speed) + assumed
        own = data.get((*key, "PortRcvData"), {})
        far = data.get((*peer, "PortXmitData"), {}) if peer else {}
        intervals = []
        for d in rows:
            span = (d["prev_at"], d["seen_at"])
            seconds = (span[1] - span[0]).total_seconds()
            # A port that received nothing still counts errors on the idle stream: line bits.
            if own.get(span):
                intervals.append(ber.Interval(seconds, d["delta"], ber.data_bits(own[span]),
                                              "PortRcvData"))
            elif far.get(span):
                intervals.append(ber.Interval(seconds, d["delta"], ber.data_bits(far[span]),
                                              "the peer's PortXmitData"))
            else:
                intervals.append(ber.Interval(seconds, d["delta"],
                                              ber.line_bits(width, speed, seconds) or 0.0,
                                              nominal))
        node = fabric.nodes.get(key[0])
        cable = cables.get(key) or (cables.get(peer) if peer else None)
        measured = ber.measure(intervals, speed=speed, width=width,
                               model=node.model if node else None, media=ber.media_of(cable))
        if measured is not None:
            link = link_of([key, peer] if peer else [key])
            links.setdefault(link, LinkEvidence(link)).symbol_ber[key] = measured


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
        # A month of sacct names the same few thousand hosts millions of times.
        self._known: dict[str, str | None] = {}

    def host(self, name: str | None) -> str | None:
        if not name:
            return None
        if name in self._known:
            return self._known[name]
        found = self._resolve(name)
        self._known[name] = found
        return found

    def _resolve(self, name: str) -> str | None:
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


def _link_keys(keys: list[tuple[str, int, str, int]]) -> list[LinkKey]:
    return [_as_link(k) for k in keys]


@lru_cache(maxsize=1 << 17)  # a fabric's links; a month's ranking converts each thousands of times
def _as_link(key: tuple[str, int, str, int]) -> LinkKey:
    return link_of([(key[0], key[1]), (key[2], key[3])])


class _Cables:
    """Each node's cables and each leaf's uplinks as LinkKeys, and of them those in `flapped`,
    worked out once per `gather`: a month's failed jobs ask for the same HCAs and leaves
    thousands of times (1,200 uplink lists of 64 were 125 ms of `suspects --since 30d`,
    issue #13)."""

    def __init__(self, g: graph.FabricGraph, flapped: set[LinkKey]) -> None:
        self.g = g
        self.flapped = flapped
        # the same links as the graph keys them (either end first): a leaf's 64 uplinks are
        # looked up before they are converted, not converted to be looked up
        self._flapped_keys = {k for lk in flapped if len(lk) == 2
                              for k in ((*lk[0], *lk[1]), (*lk[1], *lk[0]))}
        self._of: dict[str, tuple[LinkKey, ...]] = {}
        self._hca: dict[str, tuple[tuple[LinkKey, ...], list[str]]] = {}
        self._uplinks: dict[str, tuple[LinkKey, ...]] = {}

    def of(self, guid: str) -> tuple[LinkKey, ...]:
        """Every link of one node, as graph.node_links orders them."""
        found = self._of.get(guid)
        if found is None:
            found = self._of[guid] = tuple(_link_keys(graph.node_links(self.g, guid)))
        return found

    def hca(self, guid: str) -> tuple[tuple[LinkKey, ...], list[str]]:
        """An HCA's links that flapped, and its leaves (in no particular order)."""
        found = self._hca.get(guid)
        if found is None:
            peers = self.g[guid]
            found = self._hca[guid] = (
                tuple(_as_link(k) for keys in peers.values() for k in keys
                      if k in self._flapped_keys),
                [n for n in peers if self.g.nodes[n]["node_type"] == NodeType.SWITCH])
        return found

    def uplinks(self, leaf: str) -> tuple[LinkKey, ...]:
        """A leaf's uplinks that flapped."""
        found = self._uplinks.get(leaf)
        if found is None:
            found = self._uplinks[leaf] = tuple(
                _as_link(k) for k in graph.uplinks(self.g, leaf) if k in self._flapped_keys)
        return found


def _footprint(cables: _Cables, guids: list[str]) -> set[LinkKey]:
    """The HCA cables of `guids` and, when they hang off several leaves, those leaves' uplinks:
    those that flapped (`cables.flapped`), the only ones a job's footprint is asked about."""
    links: set[LinkKey] = set()
    leaves: set[str] = set()
    for guid in guids:
        flapped, leaves_of = cables.hca(guid)
        links.update(flapped)
        leaves.update(leaves_of)
    if len(leaves) > 1:
        for leaf in leaves:
            links.update(cables.uplinks(leaf))
    return links


@dataclass(slots=True)
class _JobView:
    """What the correlation knows of one failed job's log evidence."""

    errors: list[dict[str, Any]]
    versions: list[str]
    env: dict[str, int]


class _Hcas:
    """HCA node GUIDs by host, and by (host, device) for the rail an error names."""

    def __init__(self, fabric: Fabric) -> None:
        self.of: dict[str, list[str]] = defaultdict(list)
        self.by_device: dict[tuple[str, str], str] = {}
        for n in fabric.nodes.values():
            if n.node_type == NodeType.HCA:
                self.of[n.name].append(n.guid)
                if n.device:
                    self.by_device[(n.name, n.device)] = n.guid

    def rail(self, hosts: list[str], devices: set[str]) -> list[str]:
        return [g for h in hosts for d in devices if (g := self.by_device.get((h, d)))]

    def named(self, host: str, device: str | None) -> list[str]:
        """The HCA an error names, or every HCA of the host when it names none."""
        guid = self.by_device.get((host, device)) if device else None
        return [guid] if guid else self.of.get(host, [])


def _interval(e: dict[str, Any], start: datetime, end: datetime) -> tuple[datetime, datetime, str]:
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


def _fault_window(view: _JobView, death: DeathTime, start: datetime, end: datetime
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
    hung = [e for e in view.errors if e["kind"] == "watchdog_timeout" and e["ran_ms"]
            and e["event_at"] is not None]
    if hung:
        began = min(e["event_at"] - timedelta(milliseconds=e["ran_ms"]) for e in hung)
        return max(start, began - WATCHDOG_BEFORE), began + WATCHDOG_AFTER, "the watchdog"
    return start, max(start, end - lo_d), "sacct Start and End"


def _fmt_t(at: datetime) -> str:
    return at.strftime("%H:%M:%S")


def gather(store: Store, since: datetime, until: datetime, cfg: RankingSettings | None = None,
           aliases: dict[str, str] | None = None) -> Evidence:
    """All evidence for [since, until] (naive UTC)."""
    cfg = cfg or RankingSettings()
    times = store.snapshot_times(until, limit=2)
    if not times:
        raise AuditorError("no topology snapshot yet: ingest ibnetdiscover or iblinkinfo "
                           "output (or run `auditor sweep`) first")
    look_from = since - cfg.before
    late_until = until + cfg.after + timedelta(minutes=10)
    # The port events, one scan of the counters for the flaps' window and the ranking's
    # (issue #13: two runs of counter_deltas were 101 ms of `suspects --since 30d`), the
    # window's job logs and failed jobs: asked now, read while the fabric is built (a third of
    # `suspects --since 24h` is DuckDB's, which runs without the GIL). In the order they are
    # needed: two workers take them in turn.
    pending_small = store.in_background(lambda s: (
        s.events(look_from - LOOKBACK, until), s.maintenance(look_from, until),
        s.host_addresses(), s.host_events(look_from - hosts.NOTICE, late_until),
        s.host_event_hosts()))
    pending_steps = store.in_background(lambda s: s.counter_steps(look_from, since, until))
    pending_logs = store.in_background(lambda s: (
        s.job_logs(look_from, late_until, jobs_since=since),
        s.job_log_settings(look_from, late_until)))
    pending_ended = store.in_background(
        lambda s: s.jobs_ended(since, until, NETWORK_STATES | {"OUT_OF_MEMORY"}))
    fabric = store.fabric(times[0])
    g = graph.build_graph(fabric)
    names = store.node_names()
    peers = store.port_peers(until)
    # The events are read once: the flaps and the coverage notes (analyse/coverage.py) both
    # need them.
    events, maintenance, addresses, host_rows, host_known = pending_small.result()
    steps = pending_steps.result()
    rails = hosts.rails(fabric, peers, aliases)
    # An HCA's counters restart when its host reboots or its driver reloads: a reset is boot
    # evidence, and what the counters read after it is no new error (issue #20).
    restarted = hosts.restarts(steps, rails)
    steps = [d for d in steps if not (d["reset"] and (d["guid"], d["port"]) in rails.host_of)]
    all_flaps = flaps(store, look_from, until, peers, events,
                      [d for d in steps if d["counter"] == "LinkDownedCounter"])
    windows = _maintenance_targets(maintenance, fabric)

    maint = {id(f) for f in all_flaps if _in_maintenance(f, windows)}
    rest = [f for f in all_flaps if id(f) not in maint]
    node_events = _common_mode(rest, fabric, cfg)
    switch_flaps = {id(f) for nev in node_events for f in nev.flaps}

    # The links the window's flaps touch, in the order they come (which flaps count against
    # them is decided once the host events are known, below).
    links: dict[LinkKey, LinkEvidence] = {}
    shown = [f for f in all_flaps
             if f.down_at is not None and not (f.down_at < since and (f.up_at or until) < since)]
    for f in shown:
        links.setdefault(link_of(f.ends), LinkEvidence(link_of(f.ends)))
    symbols = _counter_evidence([d for d in steps if d["counter"] != "LinkDownedCounter"],
                                peers, links)
    # Read while the snapshots are compared and the hosts indexed (which add no evidence:
    # the links keep the order they had).
    pending_ber = store.in_background(lambda s: _ber_reads(s, since, until, symbols, peers))
    # The host names jobs were given (read after the BER's counters, which are needed first):
    # only the jobs on the hosts next to a flap are asked for below.
    pending_names = store.in_background(lambda s: s.job_host_names())
    # Of the snapshot before, only the links that ran otherwise count (a second whole fabric
    # cost 0.15 s, its links alone 30-40 ms).
    previous = store.fabric_links_changed(times[0], times[1]) if len(times) > 1 else None
    degraded = degraded_links(fabric, previous)
    resolver = _HostResolver(fabric, addresses, aliases or {})
    hcas = _Hcas(fabric)
    _ber_evidence(fabric, pending_ber.result(), symbols, peers, links)
    for d in degraded:
        link = link_of([(d.ends[0].guid, d.ends[0].port), (d.ends[1].guid, d.ends[1].port)])
        links.setdefault(link, LinkEvidence(link)).degraded = (
            f"running at {d.width} {d.speed}, could be {d.possible_width} {d.possible_speed} "
            f"({d.reason})")

    # -- jobs ------------------------------------------------------------------------------
    # Logged for a job: only those of jobs still running at `since` (ranked or healthy here);
    # what the site runs comes from all of them, as distinct values.
    logs, (in_use, settings) = pending_logs.result()
    unlabelled = [lg for lg in logs if lg["job_id"] is None]
    # Of a month's ~100,000 jobs only the failed ones and those running at the moments asked
    # about are read (issue #13: reading all was most of `suspects --since 30d`).
    written = [(t - LOG_WRITE_SLACK, t + LOG_WRITE_SLACK) for lg in unlabelled
               for t in (lg["first_at"], lg["last_at"], lg["written_at"]) if t is not None]
    matched = _match_logs(unlabelled, _jobs_by_host(
        store.jobs_during(since, until, written), resolver, written), resolver)
    errors = store.job_errors(look_from, late_until, sources=sorted(matched), jobs_since=since)
    # Index once: a month holds thousands of failed jobs and tens of thousands of error lines.
    views: dict[str, _JobView] = defaultdict(lambda: _JobView([], [], {}))
    for lg in logs:
        job_id = lg["job_id"] or matched.get(lg["source_id"])
        if job_id is not None:
            view = views[job_id]
            view.versions += [v for v in lg["nccl_versions"] if v not in view.versions]
            for key, col in (("NCCL_IB_TIMEOUT", "ib_timeout"),
                             ("NCCL_IB_RETRY_CNT", "ib_retry_cnt")):
                if lg[col] is not None:
                    view.env.setdefault(key, lg[col])
    errors_by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in errors:
        job_id = e["job_id"] or matched.get(e["source_id"])
        if job_id is not None:
            views[job_id].errors.append(e)
        elif e["event_at"] is not None and (who := resolver.host(e["host"])):
            errors_by_host[who].append(e)
    # The failed jobs, first as facts (their hosts, errors, NCCL death time and fault window):
    # a NODE_FAIL or a job whose peers lost one host is host evidence, read before the host
    # events are judged; then each job is blamed (below).
    failed = failed_net = failed_other = failed_host = unexplained = 0
    no_logs: list[str] = []
    dead: list[_FailedJob] = []
    node_fail: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    nccl_ends: dict[str, list[hosts.NcclEndpoint]] = defaultdict(list)
    for job in pending_ended.result():
        if job["state"] not in NETWORK_STATES and job["state"] != "OUT_OF_MEMORY":
            continue
        if job["end_at"] is None or not since <= job["end_at"] <= until:
            continue
        failed += 1
        job_hosts = [h for h in (resolver.host(x) for x in job["hosts"]) if h]
        start, end = job["start_at"] or job["end_at"], job["end_at"]
        late = end + timedelta(minutes=10)
        view = views.get(job["job_id"]) or _JobView([], [], {})
        mine = view.errors + [
            e for h in set(job_hosts) for e in errors_by_host.get(h, [])
            if start <= e["event_at"] <= late]
        if job["job_id"] not in views and not mine:
            no_logs.append(job["job_id"])
        view = _JobView(mine, view.versions, view.env)
        net = [e for e in mine if e["network"]]
        other = [e for e in mine if not e["network"] and e["kind"] in ("oom", "gpu_error")]
        if job["state"] == "OUT_OF_MEMORY" or (other and not net):
            failed_other += 1
            continue
        death = job_death(view.versions, view.env, site_version=cfg.nccl_version,
                          site_timeout=cfg.nccl_ib_timeout, versions_in_use=in_use)
        fault_lo, fault_hi, timed_by = _fault_window(view, death, start, end)
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
        dead.append(_FailedJob(job, job_hosts, start, end, net, death, fault_lo, fault_hi,
                               record, endpoint[0] if endpoint else None))

    # -- hosts that went away (issue #20) -------------------------------------------------
    records: dict[str, list[hosts.HostRecord]] = defaultdict(list)
    for row in host_rows:
        if (resolved := resolver.host(row["host"])) is not None:
            records[resolved].append(hosts.HostRecord(
                resolved, row["at"], row["kind"], row["end_at"], row["reason"] or "",
                row["source_kind"]))
    facts = hosts.HostFacts(records, restarted, node_fail, nccl_ends, {
        kind: {name for x in names_of if (name := resolver.host(x))}
        for kind, names_of in host_known.items()})
    for hev in hosts.find([f for f in rest if id(f) not in switch_flaps], rails, facts, cfg,
                          until):
        node_events.append(NodeEvent(
            rails.hcas[hev.host][0] if rails.hcas.get(hev.host) else hev.host,
            hev.at, hev.up_at, set(), hev.flaps, host=hev.host, rails_down=hev.rails_down,
            rails=hev.rails, why=hev.why, said=hev.said, boot_at=hev.boot_at))
    event_of = {id(f): nev for nev in node_events for f in nev.flaps}
    host_events_of: dict[str, list[NodeEvent]] = defaultdict(list)
    for nev in node_events:
        if nev.host is not None:
            host_events_of[nev.host].append(nev)
    for f in shown:
        lev = links[link_of(f.ends)]
        if id(f) in event_of:
            lev.common_mode_flaps += 1
        elif id(f) in maint:
            lev.maintenance_flaps += 1
        elif f.down_at is not None and (f.down_at >= since or f.up_at is None
                                        or f.up_at >= since):
            lev.flaps.append(f)

    flaps_by_link: dict[LinkKey, list[Flap]] = defaultdict(list)
    for f in all_flaps:
        if f.down_at is not None:
            flaps_by_link[link_of(f.ends)].append(f)
    cables = _Cables(g, set(flaps_by_link))
    for fj in dead:
        job, start, end, net, death = fj.job, fj.start, fj.end, fj.net, fj.death
        fault_lo, fault_hi, record, job_hosts = fj.fault_lo, fj.fault_hi, fj.record, fj.hosts
        # The rails its errors name (an HCA per error); none named: every rail of its hosts.
        named = {(h, e["hca"]) for e in net if e["hca"] and (h := resolver.host(e["host"]))}
        devices = {d for _, d in named}
        guids = hcas.rail(job_hosts, devices) if devices else []
        footprint = _footprint(cables, guids or [x for h in job_hosts
                                                 for x in hcas.of.get(h, [])])
        # The HCA cables the job's own errors point at: the HCA each names, or every HCA of a
        # reporting host whose errors name none (WARN-only logs of NCCL < 2.22).
        reporters = {h for e in net if (h := resolver.host(e["host"]))}
        unnamed = reporters - {h for h, _ in named}
        named_links = {lk for guid in ([x for h, d in named for x in hcas.named(h, d)]
                                       + [x for h in unnamed for x in hcas.of.get(h, [])])
                       for lk in cables.of(guid)}
        suspects = _killers([(lk, f) for lk in footprint for f in flaps_by_link.get(lk, [])],
                            named_links, (fault_lo, fault_hi), death, start, cfg)
        by_host = _blame_host(fj, suspects, event_of, host_events_of)
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
        pairs = _pair_paths(g, net, resolver, hcas, cables)
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
            blamed = _top_voted(votes, links)
            if blamed is not None:
                links[blamed].jobs.append(record | {"by_votes": True})
        else:
            unexplained += 1

    def names_near(wanted: set[str]) -> list[str]:
        """The host names jobs were given that resolve to one of the fabric hosts `wanted`."""
        return [x for x in pending_names.result() if resolver.host(x) in wanted]

    # Only the jobs on the hosts next to a flap are read, with all their hosts (issue #13: at
    # 30 days 5,410 jobs ran during a long flap and 100 of them on a host of its cable, 12,937
    # through a flap and 4,037 next to it; the rest were fetched, split and indexed for
    # nothing).
    def running(spans: list[tuple[datetime, datetime]], wanted: set[str]
                ) -> list[JobDuringRow]:
        return store.jobs_during(since, until, spans, names_near(wanted))

    def completed(spans: list[tuple[datetime, datetime]], wanted: set[str]
                  ) -> list[JobThroughRow]:
        return store.jobs_through(since, until, spans, "COMPLETED", names_near(wanted))

    _survivors(links, running, resolver, fabric)
    _failovers(links, errors, matched, since, until, resolver, hcas, g)
    # Optics trends need weeks of readings, whatever the window asked about (issue #14).
    watch = watch_list(store, until - cfg.optics.history, until, cfg.optics, peers=peers,
                       names=names)
    crossed = healthy_jobs({k: le.flaps for k, le in links.items() if le.flaps},
                           completed, resolver.host, fabric, g, logs, matched,
                           {j: v.errors for j, v in views.items()}, cfg, in_use, settings)
    for link, found in crossed.items():
        links[link].healthy = found
    return Evidence(fabric, since, until, links, node_events, failed, failed_net, failed_other,
                    unexplained, names, no_logs, watch, events, failed_host,
                    _host_coverage(rails, facts, links, fabric))


def _host_coverage(rails: hosts.Rails, facts: hosts.HostFacts,
                   links: dict[LinkKey, LinkEvidence], fabric: Fabric) -> HostCoverage:
    """Which hosts no boot record or Slurm node event speaks of; and on the cable of each such
    single-rail host with a flap as long as a reboot, the note that a reboot would look the
    same (every rail of that host is that one cable)."""
    known = set().union(*facts.known.values()) if facts.known else set()
    cov = HostCoverage(len(rails.ports),
                       {kind: len(names) for kind, names in sorted(facts.known.items())},
                       sorted(h for h in rails.ports if h not in known))
    blind = {h for h in cov.without if len(rails.ports[h]) == 1}
    if not blind:
        return cov
    for le in links.values():
        host = next((rails.host_of[k] for k in le.link if k in rails.host_of), None)
        if host not in blind:
            continue
        long = [f for f in le.flaps if f.counted_from is None and f.down_at is not None
                and (f.up_at is None or (f.duration_s or 0) >= hosts.MIN_HOST_DOWN_S)]
        if long:
            le.host_note = (
                f"{host} has one rail: a reboot or crash of {host} would look the same as this "
                "cable's long flap; no boot records (journalctl --list-boots, last -x) or Slurm "
                "node events (sacctmgr show event, slurmctld.log) of it were ingested: ingest "
                "one to tell them apart")
    return cov


@dataclass(slots=True)
class _FailedJob:
    """One failed job of the window as the blame reads it."""

    job: JobEndedRow
    hosts: list[str]  # its fabric hosts
    start: datetime
    end: datetime
    net: list[dict[str, Any]]  # its network error lines
    death: DeathTime
    fault_lo: datetime
    fault_hi: datetime
    record: dict[str, Any]
    endpoint: str | None  # the host its peers on several rails lost (hosts.nccl_endpoint)


_NEAR = timedelta(minutes=5)
_WHY = {"rails": "its rails went down together", "records": "its boot or Slurm records",
        "counters": "its HCA counters restarted", "node_fail": "Slurm's NODE_FAIL",
        "nccl": "its peers' NCCL errors on several rails"}


def _why(ev: NodeEvent) -> str:
    return ", ".join(_WHY[w] for w in sorted(ev.why) if w in _WHY)


def _blame_host(fj: _FailedJob, suspects: list[tuple[datetime, LinkKey, Flap]],
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


def _failovers(links: dict[LinkKey, LinkEvidence], errors: list[dict[str, Any]],
               matched: dict[int, str], since: datetime, until: datetime,
               resolver: _HostResolver, hcas: _Hcas, g: graph.FabricGraph) -> None:
    """NCCL port failovers (>= 2.29, NCCL_IB_RESILIENCY_PORT_FAILOVER=1): the port NCCL moved a
    job's traffic off, whether or not the job failed later. Its WARN line is stamped (debug.cc
    at v2.29.7-1 stamps WARN lines), so only failovers dated inside the window count."""
    for e in errors:
        at = e["event_at"]
        if e["kind"] != "port_failover" or at is None or not since <= at <= until:
            continue
        host = resolver.host(e["host"])
        if host is None:
            continue
        one_of = tuple(e["hca_candidates"] or ())
        devices = [e["hca"]] if e["hca"] else list(one_of)
        record = {"at": at, "host": host, "job_id": e["job_id"] or matched.get(e["source_id"]),
                  "one_of": one_of if len(one_of) > 1 else ()}
        for device in devices:
            guid = hcas.by_device.get((host, device))
            for lk in _link_keys(graph.node_links(g, guid)) if guid else []:
                links.setdefault(lk, LinkEvidence(lk)).failovers.append(record)


def _survivors(links: dict[LinkKey, LinkEvidence],
               jobs_during: Callable[[list[tuple[datetime, datetime]], set[str]],
                                     list[JobDuringRow]],
               resolver: _HostResolver, fabric: Fabric) -> None:
    """Jobs that ran on an HCA's host through a flap of its cable longer than any NCCL since
    2.14 waits (34 s) and did not die of it: the flap did not touch their traffic (the rail
    unused, NCCL_IB_HCA, a long NCCL_IB_TIMEOUT). Evidence shown beside the flaps.
    `jobs_during(spans, hosts)`: the jobs running during one of the spans on a host named by
    a name that resolves to one of the fabric hosts `hosts` (more may come back)."""
    deadly = death_s(default_ib_timeout(UNKNOWN_BOUNDS[1]) or 20)

    def long(f: Flap) -> bool:
        return f.down_at is not None and f.up_at is not None and (f.duration_s or 0) > deadly

    long_flaps = [(f.down_at, f.up_at) for le in links.values() for f in le.flaps
                  if f.down_at is not None and f.up_at is not None
                  and (f.duration_s or 0) > deadly]
    if not long_flaps:
        return
    hosts_of = {le.link: {fabric.nodes[g].name for g, _ in le.link
                          if g in fabric.nodes and fabric.nodes[g].node_type == NodeType.HCA}
                for le in links.values()}
    # Only the hosts of a cable with a long flap are looked up below: only the jobs that ran
    # on one are asked for (issue #13: at 30 days 100 jobs of the 5,410 that ran during one).
    wanted = {h for le in links.values() if any(long(f) for f in le.flaps)
              for h in hosts_of[le.link]}
    if not wanted:
        return
    by_host = _jobs_by_host(jobs_during(long_flaps, wanted), resolver, long_flaps)
    for le in links.values():
        hosts = hosts_of[le.link]
        for f in le.flaps:
            if not hosts or f.down_at is None or f.up_at is None or \
                    (f.duration_s or 0) <= deadly:
                continue
            for h in hosts:
                for job in by_host.get(h, []):
                    # Still running 10 minutes after the link came back: it lived through it.
                    after = job["end_at"] is None or job["end_at"] > f.up_at + timedelta(minutes=10)
                    if job["start_at"] <= f.down_at and after:
                        le.survived.add(job["job_id"])


def _killers(candidates: list[tuple[LinkKey, Flap]], named_links: set[LinkKey],
             fault: tuple[datetime, datetime], death: DeathTime, start: datetime,
             cfg: RankingSettings) -> list[tuple[datetime, LinkKey, Flap]]:
    """The flaps that can have killed a job, earliest first (the first one started the storm):
    on its footprint, long enough for its NCCL to give up, beginning (for the job) inside the
    fault window. A link-down only a counter saw qualifies when the job's errors name that
    HCA's host and the counter stepped across the fault window."""
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
    out.sort(key=lambda s: (s[0], s[1]))
    return out


def _jobs_by_host(jobs: list[JobDuringRow], resolver: _HostResolver,
                  spans: list[tuple[datetime, datetime]]) -> dict[str, list[JobDuringRow]]:
    """Jobs that have started and ran during one of `spans`, by each fabric host they ran on.
    (A month holds 100,000 jobs on a million host slots; only those around the moments asked
    about are indexed.)"""
    merged: list[list[datetime]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    starts = [m[0] for m in merged]
    by_host: dict[str, list[JobDuringRow]] = defaultdict(list)
    for job in jobs:
        start, end = job["start_at"], job["end_at"]
        if start is None:
            continue
        i = bisect_right(starts, end) if end is not None else len(starts)
        # the last span starting before the job ends must end after the job starts
        if i == 0 or merged[i - 1][1] < start:
            continue
        for h in job["hosts"]:
            if (who := resolver.host(h)) is not None:
                by_host[who].append(job)
    return by_host


def _match_logs(logs: list[dict[str, Any]], by_host: dict[str, list[JobDuringRow]],
                resolver: _HostResolver) -> dict[int, str]:
    """Job logs ingested without `--job` -> the job they belong to: the job that ran on every
    host the log names, over the span of its stamps (or, with no stamp, that ended shortly
    before the file was last written). Ambiguous or unmatched logs are left out."""
    out: dict[int, str] = {}
    for lg in logs:
        if lg["job_id"] is not None:
            continue
        hosts = {h for h in (resolver.host(x) for x in lg["hosts"]) if h}
        if not hosts:
            continue
        first, last = lg["first_at"], lg["last_at"]
        fits: list[tuple[timedelta, str]] = []
        for job in by_host.get(min(hosts), []):
            mine = {h for h in (resolver.host(x) for x in job["hosts"]) if h}
            if not hosts <= mine:
                continue
            if first is not None and last is not None:
                # How far the log's stamps stick out of the job's run: 0 for the job that ran
                # them; a neighbour's slack-wide overlap only wins when nothing fits better.
                outside = max(timedelta(0), job["start_at"] - first) + (
                    max(timedelta(0), last - job["end_at"]) if job["end_at"] else timedelta(0))
                if outside <= LOG_WRITE_SLACK:
                    fits.append((outside, job["job_id"]))
            elif lg["written_at"] is not None and job["end_at"] is not None:
                gap = lg["written_at"] - job["end_at"]
                if timedelta(0) - LOG_WRITE_SLACK <= gap <= LOG_WRITE_SLACK:
                    fits.append((abs(gap), job["job_id"]))
        fits.sort()
        if fits and (len(fits) == 1 or fits[0][0] < fits[1][0]):
            out[lg["source_id"]] = fits[0][1]
    return out


def _top_voted(votes: dict[LinkKey, float], links: dict[LinkKey, LinkEvidence]
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


def _first_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errors that start a job's trouble: those within 60 s of its first dated network
    error, and the first untimed error of each (host, HCA, peer); later ones are fallout of the
    first broken QP."""
    dated = [e for e in errors if e["event_at"] is not None]
    first = min((e["event_at"] for e in dated), default=None)
    keep = [e for e in dated if first is not None and (e["event_at"] - first).total_seconds() <= 60]
    return keep + [e for e in errors if e["event_at"] is None and e["is_first"]]


def _pair_paths(g: graph.FabricGraph, errors: list[dict[str, Any]], resolver: _HostResolver,
                hcas: _Hcas, cables: _Cables) -> list[list[LinkKey]]:
    """The links each failing (host, peer) pair's traffic can cross, on the rail the error
    names (NCCL connects HCA r of one host to HCA r of the other in a rail-optimised fabric),
    and for a port-error async event the HCA's own cable."""
    pairs: set[tuple[str, str | None, str]] = set()
    own: set[tuple[str, str]] = set()
    for e in _first_errors(errors):
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
        path = graph.links_between(g, hcas.named(a, dev), far or hcas.of.get(b, []))
        if path:
            paths.append(_link_keys(path))
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


__all__ = ["Evidence", "LinkEvidence", "NodeEvent", "gather"]
