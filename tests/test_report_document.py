"""The audit (auditor/analyse/audit.py) and the report document built from it
(auditor/report/document.py): where a suspect's ends are, what part sits in them, which devices
were audited, and a report.json that is the typed document and renders the same page."""

from __future__ import annotations

import json
import types
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from typer.testing import CliRunner

from auditor.analyse.audit import Audit, Part, Place, audit
from auditor.cli import app
from auditor.demo import build_demo
from auditor.models import Location
from auditor.report.build import build_report, replacements_csv, write_report
from auditor.report.document import Report
from auditor.report.html import render_html
from auditor.store import SourceMeta, Store, utc_naive

SINCE = datetime(2026, 11, 27, 3, tzinfo=UTC)
UNTIL = datetime(2026, 11, 30, 3, tzinfo=UTC)
LEAF04, SPINE01 = "0xb8599f0300200004", "0xb8599f0300100001"
# The demo fabric's real captures, then one cable (spine01 IB1/4 <-> leaf04 IB1/5) flaps.
SYSLOG = ("2026-11-30T01:00:01+00:00 leaf04 mgmtd[123]: [mgmtd.NOTICE]: Interface IB1/5 "
          "changed state to DOWN\n"
          "2026-11-30T01:00:25+00:00 leaf04 mgmtd[123]: [mgmtd.NOTICE]: Interface IB1/5 "
          "changed state to UP\n")


def _module(port_name: str, guid: str, port: int, serial: str | None) -> dict[str, object]:
    return {"port_name": port_name, "guid": guid, "port": port, "present": True,
            "vendor": "NVIDIA", "part_number": "MFS1S00-H010V", "serial_number": serial,
            "length": "10m", "cable_type": "AOC", "revision": "A2"}


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Audit:
    root = tmp_path_factory.mktemp("audit")
    db = root / "db.duckdb"
    build_demo(db)
    (root / "syslog").write_text(SYSLOG, encoding="utf-8")
    res = CliRunner().invoke(app, ["--db", str(db), "ingest", "--kind", "syslog",
                                   str(root / "syslog")])
    assert res.exit_code == 0, res.output
    at = datetime(2026, 11, 29, 12, tzinfo=UTC)
    with Store(db) as store, store.transaction():
        source = store.add_source(SourceMeta("inventory", str(root / "inventory.csv"), "0" * 64,
                                             "file", at, True, 2, 0, 2))
        store.add_inventory(source, [Location("leaf04", "fra1", "B", "B07", "38",
                                              port_labels=((5, "P5 (upper)"),)),
                                     Location("spine01", "fra1", "A", "A01", None)])
        store.add_transceivers(at, "leaf04", [_module("IB1/5", LEAF04, 5, "MT-LEAF")])
        store.add_transceivers(at, "spine01", [_module("IB1/4", SPINE01, 4, "MT-SPINE")])
        store.add_device_status(at, "leaf04", "ssh", "ok", "")
        store.add_device_status(at, "spine01", "snmp", "timeout", "no answer in 30 s")
        store.add_device_status(at, "gpu-node-01", "host", "ok", "")
    with Store(db, read_only=True) as store:
        return audit(store, utc_naive(SINCE), utc_naive(UNTIL), limit=4)


def _mismatches(value: object, tp: object, path: str = "report") -> list[str]:
    """Where a JSON value differs from a type of the schema: missing or extra keys, wrong
    types. (pydantic checks typing.TypedDict only from Python 3.12 on.)"""
    origin, args = get_origin(tp), get_args(tp)
    if is_typeddict(tp):
        hints = get_type_hints(tp)
        if not isinstance(value, dict) or set(value) != set(hints):
            return [f"{path}: keys {sorted(value) if isinstance(value, dict) else value!r}, "
                    f"schema {sorted(hints)}"]
        return [m for key, t in hints.items() for m in _mismatches(value[key], t,
                                                                   f"{path}.{key}")]
    if origin in (Union, types.UnionType):
        found = [_mismatches(value, arm, path) for arm in args]
        return [] if any(not m for m in found) else [m for ms in found for m in ms]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [m for i, v in enumerate(value) for m in _mismatches(v, args[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        return [m for k, v in value.items() for m in _mismatches(v, args[1], f"{path}.{k}")]
    if origin is Literal:
        return [] if value in args else [f"{path}: {value!r} not one of {args}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    allowed = (int, float) if tp is float else tp  # JSON writes 2.0 as 2.0, but 0 stays 0
    ok = isinstance(value, allowed) and (tp is bool or not isinstance(value, bool))
    return [] if ok else [f"{path}: {value!r} is not {tp}"]


def _finding_of(audited: Audit, guid: str) -> int:
    return next(i for i, f in enumerate(audited.findings) if guid in {p.guid for p in f.ends})


def test_a_suspects_ends_are_placed_and_its_part_named(audited: Audit) -> None:
    f = audited.findings[_finding_of(audited, LEAF04)]
    assert f.suspect.component == "cable" and len(f.flaps) == 1
    by_name = {p.name: p for p in f.ends}
    assert by_name["leaf04"] == Place("leaf04", LEAF04, 5, "P5 (upper)", "fra1", "B", "B07", "38")
    # No label override: the faceplate label derived from the node type.
    assert by_name["spine01"] == Place("spine01", SPINE01, 4, "IB1/4", "fra1", "A", "A01", None)
    # The first end's module names the part; both ends' serial numbers are kept.
    first = f.ends[0].name
    assert f.part == Part("NVIDIA", "MFS1S00-H010V", "MT-SPINE / MT-LEAF" if first == "spine01"
                          else "MT-LEAF / MT-SPINE", "10m")
    suspect_edges = [e for e in f.neighbourhood.edges if e.suspect]
    assert len(suspect_edges) == 1 and {suspect_edges[0].a, suspect_edges[0].b} == {
        LEAF04, SPINE01}
    assert {n.guid for n in f.neighbourhood.nodes} >= {LEAF04, SPINE01}


def test_the_whole_window(audited: Audit) -> None:
    assert len(audited.findings) == 4 and len(audited.suspects) > 4  # limit=4
    assert [f.rank for f in audited.findings] == [1, 2, 3, 4]
    cov = audited.coverage
    assert (cov.switches_ok, cov.switches_total, cov.hosts_ok, cov.hosts_total) == (1, 2, 1, 1)
    assert [(d.device, d.status) for d in cov.failed] == [("spine01", "timeout")]
    assert len(audited.heatmap.bins) == 24 and audited.heatmap.bins[0] == utc_naive(SINCE)
    rows = dict(audited.heatmap.rows)
    assert sum(rows["leaf04"]) == 1 and rows["leaf04"][-1] == 1  # the flap, in the last bin
    assert audited.tracking == []


def test_report_json_is_the_typed_document(audited: Audit, tmp_path: Path) -> None:
    report = build_report(audited)
    write_report(tmp_path, report)
    loaded = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    # Every key of the schema with its type, and no other key.
    assert _mismatches(loaded, Report) == []
    assert loaded == json.loads(json.dumps(report))
    # The page and the technician's CSV are drawn from that document alone.
    assert render_html(loaded) == (tmp_path / "report.html").read_text(encoding="utf-8")
    assert replacements_csv(loaded) == (tmp_path / "replacements.csv").read_text(
        encoding="utf-8")
    row = next(r for r in loaded["replacements"] if r["a"]["guid"] == LEAF04
               or (r["b"] and r["b"]["guid"] == LEAF04))
    ends = [row["a"], row["b"]]
    assert {"name": "leaf04", "guid": LEAF04, "port": 5, "label": "P5 (upper)", "site": "fra1",
            "row": "B", "rack": "B07", "u": "38"} in ends
    assert loaded["coverage"]["failed_devices"] == [
        {"device": "spine01", "collector": "snmp", "status": "timeout",
         "detail": "no answer in 30 s"}]
