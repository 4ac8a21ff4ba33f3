"""Fixture, edge-case and round-trip tests for the readers of what current NVIDIA fabrics write
(issue #24): ibdiagnet's db_csv, net_dump and log, the NVOS event table and UFM's REST events,
and the writers of `auditor.simulate.vendor_formats` that the simulator uses.

One generic runner per format family: every `tests/fixtures/<family>/<case>.txt` is parsed
with the "params" of `<case>.json` and compared in full with that JSON ("about" says where the
text comes from). Records are compared as dataclass dicts; events as in test_log_parsers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from auditor.errors import ParseError
from auditor.models import CounterTable, NodeType, PortEvent, Topology
from auditor.parse._logline import SyslogResult
from auditor.parse.ibdiagnet import (
    IbdiagnetResult,
    label_port_number,
    parse_ibdiagnet,
    parse_ibdiagnet_folder,
    parse_ibdiagnet_log,
    parse_ibdiagnet_net_dump,
    speed_name,
    split_sections,
    width_name,
)
from auditor.parse.nvos_events import parse_nvos_events, parse_time
from auditor.parse.ufm_rest_events import parse_ufm_rest_events
from auditor.portmap import nvos_port_name, port_number
from auditor.simulate.ibsim import FatTree
from auditor.simulate.vendor_formats import (
    db_csv,
    net_dump,
    nvos_events_json,
    topology_of_tree,
    ufm_rest_events_json,
)
from tests.test_log_parsers import summarise
from tests.test_parsers import check_topology_invariants

FIXTURES = Path(__file__).parent / "fixtures"


def _plain(obj: Any) -> Any:
    return json.loads(json.dumps(dataclasses.asdict(obj)))


def topology_json(topo: Topology | None) -> dict[str, Any] | None:
    if topo is None:
        return None
    check_topology_invariants(topo)
    return {"nodes": [_plain(n) for n in topo.nodes], "ports": [_plain(p) for p in topo.ports],
            "links": [_plain(lk) for lk in topo.links]}


def counters_json(table: CounterTable | None) -> list[list[Any]] | None:
    return None if table is None else [list(r) for r in table.rows()]


def ibdiagnet_json(r: IbdiagnetResult) -> dict[str, Any]:
    return {
        "topology": topology_json(r.topology),
        "counters": counters_json(r.counters),
        "cables": [_plain(c) for c in r.cables],
        "labels": [_plain(x) for x in r.labels],
        "ber": [_plain(b) for b in r.ber],
        "issues": [_plain(i) for i in r.issues],
        "notes": [[no, reason] for no, _, reason in r.notes],
        "missing": r.missing,
        "sections": r.sections,
        "run_at": r.run_at.isoformat() if r.run_at else None,
        "version": r.version,
    }


def _tz(params: dict[str, Any]) -> Any:
    return ZoneInfo(params["tz"]) if params.get("tz") else None


def _at(params: dict[str, Any]) -> datetime | None:
    return datetime.fromisoformat(params["at"]) if params.get("at") else None


RUNNERS: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "ibdiagnet": lambda text, _: ibdiagnet_json(parse_ibdiagnet(text)),
    "ibdiagnet_net_dump": lambda text, _: topology_json(parse_ibdiagnet_net_dump(text)),
    "ibdiagnet_log": lambda text, p: summarise(parse_ibdiagnet_log(text, at=_at(p))),
    "nvos_events": lambda text, p: summarise(
        parse_nvos_events(text, host=p["host"], tz=_tz(p))),
    "ufm_rest_events": lambda text, p: summarise(
        parse_ufm_rest_events(text, tz=_tz(p) or UTC)),
}
CASES = sorted(p for family in RUNNERS for p in (FIXTURES / family).glob("*.txt"))


def run_fixture(path: Path) -> tuple[Any, dict[str, Any]]:
    expected: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())
    params = expected.get("params", {})
    return RUNNERS[path.parent.name](path.read_text(), params), expected


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture(path: Path) -> None:
    result, expected = run_fixture(path)
    expected.pop("about")
    expected.pop("params", None)
    if path.parent.name in ("ibdiagnet_net_dump",):
        assert result == expected["topology"]
    else:
        assert result == expected
