"""Forwarding tables in generated scenarios (`lfts`, issue #23 item 6) and the silent uplink:
off, nothing changes; on, the captures read with the project's `dump_lfts` parser, the paths
`auditor.analyse.paths.Routes` traces in them are the ones the job model used, a reroute
capture avoids the dead link and the next one is back to normal, and truth.json lists it all.
Small fabrics: the module runs in a few seconds."""

from __future__ import annotations

import json
import random
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.analyse.paths import Routes, end_ports
from auditor.models import Link, Topology
from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.hostlist import expand_hostlist
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.ibqueryerrors import parse_ibqueryerrors
from auditor.simulate.scenario import GroundTruth, Scenario, generate
from auditor.simulate.scenario.fabric import _build_fabric, _ibnetdiscover
from auditor.simulate.scenario.faults import _Flap, _Plan
from auditor.simulate.scenario.options import CAUSE_REBOOT, FAULT_RARE
from auditor.simulate.scenario.routing import _Routing

SMALL: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 4}
# Leaf-spine faults that stay down for minutes (a reroute the minute's sweep sees), a switch
# reboot and a harmless uplink of each kind.
OPTIONS: dict[str, Any] = {**SMALL, "frequent_flappers": 2, "rare_flappers": 4,
                           "symbol_error_cables": 1, "reseat_flaps": 2, "harmless_flaps": 2}
SEED = 3


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, GroundTruth, dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("lfts")
    generate(root / "off", seed=SEED, **OPTIONS)
    truth = generate(root / "on", seed=SEED, **OPTIONS, lfts=True)
    return root / "on", truth, json.loads((root / "on" / "truth.json").read_text()), root / "off"


def _names(topo: Topology) -> dict[tuple[str, int], str]:
    """Each cable end as truth's link ids name it: `<switch>:<port>`, `<host>/<mlx5_N>:1`."""
    out = {}
    for node in topo.nodes:
        desc = node.description or ""
        name = desc.split(";", 1)[1].split(":", 1)[0] if desc.startswith("MF0;") else \
            desc.replace(" ", "/")
        for port in range(0, 256):
            out[(node.guid, port)] = f"{name}:{port}"
    return out


def _link_id(link: Link, names: dict[tuple[str, int], str]) -> str:
    a, b = names[(link.a_guid, link.a_port)], names[(link.b_guid, link.b_port)]
    return f"{a}={b}" if "/" in a or ("leaf" in a and "spine" in b) else f"{b}={a}"


def _routes(folder: Path, topo: Topology, capture: str) -> Routes:
    tables = parse_dump_lfts((folder / capture).read_text())
    return Routes(topo.links, tables.switches, end_ports(topo, tables.owners))


def _jobs(folder: Path) -> dict[str, list[str]]:
    """Each job's hosts in job order (sorted, as the job model keeps them), from sacct."""
    rows = (folder / "jobs" / "sacct.txt").read_text().splitlines()[1:]
    return {r.split("|")[0]: sorted(expand_hostlist(r.split("|")[9])) for r in rows}


def _ring_uplinks(routes: Routes, topo: Topology, names: dict[tuple[str, int], str],
                  hosts: list[str], rails: int) -> dict[str, tuple[str, str, int]]:
    """Leaf-spine links an NCCL ring over `hosts` crosses in `routes`, each with the first
    (host, peer, rail) that does: the job model's rule, traced in the captured tables."""
    port_of = {}
    for node in topo.nodes:
        if node.description and " mlx5_" in node.description:
            host, dev = node.description.split(" ")
            port_of[(host, int(dev.removeprefix("mlx5_")))] = (node.guid, 1)
    out: dict[str, tuple[str, str, int]] = {}
    n = len(hosts)
    for i in range(n if n > 2 else 1):
        a, b = hosts[i], hosts[(i + 1) % n]
        for rail in range(rails):
            for src, dst in ((a, b), (b, a)):
                (route,) = routes.routes(port_of[(src, rail)], port_of[(dst, rail)])
                for link in route.links:
                    lid = _link_id(link, names)
                    if "/" not in lid:
                        out.setdefault(lid, (a, b, rail))
    return out


# ------------------------------------------------------------------------- off: nothing moves


def test_off_writes_what_it_wrote_and_on_is_deterministic(
        scenario: tuple[Path, GroundTruth, dict[str, Any], Path], tmp_path: Path) -> None:
    on, truth, data, off = scenario
    generate(tmp_path / "off", seed=SEED, **OPTIONS, lfts=False, silent_uplink=False)
    assert _tree(tmp_path / "off") == _tree(off)
    plain = json.loads((off / "truth.json").read_text())
    assert not {"routing", "lft_captures", "reroutes"} & plain.keys()
    assert not {"lfts", "silent_uplink"} & plain["scenario"].keys()
    assert all("ar_crossed_by" not in h for h in plain["harmless_links"])
    assert not (off / "lfts").exists()
    generate(tmp_path / "on", seed=SEED, **OPTIONS, lfts=True)
    assert _tree(tmp_path / "on") == _tree(on)
    # the fabric, the faults and the switches' view of them are the same with the tables
    for rel in ("topology/ibnetdiscover.txt", "logs/switches.log", "hosts", "inventory.csv"):
        assert (on / rel).read_bytes() == (off / rel).read_bytes(), rel
    assert truth.bad_cables and [b.link for b in truth.bad_cables] == [
        b["link"] for b in plain["bad_cables"]]
    assert data["scenario"]["lfts"] is True


# ------------------------------------------------------------------------- the tables


def test_the_tables_give_every_ring_the_links_the_job_model_gives_it() -> None:
    """The baseline tables are the job model's D-mod-K rule (`_Fabric.ring_links`), and in every
    version the SM sets, the paths the dump gives (parsed, traced by Routes) are the ones the
    job model uses (`_Routing.ring_links`): two rails, a dead uplink, two dead uplinks to one
    spine, a rebooting spine and a host cable down."""
    sc = Scenario(seed=SEED, spines=4, leaves=8, hosts_per_leaf=4, hcas_per_host=2)
    fab = _build_fabric(sc, random.Random(f"{SEED}:fabric"))  # noqa: S311 - the generator's
    plan = _Plan()

    def down(link: int, at: float, until: float, cause: str = FAULT_RARE) -> None:
        plan.flaps.append(_Flap(link, at, until, cause))

    leaves = [i for i, s in enumerate(fab.switches) if s.leaf]
    down(fab.uplink[(leaves[0], 1)], 1000.0, 1600.0)
    down(fab.uplink[(leaves[3], 1)], 1200.0, 1300.0)
    down(fab.hca_link[5], 1100.0, 1400.0)
    spine = 2
    for i in fab.switch_links[spine]:
        down(i, 3000.0 + i % 3 * 0.5, 3200.0, CAUSE_REBOOT)
    plan.reboots.append((spine, 3000.0, 3201.0, sorted(fab.switch_links[spine])))
    plan.flaps.sort(key=lambda f: (f.down, f.link))
    routing = _Routing(fab, plan)
    assert [v.reason for v in routing.versions] == [
        "initial", "reroute", "reroute", "restore", "restore", "reroute", "restore"]
    assert routing.versions[1].at == pytest.approx(1000.0 + routing.sweep_s)
    topo = parse_ibnetdiscover(_ibnetdiscover(fab, sc.start))
    names = _names(topo)
    rng = random.Random(7)  # noqa: S311 - test data
    hosts = [sorted(rng.sample(range(len(fab.hosts)), k)) for k in (2, 3, 5, 8, 16)]
    for ring in hosts:
        assert routing.ring_links(ring, 0.0) == fab.ring_links(ring)
    for v, version in enumerate(routing.versions):
        at = version.at + 0.5
        text, absent, unrouted = routing.dump(v, at)
        tables = parse_dump_lfts(text)
        routes = Routes(topo.links, tables.switches, end_ports(topo, tables.owners))
        assert len(tables.switches) == len(fab.switches) - len(absent)
        assert absent == ([spine] if version.state.gone else [])
        # a port whose cable is down has no route in a capture (the SM dropped it), while the
        # job model keeps the SM's routes: the host's own cable is what hits its jobs then
        assert (5 in unrouted) == (1100.0 <= at < 1400.0)
        off = {fab.hcas[c].host for c in unrouted}
        for ring in (r for r in hosts if not off & set(r)):
            names_ring = [fab.hosts[h] for h in ring]
            want = {fab.link_id(k): (fab.hosts[a], fab.hosts[b], rail)
                    for k, (a, b, rail) in routing.ring_links(ring, at).items()}
            assert _ring_uplinks(routes, topo, names, names_ring, 2) == want, (v, ring)
        dead = {fab.link_id(i) for i in version.state.dead}
        for link in routes.links:
            assert _link_id(link, names) in {fab.link_id(i) for i in range(len(fab.links))}
        live = [e for e in routes.ends.values()
                if names[(e.guid, 1)].removesuffix(":1") not in
                {f"{fab.hosts[fab.hcas[c].host]}/{fab.hcas[c].device}" for c in unrouted}]
        for src in live:
            for dst in live:
                route = routes.route((src.guid, 1), dst.lid)
                assert route.ok, route.reason
                assert not {_link_id(lk, names) for lk in route.links} & dead
    # back to normal once every link is up again
    assert routing.tables(len(routing.versions) - 1) == routing.tables(0)


def test_captures_parse_and_the_killers_are_on_the_broken_connections_path(
        scenario: tuple[Path, GroundTruth, dict[str, Any], Path]) -> None:
    on, truth, data, _ = scenario
    topo = parse_ibnetdiscover((on / "topology" / "ibnetdiscover.txt").read_text())
    names = _names(topo)
    captures = data["lft_captures"]
    first = _routes(on, topo, captures[0]["file"])
    jobs = _jobs(on)
    rerouted = [(_at(r["rerouted_at"]), _at(r["restored_at"] or data["window_end"]))
                for r in data["reroutes"]]
    checked = 0
    for job in truth.network_failed_jobs:
        if "/" in job.culprit_link:
            continue  # a host cable: on every path of its host
        hit = max(job.start, job.flap_down_at)
        if any(a <= hit < b for a, b in rerouted):
            continue  # the tables then were the SM's reroute, maybe never captured
        ring = _ring_uplinks(first, topo, names, jobs[job.job_id], 1)
        a, b, _ = ring[job.culprit_link]
        assert {a, b} == {r.host for r in job.reporters}
        checked += 1
    assert checked >= 2
    # every HCA reaches every other in the first capture; its owners name them all
    for src in first.ends:
        for dst in first.ends.values():
            assert first.route(src, dst.lid).ok


def test_a_reroute_capture_avoids_the_dead_link_and_the_next_is_back_to_normal(
        scenario: tuple[Path, GroundTruth, dict[str, Any], Path]) -> None:
    on, _, data, _ = scenario
    topo = parse_ibnetdiscover((on / "topology" / "ibnetdiscover.txt").read_text())
    names = _names(topo)
    first = parse_dump_lfts((on / data["lft_captures"][0]["file"]).read_text())
    baseline = {t.guid: t.ports for t in first.switches}
    avoiding = [c for c in data["lft_captures"] if c["avoids"]]
    assert avoiding
    for cap in avoiding:
        routes = _routes(on, topo, cap["file"])
        unrouted = set(cap["unrouted"])
        live = [p for p in routes.ends if names[p].removesuffix(":1") not in unrouted]
        crossed: set[str] = set()
        for src in live:
            for dst in live:
                route = routes.route(src, routes.ends[dst].lid)
                assert route.ok, route.reason
                crossed |= {_link_id(lk, names) for lk in route.links}
        assert not crossed & set(cap["avoids"])
        # each rerouted link: in a reroute record that lists this capture
        for link in cap["avoids"]:
            assert any(r["link"] == link and cap["file"] in r["captures"]
                       for r in data["reroutes"])
    restored = [c for c in data["lft_captures"][1:] if c["reason"] == "restore"
                and not c["avoids"] and not c["unrouted"]]
    assert restored
    for cap in restored:
        tables = parse_dump_lfts((on / cap["file"]).read_text())
        assert {t.guid: t.ports for t in tables.switches} == baseline


def test_truth_lists_the_captures_and_the_reroutes(
        scenario: tuple[Path, GroundTruth, dict[str, Any], Path]) -> None:
    on, truth, data, _ = scenario
    files = sorted(p.relative_to(on).as_posix() for p in (on / "lfts").iterdir())
    assert sorted(c["file"] for c in data["lft_captures"]) == files
    assert data["lft_captures"][0]["reason"] == "initial"
    assert data["lft_captures"][0]["at"] == data["topology_at"]
    times = [_at(c["at"]) for c in data["lft_captures"]]
    assert times == sorted(times) and times[-1] < _at(data["window_end"])
    assert all(_at(c["routed_at"]) <= _at(c["at"]) for c in data["lft_captures"])
    assert data["routing"]["engine"] == "dmodk" and data["routing"]["sweep_s"] >= 1.0
    flaps = {(f["link"], f["down_at"]): f for f in data["flaps"]}
    assert data["reroutes"]
    for r in data["reroutes"]:
        f = flaps[(r["link"], r["down_at"])]
        assert "/" not in r["link"] and f["up_at"] == r["up_at"] and f["cause"] == r["cause"]
        assert _at(r["down_at"]) < _at(r["rerouted_at"]) < _at(r["up_at"])
        assert r["restored_at"] is None or _at(r["restored_at"]) > _at(r["up_at"])
        assert set(r["captures"]) <= set(files)
    # every leaf-spine flap longer than a minute was routed around, and seen by a capture
    long = [f for f in data["flaps"] if "/" not in f["link"] and f["duration_s"] > 62]
    assert long
    for f in long:
        (r,) = [r for r in data["reroutes"] if (r["link"], r["down_at"]) ==
                (f["link"], f["down_at"])]
        assert any(f["link"] in c["avoids"] for c in data["lft_captures"]
                   if c["file"] in r["captures"])
    assert truth.lft_captures and truth.reroutes and truth.routing is not None


def test_harmless_uplinks_list_the_jobs_whose_routes_crossed_them(
        scenario: tuple[Path, GroundTruth, dict[str, Any], Path]) -> None:
    on, _, data, off = scenario
    topo = parse_ibnetdiscover((on / "topology" / "ibnetdiscover.txt").read_text())
    names = _names(topo)
    first = _routes(on, topo, data["lft_captures"][0]["file"])
    jobs = _jobs(on)
    plain = {h["link"]: h for h in json.loads((off / "truth.json").read_text())["harmless_links"]}
    uplinks = [h for h in data["harmless_links"] if h["kind"] == "switch"]
    assert uplinks and all("ar_crossed_by" not in h for h in data["harmless_links"]
                           if h["kind"] == "host")
    some = 0
    for h in uplinks:
        for flap, exact, spread in zip(h["flaps"], h["crossed_by"], h["ar_crossed_by"],
                                       strict=True):
            assert set(exact) <= set(spread)
            for job in spread:
                crosses = h["link"] in _ring_uplinks(first, topo, names, jobs[job], 1)
                assert crosses == (job in exact), (h["link"], flap["down_at"], job)
            some += len(exact)
        if h["link"] in plain:  # the same jobs ran in both (the first flap's, at least)
            assert h["ar_crossed_by"][0] == plain[h["link"]]["crossed_by"][0]
    assert some


# ------------------------------------------------------------------------- silent uplink


def test_a_silent_uplink_kills_one_job_and_leaves_no_other_trace(tmp_path: Path) -> None:
    options = {"spines": 64, "leaves": 2, "hosts_per_leaf": 32, "frequent_flappers": 0,
               "rare_flappers": 0, "symbol_error_cables": 0}
    truth = generate(tmp_path / "s", seed=2, silent_uplink=True, lfts=True, **options)
    (bad,) = truth.bad_cables
    assert bad.fault == "silent_stall" and bad.kind == "switch" and len(bad.flaps) == 1
    killed = [j for j in truth.network_failed_jobs if j.culprit_link == bad.link]
    assert len(killed) == 1 and killed[0].culprit_cause == "silent_stall"
    assert bad.flaps[0].duration_s > killed[0].death_s
    assert bad.link not in {f.link for f in truth.flaps}
    assert bad.link not in {r.link for r in truth.reroutes}
    leaf, spine = (e for e in bad.ends)
    log = (tmp_path / "s" / "logs" / "switches.log").read_text()
    for end in (leaf, spine):
        assert not [line for line in log.splitlines()
                    if f" {end.name} " in line and f"IB1/{end.port} " in line]
    for snap in truth.snapshots:
        for sample in parse_ibqueryerrors((tmp_path / "s" / snap.file).read_text()):
            assert not ((sample.guid, sample.port) in {(leaf.guid, leaf.port),
                                                        (spine.guid, spine.port)}
                        and sample.counters.get("LinkDownedCounter"))
    data = json.loads((tmp_path / "s" / "truth.json").read_text())
    assert data["scenario"]["silent_uplink"] is True
    # same seed, same bytes; without it, the scenario of the same seed
    generate(tmp_path / "again", seed=2, silent_uplink=True, lfts=True, **options)
    assert _tree(tmp_path / "again") == _tree(tmp_path / "s")
    with pytest.raises(ValueError, match="silent_uplink"):
        Scenario(seed=1, spines=4, leaves=2, hosts_per_leaf=4, hcas_per_host=2,
                 silent_uplink=True)


# ------------------------------------------------------------------------- CLI, evaluate


def test_cli_simulate_lfts(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from auditor.cli import app

    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path), "--spines", "2",
                                   "--leaves", "4", "--hosts", "4", "--lfts"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "truth.json").read_text())
    assert data["scenario"]["lfts"] is True
    assert f"{len(data['lft_captures'])} forwarding-table capture(s)" in res.output


def test_evaluate_ingests_the_captures_only_when_the_ingest_offers_lfts(
        scenario: tuple[Path, GroundTruth, dict[str, Any], Path], tmp_path: Path) -> None:
    from auditor.simulate.evaluate import evaluate, offered

    on, _, data, _ = scenario
    score, _ = evaluate(on, tmp_path / "a.duckdb")
    want = len(data["lft_captures"]) if offered("lfts") else 0
    assert score.lfts_ingested == want
    assert len(score.bad_ranks) == len(data["bad_cables"])
    assert offered("ibnetdiscover") == "captures" and offered("sacct") == "jobs"
