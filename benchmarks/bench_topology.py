"""Benchmark (a): a 64-spine x 128-leaf x 32-host fat tree (4,096 hosts) built in ibsim; its real
ibnetdiscover + iblinkinfo output parsed and stored, then `auditor topology --format json`.

Prints the figures and their ratio to a baseline measured in the same run (reading the same
files line by line). Target: parse + store under 2 s. Not a test: run it by hand or with
`./run.sh bench`.

Then each capture as a user ingests it, one whole `auditor ingest --kind <tool>` process
(start-up and imports included; issue #25: under 1 s at 4,096 hosts), into a new database and
into one holding the day before's snapshot, `--repeat` times each (best and median of wall
and CPU seconds, peak memory), beside the same run's baselines: `auditor --version` (the
interpreter and the command line starting) and a DuckDB `read_csv` scan of the capture, each a
whole process. `--compare PYTHON` times another interpreter's `auditor` (a checkout of main
with its own venv) in the same loop, run for run alternating, for an A/B on a busy machine.

    python benchmarks/bench_topology.py [--spines 64 --leaves 128 --hosts 32] [--keep DIR]
                                        [--captures DIR] [--repeat 5] [--compare PYTHON]
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
import time
from datetime import UTC, datetime
from pathlib import Path

from auditor.ingest.captures import ingest_files, parse_file
from auditor.simulate.ibsim import FatTree, IbSim, expected_links, write_net_file
from auditor.store import Store


def capture(tree: FatTree, folder: Path) -> list[Path]:
    t = time.perf_counter()
    with IbSim(write_net_file(tree), folder / "sim") as sim:
        started = time.perf_counter() - t
        files = []
        for tool in ("ibnetdiscover", "iblinkinfo"):
            t = time.perf_counter()
            out = sim.run(tool, timeout=600)
            if out.returncode != 0:
                sys.exit(f"{tool} failed: {out.stderr[-500:]}")
            path = folder / f"{tool}.txt"
            path.write_text(out.stdout)
            files.append(path)
            print(f"  {tool:<14} {time.perf_counter() - t:6.2f} s  "
                  f"{out.stdout.count(chr(10)):>7} lines {len(out.stdout) / 1e6:5.1f} MB")
    print(f"  ibsim start    {started:6.2f} s")
    return files


# A small wrapper process starts the measured one and reports its own wall time, CPU time
# (user + system, all its threads) and max RSS: a child forked straight from this benchmark
# would count our pages as its own.
_MEASURE = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
print(time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
      os.waitstatus_to_exitcode(status))
sys.stderr.write(err.decode(errors="replace"))
"""
_SCAN = """
import duckdb, sys
duckdb.sql("select count(*) from read_csv($p, columns={'line': 'VARCHAR'}, delim='\\x00', "
           "quote='', escape='', header=false, auto_detect=false, strict_mode=false, "
           "null_padding=true)", params={"p": sys.argv[1:]}).fetchall()
"""
# As an operator's shell runs it: Python writes and reuses bytecode caches (a sandbox that sets
# PYTHONDONTWRITEBYTECODE would have every run compile the package from source).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_DAY_BEFORE, _AT = "2026-11-29T06:00:00Z", "2026-11-30T06:00:00Z"


def measure(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak memory (MB) of one whole process, run in `cwd` (not
    a checkout: `python -m auditor` would import the package found there)."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True,
                         text=True, check=True, env=_ENV, cwd=cwd)
    took, cpu, rss_kb, code = out.stdout.split()
    if int(code) != 0:
        sys.exit(f"{' '.join(cmd)} failed with {code}: {out.stderr.strip()[-800:]}")
    return float(took), float(cpu), int(rss_kb) / 1024


def processes(files: list[Path], folder: Path, repeat: int, pythons: dict[str, str]
              ) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    """Every case of every interpreter `repeat` times, the interpreters alternating run for run
    (after one warm-up each: page cache, bytecode caches)."""
    db = folder / "proc.duckdb"
    cases: dict[str, tuple[list[str], str | None]] = {
        "baseline: auditor --version": (["-m", "auditor", "--version"], None)}
    for path in files:
        kind = path.stem
        cases[f"{kind}: new database"] = (
            ["-m", "auditor", "--db", str(db), "ingest", "--kind", kind, "--at", _AT,
             str(path)], "")
        cases[f"{kind}: after the day before's snapshot"] = (
            ["-m", "auditor", "--db", str(db), "ingest", "--kind", kind, "--at", _AT,
             str(path)], "day-before")
    templates: dict[str, Path] = {}
    for label, py in pythons.items():
        # the day before's snapshot (both captures), made by the interpreter measured
        tpl = folder / f"day-before-{label}.duckdb"
        tpl.unlink(missing_ok=True)
        subprocess.run([py, "-m", "auditor", "--db", str(tpl), "ingest", "--at", _DAY_BEFORE,
                        *map(str, files)], check=True, capture_output=True, env=_ENV,
                       cwd=folder)
        templates[label] = tpl
    out: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    for case, (args, start) in cases.items():
        out[case] = {label: [] for label in pythons}
        for n in range(repeat + 1):
            for label, py in pythons.items():
                if start is not None:
                    for leftover in (db, db.with_name(db.name + ".wal")):
                        leftover.unlink(missing_ok=True)
                    if start:
                        shutil.copyfile(templates[label], db)
                figures = measure([py, *args], folder)
                if n:  # the first is the warm-up
                    out[case][label].append(figures)
    scans = [measure([sys.executable, "-c", _SCAN, str(path)], folder) for path in files
             for _ in range(repeat + 1)]
    out["baseline: DuckDB read_csv scan of a capture"] = {"": scans[1:]}
    return out


def print_processes(results: dict[str, dict[str, list[tuple[float, float, float]]]]) -> None:
    print(f"{'whole process':<46} {'':<8} {'wall best/median':>17} {'CPU best/median':>16} "
          f"{'peak':>7}")
    for case, by in results.items():
        for label, runs in by.items():
            walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
            print(f"{case:<46} {label:<8} {min(walls):7.3f} {statistics.median(walls):7.3f} s "
                  f"{min(cpus):6.3f} {statistics.median(cpus):6.3f} s "
                  f"{max(r[2] for r in runs):5.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spines", type=int, default=64)
    ap.add_argument("--leaves", type=int, default=128)
    ap.add_argument("--hosts", type=int, default=32, help="hosts per leaf")
    ap.add_argument("--keep", type=Path, help="keep captures and DB in this folder")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--captures", type=Path, help="a --keep folder's ibnetdiscover.txt and "
                    "iblinkinfo.txt instead of running ibsim")
    ap.add_argument("--repeat", type=int, default=5, help="whole processes per case")
    ap.add_argument("--compare", metavar="PYTHON", help="also time this interpreter's auditor "
                    "(e.g. a checkout of main's .venv/bin/python), alternating")
    args = ap.parse_args()
    tree = FatTree(args.spines, args.leaves, args.hosts)
    with tempfile.TemporaryDirectory() as tmp:
        folder = (args.keep or Path(tmp)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        print(f"fat tree {tree.spines} x {tree.leaves} x {tree.hosts_per_leaf}: "
              f"{tree.hosts} hosts, {tree.switches} switches, {expected_links(tree)} links")
        if args.captures:
            files = [(args.captures / f"{tool}.txt").resolve()
                     for tool in ("ibnetdiscover", "iblinkinfo")]
        else:
            files = capture(tree, folder)

        t = time.perf_counter()
        lines = 0
        for path in files:
            with path.open(encoding="utf-8") as fh:
                for _ in fh:
                    lines += 1
        baseline = time.perf_counter() - t

        db = folder / "bench.duckdb"
        db.unlink(missing_ok=True)
        t = time.perf_counter()
        for path in files:
            parse_file(path, "auto")
        parse_only = time.perf_counter() - t
        with Store(db) as store:
            t = time.perf_counter()
            ingest_files(store, files, at=datetime.now(UTC))
            total = time.perf_counter() - t
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), "topology",
                              "--format", "json"], capture_output=True, text=True, check=True)
        query = time.perf_counter() - t
        data = json.loads(res.stdout)
        pythons = {"this": sys.executable} | ({"compare": args.compare} if args.compare else {})
        procs = processes(files, folder, args.repeat, pythons) if args.repeat > 0 else {}

    print(f"baseline: read {lines} lines line by line      {baseline:6.3f} s")
    print(f"parse only                                  {parse_only:6.3f} s "
          f"({parse_only / baseline:5.1f}x baseline)")
    print(f"parse + store (auditor ingest)              {total:6.3f} s "
          f"({total / baseline:5.1f}x baseline)  target < 2 s: "
          f"{'met' if total < 2 else 'MISSED'}")
    print(f"auditor topology --format json (process)    {query:6.3f} s")
    if procs:
        print_processes(procs)
    got = (data["switches"], data["hcas"], data["links"])
    want = (tree.switches, tree.hosts, expected_links(tree))
    print(f"topology: {got[0]} switches, {got[1]} HCAs, {got[2]} links "
          f"({'exact' if got == want else f'WRONG, expected {want}'})")
    if args.json:
        figures = {"topology_parse_store_s": total, "topology_baseline_s": baseline,
                   "topology_cli_s": query}
        for case, key in (("ibnetdiscover: new database", "topology_ingest_process_s"),
                          ("iblinkinfo: new database", "topology_linkinfo_process_s"),
                          ("baseline: auditor --version", "topology_ingest_process_baseline_s")):
            if case in procs:
                figures[key] = statistics.median(r[0] for r in procs[case]["this"])
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    if got != want:
        sys.exit(1)


if __name__ == "__main__":
    main()
