"""Format recognition, the store's schema and transactions, and the SQL files."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import sql
from auditor.errors import AuditorError
from auditor.ingest.captures import detect_kind, ingest_files
from auditor.ingest.kinds import first_lines
from auditor.models import Job, JobTable
from auditor.parse.jobcomp import parse_jobcomp, parse_jobs_jsonl
from auditor.parse.sacct import parse_sacct
from auditor.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KINDS = ("ibnetdiscover", "iblinkinfo", "perfquery", "ibqueryerrors")
CASES = [p for kind in KINDS for p in sorted((FIXTURES / kind).glob("*.txt"))
         if p.read_text().strip()]


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_auto_recognises_every_real_capture(path: Path) -> None:
    assert detect_kind(path.read_text(), str(path)) == path.parent.name


def test_schema_is_created_once_and_versioned(db: Path) -> None:
    with Store(db) as store:
        assert store.schema_version() >= 1
        first = store._con.execute("select count(*) from schema_version").fetchone()
    with Store(db) as store:
        again = store._con.execute("select count(*) from schema_version").fetchone()
    assert first == again


def test_failed_ingest_leaves_nothing_behind(tmp_path: Path, db: Path) -> None:
    good = FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text() + "[9]\tthis line is not ibnetdiscover\n")
    with Store(db) as store:
        with pytest.raises(AuditorError, match=re.escape(f"{bad}:")):
            ingest_files(store, [good, bad], kind="ibnetdiscover")
        assert store.sources() == []
        assert store._con.execute("select count(*) from nodes").fetchone() == (0,)


def test_same_content_at_a_new_time_is_a_new_observation(db: Path) -> None:
    good = FIXTURES / "iblinkinfo" / "ibsim_fattree_small.txt"
    t1, t2 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    with Store(db) as store:
        assert ingest_files(store, [good], at=t1)[0].status == "ingested"
        assert ingest_files(store, [good], at=t1)[0].status == "already ingested"
        assert ingest_files(store, [good], at=t2)[0].status == "ingested"
        assert ingest_files(store, [good])[0].status == "already ingested"
        assert len(store.snapshot_times(t2, limit=5)) == 2


def test_every_query_file_is_one_statement_and_used() -> None:
    code = "\n".join(p.read_text() for p in Path(sql.__file__).parent.rglob("*.py"))
    for name in sql.names():
        sql.load(name)
        assert f'"{name}"' in code, f"queries/{name}.sql is not used"


def test_many_job_logs_in_one_command_store_what_one_per_command_does(tmp_path: Path) -> None:
    """The batched insert of job-log errors and issues keeps every row with its own source, and
    a log given twice in one command is stored once."""
    from auditor.ingest.jobs import JobOptions, ingest_job_files

    logs = sorted((FIXTURES / "joblog").glob("*.txt"))
    assert len(logs) >= 5
    odd = tmp_path / "with_unreadable_lines.txt"
    odd.write_text(logs[0].read_text() + "kernel: NVRM: Xid (PCI:0000:3b\n"
                   "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: \n")
    logs.insert(2, odd)
    at = datetime(2026, 11, 30, tzinfo=UTC)
    query = ("select s.path, e.line_no, e.event_at, e.kind, e.network, e.host, e.hca, e.peer, "
             "e.is_first, e.message from job_errors e join sources s using (source_id) "
             "order by all")
    issues = ("select s.path, i.reason, i.lines, i.first_line_no, i.example from source_issues i "
              "join sources s using (source_id) order by all")
    stored = []
    for name, calls in (("one.duckdb", [[*logs, logs[0]]]), ("each.duckdb", [[p] for p in logs])):
        with Store(tmp_path / name) as store:
            results = [r for paths in calls
                       for r in ingest_job_files(store, paths, "joblog", JobOptions(), now=at)]
            again = ingest_job_files(store, logs, "joblog", JobOptions(), now=at)
            assert {r.status for r in again} == {"already ingested"}
            stored.append((store._con.execute(query).fetchall(),
                           store._con.execute(issues).fetchall()))
        if name == "one.duckdb":
            assert [r.status for r in results][-1] == "already ingested"
            assert {r.status for r in results[:-1]} == {"ingested"}
    assert stored[0] == stored[1]
    assert len(stored[0][0]) > 10
    assert {row[1] for row in stored[0][1]} == {"unreadable Xid line",
                                                 "unreadable torchelastic failure"}


def test_one_command_replacing_some_logs_stores_what_one_call_per_log_does(
        tmp_path: Path) -> None:
    """The sources of one command are inserted together after their records (issue #13): their
    ids still rise in file order, a log read before with other options still replaces what it
    stored, and the rows are those of one call per log."""
    from auditor.ingest.jobs import JobOptions, ingest_job_files

    logs = sorted((FIXTURES / "joblog").glob("*.txt"))[:6]
    at = datetime(2026, 11, 30, tzinfo=UTC)
    second = [logs[4], logs[1], logs[5], logs[2], logs[1]]  # 1 and 2 again, for job J
    tables = {
        "sources": "select path, kind, sha256, lines_total, lines_unparsed, records, options "
                   "from sources order by source_id",
        "job_errors": "select s.path, e.* exclude (source_id) from job_errors e "
                      "join sources s using (source_id) order by all",
        "job_logs": "select s.path, l.* exclude (source_id) from job_logs l "
                    "join sources s using (source_id) order by all",
        "source_issues": "select s.path, i.* exclude (source_id) from source_issues i "
                         "join sources s using (source_id) order by all"}
    stored, statuses = [], []
    for name, first, then in (("one.duckdb", [logs[:4]], [second]),
                              ("each.duckdb", [[p] for p in logs[:4]], [[p] for p in second])):
        with Store(tmp_path / name) as store:
            results = [(r.status, r.source_id) for paths in first
                       for r in ingest_job_files(store, paths, "joblog", JobOptions(), now=at)]
            results += [(r.status, r.source_id) for paths in then
                        for r in ingest_job_files(store, paths, "joblog", JobOptions(job="J"),
                                                  now=at)]
            ids = [sid for _, sid in results if sid is not None]
            assert ids == sorted(ids)
            statuses.append([status for status, _ in results])
            stored.append({t: store._con.execute(q).fetchall() for t, q in tables.items()})
    assert statuses[0] == statuses[1] == ["ingested"] * 4 + [
        "ingested", "re-ingested", "ingested", "re-ingested", "already ingested"]
    assert stored[0] == stored[1]
    jobs = {(row[0], row[1]) for row in stored[0]["job_logs"]}
    assert jobs == {(str(p), "J") for p in second} | {(str(logs[0]), None),
                                                      (str(logs[3]), None)}


JOB_PARSERS = {"sacct": parse_sacct, "jobcomp": parse_jobcomp, "jobs_jsonl": parse_jobs_jsonl}
JOB_CASES = [p for kind in JOB_PARSERS for p in sorted((FIXTURES / kind).glob("*.txt"))
             if "error" not in json.loads(p.with_suffix(".json").read_text())]


def _naive(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(UTC).replace(tzinfo=None)


@pytest.mark.parametrize("path", JOB_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_jobs_are_stored_as_parsed(path: Path, db: Path) -> None:
    """The jobs of every job fixture reach the store as parsed, in line order: every field,
    NULLs included, and one job_nodes row per host in NodeList order (the jobs go as registered
    columns, their hosts as one string per job that DuckDB splits)."""
    zone = json.loads(path.with_suffix(".json").read_text())["params"]["tz"]
    tz = UTC if zone is None else timezone(timedelta(hours=1)) if zone == "+01:00" \
        else ZoneInfo(zone)
    result = JOB_PARSERS[path.parent.name](path.read_text(), tz=tz)
    jobs = result.jobs
    with Store(db) as store:
        store.add_jobs(7, result.table)
        rows = store._con.execute(
            "select source_id, job_id, state, start_at, end_at, name, partition, gpus, "
            "exit_code, line_no from jobs order by rowid").fetchall()
        hosts = store._con.execute(
            "select job_id, start_at, host from job_nodes order by rowid").fetchall()
    assert rows == [(7, j.job_id, j.state, _naive(j.start), _naive(j.end), j.name, j.partition,
                     j.gpus, j.exit_code, j.line_no) for j in jobs]
    assert hosts == [(j.job_id, _naive(j.start), h) for j in jobs for h in j.nodes]


def test_a_job_stored_again_replaces_its_record(db: Path) -> None:
    """Same job id and start (no start counts as one): the newer state wins and the host list
    is replaced; another start (a requeued attempt) is a record of its own."""
    start = datetime(2026, 11, 30, 6, tzinfo=UTC)

    def table(*jobs: Job) -> JobTable:
        out = JobTable()
        for job in jobs:
            out.append(job)
        return out

    with Store(db) as store:
        store.add_jobs(1, table(Job("5", "RUNNING", start, None, ("a", "b")),
                                Job("6", "PENDING", None, None, ())))
        store.add_jobs(2, table(Job("5", "FAILED", start, start + timedelta(hours=1), ("a",)),
                                Job("5", "FAILED", start + timedelta(hours=2), None, ("c",)),
                                Job("6", "CANCELLED", None, None, ())))
        rows = store._con.execute(
            "select source_id, job_id, state, start_at from jobs order by all").fetchall()
        hosts = store._con.execute("select job_id, host from job_nodes order by all").fetchall()
    assert rows == [(2, "5", "FAILED", _naive(start)),
                    (2, "5", "FAILED", _naive(start + timedelta(hours=2))),
                    (2, "6", "CANCELLED", None)]
    assert hosts == [("5", "a"), ("5", "c")]


def test_two_nodes_with_one_guid_in_one_capture_are_kept_apart(db: Path) -> None:
    """Issue #11 item 11. A capture lists two different nodes under one node GUID (edited from a
    real capture: see the fixture's "about"). Both are kept, the ingest says so naming the GUID
    and both descriptions, `sources` counts it, and neither a moved cable nor a link-down event
    comes of it."""
    from auditor.analyse import topology as fabric
    from auditor.ingest.guid_clashes import ISSUE

    clean = FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"
    clash = FIXTURES / "ibnetdiscover" / "edited_duplicate_caguid_two_hosts.txt"
    t0, t1 = datetime(2026, 11, 30, 6, tzinfo=UTC), datetime(2026, 11, 30, 7, tzinfo=UTC)
    guid = "0x1070fd0300000200"
    with Store(db) as store:
        ingest_files(store, [clean], at=t0)
        (result,) = ingest_files(store, [clash], at=t1)
        topo = fabric.topology(store, t1)
        snap, _ = fabric.snapshots(store, t1)
        issues = [(i["path"], i["reason"], i["lines"]) for i in store.issues()]
        downs = [e for e in store.events(t0, t1) if e["state"] == "down"]
    (warning,) = result.warnings
    assert guid in warning and "'gpu-node-02 mlx5_0'" in warning
    assert "'gpu-node-05 mlx5_0'" in warning
    assert issues == [(str(clash), ISSUE, 1)]
    assert (topo["hcas"], topo["links"], topo["ports_down"]) == (8, 16, 0)
    assert topo["moved"] == []
    # The node that had the GUID in the snapshot before keeps it, whatever the print order.
    assert (snap.nodes[guid].name, snap.nodes[f"{guid}~2"].name) == ("gpu-node-02", "gpu-node-05")
    assert [[e["name"] for e in pair] for pair in topo["appeared"]] == [["gpu-node-05", "leaf03"]]
    # gpu-node-05's old GUID left the fabric while its switch port stayed cabled: no link down.
    assert downs == []


def test_iblinkinfo_of_one_switch_alone_keeps_its_links_and_hints(db: Path) -> None:
    """Issue #11 item 9. `iblinkinfo -S <guid>` names every peer by LID and description only;
    with no snapshot to resolve the LIDs the links are kept with placeholder peers, and the
    slow uplink's "Could be 53.125 Gbps" is reported."""
    from auditor.analyse import topology as fabric

    capture = FIXTURES / "iblinkinfo" / "ibsim_S_one_switch_peers_by_lid_slow_uplink.txt"
    at = datetime(2026, 11, 30, 6, tzinfo=UTC)
    with Store(db) as store:
        (result,) = ingest_files(store, [capture], at=at)
        topo = fabric.topology(store, at)
    assert (topo["switches"], topo["hcas"], topo["links"]) == (3, 2, 4)
    (slow,) = topo["degraded"]
    assert [(e["name"], e["guid"], e["port"]) for e in slow["ends"]] == [
        ("leaf02", "0xb8599f0300200002", 3), ("spine01", "lid:1", 2)]
    assert (slow["speed"], slow["possible_speed"]) == ("EDR", "HDR")
    assert any("kept as lid:<N>" in w for w in result.warnings)


def test_ibqueryerrors_readings_are_stored_by_node_guid_and_port(tmp_path: Path, db: Path) -> None:
    """Issue #13: the columnar path stores what the per-sample path stored. A CA's port GUID is
    stored as its node's GUID, `port ALL` as NULL, a GUID printed in capitals or short as the
    canonical GUID, every reading once; the perfquery of the same port (named by LID) next to it
    stores the same."""
    topo = FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"
    errs = tmp_path / "errs.txt"
    errs.write_text(
        'Errors for "gpu-node-08 mlx5_0"\n'
        "   GUID 0x1070fd0300000801 port 1: [SymbolErrorCounter == 7] "
        "[PortXmitData == 123456789012 (459.912GB)]\n"
        'Errors for 0xb8599f0300bb0004 "MF0;leaf04:MQM8700/U1"\n'
        "   GUID 0xB8599F0300BB0004 port ALL: [LinkDownedCounter == 3]\n"
        "   GUID 0xb8599f0300bb0004 port 2: [LinkDownedCounter == 3]\n"
        "\n## Summary: 14 nodes checked, 2 bad nodes found\n")
    perf = tmp_path / "perf.txt"
    perf.write_text("# Port counters: Lid 14 port 1 (CapMask: 0x1600)\n"
                    "PortSelect:......................1\nSymbolErrorCounter:..............7\n")
    t0, t1 = datetime(2026, 11, 30, 6, tzinfo=UTC), datetime(2026, 11, 30, 7, tzinfo=UTC)
    with Store(db) as store:
        ingest_files(store, [topo], at=t0)
        results = ingest_files(store, [errs, perf], at=t1)
        rows = store._con.execute(
            "select s.kind, c.guid, c.port, c.counter, c.value, c.seen_at from counters c "
            "join sources s using (source_id) order by all").fetchall()
    assert [r.records for r in results] == [4, 1]
    at = t1.replace(tzinfo=None)
    assert rows == [
        ("ibqueryerrors", "0x1070fd0300000800", 1, "PortXmitData", 123456789012, at),
        ("ibqueryerrors", "0x1070fd0300000800", 1, "SymbolErrorCounter", 7, at),
        ("ibqueryerrors", "0xb8599f0300bb0004", 2, "LinkDownedCounter", 3, at),
        ("ibqueryerrors", "0xb8599f0300bb0004", None, "LinkDownedCounter", 3, at),
        ("perfquery", "0x1070fd0300000800", 1, "SymbolErrorCounter", 7, at),
    ]


def test_a_counter_past_the_stores_range_is_refused_whole(tmp_path: Path, db: Path) -> None:
    """ibqueryerrors prints 64-bit unsigned counters; the store keeps signed 64-bit values, so a
    reading over 2**63 - 1 is an error naming it, and nothing of the call is stored."""
    errs = tmp_path / "errs.txt"
    errs.write_text('Errors for 0xb8599f0300bb0004 "MF0;leaf04:MQM8700/U1"\n'
                    "   GUID 0xb8599f0300bb0004 port 1: [PortXmitData == 9223372036854775807] "
                    "[PortRcvData == 9223372036854775808]\n")
    with Store(db) as store:
        with pytest.raises(AuditorError, match="over 9223372036854775807"):
            ingest_files(store, [errs], kind="ibqueryerrors")
        assert store.sources() == []
        assert store._con.execute("select count(*) from counters").fetchone() == (0,)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", "\n", "\r", "\r\n", "\x0b", "\u2028", " ", "x" * 3000]),
                max_size=60).map("".join))
def test_recognition_reads_the_lines_splitlines_gives(text: str) -> None:
    """detect_kind reads a capture's head a growing chunk at a time (#13); the lines are the
    ones str.splitlines gives, a CRLF or a long line across a chunk's end included."""
    assert list(first_lines(text)) == text.splitlines()
