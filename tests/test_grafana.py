"""The Grafana dashboard shipped in auditor/dashboards/ (issue #15), checked the way Grafana's
import would see it: the dashboard model's shape (ids, grid, targets, the datasource input), and
every metric, label and label value it queries present in what `auditor metrics` really writes
for a report of the demo fabric."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any, cast

import pytest

from auditor.analyse.audit import audit
from auditor.demo import build_demo
from auditor.report.build import build_report
from auditor.report.document import Report
from auditor.report.prometheus import render
from auditor.store import Store
from tests.promtext import ExpositionError, parse

DASHBOARD = "fabric-auditor.json"
# Labels Prometheus adds when it scrapes node_exporter, not the textfile's own.
SCRAPE_LABELS = {"instance", "job", "__name__"}
_METRIC_RE = re.compile(r"\b(auditor_[a-z_]+)\b")
_MATCHER_RE = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    text = resources.files("auditor.dashboards").joinpath(DASHBOARD).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, list[dict[str, Any]]]:
    """A real report of the demo fabric and the sources beside it."""
    db = tmp_path_factory.mktemp("grafana") / "demo.duckdb"
    build_demo(db)
    until = datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=1)
    with Store(db, read_only=True) as store:
        return build_report(audit(store, until - timedelta(days=2), until)), store.sources()


@pytest.fixture(scope="module")
def exposition(demo_report: tuple[Report, list[dict[str, Any]]]
               ) -> dict[str, list[dict[str, str]]]:
    """metric name -> the label sets of its samples, read by a strict exposition parser."""
    samples = parse(render(*demo_report))
    return {name: [labels for labels, _ in rows] for name, rows in samples.items()}


def _targets(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for p in dashboard["panels"] for t in p["targets"]]


def test_the_model_imports(dashboard: dict[str, Any]) -> None:
    assert isinstance(dashboard["title"], str) and dashboard["title"]
    assert re.fullmatch(r"[a-z0-9-]{1,40}", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    boxes = []
    for p in dashboard["panels"]:
        g = p["gridPos"]
        assert all(isinstance(g[k], int) for k in ("x", "y", "w", "h")), p["title"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["w"] > 0 and g["h"] > 0, p["title"]
        assert p["type"] in {"stat", "table", "timeseries"}, p["title"]
        assert p["targets"], p["title"]
        boxes.append((p["title"], g))
    for (a, ga), (b, gb) in combinations(boxes, 2):
        apart = (ga["x"] + ga["w"] <= gb["x"] or gb["x"] + gb["w"] <= ga["x"]
                 or ga["y"] + ga["h"] <= gb["y"] or gb["y"] + gb["h"] <= ga["y"])
        assert apart, f"{a} overlaps {b}"


def test_every_query_uses_the_datasource_input(dashboard: dict[str, Any]) -> None:
    (ds_input,) = dashboard["__inputs"]
    assert (ds_input["type"], ds_input["pluginId"]) == ("datasource", "prometheus")
    uid = "${" + ds_input["name"] + "}"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables[ds_input["name"]]["type"] == "datasource"
    for p in dashboard["panels"]:
        assert p["datasource"]["uid"] == uid, p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == uid and t["expr"] and t["refId"], p["title"]
    for name in re.findall(r"\$(\w+)", " ".join(t["expr"] for t in _targets(dashboard))):
        assert name in variables, name


def test_every_metric_and_label_queried_is_written(
        dashboard: dict[str, Any], exposition: dict[str, list[dict[str, str]]]) -> None:
    queried: set[str] = set()
    exprs = [t["expr"] for t in _targets(dashboard)]
    exprs.append(dashboard["templating"]["list"][1]["definition"])
    for expr in exprs:
        metrics = set(_METRIC_RE.findall(expr))
        assert metrics, expr
        queried |= metrics
        for metric in metrics:
            assert metric in exposition, metric
        label_sets = [ls for m in metrics for ls in exposition[m]]
        for label, op, value in _MATCHER_RE.findall(expr):
            if label in SCRAPE_LABELS:
                continue
            assert any(label in ls for ls in label_sets), (expr, label)
            if op == "=":
                assert any(ls.get(label) == value for ls in label_sets), (expr, label, value)
    # legends name labels the metric has
    for t in _targets(dashboard):
        labels = set().union(*(ls.keys() for m in _METRIC_RE.findall(t["expr"])
                                for ls in exposition[m]))
        for name in re.findall(r"\{\{(\w+)\}\}", t.get("legendFormat", "")):
            assert name in labels, (t["expr"], name)
    # and the dashboard shows every metric the textfile has
    assert queried == set(exposition)


def test_the_file_is_in_the_package(dashboard: dict[str, Any]) -> None:
    path = Path(str(resources.files("auditor.dashboards").joinpath(DASHBOARD)))
    assert path.is_file() and path.stat().st_size > 1000


PER_LINK = ("auditor_link_flaps", "auditor_suspect_score")


def test_every_per_link_series_names_its_ends_by_guid(
        demo_report: tuple[Report, list[dict[str, Any]]],
        exposition: dict[str, list[dict[str, str]]]) -> None:
    report, _ = demo_report
    guids = {(s["ends"][0]["guid"], s["ends"][1]["guid"] if len(s["ends"]) > 1 else "")
             for s in report["suspects"]}
    assert guids
    for metric in PER_LINK:
        assert {(ls["a_guid"], ls["b_guid"]) for ls in exposition[metric]} == guids, metric


def test_two_switches_with_one_name_are_two_series(
        demo_report: tuple[Report, list[dict[str, Any]]]) -> None:
    """Issue #21: two pairs of switches named "Quantum Mellanox Technologies" (the default
    description), one suspect link on the same ports of each: the same labels but their GUIDs,
    which the Prometheus client refused as one series twice."""
    report, sources = demo_report
    first = copy.deepcopy(report["suspects"][0])
    first["ends"] = [{"name": "Quantum Mellanox Technologies", "guid": "0xb8599f0300aa0001",
                      "port": 7, "label": "port 7"},
                     {"name": "Quantum Mellanox Technologies", "guid": "0xb8599f0300bb0001",
                      "port": 1, "label": "port 1"}]
    second = copy.deepcopy(first)
    second["rank"] = 2
    second["ends"][0]["guid"], second["ends"][1]["guid"] = "0xb8599f0300aa0002", \
        "0xb8599f0300bb0002"
    twins = {**report, "suspects": [first, second]}
    samples = parse(render(cast(Report, twins), sources))  # ExpositionError on a duplicate
    for metric in PER_LINK:
        assert {ls["a_guid"] for ls, _ in samples[metric]} == {"0xb8599f0300aa0001",
                                                                "0xb8599f0300aa0002"}
    # The same link listed twice is written once (its best-ranked suspect).
    same = {**report, "suspects": [first, {**copy.deepcopy(first), "rank": 2}]}
    flaps = parse(render(cast(Report, same), sources))["auditor_link_flaps"]
    assert len(flaps) == 1


def test_the_strict_parser_refuses_a_duplicate_series() -> None:
    with pytest.raises(ExpositionError, match="duplicate series"):
        parse('# TYPE m gauge\nm{a="x"} 1\nm{a="x"} 2\n')


def test_the_dashboard_tells_same_named_ends_apart(dashboard: dict[str, Any]) -> None:
    for p in dashboard["panels"]:
        for t in p["targets"]:
            if "auditor_link_flaps" in t["expr"]:
                assert "{{a_guid}}" in t["legendFormat"] and "{{b_guid}}" in t["legendFormat"]
            if "auditor_suspect_score" in t["expr"]:
                hidden = p["transformations"][0]["options"]["excludeByName"]
                assert not {"a_guid", "b_guid"} & set(hidden)
