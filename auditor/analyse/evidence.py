"""The evidence records of a window and the fabric lookups the correlation shares.

`LinkEvidence` (everything gathered against one link), `NodeEvent` (a whole switch, or a host
that went away), `Evidence` (a window's all, as the ranking reads it) and the windows and
thresholds they are judged with; `HostResolver` (the names jobs and logs give hosts, to fabric
hosts), `Hcas` (a host's HCAs, by device for the rail an error names) and `Cables` (each node's
cables and each leaf's uplinks as LinkKeys, worked out once per window). `correlate.gather`
fills the records, `blame` judges each failed job with them, `rank` scores them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from auditor import graph
from auditor.analyse import ber
from auditor.analyse.flaps import Flap
from auditor.analyse.optics.model import WatchList
from auditor.models import EdgeKey, Fabric, LinkKey, NodeType, PortKey, ipoib_link_local_to_guid

if TYPE_CHECKING:
    from auditor.store.rows import EventRow, JobDuringRow

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
# Vote dust (issue #25): a link whose only evidence is NCCL pair votes summing below this is not
# listed as a suspect. Without forwarding tables each failing (host, peer) pair spreads one vote
# over every link of the shortest paths between its two HCAs (blame._votes, as in 007): between
# leaves of different pods of a 65,536-GPU three-tier fat tree that is ~2,100 links, ~0.0005 of
# a vote each, and 13,137 of the 13,200 suspects of a day were such links. 0.01 is 1 % of one
# pair's vote: a link that gets less lies on paths spread over more than 100 links, one of the
# fabric's equal-cost paths, nothing a technician can act on. The votes still count wherever the
# link has other evidence (a flap, a failed job, counters, optics) and in the blame's top-voted
# link; the suspects JSON says how many links were left out (`vote_dust_links`).
VOTE_DUST = 0.01


@dataclass(frozen=True, slots=True)
class HealthyJob:
    """A COMPLETED job that was running across a link through one of its flaps."""

    job_id: str
    flap: int  # index into the link's flaps (LinkEvidence.flaps)
    weight: float  # how sure it is that the job's traffic crossed the link, in (0, 1]
    how: str  # what says it crossed: "its Using list names the HCA", "rail not known", ...


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
    # [fabric] adaptive_routing (issue #23): the other equal-cost up ports AR can send this
    # link's flows out of when it goes down (0: a host cable, a sole path, or AR off)
    ar_alternatives: int = 0
    # long flaps of a host cable while its host ran no job, by scheduler records that cover
    # them (issue #23): their length harmed nothing
    idle_flaps: list[Flap] = field(default_factory=list)


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
    # the fabric's graph as the correlation built it: the report's findings ask it again
    # (building a second one was 0.7 s of `report` at 65,536 GPUs, issue #25)
    graph: graph.FabricGraph | None = None
    # links left out of the ranking as vote dust (VOTE_DUST), counted by `rank.rank`
    vote_dust_links: int = 0


@dataclass(slots=True)
class HostCoverage:
    """Which hosts had host evidence (boot records, Slurm node events), for the coverage notes
    and for the cables of single-rail hosts that no record can clear."""

    hosts: int = 0  # fabric hosts with HCA links
    by_source: dict[str, int] = field(default_factory=dict)  # source kind -> hosts it names
    without: list[str] = field(default_factory=list)  # hosts no host-event source names


def link_of(ends: list[PortKey]) -> LinkKey:
    return tuple(sorted(ends))


class HostResolver:
    """Job logs name hosts by short name, FQDN, Slurm NodeName or pod name, and peers by
    IPoIB/OOB address: bring them all to the fabric's host names."""

    def __init__(self, fabric: Fabric, addresses: dict[str, str],
                 aliases: dict[str, str]) -> None:
        self.hosts = {n.name.lower(): n.name for n in fabric.nodes.values()
                      if n.node_type == NodeType.HCA}
        self.addresses = {a.split("%", 1)[0].lower(): h for a, h in addresses.items()}
        self.aliases = {k.lower(): v for k, v in aliases.items()}
        self._fabric = fabric
        self._port_hosts: dict[str, str] | None = None
        # A month of sacct names the same few thousand hosts millions of times.
        self._known: dict[str, str | None] = {}

    @property
    def port_hosts(self) -> dict[str, str]:
        """HCA port GUID -> host name. An IPoIB link-local address embeds the port GUID (RFC
        4391): a peer named by one resolves with no hosts file at all. Made when such a name
        is first met (every port of a 65,536-GPU fabric was 0.1 s of every `suspects`)."""
        if self._port_hosts is None:
            nodes = self._fabric.nodes
            self._port_hosts = {
                p.port_guid: nodes[p.guid].name for p in self._fabric.ports.values()
                if p.port_guid and p.guid in nodes and nodes[p.guid].node_type == NodeType.HCA}
        return self._port_hosts

    def host(self, name: str | None) -> str | None:
        if not name:
            return None
        if name in self._known:
            return self._known[name]
        found = self._resolve(name)
        self._known[name] = found
        return found

    def each(self, names: Iterable[str | None]) -> list[str | None]:
        """`host` of each name, in order, the memo read inline: a month of jobs of up to 2,048
        hosts names hosts millions of times (issue #25)."""
        known, host = self._known, self.host
        return [known[n] if n in known else host(n) for n in names]

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


def link_keys(keys: list[tuple[str, int, str, int]]) -> list[LinkKey]:
    # map: the cache's lookups in C (a path between two pods of a 65,536-GPU fat tree has
    # 2,100 links, and a day's failed jobs ask for hundreds of paths)
    return list(map(as_link, keys))


# A fabric's links: a month's ranking converts each thousands of times. 2**18 holds the 196,608
# links of a 65,536-GPU fat tree (2**17 did not: its paths' spine-core links were converted
# again and again, issue #25).
@lru_cache(maxsize=1 << 18)
def as_link(key: tuple[str, int, str, int]) -> LinkKey:
    return link_of([(key[0], key[1]), (key[2], key[3])])


class Cables:
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
        # each node's flapped links as the graph keys them: a leaf's uplinks that flapped are
        # a few of these, not a filter of its 32-64 uplinks (2,048 leaves at 65,536 GPUs)
        self._flapped_at: dict[str, dict[EdgeKey, None]] = defaultdict(dict)
        for k in self._flapped_keys:
            if k in g.links:
                self._flapped_at[k[0]][k] = None
                self._flapped_at[k[2]][k] = None
        self._of: dict[str, tuple[LinkKey, ...]] = {}
        self._hca: dict[str, tuple[tuple[LinkKey, ...], list[str]]] = {}
        self._uplinks: dict[str, tuple[LinkKey, ...]] = {}

    def of(self, guid: str) -> tuple[LinkKey, ...]:
        """Every link of one node, as graph.node_links orders them."""
        found = self._of.get(guid)
        if found is None:
            found = self._of[guid] = tuple(link_keys(graph.node_links(self.g, guid)))
        return found

    def hca(self, guid: str) -> tuple[tuple[LinkKey, ...], list[str]]:
        """An HCA's links that flapped, and its leaves (both in no particular order)."""
        found = self._hca.get(guid)
        if found is None:
            self.hcas([guid])
            found = self._hca[guid]
        return found

    def hcas(self, guids: list[str]) -> None:
        """`hca` of each of `guids` worked out at once: its flapped links from those of every
        node (the graph's keys of the flapped links), its leaves without its links' objects
        (issue #25: a day's failed jobs ask about 30,000 HCAs at 65,536 GPUs)."""
        missing = [guid for guid in dict.fromkeys(guids) if guid not in self._hca]
        if not missing:
            return
        nodes, flapped_at, switch = self.g.nodes, self._flapped_at, NodeType.SWITCH
        for guid, peers in zip(missing, self.g.neighbor_lists(missing), strict=True):
            flapped = flapped_at.get(guid)
            self._hca[guid] = (tuple(map(as_link, flapped)) if flapped else (),
                               [n for n in peers if nodes[n]["node_type"] == switch])

    def uplinks(self, leaf: str) -> tuple[LinkKey, ...]:
        """A leaf's uplinks that flapped, as graph.uplinks orders them."""
        found = self._uplinks.get(leaf)
        if found is None:
            nodes = self.g.nodes
            found = self._uplinks[leaf] = tuple(as_link(k) for k in sorted(
                k for k in self._flapped_at.get(leaf, ())
                if nodes[k[2] if k[0] == leaf else k[0]]["node_type"] == NodeType.SWITCH))
        return found


class Hcas:
    """HCA node GUIDs by host, and by (host, device) for the rail an error names."""

    def __init__(self, fabric: Fabric) -> None:
        self.of: dict[str, list[str]] = defaultdict(list)
        self.by_device: dict[tuple[str, str], str] = {}
        self.device_of: dict[str, str | None] = {}
        for n in fabric.nodes.values():
            if n.node_type == NodeType.HCA:
                self.of[n.name].append(n.guid)
                self.device_of[n.guid] = n.device
                if n.device:
                    self.by_device[(n.name, n.device)] = n.guid

    def rail(self, hosts: list[str], devices: set[str]) -> list[str]:
        return [g for h in hosts for d in devices if (g := self.by_device.get((h, d)))]

    def named(self, host: str, device: str | None) -> list[str]:
        """The HCA an error names, or every HCA of the host when it names none."""
        guid = self.by_device.get((host, device)) if device else None
        return [guid] if guid else self.of.get(host, [])


def jobs_by_host(jobs: list[JobDuringRow], resolver: HostResolver,
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
        for who in resolver.each(job["hosts"]):
            if who is not None:
                by_host[who].append(job)
    return by_host
