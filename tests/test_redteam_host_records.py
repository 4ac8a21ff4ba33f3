"""Issue #21 (and #20's host evidence), second look from the outside: what the scheduler's and
the hosts' own records can still do. Each test fails on the code it was written against
(redteam branch)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.conftest import FIXTURES


def _auditor(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


@pytest.fixture
def topology_db(tmp_path: Path) -> tuple[Path, Path]:
    """A database holding one ibnetdiscover snapshot, and the capture it was read from."""
    capture = tmp_path / "ibnetdiscover.txt"
    shutil.copy(FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt", capture)
    db = tmp_path / "a.duckdb"
    assert _auditor(db, "ingest", "--kind", "ibnetdiscover", str(capture)).returncode == 0
    assert _auditor(db, "topology").returncode == 0
    return db, capture


def test_boots_refuses_a_topology_capture_and_keeps_the_snapshot(
        topology_db: tuple[Path, Path]) -> None:
    """README (#20): for `ingest --kind boots`, "a file of another format is refused in one
    line naming it (exit 2, nothing stored)". Any line holding a ctime-style date ("Topology
    file: generated on Tue Dec  1 00:02:26 2026") makes a file `last -x` output (the rule for
    its translated `wtmp begins` trailer), so ibnetdiscover's capture is accepted with 0
    records, exit 0 and, being the same file read as another kind, it replaces the topology
    snapshot: `auditor topology` then says there is none."""
    db, capture = topology_db
    done = _auditor(db, "ingest", "--kind", "boots", "--host", "node-1", str(capture))
    assert done.returncode == 2, done.stdout[-300:]
    assert len(done.stderr.strip().splitlines()) == 1 and str(capture) in done.stderr
    assert _auditor(db, "topology").returncode == 0


def test_boots_refuses_a_text_with_one_date_in_it(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("Change window agreed on Tue Dec  1 00:02:26 2026 with the vendor\n")
    done = _auditor(tmp_path / "a.duckdb", "ingest", "--kind", "boots", "--host", "node-1",
                    str(text))
    assert done.returncode == 2, done.stdout[-300:]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    done = subprocess.run([sys.executable, "-m", "auditor", "demo", "--out", str(db)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture
def db(demo_db: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, copy)
    return copy


_SACCT_HEADER = ("JobID|JobIDRaw|JobName|Partition|State|ExitCode|Start|End|NNodes|NodeList|"
                 "AllocTRES")
_LONG = 100_000


def _sacct(tmp_path: Path, job_id: str, state: str, nodes: str) -> Path:
    """One job that ended an hour ago (the demo's day ends at the current hour), in UTC."""
    now = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    start, end = (now - timedelta(hours=3)).isoformat(), (now - timedelta(hours=1)).isoformat()
    path = tmp_path / "sacct.txt"
    path.write_text(f"{_SACCT_HEADER}\n{job_id}|{job_id}|train|gpu|{state}|1:0|"
                    f"{start}|{end}|1|{nodes}|gres/gpu=8\n")
    return path


@pytest.mark.parametrize(("field", "job_id", "state", "nodes"), [
    ("job_id", "7" * _LONG, "FAILED", "node-001"),
    ("state", "900007", "S" * _LONG, "node-001"),
    ("host", "900005", "FAILED", "n" * _LONG),
])
def test_sacct_fields_are_bounded_and_the_cut_counted(db: Path, tmp_path: Path, field: str,
                                                      job_id: str, state: str,
                                                      nodes: str) -> None:
    """README, Security model: fabric text is stored "as it came, but bounded where it is
    parsed", job names and partitions at 256, and (#21) every cut is counted. A JobID, a State
    or a NodeList host name of 1 MB is stored whole, without a word (measured: `auditor
    suspects` then prints a 1,000,060-character line, see the next test)."""
    path = _sacct(tmp_path, job_id, state, nodes)
    done = _auditor(db, "ingest", "--kind", "sacct", "--tz", "UTC", str(path))
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        longest = con.execute("select max(length(job_id)), max(length(state)) from jobs"
                              ).fetchone()
        host = con.execute("select max(length(host)) from job_nodes").fetchone()
    assert longest is not None and host is not None
    lengths = {"job_id": longest[0], "state": longest[1], "host": host[0]}
    assert lengths[field] <= 256, f"{field} stored with {lengths[field]} characters"
    assert "warning" in done.stderr, "the cut (or the refused line) is not counted"


def test_suspects_table_cuts_the_coverage_notes(db: Path, tmp_path: Path) -> None:
    """README: cells are cut to 400 characters on display. The notes printed under the
    suspects table ("2 of 23 failed jobs have no job log: <ids>") are not: a 100 kB JobID of a
    failed job without a log becomes one 100 kB line on the operator's terminal."""
    path = _sacct(tmp_path, "7" * _LONG, "FAILED", "node-001")
    assert _auditor(db, "ingest", "--kind", "sacct", "--tz", "UTC", str(path)).returncode == 0
    done = _auditor(db, "suspects", "--since", "24h")
    assert done.returncode == 0, done.stderr
    longest = max(len(line) for line in (done.stdout + done.stderr).splitlines())
    assert longest <= 1000, f"a {longest}-character line"


def test_a_host_event_reason_cut_is_counted(db: Path, tmp_path: Path) -> None:
    """#21: "Cuts of job and transceiver fields that are too long are not counted. Count them
    as the other cuts are." #20's host events cut a Reason to 200 characters (and the message to
    1,000) without counting it: `ingest --kind slurm-events` of a 1 MB reason says nothing."""
    events = tmp_path / "events.txt"
    events.write_text("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
                      f"gpucluster|node-012|2026-12-01T04:40:00|2026-12-01T05:40:00|DRAIN|"
                      f"{'B' * _LONG}|root(0)\n")
    done = _auditor(db, "ingest", "--kind", "slurm-events", "--tz", "UTC", str(events))
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        reason = con.execute("select max(length(reason)) from host_events where host = "
                             "'node-012'").fetchone()
    assert reason is not None and reason[0] is not None and reason[0] < _LONG  # it was cut
    assert "warning" in done.stderr, "the cut reason is not counted"
