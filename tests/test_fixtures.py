"""The fixture runner of every parser (issue #22): each kind of auditor/ingest/kinds.py, ingest
kind or parser only, has a folder tests/fixtures/<folder>/ of real output, `<case>.txt` with the
expected `<case>.json` beside it ("about": where the capture came from; "params": what the
parser is given, e.g. the zone of zoneless stamps).

Each case is parsed with the kind's parser (its `fixture_parse` where the ingest reads a faster
form) and compared with the JSON as the kind's `expect` says: `records` (dataclasses as JSON),
`topology` (a summary, plus `sample_*` records that must appear verbatim), `events` (events
without None fields and `message`, unparsed lines as [line_no, reason], the ignored count),
and one comparison per other result type below. A JSON holding "error" ({line_no, reason})
says the whole input must be refused. Text parsers get the file as text; `reads="lines"`
parsers get (line_no, line) pairs split on \\n only, terminators kept (so a half-written last
line is seen), like an editor numbers lines.
"""

from __future__ import annotations

import dataclasses
import json
import pkgutil
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import auditor.parse
from auditor.errors import ParseError
from auditor.ingest import kinds
from auditor.models import (
    HOST_EVENT_KINDS,
    LID_KEY_PREFIX,
    CounterTable,
    ForwardingTables,
    HostEvent,
    HostEventsResult,
    Job,
    NodeType,
    OpticsReading,
    PortEvent,
    Topology,
    duplicated_guid,
)
from auditor.parse._jobs import JobsResult
from auditor.parse._logline import SyslogResult
from auditor.parse.dmesg import DmesgResult
from auditor.parse.hostlist import compress_hostlist
from auditor.parse.ibdiagnet import IbdiagnetResult
from auditor.parse.joblog import JoblogResult, first_errors
from auditor.parse.sysfs_ib import SysfsSnapshot, to_counter_samples
from tests.conftest import FIXTURES

# Folders of tests/fixtures/ that are no one format's cases, and why.
NOT_A_FORMAT = {
    "paths": "whole ibsim runs, several captures each (tests/test_paths.py)",
    "reference": "research samples the parser tests draw lines from",
}


def _cases() -> list[tuple[kinds.Kind, Path]]:
    return [(kind, path) for kind in kinds.KINDS
            for path in sorted((FIXTURES / kind.fixtures).glob("*"))
            if path.suffix != ".json"]


CASES = _cases()
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+$")


def numbered(text: str) -> list[tuple[int, str]]:
    """(line_no, line with its terminator); split on \\n only, like an editor numbers lines."""
    return list(enumerate(_LINE_RE.findall(text), 1))


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # no newline translation: "\r" stays visible


def zone(spec: str) -> tzinfo:
    """A fixture's "tz": "+01:00" (a fixed offset) or an IANA name."""
    if spec[0] in "+-":
        sign = -1 if spec[0] == "-" else 1
        hours, minutes = spec[1:].split(":")
        return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))
    return ZoneInfo(spec)


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "tz": zone, "reference": datetime.fromisoformat, "read_at": datetime.fromisoformat,
    "at": datetime.fromisoformat, "boot_time": datetime.fromisoformat,
}


def keywords(kind: kinds.Kind, params: dict[str, Any]) -> dict[str, Any]:
    """The parser's keywords from a case's "params"; a null one is left to the parser's
    default (UTC for a zone, none for the rest)."""
    undeclared = set(params) - set(kind.params)
    assert not undeclared, f"params {undeclared} are no keywords of {kind.name} ({kind.params})"
    return {name: _CONVERT.get(name, lambda v: v)(value)
            for name, value in params.items() if value is not None}


@dataclass(slots=True)
class Case:
    kind: kinds.Kind
    path: Path
    text: str
    lines: list[tuple[int, str]] | None  # the parser's input when it reads lines
    about: str | None
    params: dict[str, Any]

    def parse(self) -> Any:
        parse: Callable[..., Any] = kinds.resolve(self.kind.fixture_parse or self.kind.parse)
        return parse(self.lines if self.lines is not None else self.text,
                     **keywords(self.kind, self.params))


def load(kind: kinds.Kind, path: Path) -> tuple[Case, Any]:
    text = read(path) if kind.reads == "lines" else path.read_text()
    expected = json.loads(path.with_suffix(".json").read_text())
    about = params = None
    if isinstance(expected, dict):
        about = expected.pop("about", None)
        params = expected.pop("params", None)
    case = Case(kind, path, text, numbered(text) if kind.reads == "lines" else None, about,
                params or {})
    return case, expected


def plain(obj: Any) -> Any:
    """A dataclass as its JSON (tuples as lists, times as ISO-8601)."""
    return json.loads(json.dumps(dataclasses.asdict(obj), default=datetime.isoformat))


# --- the comparisons --------------------------------------------------------------------------


def _end(guid: str, port: int) -> str:
    return f"{guid}:{port}"


def summarise_topology(topo: Topology) -> dict[str, Any]:
    types = Counter(n.node_type for n in topo.nodes)
    linked = {(lk.a_guid, lk.a_port) for lk in topo.links}
    linked |= {(lk.b_guid, lk.b_port) for lk in topo.links}
    summary: dict[str, Any] = {
        "nodes": len(topo.nodes),
        "switches": types[NodeType.SWITCH],
        "hcas": types[NodeType.HCA],
        "routers": types[NodeType.ROUTER],
        "ports": len(topo.ports),
        "links": len(topo.links),
        "lid_placeholder_links": sum(lk.b_guid.startswith("lid:") for lk in topo.links),
        "port_states": dict(
            sorted(Counter(f"{p.state}/{p.phys_state}" for p in topo.ports).items())
        ),
        "unlinked_ports": sorted(
            _end(p.guid, p.port) for p in topo.ports if (p.guid, p.port) not in linked
        ),
        "slow_links": sorted(
            f"{_end(lk.a_guid, lk.a_port)} {_end(lk.b_guid, lk.b_port)} {lk.width} {lk.speed}"
            for lk in topo.links
            if (lk.width, lk.speed) != ("4X", "HDR")
        ),
    }
    # Only in the fixtures that have them.
    placeholders = sorted(n.guid for n in topo.nodes if n.guid.startswith(LID_KEY_PREFIX))
    if placeholders:
        summary["lid_placeholder_nodes"] = placeholders
    if topo.unplaced:
        summary["unplaced_ports"] = [f"{guid}:{port} line {no}" for guid, port, no, _ in topo.unplaced]
    if topo.duplicates:
        summary["duplicate_guids"] = [
            {"guid": d.guid, "keys": list(d.keys), "descriptions": list(d.descriptions),
             "line_no": d.line_no} for d in topo.duplicates]
    return summary


def check_topology_invariants(topo: Topology) -> None:
    guids = {n.guid for n in topo.nodes}
    assert len(guids) == len(topo.nodes), "duplicate node"
    assert len({(p.guid, p.port) for p in topo.ports}) == len(topo.ports), "duplicate port"
    assert all(p.guid in guids for p in topo.ports), "port of an unknown node"
    ends = [(lk.a_guid, lk.a_port, lk.b_guid, lk.b_port) for lk in topo.links]
    assert len(set(ends)) == len(ends), "duplicate link"
    assert all((a, ap) < (b, bp) for a, ap, b, bp in ends), "link not in canonical order"
    # Far ends known only by LID are placeholder nodes `lid:<N>` (LID 0 identifies nothing and
    # gets none); a second node printing a GUID already seen is kept apart as `<GUID>~<n>`.
    assert all(g in guids for _, _, g, _ in ends if g.startswith("lid:") and g != "lid:0")
    for guid in guids | {p.port_guid for p in topo.ports if p.port_guid}:
        if guid.startswith(LID_KEY_PREFIX):
            assert int(guid.removeprefix(LID_KEY_PREFIX)) > 0, guid
            continue
        guid = duplicated_guid(guid) or guid
        assert guid.startswith("0x") and len(guid) == 18 and guid == guid.lower(), guid


def _topology(result: Topology, expected: dict[str, Any], case: Case) -> None:
    check_topology_invariants(result)
    samples = {
        "sample_nodes": [plain(n) for n in result.nodes],
        "sample_ports": [plain(p) for p in result.ports],
        "sample_links": [plain(lk) for lk in result.links],
    }
    for key, records in samples.items():
        for wanted in expected.pop(key, []):
            assert wanted in records, f"{key}: {wanted} not in the output"
    assert summarise_topology(result) == expected


def topology_json(topo: Topology) -> dict[str, Any]:
    check_topology_invariants(topo)
    return {"nodes": [plain(n) for n in topo.nodes], "ports": [plain(p) for p in topo.ports],
            "links": [plain(lk) for lk in topo.links]}


def _full_topology(result: Topology, expected: dict[str, Any], case: Case) -> None:
    assert case.about
    assert {"topology": topology_json(result)} == expected


def _records(result: list[Any], expected: list[Any], case: Case) -> None:
    assert [plain(r) for r in result] == expected


def _value(result: Any, expected: Any, case: Case) -> None:
    assert result == expected


def event_record(e: PortEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"line_no": e.line_no, "at": e.at.isoformat(), "state": e.state}
    for name in (
        "device", "port_name", "guid", "port", "peer_device", "peer_port_name",
        "peer_guid", "peer_port", "cable_serial", "code",
    ):
        value = getattr(e, name)
        if value is not None:
            out[name] = value
    return out


def summarise(result: SyslogResult) -> dict[str, Any]:
    return {
        "events": [event_record(e) for e in result.events],
        "unparsed": [[no, reason] for no, _, reason in result.unparsed],
        "ignored": result.ignored,
    }


def check_log_invariants(result: SyslogResult, lines: list[tuple[int, str]]) -> None:
    by_no = dict(lines)
    # every line has exactly one outcome
    assert len(result.events) + len(result.unparsed) + result.ignored == len(lines)
    assert len({e.line_no for e in result.events} | {u[0] for u in result.unparsed}) == len(
        result.events
    ) + len(result.unparsed)
    for e in result.events:
        assert e.at.tzinfo is UTC, e
        assert e.message and e.message in by_no[e.line_no], e
        for guid in (e.guid, e.peer_guid):
            assert guid is None or re.fullmatch(r"0x[0-9a-f]{16}", guid), guid
    assert [e.line_no for e in result.events] == sorted(e.line_no for e in result.events)


def _events(result: SyslogResult, expected: dict[str, Any], case: Case) -> None:
    assert case.about
    if case.lines is not None:
        check_log_invariants(result, case.lines)
    assert summarise(result) == expected


def _dmesg(result: DmesgResult, expected: dict[str, Any], case: Case) -> None:
    events = []
    for event in result.events:
        record = {k: v for k, v in dataclasses.asdict(event).items() if v is not None}
        record["at"] = event.at.isoformat()
        events.append(record)
    assert events == expected["events"]
    assert [list(u) for u in result.unparsed] == expected["unparsed"]
    assert result.ignored == expected["ignored"]
    boots = [{"host": b.host, "at": b.at.isoformat(), "kind": b.kind, "end_at": b.end_at,
              "reason": b.reason, "line_no": b.line_no} for b in result.boots]
    assert boots == expected.get("boots", [])
    stamped: list[PortEvent | HostEvent] = [*result.events, *result.boots]
    for one in stamped:
        assert case.text.split("\n")[one.line_no - 1].endswith(one.message)


def job_record(job: Job) -> dict[str, Any]:
    record = dataclasses.asdict(job)
    record.update(start=_when(job.start), end=_when(job.end), nodes=list(job.nodes))
    return record


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def check_jobs_invariants(result: JobsResult, text: str) -> None:
    lines = text.replace("\r\n", "\n").split("\n")
    for job in result.jobs:
        for moment in (job.start, job.end):
            assert moment is None or moment.utcoffset() == timedelta(0)
        assert job.start is None or job.end is None or job.start <= job.end
        assert job.state == job.state.upper() and " " not in job.state
        assert all(job.nodes)
        assert 1 <= job.line_no <= len(lines)
    numbers = [j.line_no for j in result.jobs] + [u[0] for u in result.unparsed]
    assert len(numbers) == len(set(numbers)), "a line counted twice"
    for line_no, line, _ in result.unparsed:
        assert lines[line_no - 1] == line


def _jobs(result: JobsResult, expected: dict[str, Any], case: Case) -> None:
    assert {
        "jobs": [job_record(j) for j in result.jobs],
        "skipped_steps": result.skipped_steps,
        "unparsed": [[line_no, reason] for line_no, _, reason in result.unparsed],
    } == expected
    check_jobs_invariants(result, case.text)


def _windows(result: list[Any], expected: dict[str, Any], case: Case) -> None:
    assert {"windows": [plain(w) for w in result]} == expected


def host_event_record(event: HostEvent) -> dict[str, Any]:
    record = dataclasses.asdict(event)
    del record["message"]
    record.update(at=_when(event.at), end_at=_when(event.end_at))
    return record


def check_host_event_invariants(result: HostEventsResult, text: str) -> None:
    lines = text.replace("\r\n", "\n").split("\n")
    for event in result.events:
        assert event.kind in HOST_EVENT_KINDS
        assert event.at.utcoffset() == timedelta(0)
        assert event.end_at is None or event.end_at.utcoffset() == timedelta(0)
        assert event.end_at is None or event.end_at >= event.at
        assert event.host and " " not in event.host
        assert 1 <= event.line_no <= len(lines)
        assert event.message and event.message in lines[event.line_no - 1]
        assert len(event.reason) <= 200
    for line_no, line, reason in result.unparsed:
        assert lines[line_no - 1] == line and reason
    assert result.ignored >= 0


def _host_events(result: HostEventsResult, expected: dict[str, Any], case: Case) -> None:
    assert case.about
    assert {"events": [host_event_record(e) for e in result.events],
            "unparsed": [[n, reason] for n, _, reason in result.unparsed],
            "ignored": result.ignored} == expected
    check_host_event_invariants(result, case.text)


def joblog_record(e: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"line_no": e.line_no, "at": e.at.isoformat() if e.at else None}
    for name in ("kind", "network", "host", "hca", "hca_port", "peer", "status", "status_name",
                 "rank", "dev_index", "hca_candidates"):
        value = getattr(e, name)
        if isinstance(value, tuple):
            value = list(value) or None
        if value is not None:
            out[name] = value
    if out["at"] is None:
        del out["at"]
    return out


def summarise_joblog(result: JoblogResult) -> dict[str, Any]:
    return {
        "errors": [joblog_record(e) for e in result.errors],
        "first": [e.line_no for e in result.first],
        "unparsed": [[no, reason] for no, _, reason in result.unparsed],
        "ignored": result.ignored,
        "hosts": sorted(result.hosts),
        "hca_ports": sorted([h, c, p] for (h, c), p in result.hca_ports.items()),
        "addresses": dict(sorted(result.addresses.items())),
    }


def check_joblog_invariants(result: JoblogResult, lines: list[tuple[int, str]]) -> None:
    by_no = dict(lines)
    assert len(result.errors) + len(result.unparsed) + result.ignored == len(lines)
    outcomes = [e.line_no for e in result.errors] + [u[0] for u in result.unparsed]
    assert len(set(outcomes)) == len(outcomes)
    for e in result.errors:
        assert e.at is None or e.at.tzinfo is UTC, e
        assert e.kind and e.message, e
        assert e.line_no in by_no
        if not e.message.startswith("ChildFailedError "):
            # multi-line merges append to the first line's text
            head = e.message.split(" Last error: ")[0].split(" ncclRemoteError")[0]
            assert head[:60] in by_no[e.line_no], (e.message, by_no[e.line_no])
    assert [e.line_no for e in result.errors] == sorted(e.line_no for e in result.errors)
    assert all(f in result.errors for f in result.first)
    assert first_errors(result.errors) == result.first


def _joblog(result: JoblogResult, expected: dict[str, Any], case: Case) -> None:
    assert case.lines is not None and case.about
    check_joblog_invariants(result, case.lines)
    assert summarise_joblog(result) == expected


def optics_records(readings: list[OpticsReading]) -> list[dict[str, Any]]:
    out = []
    for r in readings:
        d = plain(r)
        if not d["issues"]:  # what a parser left out or cut: in a fixture's JSON when any
            del d["issues"]
        out.append(d)
    return out


def _readings(result: list[OpticsReading], expected: dict[str, Any], case: Case) -> None:
    assert case.about and case.about.count("http") >= 1, "say where the capture came from"
    assert {"readings": optics_records(result)} == expected


def _sysfs(result: SysfsSnapshot, expected: dict[str, Any], case: Case) -> None:
    assert {
        "node_guids": result.node_guids,
        "ports": [dataclasses.asdict(p) for p in result.ports],
        "counter_samples": [dataclasses.asdict(s) for s in to_counter_samples(result)],
    } == expected


def tables_json(result: Any) -> dict[str, Any]:
    """Forwarding tables or traces as the expected `.json` files hold them (DLIDs as decimal
    strings)."""
    if isinstance(result, ForwardingTables):
        return {
            "switches": [
                dataclasses.asdict(t) | {"ports": {str(k): v for k, v in t.ports.items()}}
                for t in result.switches
            ],
            "owners": {str(lid): dataclasses.asdict(o) for lid, o in result.owners.items()},
            "cut": [list(c) for c in result.cut],
        }
    out: dict[str, Any] = json.loads(json.dumps({"traces": [dataclasses.asdict(t)
                                                            for t in result]}))
    return out


def dumps(body: dict[str, Any]) -> str:
    """The `.json` layout: one line per switch, owner or trace, so a diff shows what moved."""
    parts = []
    for key, value in body.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"  {json.dumps(v)}" for v in value)
            parts.append(f" {json.dumps(key)}: [\n{items}\n ]")
        elif isinstance(value, dict) and value:
            items = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            parts.append(f" {json.dumps(key)}: {{\n{items}\n }}")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _tables(result: Any, expected: dict[str, Any], case: Case) -> None:
    assert (case.about or "").startswith(("captured with", "opensm")), "say its source"
    got = tables_json(result)
    if not expected:  # a new capture: show what the parser makes of it, for review
        pytest.fail(f"{case.path.with_suffix('.json')} has no expected records; the parser "
                    "gives:\n" + dumps(got))
    assert got == expected


def counters_json(table: CounterTable | None) -> list[list[Any]] | None:
    return None if table is None else [list(r) for r in table.rows()]


def ibdiagnet_json(r: IbdiagnetResult) -> dict[str, Any]:
    return {
        "topology": None if r.topology is None else topology_json(r.topology),
        "counters": counters_json(r.counters),
        "cables": [plain(c) for c in r.cables],
        "labels": [plain(x) for x in r.labels],
        "ber": [plain(b) for b in r.ber],
        "issues": [plain(i) for i in r.issues],
        "notes": [[no, reason] for no, _, reason in r.notes],
        "missing": r.missing,
        "sections": r.sections,
        "run_at": r.run_at.isoformat() if r.run_at else None,
        "version": r.version,
    }


def _ibdiagnet(result: IbdiagnetResult, expected: dict[str, Any], case: Case) -> None:
    assert case.about
    assert ibdiagnet_json(result) == expected


def _hostlist(result: Any, expected: dict[str, Any], case: Case) -> None:
    """One hostlist a line; the .json maps each to its hosts and their compressed form, or to
    the reason it is refused."""
    lines = case.text.splitlines()
    assert list(expected) == lines
    expand = case.kind.parser
    for line in lines:
        if isinstance(expected[line], str):
            with pytest.raises(ValueError, match=f"^{re.escape(expected[line])}$"):
                expand(line)
            continue
        hosts = expand(line)
        assert hosts == expected[line]["hosts"], line
        assert compress_hostlist(hosts) == expected[line]["compressed"], line
        assert sorted(expand(compress_hostlist(hosts))) == sorted(set(hosts))


Compare = Callable[[Any, Any, Case], None]
EXPECT: dict[str, Compare] = {
    "records": _records, "value": _value, "topology": _topology,
    "full-topology": _full_topology, "events": _events, "dmesg": _dmesg, "jobs": _jobs,
    "windows": _windows, "host-events": _host_events, "joblog": _joblog,
    "readings": _readings, "sysfs": _sysfs, "tables": _tables, "ibdiagnet": _ibdiagnet,
    "hostlist": _hostlist,
}
# Fixtures that are no one parse of the whole file (the kind's comparison runs the parser).
_NO_PARSE = frozenset({"hostlist"})


@pytest.mark.parametrize(("kind", "path"), CASES,
                         ids=[f"{k.fixtures}/{p.stem}" for k, p in CASES])
def test_fixture(kind: kinds.Kind, path: Path) -> None:
    case, expected = load(kind, path)
    if isinstance(expected, dict) and "error" in expected:
        with pytest.raises(ParseError) as err:
            case.parse()
        assert err.value.line_no == expected["error"]["line_no"]
        assert err.value.reason == expected["error"]["reason"]
        assert err.value.line == case.text.split("\n")[err.value.line_no - 1]
        return
    result = None if kind.expect in _NO_PARSE else case.parse()
    EXPECT[kind.expect](result, expected, case)


# --- every parser has fixtures, every folder a parser -------------------------------------------


@pytest.mark.parametrize("kind", kinds.KINDS, ids=lambda k: k.name)
def test_every_kind_has_cases(kind: kinds.Kind) -> None:
    folder = FIXTURES / kind.fixtures
    cases = [p for p in folder.glob("*") if p.suffix != ".json"]
    assert cases, f"{kind.name}: no cases in tests/fixtures/{kind.fixtures}/"
    for case in cases:
        assert case.with_suffix(".json").is_file(), f"{case} has no expected .json"
    assert kind.expect in EXPECT, f"{kind.name}: no comparison {kind.expect!r} here"


def test_every_fixture_folder_is_a_kinds() -> None:
    claimed = Counter(k.fixtures for k in kinds.KINDS)
    assert [f for f, n in claimed.items() if n > 1] == [], "one kind a folder"
    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    unclaimed = folders - set(claimed) - set(NOT_A_FORMAT)
    assert not unclaimed, f"fixture folders no kind in auditor/ingest/kinds.py claims: {unclaimed}"
    assert set(NOT_A_FORMAT) <= folders


def test_every_parser_module_reads_a_kind() -> None:
    """Each module of auditor/parse/ (not `_shared`) holds the parser of a registered kind, and
    so has fixtures."""
    modules = {f"auditor.parse.{m.name}" for m in pkgutil.iter_modules(auditor.parse.__path__)
               if not m.name.startswith("_")}
    parsers = {ref.partition(":")[0] for k in kinds.KINDS
               for ref in (k.parse, k.fixture_parse) if ref}
    assert modules - parsers == set()
