"""The fabric as a multigraph, and the path questions the correlation asks of it.

Nodes are node GUIDs; every physical link is one edge (parallel cables between the same two
switches are separate edges) keyed by its canonical `LinkKey`.

`FabricGraph` is a plain adjacency map with the part of networkx's MultiGraph interface the
analysis uses (`nodes[guid]`, `neighbors`, `g[u][v]`, `edges(nbunch, keys=True)`), in the same
iteration order. networkx itself costs 80-110 ms to import and its MultiGraph 25-45 ms to build
for a 12,288-link fabric, a third of `auditor suspects --since 24h` (issue #13); nothing here
needs its algorithms (`links_between` is two breadth-first searches). `to_networkx()` gives the
real thing for anyone who wants them, and the tests check the answers against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from auditor.models import Fabric, Link, NodeType

if TYPE_CHECKING:
    import networkx as nx

LinkKey = tuple[str, int, str, int]
# shortest hop count, distances from each end's switches, the switch links on the paths
SwitchPaths = tuple[int, dict[str, int], dict[str, int], frozenset[LinkKey]]


def link_key(link: Link) -> LinkKey:
    return (link.a_guid, link.a_port, link.b_guid, link.b_port)


class FabricGraph:
    """An undirected multigraph: `nodes[guid]` holds name, node_type and description;
    `adj[u][v]` maps each link key between u and v to its Link; `links` holds every link key
    in the order the links came, with its two ends."""

    __slots__ = ("_switch_adj", "adj", "dist_cache", "links", "nodes", "path_cache")

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.adj: dict[str, dict[str, dict[LinkKey, Link]]] = {}
        self.links: dict[LinkKey, tuple[str, str, Link]] = {}
        self._switch_adj: dict[str, set[str]] | None = None
        # _switch_paths' and distances_from's answers; emptied whenever the graph changes
        self.path_cache: dict[tuple[frozenset[str], frozenset[str]], SwitchPaths | None] = {}
        self.dist_cache: dict[frozenset[str], dict[str, int]] = {}

    def add_node(self, guid: str, **attrs: Any) -> None:
        self.nodes.setdefault(guid, {}).update(attrs)
        self.adj.setdefault(guid, {})
        self._switch_adj = None
        self.path_cache.clear()
        self.dist_cache.clear()

    def add_edge(self, u: str, v: str, key: LinkKey, link: Link) -> None:
        for guid in (u, v):
            if guid not in self.nodes:
                self.add_node(guid)
        self.adj[u].setdefault(v, {})[key] = link
        self.links[key] = (u, v, link)
        if u != v:  # a self-loop is one entry, as in networkx
            self.adj[v].setdefault(u, {})[key] = link
        self._switch_adj = None
        self.path_cache.clear()
        self.dist_cache.clear()

    def __contains__(self, guid: object) -> bool:
        return guid in self.nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, guid: str) -> dict[str, dict[LinkKey, Link]]:
        return self.adj[guid]

    def neighbors(self, guid: str) -> Iterator[str]:
        return iter(self.adj[guid])

    def edges(self, nbunch: str | Iterable[str], keys: bool = True
              ) -> Iterator[tuple[str, str, LinkKey]]:
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

    def switch_adjacency(self) -> dict[str, set[str]]:
        """Switch-to-switch neighbours, built once per graph: path questions are asked
        thousands of times per ranking."""
        if self._switch_adj is None:
            switches = {n for n, d in self.nodes.items() if d["node_type"] == NodeType.SWITCH}
            self._switch_adj = {s: {p for p in self.adj[s] if p in switches} for s in switches}
        return self._switch_adj

    def distances_from(self, start: frozenset[str]) -> dict[str, int]:
        """Hops from the nearest of the `start` switches to every switch reachable from them."""
        if start not in self.dist_cache:
            self.dist_cache[start] = _distances(self.switch_adjacency(), start)
        return self.dist_cache[start]

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


def build_graph(fabric: Fabric) -> FabricGraph:
    """One node per GUID (attributes: name, node_type, description), one edge per link."""
    g = FabricGraph()
    nodes, adj, links = g.nodes, g.adj, g.links
    for node in fabric.nodes.values():
        nodes[node.guid] = {"name": node.name, "node_type": node.node_type,
                            "description": node.description}
        adj[node.guid] = {}
    # add_edge's work inlined: 12,288 calls of it were 15 ms of every `suspects`
    for link in fabric.links:
        a, b = link.a_guid, link.b_guid
        for guid in (a, b):
            if guid not in nodes:
                # A link end whose node record is missing (a partial capture): keep the link.
                nodes[guid] = {"name": guid, "node_type": NodeType.SWITCH, "description": ""}
                adj[guid] = {}
        key = (a, link.a_port, b, link.b_port)
        adj[a].setdefault(b, {})[key] = link
        if a != b:
            adj[b].setdefault(a, {})[key] = link
        links[key] = (a, b, link)
    return g


def host_guids(g: FabricGraph, host: str) -> list[str]:
    """The HCA node GUIDs of a host (a host may have several HCAs, one per rail)."""
    return sorted(
        n for n, d in g.nodes.items()
        if d["node_type"] == NodeType.HCA and d["name"] == host
    )


def node_links(g: FabricGraph, guid: str) -> list[LinkKey]:
    """Every link of one node (a switch's cables, or a host HCA's cable)."""
    return sorted(k for _, _, k in g.edges(guid, keys=True))


def host_links(g: FabricGraph, host: str) -> list[LinkKey]:
    return sorted({k for guid in host_guids(g, host) for k in node_links(g, guid)})


def is_leaf(g: FabricGraph, guid: str) -> bool:
    """A leaf (top-of-rack) switch is a switch with at least one HCA cabled to it."""
    if g.nodes[guid]["node_type"] != NodeType.SWITCH:
        return False
    return any(g.nodes[n]["node_type"] == NodeType.HCA for n in g.neighbors(guid))


def leaves(g: FabricGraph) -> list[str]:
    return sorted(n for n in g if is_leaf(g, n))


def uplinks(g: FabricGraph, leaf: str) -> list[LinkKey]:
    """The links from a leaf switch to other switches."""
    return sorted(
        k for _, peer, k in g.edges(leaf, keys=True)
        if g.nodes[peer]["node_type"] == NodeType.SWITCH
    )


def leaf_of(g: FabricGraph, hca: str) -> list[str]:
    return sorted(n for n in g.neighbors(hca) if g.nodes[n]["node_type"] == NodeType.SWITCH)


def _distances(adj: dict[str, set[str]], start: frozenset[str]) -> dict[str, int]:
    dist = dict.fromkeys(start, 0)
    frontier = list(start)
    while frontier:
        nxt = []
        for u in frontier:
            for v in adj.get(u, ()):
                if v not in dist:
                    dist[v] = dist[u] + 1
                    nxt.append(v)
        frontier = nxt
    return dist


def _switch_paths(g: FabricGraph, a: frozenset[str], b: frozenset[str]
                  ) -> SwitchPaths | None:
    """Between two sets of switches: the shortest hop count, the distances from each set, and
    the switch-to-switch links on the shortest paths. Kept per graph: the hosts of a job hang
    off a few leaves, so a month's ranking asks the same few leaf pairs thousands of times (a
    breadth-first search per host pair was 30 % of `suspects --since 30d`, issue #13)."""
    cache = g.path_cache
    if (a, b) in cache:
        return cache[(a, b)]
    adj = g.switch_adjacency()
    da, db = g.distances_from(a), g.distances_from(b)
    best = min((da[n] + db[n] for n in da if n in db), default=None)
    found: set[LinkKey] = set()
    if best is not None:
        for u, du in da.items():
            if du >= best:
                continue
            for v in adj[u]:
                if db.get(v, -1) == best - 1 - du:
                    found.update(g[u][v])
    result = None if best is None else (best, da, db, frozenset(found))
    cache[(a, b)] = result
    return result


def links_between(
    g: FabricGraph, sources: Iterable[str], targets: Iterable[str]
) -> list[LinkKey]:
    """Every link on any shortest path between any of `sources` and any of `targets` (node
    GUIDs): in a fat tree, the cables that traffic between them can take under any routing.
    HCAs never forward traffic, so paths run through switches only."""
    adj = g.switch_adjacency()
    found: set[LinkKey] = set()
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
            best, da, db, between = paths
            found.update(k for s in a if da[s] + db.get(s, best + 1) == best
                         for k in g[src][s])
            found.update(k for s in b if db[s] + da.get(s, best + 1) == best
                         for k in g[dst][s])
            found.update(between)
    return sorted(found)


def links_between_hosts(g: FabricGraph, host_a: str, host_b: str) -> list[LinkKey]:
    """The links traffic between two hosts can cross (their HCA cables and the switch paths)."""
    return links_between(g, host_guids(g, host_a), host_guids(g, host_b))
