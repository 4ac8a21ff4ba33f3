"""Benchmarks (c), (d) and (e): a 64 x 128 x 32 fat tree (4,096 hosts, 12,288 links) with 30
days of history, measured.

It generates the fabric and 30 days of evidence with auditor.simulate.scenario (switch syslog,
~100,000 sacct rows, the failed jobs' NCCL logs, a topology snapshot a day as nightly sweeps
leave) and writes 60 full ibqueryerrors snapshots
(`--data` style: every port of all 12,288 links, data counters plus errors), then measures:
  (c) ingesting the 60 counter snapshots; baseline: reading the same files line by line;
  (d) ingesting the sacct rows and the job logs; baseline: the same, read line by line;
  (e) `auditor suspects --since 24h` and `--since 30d`, and `auditor report`, on the database
      (a)-(d) built, each as a whole process, with its peak memory (max RSS).
Targets: (e) under 1 s for 24 h and under 5 s for 30 d; any command under 2 GB. Not a test.

    python benchmarks/bench_scale.py [--days 30] [--keep DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.ingest.captures import ingest_files
from auditor.ingest.common import LogOptions
from auditor.ingest.jobs import JobOptions, ingest_job_files
from auditor.ingest.logs import ingest_logs
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.simulate.scenario import generate
from auditor.store import Store

START = datetime(2026, 10, 31, tzinfo=UTC)


def read_lines(paths: list[Path]) -> tuple[int, float]:
    t = time.perf_counter()
    n = 0
    for p in paths:
        with p.open(encoding="utf-8", errors="replace") as fh:
            for _ in fh:
                n += 1
    return n, time.perf_counter() - t


def full_snapshots(folder: Path, topo_file: Path, count: int, every: timedelta
                   ) -> list[tuple[Path, datetime]]:
    """ibqueryerrors --data style snapshots listing every cabled port, with growing counters."""
    topo = parse_ibnetdiscover(topo_file.read_text())
    desc = {n.guid: n.description for n in topo.nodes}
    ports: dict[str, list[tuple[int, str]]] = {}
    for p in topo.ports:
        if p.width is None:
            continue
        ports.setdefault(p.guid, []).append((p.port, p.port_guid or p.guid))
    out = []
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        lines = []
        for guid, plist in sorted(ports.items()):
            lines.append(f'Errors for {guid} "{desc.get(guid, "")}"')
            for port, pguid in sorted(plist):
                base = (int(guid, 16) + port) % 997
                data = (k + 1) * 1_000_000 + base * 1000
                errs = f" [SymbolErrorCounter == {k * 3}]" if base % 211 == 0 else ""
                lines.append(f"   GUID {pguid} port {port}:{errs} [PortXmitData == {data} "
                             f"({data / 1e6:.3f}MB)] [PortRcvData == {data + 17} "
                             f"({data / 1e6:.3f}MB)] [PortXmitPkts == {data // 64} "
                             f"({data / 64e3:.3f}K)] [PortRcvPkts == {data // 64 + 3} "
                             f"({data / 64e3:.3f}K)]")
        lines += ["", f"## Summary: {len(ports)} nodes checked, 0 bad nodes found", ""]
        at = START + every * k
        path = folder / f"ibqueryerrors-{k:02d}.txt"
        path.write_text("\n".join(lines))
        out.append((path, at))
    return out


# Runs the command and reports its own max RSS. A small wrapper process starts it, because a
# child forked straight from this (large) benchmark process would count our pages as its own.
_MEASURE = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(time.perf_counter() - t, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def cli(db: Path, *args: str) -> tuple[float, float]:
    """Wall time of a whole auditor process and its own peak memory (max RSS) in MB."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "auditor",
                          "--db", str(db), *args], capture_output=True, text=True, check=True)
    took, rss_kb, code = out.stdout.split()
    if int(code) != 0:
        sys.exit(f"auditor {' '.join(args)} failed with {code}")
    return float(took), int(rss_kb) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        scen = root / "scenario"
        t = time.perf_counter()
        truth = generate(scen, seed=42, spines=64, leaves=128, hosts_per_leaf=32,
                         days=args.days, start=START, jobs_per_day=round(100_000 / args.days),
                         snapshot_every_h=24.0)
        print(f"generated {args.days:g} days on 64x128x32: {truth.jobs_total:,} jobs in "
              f"{time.perf_counter() - t:.1f} s")
        db = root / "scale.duckdb"
        db.unlink(missing_ok=True)
        with Store(db) as store:
            t = time.perf_counter()
            ingest_files(store, [scen / "topology" / "ibnetdiscover.txt"],
                         at=truth.topology_at)
            figures["topology_ingest_s"] = time.perf_counter() - t
            # A nightly sweep adds a topology snapshot a day: the ranking reads the newest and
            # the one before, and port history spans all of them.
            t = time.perf_counter()
            days = int(args.days)
            for day in range(1, days):
                ingest_files(store, [scen / "topology" / "ibnetdiscover.txt"],
                             at=truth.topology_at + timedelta(days=day))
            print(f"topology: {days} daily snapshots of 12,288 links "
                  f"({time.perf_counter() - t:.1f} s for the {days - 1} after the first)")

            snaps = full_snapshots(root / "full", scen / "topology" / "ibnetdiscover.txt",
                                   60, timedelta(days=args.days) / 60)
            lines, base = read_lines([p for p, _ in snaps])
            t = time.perf_counter()
            for path, at in snaps:
                ingest_files(store, [path], at=at)
            took = time.perf_counter() - t
            figures |= {"counters_ingest_s": took, "counters_baseline_s": base}
            print(f"(c) 60 ibqueryerrors snapshots, {lines:,} lines: {took:.1f} s "
                  f"({took / 60:.2f} s each); baseline line-by-line read {base:.2f} s "
                  f"({took / base:.0f}x)")

            logs = sorted((scen / "logs").iterdir())
            t = time.perf_counter()
            ingest_logs(store, logs, "syslog", LogOptions(),
                        now=START + timedelta(days=args.days + 1))
            figures["scenario_syslog_ingest_s"] = time.perf_counter() - t

            job_logs = sorted((scen / "jobs" / "logs").glob("*.log"))
            jlines, jbase = read_lines([scen / "jobs" / "sacct.txt", *job_logs])
            t = time.perf_counter()
            ingest_job_files(store, [scen / "jobs" / "sacct.txt", scen / "hosts",
                                     scen / "maintenance.csv", scen / "inventory.csv",
                                     scen / "cabling.csv"], "auto", JobOptions())
            sacct_s = time.perf_counter() - t
            t = time.perf_counter()
            for log in job_logs:
                ingest_job_files(store, [log], "joblog", JobOptions(job=log.stem))
            logs_s = time.perf_counter() - t
            figures |= {"sacct_ingest_s": sacct_s, "joblogs_ingest_s": logs_s,
                        "jobs_baseline_s": jbase}
            print(f"(d) sacct ({truth.jobs_total:,} jobs) {sacct_s:.1f} s + {len(job_logs):,} "
                  f"job logs {logs_s:.1f} s ({jlines:,} lines); baseline line-by-line read "
                  f"{jbase:.2f} s")
        end = (START + timedelta(days=args.days)).isoformat()
        for label, since in (("24h", "24h"), ("30d", f"{args.days:g}d")):
            cli(db, "suspects", "--since", since, "--until", end, "--format", "json")  # warm
            took, peak = cli(db, "suspects", "--since", since, "--until", end,
                             "--format", "json")
            figures[f"suspects_{label}_s"] = took
            figures[f"suspects_{label}_mb"] = peak
            target = 1.0 if label == "24h" else 5.0
            print(f"(e) auditor suspects --since {since}: {took:.2f} s, peak {peak:.0f} MB "
                  f"(target < {target:g} s: {'met' if took < target else 'MISSED'})")
        took, peak = cli(db, "report", "--since", "24h", "--until", end, "--out",
                         str(root / "report"))
        figures |= {"report_24h_s": took, "report_24h_mb": peak}
        print(f"(e) auditor report --since 24h: {took:.2f} s, peak {peak:.0f} MB")
        figures["db_mb"] = db.stat().st_size / 1e6
        print(f"database: {figures['db_mb']:.0f} MB; peak memory of any command "
              f"{max(v for k, v in figures.items() if k.endswith('_mb')):.0f} MB "
              "(target < 2048 MB)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
