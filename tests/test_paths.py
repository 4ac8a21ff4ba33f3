"""Paths from forwarding tables (auditor.analyse.paths, issue #23), without a simulator:

- a whole real run (tests/fixtures/paths/ibsim_3tier_ftree: `ibnetdiscover -p`, `dump_lfts.sh`
  and `ibtracert` of every HCA pair on a three-tier ibsim tree) walked and compared hop by hop;
- D-mod-K tables of two- and three-tier trees (auditor.simulate.lfts): every pair routed, and a
  job's footprint (`crossed`) equal to the union of its pairs' routes;
- hand-made broken tables: unreachable, dead end, loop, misrouted, no source cable;
- adaptive-routing widening, LMC, and the `dump_lfts.sh` writer read back by the parser.
The same comparison against live ibtracert runs on ibsim is in tests/test_paths_ibsim.py.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path

import pytest

from auditor.analyse.paths import EndPort, Hop, Route, Routes, end_ports
from auditor.models import LidOwner, Link, NodeType, Port, SwitchLft, Topology, Trace
from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.ibtracert import parse_ibtracert
from auditor.simulate.ibsim import FatTree, FatTree3
from auditor.simulate.lfts import (
    dmodk_tables,
    fabric_links,
    fabric_owners,
    hca_ends,
    write_dump_lfts,
)

RUN = Path(__file__).parent / "fixtures" / "paths" / "ibsim_3tier_ftree"


def trace_hops(trace: Trace) -> tuple[list[tuple[str, int, int]], tuple[str, int]]:
    """An ibtracert trace as (switch, in port, out port) per switch and the port reached."""
    hops = trace.hops
    switches = [(hops[i].port_guid, hops[i].in_port, hops[i + 1].out_port)
                for i in range(len(hops) - 1)]
    return switches, (hops[-1].port_guid, hops[-1].in_port)


def same_path(route: Route, trace: Trace) -> bool:
    switches, dest = trace_hops(trace)
    mine = [(h.switch, h.in_port, h.out_port) for h in route.hops]
    return route.ok and mine == switches and route.dest == dest and trace.dest is not None


def test_real_run_matches_ibtracert_hop_by_hop() -> None:
    topo = parse_ibnetdiscover((RUN / "ibnetdiscover-p.txt").read_text())
    lfts = parse_dump_lfts((RUN / "dump_lfts.txt").read_text())
    traces = parse_ibtracert((RUN / "ibtracert.txt").read_text())
    ends = end_ports(topo, lfts.owners)
    routes = Routes(topo.links, lfts.switches, ends)
    by_lid = {e.lid: (e.guid, e.port) for e in ends}
    assert len(ends) == 8 and len(traces) == 8 * 7
    lengths = set()
    for trace in traces:
        assert trace.source is not None and trace.source.lid is not None
        assert trace.dest is not None and trace.dest.lid is not None
        route = routes.route(by_lid[trace.source.lid], trace.dest.lid)
        assert same_path(route, trace), (route, trace)
        # the cables: the source's, then one per switch left
        assert len(route.links) == len(route.hops) + 1
        lengths.add(len(route.hops))
    assert lengths == {1, 3, 5}  # same leaf, same pod, across the cores


# ---------------------------------------------------------------- D-mod-K trees

TREES = [
    FatTree(spines=4, leaves=8, hosts_per_leaf=4),
    FatTree(spines=2, leaves=8, hosts_per_leaf=3, rails=4),
    FatTree3(pods=3, leaves_per_pod=4, spines_per_pod=2, cores=4, hosts_per_leaf=3),
    FatTree3(pods=2, leaves_per_pod=4, spines_per_pod=4, cores=8, hosts_per_leaf=2, rails=2),
]


def routes_of(tree: FatTree | FatTree3) -> Routes:
    return Routes(fabric_links(tree), dmodk_tables(tree), hca_ends(tree))


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_dmodk_routes_every_pair(tree: FatTree | FatTree3) -> None:
    routes = routes_of(tree)
    ends = hca_ends(tree)
    for a, b in itertools.permutations(ends, 2):
        route = routes.route((a.guid, a.port), b.lid)
        assert route.ok, route.reason
        assert route.dest == (b.guid, b.port)
        assert len(route.hops) in ((1, 3) if isinstance(tree, FatTree) else (1, 3, 5))
        # consecutive cables meet at the hop's switch, on its in and out ports
        for hop, came, went in zip(route.hops, route.links, route.links[1:], strict=False):
            assert (hop.switch, hop.in_port) in ((came.a_guid, came.a_port),
                                                 (came.b_guid, came.b_port))
            assert (hop.switch, hop.out_port) in ((went.a_guid, went.a_port),
                                                  (went.b_guid, went.b_port))
    # switches reach each other too (min-hop routes between switches)
    for table in routes.tables.values():
        some_hca = (ends[0].guid, ends[0].port)
        assert table.lid is not None
        to_switch = routes.route(some_hca, table.lid)
        assert to_switch.ok and to_switch.dest == (table.guid, 0)
        assert to_switch.hops[-1].out_port == 0


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_crossed_is_the_union_of_the_pairs_routes(tree: FatTree | FatTree3) -> None:
    routes = routes_of(tree)
    ends = [(e.guid, e.port) for e in hca_ends(tree)]
    rng = random.Random(23)  # noqa: S311 - a seeded sample, not a secret
    for size in (1, 2, 3, 7, len(ends)):
        job = rng.sample(ends, min(size, len(ends)))
        union: set[Link] = set()
        for a, b in itertools.permutations(job, 2):
            union.update(routes.route(a, routes.lids(b)[0]).links)
        crossing = routes.crossed(job)
        assert crossing.failed == []
        assert crossing.pairs == len(job) * (len(job) - 1)
        assert crossing.walks <= crossing.pairs
        # a lone port crosses only its own cable (it talks to no one: none of its pairs)
        crossed = set(routes.links_of(crossing.link_ids))
        assert crossed == (union if len(job) > 1 else {routes.cable(job[0])})


def test_writer_round_trip() -> None:
    tree = FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=2, hosts_per_leaf=2)
    tables, owners = dmodk_tables(tree), fabric_owners(tree)
    parsed = parse_dump_lfts(write_dump_lfts(tables, owners))
    assert [(t.guid, t.lid, t.description, t.ports) for t in parsed.switches] == [
        (t.guid, t.lid, t.description, t.ports) for t in tables]
    assert parsed.owners == owners


# ---------------------------------------------------------------- broken tables

# two leaves (L1, L2) under one spine (S); hosts a (on L1 port 1, LID 10), b (L2 port 1, LID
# 11); L1 LID 2, L2 LID 3, S LID 1. Cables: a-L1:1, b-L2:1, L1:2-S:1, L2:2-S:2.
A, B, L1, L2, S = "0xa", "0xb", "0x1", "0x2", "0x5"
LINKS = [Link(A, 1, L1, 1), Link(B, 1, L2, 1), Link(L1, 2, S, 1), Link(L2, 2, S, 2)]
ENDS = [EndPort(A, 1, 10), EndPort(B, 1, 11)]


def tables(**changes: dict[int, int | None]) -> list[SwitchLft]:
    base = {
        L1: {1: 2, 2: 0, 3: 2, 10: 1, 11: 2},
        L2: {1: 2, 2: 2, 3: 0, 10: 2, 11: 1},
        S: {1: 0, 2: 1, 3: 2, 10: 1, 11: 2},
    }
    lids = {L1: 2, L2: 3, S: 1}
    names = {"l1": L1, "l2": L2, "s": S}
    for key, change in changes.items():
        for dlid, port in change.items():
            if port is None:
                base[names[key]].pop(dlid, None)
            else:
                base[names[key]][dlid] = port
    return [SwitchLft(g, lids[g], f"sw {g}", 0, 11, ports) for g, ports in base.items()]


def test_healthy_hand_made_fabric() -> None:
    routes = Routes(LINKS, tables(), ENDS)
    route = routes.route((A, 1), 11)
    assert route.ok and route.hops == (Hop(L1, 1, 2), Hop(S, 1, 2), Hop(L2, 2, 1))
    assert route.links == (LINKS[0], LINKS[2], LINKS[3], LINKS[1])
    assert routes.route((A, 1), 10) == Route((A, 1), 10, "ok", (), (), (A, 1))
    to_spine = routes.route((B, 1), 1)
    assert to_spine.ok and to_spine.dest == (S, 0) and to_spine.hops[-1] == Hop(S, 2, 0)


@pytest.mark.parametrize(("change", "links", "status", "reason"), [
    ({"s": {11: None}}, LINKS, "unreachable", "has no route for DLID 11"),
    ({"s": {11: 7}}, LINKS, "dead_end", "out of port 7, which has no cable"),
    ({}, LINKS[:3], "dead_end", "out of port 2, which has no cable"),
    ({"s": {11: 1}}, LINKS, "loop", "comes back to switch 0x1"),
    ({"l2": {11: 2}, "s": {11: 2}}, LINKS, "loop", "comes back to switch 0x5"),
    ({"l2": {11: 0}}, LINKS, "misrouted", "keeps DLID 11 for itself (port 0), its LID is 3"),
    ({"s": {11: 1}, "l1": {11: 1}}, LINKS, "misrouted", "reached 0xa port 1"),
    ({}, LINKS[1:], "no_source", "0xa port 1 has no cable"),
])
def test_broken_tables(change: dict[str, dict[int, int | None]], links: list[Link],
                       status: str, reason: str) -> None:
    routes = Routes(links, tables(**change), ENDS)
    route = routes.route((A, 1), 11)
    assert route.status == status and not route.ok
    assert reason in route.reason
    assert route.dest is None
    crossing = routes.crossed([(A, 1), (B, 1)])
    if status != "no_source":
        assert (status, 11) in {(st, d) for _, d, st in crossing.failed}
        # packets go as far as the walk went
        assert set(route.links) <= set(routes.links_of(crossing.link_ids))


def test_dlid_outside_the_dumped_range_says_so() -> None:
    narrow = [replace(t, last_lid=10) if t.guid == S else t for t in tables(s={11: None})]
    route = Routes(LINKS, narrow, ENDS).route((A, 1), 11)
    assert route.status == "unreachable" and "outside the range its table was dumped" in (
        route.reason)


def test_lmc_routes_every_lid_or_the_base_one() -> None:
    ends = [EndPort(A, 1, 10), EndPort(B, 1, 12, lmc=1)]
    lfts = tables(l1={12: 2, 13: 2}, s={12: 2, 13: 2}, l2={12: 1, 13: 1})
    routes = Routes(LINKS, lfts, ends)
    assert list(routes.lids((B, 1))) == [12, 13]
    base = routes.routes((A, 1), (B, 1))
    every = routes.routes((A, 1), (B, 1), lids="all")
    assert [r.dlid for r in base] == [12] and [r.dlid for r in every] == [12, 13]
    assert all(r.ok and r.dest == (B, 1) for r in every)
    assert routes.crossed([(A, 1), (B, 1)], lids="all").pairs == 3  # a->12, a->13, b->10


def test_end_ports_take_lmc_from_the_dump() -> None:
    topo = Topology(
        nodes=[],
        ports=[Port("0xc1", 1, "0xc1", 8), Port("0xc2", 1, "0xc2", 10), Port("0x5", 1, None, 1)],
    )
    from auditor.models import Node

    topo.nodes = [Node("0xc1", NodeType.HCA, "h1"), Node("0xc2", NodeType.HCA, "h2"),
                  Node("0x5", NodeType.SWITCH, "sw")]
    owner = LidOwner("0xc1", NodeType.HCA, "h1", 8, 2)
    assert end_ports(topo, {8: owner, 9: owner}) == [EndPort("0xc1", 1, 8, 1),
                                                     EndPort("0xc2", 1, 10, 0)]


# ---------------------------------------------------------------- adaptive routing


def test_widen_two_tier_up_hop_takes_every_spine() -> None:
    tree = FatTree(spines=4, leaves=4, hosts_per_leaf=2)
    routes = routes_of(tree)
    ends = hca_ends(tree)
    a, far, near = ends[0], ends[-1], ends[1]  # far: another leaf; near: a's leaf
    route = routes.route((a.guid, a.port), far.lid)
    wide = routes.widen(route)
    assert [len(s) for s in wide.per_link] == [1, 4, 1, 1]  # host, up (4 spines), down, host
    assert route.links[1] in wide.per_link[1]
    # every AR choice: own cable, 4 uplinks, each spine's downlink to far's leaf, far's cable
    assert len(wide.links) == 1 + 4 + 4 + 1
    local = routes.widen(routes.route((a.guid, a.port), near.lid))
    assert local.links == frozenset(local.route.links) and len(local.links) == 2


def test_widen_skips_a_spine_that_cannot_route_the_dlid() -> None:
    tree = FatTree(spines=4, leaves=4, hosts_per_leaf=2)
    lfts = dmodk_tables(tree)
    ends = hca_ends(tree)
    a, far = ends[0], ends[-1]
    spine2 = f"0x{tree.spine_guid(2):016x}"
    routes = Routes(fabric_links(tree), lfts, ends)
    taken = routes.route((a.guid, a.port), far.lid).hops[1].switch
    assert taken != spine2 or tree.spines == 1  # D-mod-K put it elsewhere
    for t in lfts:
        if t.guid == spine2:
            del t.ports[far.lid]
    wide = Routes(fabric_links(tree), lfts, ends).widen(routes.route((a.guid, a.port),
                                                                     far.lid))
    assert len(wide.per_link[1]) == 3 and len(wide.links) == 1 + 3 + 3 + 1


def test_widen_three_tier_goes_through_every_core_of_the_choices() -> None:
    tree = FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=4, hosts_per_leaf=2)
    routes = routes_of(tree)
    ends = hca_ends(tree)
    a, other_pod = ends[0], ends[-1]
    route = routes.route((a.guid, a.port), other_pod.lid)
    assert len(route.hops) == 5
    wide = routes.widen(route)
    # up at the leaf (2 spines), up at the spine (2 cores of its plane); down hops fixed
    assert [len(s) for s in wide.per_link] == [1, 2, 2, 1, 1, 1]
    cores = {f"0x{tree.core_guid(c):016x}" for c in range(1, 5)}
    reached = {e for lk in wide.links for e in (lk.a_guid, lk.b_guid)}
    assert cores <= reached  # both planes, both cores each
    assert len(wide.links) == 1 + 2 + 4 + 4 + 2 + 1
    assert routes.tier[f"0x{tree.core_guid(1):016x}"] == 3


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_adaptive_crossing_is_the_union_of_the_widened_routes(tree: FatTree | FatTree3) -> None:
    routes = routes_of(tree)
    ends = [(e.guid, e.port) for e in hca_ends(tree)]
    rng = random.Random(20)  # noqa: S311 - a seeded sample, not a secret
    for size in (2, 5, len(ends)):
        job = rng.sample(ends, size)
        union: set[Link] = set()
        for a, b in itertools.permutations(job, 2):
            union |= routes.widen(routes.route(a, routes.lids(b)[0])).links
        wide = routes.crossed(job, adaptive=True)
        narrow = routes.crossed(job)
        assert wide.failed == [] and set(routes.links_of(wide.link_ids)) == union
        assert set(narrow.link_ids) <= set(wide.link_ids)
        if size == len(ends):  # the whole fabric talking: AR may use every switch link
            assert len(wide.link_ids) == len(routes.links)
    # two hosts under different leaves: one path each way, but AR may take any spine (with
    # two spines, the two ways already take one each)
    pair = [ends[0], ends[-1]]
    wider = len(routes.crossed(pair, adaptive=True).link_ids) - len(routes.crossed(pair).link_ids)
    assert wider == 0 if isinstance(tree, FatTree) and tree.spines == 2 else wider > 0
