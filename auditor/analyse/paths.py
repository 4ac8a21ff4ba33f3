"""The paths traffic takes through the fabric, worked out from the switches' forwarding tables
(issue #23): hop by hop, as `ibtracert` would trace them, but from stored tables at any time.

An InfiniBand packet is forwarded on its destination LID alone: a switch sends DLID d out of
the port its linear forwarding table (LFT) gives for d, port 0 being the switch itself. So the
path from an HCA port to DLID d is: the source port's cable to its switch, then at each switch
`port = LFT[switch][d]` and that port's cable, until a CA port that owns d (or a switch whose
own LID d is). The source LID plays no part (unicast LFT routing; no source routing).

- LMC > 0 gives a port 2^LMC consecutive LIDs (base .. base + 2^LMC - 1), and the SM may route
  each differently. NCCL addresses a peer by its port's base LID with no path bits:
  NVIDIA/nccl@v2.30.7-1 src/transport/net_ib/connect.cc:426 sets `ah_attr.dlid` to the peer's
  `lid`, which is `ibDev->portAttr.lid` (ibv_query_port's base LID, connect.cc:927), and
  connect.cc:446 sets `src_path_bits = 0` (the same at v2.18.3-1 src/transport/net_ib.cc:574,
  577, 664). So `routes(..., lids="base")` is NCCL's traffic; `lids="all"` gives every path,
  for other users of LMC (MPI over UCX may use path bits).
- A DLID with no entry in a switch's table (or outside the range the tool dumped) is
  `unreachable`; an out port with no cable (a link down since the SM last ran: the tables are
  stale until it reroutes) is a `dead_end`; coming back to a switch already crossed for the
  same DLID is a `loop` and is refused (the next hop depends on switch and DLID only, so it
  would go round for ever); arriving at a port that does not own the DLID is `misrouted`.
- Tiers: switches with a CA cabled to them are tier 1 (leaves), their other switch neighbours
  tier 2, and so on (breadth first). An up hop goes to a higher tier.

Adaptive routing (Quantum AR): the switch may send a flow out of any port of the DLID's AR group
instead of the LFT's port. The groups are not read here: upstream opensm (3.3.x, to 3.3.24) has
no AR at all; NVIDIA's own SM sets them up, and only NVIDIA's ibdiagnet dumps them
(`ibdiagnet2.ar`, `ibdiagnet2.far`), files its manual names but whose layout it does not
publish. `widen` and `crossed(adaptive=True)` stand in for them as `[fabric]
adaptive_routing = true` asks: each up hop widened to every up port whose switch routes the
DLID itself (what NVIDIA's TREE AR algorithm groups: "all ports with minimal hops").

Everything is worked out from models records only (links, tables, LIDs): no store here.
`Routes` indexes the fabric once (per-switch arrays), after which one path is a few dict
lookups and a job's whole footprint (`crossed`) is a handful of numpy gathers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from auditor.models import NO_ROUTE, LidOwner, Link, NodeType, SwitchLft, Topology

PortRef = tuple[str, int]  # (node key as the links name it, port number)
RouteStatus = Literal["ok", "unreachable", "dead_end", "loop", "misrouted", "no_source"]

# IBTA directed routes allow 64 hops; ibtracert stops at 63 (infiniband-diags ibtracert.c:52).
MAX_HOPS = 64


@dataclass(frozen=True, slots=True)
class EndPort:
    """A CA (or router) port and its LIDs: `lid` is the base LID, 2^`lmc` LIDs from it. `guid`
    is the node key the links use for it (a node GUID, or a port GUID from `ibnetdiscover -p`)."""

    guid: str
    port: int
    lid: int
    lmc: int = 0

    @property
    def lids(self) -> range:
        return range(self.lid, self.lid + (1 << self.lmc))


@dataclass(frozen=True, slots=True)
class Hop:
    """One switch on a path: in at `in_port`, out at `out_port` (0: the switch is the end)."""

    switch: str
    in_port: int
    out_port: int


@dataclass(frozen=True, slots=True)
class Route:
    """The path from `source` to `dlid`: the switches crossed and the cables crossed, in order
    (the source's own cable first). `status` "ok" means it reached `dest`, the port owning the
    DLID ((switch, 0) for a switch's own LID); otherwise `reason` says where it stopped, and
    `hops`/`links` go as far as the packets would."""

    source: PortRef
    dlid: int
    status: RouteStatus
    hops: tuple[Hop, ...]
    links: tuple[Link, ...]
    dest: PortRef | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class Widened:
    """A route under adaptive routing: `per_link[i]` is every cable the i-th cable of the route
    may be swapped for at that point (itself alone when the hop is not an up hop), `links` every
    cable some choice of AR ports can cross on the way to the DLID."""

    route: Route
    per_link: tuple[frozenset[Link], ...]
    links: frozenset[Link]


@dataclass(slots=True)
class Crossing:
    """The cables a set of ports' traffic crosses between every ordered pair of them (both
    directions, so every cable of every path either way), and the pairs whose path failed:
    (source switch, DLID, status) for each failing (first switch, DLID) walk.

    `link_ids` are indices into `Routes.links`, sorted (`Routes.links_of` turns them into
    Links): a night's jobs cross hundreds of thousands of cables, and hashing that many Link
    records cost more than finding them (issue #23's benchmark)."""

    link_ids: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    pairs: int = 0  # ordered (source, DLID) pairs covered
    walks: int = 0  # distinct (first switch, DLID) walks that covered them
    failed: list[tuple[str, int, RouteStatus]] = field(default_factory=list)
    unknown: list[PortRef] = field(default_factory=list)  # ports that are no known CA port


def end_ports(topology: Topology, owners: Mapping[int, LidOwner] | None = None
              ) -> list[EndPort]:
    """The CA and router ports of an ibnetdiscover capture that have a LID, keyed as its links
    key them. ibnetdiscover prints only the base LID (its default form prints `lmc`, which
    Port does not keep), so the LMC comes from a forwarding-table dump's owners when given
    (a `path #2 out of 2` line makes the base LID's owner count 2), else 0."""
    kinds = {n.guid: n.node_type for n in topology.nodes}
    out = []
    for p in topology.ports:
        if p.lid is None or kinds.get(p.guid) not in (NodeType.HCA, NodeType.ROUTER):
            continue
        owner = (owners or {}).get(p.lid)
        lmc = 0
        if owner is not None and owner.base_lid == p.lid and owner.count > 1:
            lmc = owner.count.bit_length() - 1
        out.append(EndPort(p.guid, p.port, p.lid, lmc))
    return out


class Routes:
    """The fabric indexed for path questions: its links, each switch's LFT, each CA port's LIDs.

    Switches are the nodes with a table; a link end that is neither a switch with a table nor a
    known CA port is a node the walk cannot go through (it ends there, `misrouted`).
    """

    def __init__(self, links: Iterable[Link], tables: Iterable[SwitchLft],
                 ends: Iterable[EndPort]) -> None:
        self._index(links, {t.guid: t for t in tables}, ends)

    @classmethod
    def from_arrays(cls, links: Iterable[Link], ends: Iterable[EndPort], switches: LftRows
                    ) -> Routes:
        """The same as `Routes(links, tables, ends)` from tables kept as one out-port matrix
        (what the store reads): no per-DLID dict is built until a one-at-a-time question
        (`route`, `widen`) asks for a switch's table, and `crossed` uses the matrix as is."""
        self = cls.__new__(cls)
        self._index(links, switches, ends)
        return self

    def _index(self, links: Iterable[Link], tables: Mapping[str, SwitchLft],
               ends: Iterable[EndPort]) -> None:
        self.links: list[Link] = list(links)
        self.tables: Mapping[str, SwitchLft] = tables
        self.ends: dict[PortRef, EndPort] = {(e.guid, e.port): e for e in ends}
        # each cable end -> (far end, link index)
        self.peer: dict[PortRef, tuple[PortRef, int]] = {}
        for i, lk in enumerate(self.links):
            a, b = (lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)
            self.peer[a] = (b, i)
            self.peer[b] = (a, i)
        # who owns each DLID: a CA port (all its LMC LIDs) or a switch (port 0)
        self.owner: dict[int, PortRef] = {}
        for ref, end in self.ends.items():
            for lid in end.lids:
                self.owner[lid] = ref
        switch_lids = (tables.switch_lids() if isinstance(tables, LftRows) else
                       ((g, t.lid) for g, t in tables.items()))
        for guid, own in switch_lids:
            if own is not None:
                self.owner[own] = (guid, 0)
        self._arrays: _Arrays | None = None
        self._cabled: dict[str, list[int]] | None = None
        self._tier: dict[str, int] | None = None

    @property
    def cabled(self) -> dict[str, list[int]]:
        """Each switch's cabled ports, in order: AR's candidates (worked out when first asked)."""
        if self._cabled is None:
            self._cabled = {}
            for guid, port in sorted(self.peer):
                if guid in self.tables:
                    self._cabled.setdefault(guid, []).append(port)
        return self._cabled

    @property
    def tier(self) -> dict[str, int]:
        """Each switch's tier (see the module docstring; worked out when first asked)."""
        if self._tier is None:
            self._tier = self._tiers()
        return self._tier

    # ---------------------------------------------------------------- one path at a time

    def lids(self, port: PortRef) -> range:
        """Every LID of a CA port (one unless LMC > 0); a switch's own LID for (switch, 0)."""
        end = self.ends.get(port)
        if end is not None:
            return end.lids
        table = self.tables.get(port[0])
        if port[1] == 0 and table is not None and table.lid is not None:
            return range(table.lid, table.lid + 1)
        return range(0)

    def cable(self, port: PortRef) -> Link | None:
        """The cable on a port, if it has one."""
        far = self.peer.get(port)
        return None if far is None else self.links[far[1]]

    def route(self, source: PortRef, dlid: int) -> Route:
        """The path packets from `source` (a CA port) to `dlid` take, hop by hop."""
        hops: list[Hop] = []
        crossed: list[Link] = []

        def stop(status: RouteStatus, reason: str, dest: PortRef | None = None) -> Route:
            return Route(source, dlid, status, tuple(hops), tuple(crossed), dest, reason)

        if dlid in self.lids(source):
            return stop("ok", "", source)
        far = self.peer.get(source)
        if far is None:
            return stop("no_source", f"{_name(source)} has no cable")
        (node, in_port), index = far
        crossed.append(self.links[index])
        seen: set[str] = set()
        while True:
            table = self.tables.get(node)
            if table is None:
                if self.owner.get(dlid) == (node, in_port):
                    return stop("ok", "", (node, in_port))
                return stop("misrouted", f"reached {_name((node, in_port))}, which does not "
                                         f"own DLID {dlid}")
            if node in seen:
                return stop("loop", f"DLID {dlid} comes back to switch {node}: a routing loop")
            if len(hops) >= MAX_HOPS:
                return stop("loop", f"DLID {dlid} takes more than {MAX_HOPS} hops")
            seen.add(node)
            out = table.ports.get(dlid)
            if out is None:
                where = ("outside the range its table was dumped for "
                         f"({table.first_lid}-{table.last_lid})"
                         if not table.first_lid <= dlid <= table.last_lid else "no route")
                return stop("unreachable", f"switch {node} ({table.description}) has {where} "
                                           f"for DLID {dlid}")
            hops.append(Hop(node, in_port, out))
            if out == 0:
                if table.lid == dlid or self.owner.get(dlid) == (node, 0):
                    return stop("ok", "", (node, 0))
                return stop("misrouted", f"switch {node} ({table.description}) keeps DLID "
                                         f"{dlid} for itself (port 0), its LID is {table.lid}")
            far = self.peer.get((node, out))
            if far is None:
                return stop("dead_end", f"switch {node} ({table.description}) sends DLID "
                                        f"{dlid} out of port {out}, which has no cable "
                                        "(stale table: the SM has not rerouted yet)")
            (node, in_port), index = far
            crossed.append(self.links[index])

    def routes(self, source: PortRef, dest: PortRef,
               lids: Literal["base", "all"] = "base") -> list[Route]:
        """The paths from `source` to the port `dest`: to its base LID only (what NCCL uses,
        see the module docstring), or to each of its 2^LMC LIDs."""
        targets = self.lids(dest)
        if not targets:
            return []
        chosen = targets[:1] if lids == "base" else targets
        return [self.route(source, dlid) for dlid in chosen]

    # ---------------------------------------------------------------- adaptive routing

    def _tiers(self) -> dict[str, int]:
        """Tier of each switch: 1 with a CA port cabled to it, then breadth first upwards."""
        tier: dict[str, int] = {}
        todo: deque[str] = deque()
        for (guid, _), ((far, _), _) in self.peer.items():
            if guid not in self.tables and far in self.tables and far not in tier:
                tier[far] = 1
                todo.append(far)
        switch_peers: dict[str, set[str]] = {}
        for (guid, _), ((far, _), _) in self.peer.items():
            if guid in self.tables and far in self.tables and far != guid:
                switch_peers.setdefault(guid, set()).add(far)
        while todo:
            guid = todo.popleft()
            for far in sorted(switch_peers.get(guid, ())):
                if far not in tier:
                    tier[far] = tier[guid] + 1
                    todo.append(far)
        return tier

    def _up_choices(self, switch: str, dlid: int) -> list[tuple[int, str, int]]:
        """(port, upper switch, link index) for each up port of `switch` whose upper switch
        routes `dlid` out of a cabled port: the equal-cost choices AR has there."""
        here = self.tier.get(switch)
        if here is None:
            return []
        out = []
        for port in self.cabled.get(switch, ()):
            (upper, _), index = self.peer[(switch, port)]
            up_table = self.tables.get(upper)
            if up_table is None or self.tier.get(upper) != here + 1:
                continue
            nxt = up_table.ports.get(dlid)
            if nxt is not None and (nxt == 0 or (upper, nxt) in self.peer):
                out.append((port, upper, index))
        return out

    def widen(self, route: Route) -> Widened:
        """`route` under adaptive routing: each up hop may take any equal-cost up port."""
        per_link: list[frozenset[Link]] = [frozenset({route.links[0]})] if route.links else []
        for i, hop in enumerate(route.hops):
            if i + 1 >= len(route.links):
                break
            taken = route.links[i + 1]
            choices = self._up_choices(hop.switch, route.dlid)
            if any(port == hop.out_port for port, _, _ in choices):
                per_link.append(frozenset({taken} | {self.links[k] for _, _, k in choices}))
            else:
                per_link.append(frozenset({taken}))
        reach: set[int] = set()
        memo: dict[str, frozenset[int]] = {}
        if route.links:
            first = self.peer.get(route.source)
            if first is not None:
                reach.add(first[1])
                reach |= self._ar_from(first[0][0], route.dlid, memo, set())
        return Widened(route, tuple(per_link),
                       frozenset({self.links[k] for k in reach} | set(route.links)))

    def _ar_from(self, switch: str, dlid: int, memo: dict[str, frozenset[int]],
                 stack: set[str]) -> frozenset[int]:
        """Link indices some AR choice crosses from `switch` on towards `dlid`."""
        if switch in memo:
            return memo[switch]
        table = self.tables.get(switch)
        if table is None or switch in stack:
            return frozenset()
        stack.add(switch)
        found: set[int] = set()
        out = table.ports.get(dlid)
        nexts: list[tuple[str, int]] = []
        if out:
            far = self.peer.get((switch, out))
            if far is not None:
                nexts.append((far[0][0], far[1]))
        choices = self._up_choices(switch, dlid)
        if any(port == out for port, _, _ in choices):
            nexts += [(upper, index) for _, upper, index in choices]
        for nxt, index in nexts:
            found.add(index)
            found |= self._ar_from(nxt, dlid, memo, stack)
        stack.discard(switch)
        memo[switch] = frozenset(found)
        return memo[switch]

    # ---------------------------------------------------------------- many paths at once

    def links_of(self, link_ids: Iterable[int]) -> list[Link]:
        """The Links behind `Crossing.link_ids`."""
        return [self.links[int(k)] for k in link_ids]

    def crossed(self, ports: Sequence[PortRef], lids: Literal["base", "all"] = "base",
                *, adaptive: bool = False) -> Crossing:
        """The cables crossed by traffic between every ordered pair of `ports` (CA ports: a
        job's HCA ports on one rail, say), to each destination's base LID or to all its LIDs.
        A port that is not a known CA port (`ends`) is listed in `unknown` and left out.
        `adaptive`: every cable some choice of adaptive routing can cross, as `widen` says.

        Two sources cabled to the same switch share their path after their own cables, so the
        walk starts once per distinct (first switch, DLID) pair, all of them together as numpy
        lookups, one step per hop; after the first step, walks that meet (at a spine, for the
        same DLID) go on as one."""
        arrays = self._arrays or self._build_arrays()
        self._arrays = arrays
        if adaptive:
            self._adaptive_arrays(arrays)
        result = Crossing()
        get = arrays.port_index.get
        known: list[int] = []
        for ref in dict.fromkeys(ports):
            k = get(ref, -1)
            if k < 0:
                result.unknown.append(ref)
            else:
                known.append(k)
        # cables crossed, as marks: hashing or sorting them (np.unique) cost more than the walk
        marks = np.zeros(len(self.links) + 1, dtype=np.bool_)  # the last one catches -1s
        if not known:
            result.link_ids = np.flatnonzero(marks[:-1])
            return result
        idx = np.asarray(known, dtype=np.int64)
        marks[arrays.port_cable[idx]] = True
        # the destinations: each port's base LID, or all 2^LMC of them; dst = its port's row
        if lids == "base":
            dl, dst = arrays.port_lid[idx], np.arange(len(idx))
        else:
            count = 1 << arrays.port_lmc[idx]
            dst = np.repeat(np.arange(len(idx)), count)
            starts = np.repeat(np.cumsum(count) - count, count)
            dl = arrays.port_lid[idx][dst] + (np.arange(len(dst)) - starts)
        sw = arrays.port_switch[idx]
        is_src = sw >= 0
        if is_src.any():
            switches, row, per_switch = np.unique(sw[is_src], return_inverse=True,
                                                  return_counts=True)
            src_row = np.full(len(idx), -1, dtype=np.int64)
            src_row[is_src] = row
            # every (first switch, DLID) once, but not a switch's lone source to itself
            keep = np.ones((len(switches), len(dl)), dtype=np.bool_)
            r = src_row[dst]
            lone = (r >= 0) & (per_switch[np.maximum(r, 0)] == 1)
            keep[r[lone], np.flatnonzero(lone)] = False
            keys = (switches[:, None] * arrays.width + dl[None, :])[keep]
            sources = int(is_src.sum())
            result.pairs = sources * len(dl) - int((r >= 0).sum())
            result.walks = len(keys)
            self._walk(arrays, keys, marks, result.failed, adaptive)
        result.link_ids = np.flatnonzero(marks[:-1])
        return result

    @staticmethod
    def _walk(arrays: _Arrays, keys: np.ndarray, marks: np.ndarray,
              failed: list[tuple[str, int, RouteStatus]], adaptive: bool = False) -> None:
        """Walk every (switch, DLID) of `keys` (switch * width + DLID) to its end, one hop per
        step for all at once; the cables crossed are marked in `marks`, the failures go into
        `failed`. Walks that reach the same (switch, DLID) at the same step go on as one (the
        rest of their way is the same: `slot` picks one); in a fat tree that is where they
        meet, at a spine. Walks are not merged across steps, so a loop still runs into the
        step limit and is reported. `adaptive`: an up hop also goes on through every other up
        port whose switch routes the DLID (`_up_choices`, for all walks at once)."""
        width = arrays.width
        cur, dlid = np.divmod(keys, width)
        for step in range(len(arrays.index) + 1):
            if not len(cur):
                return
            if step:
                key = cur * width + dlid
                order = np.arange(len(key), dtype=np.int32)
                arrays.slot[key] = order
                first = arrays.slot[key] == order
                cur, dlid = cur[first], dlid[first]
            port = arrays.out[cur, dlid]
            link = arrays.link[cur, port]
            nxt = arrays.next[cur, port]
            marks[link] = True  # -1 (no cable) marks the spare last slot
            go = nxt >= 0
            extra: tuple[np.ndarray, np.ndarray] | None = None
            if adaptive:
                extra = Routes._ar_step(arrays, cur, dlid, nxt, go, marks)
            if not go.all():
                end = arrays.end[cur, port]
                done_ok = ((port == 0) & (arrays.sw_owner[dlid] == cur)) | (
                    (end >= 0) & (arrays.end_owner[dlid] == end))
                bad = ~done_ok & ~go
                if bad.any():
                    for s, d, p, lk in zip(cur[bad].tolist(), dlid[bad].tolist(),
                                           port[bad].tolist(), link[bad].tolist(), strict=True):
                        status: RouteStatus = ("unreachable" if p == NO_ROUTE else
                                               "dead_end" if lk < 0 and p else "misrouted")
                        failed.append((arrays.guids[s], d, status))
                cur, dlid = nxt[go], dlid[go]
            else:
                cur = nxt
            if extra is not None:
                cur, dlid = np.concatenate((cur, extra[0])), np.concatenate((dlid, extra[1]))
        for s, d in zip(cur.tolist(), dlid.tolist(), strict=True):
            failed.append((arrays.guids[s], d, "loop"))

    @staticmethod
    def _ar_step(arrays: _Arrays, cur: np.ndarray, dlid: np.ndarray, nxt: np.ndarray,
                 go: np.ndarray, marks: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The walks adaptive routing adds at this step: from each walk whose LFT hop goes one
        tier up, through each up port whose upper switch routes the DLID out of a cabled port
        (or keeps it); their cables are marked. None when no walk goes up.

        Worked out per (switch, DLID) set rather than per walk: with B[x, d] the walks going up
        from switch x to DLID d, (routable @ B.T)[u, x] > 0 says whether up switch u routes one
        of x's DLIDs (so x's cable to u may be used), and (up-neighbours.T @ B)[u, d] > 0 whether
        some walk may reach u for d. Two small matrix products instead of walks x up ports x
        DLIDs lookups (a 64-host job spread over 64 leaves of 64 spines: 262,144 of them)."""
        tier, up_next, up_link, routable = (arrays.tier, arrays.up_next, arrays.up_link,
                                            arrays.routable)
        if tier is None or up_next is None or up_link is None or routable is None:
            raise RuntimeError("adaptive arrays not built")
        up = go & (tier[np.maximum(nxt, 0)] == tier[cur] + 1)
        if not up.any():
            return None
        xs, xi = np.unique(cur[up], return_inverse=True)
        ds, di = np.unique(dlid[up], return_inverse=True)
        walks = np.zeros((len(xs), len(ds)), dtype=np.float32)
        walks[xi, di] = 1.0
        can = routable[:, ds]  # (switches, DLIDs): routes it out of a cable, or keeps it
        uppers = up_next[xs]  # (xs, most up ports), -1 padded
        real = uppers >= 0
        # a cable x -> u is usable when u routes one of the DLIDs going up from x
        serves = can.astype(np.float32) @ walks.T  # (switches, xs)
        usable = real & (serves[np.maximum(uppers, 0), np.arange(len(xs))[:, None]] > 0)
        marks[up_link[xs][usable]] = True
        # the (u, d) walks that go on: u one of x's usable uppers, d one of x's DLIDs u routes
        neighbours = np.zeros((len(xs), len(tier)), dtype=np.float32)
        rows = np.broadcast_to(np.arange(len(xs))[:, None], uppers.shape)
        neighbours[rows[usable], uppers[usable]] = 1.0
        reach = (neighbours.T @ walks > 0) & can  # (switches, DLIDs)
        at, col = np.nonzero(reach)
        return at.astype(np.int64), ds[col]

    def _out_matrix(self) -> tuple[list[str], np.ndarray]:
        """The switches in GUID order and their tables as one matrix (out[s, d]: switch s's out
        port for DLID d), at least as wide as the highest LID owned."""
        top = max(self.owner, default=0)
        if isinstance(self.tables, LftRows):
            guids, out = self.tables.guids, self.tables.out
            if out.shape[1] <= top:
                out = np.pad(out, ((0, 0), (0, top + 1 - out.shape[1])),
                             constant_values=NO_ROUTE)
            return guids, out
        guids = sorted(self.tables)
        index = {g: i for i, g in enumerate(guids)}
        rows: list[tuple[int, np.ndarray, np.ndarray]] = []
        for g, table in self.tables.items():
            if table.ports:
                lid_keys = np.fromiter(table.ports.keys(), dtype=np.int64, count=len(table.ports))
                values = np.fromiter(table.ports.values(), dtype=np.int64,
                                     count=len(table.ports))
                rows.append((index[g], lid_keys, values))
                top = max(top, int(lid_keys.max()))
        out = np.full((len(guids), top + 1), NO_ROUTE, dtype=np.uint8)
        for row, lid_keys, values in rows:
            out[row, lid_keys] = values
        return guids, out

    def _build_arrays(self) -> _Arrays:
        guids, out = self._out_matrix()
        index = {g: i for i, g in enumerate(guids)}
        width = out.shape[1]
        count = len(guids)
        # per switch and port (256 columns: port 255, no route, is a column of -1s)
        link = np.full((count, 256), -1, dtype=np.int64)
        nxt = np.full((count, 256), -1, dtype=np.int64)
        end = np.full((count, 256), -1, dtype=np.int64)
        port_index = {ref: k for k, ref in enumerate(self.ends)}
        for (g, port), (far, k) in self.peer.items():
            s = index.get(g)
            if s is None or not 0 < port < 256:
                continue
            link[s, port] = k
            if far[0] in index:
                nxt[s, port] = index[far[0]]
            elif far in port_index:
                end[s, port] = port_index[far]
        sw_owner = np.full(width, -1, dtype=np.int64)
        end_owner = np.full(width, -1, dtype=np.int64)
        for lid, ref in self.owner.items():
            if ref[1] == 0 and ref[0] in index:
                sw_owner[lid] = index[ref[0]]
            elif ref in port_index:
                end_owner[lid] = port_index[ref]
        # each CA port: the switch its cable goes to, the cable, its base LID and LMC
        port_switch = np.full(len(port_index), -1, dtype=np.int64)
        port_cable = np.full(len(port_index), -1, dtype=np.int64)
        for ref, k in port_index.items():
            cabled = self.peer.get(ref)
            if cabled is not None:
                port_cable[k] = cabled[1]
                port_switch[k] = index.get(cabled[0][0], -1)
        port_lid = np.fromiter((e.lid for e in self.ends.values()), dtype=np.int64,
                               count=len(port_index))
        port_lmc = np.fromiter((e.lmc for e in self.ends.values()), dtype=np.int64,
                               count=len(port_index))
        return _Arrays(guids, index, width, out, link, nxt, end, sw_owner, end_owner,
                       port_index, port_switch, port_cable, port_lid, port_lmc,
                       np.zeros(count * width, dtype=np.int32))

    def _adaptive_arrays(self, arrays: _Arrays) -> _Arrays:
        """`arrays` with what adaptive routing needs filled in (first asked by an adaptive
        `crossed`: a static one does without the tiers, up ports and `routable`)."""
        if arrays.tier is not None:
            return arrays
        count, guids, nxt, link, out = len(arrays.guids), arrays.guids, arrays.next, \
            arrays.link, arrays.out
        # tiers (-9: none known, never one below another) and each switch's up ports
        tiers = self.tier
        tier = np.fromiter((tiers.get(g, -9) for g in guids), dtype=np.int64, count=count)
        ups = [[p for p in self.cabled.get(g, ()) if 0 < p < 256
                and (far := nxt[i, p]) >= 0 and tier[far] == tier[i] + 1]
               for i, g in enumerate(guids)]
        widest = max((len(u) for u in ups), default=0)
        up_port = np.full((count, max(widest, 1)), NO_ROUTE, dtype=np.int64)
        for s, u in enumerate(ups):
            up_port[s, :len(u)] = u
        rows = np.arange(count)[:, None]
        arrays.tier = tier
        arrays.up_next = nxt[rows, up_port]
        arrays.up_link = link[rows, up_port]
        arrays.routable = (out == 0) | (link[rows, out] >= 0)
        return arrays


class LftRows(Mapping[str, SwitchLft]):
    """Switch tables kept as the rows of one out-port matrix (`out[s, d]`: switch `guids[s]`'s
    out port for DLID d, NO_ROUTE for none), as the store holds them; a switch's SwitchLft is
    built when first asked for (a fabric's 400 tables of 4,500 DLIDs as dicts cost more than
    every other part of `Routes` put together)."""

    def __init__(self, guids: Sequence[str], lids: Sequence[int | None],
                 descriptions: Sequence[str], first_lids: Sequence[int],
                 last_lids: Sequence[int], out: np.ndarray) -> None:
        order = sorted(range(len(guids)), key=guids.__getitem__)
        self.guids: list[str] = [guids[i] for i in order]
        self.out: np.ndarray = out[order] if order != list(range(len(order))) else out
        self._lids = [lids[i] for i in order]
        self._descriptions = [descriptions[i] for i in order]
        self._first = [first_lids[i] for i in order]
        self._last = [last_lids[i] for i in order]
        self._row = {g: i for i, g in enumerate(self.guids)}
        self._built: dict[str, SwitchLft] = {}

    def switch_lids(self) -> Iterable[tuple[str, int | None]]:
        return zip(self.guids, self._lids, strict=True)

    def __getitem__(self, guid: str) -> SwitchLft:
        table = self._built.get(guid)
        if table is None:
            i = self._row[guid]
            row = self.out[i, : self._last[i] + 1]
            dlids = np.flatnonzero(row != NO_ROUTE)
            table = SwitchLft(guid, self._lids[i], self._descriptions[i], self._first[i],
                              self._last[i], dict(zip(dlids.tolist(), row[dlids].tolist(),
                                                      strict=True)))
            self._built[guid] = table
        return table

    def __contains__(self, guid: object) -> bool:
        return guid in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self.guids)

    def __len__(self) -> int:
        return len(self.guids)


@dataclass(slots=True)
class _Arrays:
    """`Routes` as arrays: switch s's out port for DLID d is out[s, d]; behind its port p are
    link[s, p] (an index into Routes.links), next[s, p] (a switch) or end[s, p] (a CA port,
    an index into Routes.ends); a DLID's owner is sw_owner[d] or end_owner[d] (-1: none)."""

    guids: list[str]
    index: dict[str, int]
    width: int
    out: np.ndarray
    link: np.ndarray
    next: np.ndarray
    end: np.ndarray
    sw_owner: np.ndarray
    end_owner: np.ndarray
    port_index: dict[PortRef, int]  # each CA port's row in the port_* arrays
    port_switch: np.ndarray  # the switch its cable goes to (-1: none)
    port_cable: np.ndarray  # its cable (-1: none)
    port_lid: np.ndarray
    port_lmc: np.ndarray
    # scratch for `_walk`, per (switch * width + DLID): which of a step's walks goes on
    slot: np.ndarray
    # adaptive routing's, None until an adaptive `crossed` asks (`Routes._adaptive_arrays`):
    tier: np.ndarray | None = None  # each switch's tier (-9: not known)
    up_next: np.ndarray | None = None  # the switch behind each up port of a switch (-1 pads)
    up_link: np.ndarray | None = None  # the cable of each up port of a switch (-1 pads)
    routable: np.ndarray | None = None  # [s, d]: s keeps DLID d or sends it out of a cable


def _name(port: PortRef) -> str:
    return f"{port[0]} port {port[1]}"
