"""Host events (issue #20): a host that goes away is not a cable.

A host that reboots, crashes, loses power or resets its HCAs takes every one of its links down
for minutes: each rail's leaf logs a DOWN, the jobs on it end NODE_FAIL or FAILED, and their
peers' NCCL errors point at it. Read per cable that is N cable faults; it is one host event.

- A host is the unit, not an HCA: a rail-optimised host has one HCA (one node GUID) per rail.
  HCAs are grouped by the host name their node description (`dgx0014 mlx5_3`), the node-name map
  or `[aliases]` gives them (`FabricNode.name`), never by system image GUID alone (the cards of
  one host each carry their own).
- The rails of one host going down within `COMMON_MODE_WINDOW` of each other are one host event
  when they are most of its linked HCA ports (`[ranking] host_event_fraction`, at least
  `host_event_min_rails`): a leaf whose syslog is lost leaves one rail without evidence.
- With fewer rails (a single-rail host, or rails without evidence), a flap is a host event when
  the host's own record or Slurm's says the host went: a boot (journalctl --list-boots, last -x,
  the kernel's boot banner, slurmctld's `unexpectedly rebooted boot_time=`) while its link was
  down, a crash or shutdown as it went down, Slurm setting it DOWN or not responding within
  `NOTICE` after, its HCA counters restarting across the flap (a reboot or a driver reload), a
  NODE_FAIL job on it ending within `NOTICE`, or the NCCL errors of a job's peers on several rails
  all pointing at it while its own ranks said nothing (007's common element, at the endpoint).
- A NCCL verdict or a boot with no flap at all (every rail's switch log lost) is still an event
  when a job died with it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from auditor.analyse.flaps import Flap
from auditor.config import RankingSettings
from auditor.models import Fabric, NodeType, PortKey, PortPeers

if TYPE_CHECKING:
    from auditor.store.rows import CounterStepRow, JobErrorRow

# slurmctld sets a node DOWN once it has not answered for SlurmdTimeout, 300 s by default
# (SchedMD/slurm@slurm-24-11-7-1 src/common/read_config.h:141 DEFAULT_SLURMD_TIMEOUT), pinging
# every SlurmdTimeout/3 (src/slurmctld/ping_nodes.c:206) and logging "Nodes %s not responding,
# setting DOWN" (ping_nodes.c:398); a node that reboots faster registers with a new boot time
# and is set DOWN then. Twice the default covers the ping period and a busy controller.
NOTICE = timedelta(seconds=600)
# A boot lies between the link going down (the host stops) and coming up (the driver loads);
# kernel and switch clocks differ by a little.
BOOT_SLACK = timedelta(minutes=2)
# A flap that only a NODE_FAIL or a counter restart ties to the host lasted at least this long:
# a GPU server's POST and boot take minutes, a cable's flap often seconds.
MIN_HOST_DOWN_S = 60.0
# The rails of one host going down together (a host's HCAs stop within a second or two).
RAILS_WINDOW = timedelta(seconds=30)


@dataclass(slots=True)
class HostRecord:
    """One host-event row of the store, its host resolved to a fabric host."""

    host: str
    at: datetime
    kind: str
    end_at: datetime | None
    reason: str
    source: str  # the ingest kind: slurm-events, slurmctld, boots, dmesg


@dataclass(slots=True)
class NcclEndpoint:
    """A failed job whose peers on several rails lost one host that itself said nothing."""

    host: str
    job_id: str
    lo: datetime  # when the fault began, as an interval
    hi: datetime
    rails: set[str]
    peers: set[str]


@dataclass(slots=True)
class Rails:
    """Each fabric host's HCAs and its linked HCA ports (its rails)."""

    hcas: dict[str, list[str]] = field(default_factory=dict)  # host -> HCA node GUIDs
    ports: dict[str, set[PortKey]] = field(default_factory=dict)  # host -> linked HCA ports
    host_of: dict[PortKey, str] = field(default_factory=dict)  # an HCA port -> its host


def host_key(name: str, guid: str, aliases: dict[str, str], names: set[str]) -> str:
    """The host an HCA belongs to: its name, or the HCA name `[aliases]` gives it (two cards of
    one host described as `dgx0014-ib0 mlx5_0` and `dgx0014 mlx5_1`), unless the name cannot be
    a host name. An HCA whose node description was never set reports its model ("MT4123
    ConnectX6   Mellanox Technologies"), which many hosts share: such an HCA is a host of its
    own, keyed by its GUID."""
    if not name or name.split(maxsplit=1) != [name]:  # empty, or any whitespace in it
        return guid
    alias = aliases.get(name.lower())
    return alias if alias is not None and alias in names else name


def rails(fabric: Fabric, peers: PortPeers,
          aliases: dict[str, str] | None = None) -> Rails:
    """Group the fabric's HCAs into hosts by name. A port is a rail when it carries a link in
    the snapshot or had a peer in any earlier one (a host down at the snapshot still has
    rails)."""
    out = Rails()
    lowered = {k.lower(): v for k, v in (aliases or {}).items()}
    # Each name's host worked out once (a host's 8 HCAs share it: 65,536 at 65,536 GPUs).
    by_name: dict[str, list[str]] = defaultdict(list)
    for n in fabric.nodes.values():
        if n.node_type == NodeType.HCA:
            by_name[n.name].append(n.guid)
    names = set(by_name)
    hcas: dict[str, list[str]] = defaultdict(list)
    for name, guids in by_name.items():
        if (host := host_key(name, "", lowered, names)):
            hcas[host].extend(guids)
        else:  # not a host name: each HCA is a host of its own, keyed by its GUID
            for guid in guids:
                hcas[guid].append(guid)
    by_guid = {g: host for host, gs in hcas.items() for g in gs}
    # (asked of the HCAs only: a 65,536-GPU fabric has 393,216 ports with peers, issue #25)
    linked = peers.of_nodes(by_guid)
    if not peers.covers(fabric):
        linked += fabric.link_rows().ports_of(by_guid)
    host_of = out.host_of = dict(zip(linked, map(by_guid.__getitem__, map(itemgetter(0), linked)),
                                     strict=True))
    ports: dict[str, set[PortKey]] = defaultdict(set)
    for key, host in host_of.items():
        ports[host].add(key)
    out.hcas = {h: sorted(gs) for h, gs in hcas.items()}
    out.ports = dict(ports)
    return out


@dataclass(slots=True)
class HostFacts:
    """What a window holds about hosts, beside the flaps: their own and Slurm's records, the
    HCA counter restarts, the NODE_FAIL jobs and the NCCL endpoints."""

    records: dict[str, list[HostRecord]] = field(default_factory=dict)
    restarts: dict[str, list[tuple[datetime, datetime]]] = field(default_factory=dict)
    node_fail: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)  # end, job
    nccl: dict[str, list[NcclEndpoint]] = field(default_factory=dict)
    # hosts any host-event source speaks of, by source kind (the coverage notes)
    known: dict[str, set[str]] = field(default_factory=dict)


def need_rails(total: int, cfg: RankingSettings) -> int:
    """How many of a host's `total` rails going down together make a host event."""
    return max(cfg.host_event_min_rails, math.ceil(total * cfg.host_event_fraction - 1e-9))


@dataclass(slots=True)
class _Cluster:
    host: str
    flaps: list[tuple[Flap, PortKey]]

    @property
    def at(self) -> datetime:
        return min(f.down_at for f, _ in self.flaps if f.down_at is not None)

    @property
    def up_at(self) -> datetime | None:
        ups = [f.up_at for f, _ in self.flaps]
        return None if any(u is None for u in ups) else max(u for u in ups if u is not None)

    @property
    def rails(self) -> set[PortKey]:
        return {k for _, k in self.flaps}


def _clusters(candidates: list[Flap], r: Rails) -> dict[str, list[_Cluster]]:
    """Each host's rail flaps grouped by time: a flap joins the group whose first down lies
    within RAILS_WINDOW before it."""
    by_host: dict[str, list[tuple[Flap, PortKey]]] = defaultdict(list)
    for f in candidates:
        if f.down_at is None or f.counted_from is not None:
            continue
        for key in f.ends:
            host = r.host_of.get(key)
            if host is not None:
                by_host[host].append((f, key))
                break
    out: dict[str, list[_Cluster]] = {}
    for host, items in by_host.items():
        items.sort(key=lambda fk: (fk[0].down_at, fk[1]))
        groups: list[_Cluster] = []
        for f, key in items:
            assert f.down_at is not None  # noqa: S101 - filtered above
            if groups and f.down_at - groups[-1].at <= RAILS_WINDOW:
                groups[-1].flaps.append((f, key))
            else:
                groups.append(_Cluster(host, [(f, key)]))
        out[host] = groups
    return out


def _fmt(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S")


_SOURCE_WORDS = {"boots": "boot records", "dmesg": "its kernel log", "slurmctld": "slurmctld.log",
                 "slurm-events": "sacctmgr show event"}


def _said(rec: HostRecord) -> str:
    where = _SOURCE_WORDS.get(rec.source, rec.source)
    if rec.kind == "boot":
        return f"booted at {_fmt(rec.at)} ({where})"
    if rec.kind in ("crash", "shutdown"):
        what = "crashed" if rec.kind == "crash" else "shut down"
        return f"{what} at {_fmt(rec.at)} ({where})"
    reason = f" ({rec.reason})" if rec.reason else ""
    word = {"down": "set DOWN", "not_responding": "not responding", "drain": "drained",
            "reboot_requested": "reboot requested"}.get(rec.kind, rec.kind)
    return f"Slurm: {word} at {_fmt(rec.at)}{reason} ({where})"


def _record_evidence(records: list[HostRecord], down: datetime, up: datetime | None,
                     until: datetime) -> list[HostRecord]:
    """The host's records that say it went away around a flap from `down` to `up`."""
    hi = (up or until) + BOOT_SLACK
    lo = down - BOOT_SLACK
    # A boot, crash or shutdown while the link was down; Slurm noticing within NOTICE after.
    return [rec for rec in records
            if (rec.kind in ("boot", "crash", "shutdown") and lo <= rec.at <= hi)
            or (rec.kind in ("down", "not_responding") and lo <= rec.at <= down + NOTICE)]


def find(candidates: list[Flap], r: Rails, facts: HostFacts, cfg: RankingSettings,
         until: datetime) -> list[HostEventFound]:
    """The host events among `candidates` (flaps outside maintenance and switch events), and
    those a job's death shows with no flap at all."""
    found: list[HostEventFound] = []
    for host, groups in _clusters(candidates, r).items():
        total = len(r.ports.get(host, ()))
        need = need_rails(total, cfg)
        for g in groups:
            down, up = g.at, g.up_at
            lasted = ((up or until) - down).total_seconds()
            said: list[str] = []
            why: set[str] = set()
            n_down = len(g.rails)
            if total >= 2 and n_down >= min(need, total) and n_down >= 2:
                why.add("rails")
            recs = _record_evidence(facts.records.get(host, []), down, up, until)
            if recs:
                why.add("records")
                said += [_said(x) for x in recs[:4]]
            long = lasted >= MIN_HOST_DOWN_S
            restarts = [s for s in facts.restarts.get(host, []) if s[0] <= down <= s[1]]
            if restarts and long:
                why.add("counters")
                lo, hi = restarts[0]
                said.append(f"its HCA counters restarted between {_fmt(lo)} and {_fmt(hi)} (a "
                            "reboot or a driver reload)")
            failed = [(end, job) for end, job in facts.node_fail.get(host, [])
                      if down - BOOT_SLACK <= end <= down + NOTICE]
            if failed and long:
                why.add("node_fail")
                said.append(f"Slurm ended {len(failed)} job(s) on it NODE_FAIL "
                            f"({', '.join(sorted({j for _, j in failed})[:5])})")
            ends = [e for e in facts.nccl.get(host, [])
                    if e.lo - BOOT_SLACK <= down <= e.hi + BOOT_SLACK]
            if ends:
                why.add("nccl")
                said.append(_nccl_said(ends))
            if not why:
                continue
            found.append(HostEventFound(
                host, down, up, [f for f, _ in g.flaps], n_down, total, why, said,
                boot_at=min((x.at for x in recs if x.kind == "boot"), default=None)))
    # A job's peers lost a host whose rails show no flap (their switch logs lost, or the host
    # still down past the window's last line): the NCCL errors alone place the event.
    for host, ends in facts.nccl.items():
        for e in ends:
            if any(ev.host == host and ev.at - NOTICE <= e.hi and e.lo <= (ev.up_at or until)
                   for ev in found):
                continue
            recs = _record_evidence(facts.records.get(host, []), e.lo, None, until)
            found.append(HostEventFound(
                host, e.lo, None, [], 0, len(r.ports.get(host, ())), {"nccl"} | (
                    {"records"} if recs else set()),
                [_nccl_said([e])] + [_said(x) for x in recs[:4]],
                boot_at=min((x.at for x in recs if x.kind == "boot"), default=None),
                no_flap=True))
    found.sort(key=lambda ev: (ev.at, ev.host))
    return found


def _nccl_said(ends: list[NcclEndpoint]) -> str:
    e = ends[0]
    more = f" (and {len(ends) - 1} more job(s))" if len(ends) > 1 else ""
    return (f"NCCL: in job {e.job_id} its peers on {len(e.rails)} rails "
            f"({', '.join(sorted(e.rails)[:8])}) lost it while its own ranks said nothing"
            f"{more}")


@dataclass(slots=True)
class HostEventFound:
    """A host that went away: its rail flaps, what says so, the jobs that died with it."""

    host: str
    at: datetime
    up_at: datetime | None
    flaps: list[Flap]
    rails_down: int
    rails: int
    why: set[str]  # rails, records, counters, node_fail, nccl
    said: list[str]
    boot_at: datetime | None = None
    no_flap: bool = False
    jobs: list[dict[str, Any]] = field(default_factory=list)


def nccl_endpoint(errors: list[JobErrorRow], host_of: Any) -> tuple[str, set[str], set[str]
                                                                    ] | None:
    """The host a failed job's peers on several rails all lost, when its own ranks reported
    nothing: (host, the rails, the peers reporting), else None. `host_of` resolves a printed
    name to a fabric host."""
    toward: dict[str, set[str]] = defaultdict(set)
    reporters: dict[str, set[str]] = defaultdict(set)
    speaking: set[str] = set()
    for e in errors:
        if not e["network"]:
            continue
        a = host_of(e["host"])
        if a is None:
            continue
        speaking.add(a)
        b = host_of(e["peer"]) if e["peer"] else None
        if b is None or b == a or not e["hca"]:
            continue
        toward[b].add(e["hca"])
        reporters[b].add(a)
    best = [(len(rails), b) for b, rails in toward.items() if len(rails) >= 2 and b not in speaking]
    if not best:
        return None
    best.sort(key=lambda x: (-x[0], x[1]))
    if len(best) > 1 and best[0][0] == best[1][0]:
        return None  # two hosts lost alike: no single common element
    host = best[0][1]
    return host, toward[host], reporters[host]


def restarts(steps: list[CounterStepRow], r: Rails) -> dict[str, list[tuple[datetime, datetime]]]:
    """The counter intervals in which every one of a host's HCA ports that was read restarted
    (a reboot or a driver reload zeroes them; a single port's reset may be a `perfquery -R`):
    host -> (earlier reading, later reading)."""
    reset: dict[tuple[str, datetime, datetime], set[PortKey]] = defaultdict(set)
    read: dict[tuple[str, datetime, datetime], set[PortKey]] = defaultdict(set)
    for d in steps:
        key = (d["guid"], d["port"])
        host = r.host_of.get(key)
        if host is None:
            continue
        span = (host, d["prev_at"], d["seen_at"])
        read[span].add(key)
        if d.get("reset"):
            reset[span].add(key)
    out: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for span, ports in reset.items():
        if ports == read[span]:
            out[span[0]].append((span[1], span[2]))
    return {h: sorted(v) for h, v in out.items()}


__all__ = ["HostEventFound", "HostFacts", "HostRecord", "NcclEndpoint", "Rails", "find",
           "nccl_endpoint", "need_rails", "rails", "restarts"]
