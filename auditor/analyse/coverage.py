"""What a ranking could not see (issue #15, "evidence coverage").

Every `suspects` and `report` output says where its evidence has holes, so a run from host
counters and job logs alone (a tenant who cannot read the switches) is honest about its blind
spots, and an operator knows which switch's syslog forwarding broke:

- which switch-side sources of port events the window had (issue #24): switch syslog, NVOS
  event tables, UFM event.log, UFM REST events (`event_sources`); a site with syslog alone
  gets no note, one with none or with the NVIDIA sources a note naming what it had and not;
- a switch's own log (syslog, or its NVOS event table) missing or incomplete: the switch sits
  at the far end of link changes that other switches logged in theirs, and logged few or none
  of them itself (a link going down is seen by both ends; UFM and opensm are fabric-wide and
  do not count as the switch's own log);
- a switch clock off: the same link change stamped by both ends' syslogs, the two stamps apart
  by more than a few seconds, consistently (the median over the pairs);
- hosts never read: fabric hosts the host side (the host sweep, a dmesg file, sysfs counters)
  never told us anything about, so their HCA end is seen only from the switch;
- failed jobs without a job log: nothing placed their failure on the fabric but time;
- hosts without host evidence (issue #20): no boot record (journalctl --list-boots, last -x,
  the kernel log) and no Slurm node event (sacctmgr show event, slurmctld.log) names them, so a
  reboot of such a host is told from a cable fault only by its rails going down together (and
  on a single-rail host not at all).

It also names what the fabric was read through in the window (issue #24: a site that keeps
only ibdiagnet runs and NVOS or UFM events has no ibnetdiscover and no switch syslog):
`fabric_sources`, per tool the snapshots taken (ibnetdiscover, iblinkinfo, ibqueryerrors,
perfquery, ibdiagnet runs) and per origin the port events (syslog, ufm-events, opensm, snmp,
ibdiagnet, ...), and `sources_note`, the same as one sentence.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.analyse.evidence import Evidence
from auditor.models import NodeType, clip
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.store.rows import EventRow

# The origins of a switch's own log lines: Onyx syslog, and NVOS's event table (issue #24).
SWITCH_LOGS = frozenset({"syslog", "nvos-events"})
# The switch-side sources of port events a window may have had, as the notes name them.
EVENT_SOURCES: dict[str, str] = {
    "syslog": "switch syslog", "nvos-events": "NVOS event tables",
    "ufm-events": "UFM event.log", "ufm-rest-events": "UFM REST events"}
# Both ends log one link change within a second or two (flaps.py pairs them with this slack);
# a peer's line further away than PAIR_WINDOW is another change.
PAIR_WINDOW = timedelta(seconds=90)
CLOCK_OFF_S = 5.0  # a median gap above this between a switch and its peers is its clock
MIN_PAIRS = 3  # fewer paired changes than this say nothing about a clock
MISSING_SHARE = 0.5  # a switch that logged less than this share of its expected changes
MIN_EXPECTED = 2  # ... out of at least this many
NAMES_SHOWN = 8
NAME_SHOWN = 64
# The kinds of the sources a fabric snapshot comes from (auditor/ingest/kinds.py, captures).
SNAPSHOT_KINDS = ("ibdiagnet", "ibnetdiscover", "iblinkinfo", "ibqueryerrors", "perfquery")
# Port events a snapshot comparison made: the fabric read twice, no source of its own.
DERIVED_ORIGINS = frozenset({"topology"})


@dataclass
class Coverage:
    """The blind spots of one window; `notes` are the sentences outputs show."""

    switches: int = 0
    switches_log_missing: list[str] = field(default_factory=list)  # logged none expected
    switches_log_incomplete: list[str] = field(default_factory=list)
    clock_off: dict[str, float] = field(default_factory=dict)  # switch -> median offset (s)
    hosts: int = 0
    hosts_never_read: list[str] = field(default_factory=list)
    jobs_failed: int = 0
    jobs_without_logs: list[str] = field(default_factory=list)
    switch_log_lines: int = 0  # port events from switch syslog or NVOS tables in the window
    # port events in the window per switch-side source (EVENT_SOURCES' keys, all of them)
    event_sources: dict[str, int] = field(default_factory=dict)
    nvos_switches: int = 0  # switches whose NVOS event table gave events in the window
    hosts_without_records: list[str] = field(default_factory=list)  # no boot / Slurm record
    host_records: dict[str, int] = field(default_factory=dict)  # source kind -> hosts named
    # what the fabric was read through: kind/origin -> {"snapshots": n, "port_events": n}
    fabric_sources: dict[str, dict[str, int]] = field(default_factory=dict)
    sources_note: str = ""
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "switches": self.switches,
            "switches_log_missing": self.switches_log_missing,
            "switches_log_incomplete": self.switches_log_incomplete,
            "clock_off_s": {k: round(v, 1) for k, v in sorted(self.clock_off.items())},
            "hosts": self.hosts, "hosts_never_read": self.hosts_never_read,
            "jobs_failed": self.jobs_failed, "jobs_without_logs": self.jobs_without_logs,
            "hosts_without_records": self.hosts_without_records,
            "host_records": self.host_records,
            "event_sources": self.event_sources, "nvos_switches": self.nvos_switches,
            "fabric_sources": self.fabric_sources,
            "notes": self.notes,
        }


def _names(names: list[str]) -> str:
    # Names are fabric and scheduler text (untrusted): each shown cut to NAME_SHOWN characters.
    shown = ", ".join(clip(n, NAME_SHOWN) for n in names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _switch_logs(ev: Evidence, events: list[EventRow], cov: Coverage) -> None:
    fabric = ev.fabric
    switch = {g for g, n in fabric.nodes.items() if n.node_type == NodeType.SWITCH}
    logged: dict[tuple[str, int], list[tuple[datetime, str]]] = defaultdict(list)
    for e in events:
        if e["origin"] in SWITCH_LOGS and e["guid"] in switch and e["port"] is not None:
            logged[(e["guid"], e["port"])].append((e["event_at"], e["state"]))
    # The far end of the ports that logged only (all 24,576 were 5 ms of every `suspects`).
    peers: dict[tuple[str, int], tuple[str, int]] = {}
    if logged:
        # the links at the logged ports, in the links' order (issue #25: all 196,608 of a
        # 65,536-GPU fabric made for a few hundred)
        rows_at, cables = fabric.link_rows(), fabric.links
        for i in sorted({i for guid, port in logged for i in rows_at.at_port(guid, port)}):
            lk = cables[i]
            a, b = (lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)
            if a in logged:
                peers[a] = b
            if b in logged:
                peers[b] = a
    cov.switch_log_lines = sum(len(v) for v in logged.values())
    expected: dict[str, int] = defaultdict(int)
    seen: dict[str, int] = defaultdict(int)
    pairs: list[tuple[str, str, float]] = []  # (a, b, b's stamp - a's stamp), each change once
    for port, changes in logged.items():
        far = peers.get(port)
        if far is None or far[0] not in switch:
            continue  # an HCA's end logs in dmesg, if anywhere
        theirs = logged.get(far, [])
        for at, state in changes:
            expected[far[0]] += 1
            match = [t for t, s in theirs if s == state and abs(t - at) <= PAIR_WINDOW]
            if match:
                seen[far[0]] += 1
                if port[0] < far[0]:
                    near = min(match, key=lambda t: abs(t - at))
                    pairs.append((port[0], far[0], (near - at).total_seconds()))
    for guid, n in expected.items():
        name = fabric.nodes[guid].name
        if n >= MIN_EXPECTED and seen[guid] == 0:
            cov.switches_log_missing.append(name)
        elif n >= MIN_EXPECTED and seen[guid] < MISSING_SHARE * n:
            cov.switches_log_incomplete.append(name)
    cov.switches_log_missing.sort()
    cov.switches_log_incomplete.sort()
    cov.clock_off = {fabric.nodes[g].name: off for g, off in _clock_offsets(pairs).items()}


def _clock_offsets(pairs: list[tuple[str, str, float]]) -> dict[str, float]:
    """Switches whose clock is off, and by how much. A gap between two ends says only that one
    of them is off; a switch off by 40 s makes each of its peers look 40 s behind *it*. So the
    most-off switch (the largest median gap to all its peers) is named first and its stamps
    corrected, then the medians are taken again: a peer that looked off only against it no
    longer does."""
    # statistics imports random: 8 ms of every suspects, for pairs few windows have
    import statistics

    corr: dict[str, float] = defaultdict(float)
    found: dict[str, float] = {}
    for _ in range(len({x for a, b, _ in pairs for x in (a, b)})):
        gaps: dict[str, list[float]] = defaultdict(list)
        for a, b, dt in pairs:
            d = dt - corr[b] + corr[a]
            gaps[b].append(d)
            gaps[a].append(-d)
        worst = max(((g, statistics.median(v)) for g, v in gaps.items()
                     if len(v) >= MIN_PAIRS and g not in found),
                    key=lambda gv: (abs(gv[1]), gv[0]), default=None)
        if worst is None or abs(worst[1]) <= CLOCK_OFF_S:
            break
        corr[worst[0]] += worst[1]
        found[worst[0]] = corr[worst[0]]
    return found


def _own_log(cov: Coverage) -> str:
    """What a switch's own log is called in the notes: syslog, NVOS's table, or either."""
    syslog, nvos = cov.event_sources.get("syslog", 0), cov.event_sources.get("nvos-events", 0)
    if nvos and not syslog:
        return "NVOS event table"
    return "switch log (syslog or NVOS event table)" if nvos else "switch syslog"


def _source_notes(cov: Coverage) -> list[str]:
    """Which switch-side sources of port events the window had. A site of Onyx syslog alone
    hears nothing new; one that has NVOS tables or UFM hears which of the four it had."""
    if not cov.switches:
        return []
    had = {k: n for k, n in cov.event_sources.items() if n}
    if not had:
        return ["no switch-side port events in the window (switch syslog, NVOS event tables, "
                "UFM event.log, UFM REST events): link changes come only from opensm, SNMP, "
                "counters and sweeps"]
    notes = []
    if cov.switch_log_lines == 0 and not (had.keys() & SWITCH_LOGS):
        ufm = " and ".join(EVENT_SOURCES[k] for k in had)
        notes.append(f"no switch syslog or NVOS event table in the window: link changes come "
                     f"only from {ufm}, opensm, SNMP, counters and sweeps")
    if had.keys() != {"syslog"}:
        read = ", ".join(f"{EVENT_SOURCES[k]} {n}"
                         + (f" ({cov.nvos_switches} switches)" if k == "nvos-events" else "")
                         for k, n in had.items())
        missing = [EVENT_SOURCES[k] for k in EVENT_SOURCES if k not in had]
        if missing:
            notes.append(f"no port events from {_or(missing)} (read: {read})")
    return notes


def _or(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
def fabric_sources(snapshots: dict[str, int], events: list[EventRow]
                   ) -> tuple[dict[str, dict[str, int]], str]:
    """What the fabric was read through: per snapshot kind the sources observed, per event
    origin the port events (both in the window), and the sentence that names them."""
    found: dict[str, dict[str, int]] = {}
    for kind in SNAPSHOT_KINDS:
        if snapshots.get(kind):
            found.setdefault(kind, {})["snapshots"] = snapshots[kind]
    origins: dict[str, int] = defaultdict(int)
    for e in events:
        if e["origin"] not in DERIVED_ORIGINS:
            origins[e["origin"]] += 1
    for origin, n in sorted(origins.items()):
        found.setdefault(origin, {})["port_events"] = n
    parts = []
    for name, counts in found.items():
        said = []
        if "snapshots" in counts:
            n = counts["snapshots"]
            said.append(f"{n} run{'s' if n != 1 else ''}" if name == "ibdiagnet"
                        else f"{n} snapshot{'s' if n != 1 else ''}")
        if "port_events" in counts:
            n = counts["port_events"]
            said.append(f"{n} port event{'s' if n != 1 else ''}")
        parts.append(f"{clip(name, NAME_SHOWN)} ({', '.join(said)})")
    return found, ("fabric read through: " + ", ".join(parts)) if parts else ""


def blind_spots(store: Store, ev: Evidence) -> Coverage:
    """The coverage of the window `ev` was gathered for."""
    fabric = ev.fabric
    cov = Coverage(switches=sum(n.node_type == NodeType.SWITCH for n in fabric.nodes.values()))
    window = [e for e in ev.events if ev.since <= e["event_at"] <= ev.until]
    _switch_logs(ev, window, cov)
    cov.event_sources = dict.fromkeys(EVENT_SOURCES, 0)
    nvos: set[str] = set()
    for e in window:
        if e["origin"] in cov.event_sources:
            cov.event_sources[e["origin"]] += 1
            if e["origin"] == "nvos-events":
                nvos.add(e["device"] or "")
    cov.nvos_switches = len(nvos)
    cov.fabric_sources, cov.sources_note = fabric_sources(
        store.source_kinds(ev.since, ev.until), window)
    names, guids = store.hosts_read(ev.until)
    hosts: dict[str, bool] = {}
    for g, n in fabric.nodes.items():
        if n.node_type == NodeType.HCA:
            hosts[n.name] = hosts.get(n.name, False) or g in guids or n.name in names
    cov.hosts = len(hosts)
    cov.hosts_never_read = sorted(h for h, read in hosts.items() if not read)
    cov.jobs_failed = ev.jobs_failed
    cov.jobs_without_logs = sorted(ev.jobs_without_logs)
    notes = cov.notes
    notes += _source_notes(cov)
    if cov.switches_log_missing:
        notes.append(f"{_own_log(cov)} missing from {_names(cov.switches_log_missing)}: their "
                     "peers logged link changes they did not")
    if cov.switches_log_incomplete:
        notes.append(f"{_own_log(cov)} incomplete from {_names(cov.switches_log_incomplete)}: "
                     "they logged under half of the link changes their peers logged")
    for name, off in sorted(cov.clock_off.items()):
        notes.append(f"clock of {name} is {abs(off):.0f} s {'ahead of' if off > 0 else 'behind'}"
                     " its peers (median over the link changes both ends logged)")
    if cov.hosts_never_read:
        notes.append(f"{len(cov.hosts_never_read)} of {cov.hosts} hosts never read (no host "
                     f"sweep, dmesg or sysfs counters): {_names(cov.hosts_never_read)}")
    if cov.jobs_without_logs:
        notes.append(f"{len(cov.jobs_without_logs)} of {cov.jobs_failed} failed jobs have no "
                     f"job log: {_names(cov.jobs_without_logs)}")
    if ev.hosts is not None:
        cov.host_records = dict(ev.hosts.by_source)
        cov.hosts_without_records = list(ev.hosts.without)
        missing = cov.hosts_without_records
        if missing and len(missing) == ev.hosts.hosts:
            notes.append("no host evidence: no boot records (journalctl --list-boots, last -x) "
                         "and no Slurm node events (sacctmgr show event -P, slurmctld.log) were "
                         "ingested, so a host that rebooted is told from a cable fault only by "
                         "its rails going down together and by NODE_FAIL jobs")
        elif missing:
            notes.append(f"{len(missing)} of {ev.hosts.hosts} hosts have no boot record or "
                         f"Slurm node event: {_names(missing)}")
    return cov
