"""The report with transceiver diagnostics (issue #14): report.json keeps its keys and adds the
suspects' trend data and the watch list; report.html draws a trend plot in the card of a suspect
whose modules have a history and lists the watch list; module text from the fabric is inert
there and in `watch-list`'s table."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.analyse.audit import audit
from auditor.cli import app
from auditor.ingest.captures import ingest_files
from auditor.report.build import build_report
from auditor.report.html import render_html
from auditor.report.svg import SVG_NS
from auditor.store import SourceMeta, Store, utc_naive
from auditor.timeparse import parse_instant
from tests.test_report_html import _plots
from tests.test_watch_list_cli import FIXTURE, SICK, START, UNTIL, WELL, _readings

KEYS = {"title", "generated_at", "window", "coverage", "summary", "replacements", "suspects",
        "timelines", "neighbourhoods", "heatmap", "tracking"}
HOSTILE = "gpu-\x1b[2J<script>x</script>"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "a.duckdb"
    with Store(path) as store:
        ingest_files(store, [FIXTURE], at=START - timedelta(days=1))
        sid = store.add_source(SourceMeta("ethtool-module", "m", "c" * 64, "file", START, True,
                                          1, 0, 45))
        readings = _readings(SICK[0], "MT2231FT00001", -6.0, -0.4)
        readings += _readings(WELL[0], "MT2231FT00002", -1.2, 0.0)
        # A module whose host wrote markup and a terminal escape into its name, also ageing.
        readings += _readings(HOSTILE, "=HYPERLINK(\"x\")", -6.5, -0.4)
        store.add_optics(sid, readings, [(SICK[1], 1)] * 15 + [(WELL[1], 1)] * 15
                         + [(None, None)] * 15)
    return path


@pytest.fixture(scope="module")
def report(db: Path) -> dict:
    until = utc_naive(parse_instant(UNTIL))
    with Store(db, read_only=True) as store:
        result = audit(store, until - timedelta(hours=24), until)
    return dict(build_report(result))


def test_report_json_keeps_its_keys_and_adds_the_optics(report: dict) -> None:
    assert set(report) > KEYS and set(report) - KEYS == {
        "optics_trends", "watch_list", "outcomes", "watch_list_computed_at",
        "watch_list_precomputed", "watch_list_on_demand_because"}  # the last three: #25
    (suspect,) = report["suspects"]
    assert suspect["component"] == "transceiver" and report["replacements"][0]["verdict"] == \
        "transceiver"
    traces = report["optics_trends"][str(suspect["rank"])]
    assert [(t["device"], t["quantity"], t["lane"], t["watched"]) for t in traces] == [
        (SICK[0], "rx_power_dbm", 2, True)]
    (t,) = traces
    assert (t["warning"], t["alarm"], t["unit"]) == (-10.3, -13.31, "dBm")
    assert [s["lane"] for s in t["series"]] == [1, 2, 3, 4]
    points = t["series"][1]["points"]
    assert len(points) == 15 and points[0][0] == "2026-11-15" and points[-1][0] == "2026-11-29"
    assert points[-1][1] < points[0][1]  # the sinking lane
    assert {w["device"] for w in report["watch_list"]} == {SICK[0], HOSTILE}  # not WELL
    json.dumps(report)  # plain JSON types only


def test_html_draws_the_trend_and_lists_the_watch_list(report: dict) -> None:
    page = render_html(report)  # type: ignore[arg-type]
    assert 'aria-label="Diagnostics trend of gpu-node-07 mlx5_0/1, S/N MT2231FT00001: ' \
        'Rx power"' in page
    (plot,) = [p for p in _plots(page) if p.get("aria-label", "").startswith("Diagnostics")]
    drawn = ["".join(el.itertext()) for el in plot.iter() if el.tag == f"{{{SVG_NS}}}text"]
    assert "warning -10.3 dBm" in drawn and "alarm -13.31 dBm" in drawn
    assert "lane 2 (watched)" in drawn and "15 Nov" in drawn
    assert '<section class="block watch" id="watch">' in page
    watch = page[page.index('id="watch"'):page.index('id="tracking"')]
    assert "gpu-node-07" in watch and "past its low warning -10.3 dBm" in watch
    assert watch.count('class="badge v-transceiver">strong') == 2
    # The hostile module name is shown, inert: no tag, no escape character.
    assert "<script>" not in page and "\x1b" not in page
    assert "gpu-\\x1b[2J&lt;script&gt;x&lt;/script&gt;" in watch


def test_html_without_diagnostics_says_so(report: dict) -> None:
    empty = {**report, "watch_list": [], "optics_trends": {}}
    page = render_html(empty)  # type: ignore[arg-type]
    assert "No transceiver trends in this window" in page
    assert "Diagnostics trend of" not in page


def test_watch_list_table_and_csv_are_inert(db: Path) -> None:
    table = CliRunner().invoke(app, ["--db", str(db), "watch-list", "--until", UNTIL])
    assert table.exit_code == 0 and "\x1b" not in table.stdout and "gpu-\\x1b[2J" in table.stdout
    csv = CliRunner().invoke(app, ["--db", str(db), "watch-list", "--until", UNTIL,
                                   "--format", "csv"])
    assert csv.exit_code == 0
    assert "'=HYPERLINK" in csv.stdout and ",=HYPERLINK" not in csv.stdout
