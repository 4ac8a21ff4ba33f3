"""Port events into flaps, end to end through the CLI: a flap written into a syslog file, one in
UFM's events.log, one made on a real SNMP agent, and one made on the ibsim fabric each show in
`auditor flaps` with the right ends and duration; bad log input is counted, not fatal."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.demo import build_demo
from auditor.ingest.captures import ingest_files
from auditor.simulate.ibsim import FatTree, IbSim, write_net_file
from auditor.store import Store
from tests.conftest import need
from tests.ibsim_counters import inject_counter
from tests.snmp_agent.launcher import Snmpd, unavailable_reason

runner = CliRunner()
# Demo fabric (auditor/demo_data): leaf02 port 6 is cabled to spine02 port 2.
LEAF02 = "0xb8599f0300200002"
SPINE02 = "0xb8599f0300100002"


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    db = tmp_path / "demo.duckdb"
    build_demo(db)
    return db


def cli(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def flaps_json(db: Path, since: str = "30d", until: str = "2026-12-01T00:00:00Z") -> list[dict]:
    return json.loads(cli(db, "flaps", "--since", since, "--until", until, "--format", "json"))


def link_flaps(rows: list[dict], *ends: tuple[str, int]) -> list[dict]:
    return [r for r in rows if {(e["name"], e["port"]) for e in r["ends"]} == set(ends)]


ONYX = """\
2026-11-30T06:28:57.478325+00:00 leaf02 mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/6 changed state to DOWN
2026-11-30T06:28:57.612000+00:00 spine02 mgmtd[3310]: [mgmtd.NOTICE]: Interface IB1/2 changed state to DOWN
2026-11-30T06:29:18.112000+00:00 leaf02 mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/6 changed state to UP
2026-11-30T06:29:18.412000+00:00 spine02 mgmtd[3310]: [mgmtd.NOTICE]: Interface IB1/2 changed state to UP
"""


def test_syslog_flap_has_both_ends_and_duration(tmp_path: Path, demo_db: Path) -> None:
    log = tmp_path / "switches.log"
    log.write_text(ONYX)
    cli(demo_db, "ingest", str(log))
    (flap,) = link_flaps(flaps_json(demo_db), ("leaf02", 6), ("spine02", 2))
    assert flap["down_at"] == "2026-11-30T06:28:57.478325Z"
    assert flap["up_at"] == "2026-11-30T06:29:18.412000Z"
    # Each end measures its own flap on its own clock (leaf 20.634 s, spine 20.800 s); the
    # span from the leaf's down to the spine's up would add the clock skew between them.
    assert flap["duration_s"] == pytest.approx(20.8, abs=0.001)
    assert flap["sources"] == ["syslog"]
    assert {e["guid"] for e in flap["ends"]} == {LEAF02, SPINE02}


def test_rfc3164_rotated_gz_files_in_any_order_no_duplicates(tmp_path: Path,
                                                              demo_db: Path) -> None:
    older = tmp_path / "syslog.1.gz"
    newer = tmp_path / "syslog"
    with gzip.open(older, "wt") as fh:
        fh.write("Nov 30 06:28:57 leaf02 mgmtd[4128]: [mgmtd.NOTICE]: "
                 "Interface IB1/6 changed state to DOWN\n")
    newer.write_text(
        "Nov 30 06:28:57 leaf02 mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/6 changed state to DOWN\n"
        "Nov 30 06:29:40 leaf02 mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/6 changed state to UP\n")
    stamp = datetime(2026, 11, 30, 7, 0, tzinfo=UTC).timestamp()
    os.utime(older, (stamp, stamp))
    os.utime(newer, (stamp, stamp))
    cli(demo_db, "ingest", "--kind", "syslog", str(newer), str(older))
    events = json.loads(cli(demo_db, "events", "--since", "1d", "--until",
                            "2026-11-30T12:00:00Z", "--format", "json"))
    assert [(e["state"], e["port"]) for e in events if e["origin"] == "syslog"] == [
        ("down", 6), ("up", 6)]
    (flap,) = link_flaps(flaps_json(demo_db), ("leaf02", 6), ("spine02", 2))
    assert flap["duration_s"] == 43.0


def test_ufm_events_name_both_ends_and_serial(tmp_path: Path, demo_db: Path) -> None:
    log = tmp_path / "events.log"
    log.write_text(
        "2026-11-29 08:10:00.100 [665916] [329] CRITICAL [Maintenance] Link [leaf02 6]: "
        f"Link went down: (Switch:leaf02:1/6){LEAF02[2:]}:6 - "
        f"(Switch:spine02:1/2){SPINE02[2:]}:2, cable S/N: MT2330FT09118\n"
        "2026-11-29 08:10:42.600 [665917] [328] INFO [Maintenance] Link [leaf02 6]: "
        f"Link is up: (Switch:leaf02:1/6){LEAF02[2:]}:6 - "
        f"(Switch:spine02:1/2){SPINE02[2:]}:2\n")
    cli(demo_db, "ingest", "--kind", "ufm-events", str(log))
    (flap,) = link_flaps(flaps_json(demo_db), ("leaf02", 6), ("spine02", 2))
    assert flap["duration_s"] == pytest.approx(42.5)
    assert flap["sources"] == ["ufm-events"]


def auditor(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_bad_log_lines_are_counted_and_the_rest_kept(tmp_path: Path, demo_db: Path) -> None:
    log = tmp_path / "messy.log"
    log.write_bytes(
        ONYX.encode()
        + b"\xff\xfe not a log line at all\n"
        + b"2026-11-30T06:40:00+00:00 leaf99 mgmtd[1]: Interface IB1/3 changed state to DOWN\n"
        + b"2031-01-01T00:00:00+00:00 leaf02 mgmtd[1]: Interface IB1/6 changed state to DOWN\n"
        + b"2026-11-30T06:41:00+00:00 leaf02 mgmtd[1]: Interface IB1/6 changed st")
    res = auditor(demo_db, "ingest", str(log))
    assert res.returncode == 0, res.stderr
    assert "warning:" in res.stderr
    sources = json.loads(auditor(demo_db, "sources", "--format", "json").stdout)
    (src,) = [s for s in sources if s["path"] == str(log)]
    reasons = {i["reason"]: i["lines"] for i in src["issues"]}
    assert reasons == {
        "no recognised envelope (garbage line)": 1,
        "half-written last line (no line terminator)": 1,
        "time in the future (switch clock skewed?)": 1,
        "event on an unmapped port: unknown device (not in the fabric graph)": 1,
    }
    garbage = next(i for i in src["issues"] if i["reason"].startswith("no recognised"))
    assert garbage["first_line_no"] == 5
    assert len(link_flaps(flaps_json(demo_db), ("leaf02", 6), ("spine02", 2))) == 1
    again = auditor(demo_db, "ingest", "--format", "json", str(log))
    assert json.loads(again.stdout)[0]["status"] == "already ingested"


def test_unreadable_log_is_exit_2_and_nothing_stored(tmp_path: Path, demo_db: Path) -> None:
    good = tmp_path / "good.log"
    good.write_text(ONYX)
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 this is not really gzip")
    res = auditor(demo_db, "ingest", "--kind", "syslog", str(good), str(bad))
    assert res.returncode == 2
    assert res.stderr.startswith(f"error: {bad}")
    assert len(res.stderr.strip().splitlines()) == 1
    assert link_flaps(flaps_json(demo_db), ("leaf02", 6), ("spine02", 2)) == []


@pytest.mark.snmp
def test_flap_on_a_real_snmp_agent(tmp_path: Path, demo_db: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    need(unavailable_reason())
    secret = "s3cret-Community-Zz9"
    monkeypatch.setenv("AUDITOR_TEST_COMMUNITY", secret)
    cfg = tmp_path / "auditor.toml"
    with Snmpd(tmp_path / "snmpd", communities=(secret,)) as agent:
        cfg.write_text(
            "[[switches]]\nname = \"leaf02\"\nhost = \"127.0.0.1\"\n"
            f"snmp = {{ port = {agent.port}, community = \"env:AUDITOR_TEST_COMMUNITY\" }}\n"
            "[[switches]]\nname = \"leaf03\"\nhost = \"127.0.0.1\"\n"
            "snmp = { port = 9, community = \"env:AUDITOR_TEST_COMMUNITY\", timeout_s = 0.3,"
            " retries = 0 }\n")
        base = ["--db", str(demo_db), "--config", str(cfg), "snmp", "poll", "--format", "json"]
        first = runner.invoke(app, base)
        assert first.exit_code == 1  # leaf03 has no agent: reported, the poll goes on
        statuses = {r["device"]: r["status"] for r in json.loads(first.stdout)}
        assert statuses == {"leaf02": "ok", "leaf03": "timeout"}
        went_down = time.time()
        agent.set_port(6, oper=2, changed_at=went_down)
        runner.invoke(app, base)
        came_back = time.time() + 0.5
        time.sleep(0.6)
        agent.set_port(6, oper=1, changed_at=came_back)
        runner.invoke(app, base)
    until = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    (flap,) = link_flaps(flaps_json(demo_db, "1h", until), ("leaf02", 6), ("spine02", 2))
    assert flap["sources"] == ["snmp"]
    assert flap["duration_s"] == pytest.approx(came_back - went_down, abs=0.3)
    devices = cli(demo_db, "devices", "--format", "json")
    assert secret not in devices and secret not in first.stdout
    with Store(demo_db, read_only=True) as store:
        dump = json.dumps([store.sources(), store.device_status(), store.issues()], default=str)
    assert secret not in dump


@pytest.mark.ibsim
@pytest.mark.usefixtures("need_ibsim")
def test_flap_on_the_ibsim_fabric_seen_by_sweeps_and_link_downed(tmp_path: Path) -> None:
    tree = FatTree(spines=2, leaves=2, hosts_per_leaf=2)
    t0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
    uplink = tree.uplink_port(1)
    db = tmp_path / "a.duckdb"

    def sweep(sim: IbSim, at: datetime, name: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        files = []
        for tool in (["iblinkinfo"], ["ibqueryerrors", "--skip-sl"]):
            out = sim.run(*tool)
            path = folder / f"{tool[0]}.txt"
            path.write_text(out.stdout)
            files.append(path)
        with Store(db) as store:
            ingest_files(store, files, at=at)

    with IbSim(write_net_file(tree), tmp_path / "sim") as sim:
        sim.opensm_once()
        sweep(sim, t0, "t0")
        sim.unlink("leaf02", uplink)
        # ibsim does not count link-downs itself; the real switch would, on both ends.
        inject_counter(sim, "leaf02", uplink, "LinkDownedCounter", 1)
        inject_counter(sim, "spine01", 2, "LinkDownedCounter", 1)
        sweep(sim, t0 + timedelta(minutes=1), "t1")
        sim.relink("leaf02", uplink)
        sim.opensm_once()
        sweep(sim, t0 + timedelta(minutes=3), "t2")
    (flap,) = link_flaps(flaps_json(db, "1h", (t0 + timedelta(hours=1)).isoformat()),
                         ("leaf02", uplink), ("spine01", 2))
    assert flap["down_at"] == "2026-11-30T06:01:00Z"
    assert flap["up_at"] == "2026-11-30T06:03:00Z"
    assert flap["duration_s"] == 120.0
    assert flap["approximate"] is True
    assert flap["sources"] == ["counters", "topology"]


def test_sweep_ingests_the_configured_log_files(tmp_path: Path, demo_db: Path) -> None:
    from auditor.collect.runner import LocalRunner
    from auditor.config import load
    from auditor.ops.sweep import sweep

    logs = tmp_path / "switches"
    logs.mkdir()
    (logs / "leaf02.log").write_text(ONYX)
    (logs / "broken.log.gz").write_bytes(b"\x1f\x8b\x08\x00 not gzip")
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(f'[logs]\npaths = ["{logs}/*.log", "{logs}/*.gz"]\n')
    settings = load(cfg, demo_db)
    with Store(demo_db) as store:
        # No fabric tools answer here (no HCA, no simulator): those steps fail, the logs are
        # still read, and the unreadable one is reported without stopping the rest.
        result = sweep(store, settings, LocalRunner(timeout_s=30),
                       at=datetime(2026, 11, 30, 7, tzinfo=UTC))
    failed = {c["command"] for c in result.failed}
    assert f"log {logs / 'broken.log.gz'}" in failed
    assert any(r.path == str(logs / "leaf02.log") for r in result.ingested)
    assert len(link_flaps(flaps_json(demo_db), ("leaf02", 6), ("spine02", 2))) == 1
