"""Paths from forwarding tables against real `ibtracert` on ibsim fabrics (issue #23, the first
"Done when"): for every ordered pair of HCA ports (and every LID of the destination when
LMC > 0), the path auditor.analyse.paths walks through the real `dump_lfts.sh` tables and the
real `ibnetdiscover -p` cables equals, hop by hop, what `ibtracert <slid> <dlid>` traces.

Two- and three-tier trees, opensm's minhop, updn and ftree engines, LMC 1, and a reroute: a
cable pulled (the tables go stale: the walk stops at a dead end where ibtracert fails too),
then opensm run again (the paths change, and match ibtracert again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from auditor.analyse.paths import Routes, end_ports
from auditor.models import Link
from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.ibtracert import parse_ibtracert
from auditor.simulate.ibsim import FatTree, FatTree3, IbSim, write_net_file
from tests.test_paths import same_path

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("need_ibsim")]

TWO = FatTree(spines=2, leaves=4, hosts_per_leaf=2)
THREE = FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=2, hosts_per_leaf=2)
THREE_RAILS = FatTree3(pods=2, leaves_per_pod=4, spines_per_pod=2, cores=4, hosts_per_leaf=2,
                       rails=2)


@dataclass
class Compared:
    routes: Routes
    pairs: int
    lengths: set[int]
    engine: str


def engine_used(sim: IbSim) -> str:
    log = (sim.opensm_dir / "opensm.log").read_text()
    found = re.findall(r"osm_ucast_mgr_process: (\w+) tables configured", log)
    assert found, "opensm configured no tables"
    return str(found[-1])


def snapshot(sim: IbSim) -> Routes:
    dump = sim.run("dump_lfts")
    disc = sim.run("ibnetdiscover", "-p")
    assert dump.returncode == 0 and disc.returncode == 0, dump.stderr + disc.stderr
    lfts = parse_dump_lfts(dump.stdout)
    topo = parse_ibnetdiscover(disc.stdout)
    return Routes(topo.links, lfts.switches, end_ports(topo, lfts.owners))


def compare_every_pair(sim: IbSim, tmp: Path) -> Compared:
    """Walk and trace every ordered pair of HCA ports to every LID of the destination."""
    routes = snapshot(sim)
    ends = list(routes.ends.values())
    pairs = [(a, b, lid) for a in ends for b in ends if a != b for lid in b.lids]
    listing = tmp / "pairs"
    listing.write_text("".join(f"{a.lid} {lid}\n" for a, _, lid in pairs))
    # one ibtracert process for all pairs: 56 pairs take 0.2-0.4 s, one process each 2-3 s
    result = sim.run("ibtracert", "--ports-file", str(listing), timeout=300)
    assert result.returncode == 0, result.stdout[-500:] + result.stderr[-500:]
    traces = parse_ibtracert(result.stdout)
    assert len(traces) == len(pairs)
    lengths = set()
    traced_links: set[tuple[str, int]] = set()
    for (a, b, lid), trace in zip(pairs, traces, strict=True):
        assert trace.source is not None and trace.source.lid == a.lid
        assert trace.dest is not None and lid in range(trace.dest.lid or 0,
                                                       (trace.dest.last_lid or 0) + 1)
        route = routes.route((a.guid, a.port), lid)
        assert same_path(route, trace), f"{a} -> {lid}:\n{route}\n{trace}"
        assert route.dest == (b.guid, b.port)
        lengths.add(len(route.hops))
        traced_links.update((h.port_guid, h.in_port) for h in trace.hops)
    # a job on all the ports crosses exactly the cables the traces entered
    crossing = routes.crossed([(e.guid, e.port) for e in ends], lids="all")
    assert crossing.failed == [] and crossing.pairs == len(pairs)
    crossed = routes.links_of(crossing.link_ids)
    assert {end for lk in crossed for end in _ends(lk)} >= traced_links
    assert all(any(end in traced_links for end in _ends(lk)) for lk in crossed)
    return Compared(routes, len(pairs), lengths, engine_used(sim))


def _ends(link: Link) -> tuple[tuple[str, int], tuple[str, int]]:
    return (link.a_guid, link.a_port), (link.b_guid, link.b_port)


@pytest.mark.parametrize(("tree", "engine", "lmc", "pairs", "lengths", "used"), [
    (TWO, "minhop", 0, 56, {1, 3}, "minhop"),
    (TWO, "updn", 0, 56, {1, 3}, "updn"),
    (TWO, "ftree", 0, 56, {1, 3}, "ftree"),
    (THREE, "minhop", 0, 56, {1, 3, 5}, "minhop"),
    (THREE, "updn", 0, 56, {1, 3, 5}, "updn"),
    (THREE, "ftree", 0, 56, {1, 3, 5}, "ftree"),
    # LMC 1: every destination has 2 LIDs, each traced (ftree then falls back to minhop)
    (TWO, "minhop", 1, 112, {1, 3}, "minhop"),
    (THREE_RAILS, "updn", 1, 480, {1, 3, 5}, "updn"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_paths_equal_ibtracert(tmp_path: Path, tree: FatTree | FatTree3, engine: str,
                               lmc: int, pairs: int, lengths: set[int], used: str) -> None:
    with IbSim(write_net_file(tree), tmp_path / "sim") as sim:
        sim.opensm_once(routing_engine=engine, lmc=lmc)
        compared = compare_every_pair(sim, tmp_path)
    assert compared.engine == used  # the engine asked for really routed the fabric
    assert (compared.pairs, compared.lengths) == (pairs, lengths)


def test_reroute_after_a_pulled_cable(tmp_path: Path) -> None:
    uplink = TWO.uplink_port(1)  # leaf01 to spine01
    leaf01 = f"0x{TWO.leaf_guid(1):016x}"
    with IbSim(write_net_file(TWO), tmp_path / "sim") as sim:
        sim.opensm_once(routing_engine="minhop")
        before = compare_every_pair(sim, tmp_path).routes
        cable = before.cable((leaf01, uplink))
        assert cable is not None
        ends = [(e.guid, e.port) for e in before.ends.values()]
        pairs = [(a, before.lids(b)[0]) for a in ends for b in ends if a != b]
        crossing = {pair for pair in pairs if cable in before.route(*pair).links}
        assert 0 < len(crossing) < len(pairs)
        sim.unlink("leaf01", uplink)
        stale = snapshot(sim)  # the cable is gone, the tables still route into it
        assert stale.cable((leaf01, uplink)) is None
        # exactly the pairs that crossed the cable now stop at it (from either end)
        dead = {pair for pair in pairs if stale.route(*pair).status == "dead_end"}
        assert dead == crossing
        assert all(stale.route(*pair).ok for pair in set(pairs) - dead)
        src = (f"0x{TWO.host_guid(1):016x}", 1)  # gpu-node-01 port 1, where the tools sit
        assert src not in ends  # -p keys a CA by its port GUID
        src = (f"0x{TWO.host_guid(1) + 1:016x}", 1)
        from_here = sorted(p for p in dead if p[0] == src)
        assert from_here
        for pair in from_here:  # ibtracert fails on them too
            traced = sim.run("ibtracert", str(TWO.host_lid(1)), str(pair[1]))
            assert traced.returncode == 255 and "iberror" in traced.stdout
        sim.opensm_once(routing_engine="minhop")  # the SM reroutes around the pulled cable
        after = compare_every_pair(sim, tmp_path).routes
    moved = 0
    for pair in crossing:
        old, new = before.route(*pair), after.route(*pair)
        assert new.ok and cable not in new.links
        moved += new.hops != old.hops
    assert moved == len(crossing)
