"""The nightly cron run for real: separate processes, a lock two runs fight over, exit codes,
a log file, quiet output without a terminal, retention on files with old mtimes, and the
Prometheus textfile."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate

UNTIL = "2026-11-30T00:00:00Z"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    generate(root / "scenario", seed=3, spines=4, leaves=8, hosts_per_leaf=8)
    load_scenario(root / "scenario", root / "auditor.duckdb")
    return root


def config(folder: Path, db: Path) -> Path:
    cfg = folder / "auditor.toml"
    cfg.write_text(f'[store]\ndb = "{db}"\ncaptures = "{folder / "captures"}"\n'
                   f'[nightly]\nreports = "{folder / "reports"}"\n'
                   f'log_file = "{folder / "nightly.log"}"\nsince = "24h"\n'
                   "keep_captures_days = 7\nkeep_reports_days = 30\n")
    return cfg


def nightly(cfg: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", "--config", str(cfg), "nightly",
                           *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)


def copy_db(site: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "auditor.duckdb"
    db.write_bytes((site / "auditor.duckdb").read_bytes())
    return db


def test_new_suspects_then_nothing_new_then_failed_sources(site: Path, tmp_path: Path) -> None:
    cfg = config(tmp_path, copy_db(site, tmp_path))
    first = nightly(cfg, "--no-sweep", "--until", UNTIL)
    assert first.returncode == 10, first.stderr  # new suspects
    assert first.stdout == ""  # cron: quiet without a terminal
    (folder,) = (tmp_path / "reports").iterdir()
    assert {p.name for p in folder.iterdir()} == {"replacements.csv", "report.html",
                                                  "report.json"}
    assert "report written" in (tmp_path / "nightly.log").read_text()
    # What a technician works from: both ends, faceplate labels, locations, part, action.
    import csv

    rows = list(csv.DictReader((folder / "replacements.csv").open()))
    cable = next(r for r in rows if r["verdict"] == "cable")
    for column in ("a_name", "a_port_label", "a_rack", "a_u", "b_name", "b_port_label",
                   "b_rack", "b_u", "vendor", "part_number", "serial_number", "length",
                   "action", "first_flap"):
        assert cable[column], column
    assert "ticket" in cable and cable["ticket"] == ""
    second = nightly(cfg, "--no-sweep", "--until", UNTIL)
    assert second.returncode == 0, second.stderr  # same suspects as last night: nothing new
    # No IB hardware and no simulator here: the sweep's tools fail, the report is still written.
    third = nightly(cfg, "--until", UNTIL)
    assert third.returncode == 20, third.stderr
    assert len(list((tmp_path / "reports").iterdir())) == 3


def test_second_run_exits_at_once_while_the_first_holds_the_lock(site: Path,
                                                                  tmp_path: Path) -> None:
    db = copy_db(site, tmp_path)
    cfg = config(tmp_path, db)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from auditor.ops.lock import RunLock\n"
         f"with RunLock.for_db(Path({str(db)!r})):\n"
         "    sys.stdout.write('locked\\n'); sys.stdout.flush(); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        res = nightly(cfg, "--no-sweep", "--until", UNTIL, timeout=30)
        assert res.returncode == 75
        assert time.monotonic() - start < 15
        assert "lock" in res.stderr and str(holder.pid) in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    finally:
        holder.kill()
        holder.wait()
    assert nightly(cfg, "--no-sweep", "--until", UNTIL).returncode == 10


def test_retention_removes_only_old_captures_and_reports(site: Path, tmp_path: Path) -> None:
    db = copy_db(site, tmp_path)
    cfg = config(tmp_path, db)
    old = time.time() - 40 * 86400
    captures = tmp_path / "captures"
    for name, when in (("20261001T020000Z", old), ("20261129T020000Z", time.time())):
        (captures / name).mkdir(parents=True)
        (captures / name / "iblinkinfo.txt").write_text("x")
        os.utime(captures / name / "iblinkinfo.txt", (when, when))
        os.utime(captures / name, (when, when))
    reports = tmp_path / "reports"
    (reports / "2026-10-01T020000Z").mkdir(parents=True)
    (reports / "notes.txt").write_text("keep me")
    assert nightly(cfg, "--no-sweep", "--until", UNTIL).returncode == 10
    assert sorted(p.name for p in captures.iterdir()) == ["20261129T020000Z"]
    assert not (reports / "2026-10-01T020000Z").exists()
    assert (reports / "notes.txt").read_text() == "keep me"
    assert db.exists()


def test_metrics_textfile(site: Path, tmp_path: Path) -> None:
    db = copy_db(site, tmp_path)
    prom = tmp_path / "textfile" / "auditor.prom"
    res = subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), "metrics",
                          "--textfile", str(prom), "--since", "24h", "--until", UNTIL],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    text = prom.read_text()
    for name in ("auditor_link_flaps", "auditor_suspect_score", "auditor_sweep_devices",
                 "auditor_last_good_sweep_timestamp_seconds"):
        assert f"# TYPE {name} gauge" in text
    assert 'component="switch"' in text
    samples = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert samples
    for ln in samples:
        float(ln.rsplit(" ", 1)[1])  # every sample ends in its value
    assert not list(prom.parent.glob(".*.tmp"))
