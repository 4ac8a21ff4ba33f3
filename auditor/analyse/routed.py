"""The routes a job's traffic took, for the correlation (issue #23).

Without forwarding tables the correlation reasons that a job with hosts under two leaves may
have crossed any uplink of those leaves. With them, the links between two HCA ports are the
ones the switches' tables send packets over (`analyse/paths.Routes`), so:

- a failed job's footprint (the flaps that can have killed it) is the cables its hosts' routes
  cross on the rails it used, in both directions, at the time its fault began;
- a failing NCCL pair (host, peer, rail) votes only for the links on the routes between the two
  HCAs, both ways (a QP's requests go one way and its ACKs the other; either breaking kills it);
- a job that ran through a flap crossed the link only if its routes did, at the flap's start.

Which tables apply: those of the latest capture at or before the moment asked about (the SM
reroutes after a link goes down, and the capture after that shows the new routes: the ones
before it are those the traffic took when the link went). A job's fault is an interval, so its
footprint is the union over the captures in effect during it.

Pairs: NCCL's rings and trees use a subset of a job's host pairs, chosen at run time from its
ranks' order and the topology NCCL detects; nothing in a job's log says which (NCCL prints its
rings only at NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=GRAPH, and by rank, not host). So every
ordered pair of the job's hosts on a rail is taken: the upper bound of what it crossed.

Rails: NCCL in a rail-optimised fabric connects the HCA of rail r of one host to the HCA of
rail r of another (the NIC closest to each GPU; PXN moves cross-rail traffic onto NVLink first),
so pairs are formed per HCA device name; HCAs without a device name form one group.

Adaptive routing (`[fabric] adaptive_routing = true`): each up hop may take any equal-cost up
port, so the routes widen (`Routes.crossed(adaptive=True)`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from auditor import graph
from auditor.analyse.evidence import link_of
from auditor.models import NO_ROUTE, Fabric, LinkKey, NodeType

if TYPE_CHECKING:
    # paths imports numpy (0.12 s): every `suspects` imports this module, but only a fabric
    # with forwarding tables loads routes (issue #25)
    from auditor.analyse.paths import PortRef, Routes

# A night's jobs share hosts and rails: their crossings are asked for again and again.
_CACHE_MAX = 1 << 16


class RouteBook:
    """The forwarding-table captures of a fabric, loaded when first needed: `captures` are
    their times (any order), `load(t)` gives the Routes of the capture taken at `t`."""

    def __init__(self, captures: Iterable[datetime],
                 load: Callable[[datetime, tuple[datetime, Fabric] | None], Routes | None],
                 *, adaptive: bool = False) -> None:
        self.captures = sorted(set(captures))
        self._load = load
        self.adaptive = adaptive
        # the topology snapshot the caller has read already (its time, the fabric): a capture
        # in effect with it builds its routes from it instead of reading it again
        self.shared: tuple[datetime, Fabric] | None = None
        self._routes: dict[datetime, Routes | None] = {}
        self._keys: dict[datetime, list[LinkKey]] = {}
        self._crossed: dict[tuple[datetime, tuple[PortRef, ...]], frozenset[LinkKey] | None] = {}

    def __bool__(self) -> bool:
        return bool(self.captures)

    def capture_at(self, at: datetime) -> datetime | None:
        """The time of the capture in effect at `at` (the latest at or before it)."""
        i = bisect_right(self.captures, at)
        return self.captures[i - 1] if i else None

    def captures_during(self, lo: datetime, hi: datetime) -> list[datetime]:
        """The captures in effect at some moment of [lo, hi]."""
        first = self.capture_at(lo)
        inside = self.captures[bisect_right(self.captures, lo):bisect_right(self.captures, hi)]
        return ([first] if first is not None else []) + inside

    def routes(self, capture: datetime) -> Routes | None:
        if capture not in self._routes:
            self._routes[capture] = self._load(capture, self.shared)
        return self._routes[capture]

    def _link_keys(self, capture: datetime, routes: Routes) -> list[LinkKey]:
        keys = self._keys.get(capture)
        if keys is None:
            keys = self._keys[capture] = [
                link_of([(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)]) for lk in routes.links]
        return keys

    def crossed(self, capture: datetime, ports: Sequence[PortRef]) -> frozenset[LinkKey] | None:
        """The cables traffic between every ordered pair of `ports` (one rail's HCA ports)
        crosses under the capture's tables; None when the tables cannot say (no such capture,
        a port they do not know, or a walk that did not reach its end): ask the graph then."""
        key = (capture, tuple(sorted(set(ports))))
        if key in self._crossed:
            return self._crossed[key]
        routes = self.routes(capture)
        found: frozenset[LinkKey] | None = None
        if routes is not None and len(key[1]) >= 1:
            got = routes.crossed(key[1], adaptive=self.adaptive)
            if not got.unknown and not got.failed:
                keys = self._link_keys(capture, routes)
                found = frozenset(keys[int(k)] for k in got.link_ids)
        if len(self._crossed) >= _CACHE_MAX:
            self._crossed.clear()
        self._crossed[key] = found
        return found

    def crossed_during(self, lo: datetime, hi: datetime, rails: Iterable[Sequence[PortRef]]
                       ) -> set[LinkKey] | None:
        """The union over the rails and the captures in effect during [lo, hi] of `crossed`;
        None when no capture was in effect or any of them cannot say."""
        captures = self.captures_during(lo, hi)
        if not captures:
            return None
        out: set[LinkKey] = set()
        for rail in rails:
            if len(rail) < 2:
                continue
            for capture in captures:
                found = self.crossed(capture, rail)
                if found is None:
                    return None
                out |= found
        return out


def ar_alternatives(link: LinkKey, g: graph.FabricGraph, routes: Routes | None) -> int:
    """How many other ports adaptive routing can send a link's flows out of instead: for an
    up link (a switch to one a tier above it), the lower switch's other up links. The tiers
    come from the forwarding tables' fabric when given (three tiers: a spine's links to the
    cores too), else only a leaf's uplinks are known to be up links. 0: not an up link."""
    if len(link) != 2:
        return 0
    (a, _), (b, _) = link
    if a not in g or b not in g or any(
            g.nodes[n]["node_type"] != NodeType.SWITCH for n in (a, b)):
        return 0
    if routes is not None:
        tier = routes.tier
        if a in tier and b in tier and abs(tier[a] - tier[b]) == 1:
            low = a if tier[a] < tier[b] else b
            ups = sum(1 for port in routes.cabled.get(low, [])
                      if tier.get(routes.peer[(low, port)][0][0]) == tier[low] + 1)
            return max(0, ups - 1)
        return 0
    leaves = [n for n in (a, b) if graph.is_leaf(g, n)]
    return max(0, len(graph.uplinks(g, leaves[0])) - 1) if len(leaves) == 1 else 0


def emptied_ports(old: bytes, new: bytes) -> list[int]:
    """The out ports a switch's table sent some DLIDs to before and none now: where the
    subnet manager lost a link (a link coming back takes only part of the others' routes back,
    so the ports it relieves keep some)."""
    import numpy as np  # here: only forwarding-table changes need it

    a = np.frombuffer(old, dtype=np.uint8)
    b = np.frombuffer(new, dtype=np.uint8)
    before = set(np.unique(a).tolist()) - {0, NO_ROUTE}
    return sorted(before - set(np.unique(b).tolist()))


def by_rail(ports: Iterable[tuple[PortRef, str | None]]) -> list[list[PortRef]]:
    """HCA ports grouped by their device name (the rail; None: one group of unnamed ones)."""
    groups: dict[str | None, list[PortRef]] = defaultdict(list)
    for port, device in ports:
        groups[device].append(port)
    return [groups[d] for d in sorted(groups, key=lambda d: d or "")]


__all__ = ["RouteBook", "ar_alternatives", "by_rail", "emptied_ports"]
