"""The newest snapshot read from fabric_cache's indexes (format 5, issue #25) answers every
question of Fabric, PortPeers and the graph built on it as the same snapshot read from the
tables does: the cached answers make only the objects asked for, so each is asked one at a
time first (nothing made yet), then compared whole."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from auditor import graph
from auditor.analyse import hosts
from auditor.ingest.captures import ingest_files
from auditor.models import Fabric, Link, NodeType, PortPeers
from auditor.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAT_TREE = FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"
LINKINFO = FIXTURES / "iblinkinfo" / "ibsim_fattree_small.txt"
CAPTURES = sorted((FIXTURES / "ibnetdiscover").glob("*.txt")) + sorted(
    (FIXTURES / "iblinkinfo").glob("*.txt"))
T0, T1 = datetime(2026, 11, 1, 6, tzinfo=UTC), datetime(2026, 11, 2, 6, tzinfo=UTC)
END = datetime(2026, 12, 1, tzinfo=UTC)


def _read(db: Path) -> tuple[Fabric, PortPeers]:
    with Store(db, read_only=True) as store:
        return store.fabric(T1), store.port_peers(END)


def _both(db: Path, *captures: Path) -> tuple[tuple[Fabric, PortPeers], tuple[Fabric, PortPeers]]:
    """(cached fabric, cached peers) and the same from the tables; a cached fabric's links
    made all at once after one of them was are the tables' links, that one the same object."""
    with Store(db) as store:
        ingest_files(store, [FAT_TREE, LINKINFO], at=T0)
        ingest_files(store, list(captures), at=T1)
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is not None
        # all the links at once, one of them made before: the same objects
        some = store.fabric(T1)
        first = some.links[0] if some.links else None
        whole = list(some.links)
        assert first is None or whole[0] is first
    cached = _read(db)
    con = duckdb.connect(str(db))
    con.execute("delete from fabric_cache")
    con.close()
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is None
    tables = _read(db)
    assert whole == tables[0].links
    return cached, tables


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_cached_snapshot_answers_as_the_tables(db: Path, capture: Path) -> None:
    (fabric, peers), (plain, plain_peers) = _both(db, capture)
    assert type(fabric) is not Fabric and type(plain) is Fabric
    ends = {g for lk in plain.links for g in (lk.a_guid, lk.b_guid)}
    everyone = sorted(ends | set(plain.nodes) | {k[0] for k in plain_peers} | {"0xnobody"})
    # one at a time, before anything is made whole
    for i, lk in enumerate(plain.links):
        assert fabric.links[i] == lk and fabric.links[i] is fabric.links[i]
    for key, port in plain.ports.items():
        assert fabric.ports[key] == port and key in fabric.ports
    assert ("0xnobody", 1) not in fabric.ports and fabric.ports.get(("0xnobody", 1)) is None
    for key, peer in plain_peers.items():
        assert peers[key] == peer and peers.get(key) == peer and key in peers
    assert peers.get(("0xnobody", 1)) is None and ("0xnobody", 1) not in peers
    rows, plain_rows = fabric.link_rows(), plain.link_rows()
    for guid in everyone:
        assert list(rows.get(guid, ())) == list(plain_rows.get(guid, ()))
        assert (guid in rows) == (guid in plain_rows)
        assert rows.peers(guid) == plain_rows.peers(guid) == rows.peers_of([guid])[0]
        assert rows.keys_to(guid, ends) == plain_rows.keys_to(guid, ends)
    for guid, port in {*plain.ports, *((lk.a_guid, lk.a_port) for lk in plain.links),
                       *((lk.b_guid, lk.b_port) for lk in plain.links), ("0xnobody", 1)}:
        assert rows.at_port(guid, port) == plain_rows.at_port(guid, port)
    assert sorted(rows.ports_of(everyone)) == sorted(plain_rows.ports_of(everyone))
    assert sorted(peers.of_nodes(everyone)) == sorted(plain_peers.of_nodes(everyone))
    # every link end among the peers: what the cached pair knows, the plain one does not say
    assert peers.covers(fabric) and not plain_peers.covers(plain)
    assert all((lk.a_guid, lk.a_port) in plain_peers and (lk.b_guid, lk.b_port) in plain_peers
               for lk in plain.links)
    assert hosts.rails(fabric, peers, {}) == hosts.rails(plain, plain_peers, {})
    assert fabric.stray_ends() == plain.stray_ends()
    assert fabric.rate_groups() == plain.rate_groups()
    assert fabric.hinted_ports() == plain.hinted_ports()
    # whole
    assert fabric == plain and list(fabric.links) == plain.links
    assert dict(fabric.ports.items()) == plain.ports and list(fabric.ports) == list(plain.ports)
    assert dict(peers) == dict(plain_peers) and len(peers) == len(plain_peers)
    assert {g: list(r) for g, r in rows.items()} == {g: list(r) for g, r in plain_rows.items()}


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_graph_of_the_cached_snapshot_is_the_graph_of_the_tables(db: Path,
                                                                      capture: Path) -> None:
    (fabric, _), (plain, _) = _both(db, capture)
    g, ref = graph.build_graph(fabric), graph.build_graph(plain)
    assert g.nodes == ref.nodes and list(g.nodes) == list(ref.nodes)
    every = list(ref.nodes)
    assert g.neighbor_lists(every) == [list(ref.neighbors(n)) for n in every]
    assert g.neighbor_lists(every) == ref.neighbor_lists(every)
    for n in ref.nodes:  # asked before the node's adjacency is made, then after
        assert list(g.neighbors(n)) == list(ref.neighbors(n))
    switches = [n for n, d in ref.nodes.items() if d["node_type"] == NodeType.SWITCH]
    assert {s: g.switch_adjacency()[s] for s in switches} == {
        s: ref.switch_adjacency()[s] for s in switches}
    hcas = [n for n, d in ref.nodes.items() if d["node_type"] == NodeType.HCA]
    for a, b in itertools.combinations(hcas, 2):
        assert graph.links_between(g, [a], [b]) == graph.links_between(ref, [a], [b])
    for key in ref.links:
        assert key in g.links and g.links[key] == ref.links[key]
    assert (("0xnobody", 1, "0xnobody", 2)) not in g.links
    for n in ref.nodes:
        assert list(g[n].items()) == list(ref[n].items())
        assert list(g.neighbors(n)) == list(ref.neighbors(n))
        assert graph.node_links(g, n) == graph.node_links(ref, n)
    assert list(g.links.items()) == list(ref.links.items()) and len(g.links) == len(ref.links)
    # a graph changed after it was built: every node's adjacency made first
    a, b = next(iter(ref.nodes)), list(ref.nodes)[-1]
    for h in (g, ref):
        h.add_edge(a, b, (a, 77, b, 78), Link(a, 77, b, 78))
    assert {n: g[n] for n in ref.nodes} == {n: ref[n] for n in ref.nodes}
    assert dict(g.links) == dict(ref.links)
