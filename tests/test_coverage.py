"""Evidence coverage (issue #15): every `suspects` and `report` says what it could not see.

Generated scenarios in the real formats, ingested as a site would, then changed the way real
sites lose evidence: a switch's syslog forwarding is lost (the simulator's --lost-switch-logs),
one switch's clock runs 40 s ahead (its lines shifted in the syslog file itself), the job logs
are never collected, the hosts are never read and then one is.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from auditor.analyse.correlate import gather
from auditor.analyse.coverage import blind_spots
from auditor.cli import app
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate
from auditor.store import Store

runner = CliRunner()
START = datetime(2026, 11, 20, tzinfo=UTC)
SINCE, UNTIL = START.replace(tzinfo=None), (START + timedelta(days=1)).replace(tzinfo=None)


def _scenario(root: Path, **options: object) -> Path:
    scen = root / "scenario"
    generate(scen, seed=5, spines=4, leaves=8, hosts_per_leaf=8, start=START,
             **options)  # type: ignore[arg-type]
    return scen


def _coverage(db: Path) -> dict[str, object]:
    result = runner.invoke(app, ["--db", str(db), "suspects", "--since", "24h", "--until",
                                 "2026-11-21T00:00:00Z", "--format", "json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)["coverage"]
    return data


def test_lost_switch_logs_are_named_and_no_other(tmp_path: Path) -> None:
    scen = _scenario(tmp_path, lost_switch_logs=2)
    truth = load_scenario(scen, tmp_path / "a.duckdb")
    lost = sorted(truth["lost_switch_logs"])
    assert len(lost) == 2
    cov = _coverage(tmp_path / "a.duckdb")
    assert cov["switches_log_missing"] == lost
    assert cov["switches_log_incomplete"] == []
    assert cov["clock_off_s"] == {}  # the simulator's skews are within 2 s
    assert any(n.startswith(f"switch syslog missing from {lost[0]}, {lost[1]}")
               for n in cov["notes"])  # type: ignore[attr-defined]


def test_nothing_is_reported_missing_when_every_log_is_there(tmp_path: Path) -> None:
    scen = _scenario(tmp_path)
    load_scenario(scen, tmp_path / "a.duckdb")
    cov = _coverage(tmp_path / "a.duckdb")
    assert (cov["switches_log_missing"], cov["switches_log_incomplete"]) == ([], [])
    assert cov["jobs_without_logs"] == [] and cov["jobs_failed"] > 0  # type: ignore[operator]


def test_a_switch_clock_40_s_ahead_and_only_that_one(tmp_path: Path) -> None:
    scen = _scenario(tmp_path)
    log = scen / "logs" / "switches.log"
    # the switch that logged the most link changes (its peers are switches: a spine)
    changes = re.findall(r"^\S+ (spine\d+) .*changed state", log.read_text(), re.MULTILINE)
    off = max(sorted(set(changes)), key=changes.count)
    stamp = re.compile(rf"^(\S+) ({off}) ")
    shifted = 0
    lines = []
    for line in log.read_text().splitlines(keepends=True):
        m = stamp.match(line)
        if m:
            at = datetime.fromisoformat(m[1]) + timedelta(seconds=40)
            line = at.isoformat(timespec="microseconds") + line[m.end(1):]
            shifted += 1
        lines.append(line)
    assert shifted > 3
    log.write_text("".join(lines))
    load_scenario(scen, tmp_path / "a.duckdb")
    cov = _coverage(tmp_path / "a.duckdb")
    assert list(cov["clock_off_s"]) == [off]  # type: ignore[call-overload]
    assert 37 <= cov["clock_off_s"][off] <= 43  # type: ignore[index]
    assert any(re.match(rf"clock of {off} is (3[7-9]|4[0-3]) s ahead of its peers", n)
               for n in cov["notes"])  # type: ignore[attr-defined]


def test_failed_jobs_without_logs_and_hosts_never_read(tmp_path: Path) -> None:
    scen = _scenario(tmp_path)
    shutil.rmtree(scen / "jobs" / "logs")
    (scen / "jobs" / "logs").mkdir()
    load_scenario(scen, tmp_path / "a.duckdb")
    db = tmp_path / "a.duckdb"
    with Store(db) as store:
        ev = gather(store, SINCE, UNTIL)
        before = blind_spots(store, ev)
        store.add_device_status(UNTIL - timedelta(hours=1), "node-001", "host", "ok", "")
        after = blind_spots(store, ev)
    assert before.jobs_failed > 0
    assert len(before.jobs_without_logs) == before.jobs_failed
    assert before.hosts == 64 and len(before.hosts_never_read) == 64
    assert after.hosts_never_read == before.hosts_never_read[1:]
    assert f"{before.jobs_failed} of {before.jobs_failed} failed jobs have no job log" in \
        " ".join(before.notes)


def test_the_table_and_the_report_say_it_too(tmp_path: Path) -> None:
    scen = _scenario(tmp_path, lost_switch_logs=1)
    truth = load_scenario(scen, tmp_path / "a.duckdb")
    (lost,) = truth["lost_switch_logs"]
    db = str(tmp_path / "a.duckdb")
    table = runner.invoke(app, ["--db", db, "suspects", "--since", "24h", "--until",
                                "2026-11-21T00:00:00Z"])
    assert table.exit_code == 0
    assert f"could not see: switch syslog missing from {lost}:" in table.stdout
    out = tmp_path / "report"
    result = runner.invoke(app, ["--db", db, "report", "--since", "24h", "--until",
                                 "2026-11-21T00:00:00Z", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "report.json").read_text())
    assert any(lost in n for n in doc["coverage"]["blind_spots"])
    page = (out / "report.html").read_text()
    assert "What this report could not see" in page
    assert f"switch syslog missing from {lost}" in page


def test_nvos_tables_are_the_switches_own_logs_and_the_sources_are_named(tmp_path: Path) -> None:
    """Issue #24: a fabric known through NVOS event tables: a switch whose table is missing is
    named as the one whose syslog is, and the notes say which sources the window had."""
    scen = _scenario(tmp_path, lost_switch_logs=2, vendor_formats=True)
    truth = load_scenario(scen, tmp_path / "a.duckdb", vendor_formats=True)
    assert "nvos-events" in truth["vendor_kinds"]
    lost = sorted(truth["lost_switch_logs"])
    cov = _coverage(tmp_path / "a.duckdb")
    assert cov["switches_log_missing"] == lost
    sources = cov["event_sources"]
    assert sources["syslog"] == sources["ufm-events"] == sources["ufm-rest-events"] == 0  # type: ignore[index]
    assert sources["nvos-events"] > 0  # type: ignore[index]
    tables = len(truth["vendor_formats"]["nvos_events"])  # switches whose table has events
    assert cov["nvos_switches"] == tables and not set(lost) & set(truth["vendor_formats"][
        "nvos_events"])
    notes = " | ".join(cov["notes"])  # type: ignore[arg-type]
    assert f"NVOS event table missing from {lost[0]}, {lost[1]}" in notes
    assert (f"no port events from switch syslog, UFM event.log or UFM REST events (read: NVOS "
            f"event tables {sources['nvos-events']} ({tables} switches))") in notes  # type: ignore[index]
    assert "no switch syslog" not in notes


def test_ufm_rest_alone_is_named_and_syslog_alone_adds_no_note(tmp_path: Path) -> None:
    scen = _scenario(tmp_path, vendor_formats=True)
    truth = load_scenario(scen, tmp_path / "syslog.duckdb")
    plain = _coverage(tmp_path / "syslog.duckdb")
    assert plain["event_sources"]["syslog"] > 0  # type: ignore[index]
    assert not any("port events" in n or "NVOS" in n for n in plain["notes"])  # type: ignore[attr-defined]
    db = str(tmp_path / "ufm.duckdb")
    topology = scen / "topology" / "ibnetdiscover.txt"
    assert runner.invoke(app, ["--db", db, "ingest", "--at", truth["topology_at"],
                               str(topology)]).exit_code == 0
    assert runner.invoke(app, ["--db", db, "ingest", str(
        scen / truth["vendor_formats"]["ufm_rest_events"])]).exit_code == 0
    notes = _coverage(tmp_path / "ufm.duckdb")["notes"]
    assert "no switch syslog or NVOS event table in the window: link changes come only from " \
        "UFM REST events, opensm, SNMP, counters and sweeps" in notes  # type: ignore[operator]
    assert any(n.startswith("no port events from switch syslog, NVOS event tables or UFM "
                            "event.log (read: UFM REST events ")
               for n in notes)  # type: ignore[attr-defined]
    out = tmp_path / "report"
    result = runner.invoke(app, ["--db", db, "report", "--since", "24h", "--until",
                                 "2026-11-21T00:00:00Z", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "report.json").read_text())
    assert doc["coverage"]["event_sources"]["ufm-rest-events"] > 0
    assert doc["coverage"]["event_sources"]["syslog"] == 0
    assert any("UFM REST events" in n for n in doc["coverage"]["blind_spots"])
