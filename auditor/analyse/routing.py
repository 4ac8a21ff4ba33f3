"""The stored forwarding tables put to use (issue #23): the routes in effect at a time, the
reroutes the subnet manager made, and one host pair's path hop by hop (`auditor path`).

`routes_at` is what the ranking asks: the tables of the newest capture at or before a time,
the topology snapshot in effect then (its links and CA ports' LIDs), and the LMC the capture
showed; None when no tables were captured by then, so that the ranking does without them.
A reroute is evidence by itself that the SM saw a link go: between two captures, a switch
whose out port for some DLIDs changed sent them elsewhere, and the port they left is where
the SM lost a link (or found a better one: a link back up takes routes back).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from auditor.analyse.paths import EndPort, LftRows, PortRef, Route, Routes
from auditor.errors import AuditorError
from auditor.models import NO_ROUTE, Fabric, Link, NodeType
from auditor.store import utc_naive

if TYPE_CHECKING:
    from auditor.analyse.flaps import Flap
    from auditor.store import Store
    from auditor.store.lfts import StoredLft


def routes_from(fabric: Fabric, tables: list[StoredLft], lmc: int = 0) -> Routes:
    """`Routes` of a topology snapshot and stored tables: every CA and router port with a LID
    is an end (2^`lmc` LIDs from it)."""
    ends_types = (NodeType.HCA, NodeType.ROUTER)
    nodes = fabric.nodes
    ends = [(guid, port, p.lid) for (guid, port), p in fabric.ports.items()
            if p.lid and (n := nodes.get(guid)) is not None and n.node_type in ends_types]
    return _routes(fabric.links, ends, tables, lmc)


def _routes(links: Sequence[Link], ends: list[tuple[str, int, int]], tables: list[StoredLft],
            lmc: int) -> Routes:
    width = max((len(t.ports) for t in tables), default=1)
    out = np.full((len(tables), width), NO_ROUTE, dtype=np.uint8)
    for i, t in enumerate(tables):
        out[i, : len(t.ports)] = np.frombuffer(t.ports, dtype=np.uint8)
    rows = LftRows([t.guid for t in tables], [t.lid for t in tables],
                   [t.description for t in tables], [t.first_lid for t in tables],
                   [t.last_lid for t in tables], out)
    return Routes.from_arrays(links, [EndPort(g, p, lid, lmc) for g, p, lid in ends], rows)


def routes_at(store: Store, at: datetime, fabric: Fabric | None = None) -> Routes | None:
    """The routes in effect at `at`: the tables of the newest capture at or before it, the
    topology snapshot in effect then (`fabric`, when the caller has read it already: reading
    a 4,096-host snapshot is most of the cost); None when no tables (or no snapshot) were
    stored by then."""
    found = store.lft_capture_at(at)
    if found is None:
        return None
    if fabric is not None:
        return routes_from(fabric, store.lft_tables_at(at), found[1])
    times = store.snapshot_times(at, limit=1)
    if not times:
        return None
    links, ends = store.routing_snapshot(times[0])
    return _routes(links, ends, store.lft_tables_at(at), found[1])


@dataclass(frozen=True, slots=True)
class Reroute:
    """A switch port that lost routes between two captures: `dlids` DLIDs it carried in the
    capture before (`before`) went elsewhere by the capture at `at` (`to`: (new out port,
    DLIDs), NO_ROUTE for none left). `link` is the cable on that port in the topology in effect
    at `before` (None: none known)."""

    at: datetime
    before: datetime | None
    switch: str
    port: int
    dlids: int
    to: tuple[tuple[int, int], ...]
    link: Link | None = None


def lost_routes(old: bytes, new: bytes) -> dict[int, dict[int, int]]:
    """{old out port: {new out port: DLIDs}} for the DLIDs a table sent out of a port (not
    port 0, the switch itself) and no longer does."""
    width = max(len(old), len(new))
    a = np.full(width, NO_ROUTE, dtype=np.uint8)
    b = np.full(width, NO_ROUTE, dtype=np.uint8)
    a[: len(old)] = np.frombuffer(old, dtype=np.uint8)
    b[: len(new)] = np.frombuffer(new, dtype=np.uint8)
    moved = (a != b) & (a != NO_ROUTE) & (a != 0)
    found: dict[int, dict[int, int]] = {}
    if not moved.any():
        return found
    pairs, counts = np.unique(a[moved].astype(np.int64) * 256 + b[moved], return_counts=True)
    for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
        found.setdefault(pair // 256, {})[pair % 256] = count
    return found


def reroutes(store: Store, since: datetime, until: datetime) -> list[Reroute]:
    """The switch ports that lost routes at the captures in (since, until], in time order."""
    out: list[Reroute] = []
    fabrics: dict[datetime, dict[PortRef, Link]] = {}
    for change in store.lft_changes(since, until):
        if change.prev_ports is None:
            continue  # the switch's first table: nothing was lost
        cables: dict[PortRef, Link] = {}
        if change.before is not None:
            times = store.snapshot_times(change.before, limit=1)
            if times:
                if times[0] not in fabrics:
                    fabrics[times[0]] = _cables(store.fabric(times[0]))
                cables = fabrics[times[0]]
        for port, to in sorted(lost_routes(change.prev_ports, change.ports).items()):
            out.append(Reroute(change.at, change.before, change.guid, port, sum(to.values()),
                               tuple(sorted(to.items())), cables.get((change.guid, port))))
    return out


def _cables(fabric: Fabric) -> dict[PortRef, Link]:
    found: dict[PortRef, Link] = {}
    for lk in fabric.links:
        found[(lk.a_guid, lk.a_port)] = lk
        found[(lk.b_guid, lk.b_port)] = lk
    return found


# --- auditor path -------------------------------------------------------------------------------


@dataclass(slots=True)
class PathQuery:
    """What `auditor path` was asked."""

    a: str
    b: str
    rail: int | None = None
    at: datetime | None = None
    since: timedelta = timedelta(hours=24)
    aliases: dict[str, str] = field(default_factory=dict)


def host_ports(fabric: Fabric, name: str, aliases: dict[str, str] | None = None
               ) -> list[PortRef]:
    """The HCA ports with a LID of a host (by its host name, an HCA's node name or
    description, or a node or port GUID), in rail order: its HCAs by name then GUID, each
    HCA's ports in order. Rail N is the N-th of them (0 first)."""
    from auditor.analyse.hosts import host_key

    wanted = name.strip()
    lowered = {k.lower(): v for k, v in (aliases or {}).items()}
    hcas = [n for n in fabric.nodes.values() if n.node_type in (NodeType.HCA, NodeType.ROUTER)]
    names = {n.name for n in hcas}
    guid = _guid(wanted)
    chosen = [n for n in hcas if guid is not None and n.guid == guid]
    if guid is not None and not chosen:
        owner = [(g, port) for (g, port), p in fabric.ports.items()
                 if p.port_guid and _guid(p.port_guid) == guid]
        if owner:
            return owner
    if not chosen:
        chosen = [n for n in hcas if host_key(n.name, n.guid, lowered, names) == wanted
                  or n.name == wanted or n.description == wanted]
    chosen.sort(key=lambda n: (_natural(n.description), n.guid))
    return [(g, port) for n in chosen for (g, port), p in sorted(fabric.ports.items())
            if g == n.guid and p.lid]


def _natural(text: str) -> list[tuple[int, int | str]]:
    """A sort key that puts mlx5_2 before mlx5_10."""
    return [(0, int(part)) if part.isdigit() else (1, part)
            for part in re.split(r"(\d+)", text) if part]


def _guid(text: str) -> str | None:
    """A GUID typed as 0x<1-16 hex digits> or 16 bare ones, as the store keeps them
    (0x + 16 lower-case digits)."""
    raw = text.lower()
    digits = raw.removeprefix("0x")
    if not digits or len(digits) > 16 or any(c not in "0123456789abcdef" for c in digits):
        return None
    if digits == raw and len(digits) != 16:
        return None
    return "0x" + digits.rjust(16, "0")


def trace(store: Store, q: PathQuery) -> dict[str, Any]:
    """`auditor path`: the route from A to B and from B to A (routes are not symmetric) on
    one rail, at a time, each hop with its switch, ports, cable and the cable's flaps in the
    window before that time. AuditorError (one line) when there is nothing to trace."""
    from auditor.analyse import flaps as flaps_mod

    at = q.at or datetime.now().astimezone()
    count, first, _ = store.lft_captures_span()
    if not count:
        raise AuditorError("no forwarding tables are stored; ingest a dump_lfts.sh capture "
                           "(auditor ingest --kind lfts) or let a sweep take one")
    routes = routes_at(store, at)
    if routes is None:
        if first is not None and first > utc_naive(at):
            raise AuditorError(f"no forwarding tables captured at or before {_iso(at)}; the "
                               f"first is from {_iso(first)}")
        raise AuditorError(f"no topology snapshot at or before {_iso(at)} to trace the "
                           "forwarding tables on")
    snapshot = store.snapshot_times(at, limit=1)[0]
    fabric = store.fabric(snapshot)
    ports = [_pick(fabric, name, q.rail, q.aliases) for name in (q.a, q.b)]
    until = utc_naive(at)
    start = until - q.since
    found = flaps_mod.flaps(store, start, until)
    by_port: dict[PortRef, list[Flap]] = {}
    for f in found:
        for end in f.ends:
            by_port.setdefault(end, []).append(f)
    names = {g: n.name for g, n in fabric.nodes.items()}
    tables_at = store.lft_capture_at(at)
    directions = []
    for src, dst, a, b in ((ports[0], ports[1], q.a, q.b), (ports[1], ports[0], q.b, q.a)):
        found_routes = routes.routes(src, dst)
        if not found_routes:
            raise AuditorError(f"{b}: its port {dst[0]} port {dst[1]} has no LID in the "
                               "snapshot")
        directions.append(_direction(routes, found_routes[0], fabric, names, by_port, a, b))
    return {"at": until, "tables_at": tables_at[0] if tables_at else None,
            "topology_at": utc_naive(snapshot), "since": start, "until": until,
            "rail": q.rail, "directions": directions}


def _iso(at: datetime) -> str:
    return utc_naive(at).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pick(fabric: Fabric, name: str, rail: int | None, aliases: dict[str, str]) -> PortRef:
    ports = host_ports(fabric, name, aliases)
    if not ports:
        raise AuditorError(f"{name!r}: no host, HCA or GUID of that name with a LID in the "
                           "topology snapshot")
    index = rail or 0
    if not 0 <= index < len(ports):
        raise AuditorError(f"{name!r} has {len(ports)} rail(s) (0-{len(ports) - 1}); "
                           f"--rail {index} is none of them")
    return ports[index]


def _end(fabric: Fabric, names: dict[str, str], ref: PortRef) -> dict[str, Any]:
    from auditor.analyse.rank import port_label

    node = fabric.nodes.get(ref[0])
    kind = node.node_type if node is not None else NodeType.SWITCH
    return {"name": names.get(ref[0], ref[0]), "guid": ref[0], "port": ref[1],
            "label": port_label(kind, ref[1], node.device if node is not None else None)}


def _link(fabric: Fabric, names: dict[str, str], lk: Link, near: PortRef,
          by_port: dict[PortRef, list[Flap]]) -> dict[str, Any]:
    a, b = (lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)
    if b == near:
        a, b = b, a
    flapped = {id(f): f for end in (a, b) for f in by_port.get(end, [])}
    return {"ends": [_end(fabric, names, a), _end(fabric, names, b)],
            "flaps": len(flapped),
            "last_down": max((f.down_at for f in flapped.values() if f.down_at is not None),
                             default=None)}


def _direction(routes: Routes, route: Route, fabric: Fabric, names: dict[str, str],
               by_port: dict[PortRef, list[Flap]], a: str, b: str) -> dict[str, Any]:
    hops: list[dict[str, Any]] = []
    if route.links:
        src = route.source
        hops.append({"switch": _end(fabric, names, (src[0], 0))["name"], "guid": src[0],
                     "in_port": None, "out_port": src[1],
                     "link": _link(fabric, names, route.links[0], src, by_port)})
    for i, hop in enumerate(route.hops):
        lk = route.links[i + 1] if i + 1 < len(route.links) else None
        hops.append({"switch": names.get(hop.switch, hop.switch), "guid": hop.switch,
                     "in_port": hop.in_port, "out_port": hop.out_port,
                     "link": None if lk is None else _link(fabric, names, lk,
                                                           (hop.switch, hop.out_port),
                                                           by_port)})
    return {"from": a, "to": b, "source": _end(fabric, names, route.source),
            "dlid": route.dlid, "status": route.status, "reason": route.reason,
            "hops": hops}


# --- the report's neighbourhood plot -------------------------------------------------------------

# What the report's plot of one suspect link shows of its failed jobs' routes: at most this many
# routes, found among at most MAX_PAIRS_WALKED host pairs (a 64-host job on 8 rails has 32,256
# ordered pairs; the pairs next to the link's ends are walked first, and they are the ones whose
# routes can cross a host or leaf cable).
PATHS_SHOWN = 8
MAX_PAIRS_WALKED = 4000


def paths_through(routes: Routes, fabric: Fabric, cable: frozenset[PortRef],
                  hosts: list[str], aliases: dict[str, str] | None = None,
                  limit: int = PATHS_SHOWN) -> list[tuple[str, str, int, Route]]:
    """(source host, destination host, rail, route) of the ordered host pairs of `hosts`, on
    each rail, whose route (to the base LID, as NCCL's traffic) crosses the cable whose two
    ends are `cable`; at most `limit` of them."""
    ports = {h: host_ports(fabric, h, aliases) for h in hosts}
    near_nodes = {guid for guid, _ in cable}
    near = {h for h, ps in ports.items()
            if any((far := routes.peer.get(p)) is not None and far[0][0] in near_nodes
                   for p in ps)}
    rails = max((len(ps) for ps in ports.values()), default=0)
    pairs = [(a, b) for a in hosts for b in hosts if a != b]
    pairs.sort(key=lambda ab: (ab[0] not in near and ab[1] not in near))
    found: list[tuple[str, str, int, Route]] = []
    walked = 0
    for a, b in pairs:
        for rail in range(rails):
            if rail >= len(ports[a]) or rail >= len(ports[b]) or walked >= MAX_PAIRS_WALKED:
                continue
            walked += 1
            for route in routes.routes(ports[a][rail], ports[b][rail]):
                if any(frozenset({(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)}) == cable
                       for lk in route.links):
                    found.append((a, b, rail, route))
                    if len(found) >= limit:
                        return found
    return found
