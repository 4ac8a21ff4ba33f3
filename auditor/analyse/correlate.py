"""Correlation: flaps, counters, jobs and job-log errors joined along the fabric graph.

`gather` reads a window's evidence and puts it on the links (and on switches and hosts for
common-mode events); `blame.py` judges each failed job, `rank.py` turns it all into scores,
verdicts and actions. The records are in `evidence.py`.

- Common mode: many ports of one switch going down within seconds is one event on that switch
  (a reboot, a power loss), and a host that went away is one host event (analyse/hosts.py), not
  N cable faults.
- Maintenance: flaps of a declared target inside its window are kept but not held against it.
- Failed jobs: see `blame.py` (host, the first killing flap on the footprint, NCCL pair votes).
- A port NCCL failed over from (>= 2.29, NCCL_IB_RESILIENCY_PORT_FAILOVER=1; the job log's
  `Device N marked as failed.` WARN, its HCA from the log's merged-NIC lines) is evidence on
  that HCA's cable, or on each HCA it may be, whatever became of the job (issue #14).
- Logs ingested without a job id are matched to the job that ran on the hosts they name at the
  time they show (or, undated, when the file was written), so their GPU causes and untimed lines
  count as if `--job` had been given.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor import graph
from auditor.analyse import ber, blame, hosts
from auditor.analyse.blame import JobView
from auditor.analyse.degraded import degraded_links
from auditor.analyse.evidence import (
    COMMON_MODE_WINDOW,
    HOST_STATE,
    LOG_WRITE_SLACK,
    NETWORK_STATES,
    Evidence,
    Hcas,
    HostCoverage,
    HostResolver,
    LinkEvidence,
    NodeEvent,
    link_keys,
    link_of,
)
from auditor.analyse.flaps import LOOKBACK, Flap, flaps
from auditor.analyse.routed import RouteBook, ar_alternatives, emptied_ports
from auditor.analyse.survivors import lived_through
from auditor.analyse.watchlist import current as watch_list
from auditor.config import RankingSettings
from auditor.errors import AuditorError
from auditor.models import Fabric, LinkKey, LinkRows, NodeType, PortKey
from auditor.portmap import port_number
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.store.rows import (
        CounterStepRow,
        JobAskedRow,
        JobErrorRow,
        LogJobRow,
        MaintenanceRow,
        PortBerRow,
        UnlabelledJobLogRow,
    )


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


def _linked_ports(rows: LinkRows, guid: str) -> int:
    """How many link ends the node has (a link with both on it counts twice)."""
    peers = rows.peers(guid)
    return len(peers) + peers.count(guid)


def _common_mode(candidates: list[Flap], fabric: Fabric, cfg: RankingSettings) -> list[NodeEvent]:
    """Clusters of flaps on one node within COMMON_MODE_WINDOW covering enough of its ports."""
    rows = fabric.link_rows()
    by_node: dict[str, list[tuple[Flap, int]]] = defaultdict(list)
    for f in candidates:
        if f.down_at is None or f.counted_from is not None:
            continue
        for guid, port in f.ends:
            by_node[guid].append((f, port))
    events: list[NodeEvent] = []
    for guid, items in by_node.items():
        node = fabric.nodes.get(guid)
        if node is None or node.node_type == NodeType.HCA:
            continue  # a host's HCAs are judged together (analyse/hosts.py)
        total = _linked_ports(rows, guid)
        if total < 2:
            continue
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


def _counter_evidence(deltas: list[CounterStepRow], peers: Mapping[PortKey, PortKey],
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
    # The links at those ports, in the links' order (a later link's rate wins, as it did when
    # every link was walked); the fabric's counts from its rate groups (issue #25).
    at, links = fabric.link_rows(), fabric.links
    for i in sorted({i for guid, port in keys for i in at.at_port(guid, port)}):
        lk = links[i]
        if lk.width and lk.speed:
            rate = (lk.width, lk.speed)
            if (a := (lk.a_guid, lk.a_port)) in keys:
                rates[a] = rate
            if (b := (lk.b_guid, lk.b_port)) in keys:
                rates[b] = rate
    counted: Counter[tuple[str, str]] = Counter()
    for (_, width, speed), rows in fabric.rate_groups().items():
        if width and speed:
            counted[(width, speed)] += len(rows)
    # A tie goes to the first in sorted order: the same rate in every process.
    usual = max(sorted(counted), key=lambda r: counted[r]) if counted else None
    return rates, usual


_BerReads = tuple[list[tuple[Any, ...]], dict[tuple[str, int], str]]


def _ber_reads(store: Store, since: datetime, until: datetime,
               symbols: dict[PortKey, list[CounterStepRow]], peers: Mapping[PortKey, PortKey]
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
                  symbols: dict[PortKey, list[CounterStepRow]], peers: Mapping[PortKey, PortKey],
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


def _reported_ber(fabric: Fabric, rows: list[PortBerRow], cables: dict[tuple[str, int], str],
                  peers: Mapping[PortKey, PortKey], links: dict[LinkKey, LinkEvidence],
                  cfg: RankingSettings) -> None:
    """The symbol BER ports reported themselves in the window (ibdiagnet PHY_DB16, issue #24),
    for the ports whose counters gave none: the BER rule judges it by the same limit. Only
    ports on a link of the newest snapshot (a BER of a port no cable leaves is nothing to
    replace), and only above the limit's warning level: a run reports every port of the
    fabric, and a link with nothing against it needs no evidence record."""
    rows_at = fabric.link_rows()
    wanted = [r for r in rows if r["symbol_ber"] is not None
              and rows_at.at_port(r["guid"], r["port"])]
    if not wanted:
        return
    rates, usual = _link_rates(fabric, {(r["guid"], r["port"]) for r in wanted})
    for r in wanted:
        key: PortKey = (r["guid"], r["port"])
        peer = peers.get(key)
        link = link_of([key, peer] if peer else [key])
        le = links.get(link)
        if le is not None and key in le.symbol_ber:
            continue  # measured from its counters in the window: that wins
        width, speed = rates.get(key) or usual or (None, None)
        node = fabric.nodes.get(key[0])
        cable = cables.get(key) or (cables.get(peer) if peer else None)
        said = ", ".join(f"{name} {value:.1e}" for name, value in (
            ("raw", r["raw_ber"]), ("effective", r["effective_ber"]),
            ("symbol", r["symbol_ber"])) if value is not None)
        measured = ber.self_reported(
            r["symbol_ber"] or 0.0, speed=speed, width=width,
            model=node.model if node else None, media=ber.media_of(cable),
            said=f"ibdiagnet {r['origin']} at {r['seen_at']:%Y-%m-%d %H:%M}: {said}")
        rate = (speed or "").upper()
        limit = ber.symbol_limit(rate, model=measured.model, media=measured.media,
                                 fec=cfg.ber_fec.get(rate), overrides=cfg.ber_limits)
        if measured.worst_ber <= limit.warning:
            continue
        le = links.setdefault(link, LinkEvidence(link))
        le.symbol_ber[key] = measured
        le.counters.setdefault(key, {})


def _fmt_t(at: datetime) -> str:
    return at.strftime("%H:%M:%S")


def gather(store: Store, since: datetime, until: datetime, cfg: RankingSettings | None = None,
           aliases: dict[str, str] | None = None, book: RouteBook | None = None) -> Evidence:
    """All evidence for [since, until] (naive UTC). `book`: the fabric's forwarding tables
    (issue #23), which put jobs on the links their traffic crossed; without, the graph's
    shortest paths and leaf uplinks stand in (analyse/routed.py)."""
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
    if book:
        book.shared = (times[0], fabric)
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
    if book:
        _reroutes_seen(store, all_flaps, peers, look_from, until)
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
    pending_reported = store.in_background(lambda s: s.port_bers(since, until))
    # The host names jobs were given (read after the BER's counters, which are needed first):
    # only the jobs on the hosts next to a flap are asked for below.
    pending_names = store.in_background(lambda s: (s.job_host_names(), s.jobs_extent()))
    # Of the snapshot before, only the links that ran otherwise count (a second whole fabric
    # cost 0.15 s, its links alone 30-40 ms).
    previous = store.fabric_links_changed(times[0], times[1]) if len(times) > 1 else None
    degraded = degraded_links(fabric, previous)
    resolver = HostResolver(fabric, addresses, aliases or {})
    hcas = Hcas(fabric)
    _ber_evidence(fabric, pending_ber.result(), symbols, peers, links)
    # A run reports every port: those under the lowest warning level any limit has are
    # nothing to judge (and no cable to look up).
    floor = min([r.symbol_warning for r in ber.FIELD_TABLE] + [ber.IBTA_BER / 2]
                + [v / 2 for v in cfg.ber_limits.values()])
    reported = [r for r in pending_reported.result()
                if r["symbol_ber"] is not None and r["symbol_ber"] > floor]
    if reported:
        keys = sorted({(r["guid"], r["port"]) for r in reported}
                      | {p for r in reported if (p := peers.get((r["guid"], r["port"])))})
        _reported_ber(fabric, reported, store.cable_types(keys), peers, links, cfg)
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
    # The names jobs gave each fabric host: the jobs on a host are asked for by them.
    as_named: dict[str, list[str]] = defaultdict(list)
    job_names = pending_names.result()[0]
    for given, who in zip(job_names, resolver.each(job_names), strict=True):
        if who is not None:
            as_named[who].append(given)
    matched = _match_logs(unlabelled, lambda asks, log_hosts, job_hosts: store.jobs_of_logs(
        since, until, asks, log_hosts, job_hosts), resolver, as_named)
    errors = store.job_errors(look_from, late_until, sources=sorted(matched), jobs_since=since)
    # Index once: a month holds thousands of failed jobs and tens of thousands of error lines.
    views: dict[str, JobView] = defaultdict(lambda: JobView([], [], {}))
    for lg in logs:
        job_id = lg["job_id"] or matched.get(lg["source_id"])
        if job_id is not None:
            view = views[job_id]
            view.versions += [v for v in lg["nccl_versions"] if v not in view.versions]
            for key, value in (("NCCL_IB_TIMEOUT", lg["ib_timeout"]),
                               ("NCCL_IB_RETRY_CNT", lg["ib_retry_cnt"])):
                if value is not None:
                    view.env.setdefault(key, value)
    errors_by_host: dict[str, list[JobErrorRow]] = defaultdict(list)
    for e in errors:
        job_id = e["job_id"] or matched.get(e["source_id"])
        if job_id is not None:
            views[job_id].errors.append(e)
        elif e["event_at"] is not None and (who := resolver.host(e["host"])):
            errors_by_host[who].append(e)
    # The failed jobs, first as facts (their hosts, errors, NCCL death time and fault window):
    # a NODE_FAIL or a job whose peers lost one host is host evidence, read before the host
    # events are judged; then each job is blamed (blame.blame_jobs, below).
    dead = blame.failed_jobs(pending_ended.result(), since, until, views, errors_by_host,
                             resolver, cfg, in_use)
    # -- hosts that went away (issue #20) -------------------------------------------------
    records: dict[str, list[hosts.HostRecord]] = defaultdict(list)
    for row in host_rows:
        if (resolved := resolver.host(row["host"])) is not None:
            records[resolved].append(hosts.HostRecord(
                resolved, row["at"], row["kind"], row["end_at"], row["reason"] or "",
                row["source_kind"]))
    facts = hosts.HostFacts(records, restarted, dead.node_fail, dead.nccl_ends, {
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

    fp = blame.Footprints(g, all_flaps, hcas, resolver, book)
    counts = blame.blame_jobs(dead.jobs, fp, links, event_of, host_events_of, maint, cfg)
    failed_net, failed_host, unexplained = counts

    # Only the jobs on the hosts next to a flap during that flap are read, with all their
    # hosts (issue #13: at 30 days 5,410 jobs ran during a long flap and 100 of them on a host
    # of its cable, 12,937 through a flap and 4,037 next to it; the rest were fetched, split
    # and indexed for nothing; issue #25: every flap's span on every such host was most of a
    # 65,536-GPU month's jobs).
    def running(asks: list[tuple[datetime, datetime, str]]) -> list[JobAskedRow]:
        return store.jobs_on_hosts_during(since, until, [
            (0, lo, hi, name) for lo, hi, host in asks for name in as_named.get(host, ())])

    known: set[str] = set()

    def scheduled(host: str, lo: datetime, hi: datetime) -> bool:
        """Whether the job records cover `host` over [lo, hi]: the scheduler ran jobs on it
        and its records begin before `lo` and reach past `hi`."""
        names, (first, last) = pending_names.result()
        if first is None or last is None or not first <= lo or not last >= hi:
            return False
        if not known:
            known.update(h for x in names if (h := resolver.host(x)) is not None)
        return host in known

    _failovers(links, errors, matched, since, until, resolver, hcas, g)
    # Optics trends need weeks of readings, whatever the window asked about (issue #14); the
    # nightly's precomputed list when it is this window's (issue #25).
    watch = watch_list(store, until - cfg.optics.history, until, cfg.optics, peers=peers,
                       names=names)
    def crosses(job_hosts: Sequence[str], device: str | None, link: LinkKey, at: datetime
                ) -> str | None:
        """Whether a job's traffic on a rail crossed `link` at `at` by the tables: its NCCL
        ring's routes ("ring"), only other pairs' ("pairs"), none ("no"); None: cannot say.
        With adaptive routing on, the routes are widened to the ports AR may take: AR spreads
        the flows leaving a leaf over its up ports, so a job there crossed them all. (Only
        the tables' own out ports, tried 2026-12-02: 17 false blames in the top K of the
        realistic harmless bench against 12, harmless uplinks cleared by fewer jobs.)"""
        guids = [list(hcas.rail([h], {device}) if device else hcas.of.get(h, []))
                 for h in job_hosts]
        found = fp.routed([x for g in guids for x in g], at, at)
        if found is None or link not in found:
            return None if found is None else "no"
        ring = fp.ring_routed(guids, at)
        return "pairs" if ring is None or link not in ring else "ring"

    lived_through(links, running, resolver, fabric, g, logs, matched,
                  {j: v.errors for j, v in views.items()}, cfg, in_use, settings,
                  crosses if book else None, scheduled, store.job_log_using)
    if cfg.adaptive_routing:
        newest = book.capture_at(until) if book else None
        routes = book.routes(newest) if book and newest is not None else None
        for lk, le in links.items():
            if le.flaps:
                le.ar_alternatives = ar_alternatives(lk, g, routes)
    return Evidence(fabric, since, until, links, node_events, dead.failed, failed_net,
                    dead.other, unexplained, names, dead.no_logs, watch, events, failed_host,
                    _host_coverage(rails, facts, links, fabric), g)


REROUTE_SOURCE = "sm reroute"


def _reroutes_seen(store: Store, all_flaps: list[Flap], peers: Mapping[PortKey, PortKey],
                   since: datetime, until: datetime) -> None:
    """Name the subnet manager among a flap's sources when a forwarding-table capture taken
    while the link was down shows a switch that sent no DLID out of its port any more (issue
    #23: a reroute is the SM's own record that the link went)."""
    seen: dict[LinkKey, list[datetime]] = defaultdict(list)
    for change in store.lft_changes(since, until):
        if change.prev_ports is None:
            continue
        for port in emptied_ports(change.prev_ports, change.ports):
            peer = peers.get((change.guid, port))
            if peer is not None:
                seen[link_of([(change.guid, port), peer])].append(change.at)
    if not seen:
        return
    for f in all_flaps:
        if f.down_at is None or f.counted_from is not None:
            continue
        end = f.up_at or until
        if any(f.down_at <= at <= end for at in seen.get(link_of(f.ends), ())):
            f.sources.add(REROUTE_SOURCE)


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


def _failovers(links: dict[LinkKey, LinkEvidence], errors: list[JobErrorRow],
               matched: dict[int, str], since: datetime, until: datetime,
               resolver: HostResolver, hcas: Hcas, g: graph.FabricGraph) -> None:
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
            for lk in link_keys(graph.node_links(g, guid)) if guid else []:
                links.setdefault(lk, LinkEvidence(lk)).failovers.append(record)


def _match_logs(logs: list[UnlabelledJobLogRow],
                jobs_of: Callable[[list[tuple[int, datetime, datetime, str]], dict[str, str],
                                   dict[str, str]], list[LogJobRow]],
                resolver: HostResolver, as_named: Mapping[str, Sequence[str]]
                ) -> dict[int, str]:
    """Job logs ingested without `--job` -> the job they belong to: the job that ran on every
    host the log names, over the span of its stamps (or, with no stamp, that ended shortly
    before the file was last written). Ambiguous or unmatched logs are left out.
    `jobs_of(asks, log_hosts, job_hosts)`: Store.jobs_of_logs; `as_named`: each fabric
    host's names in the job records."""
    # Each log asks for the jobs on one of its hosts (the first by name) over its own span that
    # ran on all of them: every job that fits the log ran there then, and a month's jobs and
    # their host lists are not read (issue #25: the jobs running at any log's moment were
    # nearly all 207,000 of a month at 65,536 GPUs, 29 s and most of `suspects --since 30d`'s
    # 2.7 GB; the candidates' host lists, compared here, 1.25 million names).
    wants: dict[int, UnlabelledJobLogRow] = {}
    asks: list[tuple[int, datetime, datetime, str]] = []
    log_hosts: dict[str, str] = {}
    for lg in logs:
        if lg["job_id"] is not None:
            continue
        named = {x: h for x in lg["hosts"] if (h := resolver.host(x))}
        if not named:
            continue
        first, last = lg["first_at"], lg["last_at"]
        if first is not None and last is not None:
            # a job that fits started by first + slack and ended by last - slack or later
            lo, hi = min(first, last) - LOG_WRITE_SLACK, max(first, last) + LOG_WRITE_SLACK
        elif lg["written_at"] is not None:
            lo, hi = lg["written_at"] - LOG_WRITE_SLACK, lg["written_at"] + LOG_WRITE_SLACK
        else:
            continue
        log_hosts.update(named)
        wants[lg["source_id"]] = lg
        asks += [(lg["source_id"], lo, hi, name)
                 for name in as_named.get(min(named.values()), ())]
    job_hosts = {name: host for host, names in as_named.items() for name in names}
    runs: dict[int, list[LogJobRow]] = defaultdict(list)
    for run in jobs_of(asks, log_hosts, job_hosts):
        runs[run["source_id"]].append(run)
    out: dict[int, str] = {}
    for source_id, found in runs.items():
        lg = wants[source_id]
        first, last = lg["first_at"], lg["last_at"]
        fits: list[tuple[timedelta, str]] = []
        for job in found:
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
            out[source_id] = fits[0][1]
    return out


__all__ = ["COMMON_MODE_WINDOW", "HOST_STATE", "Evidence", "LinkEvidence", "NodeEvent",
           "gather"]
