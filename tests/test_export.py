"""`auditor export` and `auditor fleet` (issue #15): Parquet history in the Hive layout that other
engines read, written idempotently, and one table for several fabrics that says what each
fabric's own database says.

Two generated fabrics (different seeds and shapes), each ingested into its own DuckDB file as a
site would, exported into one folder; the files are read back with pyarrow.dataset as Spark or
Trino would (Hive partitions), and `fleet` over the folder is compared with `suspects` on each
database, day by day.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate
from auditor.store import Store

runner = CliRunner()
START = datetime(2026, 11, 20, tzinfo=UTC)
DAYS = ("2026-11-20", "2026-11-21")


@pytest.fixture(scope="module")
def fabrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fabrics")
    dbs = {}
    for name, seed, shape in (("pod1", 3, (2, 4, 4)), ("pod2", 11, (4, 8, 4))):
        scen = root / f"{name}-scenario"
        generate(scen, seed=seed, spines=shape[0], leaves=shape[1], hosts_per_leaf=shape[2],
                 days=2.0, start=START)
        dbs[name] = root / f"{name}.duckdb"
        load_scenario(scen, dbs[name])
    return dbs


@pytest.fixture(scope="module")
def exported(fabrics: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("history")
    for name, db in fabrics.items():
        result = runner.invoke(app, ["--db", str(db), "export", "--out", str(out), "--fabric",
                                     name, "--since", "47h", "--until", "2026-11-21T23:59:59Z",
                                     "--format", "json"])
        assert result.exit_code == 0, result.output
        (row,) = json.loads(result.stdout)
        assert (row["fabric"], row["first_day"], row["last_day"]) == (name, *DAYS)
    return out


def _suspects(db: Path, day: str) -> list[dict[str, object]]:
    end = (datetime.fromisoformat(day) + timedelta(days=1)).isoformat() + "Z"
    result = runner.invoke(app, ["--db", str(db), "suspects", "--since", "24h", "--until", end,
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)["suspects"])


def _flat(s: dict[str, object]) -> tuple[object, ...]:
    ends = s["ends"]
    assert isinstance(ends, list)
    b = ends[1] if len(ends) > 1 else {}
    return (s["rank"], s["component"], s["score"], ends[0]["guid"], ends[0]["port"],
            ends[0]["label"], b.get("guid"), b.get("port"), s["flaps"], s["downtime_s"],
            s["jobs_failed"], s["gpu_hours_lost"], s["first_at"], s["last_at"], s["action"],
            list(s["evidence"]))  # type: ignore[call-overload]


def _fleet_flat(r: dict[str, object]) -> tuple[object, ...]:
    return (r["rank"], r["component"], r["score"], r["a_guid"], r["a_port"], r["a_label"],
            r["b_guid"], r["b_port"], r["flaps"], r["downtime_s"], r["jobs_failed"],
            r["gpu_hours_lost"], r["first_at"], r["last_at"], r["action"], r["evidence"])


def test_fleet_says_what_each_fabrics_own_database_says(fabrics: dict[str, Path],
                                                        exported: Path) -> None:
    result = runner.invoke(app, ["fleet", str(exported), "--since", "47h", "--until",
                                 "2026-11-21T23:59:59Z", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [f["fabric"] for f in data["fabrics"]] == ["pod1", "pod2"]
    assert all(f["days"] == 2 for f in data["fabrics"])
    compared = 0
    for name, db in fabrics.items():
        for day in DAYS:
            own = [_flat(s) for s in _suspects(db, day)]
            from_fleet = [_fleet_flat(r) for r in data["suspects"]
                          if r["fabric"] == name and r["day"] == day]
            assert from_fleet == own, (name, day)
            compared += len(own)
    assert compared >= 4  # the scenarios have bad cables: the comparison is not of empties
    assert sum(f["suspects"] for f in data["fabrics"]) == compared


def test_other_engines_read_the_hive_layout(fabrics: dict[str, Path], exported: Path) -> None:
    """pyarrow.dataset with Hive partitioning (what Spark and Trino do): the partition columns
    come from the path, and the rows are the database's."""
    events = ds.dataset(exported / "port_events", format="parquet", partitioning="hive")
    table = events.to_table()
    assert {"fabric", "day", "event_at", "state", "guid", "port"} <= set(table.column_names)
    per_fabric = dict.fromkeys(fabrics, 0)
    for name in table.column("fabric").to_pylist():
        per_fabric[name] += 1
    for name, db in fabrics.items():
        with Store(db, read_only=True) as store:
            stored = len(store.events(START, START + timedelta(days=2, microseconds=-1)))
        assert per_fabric[name] == stored > 0
    jobs = ds.dataset(exported / "jobs", format="parquet", partitioning="hive").to_table(
        filter=ds.field("fabric") == "pod2")
    assert jobs.num_rows > 0
    assert jobs.schema.field("hosts").type.value_type == "string"


def test_export_is_idempotent_and_rewrites_only_what_it_is_asked(fabrics: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    db = fabrics["pod1"]
    args = ["--db", str(db), "export", "--out", str(tmp_path), "--fabric", "pod1",
            "--until", "2026-11-21T23:59:59Z"]
    assert runner.invoke(app, [*args, "--since", "47h"]).exit_code == 0
    first = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.parquet"))}
    assert len(first) == 8 * 2  # eight tables, two days
    assert runner.invoke(app, [*args, "--since", "47h"]).exit_code == 0
    assert {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.parquet"))} == first
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary file left behind
    # A later, shorter export touches only its own day's partitions.
    day1 = [p for p in first if "day=2026-11-20" in str(p)]
    stamps = {p: p.stat().st_mtime_ns for p in day1}
    assert runner.invoke(app, [*args, "--since", "1h"]).exit_code == 0
    assert {p: p.stat().st_mtime_ns for p in day1} == stamps


def test_a_fabric_name_that_is_not_a_path_word_is_refused(fabrics: dict[str, Path],
                                                          tmp_path: Path) -> None:
    for bad in ("../escape", "a/b", ".hidden", "x" * 65, "pod 1"):
        result = runner.invoke(app, ["--db", str(fabrics["pod1"]), "export", "--out",
                                     str(tmp_path), "--fabric", bad])
        assert result.exit_code == 2, bad
        assert "--fabric" in result.stderr
    assert not any(tmp_path.iterdir())


def test_fleet_of_a_folder_that_is_not_an_export(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fleet", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "not an export folder" in result.stderr


def test_outcomes_partition_is_what_auditor_outcomes_says(fabrics: dict[str, Path],
                                                          tmp_path: Path) -> None:
    """After a nightly run remembered its suspects, a day's `outcomes` partition holds each
    remembered suspect as judged at the end of that day, as `auditor outcomes` judges it."""
    db = tmp_path / "pod1.duckdb"
    shutil.copyfile(fabrics["pod1"], db)
    night = runner.invoke(app, ["--db", str(db), "nightly", "--no-sweep", "--until",
                                "2026-11-21T23:00:00Z"])
    assert night.exit_code in (0, 10), night.output
    out = tmp_path / "history"
    assert runner.invoke(app, ["--db", str(db), "export", "--out", str(out), "--fabric", "pod1",
                               "--since", "1h", "--until", "2026-11-21T23:59:59Z"]).exit_code == 0
    rows = ds.dataset(out / "outcomes", format="parquet", partitioning="hive").to_table()
    assert set(rows.column("day").to_pylist()) == {"2026-11-21"}
    said = runner.invoke(app, ["--db", str(db), "outcomes", "--until", "2026-11-22T00:00:00Z",
                               "--format", "json"])
    assert said.exit_code == 0, said.output
    expected = sorted((s["component"], s["ends"][0]["guid"], s["ends"][0]["port"], s["verdict"],
                       s["nights"]) for s in json.loads(said.stdout)["suspects"])
    got = sorted(zip(rows.column("component").to_pylist(), rows.column("a_guid").to_pylist(),
                     rows.column("a_port").to_pylist(), rows.column("verdict").to_pylist(),
                     rows.column("nights").to_pylist(), strict=True))
    assert got == expected and len(got) > 0
