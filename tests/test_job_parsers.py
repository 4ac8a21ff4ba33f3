"""Error, unit and fuzz tests for the scheduler-side parsers: Slurm hostlists, sacct -P,
jobcomp/filetxt, generic jobs JSONL, /etc/hosts and the maintenance-window CSV.

Their fixtures run in tests/test_fixtures.py: every `tests/fixtures/{sacct,jobcomp,jobs_jsonl}/
<case>.txt` is parsed with the "params" of `<case>.json` (tz: null = UTC, "+01:00", or an IANA
name) and compared with its "jobs" (full records, times as ISO-8601 UTC), "skipped_steps" and
"unparsed" ([line_no, reason] pairs), or with its "error" ({line_no, reason}) when the whole
input must be refused.

Fixture provenance:
* sacct/slurmdbd_*, sacct/completion_c_*, sacct/loopback_*, sacct/fixed_width_truncated_error
  and jobcomp/filetxt_loopback_requeued: verbatim output lines from
  research notes: jobs/sacct-samples.txt (Slurm 22.05.8 on a loopback test cluster);
  the command that printed each is in the .json "about".
* sacct/handmade_reordered_columns_subset_running_gpus: written here in the sacct -P format
  (no capture has a running job, AllocTRES, array or het ids): reordered column subset,
  Unknown End (running), pending `None assigned`, `CANCELLED by 1000`, steps, an orphan step,
  typed + untyped gres/gpu, and three bad lines. Times are slurmctld time at UTC+1.
* jobcomp/handmade_*: written here from the JOB_FORMAT string of Slurm's
  src/plugins/jobcomp/filetxt/jobcomp_filetxt.c (ArrayJobId/ArrayTaskId, HetJobId/HetJobOffset,
  StartTime=Unknown for a job cancelled while pending), ending in a half-written line.
* jobs_jsonl, hosts_file, maintenance, hostlist: written here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.errors import ParseError
from auditor.models import Job, JobTable
from auditor.parse import hostlist, sacct
from auditor.parse._jobs import TEXT_MAX, parse_slurm_time
from auditor.parse.hostlist import (
    MAX_HOSTS,
    compress_hostlist,
    expand_hostlist,
    joined_hostlist,
)
from auditor.parse.hosts_file import parse_hosts_file, short_name
from auditor.parse.jobcomp import JobsResult, parse_jobcomp, parse_jobs_jsonl
from auditor.parse.maintenance import check_target, parse_maintenance
from auditor.parse.sacct import parse_sacct
from tests.strategies import NEAR_MISS, near_miss
from tests.test_fixtures import check_jobs_invariants

FIXTURES = Path(__file__).parent / "fixtures"
JobParser = Callable[..., JobsResult]
JOB_PARSERS: dict[str, JobParser] = {
    "sacct": parse_sacct,
    "jobcomp": parse_jobcomp,
    "jobs_jsonl": parse_jobs_jsonl,
}
JOB_CASES = sorted(p for kind in JOB_PARSERS for p in (FIXTURES / kind).glob("*.txt"))
HOSTS_CASES = sorted((FIXTURES / "hosts_file").glob("*.txt"))
MAINTENANCE_CASES = sorted((FIXTURES / "maintenance").glob("*.txt"))
UTC_PLUS_1 = timezone(timedelta(hours=1))


def _tz(spec: str | None) -> tzinfo:
    if spec is None:
        return UTC
    if spec[0] in "+-":
        sign = -1 if spec[0] == "-" else 1
        hours, minutes = spec[1:].split(":")
        return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))
    return ZoneInfo(spec)


# --- hostlist ---------------------------------------------------------------------------------


def test_hostlist_empty_and_whitespace() -> None:
    assert expand_hostlist("") == []
    assert expand_hostlist("  \n") == []
    assert expand_hostlist(" gpu-[1-2] , gpu-9 ") == ["gpu-1", "gpu-2", "gpu-9"]
    assert compress_hostlist([]) == ""


def test_hostlist_size_limit_is_exact() -> None:
    assert len(expand_hostlist(f"n[1-{MAX_HOSTS}]")) == MAX_HOSTS
    with pytest.raises(ValueError, match="more than"):
        expand_hostlist(f"n[1-{MAX_HOSTS}],x")


@pytest.mark.parametrize("name", ["", "a,b", "a[1]", "a b", "x]"])
def test_compress_refuses_names_it_cannot_write(name: str) -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        compress_hostlist([name])


def test_compress_keeps_padding_apart() -> None:
    names = ["n1", "n01", "n001", "n2", "n9", "n10", "n099", "n100", "x"]
    text = compress_hostlist(names)
    assert text == "n[1,01,001,2,9-10,099-100],x"
    assert sorted(expand_hostlist(text)) == sorted(names)


_host_name = st.from_regex(r"[a-z][a-z0-9.-]{0,6}[0-9]{0,4}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(_host_name, max_size=40))
def test_hostlist_round_trip(names: list[str]) -> None:
    text = compress_hostlist(names)
    again = expand_hostlist(text)
    assert sorted(again) == sorted(set(names))
    assert compress_hostlist(again) == text


@st.composite
def _hostlist_expr(draw: st.DrawFn) -> str:
    items = []
    for _ in range(draw(st.integers(1, 3))):
        item = draw(st.from_regex(r"[a-z][a-z-]{0,4}", fullmatch=True))
        for _ in range(draw(st.integers(0, 2))):
            parts = []
            for _ in range(draw(st.integers(1, 3))):
                width = draw(st.integers(1, 3))
                lo = draw(st.integers(0, 10**width - 1))
                hi = draw(st.integers(lo, min(lo + 12, 10**width - 1)))
                parts.append(str(lo).zfill(width) + ("" if lo == hi else f"-{hi:0{width}d}"))
            item += "[" + ",".join(parts) + "]" + draw(st.sampled_from(["", "-", "x"]))
        items.append(item)
    return ",".join(items)


@settings(max_examples=300, deadline=None)
@given(expr=_hostlist_expr())
def test_hostlist_expand_compress_expand(expr: str) -> None:
    hosts = expand_hostlist(expr)
    assert hosts and all(hosts)
    assert sorted(expand_hostlist(compress_hostlist(hosts))) == sorted(set(hosts))


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet="gpu-0123[],x ", max_size=30) | st.text(max_size=20))
def test_hostlist_fuzz_only_value_errors(text: str) -> None:
    try:
        hosts = expand_hostlist(text)
    except ValueError:
        return
    assert all(h and not any(c in h for c in "[],") for h in hosts)


# The fast road (`_joined_common`) must give what the general code gives: the same names, or
# leave the text to it, which then gives the same reason.


def _general(text: str) -> tuple[str, int] | str:
    text = text.strip()
    if not text:
        return "", 0
    try:
        names = hostlist._expand_general(text)
    except ValueError as exc:
        return str(exc)
    return ",".join(names), len(names)


def _joined(text: str) -> tuple[str, int] | str:
    try:
        return joined_hostlist(text)
    except ValueError as exc:
        return str(exc)


# Near misses of the common shapes: empty numbers, ranges of three or reversed, dashes at the
# ends, a Unicode digit, whitespace, %-signs (the range road %-formats nothing, but must not
# trip on them), several items.
_near_hostlist = st.text(alphabet="n%-[],0123456789 \t\u0663", max_size=24)


@settings(max_examples=1000, deadline=None)
@given(text=_hostlist_expr() | _near_hostlist)
def test_hostlist_fast_road_equals_the_general_code(text: str) -> None:
    expected = _general(text)
    assert _joined(text) == expected
    if isinstance(expected, tuple):
        assert expand_hostlist(text) == (expected[0].split(",") if expected[1] else [])


def test_hostlist_fast_road_edges() -> None:
    for text in ["n[8-10]", "n[08-10]", "n[099-101]", "n[1-9999]", "n[9999-10001]", "n[5-5]",
                 "n[1,2,3-4,5]x", "[1-2]", "n[1-2],m,o[3]", "a%d[1-2]", "n[2-1]", "n[1-2-3]",
                 "n[1,,2]", "n[-1]", "n[1-]",
                 "n[,1]", "n[1,]", "n[]", "n[1]]", "n[[1]", "node-0412", "a,b,c"]:
        assert _joined(text) == _general(text), text


# --- sacct ------------------------------------------------------------------------------------

STEPS = (FIXTURES / "sacct/slurmdbd_steps_batch_and_srun.txt").read_text()
ALLOCATIONS = (FIXTURES / "sacct/slurmdbd_allocations_duplicates_cancelled_by.txt").read_text()
HEADER = "JobID|JobName|State|ExitCode|Start|End|NodeList"


def _sacct_line(**fields: str) -> str:
    row = {
        "JobID": "7",
        "JobName": "x",
        "State": "FAILED",
        "ExitCode": "1:0",
        "Start": "2026-11-30T06:14:54",
        "End": "2026-11-30T06:15:00",
        "NodeList": "gpu-001",
        **fields,
    }
    return "|".join(row.values())


@pytest.mark.parametrize(
    ("header", "missing"),
    [
        ("JobID|JobName|State|Start|End", "NodeList"),
        ("JobIDRaw|State|Start|End|NodeList", "JobID"),
        ("JobID|Start|NodeList", "State, End"),
        ("JobID", "State, Start, End, NodeList"),
    ],
)
def test_sacct_missing_columns_named_on_line_1(header: str, missing: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_sacct(f"{header}\n7|x|FAILED|a|b\n")
    assert (err.value.kind, err.value.line_no, err.value.line) == ("sacct", 1, header)
    assert f"missing column(s) {missing} (need" in err.value.reason


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        ("", 0, "no header line"),
        ("\n \n", 0, "no header line"),
        ("6|llm|COMPLETED|0:0|2026-11-30T06:14:54|2026-11-30T06:14:56|gpu-001\n", 1, "not a sacct"),
        ("\n\n" + HEADER.replace("JobID", "Job ID"), 3, "not a sacct header"),
        ("JobID           State        End \n------------ ---------- ---\n", 1, "fixed-width"),
        (bytes(range(256)).decode("latin-1"), 1, "not a sacct header"),
    ],
)
def test_sacct_unreadable_header(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_sacct(text)
    assert err.value.line_no == line_no
    assert reason in err.value.reason


def test_sacct_header_after_blank_lines_keeps_line_numbers() -> None:
    result = parse_sacct("\n\n" + ALLOCATIONS)
    assert [j.line_no for j in result.jobs] == [4, 5, 6, 7, 8]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (_sacct_line() + "|extra", "expected 7 fields, got 8"),
        (_sacct_line(JobID="7.x.y"), "JobID: not a Slurm job id: '7.x.y'"),
        (_sacct_line(JobID="abc"), "JobID: not a Slurm job id"),
        (_sacct_line(Start="30/11/2026 06:14"), "Start: not an ISO-8601 date and time"),
        (_sacct_line(End="2026-11-31T06:15:00"), "End: bad date or time"),
        (_sacct_line(End="2026-11-30T06:14:00"), "end is before start"),
        (_sacct_line(State="FAILED+"), "State: unrecognised job state 'FAILED+'"),
        (_sacct_line(NodeList="gpu-[001-002,0+"), "NodeList: hostlist 'gpu-[001-002,0+'"),
        (_sacct_line(NodeList="gpu-[002-001]"), "NodeList: hostlist item 'gpu-[002-001]': rev"),
    ],
)
def test_sacct_bad_data_line_goes_to_unparsed(line: str, reason: str) -> None:
    good = _sacct_line(JobID="8")
    result = parse_sacct(f"{HEADER}\n{line}\n{good}\n")
    assert [j.job_id for j in result.jobs] == ["8"]
    assert len(result.unparsed) == 1
    line_no, kept, why = result.unparsed[0]
    assert (line_no, kept) == (2, line)
    assert why.startswith(reason), why


def test_cut_names_partitions_and_exit_codes_are_counted() -> None:
    """Issue #21: a field cut to TEXT_MAX is kept cut and its line counted (`cut`), as the
    topology counts its cut descriptions; a field of exactly TEXT_MAX is not cut."""
    long, edge = "n" * (TEXT_MAX + 1), "e" * TEXT_MAX
    result = parse_sacct(f"{HEADER}\n{_sacct_line(JobID='1', JobName=long)}\n"
                         f"{_sacct_line(JobID='2', JobName=edge)}\n"
                         f"{_sacct_line(JobID='3', ExitCode=long)}\n")
    assert [(n, line.split('|')[0]) for n, line in result.cut] == [(2, "1"), (4, "3")]
    assert [len(j.name or "") for j in result.jobs] == [TEXT_MAX, TEXT_MAX, 1]
    assert result.unparsed == []
    comp = parse_jobcomp("JobId=5 UserId=u(1) GroupId=g(1) Name=" + long + " JobState=FAILED "
                         "Partition=gpu TimeLimit=1 StartTime=2026-11-30T06:14:54 "
                         "EndTime=2026-11-30T06:15:00 NodeList=gpu-001 NodeCnt=1\n")
    assert [n for n, _ in comp.cut] == [1] and len(comp.jobs) == 1
    jsonl = parse_jobs_jsonl(json.dumps({"job_id": 6, "state": "FAILED", "start": None,
                                         "end": None, "nodes": ["gpu-001"],
                                         "partition": long}) + "\n"
                             + json.dumps({"job_id": 7, "state": "FAILED", "start": None,
                                           "end": None, "nodes": ["gpu-001"], "name": edge}))
    assert [n for n, _ in jsonl.cut] == [1] and len(jsonl.jobs) == 2


def test_sacct_nnodes_cross_check() -> None:
    header = "JobID|State|Start|End|NNodes|NodeList"
    text = (
        f"{header}\n"
        "1|FAILED|2026-11-30T06:19:31|2026-11-30T06:19:34|3|gpu-[001-002,004]\n"
        "2|FAILED|2026-11-30T06:19:31|2026-11-30T06:19:34|2|gpu-[001-002,004]\n"
        "3|PENDING|Unknown|Unknown|4|None assigned\n"
        "4|FAILED|2026-11-30T06:19:31|2026-11-30T06:19:34|two|gpu-001\n"
    )
    result = parse_sacct(text)
    assert [j.job_id for j in result.jobs] == ["1", "3"]
    assert [(n, r) for n, _, r in result.unparsed] == [
        (3, "NNodes 2 but NodeList names 3 nodes"),
        (5, "NNodes 'two' is not a node count"),
    ]


def test_sacct_steps_before_their_allocation_are_still_folded() -> None:
    lines = STEPS.splitlines()
    reordered = "\n".join([lines[0], *reversed(lines[1:])])
    result = parse_sacct(reordered)
    assert sorted(j.job_id for j in result.jobs) == ["10", "6", "7", "8", "9"]
    assert result.skipped_steps == 10


def test_sacct_orphan_steps_are_kept_under_their_step_id() -> None:
    text = "\n".join(line for line in STEPS.splitlines() if not line.startswith("7|"))
    result = parse_sacct(text)
    assert [j.job_id for j in result.jobs] == ["6", "7.batch", "7.0", "8", "9", "10"]
    assert result.skipped_steps == 8
    assert result.jobs[2].nodes == ("gpu-001", "gpu-002", "gpu-004")


def test_sacct_p_trailing_delimiter_and_crlf_and_other_delimiter() -> None:
    plain = parse_sacct(ALLOCATIONS)
    trailing = "\n".join(line + "|" for line in ALLOCATIONS.splitlines()) + "\n"
    assert parse_sacct(trailing) == plain
    assert parse_sacct(ALLOCATIONS.replace("\n", "\r\n")) == plain
    assert parse_sacct(ALLOCATIONS.replace("|", ";")) == plain


def test_sacct_repeated_header_from_concatenated_runs() -> None:
    other = (FIXTURES / "sacct/loopback_X_D_nnodes_before_nodelist.txt").read_text()
    result = parse_sacct(ALLOCATIONS + other)
    assert [j.job_id for j in result.jobs] == ["6", "7", "8", "9", "10", "1", "2", "3"]
    assert [j.line_no for j in result.jobs][-3:] == [8, 9, 10]
    assert result.unparsed == []


def test_sacct_time_zone_with_dst() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    text = (
        f"{HEADER}\n"
        + _sacct_line(JobID="1", Start="2026-07-01T12:00:00", End="2026-07-01T13:00:00")
        + "\n"
        + _sacct_line(JobID="2", Start="2026-12-01T12:00:00", End="2026-12-01T13:00:00")
        + "\n"
        + _sacct_line(JobID="3", Start="2026-12-01T12:00:00+0000", End="Unknown")
        + "\n"
    )
    jobs = parse_sacct(text, tz=berlin).jobs
    assert [j.start for j in jobs] == [
        datetime(2026, 7, 1, 10, tzinfo=UTC),
        datetime(2026, 12, 1, 11, tzinfo=UTC),
        datetime(2026, 12, 1, 12, tzinfo=UTC),
    ]
    assert jobs[2].end is None


# The time columns are read whole (`sacct._read_times`); each value must come out as
# parse_slurm_time reads it alone, with the same reason when it cannot, in any zone: across DST
# changes (Lord Howe moves by 30 minutes), a fixed offset, ZoneInfo("UTC") as the CLI passes.
_ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "+05:30", None]
_time_text = st.one_of(
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2099, 12, 31)).map(  # noqa: DTZ001
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%S")),
    st.sampled_from(["Unknown", "None", "", " Unknown", "2026-02-30T00:00:00", "2026-11-30T06",
                     "2026-11-30 06:14:54", "2026-11-30T06:14:54+0100", "0001-01-01T00:30:00"]))


def _one_by_one(values: list[str], tz: tzinfo) -> tuple[list[datetime | None], dict[int, str]]:
    moments: list[datetime | None] = []
    errors: dict[int, str] = {}
    for i, value in enumerate(values):
        try:
            moments.append(parse_slurm_time(value, tz))
        except ValueError as exc:
            moments.append(None)
            errors[i] = f"Start: {exc}"
    return moments, errors


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_time_text, min_size=1, max_size=30), zone=st.sampled_from(_ZONES))
def test_sacct_time_column_equals_one_by_one(values: list[str], zone: str | None) -> None:
    tz = _tz(zone) if zone is None or zone[0] in "+-" else ZoneInfo(zone)
    errors: dict[int, str] = {}
    moments = sacct._read_times(values, tz, "Start", errors)
    assert (moments, errors) == _one_by_one(values, tz)
    assert all(m is None or m.tzinfo is UTC for m in moments)


def test_sacct_time_column_across_dst_changes() -> None:
    for zone in ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe"):
        tz = ZoneInfo(zone)
        for day in ("2026-03-08", "2026-03-29", "2026-04-05", "2026-10-04", "2026-10-25",
                    "2026-11-01"):
            start = datetime.fromisoformat(day)
            values = [(start + timedelta(minutes=m)).isoformat() for m in range(0, 1440, 7)]
            errors: dict[int, str] = {}
            assert sacct._read_times(values, tz, "Start", errors) == _one_by_one(values, tz)[0]
            assert errors == {}


def test_sacct_default_zone_as_the_cli_passes_it() -> None:
    assert parse_sacct(ALLOCATIONS, tz=ZoneInfo("UTC")) == parse_sacct(ALLOCATIONS)


def test_job_table_round_trip_and_comma_names() -> None:
    result = parse_sacct(STEPS)
    table = JobTable()
    for job in result.jobs:
        table.append(job)
    assert table == result.table and table.rows() == result.jobs
    with pytest.raises(ValueError, match="holds a comma"):
        table.append(Job("9", "FAILED", None, None, ("a,b",)))


def test_sacct_fixed_width_without_truncation_is_refused_on_the_header() -> None:
    text = (FIXTURES / "sacct/fixed_width_truncated_error.txt").read_text()
    untruncated = text.replace("0+", "04").replace("nodefail-+", "nodefail-v")
    with pytest.raises(ParseError) as err:
        parse_sacct(untruncated)
    assert (err.value.line_no, err.value.reason) == (1, "fixed-width sacct output: use sacct -P")


# --- jobcomp ----------------------------------------------------------------------------------

JOBCOMP = (FIXTURES / "jobcomp/filetxt_loopback_requeued.txt").read_text()


def test_jobcomp_missing_keys_and_bad_values() -> None:
    first = JOBCOMP.splitlines()[0]
    lines = [
        first.replace(" JobState=COMPLETED", ""),
        first.replace("NodeList=gpu-[001-002]", "NodeList=gpu-[001-002"),
        first.replace("JobId=1 ", "JobId=x1 "),
        first.replace("EndTime=2026-11-30T06:12:19", "EndTime=2026-11-30T06:12:00"),
        first.replace("JobState=COMPLETED", "JobState=COMPLETED+"),
        first.replace("ExitCode=0:0 ", "ExitCode=0:0 ArrayJobId=9 ArrayTaskId=x "),
        "  " + first,
    ]
    result = parse_jobcomp("\n".join(lines))
    assert result.jobs == []
    assert [(n, r) for n, _, r in result.unparsed] == [
        (1, "missing JobState"),
        (2, "NodeList: hostlist 'gpu-[001-002': '[' is never closed"),
        (3, "JobId: not a job id number: 'x1'"),
        (4, "end is before start"),
        (5, "JobState: unrecognised job state 'COMPLETED+'"),
        (6, "ArrayTaskId: not a job id number: 'x'"),
        (7, "not a jobcomp line (JobId=...)"),
    ]


def test_jobcomp_crlf_and_empty() -> None:
    assert parse_jobcomp(JOBCOMP.replace("\n", "\r\n")) == parse_jobcomp(JOBCOMP)
    assert parse_jobcomp("") == JobsResult()
    assert parse_jobcomp("\n\n") == JobsResult()


def test_jobcomp_and_sacct_c_agree_on_the_same_jobs() -> None:
    # jobs 1-5 of the jobcomp file are what `sacct -c -P` printed in the same capture
    from_file = parse_jobcomp(JOBCOMP).jobs[:6]
    from_sacct = parse_sacct(
        (FIXTURES / "sacct/completion_c_requeued_null_nodelist.txt").read_text()
    ).jobs
    assert len(from_sacct) == 6

    # sacct -c prints no Partition here and the files number lines differently.
    def comparable(jobs: list[Job]) -> list[Job]:
        return [dataclasses.replace(j, partition=None, line_no=0) for j in jobs]

    assert comparable(from_file) == comparable(from_sacct)


# --- JSONL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"job_id": true, "state": "FAILED", "start": null, "end": null, "nodes": []}', "job_id"),
        ('{"job_id": " ", "state": "FAILED", "start": null, "end": null, "nodes": []}', "job_id"),
        ('{"job_id": 1, "state": 2, "start": null, "end": null, "nodes": []}', "state: expected"),
        ('{"job_id": 1, "state": "x y", "start": null, "end": null, "nodes": []}', "unrecognised"),
        ('{"job_id": 1, "state": "F", "start": true, "end": null, "nodes": []}', "start: expected"),
        ('{"job_id": 1, "state": "F", "start": 1e20, "end": null, "nodes": []}', "start: epoch"),
        ('{"job_id": 1, "state": "F", "start": NaN, "end": null, "nodes": []}', "start: epoch"),
        ('{"job_id": 1, "state": "F", "start": null, "end": [], "nodes": []}', "end: expected"),
        ('{"job_id": 1, "state": "F", "start": null, "end": null, "nodes": {}}', "nodes: expected"),
        ('{"job_id": 1, "state": "F", "start": null, "end": null, "nodes": ["a b"]}', "nodes: not"),
        ('{"job_id": 1, "state": "F", "start": null, "end": null, "nodes": [1]}', "nodes: not"),
        (
            '{"job_id": 1, "state": "F", "start": null, "end": null, "nodes": [], "gpus": -1}',
            "gpus",
        ),
        ('{"job_id": 1, "state": "F", "start": null, "end": null, "nodes": [], "name": 5}', "name"),
        ("[" * 100_000, "not JSON"),
        ('"just a string"', "not a JSON object"),
    ],
)
def test_jsonl_bad_lines(line: str, reason: str) -> None:
    result = parse_jobs_jsonl(line)
    assert result.jobs == []
    assert len(result.unparsed) == 1
    assert result.unparsed[0][:2] == (1, line)
    assert reason in result.unparsed[0][2]


def test_jsonl_naive_time_uses_tz() -> None:
    line = (
        '{"job_id": 1, "state": "failed", "start": "2026-11-30T07:00:00", "end": null, "nodes": []}'
    )
    (job,) = parse_jobs_jsonl(line, tz=UTC_PLUS_1).jobs
    assert (job.state, job.start) == ("FAILED", datetime(2026, 11, 30, 6, tzinfo=UTC))


# --- hosts file -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        ("10.0.0.1 a\n10.0.0.2\n", 2, "address without a host name"),
        ("10.0.0.1 a\n10.0.0.2   # gpu-002\n", 2, "address without a host name"),
        ("gpu-001 10.0.0.1\n", 1, "not an IP address"),
        ("10.0.0.256 a\n", 1, "not an IP address"),
        ("010.0.0.1 a\n", 1, "not an IP address"),
        ("10.0.0.1%ib0 a\n", 1, "an IPv4 address has no zone id"),
        ("fe80::1% a\n", 1, "bad zone id"),
        ("fe80::1%ib/0 a\n", 1, "bad zone id"),
        ("\n\n::1 local host!\n", 3, "not a host name: 'host!'"),
        ("::1 -lead\n", 1, "not a host name"),
        (bytes(range(256)).decode("latin-1"), 1, "not an IP address"),
    ],
)
def test_hosts_file_errors(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_hosts_file(text)
    assert (err.value.kind, err.value.line_no) == ("hosts", line_no)
    assert reason in err.value.reason
    assert err.value.line == text.split("\n")[line_no - 1]


def test_hosts_file_empty_and_comments_only() -> None:
    assert parse_hosts_file("") == []
    assert parse_hosts_file("# nothing\n\n   \t\n") == []


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("gpu-node-01.cluster.local", "gpu-node-01"),
        ("gpu-node-01.cluster.local.", "gpu-node-01"),
        ("gpu-node-01", "gpu-node-01"),
        ("GPU-Node-01.Cluster", "GPU-Node-01"),
        ("10.153.235.11", "10.153.235.11"),
        ("fe80::1%ib0", "fe80::1%ib0"),
        (".hidden", ".hidden"),
        ("", ""),
    ],
)
def test_short_name(name: str, short: str) -> None:
    assert short_name(name) == short


# --- maintenance ------------------------------------------------------------------------------

GOOD_HEADER = "target,start,end,reason"


@pytest.mark.parametrize(
    "target",
    [
        "leaf04",
        "gpu-node-07.cluster.local",
        "0x1070fd0300000301",
        "leaf04:17",
        "leaf04:IB1/7",
        "spine01:Eth1/1/2",
        "gpu-node-07:mlx5_0/1",
        "gpu-node-07:mlx5_0/1<->leaf02:17",
        "leaf-01:IB1/1<->spine-01:IB1/33",
    ],
)
def test_maintenance_good_targets(target: str) -> None:
    check_target(target)


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("leaf01:1-leaf02:2", "a link is written"),
        ("leaf01:1<->leaf02", "expected device:port<->device:port"),
        ("leaf01:1<->leaf02:2<->leaf03:3", "expected device:port<->device:port"),
        ("leaf01:", "expected device:port"),
        (":17", "expected device:port"),
        ("leaf01:IB1//7", "expected device:port"),
        ("gpu-[001-004]", "expected a host or switch name"),
        ("leaf 01", "expected a host or switch name"),
        ("-leaf01", "expected a host or switch name"),
    ],
)
def test_maintenance_bad_targets(target: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_target(target)
    with pytest.raises(ParseError) as err:
        parse_maintenance(f"{GOOD_HEADER}\n{target},2026-11-30T06:00:00Z,2026-11-30T07:00:00Z,\n")
    assert err.value.line_no == 2


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        ("target,start\nleaf01,2026-11-30T06:00:00Z\n", 1, "header lacks column(s) end"),
        ("target,begin,end\n", 1, "unknown column 'begin'"),
        ("target,start,end,end\n", 1, "column 'end' given twice"),
        ("leaf01,2026-11-30T06:00:00Z,2026-11-30T07:00:00Z\n", 1, "unknown column 'leaf01'"),
        (
            f"{GOOD_HEADER}\n\nleaf01,2026-11-30T07:00:00Z,2026-11-30T06:59:59Z,oops\n",
            3,
            "end is before start",
        ),
        (f"{GOOD_HEADER}\nleaf01,2026-11-30,2026-12-01,\n", 2, "start: not an ISO-8601"),
        (f"{GOOD_HEADER}\nleaf01,2026-11-30T06:00:00Z,,\n", 2, "no end time"),
        (f"{GOOD_HEADER}\nleaf01,2026-11-30T06:00:00Z\n", 2, "no end time"),
        (f"{GOOD_HEADER}\n,2026-11-30T06:00:00Z,2026-11-30T07:00:00Z\n", 2, "no target"),
        (f"{GOOD_HEADER}\nleaf01,2026-11-30T06:00Z,2026-11-30T07:00Z,a,b\n", 2, "5 fields"),
        (f'{GOOD_HEADER}\nleaf01,"2026-11-30T06:00Z\n\n', 2, "bad CSV"),
        (
            f'{GOOD_HEADER}\nleaf01,2026-11-30T06:00Z,2026-11-30T07:00Z,"a\nb"\nleaf02,x,y,\n',
            4,
            "start: not an ISO-8601",
        ),
    ],
)
def test_maintenance_errors_name_the_line(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_maintenance(text)
    assert (err.value.kind, err.value.line_no) == ("maintenance", line_no)
    assert reason in err.value.reason


def test_maintenance_empty_header_only_bom_and_tz() -> None:
    assert parse_maintenance("") == []
    assert parse_maintenance("# planned windows\n" + GOOD_HEADER + "\n") == []
    (window,) = parse_maintenance(
        "\ufeffTarget,Start,End\nleaf01,2026-11-30T07:00:00,2026-11-30T08:00:00\n",
        tz=UTC_PLUS_1,
    )
    assert (window.start, window.end, window.reason, window.line_no) == (
        datetime(2026, 11, 30, 6, tzinfo=UTC),
        datetime(2026, 11, 30, 7, tzinfo=UTC),
        "",
        2,
    )


# --- fuzzing ----------------------------------------------------------------------------------

_ALL_FIXTURES = [*JOB_CASES, *HOSTS_CASES, *MAINTENANCE_CASES]
_near_miss_text = st.lists(
    near_miss([line for p in _ALL_FIXTURES for line in p.read_text().split("\n")],
              actions=(*NEAR_MISS, "swap"), noise=st.text(alphabet="|[]-,:=\"'%# 0", max_size=3)),
    max_size=20).map("\n".join)
_FUZZ_PARSERS: dict[str, Callable[[str], object]] = {
    **JOB_PARSERS,
    "hosts_file": parse_hosts_file,
    "maintenance": parse_maintenance,
}


@pytest.mark.parametrize("kind", sorted(_FUZZ_PARSERS))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=st.one_of(st.text(), _near_miss_text))
def test_fuzz_only_documented_errors(kind: str, text: str) -> None:
    error: ParseError | None = None
    try:
        result = _FUZZ_PARSERS[kind](text)
    except ParseError as exc:
        error = exc
    if error is not None:
        # jobcomp and JSONL report bad lines instead of raising.
        assert kind in {"sacct", "hosts_file", "maintenance"}
        assert 0 <= error.line_no <= text.count("\n") + 1
    elif isinstance(result, JobsResult):
        check_jobs_invariants(result, text)
