"""The fabric model against the real infiniband-diags tools on an ibsim fat tree: the parsed
graph must match the topology we built, including a pulled cable, a degraded link, injected
error counters, and a sweep run by the auditor itself."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor import fabric, graph
from auditor.cli import app
from auditor.collect.runner import LocalRunner
from auditor.config import Settings, SweepSettings
from auditor.ingest import ingest_files
from auditor.simulate.ibsim import FatTree, IbSim, expected_links, write_net_file
from auditor.store import Store
from auditor.sweep import sweep

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("need_ibsim")]

TREE = FatTree(spines=2, leaves=4, hosts_per_leaf=2, leaf_ports=8, spine_ports=8)
T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def capture(sim: IbSim, folder: Path, *tools: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for tool in tools:
        argv = tool.split()
        result = sim.run(*argv)
        assert result.returncode in (0, 1), result.stderr
        path = folder / f"{argv[0]}.txt"
        path.write_text(result.stdout)
        out.append(path)
    return out


def ends(item: dict) -> set[tuple[str, int]]:
    return {(e["name"], e["port"]) for e in item["ends"]}


def test_graph_matches_built_fat_tree_then_a_cable_is_pulled(tmp_path: Path, db: Path) -> None:
    with IbSim(write_net_file(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        first = capture(sim, tmp_path / "t0", "ibnetdiscover", "iblinkinfo")
        uplink = TREE.uplink_port(1)
        sim.unlink("leaf02", uplink)
        second = capture(sim, tmp_path / "t1", "ibnetdiscover", "iblinkinfo")
    with Store(db) as store:
        ingest_files(store, first, at=T0)
        ingest_files(store, second, at=T0 + timedelta(hours=1))
        before = fabric.topology(store, T0)
        after = fabric.topology(store, T0 + timedelta(hours=1))
        snap, _ = fabric.snapshots(store, T0)
    assert (before["switches"], before["hcas"], before["links"]) == (6, 8, expected_links(TREE))
    assert before["ports_down"] == 0
    assert before["degraded"] == []
    assert after["links"] == expected_links(TREE) - 1
    assert after["ports_down"] == 2
    assert {(e["name"], e["port"]) for d in after["down"] for e in d["ends"][:1]} == {
        ("leaf02", uplink), ("spine01", 2)}
    assert after["disappeared"] and ends({"ends": after["disappeared"][0]}) == {
        ("leaf02", uplink), ("spine01", 2)}

    # Every host cable lands on the leaf and port the tree says, keyed by real GUIDs.
    g = graph.build_graph(snap)
    for h, name in enumerate(TREE.host_names(), 1):
        leaf, port = TREE.host_attachment(h)
        (hca,) = graph.host_guids(g, name)
        assert hca == f"0x{TREE.host_guid(h):016x}"
        (link,) = graph.host_links(g, name)
        leaf_guid = f"0x{TREE.leaf_guid(leaf):016x}"
        assert (leaf_guid, port) in {(link[0], link[1]), (link[2], link[3])}
    leaf1 = f"0x{TREE.leaf_guid(1):016x}"
    assert len(graph.uplinks(g, leaf1)) == TREE.spines
    assert len(graph.node_links(g, leaf1)) == TREE.spines + TREE.hosts_per_leaf
    # Hosts on different leaves: both host cables plus one up and one down link per spine.
    across = graph.links_between_hosts(g, "gpu-node-01", "gpu-node-08")
    assert len(across) == 2 + 2 * TREE.spines
    same_leaf = graph.links_between_hosts(g, "gpu-node-01", "gpu-node-02")
    assert len(same_leaf) == 2


def test_degraded_link_reported_with_both_ends(tmp_path: Path, db: Path) -> None:
    net = write_net_file(TREE, degrade={("leaf03", "spine02"): "1x", ("leaf04", "spine01"): "QDR"})
    with IbSim(net, tmp_path / "sim") as sim:
        sim.opensm_once()
        files = capture(sim, tmp_path / "t0", "ibnetdiscover -p", "iblinkinfo --line")
    with Store(db) as store:
        ingest_files(store, files, at=T0)
        topo = fabric.topology(store, T0)
    found = {frozenset(ends(d)): d for d in topo["degraded"]}
    narrow = found[frozenset({("leaf03", TREE.uplink_port(2)), ("spine02", 3)})]
    assert (narrow["width"], narrow["possible_width"]) == ("1X", "4X")
    slow = found[frozenset({("leaf04", TREE.uplink_port(1)), ("spine01", 4)})]
    assert (slow["speed"], slow["possible_speed"]) == ("QDR", "HDR")
    assert len(found) == 2
    assert topo["links"] == expected_links(TREE)


def test_injected_counters_are_stored_per_port(tmp_path: Path, db: Path) -> None:
    with IbSim(write_net_file(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        topo = capture(sim, tmp_path / "t0", "ibnetdiscover")
        sim.set_counter("leaf01", TREE.uplink_port(1), "SymbolErrorCounter", 1234)
        sim.set_counter("leaf01", TREE.uplink_port(1), "LinkDownedCounter", 3)
        errs = capture(sim, tmp_path / "t1", "ibqueryerrors --skip-sl")
        lid = TREE.leaf_lid(1)
        pq = sim.run("perfquery", str(lid), str(TREE.uplink_port(1)))
        (tmp_path / "pq.txt").write_text(pq.stdout)
    with Store(db) as store:
        ingest_files(store, topo, at=T0)
        ingest_files(store, [*errs, tmp_path / "pq.txt"], at=T0 + timedelta(minutes=5))
        rows = store._con.execute(
            "select s.kind, c.guid, c.port, c.counter, c.value from counters c "
            "join sources s using (source_id) where c.counter in "
            "('SymbolErrorCounter', 'LinkDownedCounter') and c.port is not null order by 1, 4"
        ).fetchall()
    leaf = f"0x{TREE.leaf_guid(1):016x}"
    port = TREE.uplink_port(1)
    assert rows == [
        ("ibqueryerrors", leaf, port, "LinkDownedCounter", 3),
        ("ibqueryerrors", leaf, port, "SymbolErrorCounter", 1234),
        ("perfquery", leaf, port, "LinkDownedCounter", 3),
        ("perfquery", leaf, port, "SymbolErrorCounter", 1234),
    ]


def test_sweep_runs_the_real_tools_and_keeps_captures(
    tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # umad2sim writes its fake /sys into the working directory
    with IbSim(write_net_file(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        env = {k: v for k, v in sim.client_env().items()
               if k in ("LD_PRELOAD", "IBSIM_SOCKNAME", "SIM_HOST")}
        settings = Settings(db=db, captures=tmp_path / "captures", sweep=SweepSettings(
            env=env, ibqueryerrors_args=("--skip-sl",)))
        with Store(db) as store:
            result = sweep(store, settings, LocalRunner(env), at=T0)
            topo = fabric.topology(store, T0)
    assert [c["status"] for c in result.commands] == ["ok", "ok", "ok"]
    assert sorted(p.name for p in result.folder.iterdir()) == [
        "iblinkinfo.txt", "ibnetdiscover.txt", "ibqueryerrors.txt"]
    assert (topo["switches"], topo["hcas"], topo["links"]) == (6, 8, expected_links(TREE))


def test_cli_topology_json_contract(tmp_path: Path, db: Path) -> None:
    net = write_net_file(TREE, degrade={("leaf02", "spine01"): "EDR"})
    with IbSim(net, tmp_path / "sim") as sim:
        sim.opensm_once()
        files = capture(sim, tmp_path / "t0", "ibnetdiscover", "iblinkinfo")
    runner = CliRunner()
    res = runner.invoke(app, ["--db", str(db), "ingest", "--at", "2026-11-30T06:00:00Z",
                              *map(str, files)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["--db", str(db), "topology", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert {k: data[k] for k in ("switches", "hcas", "links", "ports_down")} == {
        "switches": 6, "hcas": 8, "links": expected_links(TREE), "ports_down": 0}
    (deg,) = data["degraded"]
    assert {(e["name"], e["port"]) for e in deg["ends"]} == {
        ("leaf02", TREE.uplink_port(1)), ("spine01", 2)}
    assert all(set(e) >= {"name", "guid", "port"} for e in deg["ends"])
    assert (deg["speed"], deg["possible_speed"]) == ("EDR", "HDR")


def test_cable_moved_to_another_port_is_reported_as_moved(tmp_path: Path, db: Path) -> None:
    with IbSim(write_net_file(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        first = capture(sim, tmp_path / "t0", "ibnetdiscover", "iblinkinfo")
        # A technician moves gpu-node-02's cable from leaf01 port 2 to the free port 5.
        sim.unlink("gpu-node-02")
        sim.console('Link "leaf01"[5] "gpu-node-02"[1]')
        sim.opensm_once()
        second = capture(sim, tmp_path / "t1", "ibnetdiscover", "iblinkinfo")
    with Store(db) as store:
        ingest_files(store, first, at=T0)
        ingest_files(store, second, at=T0 + timedelta(hours=1))
        topo = fabric.topology(store, T0 + timedelta(hours=1))
    (moved,) = topo["moved"]
    assert {(e["name"], e["port"]) for e in moved["before"]} == {("gpu-node-02", 1), ("leaf01", 2)}
    assert {(e["name"], e["port"]) for e in moved["after"]} == {("gpu-node-02", 1), ("leaf01", 5)}
    assert topo["appeared"] == [] and topo["disappeared"] == []
    assert topo["links"] == expected_links(TREE)
