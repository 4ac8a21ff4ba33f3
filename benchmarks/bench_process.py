"""Benchmark (f), issue #13: every command the way an operator runs it, as a whole process
(interpreter start and imports included), each beside a baseline measured in the same run.

- startup: `auditor --help`, `auditor --version`; baseline `python -c pass`.
- suspects: `auditor suspects --since 24h` and `--since 30d` on the 4,096-host 30-day DB;
  baseline: DuckDB opens the DB and counts every table.
- report: `auditor report --since 24h` (CSV, JSON, HTML with plots); the same baseline.
- syslog: `auditor ingest --kind syslog` of 2,000,000 lines (1 % port events); baseline:
  DuckDB's `read_csv` scan of the file.
- sacct: `auditor ingest --kind sacct` of the scenario's ~100,000 jobs; baseline: DuckDB's
  `read_csv` of the `|` file.
- counters: `auditor ingest --kind ibqueryerrors` of one snapshot of every port of 12,288
  links; baseline: DuckDB's `read_csv` scan of the file.
- joblogs: every job log of the scenario in one `auditor ingest --kind joblog`; baseline:
  DuckDB's `read_csv` scan of the same files.

Each figure is the median of --repeat runs (ingests into a fresh copy of their starting DB),
with the command's own peak memory (max RSS). The 30-day DB and its files come from
bench_scale.py (`--scale DIR` reuses a `bench_scale.py --keep DIR`; without one it is built,
about 10 minutes). Not a test.

    python benchmarks/bench_process.py [--scale DIR] [--repeat 3] [--only ...] [--json OUT]
                                       [--code CHECKOUT]   # e.g. a worktree of the old commit
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
END = "2026-11-30T00:00:00"  # bench_scale's 30 days end here

# A small wrapper process starts the command and reports the command's own max RSS (a child
# forked from this process would count our pages as its own).
_MEASURE = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_, status, usage = os.wait4(p.pid, 0)
err = p.stderr.read().decode(errors="replace")
print(time.perf_counter() - t, usage.ru_maxrss, os.waitstatus_to_exitcode(status),
      usage.ru_utime + usage.ru_stime)
sys.stderr.write(err)
"""

_COUNT_TABLES = """
import duckdb, sys
con = duckdb.connect(sys.argv[1], read_only=True)
for (t,) in con.execute("select table_name from information_schema.tables").fetchall():
    con.execute(f'select count(*) from "{t}"').fetchall()
"""

_SCAN = """
import duckdb, sys
duckdb.sql("select count(*) from read_csv($p, columns={'line': 'VARCHAR'}, delim='\\\\x00', "
           "quote='', escape='', header=false, auto_detect=false, strict_mode=false, "
           "null_padding=true)", params={"p": sys.argv[1:]}).fetchall()
"""

# As an operator's shell runs it: Python writes and reuses bytecode caches (a sandbox or CI
# that sets PYTHONDONTWRITEBYTECODE would have every run compile the package from source).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


CPU: list[float] = []  # CPU seconds (user + system) of every measured process, in order


def measure(cmd: list[str]) -> tuple[float, float]:
    """Wall time of the whole process and its peak memory in MB; exits if it failed. Its CPU
    time goes to CPU (on a busy machine the wall time says little, the CPU time more)."""
    out = subprocess.run([PY, "-c", _MEASURE, *cmd], capture_output=True, text=True,
                         check=True, env=ENV)
    took, rss_kb, code, cpu = out.stdout.split()
    if int(code) != 0:
        sys.exit(f"{' '.join(cmd)} failed with {code}: {out.stderr.strip()[-500:]}")
    CPU.append(float(cpu))
    return float(took), int(rss_kb) / 1024


def auditor(db: Path | None, *args: str) -> list[str]:
    return [PY, "-m", "auditor", *(["--db", str(db)] if db else []), *args]


def median_of(repeat: int, cmd: Callable[[], list[str]],
              prepare: Callable[[], None] | None = None) -> tuple[float, float]:
    times, peaks, cpus = [], [], []
    if prepare is not None:
        prepare()
    measure(cmd())  # warm: the page cache, and the bytecode caches written once
    for _ in range(repeat):
        if prepare is not None:
            prepare()
        took, peak = measure(cmd())
        times.append(took)
        peaks.append(peak)
        cpus.append(CPU[-1])
    LAST_CPU[0] = statistics.median(cpus)
    return statistics.median(times), max(peaks)


LAST_CPU = [0.0]  # the median CPU time of the last median_of


def write_syslog(path: Path, lines: int) -> None:
    sys.path.insert(0, str(HERE))
    from bench_syslog import write_log  # the house generator: 1 % port events

    write_log(path, lines)


def counters_snapshot(scale: Path, work: Path) -> tuple[Path, Path]:
    """A DB holding the topology and one every-port snapshot, and the next snapshot."""
    snaps = sorted((scale / "full").glob("ibqueryerrors-*.txt"))
    base = work / "counters-base.duckdb"
    if not base.exists():
        subprocess.run(auditor(base, "ingest", "--at", "2026-10-31T00:00:00Z",
                               str(scale / "scenario" / "topology" / "ibnetdiscover.txt")),
                       check=True, stdout=subprocess.DEVNULL, env=ENV)
        subprocess.run(auditor(base, "ingest", "--kind", "ibqueryerrors", "--at",
                               "2026-10-31T12:00:00Z", str(snaps[0])),
                       check=True, stdout=subprocess.DEVNULL, env=ENV)
    return base, snaps[1]


def jobs_base(scale: Path, work: Path) -> Path:
    """A DB holding the topology and the sacct jobs the job logs belong to."""
    base = work / "jobs-base.duckdb"
    if not base.exists():
        scen = scale / "scenario"
        subprocess.run(auditor(base, "ingest", "--at", "2026-10-31T00:00:00Z",
                               str(scen / "topology" / "ibnetdiscover.txt")),
                       check=True, stdout=subprocess.DEVNULL, env=ENV)
        subprocess.run(auditor(base, "ingest", "--kind", "sacct",
                               str(scen / "jobs" / "sacct.txt")),
                       check=True, stdout=subprocess.DEVNULL, env=ENV)
    return base


ROWS = ("startup", "suspects", "report", "syslog", "sacct", "counters", "joblogs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=Path, help="a bench_scale.py --keep folder to reuse")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--syslog-lines", type=int, default=2_000_000)
    ap.add_argument("--only", nargs="+", choices=ROWS, default=list(ROWS))
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--code", type=Path, help="measure the auditor of this source tree (a "
                    "checkout of an older commit: before/after figures from one run)")
    args = ap.parse_args()
    if args.code:
        ENV["PYTHONPATH"] = os.pathsep.join([str(args.code.resolve()),
                                             *filter(None, [ENV.get("PYTHONPATH")])])
    figures: dict[str, float] = {}
    rows: list[tuple[str, float, float, str, float]] = []

    def row(name: str, key: str, took: float, peak: float, base_name: str, base: float
            ) -> None:
        cpu = LAST_CPU[0]
        figures.update({f"{key}_s": took, f"{key}_mb": peak, f"{key}_baseline_s": base,
                        f"{key}_cpu": cpu})
        rows.append((name, took, peak, base_name, base))
        print(f"{name:<44} {took:6.2f} s ({cpu:5.2f} s CPU) {peak:6.0f} MB   {base_name} "
              f"{base:6.2f} s ({took / base:4.1f}x)", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        scale: Path = args.scale or work / "scale"
        needs_scale = set(args.only) - {"startup", "syslog"}
        if needs_scale and not (scale / "scale.duckdb").exists():
            subprocess.run([PY, str(HERE / "bench_scale.py"), "--keep", str(scale)], check=True)
        if "startup" in args.only:
            base, _ = median_of(args.repeat * 3, lambda: [PY, "-c", "pass"])
            for what in ("--help", "--version"):
                try:
                    took, peak = median_of(args.repeat * 3, lambda w=what: auditor(None, w))
                except SystemExit as exc:  # an older checkout (--code) may not have it
                    print(f"auditor {what:<36} not available: {str(exc)[:60]}", flush=True)
                    continue
                row(f"auditor {what}", f"cli{what.replace('-', '_')}", took, peak,
                    "python -c pass", base)
        if "suspects" in args.only or "report" in args.only:
            db = scale / "scale.duckdb"
            base, _ = median_of(args.repeat, lambda: [PY, "-c", _COUNT_TABLES, str(db)])
            if "suspects" in args.only:
                for since in ("24h", "30d"):
                    measure(auditor(db, "suspects", "--since", since, "--until", END,
                                    "--format", "json"))  # warm the page cache
                    took, peak = median_of(args.repeat, lambda s=since: auditor(
                        db, "suspects", "--since", s, "--until", END, "--format", "json"))
                    row(f"auditor suspects --since {since}", f"suspects_{since}", took, peak,
                        "DuckDB count of every table", base)
            if "report" in args.only:
                out = work / "report"
                took, peak = median_of(args.repeat, lambda: auditor(
                    db, "report", "--since", "24h", "--until", END, "--out", str(out)))
                row("auditor report --since 24h", "report_24h", took, peak,
                    "DuckDB count of every table", base)
        if "syslog" in args.only:
            log = work / "switches.log"
            write_syslog(log, args.syslog_lines)
            fabric = work / "fabric.duckdb"
            # the demo fabric the generated switch names map onto
            subprocess.run([PY, "-c", "import sys, pathlib; from auditor.demo import build_demo;"
                            " build_demo(pathlib.Path(sys.argv[1]))", str(fabric)],
                           check=True, stdout=subprocess.DEVNULL, env=ENV)
            os.sync()
            db = work / "syslog.duckdb"
            base, _ = median_of(args.repeat, lambda: [PY, "-c", _SCAN, str(log)])
            took, peak = median_of(
                args.repeat, lambda: auditor(db, "ingest", "--kind", "syslog", str(log)),
                prepare=lambda: shutil.copyfile(fabric, db))
            row(f"auditor ingest --kind syslog ({args.syslog_lines:,} lines)", "syslog_process",
                took, peak, "DuckDB read_csv scan", base)
        if "sacct" in args.only:
            sacct = scale / "scenario" / "jobs" / "sacct.txt"
            empty = work / "empty.duckdb"
            db = work / "sacct.duckdb"
            subprocess.run([PY, "-c", "import sys; from auditor.store import Store; "
                            "Store(sys.argv[1]).close()", str(empty)],
                           check=True, stdout=subprocess.DEVNULL, env=ENV)
            sys.path.insert(0, str(HERE))
            # bench_sacct's baselines: the file's rows counted, and loaded into a new database
            from bench_sacct import LOAD, SCAN

            base, _ = median_of(args.repeat, lambda: [PY, "-c", SCAN, str(sacct)])
            took, peak = median_of(
                args.repeat, lambda: auditor(db, "ingest", "--kind", "sacct", str(sacct)),
                prepare=lambda: shutil.copyfile(empty, db))
            jobs = sum(1 for _ in sacct.open()) - 1
            row(f"auditor ingest --kind sacct ({jobs:,} jobs)", "sacct_process", took, peak,
                "DuckDB read_csv", base)
            loaded = work / "load.duckdb"
            load, _ = median_of(args.repeat, lambda: [PY, "-c", LOAD, str(sacct),
                                                      str(loaded)],
                                prepare=lambda: loaded.unlink(missing_ok=True))
            figures["sacct_process_load_baseline_s"] = load
            print(f"{'':<44} baseline 2: DuckDB loading it into a new database {load:6.2f} s "
                  f"({took / load:4.1f}x)", flush=True)
        if "counters" in args.only:
            start, snap = counters_snapshot(scale, work)
            db = work / "counters.duckdb"
            base, _ = median_of(args.repeat, lambda: [PY, "-c", _SCAN, str(snap)])
            took, peak = median_of(
                args.repeat, lambda: auditor(db, "ingest", "--kind", "ibqueryerrors", "--at",
                                             "2026-11-01T00:00:00Z", str(snap)),
                prepare=lambda: shutil.copyfile(start, db))
            row("auditor ingest --kind ibqueryerrors (12,288 links)", "counters_process", took,
                peak, "DuckDB read_csv scan", base)
        if "joblogs" in args.only:
            folder = scale / "scenario" / "jobs" / "logs"
            logs = sorted(str(p) for p in folder.glob("*.log"))
            start = jobs_base(scale, work)
            db = work / "joblogs.duckdb"
            base, _ = median_of(args.repeat, lambda: [PY, "-c", _SCAN, *logs])
            took, peak = median_of(
                args.repeat, lambda: auditor(db, "ingest", "--kind", "joblog", *logs),
                prepare=lambda: shutil.copyfile(start, db))
            row(f"auditor ingest --kind joblog ({len(logs):,} logs)", "joblogs_process", took,
                peak, "DuckDB read_csv scan", base)
    print(f"\nmeasured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, medians of "
          f"{args.repeat} (startup {args.repeat * 3}); peak memory of any command "
          f"{max(p for _, _, p, _, _ in rows):.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
