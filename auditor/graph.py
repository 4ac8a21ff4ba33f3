"""The fabric as a multigraph, and the path questions the correlation asks of it.

Nodes are node GUIDs; every physical link is one edge (parallel cables between the same two
switches are separate edges) keyed by its canonical `EdgeKey`.

`FabricGraph` is a plain adjacency map with the part of networkx's MultiGraph interface the
analysis uses (`nodes[guid]`, `neighbors`, `g[u][v]`, `edges(nbunch, keys=True)`), in the same
iteration order. networkx itself costs 80-110 ms to import and its MultiGraph 25-45 ms to build
for a 12,288-link fabric, a third of `auditor suspects --since 24h` (issue #13); nothing here
needs its algorithms (`links_between` is a breadth-first search from both ends that stops where
they meet). `to_networkx()` gives the
real thing for anyone who wants them, and the tests check the answers against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from auditor.models import EdgeKey, Fabric, Link, LinkRows, NodeType

if TYPE_CHECKING:
    import networkx as nx

# the switches in order, each one's place in it, and each one's switch neighbours as bits
_Masks = tuple[list[str], dict[str, int], "_NeighbourMasks"]
# shortest hop count, the switches of each end the shortest paths leave from and arrive at,
# the switch links on the paths, as runs of sorted link keys (one run per hop)
SwitchPaths = tuple[int, frozenset[str], frozenset[str], tuple[tuple[EdgeKey, ...], ...]]


def link_key(link: Link) -> EdgeKey:
    return (link.a_guid, link.a_port, link.b_guid, link.b_port)


class FabricGraph:
    """An undirected multigraph: `nodes[guid]` holds name, node_type and description;
    `adj[u][v]` maps each link key between u and v to its Link; `links` holds every link key
    in the order the links came, with its two ends. A graph `build_graph` makes fills a node's
    `adj` when it is first asked for (issue #25: the whole adjacency of a 65,536-GPU fat tree
    was 0.6 s of every `suspects`, which asks about the few hundred switches its evidence
    touches); adding a node or an edge fills the rest first."""

    __slots__ = ("_masks", "_switch_adj", "adj", "hop_cache", "links", "nodes", "path_cache",
                 "uplink_cache")

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.adj: dict[str, dict[str, dict[EdgeKey, Link]]] = {}
        self.links: Mapping[EdgeKey, tuple[str, str, Link]] = {}
        self._switch_adj: Mapping[str, set[str]] | None = None
        self._masks: _Masks | None = None
        # _switch_paths' and uplinks' answers; emptied whenever the graph changes
        self.path_cache: dict[tuple[frozenset[str], frozenset[str]], SwitchPaths | None] = {}
        # the links between two sets of switches (bit masks, the lower first), sorted: the same
        # pod's spine-core links lie between many pairs of leaves
        self.hop_cache: dict[tuple[int, int], tuple[EdgeKey, ...]] = {}
        self.uplink_cache: dict[str, list[EdgeKey]] = {}

    def add_node(self, guid: str, **attrs: Any) -> None:
        self._settle()
        self.nodes.setdefault(guid, {}).update(attrs)
        self.adj.setdefault(guid, {})
        self._forget()

    def _settle(self) -> dict[EdgeKey, tuple[str, str, Link]]:
        """The adjacency of every node filled, and `links` a dict (to be changed)."""
        if isinstance(self.adj, _Adjacency):
            self.adj = {guid: self.adj[guid] for guid in self.nodes}
        if not isinstance(self.links, dict):
            self.links = dict(self.links.items())
        return self.links

    def _forget(self) -> None:
        self._switch_adj = None
        self._masks = None
        self.path_cache.clear()
        self.hop_cache.clear()
        self.uplink_cache.clear()

    def add_edge(self, u: str, v: str, key: EdgeKey, link: Link) -> None:
        for guid in (u, v):
            if guid not in self.nodes:
                self.add_node(guid)
        self._settle()[key] = (u, v, link)
        self.adj[u].setdefault(v, {})[key] = link
        if u != v:  # a self-loop is one entry, as in networkx
            self.adj[v].setdefault(u, {})[key] = link
        self._forget()

    def __contains__(self, guid: object) -> bool:
        return guid in self.nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, guid: str) -> dict[str, dict[EdgeKey, Link]]:
        return self.adj[guid]

    def neighbors(self, guid: str) -> Iterator[str]:
        adj = self.adj
        if isinstance(adj, _Adjacency) and guid in self.nodes and not dict.__contains__(adj, guid):
            # in the order of their first link, as the adjacency has them, without making it
            # (the leaves of the 30,000 HCAs of a month's failed jobs at 65,536 GPUs)
            return iter(dict.fromkeys(adj.rows.peers(guid)))
        return iter(adj[guid])

    def neighbor_lists(self, guids: list[str]) -> list[list[str]]:
        """`list(neighbors(guid))` of each of `guids` (nodes of the graph), at once."""
        adj = self.adj
        if not isinstance(adj, _Adjacency):
            return [list(adj[guid]) for guid in guids]
        lazy = [guid for guid in guids if not dict.__contains__(adj, guid)]
        for guid in lazy:
            if guid not in self.nodes:
                raise KeyError(guid)
        made = dict(zip(lazy, map(dict.fromkeys, adj.rows.peers_of(lazy)), strict=True))
        return [list(made[guid] if guid in made else adj[guid]) for guid in guids]

    def edges(self, nbunch: str | Iterable[str], keys: bool = True
              ) -> Iterator[tuple[str, str, EdgeKey]]:
        """(u, v, key) of every edge at the nodes of `nbunch`, each edge once (networkx's
        order: nodes in the order given, then neighbours in the order their edges came)."""
        if not keys:
            raise ValueError("FabricGraph.edges always yields keys")
        bunch = [nbunch] if isinstance(nbunch, str) else [n for n in nbunch if n in self.adj]
        seen: set[str] = set()
        for u in bunch:
            for v, links in self.adj[u].items():
                if v not in seen:
                    for k in links:
                        yield u, v, k
            seen.add(u)

    def switch_adjacency(self) -> Mapping[str, set[str]]:
        """Switch-to-switch neighbours, each switch's worked out when first asked for (once
        per graph: path questions are asked thousands of times per ranking)."""
        if self._switch_adj is None:
            self._switch_adj = _SwitchAdjacency(self)
        return self._switch_adj

    def switch_masks(self) -> _Masks:
        """The switches in a fixed order and each one's switch neighbours as a bit mask over
        that order, built once per graph (see `_meet`)."""
        if self._masks is None:
            adj = self.switch_adjacency()
            names = list(adj)
            index = {s: i for i, s in enumerate(names)}
            self._masks = (names, index, _NeighbourMasks(names, index, adj))
        return self._masks

    def to_networkx(self) -> nx.MultiGraph:
        """The same graph as a networkx MultiGraph (node attributes, edges keyed by link key
        with the Link as `link`), for analyses networkx has and we do not."""
        import networkx as nx

        g = nx.MultiGraph()
        for guid, attrs in self.nodes.items():
            g.add_node(guid, **attrs)
        for k, (u, v, link) in self.links.items():
            g.add_edge(u, v, key=k, link=link)
        return g


class _Adjacency(dict[str, dict[str, dict[EdgeKey, Link]]]):
    """`FabricGraph.adj` of a graph of a Fabric: a node's neighbours made when it is first
    asked for, from the indexes of its links (Fabric.link_rows), as `build_graph` made them
    all before: neighbours in the order of their first link, links in their order."""

    __slots__ = ("_links", "_nodes", "rows")

    def __init__(self, nodes: dict[str, dict[str, Any]], rows: LinkRows,
                 links: Sequence[Link]) -> None:
        super().__init__()
        self._nodes, self.rows, self._links = nodes, rows, links

    def made(self, guid: str) -> bool:
        return dict.__contains__(self, guid)

    def __missing__(self, guid: str) -> dict[str, dict[EdgeKey, Link]]:
        if guid not in self._nodes:
            raise KeyError(guid)
        peers: dict[str, dict[EdgeKey, Link]] = {}
        links = self._links
        for i in self.rows.get(guid, ()):
            lk = links[i]
            a, b = lk.a_guid, lk.b_guid
            peers.setdefault(b if a == guid else a, {})[(a, lk.a_port, b, lk.b_port)] = lk
        self[guid] = peers
        return peers

    def __contains__(self, guid: object) -> bool:
        return guid in self._nodes

    def get(self, guid: str, default: Any = None) -> Any:
        return self[guid] if guid in self._nodes else default


class _Edges(Mapping[EdgeKey, tuple[str, str, Link]]):
    """`FabricGraph.links` of a graph of a Fabric: a link key looked up in its a end's
    adjacency; iterated, every key in the order of the links (and the links made)."""

    __slots__ = ("_adj", "_links")

    def __init__(self, adj: _Adjacency, links: Sequence[Link]) -> None:
        self._adj, self._links = adj, links

    def __getitem__(self, key: EdgeKey) -> tuple[str, str, Link]:
        if key[0] in self._adj:
            found = self._adj[key[0]].get(key[2])
            if found is not None and key in found:
                link = found[key]
                return link.a_guid, link.b_guid, link
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        adj = self._adj
        if not (isinstance(key, tuple) and len(key) == 4 and key[0] in adj):
            return False
        if not adj.made(key[0]):  # its links to key[2] only, without their objects
            return key in adj.rows.keys_to(key[0], (key[2],))
        found = adj[key[0]].get(key[2])
        return found is not None and key in found

    def _keys(self) -> dict[EdgeKey, None]:
        return dict.fromkeys(map(link_key, self._links))

    def __iter__(self) -> Iterator[EdgeKey]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


class _SwitchAdjacency(Mapping[str, set[str]]):
    """FabricGraph.switch_adjacency: every switch, its switch neighbours worked out when first
    asked for."""

    __slots__ = ("_done", "_g", "_switches")

    def __init__(self, g: FabricGraph) -> None:
        self._g = g
        self._switches = {n: None for n, d in g.nodes.items()
                          if d["node_type"] == NodeType.SWITCH}
        self._done: dict[str, set[str]] = {}

    def __getitem__(self, guid: str) -> set[str]:
        found = self._done.get(guid)
        if found is None:
            if guid not in self._switches:
                raise KeyError(guid)
            switches, adj = self._switches, self._g.adj
            # A switch's neighbours without its links' objects, while its adjacency is not
            # made (a path search asks about a thousand cores of a 65,536-GPU fat tree).
            peers = (adj.rows.peers(guid) if isinstance(adj, _Adjacency)
                     and not adj.made(guid) else adj[guid])
            found = self._done[guid] = {p for p in peers if p in switches}
        return found

    def __contains__(self, guid: object) -> bool:
        return guid in self._switches

    def __iter__(self) -> Iterator[str]:
        return iter(self._switches)

    def __len__(self) -> int:
        return len(self._switches)


class _NeighbourMasks(dict[int, int]):
    """Switch i's switch neighbours as a bit mask over the switches' order, made when first
    asked: a path search touches the switches near its two ends, and making all 5,120 masks of
    a 65,536-GPU fat tree up front was 0.4 s (issue #25)."""

    __slots__ = ("_adj", "_index", "_names", "_size")

    def __init__(self, names: list[str], index: dict[str, int],
                 adj: Mapping[str, set[str]]) -> None:
        super().__init__()
        self._names, self._index, self._adj = names, index, adj
        self._size = (len(names) + 7) // 8

    def __missing__(self, i: int) -> int:
        # Bits set in a byte array, one int made of it: no big int per neighbour.
        buf = bytearray(self._size)
        index = self._index
        for peer in self._adj[self._names[i]]:
            j = index[peer]
            buf[j >> 3] |= 1 << (j & 7)
        mask = self[i] = int.from_bytes(buf, "little")
        return mask


def build_graph(fabric: Fabric) -> FabricGraph:
    """One node per GUID (attributes: name, node_type, description), one edge per link; a
    node's adjacency is made when first asked for (FabricGraph)."""
    g = FabricGraph()
    nodes = g.nodes
    for node in fabric.nodes.values():
        nodes[node.guid] = {"name": node.name, "node_type": node.node_type,
                            "description": node.description}
    # A link end whose node record is missing (a partial capture): keep the link.
    for guid in fabric.stray_ends():
        nodes[guid] = {"name": guid, "node_type": NodeType.SWITCH, "description": ""}
    adj = _Adjacency(nodes, fabric.link_rows(), fabric.links)
    g.adj, g.links = adj, _Edges(adj, fabric.links)
    return g


def host_guids(g: FabricGraph, host: str) -> list[str]:
    """The HCA node GUIDs of a host (a host may have several HCAs, one per rail)."""
    return sorted(
        n for n, d in g.nodes.items()
        if d["node_type"] == NodeType.HCA and d["name"] == host
    )


def node_links(g: FabricGraph, guid: str) -> list[EdgeKey]:
    """Every link of one node (a switch's cables, or a host HCA's cable)."""
    return sorted(k for _, _, k in g.edges(guid, keys=True))


def host_links(g: FabricGraph, host: str) -> list[EdgeKey]:
    return sorted({k for guid in host_guids(g, host) for k in node_links(g, guid)})


def is_leaf(g: FabricGraph, guid: str) -> bool:
    """A leaf (top-of-rack) switch is a switch with at least one HCA cabled to it."""
    if g.nodes[guid]["node_type"] != NodeType.SWITCH:
        return False
    return any(g.nodes[n]["node_type"] == NodeType.HCA for n in g.neighbors(guid))


def leaves(g: FabricGraph) -> list[str]:
    return sorted(n for n in g if is_leaf(g, n))


def uplinks(g: FabricGraph, leaf: str) -> list[EdgeKey]:
    """The links from a leaf switch to other switches."""
    # Kept per graph: a month's ranking asks for the uplinks of the leaves of every failed job,
    # the same 128 leaves 1,200 times (70 ms of `suspects --since 30d`, issue #13).
    found = g.uplink_cache.get(leaf)
    if found is None:
        nodes = g.nodes
        found = g.uplink_cache[leaf] = sorted(
            k for peer, keys in g.adj[leaf].items()
            if nodes[peer]["node_type"] == NodeType.SWITCH for k in keys)
    return list(found)


def leaf_of(g: FabricGraph, hca: str) -> list[str]:
    return sorted(n for n in g.neighbors(hca) if g.nodes[n]["node_type"] == NodeType.SWITCH)


def _bits(mask: int) -> Iterator[int]:
    """The positions of the set bits of `mask`, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _grow(adj: _NeighbourMasks, frontier: int) -> int:
    """Every switch one hop from the switches of `frontier` (one OR of neighbour masks each)."""
    reach = 0
    for i in _bits(frontier):
        reach |= adj[i]
    return reach


def _meet(adj: _NeighbourMasks, a: int, b: int) -> tuple[int, list[int], list[int]] | None:
    """The shortest hop count between the switch sets `a` and `b` (bit masks), with the layers
    grown from each side until they met: layers_a[k] holds the switches k hops from `a`.
    Both sides grow, the smaller frontier first, so neither walks the whole fabric: in a
    three-tier fat tree two leaves meet at the cores after two hops each, where a search from
    each leaf to every switch of the fabric was a third of `suspects --since 24h` at 65,536
    GPUs (issue #25). A pair of layers is compared when the later of the two is grown, so the
    first that share a switch give the shortest hop count."""
    layers_a, layers_b = [a], [b]
    seen_a, seen_b = a, b
    if a & b:
        return 0, layers_a, layers_b
    while True:
        grow_a = layers_a[-1].bit_count() <= layers_b[-1].bit_count()
        mine, seen, other = ((layers_a, seen_a, layers_b) if grow_a
                             else (layers_b, seen_b, layers_a))
        frontier = _grow(adj, mine[-1]) & ~seen
        if not frontier:
            return None  # this side reached all it can: the other is not among it
        mine.append(frontier)
        if grow_a:
            seen_a |= frontier
        else:
            seen_b |= frontier
        for m, layer in enumerate(other):
            if frontier & layer:
                return len(mine) - 1 + m, layers_a, layers_b


def _switch_paths(g: FabricGraph, a: frozenset[str], b: frozenset[str]
                  ) -> SwitchPaths | None:
    """Between two sets of switches: the shortest hop count, the switches of `a` and of `b` the
    shortest paths start and end at, and the switch-to-switch links on those paths. Kept per
    graph: the hosts of a job hang off a few leaves, so a month's ranking asks the same few
    leaf pairs thousands of times (a breadth-first search per host pair was 30 % of
    `suspects --since 30d`, issue #13)."""
    cache = g.path_cache
    if (a, b) in cache:
        return cache[(a, b)]
    names, index, adj = g.switch_masks()
    met = _meet(adj, sum(1 << index[s] for s in a), sum(1 << index[s] for s in b))
    result: SwitchPaths | None = None
    if met is not None:
        best, layers_a, layers_b = met
        # The switches on a shortest path, by hops from `a`: those k hops from `a` and
        # best - k from `b`. Where both sides' layers reach (the cut), one AND; towards either
        # end, those of a side's layer next to an on-path switch one hop further in.
        cut = min(len(layers_a) - 1, best)
        on = [0] * (best + 1)
        on[cut] = layers_a[cut] & layers_b[best - cut]
        for k in range(cut - 1, -1, -1):
            on[k] = _next_to(adj, layers_a[k], on[k + 1])
        for k in range(cut + 1, best + 1):
            on[k] = _next_to(adj, layers_b[best - k], on[k - 1])
        # A link u-v lies on a shortest path when u is on one k hops from `a` and v on one
        # k + 1 hops from it.
        result = (best, frozenset(names[i] for i in _bits(on[0])),
                  frozenset(names[i] for i in _bits(on[best])),
                  tuple(_hop(g, on[k], on[k + 1]) for k in range(best)))
    cache[(a, b)] = result
    return result


def _hop(g: FabricGraph, near: int, far: int) -> tuple[EdgeKey, ...]:
    """The links between two disjoint sets of switches (bit masks), sorted; kept per graph."""
    key = (near, far) if near <= far else (far, near)
    found = g.hop_cache.get(key)
    if found is None:
        names, _, adj = g.switch_masks()
        g_adj = g.adj
        keys: list[EdgeKey] = []
        # From the side with fewer switches: their links are looked at (between the spines
        # of a pod and all 1,024 cores of a 65,536-GPU fat tree, the spines').
        few, many = key if key[0].bit_count() <= key[1].bit_count() else (key[1], key[0])
        lazy = g_adj if isinstance(g_adj, _Adjacency) else None
        for i in _bits(few):
            name = names[i]
            if lazy is not None and not lazy.made(name):
                # the keys of only the links to the far side, without the links' objects
                keys.extend(lazy.rows.keys_to(name, {names[j] for j in _bits(adj[i] & many)}))
                continue
            peers = g_adj[name]
            for j in _bits(adj[i] & many):
                keys.extend(peers[names[j]])
        found = g.hop_cache[key] = tuple(sorted(keys))
    return found


def _next_to(adj: _NeighbourMasks, layer: int, on: int) -> int:
    """The switches of `layer` with a neighbour in `on`: by the fewer of the two sets' bits."""
    if layer.bit_count() <= on.bit_count():
        return sum(1 << i for i in _bits(layer) if adj[i] & on)
    return layer & _grow(adj, on)


def links_between(
    g: FabricGraph, sources: Iterable[str], targets: Iterable[str]
) -> list[EdgeKey]:
    """Every link on any shortest path between any of `sources` and any of `targets` (node
    GUIDs): in a fat tree, the cables that traffic between them can take under any routing.
    HCAs never forward traffic, so paths run through switches only."""
    adj = g.switch_adjacency()
    # Sorted runs, sorted once joined: a sort that finds runs merges them (a 65,536-GPU fat
    # tree has 2,100 links between two leaves of different pods; sorting them from a set was
    # a tenth of the path search, issue #25).
    runs: list[Iterable[EdgeKey]] = []
    targets = list(targets)
    for src in sources:
        for dst in targets:
            if src == dst or src not in g or dst not in g:
                continue
            a = frozenset(n for n in g.neighbors(src) if n in adj)
            b = frozenset(n for n in g.neighbors(dst) if n in adj)
            if not a or not b:
                continue
            paths = _switch_paths(g, a, b)
            if paths is None:
                continue
            _, starts, ends, between = paths
            runs.append(sorted(k for s in starts for k in g[src][s]))
            runs.append(sorted(k for s in ends for k in g[dst][s]))
            runs.extend(between)
    return sorted(dict.fromkeys(chain.from_iterable(runs)))


def links_between_hosts(g: FabricGraph, host_a: str, host_b: str) -> list[EdgeKey]:
    """The links traffic between two hosts can cross (their HCA cables and the switch paths)."""
    return links_between(g, host_guids(g, host_a), host_guids(g, host_b))
