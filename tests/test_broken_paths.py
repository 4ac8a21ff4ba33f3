"""Issue 11, item 12: output paths and database files that are not what they should be.

Everything goes through the real command line (typer's CliRunner on `auditor.cli.app`) into
real DuckDB files; a database held by another process is held by a real second process.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner, Result

from auditor.cli import app
from auditor.demo import DATA
from auditor.store import Store

SNAP = DATA / "sweep-2026-11-29"
runner = CliRunner()


def invoke(*args: str) -> Result:
    env = {k: v for k, v in os.environ.items() if k not in ("AUDITOR_DB", "AUDITOR_CONFIG")}
    return runner.invoke(app, list(args), env=env)


def one_error_line(res: Result, *needles: str) -> str:
    """The command failed with exit 2 and exactly one line on stderr holding every needle."""
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def filled(db: Path) -> Path:
    res = invoke("--db", str(db), "ingest", "--at", "2026-11-29T02:00:00Z",
                 str(SNAP / "ibnetdiscover.txt"), str(SNAP / "iblinkinfo.txt"))
    assert res.exit_code == 0, res.output
    return db


# -- report --out ---------------------------------------------------------------------------


def test_report_out_onto_a_file(filled: Path, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    res = invoke("--db", str(filled), "report", "--out", str(target))
    assert res.exit_code == 2
    one_error_line(res, str(target), "not a folder")
    assert target.read_text() == "mine"


def test_report_out_under_a_file(filled: Path, tmp_path: Path) -> None:
    # A missing parent that cannot be made: one of the parents is a file.
    (tmp_path / "notes.txt").write_text("mine")
    target = tmp_path / "notes.txt" / "reports" / "today"
    res = invoke("--db", str(filled), "report", "--out", str(target))
    assert res.exit_code == 2
    one_error_line(res, str(target))


def test_report_out_in_a_folder_nobody_may_write(filled: Path) -> None:
    # Root writes anywhere a mode allows, but not into /proc.
    target = Path("/proc/auditor-report")
    res = invoke("--db", str(filled), "report", "--out", str(target))
    assert res.exit_code == 2
    one_error_line(res, str(target))


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores a folder's mode bits")
def test_report_out_in_a_read_only_folder(filled: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        res = invoke("--db", str(filled), "report", "--out", str(folder / "today"))
    finally:
        folder.chmod(0o755)
    assert res.exit_code == 2
    one_error_line(res, str(folder / "today"), "permission denied")


# -- a database from a newer auditor ----------------------------------------------------------


def test_newer_schema_is_refused_and_left_alone(filled: Path) -> None:
    with duckdb.connect(str(filled)) as con:
        con.execute("insert into schema_version values (?, now())",
                    [Store.latest_version() + 1])
    before = filled.read_bytes()
    for args in (["topology"], ["ingest", str(SNAP / "ibqueryerrors.txt")],
                 ["replaced", "--link", "x:1", "--part", "cable", "--ticket", "T1"]):
        res = invoke("--db", str(filled), *args)
        assert res.exit_code == 2, (args, res.output)
        one_error_line(res, str(filled), "newer auditor")
    assert filled.read_bytes() == before


# -- not a DuckDB file ---------------------------------------------------------------------------


def test_sqlite_file_is_not_a_duckdb_database(tmp_path: Path) -> None:
    path = tmp_path / "inventory.db"
    with sqlite3.connect(path) as con:
        con.execute("create table racks (name text)")
    before = path.read_bytes()
    home = tmp_path / "home"  # where DuckDB would keep a downloaded extension
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("AUDITOR_DB", None)
    for args in (["topology"], ["ingest", str(SNAP / "ibnetdiscover.txt")]):
        res = runner.invoke(app, ["--db", str(path), *args], env=env)
        assert res.exit_code == 2, res.output
        one_error_line(res, str(path), "not a DuckDB database")
    assert path.read_bytes() == before
    assert not (home / ".duckdb").exists()


def test_garbage_file_is_not_a_duckdb_database(tmp_path: Path) -> None:
    path = tmp_path / "auditor.duckdb"
    path.write_bytes(b"\x00garbage" * 1000)
    res = invoke("--db", str(path), "topology")
    assert res.exit_code == 2
    one_error_line(res, str(path), "not a DuckDB database")


# -- a database another process holds -------------------------------------------------------------

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
if float(sys.argv[2]) > 0:
    time.sleep(float(sys.argv[2]))
else:
    sys.stdin.read()
con.close()
print("released", flush=True)
time.sleep(60)
"""


def hold(db: Path, seconds: float = 0.0) -> subprocess.Popen[str]:
    """A second process that opens `db` for writing (DuckDB's exclusive file lock)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(db), str(seconds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def holder_of(filled: Path) -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def config(tmp_path: Path, busy_s: float) -> Path:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(f"[store]\nbusy_timeout_s = {busy_s}\n")
    return cfg


def test_busy_database_waits_then_exits_with_the_busy_code(
        filled: Path, tmp_path: Path, holder_of: list[subprocess.Popen[str]]) -> None:
    holder_of.append(hold(filled))
    cfg = config(tmp_path, 1.5)
    for args in (["topology"], ["ingest", str(SNAP / "ibqueryerrors.txt")]):
        start = time.monotonic()
        res = invoke("--config", str(cfg), "--db", str(filled), *args)
        took = time.monotonic() - start
        assert res.exit_code == 3, res.output  # auditor.errors.DatabaseBusyError
        line = one_error_line(res, str(filled), "database busy", "1.5 s")
        assert f"pid {holder_of[0].pid}" in line
        assert 1.5 <= took < 10, took


def test_busy_database_is_used_once_the_holder_lets_go(
        filled: Path, tmp_path: Path, holder_of: list[subprocess.Popen[str]]) -> None:
    holder_of.append(hold(filled, seconds=1.0))
    res = invoke("--config", str(config(tmp_path, 20)), "--db", str(filled), "topology",
                 "--format", "json")
    assert res.exit_code == 0, res.output
    assert '"switches"' in res.stdout
