"""The fabric as a networkx graph, and the path questions the correlation asks of it.

Nodes are node GUIDs; every physical link is one edge of a MultiGraph (parallel cables between
the same two switches are separate edges) keyed by its canonical `LinkKey`.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from auditor.models import Fabric, Link, NodeType

LinkKey = tuple[str, int, str, int]


def link_key(link: Link) -> LinkKey:
    return (link.a_guid, link.a_port, link.b_guid, link.b_port)


def build_graph(fabric: Fabric) -> nx.MultiGraph:
    """One node per GUID (attributes: name, node_type, description), one edge per link."""
    g = nx.MultiGraph()
    for node in fabric.nodes.values():
        g.add_node(node.guid, name=node.name, node_type=node.node_type,
                   description=node.description)
    for link in fabric.links:
        for guid in (link.a_guid, link.b_guid):
            if guid not in g:
                # A link end whose node record is missing (a partial capture): keep the link.
                g.add_node(guid, name=guid, node_type=NodeType.SWITCH, description="")
        g.add_edge(link.a_guid, link.b_guid, key=link_key(link), link=link)
    return g


def host_guids(g: nx.MultiGraph, host: str) -> list[str]:
    """The HCA node GUIDs of a host (a host may have several HCAs, one per rail)."""
    return sorted(
        n for n, d in g.nodes(data=True)
        if d["node_type"] == NodeType.HCA and d["name"] == host
    )


def node_links(g: nx.MultiGraph, guid: str) -> list[LinkKey]:
    """Every link of one node (a switch's cables, or a host HCA's cable)."""
    return sorted(k for _, _, k in g.edges(guid, keys=True))


def host_links(g: nx.MultiGraph, host: str) -> list[LinkKey]:
    return sorted({k for guid in host_guids(g, host) for k in node_links(g, guid)})


def is_leaf(g: nx.MultiGraph, guid: str) -> bool:
    """A leaf (top-of-rack) switch is a switch with at least one HCA cabled to it."""
    if g.nodes[guid]["node_type"] != NodeType.SWITCH:
        return False
    return any(g.nodes[n]["node_type"] == NodeType.HCA for n in g.neighbors(guid))


def leaves(g: nx.MultiGraph) -> list[str]:
    return sorted(n for n in g if is_leaf(g, n))


def uplinks(g: nx.MultiGraph, leaf: str) -> list[LinkKey]:
    """The links from a leaf switch to other switches."""
    return sorted(
        k for _, peer, k in g.edges(leaf, keys=True)
        if g.nodes[peer]["node_type"] == NodeType.SWITCH
    )


def leaf_of(g: nx.MultiGraph, hca: str) -> list[str]:
    return sorted(n for n in g.neighbors(hca) if g.nodes[n]["node_type"] == NodeType.SWITCH)


def _switch_adjacency(g: nx.MultiGraph) -> dict[str, set[str]]:
    """Switch-to-switch neighbours, built once per graph: path questions are asked thousands
    of times per ranking and networkx subgraph views are slow for that."""
    cached = g.graph.get("_switch_adjacency")
    if cached is None:
        switches = {n for n, d in g.nodes(data=True) if d["node_type"] == NodeType.SWITCH}
        cached = {s: {p for p in g.neighbors(s) if p in switches} for s in switches}
        g.graph["_switch_adjacency"] = cached
    return cached  # type: ignore[no-any-return]


def _distances(adj: dict[str, set[str]], start: set[str]) -> dict[str, int]:
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


def links_between(
    g: nx.MultiGraph, sources: Iterable[str], targets: Iterable[str]
) -> list[LinkKey]:
    """Every link on any shortest path between any of `sources` and any of `targets` (node
    GUIDs): in a fat tree, the cables that traffic between them can take under any routing.
    HCAs never forward traffic, so paths run through switches only."""
    adj = _switch_adjacency(g)
    found: set[LinkKey] = set()
    targets = list(targets)
    for src in sources:
        for dst in targets:
            if src == dst or src not in g or dst not in g:
                continue
            a = {n for n in g.neighbors(src) if n in adj}
            b = {n for n in g.neighbors(dst) if n in adj}
            if not a or not b:
                continue
            da, db = _distances(adj, a), _distances(adj, b)
            best = min((da[n] + db[n] for n in da if n in db), default=None)
            if best is None:
                continue
            found.update(k for s in a if da[s] + db.get(s, best + 1) == best
                         for k in g[src][s])
            found.update(k for s in b if db[s] + da.get(s, best + 1) == best
                         for k in g[dst][s])
            for u in da:
                for v in adj[u]:
                    if v in db and da[u] + 1 + db[v] == best:
                        found.update(g[u][v])
    return sorted(found)


def links_between_hosts(g: nx.MultiGraph, host_a: str, host_b: str) -> list[LinkKey]:
    """The links traffic between two hosts can cross (their HCA cables and the switch paths)."""
    return links_between(g, host_guids(g, host_a), host_guids(g, host_b))
