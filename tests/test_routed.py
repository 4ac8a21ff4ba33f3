"""The correlation's use of the forwarding tables (issue #23, analyse/routed.py and blame.py):
which capture applies when, the links a job's hosts cross (both ways, rail by rail), a job's
footprint and an NCCL pair's links from the routes instead of every uplink, the graph kept
when the tables cannot say, and adaptive routing's equal-cost alternatives.

The fabric is a generated 4-spine fat tree with D-mod-K tables (auditor/simulate/lfts.py, what
opensm's ftree/minhop give such a tree: tests/test_paths_ibsim.py holds them equal to real
ibtracert on ibsim)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditor import graph
from auditor.analyse.blame import Footprints, _footprint, pair_paths
from auditor.analyse.evidence import (
    Evidence,
    Hcas,
    HealthyJob,
    HostResolver,
    LinkEvidence,
    link_of,
)
from auditor.analyse.flaps import Flap
from auditor.analyse.paths import PortRef, Routes
from auditor.analyse.rank import Suspect, rank
from auditor.analyse.routed import RouteBook, ar_alternatives, by_rail
from auditor.config import load
from auditor.errors import ConfigError
from auditor.models import Fabric, FabricNode, LinkKey, NodeType
from auditor.simulate.ibsim import FatTree
from auditor.simulate.lfts import dmodk_tables, fabric_links, hca_ends

T0 = datetime(2026, 11, 30, 12, 0)  # noqa: DTZ001 - the store and the ranking keep naive UTC
TREE = FatTree(4, 4, 4)  # 4 spines, 4 leaves, 4 hosts a leaf: 16 hosts, one rail


@pytest.fixture(scope="module")
def routes() -> Routes:
    return Routes(fabric_links(TREE), dmodk_tables(TREE), hca_ends(TREE))


@pytest.fixture(scope="module")
def fabric(routes: Routes) -> Fabric:
    fabric = Fabric(seen_at=T0.replace(tzinfo=UTC))
    for i, end in enumerate(routes.ends.values()):
        fabric.nodes[end.guid] = FabricNode(end.guid, NodeType.HCA, f"node{i:02d} mlx5_0",
                                            f"node{i:02d}", device="mlx5_0")
    for guid, table in routes.tables.items():
        fabric.nodes[guid] = FabricNode(guid, NodeType.SWITCH, table.description,
                                        table.description)
    fabric.links = list(routes.links)
    return fabric


def _key(routes: Routes, i: int) -> LinkKey:
    lk = routes.links[i]
    return link_of([(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)])


def _port(routes: Routes, host: int) -> PortRef:
    return list(routes.ends)[host]


def _cable_and_uplink(routes: Routes) -> tuple[PortRef, LinkKey, LinkKey]:
    """Host 0's port, its cable and the first uplink of its leaf."""
    a = _port(routes, 0)
    leaf = routes.peer[a][0][0]
    uplink = next(_key(routes, routes.peer[(leaf, p)][1]) for p in routes.cabled[leaf]
                  if routes.peer[(leaf, p)][0][0] in routes.tables)
    return a, _key(routes, routes.peer[a][1]), uplink


def _both_ways(routes: Routes, a: PortRef, b: PortRef) -> set[LinkKey]:
    out = set()
    for src, dst in ((a, b), (b, a)):
        for route in routes.routes(src, dst):
            assert route.ok
            out |= {link_of([(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)])
                    for lk in route.links}
    return out


def test_the_capture_in_effect_is_the_latest_at_or_before() -> None:
    shots = [T0 + timedelta(minutes=m) for m in (10, 0, 20)]
    book = RouteBook(shots, lambda at, shared: None)
    assert book.captures == sorted(shots)
    assert book.capture_at(T0 - timedelta(seconds=1)) is None
    assert book.capture_at(T0 + timedelta(minutes=15)) == T0 + timedelta(minutes=10)
    assert book.capture_at(T0 + timedelta(minutes=20)) == T0 + timedelta(minutes=20)
    # a fault between minute 5 and 12: the capture of minute 0 and the reroute of minute 10
    assert book.captures_during(T0 + timedelta(minutes=5), T0 + timedelta(minutes=12)) == [
        T0, T0 + timedelta(minutes=10)]
    assert not RouteBook([], lambda at, shared: None)


def test_crossed_is_every_link_of_both_directions(routes: Routes) -> None:
    book = RouteBook([T0], lambda at, shared: routes)
    a, b = _port(routes, 0), _port(routes, 5)  # under leaves 1 and 2
    found = book.crossed(T0, [a, b])
    assert found is not None and set(found) == _both_ways(routes, a, b)
    # two HCA cables and, each way, one leaf uplink and one spine downlink (D-mod-K: the two
    # ways may take different spines)
    assert 4 <= len(found or ()) <= 6
    assert book.crossed(T0, [b, a]) is found  # one walk per set of ports
    assert book.crossed(T0, [a, ("no-such-guid", 1)]) is None  # the graph decides then


def test_no_capture_in_effect_means_no_answer(routes: Routes) -> None:
    book = RouteBook([T0], lambda at, shared: routes)
    before = T0 - timedelta(hours=1)
    assert book.crossed_during(before, before, [[_port(routes, 0), _port(routes, 5)]]) is None


def test_rails_are_grouped_by_device() -> None:
    ports = [(("a", 1), "mlx5_0"), (("b", 1), "mlx5_1"), (("c", 1), "mlx5_0"), (("d", 1), None)]
    assert by_rail(ports) == [[("d", 1)], [("a", 1), ("c", 1)], [("b", 1)]]


def _footprints(fabric: Fabric, routes: Routes, flapped: list[LinkKey],
                book: RouteBook | None) -> Footprints:
    g = graph.build_graph(fabric)
    flaps = [Flap(list(lk), T0, T0 + timedelta(minutes=5)) for lk in flapped]
    return Footprints(g, flaps, Hcas(fabric), HostResolver(fabric, {}, {}), book)


def test_footprint_takes_the_uplinks_on_the_routes_not_every_uplink(
        fabric: Fabric, routes: Routes) -> None:
    a, b = _port(routes, 0), _port(routes, 5)
    on_path = _both_ways(routes, a, b)
    leaf_a = routes.peer[a][0][0]
    uplinks = {_key(routes, routes.peer[(leaf_a, p)][1]) for p in routes.cabled[leaf_a]
               if routes.peer[(leaf_a, p)][0][0] in routes.tables}
    crossed = {lk for lk in uplinks if lk in on_path}
    spared = uplinks - crossed
    assert crossed and spared  # 4 uplinks, the job's traffic takes one or two of them
    flapped = sorted(uplinks)
    guids = [a[0], b[0]]
    lo, hi = T0 - timedelta(minutes=1), T0 + timedelta(minutes=1)

    without = _footprint(_footprints(fabric, routes, flapped, None), guids, lo, hi)
    assert uplinks <= without  # every uplink of both leaves may have carried it

    book = RouteBook([T0 - timedelta(hours=1)], lambda at, shared: routes)
    with_tables = _footprint(_footprints(fabric, routes, flapped, book), guids, lo, hi)
    assert with_tables == crossed


def test_an_nccl_pair_votes_for_its_routes_both_ways(fabric: Fabric, routes: Routes) -> None:
    a, b = _port(routes, 0), _port(routes, 5)
    host_a, host_b = fabric.nodes[a[0]].name, fabric.nodes[b[0]].name
    error = {"host": host_a, "peer": host_b, "hca": "mlx5_0", "kind": "retry_exceeded",
             "event_at": T0, "is_first": True, "not_before": None, "not_after": None}
    lo, hi = T0 - timedelta(minutes=1), T0 + timedelta(minutes=1)
    book = RouteBook([T0 - timedelta(hours=1)], lambda at, shared: routes)
    fp = _footprints(fabric, routes, [], book)
    paths = pair_paths(fp, [error], lo, hi)  # type: ignore[list-item]
    assert [set(p) for p in paths] == [_both_ways(routes, a, b)]
    # without tables: the graph's shortest paths, through every spine
    graph_paths = pair_paths(_footprints(fabric, routes, [], None), [error], lo, hi)  # type: ignore[list-item]
    assert len(graph_paths) == 1 and set(graph_paths[0]) > set(paths[0])


def test_adaptive_routing_alternatives(fabric: Fabric, routes: Routes) -> None:
    g = graph.build_graph(fabric)
    a, cable, uplink = _cable_and_uplink(routes)
    assert ar_alternatives(cable, g, routes) == 0  # a host cable: no other way
    assert ar_alternatives(uplink, g, routes) == 3  # 4 spines: 3 other up ports
    assert ar_alternatives(uplink, g, None) == 3  # the graph knows a leaf's uplinks too
    widened = RouteBook([T0], lambda at, shared: routes, adaptive=True).crossed(
        T0, [a, _port(routes, 5)])
    assert widened is not None and len(widened) > len(_both_ways(routes, a, _port(routes, 5)))


def _ranked(fabric: Fabric, le: LinkEvidence) -> Suspect:
    ev = Evidence(fabric, T0 - timedelta(days=1), T0 + timedelta(hours=1), {le.link: le}, [],
                  0, 0, 0, 0, {})
    return next(s for s in rank(ev) if s.component != "switch")


def test_a_flap_adaptive_routing_absorbs_weighs_less_unless_it_killed(
        fabric: Fabric, routes: Routes) -> None:
    a = _port(routes, 0)
    leaf = routes.peer[a][0][0]
    uplink = next(_key(routes, routes.peer[(leaf, p)][1]) for p in routes.cabled[leaf]
                  if routes.peer[(leaf, p)][0][0] in routes.tables)
    flaps = [Flap(list(uplink), T0 + timedelta(hours=h), T0 + timedelta(hours=h, minutes=2))
             for h in (-5, -3)]
    plain = _ranked(fabric, LinkEvidence(uplink, flaps=list(flaps)))
    absorbed = _ranked(fabric, LinkEvidence(uplink, flaps=list(flaps), ar_alternatives=3))
    assert absorbed.score < plain.score
    assert any("adaptive routing" in line for line in absorbed.evidence)
    # never below what its flaps weigh absorbed: an unstable link stays listed
    assert absorbed.score > 0
    job = {"job_id": "7", "gpu_hours": 16.0, "state": "FAILED", "died_at": T0 - timedelta(hours=5)}
    killed = LinkEvidence(uplink, flaps=list(flaps), jobs=[job])
    killed_ar = LinkEvidence(uplink, flaps=list(flaps), jobs=[job], ar_alternatives=3)
    assert _ranked(fabric, killed_ar).score == _ranked(fabric, killed).score


def test_an_absorbable_uplink_flap_jobs_lived_through_weighs_less_than_a_host_cables(
        fabric: Fabric, routes: Routes) -> None:
    """The issue: a flap absorbed by AR must not count as much as a flap on a host cable. With
    a sure survivor each, the host cable's flaps weigh an absorbed flap each; the uplink's,
    that AR routes around, weigh less, and still more than nothing."""
    _, cable, uplink = _cable_and_uplink(routes)
    flaps = [Flap(list(uplink), T0 + timedelta(hours=h), T0 + timedelta(hours=h, minutes=10))
             for h in (-9, -6, -3)]
    survived = [HealthyJob("41", i, 1.0, "its Using list names the HCA") for i in range(3)]
    host = _ranked(fabric, LinkEvidence(cable, flaps=[Flap(list(cable), f.down_at, f.up_at)
                                                     for f in flaps], healthy=list(survived)))
    absorbed = _ranked(fabric, LinkEvidence(uplink, flaps=list(flaps), healthy=list(survived),
                                            ar_alternatives=3))
    one_idle_flap = _ranked(fabric, LinkEvidence(cable, flaps=flaps[:1], idle_flaps=flaps[:1]))
    assert 0 < absorbed.score < host.score
    # three flaps jobs lived through weigh less than one host cable's long flap on an idle host,
    # whose harm is unknown (rank.ABSORBED_FLAP)
    assert absorbed.score < host.score < one_idle_flap.score
    # a flap shorter than NCCL waits spares the traffic with or without AR: nothing off
    short = [Flap(list(uplink), f.down_at, f.down_at + timedelta(seconds=4)) for f in flaps]
    assert (_ranked(fabric, LinkEvidence(uplink, flaps=list(short), ar_alternatives=3)).score
            == _ranked(fabric, LinkEvidence(uplink, flaps=list(short))).score)


def test_fabric_adaptive_routing_setting(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    assert load(None, None).ranking.adaptive_routing is False
    cfg.write_text("[fabric]\nadaptive_routing = true\n[ranking]\nbefore_minutes = 20\n")
    settings = load(cfg, None)
    assert settings.ranking.adaptive_routing is True
    assert settings.ranking.before_minutes == 20
    cfg.write_text('[fabric]\nadaptive_routing = "yes"\n')
    with pytest.raises(ConfigError, match=r"fabric\.adaptive_routing"):
        load(cfg, None)


def test_the_ring_is_the_jobs_hosts_in_order_and_round(fabric: Fabric, routes: Routes) -> None:
    book = RouteBook([T0 - timedelta(hours=1)], lambda at, shared: routes)
    fp = _footprints(fabric, routes, [], book)
    hosts = [0, 5, 10, 15]  # one host under each of the four leaves
    ports = [_port(routes, h) for h in hosts]
    ring = fp.ring_routed([[p[0]] for p in ports], T0)
    expected = set().union(*(_both_ways(routes, ports[i], ports[(i + 1) % 4]) for i in range(4)))
    assert ring == expected
    every = fp.routed([p[0] for p in ports], T0, T0)
    assert every is not None and ring < every  # the ring uses 8 of the 12 ordered pairs
    # two hosts: the one pair
    assert fp.ring_routed([[ports[0][0]], [ports[1][0]]], T0) == _both_ways(
        routes, ports[0], ports[1])


def test_with_adaptive_routing_an_absorbable_uplink_flap_is_the_last_killer_candidate(
        fabric: Fabric, routes: Routes) -> None:
    """A job's fault window holds a leaf uplink's long flap and, ten minutes later, its host
    cable's: earliest first, the uplink took the job. With adaptive routing on, the uplink's
    flap is one AR carries the traffic around (3 other up ports), so the cable comes first;
    the uplink stays a candidate when it is the only one."""
    from auditor.analyse.blame import killers
    from auditor.config import RankingSettings
    from auditor.nccl import DeathTime

    g = graph.build_graph(fabric)
    _, cable, uplink = _cable_and_uplink(routes)
    first = Flap(list(uplink), T0, T0 + timedelta(minutes=5))
    later = Flap(list(cable), T0 + timedelta(minutes=10), T0 + timedelta(minutes=11))
    death = DeathTime(8.6, 8.6, "test")
    fault = (T0, T0 + timedelta(minutes=10, seconds=9))
    start = T0 - timedelta(hours=1)
    cfg = RankingSettings()
    both = [(uplink, first), (cable, later)]
    assert [k[1] for k in killers(both, set(), fault, death, start, cfg)] == [uplink, cable]

    def absorbed(link: LinkKey) -> bool:
        return ar_alternatives(link, g, None) > 0

    assert [k[1] for k in killers(both, set(), fault, death, start, cfg, absorbed)] == [
        cable, uplink]
    assert [k[1] for k in killers(both[:1], set(), fault, death, start, cfg, absorbed)] == [
        uplink]


def test_a_fault_dated_to_the_second_goes_to_the_nearest_flap_not_the_earliest(
        fabric: Fabric, routes: Routes) -> None:
    """Two flaps on a job's path within the clocks' skew (1 min) of a fault its stamped NCCL
    error dates exactly: the one that began 36 s before was crossed that long without killing
    the job, the one 1 s before killed it. An undated fault keeps the earliest first (a storm's
    first flap)."""
    from auditor.analyse.blame import killers
    from auditor.config import RankingSettings
    from auditor.nccl import DeathTime

    a, b = _port(routes, 0), _port(routes, 5)
    first_cable = _key(routes, routes.peer[a][1])
    second_cable = _key(routes, routes.peer[b][1])
    began = T0 + timedelta(minutes=30)
    early = Flap(list(first_cable), began - timedelta(seconds=36), began + timedelta(minutes=9))
    near = Flap(list(second_cable), began - timedelta(seconds=1), began + timedelta(minutes=5))
    both = [(first_cable, early), (second_cable, near)]
    death = DeathTime(8.6, 8.6, "test")
    start, cfg = T0, RankingSettings()
    exact = [k[1] for k in killers(both, set(), (began, began), death, start, cfg)]
    assert exact == [second_cable, first_cable]
    window = (began - timedelta(minutes=5), began)
    assert [k[1] for k in killers(both, set(), window, death, start, cfg)] == [
        first_cable, second_cable]
