"""Benchmark, issue #25: the fleet of many fabrics on Spark beside DuckDB, on the same files.

Generates --fabrics scenarios of --days each (different seeds, one shape), ingests each into its
own database and exports every day into one folder, as a site's nightly exports would
(docs/export.md). Then, each as a whole process (interpreter, JVM, imports included):

- DuckDB: `auditor fleet DIR --since <the days> --format json` (an in-memory DuckDB reading
  every partition of the window);
- Spark: PySpark in `local[2]` runs the statements of docs/export.md's `-- Spark SQL` blocks
  that `auditor fleet` answers (the tables, the fleet per fabric and day, the suspects) and
  collects the rows, as tests/test_spark.py does; its figure is split into the session's start
  and the statements.

Each is the median of --repeat runs, with the largest process's peak memory (max RSS: the JVM's
for Spark). The two answers' row counts are checked to agree. Figures only; nothing is asserted.
Needs the `spark` extra and Java 17 (run.sh installs both for `./run.sh bench`).

    python benchmarks/bench_fleet.py [--fabrics 10] [--days 30] [--shape 4 8 8] [--repeat 3]
                                     [--keep DIR]   # reuse (or keep) the export folder
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "export.md"
PY = sys.executable
START = datetime(2026, 11, 1, tzinfo=UTC)
DOC_FOLDER = "/srv/fabric-history"
DOC_DAYS = ("2026-11-25", "2026-12-01")
FLEET_QUERIES = ("Spark SQL: the fleet per fabric and day (flaps, still down, suspects)",
                 "Spark SQL: the fleet's suspects per fabric and day, best first")

def statements() -> dict[str, str]:
    """The doc's Spark SQL statements by their heading comment (or first line), as
    tests/test_spark.py reads them."""
    found: dict[str, str] = {}
    for block in re.findall(r"```sql\n(-- Spark SQL.*?)```", DOC.read_text(encoding="utf-8"),
                            re.DOTALL):
        for chunk in block.split(";\n"):
            lines = [ln for ln in chunk.strip().splitlines() if ln.strip()]
            if lines:
                sql = "\n".join(ln for ln in lines if not ln.startswith("--"))
                found[lines[0].removeprefix("-- ") if lines[0].startswith("--")
                      else sql.split("\n")[0]] = sql
    return found


# What tests/test_spark.py sets for its few kB: the JVM's compiler C1 only and the serial GC,
# no whole-stage code generation, no adaptive planning. `--spark-settings small` measures them.
SMALL = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
         "spark.sql.codegen.wholeStage": "false", "spark.sql.adaptive.enabled": "false"}


def spark_child(folder: str, first: str, last: str, settings: str) -> None:
    """Run in a process of its own: start Spark (its defaults, or with SMALL), run the doc's
    tables and fleet queries, print {"start_s", "tables_s", "queries_s", "rows", "maxrss_kb"}
    as JSON."""
    import resource

    t0 = time.perf_counter()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in (SMALL if settings == "small" else {}).items():
        builder = builder.config(key, value)
    spark = (
        builder.master("local[2]").appName("bench-fleet")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="bench-fleet-wh-"))
        .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    t1 = time.perf_counter()
    found = statements()
    # The two tables fleet reads (suspects, flaps), then its two queries.
    tables = [sql for sql in found.values() if sql.startswith(("CREATE TABLE", "MSCK"))
              and re.search(r"\b(suspects|flaps)\b", sql.split("(")[0].split("\n")[0])]
    for sql in tables:
        spark.sql(sql.replace(f"'{DOC_FOLDER}/", f"'{folder}/")).collect()
    t2 = time.perf_counter()
    answer: dict[str, Any] = {}
    for name in FLEET_QUERIES:
        text = (found[name].replace(f"'{DOC_DAYS[0]}'", f"'{first}'")
                .replace(f"'{DOC_DAYS[1]}'", f"'{last}'"))
        answer[name] = [r.asDict() for r in spark.sql(text).collect()]
    t3 = time.perf_counter()
    per_day = answer[FLEET_QUERIES[0]]
    rows = {"fabric_days": len(per_day), "suspects": len(answer[FLEET_QUERIES[1]]),
            "flaps": sum(r["flaps"] for r in per_day),
            "suspects_counted": sum(r["suspects"] for r in per_day)}
    gateway = spark.sparkContext._gateway
    proc = gateway.proc if gateway is not None else None
    spark.stop()
    if proc is not None:  # the JVM ends when its stdin closes: reap it, so its peak counts
        proc.stdin.close()
        proc.wait(timeout=60)
    sys.stdout.write(json.dumps({
        "start_s": t1 - t0, "tables_s": t2 - t1, "queries_s": t3 - t2, "rows": rows,
        "maxrss_kb": max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                         resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)}) + "\n")


def build(folder: Path, fabrics: int, days: int, shape: tuple[int, int, int]) -> float:
    """Generate, ingest and export `fabrics` scenarios of `days` days into `folder`."""
    from typer.testing import CliRunner

    from auditor.cli import app
    from auditor.simulate.evaluate import load_scenario
    from auditor.simulate.scenario import generate

    runner = CliRunner()
    until = (START + timedelta(days=days, seconds=-1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        for i in range(fabrics):
            name = f"pod{i + 1:02d}"
            scen = Path(tmp) / name
            generate(scen, seed=100 + i, spines=shape[0], leaves=shape[1],
                     hosts_per_leaf=shape[2], days=float(days), start=START)
            db = Path(tmp) / f"{name}.duckdb"
            load_scenario(scen, db)
            res = runner.invoke(app, ["--db", str(db), "export", "--out", str(folder),
                                      "--fabric", name, "--since", f"{days * 24 - 1}h",
                                      "--until", until])
            if res.exit_code != 0:
                raise SystemExit(f"export of {name} failed: {res.output}")
            print(f"  {name}: generated, ingested and exported ({time.perf_counter() - t:.0f} s)",
                  flush=True)
    return time.perf_counter() - t


def measure(cmd: list[str]) -> tuple[float, int, str]:
    """Whole-process seconds, peak RSS in kB (the command and what it reaped), stdout."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    secs = time.perf_counter() - t
    # communicate() reaped it: the children's figure now includes this command (and the JVM
    # it reaped); it only grows, so the benchmark runs DuckDB first.
    import resource

    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.decode()[-2000:]}")
    return secs, rss, out.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabrics", type=int, default=10)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--shape", type=int, nargs=3, default=(4, 8, 8),
                    metavar=("SPINES", "LEAVES", "HOSTS_PER_LEAF"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="the export folder: reused if it holds one")
    ap.add_argument("--spark-settings", choices=("default", "small", "both"), default="both",
                    help="Spark's defaults, the test's small-data settings, or both (default)")
    ap.add_argument("--spark-child", nargs=4, help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()  # ./run.sh bench passes every benchmark the same options
    if args.spark_child:
        spark_child(*args.spark_child)
        return
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("bench_fleet: pyspark is not installed (pip install 'fabric-auditor[spark]'); "
              "skipped")
        return
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        print("bench_fleet: no java (apt-get install openjdk-17-jre-headless); skipped")
        return
    tmp = None
    if args.keep:
        folder = args.keep.resolve()
    else:
        tmp = tempfile.mkdtemp(prefix="bench-fleet-out-")
        folder = Path(tmp)
    try:
        if not (folder / "suspects").is_dir():
            print(f"building {args.fabrics} fabrics x {args.days} days "
                  f"(shape {args.shape[0]}-{args.shape[1]}-{args.shape[2]}) into {folder}")
            built = build(folder, args.fabrics, args.days, tuple(args.shape))
            print(f"built in {built:.0f} s")
        run(folder, args.days, args.repeat,
            ["default", "small"] if args.spark_settings == "both" else [args.spark_settings])
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def run(folder: Path, days: int, repeat: int, modes: list[str]) -> None:
    files = list(folder.rglob("*.parquet"))
    size = sum(p.stat().st_size for p in files)
    fabrics = len([p for p in (folder / "suspects").iterdir() if p.name.startswith("fabric=")])
    first = START.strftime("%Y-%m-%d")
    last = (START + timedelta(days=days - 1)).strftime("%Y-%m-%d")
    until = (START + timedelta(days=days, seconds=-1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"export: {fabrics} fabrics, days {first} .. {last}, {len(files)} files, "
          f"{size / 1e6:.1f} MB ({size / 1e6 / max(fabrics * days, 1):.3f} MB a fabric-day)")
    try:
        load = os.getloadavg()
        print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
              f"on {os.cpu_count()} cores")
    except OSError:
        pass
    auditor = str(Path(PY).with_name("auditor"))
    duck: list[float] = []
    duck_rss = 0
    fleet: dict[str, Any] = {}
    for _ in range(repeat):
        secs, duck_rss, out = measure([auditor, "fleet", str(folder), "--since",
                                       f"{days * 24 - 1}h", "--until", until, "--format", "json"])
        duck.append(secs)
        fleet = json.loads(out)
    d = statistics.median(duck)
    want = {"suspects": len(fleet["suspects"]),
            "flaps": sum(f["flaps"] for f in fleet["fabrics"]),
            "suspects_counted": sum(f["suspects"] for f in fleet["fabrics"])}
    print(f"auditor fleet: {want['suspects']} suspects, {want['flaps']} flaps"
          f"{', warnings: ' + str(len(fleet['warnings'])) if fleet['warnings'] else ''}")
    print(f"{'engine':<40}{'median s':>9}{'runs':>24}{'peak MB':>9}")
    print(f"{'DuckDB (auditor fleet)':<40}{d:>9.2f}{' '.join(f'{x:.2f}' for x in duck):>24}"
          f"{duck_rss / 1024:>9.0f}")
    for mode in modes:
        spark_run(folder, first, last, repeat, mode, d, want)


def spark_run(folder: Path, first: str, last: str, repeat: int, mode: str, duck: float,
              want: dict[str, int]) -> None:
    spark: list[float] = []
    parts: dict[str, list[float]] = {"start_s": [], "tables_s": [], "queries_s": []}
    spark_rss = 0
    child: dict[str, Any] = {}
    for _ in range(repeat):
        secs, _rss, out = measure([PY, str(Path(__file__).resolve()), "--spark-child",
                                   str(folder), first, last, mode])
        child = json.loads(out.strip().splitlines()[-1])
        spark.append(secs)
        for key, values in parts.items():
            values.append(child[key])
        spark_rss = max(spark_rss, int(child["maxrss_kb"]))
    got = child["rows"]
    s = statistics.median(spark)
    label = f"Spark SQL local[2], {mode} settings"
    print(f"{label:<40}{s:>9.2f}{' '.join(f'{x:.2f}' for x in spark):>24}{spark_rss / 1024:>9.0f}")
    for key, what in (("start_s", "session start (JVM)"),
                      ("tables_s", "CREATE TABLE + MSCK REPAIR x2"),
                      ("queries_s", "the two queries")):
        print(f"{'  of which ' + what:<40}{statistics.median(parts[key]):>9.2f}"
              f"{' '.join(f'{x:.2f}' for x in parts[key]):>24}")
    same = all(got[k] == v for k, v in want.items())
    print(f"  answers: {got['suspects']} suspects, {got['flaps']} flaps, {got['fabric_days']} "
          f"fabric-days with a flap or a suspect ({'as' if same else 'DIFFERENT from'} auditor "
          f"fleet); Spark / DuckDB {s / duck:.1f}x whole process, its two queries alone "
          f"{statistics.median(parts['queries_s']) / duck:.1f}x")


if __name__ == "__main__":
    main()
