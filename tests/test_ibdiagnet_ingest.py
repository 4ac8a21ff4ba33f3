"""`auditor ingest --kind ibdiagnet` (issue #24): an ibdiagnet output folder, its db_csv or its
net_dump into the store, as one source in one transaction; and, on an ibsim fabric, the
topology stored from a db_csv in ibdiagnet's layout is the one stored from real ibnetdiscover.
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditor.errors import AuditorError
from auditor.ingest.captures import ingest_files
from auditor.ingest.plan import plan_ingest
from auditor.models import CableInfo, CounterTable, Topology
from auditor.simulate.ibsim import FatTree, IbSim, write_net_file
from auditor.simulate.vendor_formats import db_csv, net_dump, topology_of_tree
from auditor.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
FULL = FIXTURES / "ibdiagnet" / "written_all_tables_warnings_ber.txt"
RUN = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
TREE = FatTree(spines=2, leaves=4, hosts_per_leaf=2, leaf_ports=8, spine_ports=6)


def _leaf_uplink(topo: Topology) -> tuple[str, int]:
    leaf = f"0x{TREE.leaf_guid(1):016x}"
    port = TREE.uplink_port(1)
    assert any((leaf, port) in ((lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port))
               for lk in topo.links)
    return leaf, port


def _run_folder(folder: Path, at: datetime, *, downs: int = 0, log: bool = True) -> Path:
    """An ibdiagnet output folder for TREE: db_csv (with PM_INFO and CABLE_INFO), net_dump and
    a log naming one link_down_counter increase on the first leaf's first uplink."""
    topo = topology_of_tree(TREE)
    guid, port = _leaf_uplink(topo)
    counters = CounterTable.from_rows([(guid, port, "LinkDownedCounter", downs),
                                       (guid, port, "SymbolErrorCounter", 10 * downs)])
    cables = [CableInfo(guid, port, "Nvidia", "MMA4Z00-NS", "MT2330FT09118", "30 m", "A6",
                        "850 nm VCSEL", 54.0)]
    folder.mkdir(parents=True)
    (folder / "ibdiagnet2.db_csv").write_text(db_csv(topo, counters=counters, cables=cables,
                                                     run_at=at))
    (folder / "ibdiagnet2.net_dump").write_text(net_dump(topo, run_at=at))
    if log:
        n = f"{int(guid, 16):016x}"
        (folder / "ibdiagnet2.log").write_text(
            "-I- Stage Port Counters\n"
            f'-E- S{n}/N{n}/P{port} - "link_down_counter" increased during the run '
            "(difference value=1,difference allowed threshold=1)\n")
    (folder / "ibdiagnet2.pm").write_text("not read\n")
    return folder


def _count(store: Store, table: str) -> int:
    row = store._con.execute(f"select count(*) from {table}").fetchone()  # noqa: S608
    assert row is not None
    return int(row[0])


def test_a_folder_is_one_source_with_everything_it_says(tmp_path: Path, db: Path) -> None:
    folder = _run_folder(tmp_path / "ibdiagnet2", RUN, downs=3)
    topo = topology_of_tree(TREE)
    guid, port = _leaf_uplink(topo)
    with Store(db) as store:
        [res] = ingest_files(store, [folder], kind="ibdiagnet")
        assert (res.kind, res.status) == ("ibdiagnet", "ingested")
        [source] = store.sources()
        assert source["kind"] == "ibdiagnet"
        # dated by the run's `Running timestamp`, not by the time of the ingest
        assert source["observed_at"] == RUN.replace(tzinfo=None)
        fabric = store.fabric(RUN)
        assert set(fabric.nodes) == {n.guid for n in topo.nodes}
        assert len(fabric.links) == len(topo.links)
        readings = {(g, p, c): v for g, p, c, v in store._con.execute(
            "select guid, port, counter, value from counters").fetchall()}
        assert readings[(guid, port, "LinkDownedCounter")] == 3
        [module] = [t for t in store.transceivers() if t["guid"] == guid]
        leaf_name = fabric.nodes[guid].name
        # PORT_HIERARCHY_INFO names the port; the module is under the switch's name
        assert (module["device"], module["port_name"], module["port"]) == (leaf_name,
                                                                           str(port), port)
        assert (module["vendor"], module["part_number"], module["serial_number"],
                module["length"]) == ("Nvidia", "MMA4Z00-NS", "MT2330FT09118", "30 m")
        [temp] = store.optics_readings(RUN - timedelta(hours=1), RUN + timedelta(hours=1))
        assert (temp["guid"], temp["port"], temp["temperature_c"]) == (guid, port, 54.0)
        assert store.port_labels()[(leaf_name, port)] == str(port)
        [event] = store.events(RUN - timedelta(hours=1), RUN + timedelta(hours=1))
        assert (event["state"], event["origin"], event["guid"], event["port"],
                event["code"]) == ("flap", "ibdiagnet", guid, port, "link_down_counter")
        assert event["event_at"] == RUN.replace(tzinfo=None)


def test_re_ingest_is_a_no_op_and_other_names_replace(tmp_path: Path, db: Path) -> None:
    folder = _run_folder(tmp_path / "run", RUN)
    with Store(db) as store:
        ingest_files(store, [folder], kind="ibdiagnet")
        before = {t: _count(store, t) for t in ("nodes", "links", "counters", "transceivers",
                                                 "port_events", "port_labels",
                                                 "optics_readings")}
        assert ingest_files(store, [folder], kind="auto")[0].status == "already ingested"
        assert {t: _count(store, t) for t in before} == before
        # another node-name map is another reading of the same run: it replaces the first
        again = ingest_files(store, [folder], kind="ibdiagnet", node_names={
            f"0x{TREE.leaf_guid(1):016x}": "leaf-one"})
        assert again[0].status == "re-ingested"
        assert {t: _count(store, t) for t in before} == before
        assert len(store.sources()) == 1


def test_counter_deltas_between_two_runs(tmp_path: Path, db: Path) -> None:
    later = RUN + timedelta(hours=1)
    guid, port = _leaf_uplink(topology_of_tree(TREE))
    with Store(db) as store:
        ingest_files(store, [_run_folder(tmp_path / "a", RUN, downs=2, log=False)])
        ingest_files(store, [_run_folder(tmp_path / "b", later, downs=5, log=False)])
        deltas = {(d["guid"], d["port"], d["counter"]): d["delta"]
                  for d in store.counter_deltas(RUN - timedelta(hours=1), later)}
    assert deltas[(guid, port, "LinkDownedCounter")] == 3
    assert deltas[(guid, port, "SymbolErrorCounter")] == 30


def test_the_db_csv_alone_gives_warnings_ber_and_missing_tables(db: Path) -> None:
    with Store(db) as store:
        [res] = ingest_files(store, [FULL], kind="auto")
        assert res.kind == "ibdiagnet"
        issues = {i["reason"]: i for i in store.issues()}
        ber_rows = store.port_bers(datetime(2025, 1, 1, tzinfo=UTC),
                                   datetime(2026, 1, 1, tzinfo=UTC))
    err = issues["ibdiagnet error: PORTS_COUNTERS_DIFFERENCE_CHECK_(DURING_RUN) "
                 "PM_COUNTER_INCREASED"]
    assert err["lines"] == 1 and '"link_down_counter" increased' in (err["example"] or "")
    assert "ibdiagnet warning: SYMBOL_BER_CHECK BER_NO_THRESHOLD_IS_SUPPORTED" in issues
    assert any(r.startswith("PHY_DB36: field mapping unknown") for r in issues)
    assert any("error(s)" in w for w in res.warnings)
    by_port = {(r["guid"], r["port"]): r for r in ber_rows}
    assert by_port[("0xfc6a1c0300b00580", 1)]["symbol_ber"] == pytest.approx(1.5e-253)
    assert by_port[("0xfc6a1c0300b00580", 1)]["origin"] == "PHY_DB16 field12-17"


def test_missing_tables_are_named_in_sources(db: Path) -> None:
    no_nodes = FIXTURES / "ibdiagnet" / "written_disable_output_no_nodes.txt"
    with Store(db) as store:
        ingest_files(store, [no_nodes], kind="ibdiagnet")
        reasons = [i["reason"] for i in store.issues()]
    assert any(r.startswith("table NODES missing") for r in reasons)


def test_the_net_dump_alone_is_a_topology(tmp_path: Path, db: Path) -> None:
    folder = _run_folder(tmp_path / "run", RUN)
    (folder / "ibdiagnet2.db_csv").unlink()
    with Store(db) as store:
        [res] = ingest_files(store, [folder], kind="ibdiagnet")
        fabric = store.fabric(RUN)
        assert _count(store, "counters") == 0
        assert _count(store, "port_events") == 1  # the log is still read, dated by the dump
    topo = topology_of_tree(TREE)
    assert res.status == "ingested"
    assert len(fabric.links) == len(topo.links)
    assert set(fabric.nodes) == {n.guid for n in topo.nodes}


def test_a_bad_file_in_the_folder_names_file_and_line_and_stores_nothing(
        tmp_path: Path, db: Path) -> None:
    good = _run_folder(tmp_path / "good", RUN)
    bad = _run_folder(tmp_path / "bad", RUN + timedelta(hours=1))
    text = (bad / "ibdiagnet2.db_csv").read_text().replace("END_LINKS", "END_LINKZ", 1)
    (bad / "ibdiagnet2.db_csv").write_text(text)
    line_no = text.split("\n").index("END_LINKZ") + 1
    with Store(db) as store:
        with pytest.raises(AuditorError) as err:
            ingest_files(store, [good, bad], kind="ibdiagnet")
        assert store.sources() == []
        assert _count(store, "nodes") == 0
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{bad / 'ibdiagnet2.db_csv'}:{line_no}: ")


def test_folders_and_files_are_recognised_by_auto(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path / "run", RUN)
    plan = plan_ingest([folder, folder / "ibdiagnet2.db_csv", folder / "ibdiagnet2.net_dump"],
                       "auto")
    assert plan.captures == [folder, folder / "ibdiagnet2.db_csv",
                             folder / "ibdiagnet2.net_dump"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x\n")
    with pytest.raises(AuditorError, match="no ibdiagnet output folder"):
        plan_ingest([other], "auto")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(AuditorError, match=re.escape(f"{empty}: no ibdiagnet2.db_csv")):
        ingest_files(Store(":memory:"), [empty], kind="ibdiagnet")


# ---------------------------------------------------------------------------------------------
# ibsim: the same fabric through ibdiagnet's layout and through real ibnetdiscover


@pytest.mark.ibsim
@pytest.mark.usefixtures("need_ibsim")
def test_stored_from_db_csv_equals_stored_from_ibnetdiscover(tmp_path: Path) -> None:
    tree = FatTree(spines=2, leaves=4, hosts_per_leaf=2, leaf_ports=8, spine_ports=6, rails=2)
    degrade = {(tree.leaf_name(2), tree.spine_name(1)): "1x"}
    with IbSim(write_net_file(tree, degrade), tmp_path / "sim") as sim:
        sim.opensm_once()
        result = sim.run("ibnetdiscover")
    assert result.returncode == 0, result.stderr
    capture = tmp_path / "ibnetdiscover.txt"
    capture.write_text(result.stdout)
    folder = tmp_path / "ibdiagnet2"
    folder.mkdir()
    (folder / "ibdiagnet2.db_csv").write_text(db_csv(topology_of_tree(tree, degrade)))
    shutil.copy(FIXTURES / "ibdiagnet_log" / "pot_and_ncar_real_lines.txt",
                folder / "ibdiagnet2.log")  # GUIDs of another fabric: stored, placed nowhere
    fabrics = []
    for i, (path, kind) in enumerate(((capture, "ibnetdiscover"), (folder, "ibdiagnet"))):
        with Store(tmp_path / f"{kind}.duckdb") as store:
            [res] = ingest_files(store, [path], kind=kind, at=RUN)
            assert res.status == "ingested", i
            fabrics.append(store.fabric(RUN))
    seen, written = fabrics
    # node for node: GUID, type, description, name, model, switch LID
    assert written.nodes == seen.nodes
    # link for link, with width and speed (the degraded uplink trained 1X)
    assert sorted(map(repr, written.links)) == sorted(map(repr, seen.links))
    assert ("1X", "HDR") in {(lk.width, lk.speed) for lk in seen.links}
    # every port ibnetdiscover printed, with its port GUID, LID, width and speed; the db_csv
    # also lists the uncabled ports, Down
    def view(p: object) -> tuple[object, ...]:
        return tuple(getattr(p, a) for a in ("port_guid", "lid", "width", "speed"))
    assert {k: view(written.ports[k]) for k in seen.ports} == {k: view(p)
                                                                for k, p in seen.ports.items()}
    assert {p.state for k, p in written.ports.items() if k not in seen.ports} == {"Down"}


# ---------------------------------------------------------------------------------------------
# coverage: `suspects` and `report` name ibdiagnet as what the fabric was read through


def test_fabric_sources_name_each_tool_and_log() -> None:
    from auditor.analyse.coverage import fabric_sources

    events = [{"origin": o} for o in ("ibdiagnet", "syslog", "syslog", "topology")]
    found, note = fabric_sources({"ibdiagnet": 2, "ibnetdiscover": 1, "sacct": 4},
                                 events)  # type: ignore[arg-type]
    assert found == {"ibdiagnet": {"snapshots": 2, "port_events": 1},
                     "ibnetdiscover": {"snapshots": 1}, "syslog": {"port_events": 2}}
    assert note == ("fabric read through: ibdiagnet (2 runs, 1 port event), ibnetdiscover "
                    "(1 snapshot), syslog (2 port events)")
    assert fabric_sources({}, []) == ({}, "")


def test_suspects_and_report_name_ibdiagnet(tmp_path: Path, db: Path) -> None:
    import json

    from typer.testing import CliRunner

    from auditor.cli import app

    runner = CliRunner()
    folder = _run_folder(tmp_path / "ibdiagnet2", RUN, downs=1)
    assert runner.invoke(app, ["--db", str(db), "ingest", str(folder)]).exit_code == 0
    window = ["--since", "24h", "--until", "2026-11-30T12:00:00Z"]
    res = runner.invoke(app, ["--db", str(db), "suspects", *window, "--format", "json"])
    assert res.exit_code == 0, res.output
    coverage = json.loads(res.stdout)["coverage"]
    assert coverage["fabric_sources"] == {"ibdiagnet": {"snapshots": 1, "port_events": 1}}
    table = runner.invoke(app, ["--db", str(db), "suspects", *window])
    assert "fabric read through: ibdiagnet (1 run, 1 port event)" in table.stdout
    # a window the run is not in names nothing
    res = runner.invoke(app, ["--db", str(db), "suspects", "--since", "24h", "--until",
                              "2026-12-02T00:00:00Z", "--format", "json"])
    assert json.loads(res.stdout)["coverage"]["fabric_sources"] == {}
    out = tmp_path / "report"
    res = runner.invoke(app, ["--db", str(db), "report", *window, "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(next(out.glob("*.json")).read_text())
    assert doc["coverage"]["fabric_sources"] == {"ibdiagnet": {"snapshots": 1,
                                                               "port_events": 1}}
    page = next(out.glob("*.html")).read_text()
    assert "fabric read through: ibdiagnet (1 run, 1 port event)" in page


def test_a_run_without_nodes_is_no_snapshot(db: Path) -> None:
    no_nodes = FIXTURES / "ibdiagnet" / "written_disable_output_no_nodes.txt"
    t0, t1 = RUN, RUN + timedelta(hours=1)
    with Store(db) as store:
        ingest_files(store, [FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"], at=t0)
        before = store.fabric(t0)
        [res] = ingest_files(store, [no_nodes], kind="ibdiagnet", at=t1)
        assert res.status == "ingested"
        # the newest snapshot is still the ibnetdiscover one: the run holds no topology
        assert store.snapshot_times(t1 + timedelta(days=1)) == [t0.replace(tzinfo=None)]
        latest = store.latest_fabric()
        assert latest is not None and latest.nodes == before.nodes


# ---------------------------------------------------------------------------------------------
# PHY BER: what a port reports itself goes to the BER rule


def _with_phy_ber(folder: Path, guid: str, port: int, pairs: tuple[int, ...]) -> None:
    """Add a PHY_DB16 table (the layout of tests/fixtures/ibdiagnet/written_all_tables_...)
    with one port's raw, effective and symbol BER as mantissa/exponent pairs."""
    fields = ",".join(f"field{i}" for i in range(18))
    values = ",".join(["0"] * 12 + [str(v) for v in pairs])
    db = folder / "ibdiagnet2.db_csv"
    db.write_text(db.read_text() + f"START_PHY_DB16\nNodeGuid,PortGuid,PortNum,{fields}\n"
                  f"{guid},{guid},{port},{values}\nEND_PHY_DB16\n")


def test_a_reported_symbol_ber_over_the_limit_makes_a_suspect(tmp_path: Path, db: Path) -> None:
    import json

    from typer.testing import CliRunner

    from auditor.cli import app

    folder = _run_folder(tmp_path / "ibdiagnet2", RUN, log=False)
    guid, port = _leaf_uplink(topology_of_tree(TREE))
    # raw 3e-06, effective 2e-14, symbol 5e-12: 50x the 4X HDR field limit (1e-13)
    _with_phy_ber(folder, guid, port, (3, 6, 2, 14, 5, 12))
    runner = CliRunner()
    assert runner.invoke(app, ["--db", str(db), "ingest", str(folder)]).exit_code == 0
    res = runner.invoke(app, ["--db", str(db), "suspects", "--since", "24h", "--until",
                              "2026-11-30T12:00:00Z", "--format", "json"])
    assert res.exit_code == 0, res.output
    [suspect] = json.loads(res.stdout)["suspects"]
    assert {(e["guid"], e["port"]) for e in suspect["ends"]} >= {(guid, port)}
    assert "error_rate" in suspect["rules"]
    [said] = [e for e in suspect["evidence"] if "as the port reported it" in e]
    assert "symbol BER 5.0e-12" in said and "raw 3.0e-06, effective 2.0e-14" in said
    assert "above the field limit 1e-13" in said


def test_a_reported_ber_within_the_limit_is_no_suspect(tmp_path: Path, db: Path) -> None:
    import json

    from typer.testing import CliRunner

    from auditor.cli import app

    folder = _run_folder(tmp_path / "ibdiagnet2", RUN, log=False)
    guid, port = _leaf_uplink(topology_of_tree(TREE))
    _with_phy_ber(folder, guid, port, (3, 9, 1, 15, 1, 15))  # symbol 1e-15
    runner = CliRunner()
    assert runner.invoke(app, ["--db", str(db), "ingest", str(folder)]).exit_code == 0
    res = runner.invoke(app, ["--db", str(db), "suspects", "--since", "24h", "--until",
                              "2026-11-30T12:00:00Z", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["suspects"] == []
    from auditor.analyse.correlate import gather

    with Store(db) as store:
        ev = gather(store, (RUN - timedelta(hours=1)).replace(tzinfo=None),
                    (RUN + timedelta(hours=1)).replace(tzinfo=None))
    # a port under the warning level is no evidence record at all (a run reports every port)
    assert not any(le.symbol_ber for le in ev.links.values())


@pytest.mark.parametrize("name", ["ibdiagnet2.db_csv", "ibdiagnet2.net_dump"])
def test_an_empty_file_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("\n")
    with pytest.raises(AuditorError, match=re.escape(f"{path}:1: empty file")):
        ingest_files(Store(":memory:"), [path], kind="ibdiagnet")


def test_text_that_is_neither_names_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("# a comment\nhello\n")
    with pytest.raises(AuditorError, match=re.escape(f"{path}:2: ibdiagnet net_dump: expected "
                                                     "a switch line")):
        ingest_files(Store(":memory:"), [path], kind="ibdiagnet")
