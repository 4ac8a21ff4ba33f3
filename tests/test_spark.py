"""The Spark SQL of docs/export.md on a real Spark (issue #25): PySpark in `local[2]` reads
`auditor export` output of three generated fabrics, runs the statements the doc shows (only the
folder and the days changed), and must say what `auditor fleet` says, row for row.

Needs the `spark` extra (pyspark, in the `test` extra too) and Java 17 (Debian's
openjdk-17-jre-headless, which run.sh installs). Without them the test is skipped and says
which is missing, except under CI (CI=true), where a skip would hide that the doc's SQL was
never run: there it fails.

Spark listens on 127.0.0.1 only (driver host and bind address, SPARK_LOCAL_IP), with no web UI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate

runner = CliRunner()
DOC = Path(__file__).resolve().parent.parent / "docs" / "export.md"
START = datetime(2026, 11, 20, tzinfo=UTC)
DAYS = ("2026-11-20", "2026-11-21")
# What the doc's statements name, replaced by the test's folder and days.
DOC_FOLDER = "/srv/fabric-history"
DOC_DAYS = ("2026-11-25", "2026-12-01")


def _missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install 'fabric-auditor[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no java (apt-get install openjdk-17-jre-headless)"
    return None


def _statements() -> dict[str, str]:
    """Every statement of the doc's ```sql blocks that begin with `-- Spark SQL`, by the
    comment line before it (the block's heading for the first one)."""
    found: dict[str, str] = {}
    for block in re.findall(r"```sql\n(-- Spark SQL.*?)```", DOC.read_text(encoding="utf-8"),
                            re.DOTALL):
        for chunk in block.split(";\n"):
            lines = [ln for ln in chunk.strip().splitlines() if ln.strip()]
            if not lines:
                continue
            heading = lines[0].removeprefix("-- ") if lines[0].startswith("--") else None
            sql = "\n".join(ln for ln in lines if not ln.startswith("--"))
            name = heading or sql.split("\n")[0]
            assert name not in found, name
            found[name] = sql
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three fabrics of different seeds and shapes, each in its own database, exported into
    one folder as a site's nightly jobs would."""
    root = tmp_path_factory.mktemp("spark-fabrics")
    out = root / "history"
    for name, seed, shape in (("pod1", 3, (2, 4, 4)), ("pod2", 11, (2, 4, 4)),
                              ("pod3", 7, (4, 8, 4))):
        scen = root / f"{name}-scenario"
        generate(scen, seed=seed, spines=shape[0], leaves=shape[1], hosts_per_leaf=shape[2],
                 days=2.0, start=START)
        db = root / f"{name}.duckdb"
        load_scenario(scen, db)
        result = runner.invoke(app, ["--db", str(db), "export", "--out", str(out), "--fabric",
                                     name, "--since", "47h", "--until", "2026-11-21T23:59:59Z"])
        assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Spark test: {missing}")
        pytest.skip(missing)
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master("local[2]").appName("auditor-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "512m")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # A few kB of data on 2 shared cores: the JVM's start (C1 only, serial GC), code
        # generation and adaptive planning cost more than the queries (measured: 78 s -> 27 s
        # for the whole session under load 8-10).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
        .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def _fleet(exported: Path, since: str, until: str) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(exported), "--since", since, "--until", until,
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["warnings"] == []
    return data


def _sql(text: str, exported: Path) -> str:
    return (text.replace(f"'{DOC_FOLDER}/", f"'{exported}/")
            .replace(f"'{DOC_DAYS[0]}'", f"'{DAYS[0]}'")
            .replace(f"'{DOC_DAYS[1]}'", f"'{DAYS[-1]}'"))


def _json_value(value: object) -> object:
    """A Spark value as `fleet --format json` writes it."""
    if isinstance(value, datetime):
        return value.isoformat() + "Z"
    return value


@pytest.fixture(scope="module")
def answers(spark: Any, exported: Path) -> dict[str, list[dict[str, Any]]]:
    """Every statement of the doc run in order; the queries' rows by their heading."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, text in _statements().items():
        rows = spark.sql(_sql(text, exported)).collect()
        out[name] = [{k: _json_value(v) for k, v in r.asDict().items()} for r in rows]
    return out


PER_DAY = "Spark SQL: the fleet per fabric and day (flaps, still down, suspects)"
SUSPECTS = "Spark SQL: the fleet's suspects per fabric and day, best first"
WORST = "Spark SQL: the worst links across fabrics"
MTBI = "Spark SQL: fleet MTBI per cohort"


def test_spark_says_what_fleet_says(answers: dict[str, list[dict[str, Any]]],
                                    exported: Path) -> None:
    whole = _fleet(exported, "47h", f"{DAYS[-1]}T23:59:59Z")
    assert whole["days"] == list(DAYS)
    # The suspects, row for row and column for column, in fleet's order.
    assert answers[SUSPECTS] == whole["suspects"]
    assert len(whole["suspects"]) >= 12  # three fabrics' bad cables: not a comparison of empties
    assert {r["fabric"] for r in whole["suspects"]} == {"pod1", "pod2", "pod3"}
    # Per fabric and day: fleet over that one day.
    expected = []
    for day in DAYS:
        one = _fleet(exported, "1439m", f"{day}T23:59:59Z")
        assert one["days"] == [day, day]
        for f in one["fabrics"]:
            assert f["days"] == 1
            expected.append({"fabric": f["fabric"], "day": day, "flaps": f["flaps"],
                             "still_down": f["still_down"], "suspects": f["suspects"]})
    expected.sort(key=lambda r: (r["fabric"], r["day"]))
    assert answers[PER_DAY] == expected
    # Summed per fabric: fleet's table of fabrics (every day has rows here).
    summed: dict[str, dict[str, Any]] = {}
    for r in answers[PER_DAY]:
        s = summed.setdefault(r["fabric"], {"fabric": r["fabric"], "days": 0, "flaps": 0,
                                            "still_down": 0, "suspects": 0})
        s["days"] += 1
        for key in ("flaps", "still_down", "suspects"):
            s[key] += r[key]
    assert list(summed.values()) == whole["fabrics"]


def test_worst_links_across_fabrics(answers: dict[str, list[dict[str, Any]]],
                                    exported: Path) -> None:
    whole = _fleet(exported, "47h", f"{DAYS[-1]}T23:59:59Z")
    links: dict[tuple[Any, ...], dict[str, Any]] = {}
    gpu: dict[tuple[Any, ...], float] = defaultdict(float)
    for s in whole["suspects"]:
        if s["b_guid"] is None:
            continue
        key = (s["fabric"], s["a_guid"], s["a_port"], s["b_guid"], s["b_port"])
        link = links.setdefault(key, {
            "fabric": s["fabric"], "a_name": s["a_name"], "a_guid": s["a_guid"],
            "a_port": s["a_port"], "b_name": s["b_name"], "b_guid": s["b_guid"],
            "b_port": s["b_port"], "days": 0, "flaps": 0, "jobs_failed": 0,
            "gpu_hours_lost": 0.0, "best_score": s["score"]})
        link["days"] += 1
        link["flaps"] += s["flaps"]
        link["jobs_failed"] += s["jobs_failed"]
        link["best_score"] = max(link["best_score"], s["score"])
        gpu[key] += s["gpu_hours_lost"]
    for key, link in links.items():
        link["gpu_hours_lost"] = round(gpu[key], 1)
    expected = sorted(links.values(), key=lambda r: (
        -r["gpu_hours_lost"], -r["days"], -r["flaps"], r["fabric"], r["a_guid"], r["a_port"]))
    assert answers[WORST] == expected[:20]
    assert any(r["days"] > 1 for r in answers[WORST])  # a link that was a suspect both days


def test_fleet_mtbi_per_cohort(answers: dict[str, list[dict[str, Any]]],
                               exported: Path) -> None:
    """The link-days are the exported topology's links times the days; the flaps, every flap
    fleet counts (each one's link is in the topology)."""
    whole = _fleet(exported, "47h", f"{DAYS[-1]}T23:59:59Z")
    topology = ds.dataset(exported / "links", format="parquet", partitioning="hive").to_table()
    nodes = ds.dataset(exported / "nodes", format="parquet", partitioning="hive").to_table()
    hcas = {(f, g) for f, g, t in zip(nodes.column("fabric").to_pylist(),
                                      nodes.column("guid").to_pylist(),
                                      nodes.column("node_type").to_pylist(), strict=True)
            if t == "hca"}
    tiers: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    for f, a, ap, b, bp in zip(*(topology.column(c).to_pylist() for c in (
            "fabric", "a_guid", "a_port", "b_guid", "b_port")), strict=True):
        tier = "host" if (f, a) in hcas or (f, b) in hcas else "switch"
        tiers[tier].add((f, a, ap, b, bp))
    rows = answers[MTBI]
    assert {r["tier"]: r["links"] for r in rows} == {t: len(v) for t, v in tiers.items()}
    assert all(r["days"] == len(DAYS) and r["fabrics"] == 3 for r in rows)
    assert sum(r["flaps"] for r in rows) == sum(f["flaps"] for f in whole["fabrics"])
    for r in rows:
        assert r["mtbi_link_days"] == round(r["links"] * len(DAYS) / r["flaps"], 1)
    mtbis = [r["mtbi_link_days"] for r in rows]
    assert mtbis == sorted(mtbis)


def test_fleet_mtbi_whichever_end_the_topology_lists_first(
        spark: Any, exported: Path, answers: dict[str, list[dict[str, Any]]]) -> None:
    """A flap names its ends in GUID order, a topology snapshot in the order the capture
    found them; the generated fabrics happen to agree, so the links are turned around here (a
    temporary view shadows the table) and the cohorts must not change."""
    spark.sql("CREATE TEMPORARY VIEW links AS SELECT seen_at, b_guid AS a_guid, "
              "b_port AS a_port, a_guid AS b_guid, a_port AS b_port, width, speed, fabric, day "
              "FROM spark_catalog.default.links")
    try:
        rows = spark.sql(_sql(_statements()[MTBI], exported)).collect()
    finally:
        spark.sql("DROP VIEW links")
    assert [r.asDict() for r in rows] == answers[MTBI]
    assert sum(r["flaps"] for r in answers[MTBI]) > 0


def test_the_doc_names_what_the_test_replaces() -> None:
    """The statements hold the doc's folder and days, so the test runs what the doc shows."""
    statements = _statements()
    assert {PER_DAY, SUSPECTS, WORST, MTBI} <= set(statements)
    for name in (PER_DAY, SUSPECTS, WORST, MTBI):
        assert all(day in statements[name] for day in DOC_DAYS), name
    tables = [s for s in statements.values() if s.startswith("CREATE TABLE")]
    assert len(tables) == 4
    assert all(f"LOCATION '{DOC_FOLDER}/" in s for s in tables)
