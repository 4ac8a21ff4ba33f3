"""Benchmark (d'): `auditor ingest --kind sacct` of a month of sacct -P on a 4,096-host cluster.

Times the whole process (`python -m auditor --db NEW ingest --kind sacct FILE`, into a new
database each time) against two DuckDB-only processes on the same file, measured in the same
run (three of each, alternating; medians):
  load: `python -c` that imports duckdb and stores the file's rows as text in a new database
        file (`create table as select * from read_csv(..., all_varchar=true)`): the same job
        (file in, rows on disk, process start and imports) without a row being understood.
        This is `sacct_baseline_s`, the figure the ratio is taken to;
  scan: the same process counting the rows of `read_csv` (nothing stored), for reference.
The ingest does more than either: it checks every field, expands each NodeList (99,990 jobs
are 1.2 million job-host rows) and writes both tables in one transaction. Every process runs
with its bytecode cached (in a temporary PYTHONPYCACHEPREFIX, after one untimed run of each),
as an installed auditor has it, even where the environment sets PYTHONDONTWRITEBYTECODE.
Targets: ingest <= 1.5 s and within 5x of the load. Not a test.

    python benchmarks/bench_sacct.py [--file sacct.txt] [--keep DIR] [--json OUT]

Without --file the file is generated as benchmarks/bench_scale.py does (64 x 128 x 32 fat
tree, 30 days, ~100,000 jobs; `--steps` adds sacct's step lines, as sacct without -X prints).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

START = datetime(2026, 10, 31, tzinfo=UTC)
LOAD = """
import sys, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("create table jobs as select * from read_csv($f, delim='|', header=true, "
            "all_varchar=true)", {"f": sys.argv[1]})
con.close()
"""
SCAN = """
import sys, duckdb
duckdb.sql("select count(*) from read_csv($f, delim='|', header=true, all_varchar=true)",
           params={"f": sys.argv[1]}).fetchall()
"""


def whole_process(args: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process; exits if it fails."""
    # The auditor measured is the one beside this script, whatever the environment installed.
    here = str(Path(__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p),
            "PYTHONPYCACHEPREFIX": str(cwd / "pycache")}
    t = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(args[:4])} ... failed:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def generate_sacct(folder: Path, steps: bool) -> Path:
    from auditor.simulate.scenario import generate

    t = time.perf_counter()
    truth = generate(folder, seed=42, spines=64, leaves=128, hosts_per_leaf=32, days=30.0,
                     start=START, jobs_per_day=round(100_000 / 30), snapshot_every_h=24.0,
                     sacct_steps=steps)
    print(f"generated 30 days on 64x128x32: {truth.jobs_total:,} jobs in "
          f"{time.perf_counter() - t:.0f} s")
    return folder / "jobs" / "sacct.txt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, help="a sacct -P file (else one is generated)")
    ap.add_argument("--steps", action="store_true", help="generate step lines too")
    ap.add_argument("--keep", type=Path, help="generate into (and keep) this folder")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side (median)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sacct = (args.file.resolve() if args.file
                 else generate_sacct(args.keep or work / "scenario", args.steps))
        lines = sum(1 for _ in sacct.open("rb"))
        print(f"{sacct}: {lines:,} lines, {sacct.stat().st_size / 1e6:.0f} MB")
        py = sys.executable
        db = work / "bench.duckdb"
        runs: dict[str, list[tuple[float, float]]] = {"ingest": [], "load": [], "scan": []}
        for round_no in range(args.repeat + 1):  # the first round only fills the bytecode cache
            for side in ("load", "scan", "ingest"):
                db.unlink(missing_ok=True)
                if side == "ingest":
                    cmd = [py, "-m", "auditor", "--db", str(db), "ingest", "--kind", "sacct",
                           str(sacct)]
                else:
                    cmd = [py, "-c", LOAD if side == "load" else SCAN, str(sacct), str(db)]
                took = whole_process(cmd, work)
                if round_no:
                    runs[side].append(took)
        db.unlink(missing_ok=True)
    med = {side: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
           for side, r in runs.items()}
    (took, took_cpu), (load, load_cpu), (scan, scan_cpu) = med["ingest"], med["load"], med["scan"]
    every = "; ".join(f"{side} {', '.join(f'{w:.2f}' for w, _ in r)}" for side, r in runs.items())
    print(f"medians of {args.repeat} whole processes each, wall (CPU) (all wall: {every})")
    print(f"baseline: DuckDB loads the file into a new database  {load:5.2f} s ({load_cpu:.2f})")
    print(f"          DuckDB counts the rows of read_csv          {scan:5.2f} s ({scan_cpu:.2f})")
    print(f"auditor ingest --kind sacct (new database)            {took:5.2f} s ({took_cpu:.2f})")
    print(f"ratio to the load: {took / load:.2f}x (to the scan: {took / scan:.2f}x)   targets: "
          f"<= 1.5 s {'met' if took <= 1.5 else 'MISSED'}, within 5x of the load "
          f"{'met' if took <= 5 * load else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps({"sacct_ingest_s": took, "sacct_baseline_s": load,
                                         "sacct_scan_s": scan}, indent=1) + "\n")


if __name__ == "__main__":
    main()
