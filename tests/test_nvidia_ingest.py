"""`auditor ingest --kind nvos-events / ufm-rest-events` (issue #24): NVOS event tables and UFM's
REST events become the same port events as the switch syslog and UFM events.log they stand
for, mapped onto the fabric's ports; `--kind auto` tells them apart; a table read again stores
only what is new. The files are a generated scenario's, written again as an NVIDIA site keeps
them (auditor.simulate.vendor_formats.write_scenario_formats)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.ingest.plan import plan_ingest
from auditor.simulate.scenario import generate
from auditor.simulate.vendor_formats import write_scenario_formats
from auditor.store import Store

runner = CliRunner()
Key = tuple[datetime, str, str | None, int | None]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("scenario")
    generate(out, seed=5, spines=2, leaves=4, hosts_per_leaf=4)
    return out, write_scenario_formats(out)


def _ingest(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["--db", str(db), "ingest", *args])
    assert res.exit_code == 0, res.output
    return res.output


def _events(db: Path, origin: str) -> list[Key]:
    with Store(db) as store:
        rows = store.events(datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
    return sorted((r["event_at"], r["state"], r["guid"], r["port"]) for r in rows
                  if r["origin"] == origin)


def test_nvos_tables_give_the_port_events_syslog_gives(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    out, files = scenario
    syslog_db, nvos_db = tmp_path / "syslog.duckdb", tmp_path / "nvos.duckdb"
    for db in (syslog_db, nvos_db):
        _ingest(db, str(out / "topology" / "ibnetdiscover.txt"))
    _ingest(syslog_db, str(out / "logs" / "switches.log"))
    assert files["nvos_events"]
    for switch, rel in files["nvos_events"].items():
        said = _ingest(nvos_db, "--host", switch, str(out / rel))  # --kind auto
        assert "nvos-events" in said
    from_syslog, from_nvos = _events(syslog_db, "syslog"), _events(nvos_db, "nvos-events")
    assert from_syslog and all(g is not None and p is not None for _, _, g, p in from_nvos)
    # NVOS prints whole seconds: the same changes, on the same ports, to the second.
    assert sorted((t.replace(microsecond=0), s, g, p) for t, s, g, p in from_syslog) == from_nvos


def test_ufm_rest_events_are_link_changes_placed_by_guid_and_port(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    out, files = scenario
    db = tmp_path / "d.duckdb"
    _ingest(db, str(out / "topology" / "ibnetdiscover.txt"))
    _ingest(db, str(out / files["ufm_rest_events"]))
    with Store(db) as store:
        rows = [r for r in store.events(datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
                if r["origin"] == "ufm-rest-events"]
        links = {frozenset({(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)})
                 for lk in store.fabric(store.snapshot_times(datetime(2100, 1, 1, tzinfo=UTC))[0]).links}
    doc = json.loads((out / files["ufm_rest_events"]).read_text())
    assert len(rows) == len(doc) > 0
    assert {r["code"] for r in rows} == {"328", "329"}
    for r in rows:
        assert frozenset({(r["guid"], r["port"]), (r["peer_guid"], r["peer_port"])}) in links


def test_auto_tells_json_tables_from_job_lines_and_syslog(
        scenario: tuple[Path, dict[str, Any]]) -> None:
    out, files = scenario
    nvos = out / next(iter(files["nvos_events"].values()))
    ufm = out / files["ufm_rest_events"]
    plan = plan_ingest([nvos, ufm, out / "logs" / "switches.log"], "auto")
    assert plan.logs == [nvos, ufm, out / "logs" / "switches.log"] and not plan.job_files


def test_compact_json_is_recognised_too(tmp_path: Path,
                                        scenario: tuple[Path, dict[str, Any]]) -> None:
    """curl prints the REST answers on one line: `{"1": {...` is no jobs-jsonl line."""
    out, files = scenario
    for rel in (next(iter(files["nvos_events"].values())), files["ufm_rest_events"]):
        compact = tmp_path / Path(rel).name
        compact.write_text(json.dumps(json.loads((out / rel).read_text())))
        assert plan_ingest([compact], "auto").logs == [compact]


def test_reading_a_table_again_stores_only_the_new_entries(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    out, files = scenario
    switch, rel = max(files["nvos_events"].items(),
                      key=lambda kv: len(json.loads((out / kv[1]).read_text())))
    table = json.loads((out / rel).read_text())
    ids = sorted((k for k in table if k.isdigit()), key=int)
    assert len(ids) >= 4
    first = tmp_path / "first.json"
    first.write_text(json.dumps({k: table[k] for k in ids[:2]} | {"table-occupancy": 2}))
    db = tmp_path / "d.duckdb"
    _ingest(db, str(out / "topology" / "ibnetdiscover.txt"))
    _ingest(db, "--host", switch, str(first))
    assert "already ingested" in _ingest(db, "--host", switch, str(first))
    _ingest(db, "--host", switch, str(out / rel))  # the whole table: the first two again
    assert len(_events(db, "nvos-events")) == len(ids)
    with Store(db) as store:
        stored = [i for i in store.issues() if "stored already" in i["reason"]]
    assert [i["lines"] for i in stored] == [2]


def test_nvos_without_host_and_broken_json_are_one_line_errors(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    out, files = scenario
    db = tmp_path / "d.duckdb"
    table = out / next(iter(files["nvos_events"].values()))
    res = runner.invoke(app, ["--db", str(db), "ingest", str(table)])
    assert res.exit_code == 2 and "pass --host" in res.output and str(table) in res.output
    broken = tmp_path / "broken.json"
    broken.write_text(table.read_text().replace('"severity"', 'severity', 1))
    res = runner.invoke(app, ["--db", str(db), "ingest", "--kind", "nvos-events", "--host",
                              "leaf01", str(broken)])
    assert res.exit_code == 2, res.output
    line = next(n for n, text in enumerate(broken.read_text().splitlines(), 1)
                if text.strip().startswith("severity"))
    assert f"{broken}:{line}: nvos-events: not JSON" in res.output
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1
    with Store(db) as store:
        assert store.sources() == []  # nothing of the command stored


def test_ufm_event_log_with_and_without_site_both_ingest(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    out, files = scenario
    doc = json.loads((out / files["ufm_rest_events"]).read_text())
    down = next(e for e in doc if e["event_type"] == "329")
    db = tmp_path / "d.duckdb"
    _ingest(db, str(out / "topology" / "ibnetdiscover.txt"))
    log = tmp_path / "event.log"
    log.write_text(
        f"{down['timestamp']}.100 [1001] [329] WARNING [Fabric_Topology] Link "
        f"[{down['object_name']}]: {down['description']}\n"
        f"{down['timestamp']}.200 [1002] [329] WARNING Site [site-a] [Fabric_Topology] Link "
        f"[{down['object_name']}]: {down['description']}\n")
    assert "ufm-events" in _ingest(db, str(log))
    rows = _events(db, "ufm-events")
    assert len(rows) == 2 and rows[0][1:] == rows[1][1:] and rows[0][2] is not None


def test_two_switches_with_the_same_table_are_two_sources(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    """NVOS tables do not name their switch: a spine's reboot can leave two leaves with the
    same bytes. Each is its own switch's table, not one file re-ingested under another --host."""
    out, files = scenario
    switch, rel = next(iter(files["nvos_events"].items()))
    db = tmp_path / "d.duckdb"
    _ingest(db, str(out / "topology" / "ibnetdiscover.txt"))
    other = "leaf04" if switch != "leaf04" else "leaf03"
    _ingest(db, "--host", switch, str(out / rel))
    _ingest(db, "--host", other, str(out / rel))
    with Store(db) as store:
        rows = store.events(datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
    devices = {r["device"] for r in rows if r["origin"] == "nvos-events"}
    assert devices == {switch, other}


def test_a_scenario_ranks_the_same_through_nvos_tables_as_through_syslog(
        tmp_path: Path) -> None:
    """Issue #24's benchmark in small: the same scenario through its NVOS tables (and its
    db_csv runs once the ingest offers `ibdiagnet`) finds the same bad cables with the same
    false blames as through syslog and ibnetdiscover."""
    from auditor.simulate.evaluate import evaluate

    folder = tmp_path / "scenario"
    generate(folder, seed=2, spines=4, leaves=8, hosts_per_leaf=8, vendor_formats=True)
    plain, _ = evaluate(folder, tmp_path / "plain.duckdb")
    vendor, _ = evaluate(folder, tmp_path / "vendor.duckdb", vendor_formats=True)
    assert "nvos-events" in vendor.vendor_kinds and plain.vendor_kinds == []
    assert (vendor.recall, vendor.false_blames) == (plain.recall, plain.false_blames)
    assert vendor.top == plain.top and vendor.switch_suspects == plain.switch_suspects


def test_simulate_vendor_formats_lists_its_files_and_off_leaves_none(tmp_path: Path) -> None:
    on, off = tmp_path / "on", tmp_path / "off"
    res = runner.invoke(app, ["simulate", "--out", str(on), "--spines", "2", "--leaves", "4",
                              "--hosts", "2", "--vendor-formats"])
    assert res.exit_code == 0, res.output
    assert "NVIDIA formats in" in res.output
    files = json.loads((on / "truth.json").read_text())["vendor_formats"]
    listed = [r["path"] for r in files["ibdiagnet"]] + list(files["nvos_events"].values()) \
        + [files["ufm_rest_events"]]
    assert sorted(listed) == sorted(str(p.relative_to(on)) for p in (on / "vendor").rglob("*")
                                    if p.is_file())
    assert all((on / p).read_text().startswith(("#", "{", "[")) for p in listed)
    (off / "vendor").mkdir(parents=True)  # an earlier run's
    res = runner.invoke(app, ["simulate", "--out", str(off), "--spines", "2", "--leaves", "4",
                              "--hosts", "2"])
    assert res.exit_code == 0, res.output
    assert "vendor_formats" not in json.loads((off / "truth.json").read_text())
    assert not (off / "vendor").exists()
    def files_of(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and "vendor" not in p.parts and p.name != "truth.json"}

    assert files_of(on) == files_of(off)  # the same scenario, with or without the formats
    truth_on = json.loads((on / "truth.json").read_text())
    assert truth_on["scenario"].pop("vendor_formats") is True
    del truth_on["vendor_formats"]
    assert truth_on == json.loads((off / "truth.json").read_text())


def test_split_ports_zones_and_cleared_entries_reach_the_store(
        tmp_path: Path, scenario: tuple[Path, dict[str, Any]]) -> None:
    out, _ = scenario
    db = tmp_path / "d.duckdb"
    _ingest(db, str(out / "topology" / "ibnetdiscover.txt"))
    table = tmp_path / "leaf02.json"
    table.write_text(json.dumps({"last": {
        "7": {"resource": "sw3p2s1", "severity": "INFORMATIONAL",
              "text": "Interface operational state is down",
              "time-created": "2026-07-21 09:03:01 IDT"},
        "8": {"resource": "sw3p2s1", "severity": "INFORMATIONAL",
              "text": "Cleared: Interface operational state is down",
              "time-created": "2026-07-21 09:03:13 IDT"},
        "9": {"resource": "sw16p1", "severity": "INFORMATIONAL",
              "text": "Interface admin state is down",
              "time-created": "2026-07-21 06:04:00 Etc/UTC"}}, "table-occupancy": 9}))
    _ingest(db, "--host", "leaf02", str(table))
    with Store(db) as store:
        rows = [r for r in store.events(datetime(2026, 7, 21, tzinfo=UTC),
                                        datetime(2026, 7, 22, tzinfo=UTC))
                if r["origin"] == "nvos-events"]
        leaf02 = store.fabric(store.snapshot_times(datetime(2100, 1, 1, tzinfo=UTC))[0])
    guid = next(g for g, n in leaf02.nodes.items() if n.name == "leaf02")
    # sw3p2 is IB port 6; its first split half is 2*(6-1)+1 = 11 (Quantum's split rule)
    assert [(r["event_at"].isoformat(), r["state"], r["port_name"], r["port"], r["guid"])
            for r in rows] == [
        ("2026-07-21T06:03:01", "down", "sw3p2s1", 11, guid),
        ("2026-07-21T06:03:13", "up", "sw3p2s1", 11, guid),
        ("2026-07-21T06:04:00", "admin_down", "sw16p1", 31, guid)]


def test_job_lines_with_event_like_keys_stay_jobs(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"job_id": "7", "state": "FAILED", "start": "2026-11-29T00:00:00Z", '
                    '"end": "2026-11-29T01:00:00Z", "nodes": "node-001", "event_type": "x", '
                    '"severity": "high", "timestamp": "2026-11-29T01:00:00Z"}\n')
    assert plan_ingest([jobs], "auto").job_files == [jobs]


def test_the_scenarios_db_csv_runs_hold_its_fabric_and_counters(
        scenario: tuple[Path, dict[str, Any]]) -> None:
    """Every run: the ibnetdiscover capture's links with their width and speed, and a counter
    reading of every cabled port (zeros where ibqueryerrors printed none, as ibdiagnet reads
    every port), the snapshot's values where it printed some."""
    from auditor.parse.ibdiagnet import parse_ibdiagnet
    from auditor.parse.ibnetdiscover import parse_ibnetdiscover
    from auditor.parse.ibqueryerrors import parse_ibqueryerrors_table

    out, files = scenario
    truth = json.loads((out / "truth.json").read_text())
    topo = parse_ibnetdiscover((out / "topology" / "ibnetdiscover.txt").read_text())
    want = sorted((lk.a_guid, lk.a_port, lk.b_guid, lk.b_port, lk.width, lk.speed)
                  for lk in topo.links)
    owner = {p.port_guid: p.guid for p in topo.ports if p.port_guid}
    cabled = {(g, p) for lk in topo.links for g, p in ((lk.a_guid, lk.a_port),
                                                       (lk.b_guid, lk.b_port))}
    assert len(files["ibdiagnet"]) == len(truth["snapshots"])
    for run, snap in zip(files["ibdiagnet"], truth["snapshots"], strict=True):
        got = parse_ibdiagnet((out / run["path"]).read_text())
        assert got.topology is not None and got.counters is not None
        assert got.run_at == datetime.fromisoformat(snap["at"])
        links = sorted((lk.a_guid, lk.a_port, lk.b_guid, lk.b_port, lk.width, lk.speed)
                       for lk in got.topology.links)
        assert links == want
        read = {(g, p): {} for g, p, _, _ in got.counters.rows()}
        for g, p, name, value in got.counters.rows():
            read[(g, p)][name] = value
        assert set(read) == cabled
        printed = parse_ibqueryerrors_table((out / snap["file"]).read_text())
        for g, p, name, value in printed.rows():
            if p is not None:
                assert read[(owner.get(g, g), p)][name] == value
