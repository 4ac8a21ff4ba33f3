"""`--kind auto` decides every file as it did when the registry of input kinds was made (issue
#22): each file under tests/fixtures/ and each file of four generated scenarios gets the kind
(or the error) recorded then in tests/kind_detection.json. A decision that changes is a change
of behaviour: record it there on purpose, with the reason in the commit.

A file's decision is the ingest's own: `plan_ingest` names the ingester, and that ingester
recognises the kind from what it reads of the file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from auditor.collect.logfile import read_head
from auditor.errors import AuditorError
from auditor.ingest.captures import detect_kind
from auditor.ingest.common import read_capture
from auditor.ingest.jobs import detect_job_kind, read_damaged
from auditor.ingest.logs import detect_log_kind
from auditor.ingest.optics import detect_optics_kind
from auditor.ingest.plan import plan_ingest
from auditor.simulate.scenario import REALISTIC, generate
from tests.conftest import FIXTURES

TABLE = Path(__file__).parent / "kind_detection.json"
SMALL: dict[str, Any] = {"spines": 2, "leaves": 4, "hosts_per_leaf": 4}
SCENARIOS: dict[str, dict[str, Any]] = {
    "default": SMALL,
    "realistic_reboots_harmless": {**REALISTIC, "spines": 2, "leaves": 16, "hosts_per_leaf": 8,
                                   "host_reboots": 2, "host_records": "both",
                                   "harmless_flaps": 2},
    "optics_reboots_harmless": {**SMALL, "days": 9.0, "jobs_per_day": 20, "optics": True,
                                "host_reboots": 2, "host_records": "boots",
                                "harmless_flaps": 2},
    "outcomes": {"spines": 2, "leaves": 4, "hosts_per_leaf": 8, "days": 14.0,
                 "outcomes": True, "host_reboots": 2, "host_records": "slurm"},
}
_KIND_LIST = re.compile(r"\((?:[a-z-]+, )+[a-z-]+\)")


def _error(exc: AuditorError, path: Path) -> str:
    # The list of kinds an error offers is checked once, in test_errors_offer_the_kinds.
    return "error: " + _KIND_LIST.sub("(...)", str(exc).replace(str(path), "<file>"))


def auto_kind(path: Path) -> str:
    """The kind `ingest --kind auto` reads `path` as, or the error it stops with."""
    try:
        plan = plan_ingest([path], "auto")
        if plan.captures:
            return detect_kind(read_capture(path)[0], str(path))
        if plan.logs:
            return detect_log_kind(read_head(path).decode("utf-8", "replace"), path)
        if plan.job_files:
            return detect_job_kind(read_damaged(path)[0][:65536]) or "error: no job kind"
        return detect_optics_kind(read_capture(path)[0][:65536]) or "error: no optics kind"
    except AuditorError as exc:
        return _error(exc, path)


def _decisions(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): auto_kind(p) for p in sorted(root.rglob("*"))
            if p.is_file()}


def _grouped(decisions: dict[str, str]) -> dict[str, dict[str, int]]:
    """A scenario's decisions per file name with its numbers as `#` (job ids, hosts, times)."""
    groups: dict[str, Counter[str]] = {}
    for path, kind in decisions.items():
        groups.setdefault(re.sub(r"\d+", "#", path), Counter())[kind] += 1
    return {name: dict(sorted(kinds.items())) for name, kinds in sorted(groups.items())}


def _table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(TABLE.read_text())
    return table


def test_every_fixture_file_is_decided_as_recorded() -> None:
    recorded: dict[str, str] = _table()["fixtures"]
    now = _decisions(FIXTURES)
    changed = {p: (recorded[p], now[p]) for p in recorded.keys() & now.keys()
               if recorded[p] != now[p]}
    assert not changed, f"--kind auto decides these otherwise now (was, is): {changed}"
    gone = sorted(recorded.keys() - now.keys())
    assert not gone, f"recorded in {TABLE.name} but not in tests/fixtures: {gone}"
    new = {p: now[p] for p in sorted(now.keys() - recorded.keys())}
    assert not new, f"new fixture files: add what --kind auto decides to {TABLE.name}: " \
                    + json.dumps(new, indent=1)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_file_is_decided_as_recorded(tmp_path: Path, name: str) -> None:
    generate(tmp_path, seed=3, **SCENARIOS[name])
    assert _grouped(_decisions(tmp_path)) == _table()["scenarios"][name]


def test_errors_offer_the_kinds(tmp_path: Path) -> None:
    unknown = tmp_path / "notes.txt"
    unknown.write_text("nothing any tool prints\n")
    with pytest.raises(AuditorError) as err:
        plan_ingest([unknown], "auto")
    offered = _KIND_LIST.search(str(err.value))
    assert offered is not None and offered.group(0) == _table()["kinds_offered"]
