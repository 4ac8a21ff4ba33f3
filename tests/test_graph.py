"""auditor.graph's FabricGraph against networkx: the same neighbours, the same edges in the same
order, and the links on shortest paths equal to what networkx's all_shortest_paths finds.

FabricGraph replaced networkx's MultiGraph in the ranking for start-up time (issue #13); this
is what keeps its answers networkx's. The fabrics are fat trees with parallel cables, a missing
node record and a self-loop, drawn by hypothesis.
"""

from __future__ import annotations

import itertools

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import graph
from auditor.models import Fabric, FabricNode, Link, NodeType


def _tree(spines: int, leaves: int, hosts: int, parallel: int, drop: set[int]) -> Fabric:
    """A two-tier fat tree; `parallel` cables from each leaf to each spine; links whose index is
    in `drop` are missing (a fabric with cables down); spine 1's node record is missing."""
    fabric = Fabric(seen_at=None)
    guid = itertools.count(1)
    spine = [f"0x{next(guid):016x}" for _ in range(spines)]
    leaf = [f"0x{next(guid):016x}" for _ in range(leaves)]
    for i, g in enumerate(spine[1:], 2):
        fabric.nodes[g] = FabricNode(g, NodeType.SWITCH, f"spine{i}", f"spine{i}")
    for i, g in enumerate(leaf, 1):
        fabric.nodes[g] = FabricNode(g, NodeType.SWITCH, f"leaf{i}", f"leaf{i}")
    links = []
    for li, lg in enumerate(leaf):
        port = itertools.count(1)
        for sg in spine:
            for _ in range(parallel):
                links.append(Link(lg, next(port), sg, 100 + li))
        for h in range(hosts):
            hg = f"0x{next(guid):016x}"
            fabric.nodes[hg] = FabricNode(hg, NodeType.HCA, f"h{li}-{h}", f"h{li}-{h}")
            links.append(Link(hg, 1, lg, next(port)))
    links.append(Link(leaf[0], 99, leaf[0], 98))  # a loopback plug on a leaf
    fabric.links = [lk for i, lk in enumerate(links) if i not in drop]
    return fabric


def _nx_graph(fabric: Fabric) -> nx.MultiGraph:
    """The fabric as the ranking built it with networkx before issue #13."""
    g = nx.MultiGraph()
    for node in fabric.nodes.values():
        g.add_node(node.guid, name=node.name, node_type=node.node_type,
                   description=node.description)
    for link in fabric.links:
        for guid in (link.a_guid, link.b_guid):
            if guid not in g:
                g.add_node(guid, name=guid, node_type=NodeType.SWITCH, description="")
        g.add_edge(link.a_guid, link.b_guid, key=graph.link_key(link), link=link)
    return g


def _nx_links_between(g: nx.MultiGraph, src: str, dst: str) -> set[graph.LinkKey]:
    """Every link on a shortest path from src to dst through switches (HCAs do not forward)."""
    sw = g.subgraph([n for n, d in g.nodes(data=True) if d["node_type"] == NodeType.SWITCH
                     or n in (src, dst)])
    try:
        paths = list(nx.all_shortest_paths(sw, src, dst))
    except nx.NetworkXNoPath:
        return set()
    found: set[graph.LinkKey] = set()
    for path in paths:
        for u, v in itertools.pairwise(path):
            found.update(g[u][v])
    return found


fabrics = st.builds(
    _tree, spines=st.integers(1, 4), leaves=st.integers(1, 4), hosts=st.integers(1, 3),
    parallel=st.integers(1, 2), drop=st.sets(st.integers(0, 40), max_size=6))


@settings(max_examples=60, deadline=None)
@given(fabrics)
def test_fabric_graph_answers_as_networkx_does(fabric: Fabric) -> None:
    g = graph.build_graph(fabric)
    ref = _nx_graph(fabric)
    exported = g.to_networkx()
    assert list(exported.nodes(data=True)) == list(ref.nodes(data=True))
    assert list(exported.edges(keys=True, data=True)) == list(ref.edges(keys=True, data=True))
    assert set(g) == set(ref.nodes)
    assert {n: g.nodes[n] for n in g} == {n: dict(ref.nodes[n]) for n in ref.nodes}
    for n in g:
        assert list(g.neighbors(n)) == list(ref.neighbors(n))
        assert graph.node_links(g, n) == sorted(k for _, _, k in ref.edges(n, keys=True))
    every = list(g)
    assert list(g.edges(every, keys=True)) == list(ref.edges(every, keys=True))
    assert len(list(g.edges(every))) == len(fabric.links)
    hcas = [n for n in g if g.nodes[n]["node_type"] == NodeType.HCA]
    asked = 0
    for a, b in itertools.combinations(hcas, 2):
        assert set(graph.links_between(g, [a], [b])) == _nx_links_between(ref, a, b)
        asked += 1
    assert asked == len(hcas) * (len(hcas) - 1) // 2


def test_paths_across_leaves_take_every_spine() -> None:
    """Hosts on different leaves of a 3-spine tree with two cables per leaf-spine pair: their
    two HCA cables and all 12 leaf-spine cables of their two leaves, and nothing else."""
    fabric = _tree(spines=3, leaves=3, hosts=1, parallel=2, drop=set())
    g = graph.build_graph(fabric)
    h0, h1 = graph.host_guids(g, "h0-0"), graph.host_guids(g, "h1-0")
    found = graph.links_between(g, h0, h1)
    assert len(found) == 2 + 2 * 3 * 2
    assert not any(k[0] == k[2] for k in found)  # the loopback plug is on no path


@st.composite
def _meshes(draw: st.DrawFn) -> Fabric:
    """Switches cabled at random (chains, rings, parallel cables, self-loops, islands: paths of
    any length, not a fat tree's two hops) with HCAs on one or two of them."""
    fabric = Fabric(seen_at=None)
    switches = [f"0x{i:016x}" for i in range(1, draw(st.integers(1, 9)) + 1)]
    for i, g in enumerate(switches):
        fabric.nodes[g] = FabricNode(g, NodeType.SWITCH, f"sw{i}", f"sw{i}")
    pick = st.sampled_from(switches)
    port = itertools.count(1)
    cables = draw(st.lists(st.tuples(pick, pick), max_size=20))
    links = [Link(a, next(port), b, next(port)) for a, b in cables]
    for h in range(draw(st.integers(2, 5))):
        hg = f"0x{0x100 + h:016x}"
        fabric.nodes[hg] = FabricNode(hg, NodeType.HCA, f"h{h}", f"h{h}")
        for hca_port, sw in enumerate(draw(st.lists(pick, min_size=1, max_size=2)), 1):
            links.append(Link(hg, hca_port, sw, next(port)))
    fabric.links = links
    return fabric


@settings(max_examples=150, deadline=None)
@given(_meshes())
def test_paths_of_any_length_as_networkx_finds_them(fabric: Fabric) -> None:
    """links_between's level-at-a-time search and its layer-by-layer link scan (issue #13)
    against networkx's all_shortest_paths, and the uplinks a graph keeps against its edges,
    before and after a cable is added."""
    g = graph.build_graph(fabric)
    ref = _nx_graph(fabric)
    hcas = [n for n in g if g.nodes[n]["node_type"] == NodeType.HCA]
    for a, b in itertools.permutations(hcas, 2):
        assert set(graph.links_between(g, [a], [b])) == _nx_links_between(ref, a, b)
    assert set(graph.links_between(g, hcas[:2], hcas[2:])) == set().union(
        *(_nx_links_between(ref, a, b) for a in hcas[:2] for b in hcas[2:]))
    switches = [n for n in g if g.nodes[n]["node_type"] == NodeType.SWITCH]
    for _ in range(2):
        for s in switches:
            assert graph.uplinks(g, s) == sorted(
                k for _, peer, k in ref.edges(s, keys=True)
                if ref.nodes[peer]["node_type"] == NodeType.SWITCH)
        extra = Link(switches[0], 900, switches[-1], 901)
        g.add_edge(extra.a_guid, extra.b_guid, graph.link_key(extra), extra)
        ref.add_edge(extra.a_guid, extra.b_guid, key=graph.link_key(extra), link=extra)
        for a, b in itertools.combinations(hcas, 2):
            assert set(graph.links_between(g, [a], [b])) == _nx_links_between(ref, a, b)
