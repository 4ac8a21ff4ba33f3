"""Broken input (issue 11, items 6-8): NUL bytes in logs and job logs, truncated or corrupt .gz
files, and a file ingested again with other options (kind, job, year, zone) or before the
topology that names its ports. Real files go through the real command line into a real DuckDB
file; bad lines are counted per reason (`sources`), the rest is kept."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from auditor.cli import app
from auditor.collect.logfile import GZIP_BAD, NUL_LEAD, NUL_SKIPPED
from auditor.demo import DATA
from auditor.ingest.common import NOT_UTF8_ESCAPED
from auditor.ingest.jobs import NOT_UTF8
from auditor.parse._jobs import CUT as JOB_CUT
from auditor.parse._jobs import TEXT_MAX
from auditor.store import Store
from tests.conftest import FIXTURES

runner = CliRunner(env={"COLUMNS": "400", "AUDITOR_DB": None, "AUDITOR_CONFIG": None})
SNAP = DATA / "sweep-2026-11-30"
LEAF04 = "0xb8599f0300200004"
WINDOW = ["--since", "3d", "--until", "2026-11-30T03:00:00Z"]


def invoke(db: Path, *args: str) -> Result:
    return runner.invoke(app, ["--db", str(db), *args])


def ok(db: Path, *args: str) -> Result:
    res = invoke(db, *args)
    assert res.exit_code == 0, (args, res.output[-3000:], res.exception)
    return res


def ingested(db: Path, *args: str) -> list[dict[str, Any]]:
    """`ingest --format json ...`: one row per file (status, records, warnings)."""
    rows: list[dict[str, Any]] = json.loads(ok(db, "ingest", "--format", "json", *args).stdout)
    return rows


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with Store(db, read_only=True) as store:
        return store._con.execute(sql).fetchall()


def issues(db: Path) -> dict[str, tuple[int, int | None]]:
    """reason -> (lines, first line number) over every source."""
    with Store(db, read_only=True) as store:
        return {row["reason"]: (row["lines"], row["first_line_no"]) for row in store.issues()}


def per_file_issues(db: Path) -> dict[tuple[str, str], tuple[int, int | None]]:
    """(file name, reason) -> (lines, first line number)."""
    with Store(db, read_only=True) as store:
        return {(Path(r["path"]).name, r["reason"]): (r["lines"], r["first_line_no"])
                for r in store.issues()}


def sources(db: Path) -> list[dict[str, Any]]:
    with Store(db, read_only=True) as store:
        return store.sources()


def onyx(stamp: str, host: str, port: int, state: str) -> bytes:
    return (f"2026-11-30T{stamp}Z {host} mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/{port} "
            f"changed state to {state}\n").encode()


NOISE = b"2026-11-30T00:00:00Z leaf01 sshd[17]: pam_unix(sshd:session): session closed, pad\n"
EVENTS = onyx("01:00:00", "leaf04", 5, "DOWN") + onyx("01:00:20", "leaf04", 5, "UP")


# ---------------------------------------------------------------------------------------------
# 6. NUL bytes: a crash's debris is counted, never fatal, never silent

@pytest.mark.parametrize("kind", ["syslog", "auto"])
def test_nul_run_at_the_top_of_a_syslog_keeps_the_day(tmp_path: Path, db: Path,
                                                      kind: str) -> None:
    """rsyslog after a crash: zeros where the file was cut, then the lines it wrote next (the
    first right after the zeros). The day's log used to be refused whole (exit 2)."""
    log = tmp_path / "syslog"
    log.write_bytes(b"\x00" * 4000 + b"\n" + b"\x00" * 300 + onyx("00:59:00", "leaf04", 7, "DOWN")
                    + EVENTS + NOISE * 10)
    (row,) = ingested(db, "--kind", kind, str(log))
    assert (row["kind"], row["status"], row["records"]) == ("syslog", "ingested", 3)
    assert issues(db)[NUL_SKIPPED] == (1, 1)
    assert issues(db)[NUL_LEAD] == (1, 2)  # read without the zeros before it
    assert query(db, "select lines_total, lines_unparsed from sources") == [(14, 1)]
    assert query(db, "select line_no, port_name, state from port_events order by line_no") == [
        (2, "IB1/7", "down"), (3, "IB1/5", "down"), (4, "IB1/5", "up")]


def test_nul_inside_a_later_event_line_is_counted(tmp_path: Path, db: Path) -> None:
    """Past the first 64 KiB, a NUL inside an event line used to drop the event silently."""
    padding = NOISE * 1000  # 80 kB
    log = tmp_path / "syslog.1"
    broken = onyx("01:00:10", "leaf04", 6, "DOWN").replace(b"changed state", b"changed\x00 state")
    log.write_bytes(padding + onyx("01:00:00", "leaf04", 5, "DOWN") + broken
                    + onyx("01:00:20", "leaf04", 5, "UP") + b"\x00" * 8192 + b"\n" + NOISE)
    res = ok(db, "ingest", "--kind", "syslog", str(log))
    assert f"warning: {log}: 2 line(s): {NUL_SKIPPED}" in res.stderr
    assert issues(db)[NUL_SKIPPED] == (2, 1002)
    assert query(db, "select count(*) from port_events") == [(2,)]
    assert query(db, "select lines_unparsed from sources") == [(2,)]


def test_one_damaged_job_log_does_not_fail_the_others(tmp_path: Path, db: Path) -> None:
    """`ingest --kind joblog a.log b.log ...`: one bad byte in one log used to fail them all."""
    logs = sorted((FIXTURES / "joblog").glob("*.txt"))[:5]
    copies = []
    for n, src in enumerate(logs):
        lines = src.read_bytes().split(b"\n")
        if n == 1:  # a crash's zeros, on a line of their own, near the top
            lines.insert(1, b"\x00" * 600)
        if n == 3:  # a byte that is not UTF-8 in the middle of a line
            lines[0] = lines[0][:5] + b"\xff\xfe" + lines[0][5:]
        copies.append(tmp_path / src.name)
        copies[-1].write_bytes(b"\n".join(lines))
    rows = ingested(db, "--kind", "joblog", *map(str, copies))
    assert [r["status"] for r in rows] == ["ingested"] * 5
    found = per_file_issues(db)
    assert found[(copies[1].name, NUL_SKIPPED)] == (1, 2)
    assert found[(copies[3].name, NOT_UTF8)] == (1, 1)
    # the damaged logs keep their failure lines: the same as the undamaged originals give
    clean = tmp_path / "clean.duckdb"
    ingested(clean, "--kind", "joblog", *(str(p) for p in logs))
    errors = "select count(*) from job_errors"
    assert query(db, errors) == query(clean, errors) != [(0,)]


def test_a_capture_with_a_nul_is_refused_naming_file_and_line(tmp_path: Path, db: Path) -> None:
    """Captures are refused (exit 2, file:line), wherever the NUL is (the check used to look at
    the first 64 KiB only)."""
    capture = tmp_path / "ibnetdiscover.txt"
    text = (SNAP / "ibnetdiscover.txt").read_bytes()
    capture.write_bytes(text + b"#\n" * 40_000 + b"# \x00\n")
    line = text.count(b"\n") + 40_001
    res = invoke(db, "ingest", str(capture))
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"error: {capture}:{line}: binary data (NUL byte)")
    assert "Traceback" not in res.output
    assert sources(db) == []


@pytest.mark.parametrize(("name", "described"), [
    ("ibnetdiscover.txt", b'Ca\t1 "H-0c42a10300001d00"\t\t# "gpu-node-29 mlx5_0'),
    ("iblinkinfo.txt", b"CA: gpu-node-29 mlx5_0")])
def test_a_byte_that_is_not_utf8_in_a_topology_capture_is_one_counted_line(
        tmp_path: Path, db: Path, name: str, described: bytes) -> None:
    """Issue #21: one such byte made the whole capture fail (exit 2) where a job file degrades
    per line. The line is read with the byte as a visible escape, counted, and the rest kept
    (here the byte ends a host's node description)."""
    raw = (SNAP / name).read_bytes()
    at = raw.index(described) + len(described)
    line = raw[:at].count(b"\n") + 1
    capture = tmp_path / name
    capture.write_bytes(raw[:at] + b"\xff" + raw[at:])
    res = ok(db, "ingest", "--at", "2026-11-30T02:00:00Z", str(capture))
    assert f"warning: {capture}: 1 line(s): {NOT_UTF8_ESCAPED}" in res.stderr
    assert issues(db)[NOT_UTF8_ESCAPED] == (1, line)
    (example,) = query(db, "select example from source_issues")
    assert "gpu-node-29 mlx5_0\\xff" in example[0]
    clean = tmp_path / "clean.duckdb"
    ok(clean, "ingest", "--at", "2026-11-30T02:00:00Z", str(SNAP / name))
    for table in ("nodes", "ports", "links"):
        counted = f"select count(*) from {table}"  # noqa: S608 - our table names
        assert query(db, counted) == query(clean, counted) != [(0,)], table
    described = query(db, "select count(*) from nodes where description like '%\\xff%'")
    assert described == [(1,)]


def test_a_byte_that_is_not_utf8_in_an_optics_capture_is_one_counted_line(
        tmp_path: Path, db: Path) -> None:
    raw = (FIXTURES / "ethtool_module" / "qsfp28_sr4_four_lanes_mw_and_dbm_tab_indent.txt"
           ).read_bytes()
    capture = tmp_path / "eth.txt"
    capture.write_bytes(raw.replace(b"Mellanox", b"Mellan\xf6x", 1))
    (row,) = ingested(db, "--kind", "ethtool-module", "--host", "gpu-node-05", "--port",
                      "ib0", "--at", "2026-11-30T03:00:00Z", str(capture))
    assert (row["status"], row["records"]) == ("ingested", 1)
    assert f"1 line(s): {NOT_UTF8_ESCAPED}" in str(row["warnings"])
    assert issues(db)[NOT_UTF8_ESCAPED] == (1, raw[:raw.index(b"Mellanox")].count(b"\n") + 1)
    assert query(db, "select distinct vendor, temperature_c from optics_readings") == [
        ("Mellan\\xf6x", 30.56)]


def test_a_job_field_cut_to_its_bound_is_counted(tmp_path: Path, db: Path) -> None:
    """Issue #21: a job name, partition or exit code over TEXT_MAX characters is stored cut, as
    before, and now counted per reason in `sources` like every other cut; the job is kept."""
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("JobID|JobName|Partition|State|Start|End|NodeList\n"
                     f"41|{'x' * 5000}|gpu|FAILED|2026-11-30T01:00:00|2026-11-30T02:00:00|g01\n"
                     "42|ok|gpu|COMPLETED|2026-11-30T01:00:00|2026-11-30T02:00:00|g02\n")
    (row,) = ingested(db, "--kind", "sacct", str(sacct))
    assert row["records"] == 2 and row["warnings"] == f"1 line(s): {JOB_CUT}"
    assert issues(db)[JOB_CUT] == (1, 2)
    assert query(db, "select lines_unparsed from sources") == [(0,)]  # the line was read
    assert query(db, "select length(name) from jobs where job_id = '41'") == [(TEXT_MAX,)]


# ---------------------------------------------------------------------------------------------
# 7. Truncated or corrupt .gz: what precedes the damage is read, with a warning

def _events_log(lines: int) -> bytes:
    return b"".join(onyx(f"01:{i // 60 % 60:02d}:{i % 60:02d}", "leaf04", i % 8 + 1,
                         "DOWN" if i % 2 == 0 else "UP") for i in range(lines))


def _complete_lines(path: Path) -> int:
    """What gzip -dc gives of a damaged file, in complete lines."""
    out = subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=False).stdout
    return out.count(b"\n")


@pytest.mark.parametrize("kind", ["syslog", "auto"])
def test_truncated_gz_is_read_up_to_the_damage(tmp_path: Path, db: Path, kind: str) -> None:
    """A rotated log cut short: it used to end in a bare `Aborted.` (exit 1)."""
    packed = gzip.compress(_events_log(3000))
    log = tmp_path / "syslog.2.gz"
    log.write_bytes(packed[: len(packed) // 2])
    args = ["--kind", kind] if kind != "auto" else []
    res = ok(db, "ingest", *args, str(log))
    assert f"warning: {log}: {GZIP_BAD} (unexpected end of file)" in res.stderr
    complete = _complete_lines(log)
    assert 0 < complete < 3000
    assert query(db, "select count(*) from port_events") == [(complete,)]
    reasons = issues(db)
    (gz,) = [why for why in reasons if why.startswith(GZIP_BAD)]
    assert reasons[gz] == (1, complete + 1)
    # lines_unparsed: the half-written last line only (the damage is not a line)
    assert query(db, "select lines_unparsed from sources") == [(1,)]


def test_corrupt_gz_is_read_with_a_warning(tmp_path: Path, db: Path) -> None:
    """A wrong CRC (every byte decompresses): it used to be a BadGzipFile traceback."""
    packed = bytearray(gzip.compress(_events_log(500)))
    packed[-8] ^= 0xFF
    log = tmp_path / "syslog.3.gz"
    log.write_bytes(bytes(packed))
    res = ok(db, "ingest", "--kind", "syslog", str(log))
    assert f"warning: {log}: {GZIP_BAD} (" in res.stderr and "crc" in res.stderr
    assert query(db, "select count(*) from port_events") == [(500,)]


@pytest.mark.parametrize("content", [
    gzip.compress(_events_log(100))[:12],  # the header only
    b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4,  # a gzip magic, then garbage
    b"plain text, not gzip\n",
], ids=["header-only", "garbage", "not-gzip"])
def test_gz_that_yields_nothing_is_exit_2_naming_the_file(tmp_path: Path, db: Path,
                                                          content: bytes) -> None:
    ok(db, "ingest", "--kind", "syslog", str(_plain_log(tmp_path)))
    before = sources(db)
    log = tmp_path / "syslog.4.gz"
    log.write_bytes(content)
    for args in (["--kind", "syslog"], []):
        res = invoke(db, "ingest", *args, str(log))
        assert res.exit_code == 2, res.output
        assert res.stderr.startswith(f"error: {log}: not a readable gzip file"), res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    assert sources(db) == before


def _plain_log(tmp_path: Path) -> Path:
    log = tmp_path / "syslog"
    log.write_bytes(EVENTS)
    return log


# ---------------------------------------------------------------------------------------------
# 8. The same file with other options replaces what it stored; a topology places old events

def test_a_wrong_kind_does_not_poison_the_file(db: Path) -> None:
    """`--kind jobcomp sacct.txt` stored 0 records under the file's hash, and `--kind sacct`
    afterwards said "already ingested"."""
    sacct = FIXTURES / "sacct" / "loopback_completion_c.txt"
    (wrong,) = ingested(db, "--kind", "jobcomp", str(sacct))
    assert (wrong["status"], wrong["records"]) == ("ingested", 0)
    (right,) = ingested(db, "--kind", "sacct", str(sacct))
    assert (right["status"], right["records"]) == ("re-ingested", 3)
    (again,) = ingested(db, "--kind", "sacct", str(sacct))
    assert again["status"] == "already ingested"
    assert query(db, "select kind, records from sources") == [("sacct", 3)]
    (listed,) = json.loads(ok(db, "sources", "--format", "json").stdout)
    assert json.loads(listed["options"]) == {"kind": "sacct", "tz": "UTC"}
    assert query(db, "select count(*) from jobs") == [(3,)]
    assert query(db, "select count(*) from source_issues") == [(0,)]  # jobcomp's are gone
    nodes = query(db, "select count(*) from job_nodes")
    (back,) = ingested(db, "--kind", "jobcomp", str(sacct))  # and back: nothing left behind
    assert back["status"] == "re-ingested"
    assert query(db, "select count(*) from jobs") == query(db, "select count(*) from job_nodes") \
        == [(0,)] != nodes


def test_a_job_log_given_to_another_job_is_moved_not_doubled(db: Path) -> None:
    log = FIXTURES / "joblog" / "nccl_2_19_async_port_error_no_device.txt"
    assert ingested(db, "--kind", "joblog", "--job", "A", str(log))[0]["status"] == "ingested"
    first = query(db, "select count(*) from job_errors")
    (moved,) = ingested(db, "--kind", "joblog", "--job", "B", str(log))
    assert moved["status"] == "re-ingested"
    assert query(db, "select count(*) from job_errors") == first != [(0,)]
    assert query(db, "select distinct job_id from job_errors") == [("B",)]
    assert query(db, "select job_id from job_logs") == [("B",)]
    assert ingested(db, "--kind", "joblog", "--job", "B", str(log))[0]["status"] == \
        "already ingested"
    (matched,) = ingested(db, "--kind", "joblog", str(log))  # no --job: matched by host/time
    assert matched["status"] == "re-ingested"
    assert query(db, "select distinct job_id from job_errors") == [(None,)]


def test_a_wrong_year_or_zone_is_replaced(tmp_path: Path, db: Path) -> None:
    log = tmp_path / "switch.log"  # RFC 3164: no year, no zone
    log.write_bytes(b"Nov 30 06:00:00 leaf04 mgmtd[1]: Interface IB1/5 changed state to DOWN\n"
                    b"Nov 30 06:00:30 leaf04 mgmtd[1]: Interface IB1/5 changed state to UP\n")
    times = "select event_at::varchar from port_events order by event_at"
    assert ingested(db, "--kind", "syslog", "--year", "2024", str(log))[0]["status"] == "ingested"
    assert query(db, times) == [("2024-11-30 06:00:00",), ("2024-11-30 06:00:30",)]
    (year,) = ingested(db, "--kind", "syslog", "--year", "2025", str(log))
    assert year["status"] == "re-ingested"
    assert query(db, times) == [("2025-11-30 06:00:00",), ("2025-11-30 06:00:30",)]
    (zone,) = ingested(db, "--kind", "syslog", "--year", "2025", "--tz", "Europe/Paris", str(log))
    assert zone["status"] == "re-ingested"
    assert query(db, times) == [("2025-11-30 05:00:00",), ("2025-11-30 05:00:30",)]
    (same,) = ingested(db, "--kind", "syslog", "--year", "2025", "--tz", "Europe/Paris", str(log))
    assert same["status"] == "already ingested"
    assert query(db, "select count(*) from sources") == [(1,)]


def test_a_syslog_before_its_topology_is_placed_when_the_topology_arrives(
        tmp_path: Path, db: Path) -> None:
    log = _plain_log(tmp_path)
    ingested(db, "--kind", "syslog", str(log))
    placed = "select device, port_name, guid, port from port_events order by event_at"
    assert query(db, placed) == [("leaf04", "IB1/5", None, None)] * 2
    assert issues(db)["event on an unmapped port: unknown device (not in the fabric graph)"] \
        == (2, 1)
    ingested(db, "--at", "2026-11-30T00:00:00Z", str(SNAP / "ibnetdiscover.txt"),
             str(SNAP / "iblinkinfo.txt"))
    assert query(db, placed) == [("leaf04", "IB1/5", LEAF04, 5)] * 2
    (flap,) = json.loads(ok(db, "flaps", *WINDOW, "--format", "json").stdout)
    assert {"name": "leaf04", "guid": LEAF04, "port": 5} in flap["ends"]
    assert len(flap["ends"]) == 2  # and the cable's other end, from the topology
    # the log again: a no-op, nothing doubled
    assert ingested(db, "--kind", "syslog", str(log))[0]["status"] == "already ingested"
    assert query(db, "select count(*) from port_events where origin = 'syslog'") == [(2,)]
