"""Windows and JSON of every command (issue #21, finding 3): a window length or a time outside
the calendar is one line of error (exit 2), never an OverflowError; NaN and infinities are null
in every JSON output, because JSON has no such numbers."""

from __future__ import annotations

import ast
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from auditor.cli import app
from auditor.config import load
from auditor.demo import build_demo
from auditor.errors import AuditorError, ConfigError
from auditor.report.tables import render_rows, to_json
from auditor.safe_text import csv_cell, finite, json_text
from auditor.timeparse import MAX_SPAN_DAYS, parse_instant, parse_span, parse_window

runner = CliRunner()
PACKAGE = Path(__file__).resolve().parent.parent / "auditor"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_demo(db)
    return db


def test_spans_are_bounded() -> None:
    assert parse_span(f"{MAX_SPAN_DAYS}d").days == MAX_SPAN_DAYS
    for bad in ("1000000d", f"{MAX_SPAN_DAYS + 1}d", "9" * 400 + "s", "5300w"):
        with pytest.raises(AuditorError, match="at most 36525d"):
            parse_span(bad)


def test_instants_are_bounded() -> None:
    for bad in ("9999-12-31T23:59:59Z", "0001-01-01", "1969-12-31T23:59:59Z",
                "9000-01-01T00:00:00Z"):
        with pytest.raises(AuditorError, match="a time between 1970 and 9000"):
            parse_instant(bad, "--until")
    start, end = parse_window(f"{MAX_SPAN_DAYS}d", "1970-01-01")
    assert start.year == 1869 and end == datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("command", [
    ["suspects"], ["flaps"], ["events"], ["watch-list"], ["outcomes"], ["export", "--out", "x"],
    ["fleet", "."], ["report", "--out", "r"]])
@pytest.mark.parametrize("window", [["--since", "1000000d"],
                                    ["--until", "9999-12-31T23:59:59Z"],
                                    ["--until", "0001-01-02", "--since", "2d"]])
def test_every_window_is_bounded_with_one_line(demo: Path, tmp_path: Path, command: list[str],
                                               window: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["--db", str(demo), *command, *window])
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert result.stdout == ""


def test_config_lengths_are_bounded(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text('[nightly]\nsince = "1000000d"\nkeep_reports_days = 1e308\n'
                   '[optics]\nhistory_days = 1e308\n[outcomes]\nsince = "99999999w"\n'
                   'clean_days = 40000\n[ranking]\nbefore_minutes = 1e300\n')
    with pytest.raises(ConfigError) as err:
        load(cfg, tmp_path / "a.duckdb")
    lines = err.value.messages()
    assert sorted(line.split(":")[0] for line in lines) == [
        "nightly.keep_reports_days", "nightly.since", "optics.history_days",
        "outcomes.clean_days", "outcomes.since", "ranking.before_minutes"]
    assert all("36525" in line or "5.2596e+07" in line for line in lines), lines


def test_json_has_no_bare_nan() -> None:
    data = {"score": math.nan, "rows": [{"x": math.inf}, (1.5, -math.inf)],
            "nested": {"deep": [[math.nan]]}, "ok": 2.5, "at": datetime(2026, 1, 1, tzinfo=UTC)}
    text = to_json(data)
    assert json.loads(text) == {"score": None, "rows": [{"x": None}, [1.5, None]],
                                "nested": {"deep": [[None]]}, "ok": 2.5,
                                "at": "2026-01-01T00:00:00+00:00"}
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(render_rows([{"score": math.nan}], "json")) == [{"score": None}]
    # A list or dict cell of a table or CSV is JSON too.
    assert csv_cell([1.0, math.nan]) == "[1.0, null]"


def test_json_is_written_in_one_place() -> None:
    """Every JSON output goes through auditor.safe_text.json_text (report.tables.to_json is
    its indented form): no other module of the auditor calls json.dump/json.dumps, except to
    digest its own options (never output), the scenario generator's ground truth and the
    simulator's vendor files (inputs, not outputs), the fabric cache's codec (lookup lists only
    the store reads back, issue #21), the precomputed watch list's findings and settings (read
    back only by analyse/watchlist.py itself, issue #25; NaN kept as NaN, not made null), and
    the JSON-event parsers that keep an entry as its
    event's message (stored text, shown through safe_text like every message)."""
    allowed = {"safe_text.py", "ingest/common.py", "simulate/scenario/generator.py",
               "store/fabric_codec.py", "simulate/vendor_formats.py", "parse/nvos_events.py",
               "parse/ufm_rest_events.py", "analyse/watchlist.py"}
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ("dump", "dumps")
                    and isinstance(node.value, ast.Name) and node.value.id == "json"):
                found.add(str(path.relative_to(PACKAGE)))
    assert found <= allowed, found - allowed


class _Tag(int):
    """An int subclass (as an IntEnum is): json.dumps writes its int value."""


_leaves = (st.none() | st.booleans() | st.integers() | st.floats() | st.text()
           | st.integers().map(_Tag) | st.datetimes(timezones=st.just(UTC)))
_keys = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
_values = st.recursive(_leaves, lambda inner: (
    st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(_keys, inner, max_size=4)), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_values, st.integers(min_value=0, max_value=4))
def test_indented_json_is_json_dumps_own(value: object, indent: int) -> None:
    """json_text's own indented writer (issue #25: json.dumps' with an indent is pure Python)
    writes what json.dumps writes, byte for byte, NaN and infinities made null as before."""
    def default(o: object) -> object:
        return o.isoformat() if isinstance(o, datetime) else str(o)

    def dumps(data: object) -> str:
        return json.dumps(data, indent=indent, default=default, allow_nan=False)

    try:
        try:
            want = dumps(value)
        except ValueError:
            want = dumps(finite(value))
    except ValueError:  # a NaN or infinite key, which finite() leaves as it is
        with pytest.raises(ValueError, match="Out of range float"):
            json_text(value, indent=indent, default=default)
        return
    assert json_text(value, indent=indent, default=default) == want
