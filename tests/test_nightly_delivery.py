"""Issue 11, item 13: the nightly run when something breaks. The alert about new suspects must
not be lost (a failed delivery leaves them new for the next run), a failed source must show
even on a night with new suspects, an unreachable management host must not cost the switches
and hosts, and a database another process holds is logged and has its own exit code.

Real processes as cron runs them (`python -m auditor ... nightly`), real DuckDB files.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate

UNTIL = "2026-11-30T00:00:00Z"
NEW_AND_FAILED = 30  # auditor.errors.EXIT_NEW_AND_FAILED
BUSY = 3  # auditor.errors.DatabaseBusyError


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    generate(root / "scenario", seed=3, spines=4, leaves=8, hosts_per_leaf=8)
    load_scenario(root / "scenario", root / "auditor.duckdb")
    return root


def setup(site: Path, folder: Path, extra: str = "") -> Path:
    db = folder / "auditor.duckdb"
    db.write_bytes((site / "auditor.duckdb").read_bytes())
    cfg = folder / "auditor.toml"
    cfg.write_text(f'[store]\ndb = "{db}"\ncaptures = "{folder / "captures"}"\n'
                   f'[nightly]\nreports = "{folder / "reports"}"\n'
                   f'log_file = "{folder / "nightly.log"}"\n' + extra)
    return cfg


def auditor(*args: str, env: dict[str, str] | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("AUDITOR_DB", "AUDITOR_CONFIG")}
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
                          env={**base, **(env or {})})


def nightly(cfg: Path, *args: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return auditor("--config", str(cfg), "nightly", "--until", UNTIL, *args, env=env)


def test_unwritable_metrics_keeps_the_suspects_new(site: Path, tmp_path: Path) -> None:
    cfg = setup(site, tmp_path)
    (tmp_path / "textfile").write_text("a file where a folder should be")
    bad = tmp_path / "textfile" / "auditor.prom"
    first = nightly(cfg, "--no-sweep", "--metrics", str(bad))
    assert first.returncode == 2, first.stderr
    lines = first.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0], first.stderr
    assert "Traceback" not in first.stderr
    log = (tmp_path / "nightly.log").read_text()
    assert "ERROR" in log and str(bad) in log
    # The report was written, but the alert never left: the same suspects are still new.
    good = tmp_path / "prom" / "auditor.prom"
    second = nightly(cfg, "--no-sweep", "--metrics", str(good))
    assert second.returncode == 10, second.stderr
    assert good.is_file()
    third = nightly(cfg, "--no-sweep", "--metrics", str(good))
    assert third.returncode == 0, third.stderr  # delivered once: not new any more


def test_new_suspects_and_failed_sources_both_show(site: Path, tmp_path: Path) -> None:
    cfg = setup(site, tmp_path)
    # No IB hardware here: the sweep's tools fail; the report still has new suspects.
    res = nightly(cfg)
    assert res.returncode == NEW_AND_FAILED, res.stderr
    assert "source failed" in (tmp_path / "nightly.log").read_text()


def closed_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_unreachable_management_host_still_reads_switches_hosts_and_logs(
        site: Path, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    syslog = tmp_path / "switches.log"
    syslog.write_text(
        "2026-11-29T22:00:00.000000+00:00 leaf01 mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/3 "
        "changed state to DOWN\n"
        "2026-11-29T22:00:20.000000+00:00 leaf01 mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/3 "
        "changed state to UP\n")
    cfg = setup(site, tmp_path, (
        f'[sweep]\nhost = "127.0.0.1"\nport = {closed_port()}\nuser = "auditor"\n'
        f'known_hosts = "{known}"\n'
        f'[logs]\npaths = ["{syslog}"]\n'
        f'[hosts]\nnames = ["127.0.0.1"]\nuser = "auditor"\nport = {closed_port()}\n'
        f'known_hosts = "{known}"\ntimeout_s = 5\n'
        '[[switches]]\nname = "leaf01"\nhost = "127.0.0.1"\n'
        f'snmp = {{ community = "env:AUDITOR_TEST_COMMUNITY", port = '
        f'{closed_port(socket.SOCK_DGRAM)}, timeout_s = 0.5, retries = 0 }}\n'))
    res = nightly(cfg, env={"AUDITOR_TEST_COMMUNITY": "public"})
    assert res.returncode == NEW_AND_FAILED, res.stderr
    log = (tmp_path / "nightly.log").read_text()
    assert "127.0.0.1" in log and "connection refused" in log
    devices = auditor("--config", str(cfg), "devices", "--format", "json")
    assert devices.returncode == 0, devices.stderr
    seen = {(d["device"], d["collector"]) for d in json.loads(devices.stdout)}
    assert ("leaf01", "snmp") in seen  # polled (and timed out), not skipped
    assert ("127.0.0.1", "host") in seen
    sources = auditor("--config", str(cfg), "sources", "--format", "json")
    assert str(syslog) in {s["path"] for s in json.loads(sources.stdout)}


HOLD = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


def test_database_held_by_another_process_is_logged(site: Path, tmp_path: Path) -> None:
    cfg = setup(site, tmp_path)
    cfg.write_text(cfg.read_text().replace("[store]\n", "[store]\nbusy_timeout_s = 1\n"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "auditor.duckdb")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        for args in (["--no-sweep"], []):
            res = nightly(cfg, *args)
            assert res.returncode == BUSY, res.stderr
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1 and "database busy" in lines[0], res.stderr
        log = (tmp_path / "nightly.log").read_text()
        assert log.count("database busy") == 2, log
        assert f"pid {holder.pid}" in log
    finally:
        holder.kill()
        holder.wait(timeout=10)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())
