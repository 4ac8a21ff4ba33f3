"""Ingest: read capture files, recognise and parse them, and write them to the store.

One call of `ingest_files` is one transaction: either every file of the call is stored or, when
one of them cannot be read or parsed, none is and the store is left as it was.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from auditor.errors import AuditorError, ParseError
from auditor.ingest import guid_clashes, kinds
from auditor.ingest.common import (
    NOT_UTF8_ESCAPED,
    IngestResult,
    claim_source,
    digest_of,
    options_key,
    read_capture,
)
from auditor.models import (
    LID_KEY_PREFIX,
    NO_ROUTE,
    CounterSample,
    CounterTable,
    FabricNode,
    ForwardingTables,
    Link,
    Node,
    NodeType,
    Port,
    SwitchLft,
    Topology,
    duplicated_guid,
)
from auditor.parse._common import DESCRIPTION_MAX
from auditor.parse.nodedesc import describe, parse_node_name_map
from auditor.portmap import PortMap
from auditor.store import SourceMeta, Store, utc_naive
from auditor.store.lfts import StoredLft

if TYPE_CHECKING:
    from auditor.parse.ibdiagnet import IbdiagnetResult

KINDS = ("auto", *kinds.names("captures"))


@dataclass(slots=True)
class _Parsed:
    path: str
    kind: str
    sha256: str
    lines: int
    topology: Topology | None = None
    counters: list[CounterSample] | CounterTable | None = None
    lfts: ForwardingTables | None = None
    options: str | None = None
    not_utf8: list[tuple[int, str]] = field(default_factory=list)  # (line number, line as read)
    diag: IbdiagnetResult | None = None  # an ibdiagnet run: what it says beside topology/counters


def place_unmapped_events(store: Store, at: datetime, aliases: dict[str, str] | None) -> int:
    """Port events stored before any topology named their device (a syslog ingested before
    the first snapshot) get the (GUID, port) the snapshot taken at `at` resolves, in one
    statement. Returns how many (device, port name) pairs were placed."""
    pairs = store.unmapped_event_ports()
    if not pairs:
        return 0
    pm = PortMap(store.fabric(at), aliases)
    rows = [(device, name, r.guid, r.port) for device, name in pairs
            if (r := pm.resolve(device, name)).guid is not None]
    store.map_event_ports(rows)
    return len(rows)


def load_node_names(path: Path | None) -> dict[str, str]:
    """The site's node-name map (ibnetdiscover's --node-name-map format), or {} without one."""
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read node-name map: {exc.strerror}") from exc
    try:
        return parse_node_name_map(text)
    except ParseError as exc:
        raise exc.with_source(str(path)) from None


def detect_kind(text: str, path: str) -> str:
    """Recognise a capture by its first meaningful line (`kinds.capture_line`)."""
    found = kinds.recognise("captures", text)
    if found is not None:
        return found
    first = kinds.capture_line(text)
    if first is None:
        raise AuditorError(f"{path}:1: empty file, nothing to ingest")
    line_no, line = first
    raise AuditorError(f"{path}:{line_no}: cannot tell what tool printed this; pass --kind "
                       f"({', '.join(KINDS[1:])}): {line[:80]!r}")


def _parse_ibdiagnet(path: Path) -> _Parsed:
    from auditor.ingest.ibdiagnet import read_run

    run = read_run(path)
    r = run.result
    return _Parsed(str(path), "ibdiagnet", run.sha256, run.lines, topology=r.topology,
                   counters=r.counters, not_utf8=run.not_utf8, diag=r)


def parse_file(path: Path, kind: str) -> _Parsed:
    """Read and parse one capture (an ibdiagnet output folder too)."""
    if kind == "ibdiagnet" or (kind == "auto" and path.is_dir()):
        return _parse_ibdiagnet(path)
    text, digest, not_utf8 = read_capture(path)
    if kind == "auto":
        kind = detect_kind(text, str(path))
    entry = kinds.get(kind)
    if entry is None or entry.family != "captures":
        raise AuditorError(f"{path}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    if kind == "ibdiagnet":
        return _parse_ibdiagnet(path)
    if not text or text.isspace():  # (not text.strip(): that copies the text)
        raise AuditorError(f"{path}:1: empty file, nothing to ingest")
    try:
        result: Topology | list[CounterSample] | CounterTable | ForwardingTables = entry.call(
            text, {})
    except ParseError as exc:
        raise exc.with_source(str(path)) from None
    parsed = _Parsed(str(path), kind, digest, text.count("\n") + (not text.endswith("\n")),
                     not_utf8=not_utf8)
    if isinstance(result, Topology):
        parsed.topology = result
    elif isinstance(result, ForwardingTables):
        parsed.lfts = result
    else:
        parsed.counters = result
    return parsed


class _Identity:
    """Resolves CA port GUIDs and bare LIDs to node GUIDs (iblinkinfo and ibnetdiscover -p name
    CAs by port GUID only, and iblinkinfo names peers it has no section for by LID only)."""

    def __init__(self) -> None:
        self.by_port_guid: dict[str, tuple[str, int]] = {}
        self.by_lid: dict[int, str] = {}

    def learn(self, port_guid: str | None, lid: int | None, guid: str, port: int) -> None:
        # A duplicate (GUID~2) may repeat the first node's port GUID too: that names the first.
        if port_guid and port_guid != guid and duplicated_guid(guid) is None:
            self.by_port_guid[port_guid] = (guid, port)
        if lid:
            self.by_lid.setdefault(lid, guid)

    def learn_topology(self, topo: Topology) -> None:
        for p in topo.ports:
            self.learn(p.port_guid, p.lid, p.guid, p.port)
        for n in topo.nodes:
            if n.lid:
                self.by_lid.setdefault(n.lid, n.guid)

    def node(self, guid: str) -> str | None:
        if guid.startswith("lid:"):
            return self.by_lid.get(int(guid[4:]))
        hit = self.by_port_guid.get(guid)
        return hit[0] if hit else guid


def _reconcile(topo: Topology, ident: _Identity, warnings: list[str]) -> Topology:
    nodes: dict[str, Node] = {}
    kept: set[str] = set()  # far ends known only by LID and description (iblinkinfo -S)
    for n in topo.nodes:
        guid = ident.node(n.guid)
        if n.guid.startswith(LID_KEY_PREFIX):
            if guid is not None:
                continue  # resolved: the snapshot that knows the LID has the node itself
            kept.add(n.guid)
        guid = guid or n.guid
        if guid not in nodes:
            nodes[guid] = n if guid == n.guid else replace(n, guid=guid)
    # Each distinct GUID resolved once (a switch's repeats on each of its ports and links).
    resolved = {guid: ident.node(guid) for guid in {p.guid for p in topo.ports}}
    ports = []
    for p in topo.ports:
        guid = resolved[p.guid] or p.guid
        if guid != p.guid:
            p = replace(p, guid=guid, port_guid=p.port_guid or p.guid)
        ports.append(p)
    for lk in topo.links:
        for guid in (lk.a_guid, lk.b_guid):
            if guid not in resolved:
                resolved[guid] = ident.node(guid)
    links = []
    unresolved = 0
    for lk in topo.links:
        a = resolved[lk.a_guid] or (lk.a_guid if lk.a_guid in kept else None)
        b = resolved[lk.b_guid] or (lk.b_guid if lk.b_guid in kept else None)
        if a is None or b is None:
            unresolved += 1
            continue
        if (a, lk.a_port) <= (b, lk.b_port):
            # the link as parsed when nothing of it changed (12,288 at 4,096 hosts)
            links.append(lk if a == lk.a_guid and b == lk.b_guid else
                         Link(a, lk.a_port, b, lk.b_port, lk.width, lk.speed))
        else:
            links.append(Link(b, lk.b_port, a, lk.a_port, lk.width, lk.speed))
    if unresolved:
        warnings.append(f"{unresolved} link(s) name a peer only by a LID no capture resolves")
    if kept:
        warnings.append(f"{len(kept)} peer(s) named only by LID and description, which no "
                        "snapshot resolves: kept as lid:<N>")
    return replace(topo, nodes=list(nodes.values()), ports=ports, links=links)


def _owners(store: Store, moment: datetime, topo: Topology) -> dict[str, str]:
    """The description the newest earlier snapshot gives each GUID this capture guid_clashes."""
    times = [t for t in store.snapshot_times(moment, limit=2) if t < utc_naive(moment)]
    if not times:
        return {}
    nodes = store.fabric(times[0]).nodes
    return {d.guid: nodes[d.guid].description for d in topo.duplicates if d.guid in nodes}


def _named(topo: Topology, names: dict[str, str]) -> list[FabricNode]:
    out = []
    for n in topo.nodes:
        who = describe(n.description)
        name = names.get(n.guid, who.name)
        out.append(FabricNode(n.guid, n.node_type, n.description, name, who.model, who.device,
                              n.lid if n.node_type == NodeType.SWITCH else None))
    return out


def _counter_table(counters: list[CounterSample] | CounterTable, ident: _Identity,
                   path: str) -> CounterTable:
    """The readings with every port named by its node GUID (CA port GUIDs and perfquery's LIDs
    resolved)."""
    if isinstance(counters, CounterTable):
        # One lookup per distinct GUID: a switch's GUID repeats on every port line of it.
        owner = {guid: ident.node(guid) or guid for guid in set(counters.guids)}
        return replace(counters, guids=[owner[guid] for guid in counters.guids])
    rows: list[tuple[str, int | None, str, int]] = []
    for s in counters:
        guid = s.guid
        if guid is None and s.lid is not None:
            guid = ident.by_lid.get(s.lid)
        if guid is None:
            raise AuditorError(
                f"{path}: counters of LID {s.lid} port {s.port}: no topology snapshot knows "
                "that LID; ingest an ibnetdiscover or iblinkinfo capture first"
            )
        guid = ident.node(guid) or guid
        rows.extend((guid, s.port, name, value) for name, value in s.counters.items())
    return CounterTable.from_rows(rows)


def ingest_files(
    store: Store,
    paths: Sequence[Path],
    kind: str = "auto",
    at: datetime | None = None,
    origin: str = "file",
    node_names: dict[str, str] | None = None,
    now: datetime | None = None,
    aliases: dict[str, str] | None = None,
) -> list[IngestResult]:
    """Parse every file, then store them all in one transaction. `at` is the snapshot time.
    The same file ingested again is a no-op, unless it is read as another kind or with another
    node-name map: then it replaces what it stored. A topology snapshot places the port events
    stored before it named their devices (`aliases`: the config's)."""
    # Parsing and storing a capture make hundreds of thousands of objects and next to no
    # reference cycles: in a 4,096-host topology ingest the cyclic collector ran 30 times for
    # 30-40 ms of CPU and freed about 100 objects (issue #25; startup.no_collector says the
    # same of the ranking). It runs again, as it was, when the ingest is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _ingest_files(store, paths, kind, at, origin, node_names, now, aliases)
    finally:
        if collecting:
            gc.enable()


def _ingest_files(store: Store, paths: Sequence[Path], kind: str, at: datetime | None,
                  origin: str, node_names: dict[str, str] | None, now: datetime | None,
                  aliases: dict[str, str] | None) -> list[IngestResult]:
    explicit = at is not None
    moment = at or now or datetime.now().astimezone()
    parsed = [parse_file(p, kind) for p in paths]
    # Topology captures first, ibnetdiscover before iblinkinfo: they name what the others refer to.
    order = {"ibnetdiscover": 0, "ibdiagnet": 0, "iblinkinfo": 1, "perfquery": 2,
             "ibqueryerrors": 2, "lfts": 3}
    parsed.sort(key=lambda p: order[p.kind])
    results: list[IngestResult] = []
    ident = _Identity()
    for port_guid, guid, port in store.port_guid_owners(moment):
        ident.learn(port_guid, None, guid, port)
    # Only ibqueryerrors names every port by a GUID: for it, reading the 24,576 LIDs of a
    # 12,288-link fabric took 10 ms for nothing (#13); so does a topology that names no node
    # by LID (#25).
    if any(_names_by_lid(item) for item in parsed):
        for lid, guid in store.lid_owners(moment):
            ident.by_lid.setdefault(lid, guid)
    seen: set[str] = set()
    snapshot_source: int | None = None
    snapshot_at = moment
    with store.transaction():
        for n, item in enumerate(parsed, 1):
            result = IngestResult(item.path, item.kind, "ingested")
            results.append(result)
            item.options = options_key(kind=item.kind, **kinds.kind(item.kind).option_values(
                {"names": digest_of(node_names)}))
            # An ibdiagnet run is dated by its own `Running timestamp` unless --at says.
            when = moment
            if not explicit and item.diag is not None and item.diag.run_at is not None:
                when = item.diag.run_at
            result.status = "already ingested" if item.sha256 in seen else \
                claim_source(store, item.sha256, item.options, when, explicit)
            if result.status == "already ingested":
                continue
            seen.add(item.sha256)
            sid = _store_capture(store, item, ident, result, when, _meta_of(
                item, origin, when, explicit), node_names or {}, more=n < len(parsed))
            if item.topology is not None:
                if snapshot_source is None:
                    snapshot_source, snapshot_at = sid, when
                snapshot_at = max(snapshot_at, when)
            if item.not_utf8:
                store.add_issues(sid, [(NOT_UTF8_ESCAPED, len(item.not_utf8),
                                        *item.not_utf8[0])])
                result.warnings.append(f"{len(item.not_utf8)} line(s): {NOT_UTF8_ESCAPED}")
            result.source_id = sid
        if snapshot_source is not None:
            times = store.snapshot_times(snapshot_at, limit=2)
            if len(times) == 2:
                # A flap seen only as a link missing from one sweep is still a flap.
                store.add_topology_events(snapshot_source, times[0], times[1])
            place_unmapped_events(store, snapshot_at, aliases)
            store.refresh_fabric_cache()
    return results


def _names_by_lid(item: _Parsed) -> bool:
    """Whether the capture may name a node by LID alone (`_Identity.node`, `_counter_table`)."""
    if item.kind in ("ibqueryerrors", "lfts"):
        return False
    topo = item.topology
    if topo is None or item.counters is not None or item.diag is not None:
        return True
    return (any(n.guid.startswith(LID_KEY_PREFIX) for n in topo.nodes)
            or any(lk.a_guid.startswith(LID_KEY_PREFIX) or lk.b_guid.startswith(LID_KEY_PREFIX)
                   for lk in topo.links))


def _meta_of(item: _Parsed, origin: str, at: datetime, explicit: bool
             ) -> Callable[[int], SourceMeta]:
    def meta(records: int) -> SourceMeta:
        return SourceMeta(item.kind, item.path, item.sha256, origin, at, explicit, item.lines,
                          0, records, item.options)
    return meta


def _store_capture(store: Store, item: _Parsed, ident: _Identity, result: IngestResult,
                   when: datetime, meta: Callable[[int], SourceMeta],
                   node_names: dict[str, str], more: bool = True) -> int:
    """Store one capture's topology and counters (both, for an ibdiagnet run, under one
    source, with the rest of the run); returns its source id. `more`: captures of the same
    ingest follow (they may name what this one names by port GUID or LID)."""
    if item.lfts is not None:
        result.records = len(item.lfts.switches)
        sid = store.add_source(meta(result.records))
        store.add_lft_capture(sid, when, stored_tables(item.lfts.switches), lmc_of(item.lfts))
        if item.lfts.cut:
            why = f"node description over {DESCRIPTION_MAX} characters (cut)"
            store.add_issues(sid, [(why, len(item.lfts.cut), *item.lfts.cut[0])])
            result.warnings.append(f"{len(item.lfts.cut)} line(s): {why}")
        return sid
    topo = None
    named: list[FabricNode] = []
    if item.topology is not None:
        topo = _reconcile(item.topology, ident, result.warnings)
        if topo.duplicates:
            topo = guid_clashes.prefer_owners(topo, _owners(store, when, topo))
        if item.counters is not None or item.diag is not None or more:
            ident.learn_topology(topo)  # for the readings and captures that follow
        named = _named(topo, node_names)
        result.records = len(topo.nodes) + len(topo.ports) + len(topo.links)
    table = None
    if item.counters is not None or (topo is None and item.diag is None):
        table = _counter_table(item.counters or [], ident, item.path)
        result.records += len(table.names)
    if item.diag is not None:
        from auditor.ingest.ibdiagnet import records_of

        result.records += records_of(item.diag)
    sid = store.add_source(meta(result.records))
    if topo is not None:
        store.add_nodes(sid, when, named)
        store.add_ports(sid, when, topo.ports)
        store.add_links(sid, when, topo.links)
        if topo.cut:
            why = f"node description over {DESCRIPTION_MAX} characters (cut)"
            store.add_issues(sid, [(why, len(topo.cut), *topo.cut[0])])
            result.warnings.append(f"{len(topo.cut)} line(s): {why}")
        issues, warnings = guid_clashes.findings(topo)
        store.add_issues(sid, issues)
        result.warnings += warnings
    if table is not None:
        store.add_counters(sid, when, table)
    if item.diag is not None:
        from auditor.ingest.ibdiagnet import store_run

        store.mark_source_holds(sid, topology=topo is not None, counters=table is not None)
        result.warnings += store_run(store, sid, when, item.diag,
                                     {n.guid: n.name for n in named})
    return sid


def stored_tables(tables: Sequence[SwitchLft]) -> list[StoredLft]:
    """Each table as the store keeps it: one out-port byte per DLID from 0 to its last (255:
    no route), and a digest of what routes by it (LID, range, out ports; not the description)."""
    out = []
    for t in tables:
        row = np.full(t.last_lid + 1, NO_ROUTE, dtype=np.uint8)
        if t.ports:
            row[np.fromiter(t.ports.keys(), dtype=np.int64, count=len(t.ports))] = np.fromiter(
                t.ports.values(), dtype=np.uint8, count=len(t.ports))
        blob = row.tobytes()
        digest = hashlib.sha256(f"{t.lid}|{t.first_lid}|{t.last_lid}|".encode() + blob)
        out.append(StoredLft(t.guid, t.lid, t.description, t.first_lid, t.last_lid,
                             digest.hexdigest()[:32], blob))
    return out


def lmc_of(tables: ForwardingTables) -> int:
    """The LMC the capture's owners show for CA and router ports (a `path #2 out of 2` line:
    2 LIDs a port, LMC 1); 0 when it names no owners (`-n`). opensm gives every CA port the
    same LMC (its `lmc` option)."""
    widest = max((o.count for o in tables.owners.values() if o.node_type != NodeType.SWITCH),
                 default=1)
    return max(widest, 1).bit_length() - 1


__all__ = ["KINDS", "IngestResult", "Port", "detect_kind", "ingest_files", "parse_file"]
