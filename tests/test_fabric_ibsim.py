"""The fabric model against the real infiniband-diags tools on an ibsim fat tree: the parsed
graph must match the topology we built, including a pulled cable, a degraded link, injected
error counters, and a sweep run by the auditor itself."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor import graph
from auditor.analyse import topology as fabric
from auditor.analyse.routing import routes_at
from auditor.cli import app
from auditor.collect.runner import LocalRunner
from auditor.config import Settings, SweepSettings
from auditor.ingest.captures import ingest_files
from auditor.ops.sweep import sweep
from auditor.simulate.ibsim import FatTree, IbSim, expected_links, write_net_file
from auditor.store import Store
from tests.ibsim_counters import inject_counter

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
        inject_counter(sim, "leaf01", TREE.uplink_port(1), "SymbolErrorCounter", 1234)
        inject_counter(sim, "leaf01", TREE.uplink_port(1), "LinkDownedCounter", 3)
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
    assert [c["status"] for c in result.commands] == ["ok", "ok", "ok", "ok"]
    assert sorted(p.name for p in result.folder.iterdir()) == [
        "dump_lfts.txt", "iblinkinfo.txt", "ibnetdiscover.txt", "ibqueryerrors.txt"]
    assert (topo["switches"], topo["hcas"], topo["links"]) == (6, 8, expected_links(TREE))
    # the forwarding tables, stored at the sweep's time: every switch's, and the routes they
    # give between two hosts under different leaves go leaf -> spine -> leaf
    assert [r.kind for r in result.ingested].count("lfts") == 1
    with Store(db, read_only=True) as store:
        assert store.lft_captures_span()[0] == 1
        assert len(store.lft_tables_at(T0)) == 6
        routes = routes_at(store, T0)
        nodes = store.fabric(store.snapshot_times(T0, 1)[0]).nodes
    assert routes is not None
    names = {g: n.name for g, n in nodes.items()}
    ends = {names[g]: (g, p) for g, p in routes.ends}
    route = routes.routes(ends["gpu-node-01"], ends["gpu-node-08"])[0]
    assert route.ok and [names[h.switch][:4] for h in route.hops] == ["leaf", "spin", "leaf"]


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


def test_iblinkinfo_of_one_switch_keeps_its_links(tmp_path: Path, db: Path) -> None:
    """Issue #11 item 9: `iblinkinfo -S <guid>` names peers by LID and description only. Alone
    its links are kept with placeholder peers (and the slow uplink is still found); after a
    full snapshot the LIDs resolve to the peers' GUIDs through it."""
    leaf2 = TREE.leaf_guid(2)
    net = write_net_file(TREE, degrade={("leaf02", "spine01"): "EDR"})
    with IbSim(net, tmp_path / "sim") as sim:
        sim.opensm_once()
        full = capture(sim, tmp_path / "t0", "ibnetdiscover", "iblinkinfo")
        one = capture(sim, tmp_path / "t1", f"iblinkinfo -S 0x{leaf2:016x}")
    t1 = T0 + timedelta(hours=1)
    with Store(tmp_path / "alone.duckdb") as store:
        ingest_files(store, one, at=t1)
        alone = fabric.topology(store, t1)
    assert (alone["switches"], alone["hcas"], alone["links"]) == (3, 2, 4)
    (slow,) = alone["degraded"]
    assert ends(slow) == {("leaf02", TREE.uplink_port(1)), ("spine01", 2)}
    with Store(db) as store:
        ingest_files(store, full, at=T0)
        ingest_files(store, one, at=t1)
        snap, _ = fabric.snapshots(store, t1)
        resolved = fabric.topology(store, t1)
    hex16 = "0x{:016x}".format
    assert {(lk.a_guid, lk.a_port, lk.b_guid, lk.b_port) for lk in snap.links} == {
        *((hex16(TREE.host_guid(h)), 1, hex16(leaf2), h - 2) for h in (3, 4)),
        *((hex16(TREE.spine_guid(s)), 2, hex16(leaf2), TREE.uplink_port(s)) for s in (1, 2))}
    (slow,) = resolved["degraded"]
    assert {(e["guid"], e["port"]) for e in slow["ends"]} == {
        (hex16(leaf2), TREE.uplink_port(1)), (hex16(TREE.spine_guid(1)), 2)}
    assert (slow["speed"], slow["possible_speed"]) == ("EDR", "HDR")


def dual_port_net(tree: FatTree) -> str:
    """The tree with gpu-node-03 a dual-port CA (`Ca 2`): port 1 on leaf02[1], port 2 on the
    free leaf02[5]."""
    net = write_net_file(tree)
    host = 'Hca 1 "gpu-node-03" # "gpu-node-03 mlx5_0"\n[1] "leaf02"[1] # lid 9\n'
    leaf = '[2] "gpu-node-04"[1]\n'
    assert host in net and leaf in net
    net = net.replace(host, 'Ca 2 "gpu-node-03" # "gpu-node-03 mlx4_0"\n'
                            '[1] "leaf02"[1] # lid 9\n[2] "leaf02"[5] # lid 15\n')
    return net.replace(leaf, leaf + '[5] "gpu-node-03"[2]\n')


def test_a_dual_port_hca_is_one_hca(tmp_path: Path) -> None:
    """Issue #11 item 9: the HCA count is of nodes, not ports, whichever capture says it."""
    with IbSim(dual_port_net(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        default = capture(sim, tmp_path / "default", "ibnetdiscover", "iblinkinfo")
        lines = capture(sim, tmp_path / "lines", "ibnetdiscover -p", "iblinkinfo --line")
    for name, files in {"both": default, "iblinkinfo": default[1:], "ports": lines[:1],
                        "line": lines[1:], "ports+line": lines}.items():
        with Store(tmp_path / f"{name}.duckdb") as store:
            ingest_files(store, files, at=T0)
            topo = fabric.topology(store, T0)
            g = graph.build_graph(fabric.snapshots(store, T0)[0])
        assert (topo["switches"], topo["hcas"], topo["links"]) == (
            6, 8, expected_links(TREE) + 1), name
        (hca,) = graph.host_guids(g, "gpu-node-03")
        assert len(graph.node_links(g, hca)) == 2, name


def test_two_hosts_sharing_a_guid_do_not_move_a_cable(tmp_path: Path, db: Path) -> None:
    """Issue #11 item 11, as the real tools show it: gpu-node-05 takes gpu-node-02's node GUID
    (ibsim's console `Guid` command; a net file with a duplicate GUID is refused). libibnetdisc
    keeps one node per GUID, so gpu-node-02 seems to sit on gpu-node-05's cable and its own
    switch port is up with no peer ("Port not available"). That is reported, and neither a
    moved cable nor a down port nor a link-down event (of that port, or of gpu-node-05's cable
    whose GUID vanished) comes of it."""
    from auditor.ingest.guid_clashes import UNPLACED_ISSUE

    with IbSim(write_net_file(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        first = capture(sim, tmp_path / "t0", "ibnetdiscover", "iblinkinfo")
        sim.console(f'Guid "gpu-node-05" 0x{TREE.host_guid(2):016x}')
        second = capture(sim, tmp_path / "t1", "ibnetdiscover", "iblinkinfo")
    t1 = T0 + timedelta(hours=1)
    with Store(db) as store:
        ingest_files(store, first, at=T0)
        results = ingest_files(store, second, at=t1)
        topo = fabric.topology(store, t1)
        issues = [(i["kind"], i["reason"], i["lines"]) for i in store.issues()]
        events = [(e["guid"], e["port"], e["state"]) for e in store.events(T0, t1)]
    assert topo["moved"] == []
    assert topo["ports_down"] == 0
    assert [e for e in events if e[2] == "down"] == []  # leaf01:2 is up; gpu-node-05's cable too
    assert issues == [("iblinkinfo", UNPLACED_ISSUE, 1)]
    (warning,) = [w for r in results for w in r.warnings]
    assert "leaf01 port 2" in warning and "Port not available" in warning
