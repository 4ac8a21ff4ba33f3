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
    python benchmarks/bench_scale.py --gpus 65536 --keep /work/scale65k [--days 30]
                                     [--sample-days N] [--optics]

--gpus 65536 (issue #25) is the full three-tier fat tree of 64-port switches: 8,192 hosts x 8
rails, 2,048 leaves, 2,048 spines, 1,024 cores, 196,608 links. Every file is ingested by its own
`auditor ingest` process, as an operator would, each measured (wall, CPU, peak memory) beside a
DuckDB baseline of the same run; then suspects 24 h / whole window and report 24 h, the
database's growth, and recall@K / false blames of the ranking against the generated truth.
With --optics, every host module's `ethtool -m` once a day as well (parsed by the ethtool-module
kind the sweep runs, stored as the sweep stores it), and `watch-list --refresh` (the nightly's
precomputation of the watch list) and `watch-list` timed on them before the commands.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auditor.ingest.captures import ingest_files
from auditor.ingest.common import LogOptions
from auditor.ingest.jobs import JobOptions, ingest_job_files
from auditor.ingest.logs import ingest_logs
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.simulate.scenario import GroundTruth, Scenario, generate, write_scenario
from auditor.store import Store

START = datetime(2026, 10, 31, tzinfo=UTC)

# --gpus 65536 (#25): the largest non-blocking fat tree of 64-port switches (Quantum-2, NDR):
# three tiers, k^3/4 = 65,536 end ports as 8,192 hosts x 8 rails, 64 pods of 32 leaves and 32
# spines, 1,024 cores in 32 planes of 32; 65,536 + 65,536 + 65,536 = 196,608 links.
TIER3: dict[str, Any] = {"spines": 2048, "leaves": 2048, "hosts_per_leaf": 32,
                         "hcas_per_host": 8, "cores": 1024, "pods": 64,
                         "switch_model": "MQM9700"}
# Jobs of 1 to 2,048 hosts (8 to 16,384 GPUs), small ones the most common; with the
# scenario's default rate (nodes about 80 % busy) that is ~7,000 jobs a day, ~210,000 sacct
# rows in 30 days.
JOB_SIZES_65K = ((1, 400), (2, 250), (4, 150), (8, 80), (16, 50), (32, 30), (64, 16),
                 (128, 10), (256, 6), (512, 4), (1024, 2), (2048, 1))
HOST_REBOOTS_PER_DAY = 2  # crashes under a running job; Llama 3's 16,384 GPUs saw ~8 a day of
# all causes (419 interruptions in 54 days, arXiv 2407.21783 section 3.3.4)


def generate_65k(scen: Path, days: float) -> GroundTruth:
    """The 65,536-GPU scenario (the scenario's fault counts scale with the links: about one
    faulty cable per 1,000 links), its error counters every 12 h (merged into full snapshots
    by `full_snapshot_65k`)."""
    return write_scenario(scen, scenario_65k(days))


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


# ------------------------------------------------------------------------ --gpus 65536 (#25)

_ERRORS = re.compile(r"^\s+GUID 0x([0-9a-f]+) port (\d+|ALL): (.*)$")


def scenario_errors(path: Path) -> dict[tuple[int, str], str]:
    """The error counters of one of the scenario's ibqueryerrors reports, by (GUID, port)."""
    out: dict[tuple[int, str], str] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            m = _ERRORS.match(line)
            if m:
                out[int(m[1], 16), m[2]] = m[3].rstrip()
    return out


def full_snapshot_65k(path: Path, ports: dict[str, list[tuple[int, str]]],
                      desc: dict[str, str], switches: set[str], k: int,
                      errors: dict[tuple[int, str], str]) -> int:
    """`ibqueryerrors --data` of every cabled port: the scenario's error counters of the same
    moment (so the ranking sees the generated faults and nothing else) plus growing data
    counters on every port. Streamed to `path`; its line count."""
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for guid, plist in sorted(ports.items()):
            g = int(guid, 16)
            out.write(f'Errors for {guid} "{desc.get(guid, "")}"\n')
            if guid in switches and (g, "ALL") in errors:
                out.write(f"   GUID {guid} port ALL: {errors[g, 'ALL']}\n")
            for port, pguid in sorted(plist):
                base = (g + port) % 997
                data = (k + 1) * 1_000_000 + base * 1000
                err = errors.get((int(pguid, 16), str(port)))
                out.write(f"   GUID {pguid} port {port}: {err + ' ' if err else ''}"
                          f"[PortXmitData == {data} ({data / 1e6:.3f}MB)] [PortRcvData == "
                          f"{data + 17} ({data / 1e6:.3f}MB)] [PortXmitPkts == {data // 64} "
                          f"({data / 64e3:.3f}K)] [PortRcvPkts == {data // 64 + 3} "
                          f"({data / 64e3:.3f}K)]\n")
                n += 1
        out.write(f"\n## Summary: {len(ports)} nodes checked, 0 bad nodes found\n")
    return n


class _Run:
    """Whole `auditor` processes (and baselines) measured: wall, CPU, peak memory."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.rows: list[tuple[str, float, float, float]] = []

    def auditor(self, label: str | None, *args: str) -> tuple[float, float, float]:
        return self.process(label, [sys.executable, "-m", "auditor", "--db", str(self.db),
                                    *args])

    def process(self, label: str | None, cmd: list[str]) -> tuple[float, float, float]:
        out = subprocess.run([sys.executable, "-c", _MEASURE_CPU, *cmd], capture_output=True,
                             text=True, check=True, env=_ENV)
        took, rss_kb, code, cpu = out.stdout.split()
        if int(code) != 0:
            sys.exit(f"{' '.join(cmd[2:])} failed with {code}: {out.stderr.strip()[-800:]}")
        figures = (float(took), float(cpu), int(rss_kb) / 1024)
        if label is not None:
            self.rows.append((label, *figures))
            print(f"  {label:<58} {figures[0]:7.2f} s ({figures[1]:6.2f} s CPU) "
                  f"{figures[2]:6.0f} MB", flush=True)
        return figures

    def size(self) -> float:
        wal = self.db.with_name(self.db.name + ".wal")
        return (self.db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)) / 1e6


_MEASURE_CPU = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
print(time.perf_counter() - t, usage.ru_maxrss, os.waitstatus_to_exitcode(status),
      usage.ru_utime + usage.ru_stime)
sys.stderr.write(err.decode(errors="replace"))
"""
# bench_process's baselines: DuckDB counting every table, DuckDB scanning a file's lines
_COUNT_TABLES = """
import duckdb, sys
con = duckdb.connect(sys.argv[1], read_only=True)
for (t,) in con.execute("select table_name from information_schema.tables").fetchall():
    con.execute(f'select count(*) from "{t}"').fetchall()
"""
_SCAN = """
import duckdb, sys
duckdb.sql("select count(*) from read_csv($p, columns={'line': 'VARCHAR'}, delim='\\x00', "
           "quote='', escape='', header=false, auto_detect=false, strict_mode=false, "
           "null_padding=true)", params={"p": sys.argv[1:]}).fetchall()
"""
# as an operator's shell runs it: bytecode caches written and reused
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scenario_65k(days: float) -> Scenario:
    """The Scenario `generate_65k` writes (the same seed, fabric and streams)."""
    return Scenario(seed=42, days=days, start=START, snapshot_every_h=12.0,
                    job_sizes=JOB_SIZES_65K, host_reboots=round(HOST_REBOOTS_PER_DAY * days),
                    **TIER3)


def write_optics(db: Path, sc: Scenario) -> tuple[int, int]:
    """--optics: every host module's diagnostics once a day, as a nightly sweep with
    `[sweep] optics` leaves them. The modules are the scenario's healthy ones
    (auditor.simulate.scenario.optics: levels, daily scatter, dirt, weak lanes, airflow), each
    reading printed as `ethtool -m` text (`ethtool_m`) and parsed back by the kind the sweep
    runs (ethtool-module), placed on the newest topology snapshot and stored one source per
    host and day (auditor/ops/hosts.py `optics`). In process: 65,536 `auditor ingest`
    processes a day are not what a site runs. The readings and the sources written."""
    import hashlib
    import random

    from auditor.ingest.optics import fabric_at, parse_optics, place
    from auditor.simulate.scenario.fabric import _build_fabric
    from auditor.simulate.scenario.optics import DAY, READ_AT, READ_SPREAD, _healthy, ethtool_m
    from auditor.simulate.scenario.optics import read as read_module
    from auditor.store.meta import SourceMeta

    def stream(part: str) -> random.Random:  # as write_scenario and plan_ageing name them
        return random.Random(f"{sc.seed}:{part}")

    fab = _build_fabric(sc, stream("fabric"))
    modules = [_healthy(sc, i, stream(f"optics-module:{i}")) for i in range(len(fab.hcas))]
    reading_rng = [stream(f"optics-reading:{i}") for i in range(len(fab.hcas))]
    total = sources = 0
    for day in range(int(sc.days)):
        with Store(db) as store, store.transaction():
            at = START + timedelta(seconds=day * DAY + READ_AT)
            pm = fabric_at(store, at + timedelta(seconds=READ_SPREAD), {})
            for host, hcas in enumerate(fab.host_hcas):
                # The sweep reaches the hosts one after another: one moment per host.
                t = day * DAY + READ_AT + READ_SPREAD * host / len(fab.host_hcas)
                moment = START + timedelta(seconds=t)
                texts = [ethtool_m(read_module(sc, fab, modules[i], t, reading_rng[i]))
                         for i in hcas]
                readings = [r for i, text in zip(hcas, texts, strict=True)
                            for r in parse_optics("ethtool-module", text, fab.hosts[host],
                                                  moment, f"{fab.hcas[i].device}/1")]
                body = "\n".join(texts)
                placed, why = place(pm, readings)
                sid = store.add_source(SourceMeta(
                    "ethtool-module", f"ssh://{fab.hosts[host]}/ethtool-module",
                    hashlib.sha256(body.encode()).hexdigest(), fab.hosts[host], moment, True,
                    body.count("\n") + 1, 0, len(readings)))
                store.add_optics(sid, readings, placed)
                store.add_issues(sid, [(reason, n, None, None) for reason, n in why.items()])
                total += len(readings)
                sources += 1
    return total, sources


def run_65k(args: argparse.Namespace) -> dict[str, Any]:
    """Generate (or reuse) the 65,536-GPU scenario under --keep, ingest everything as an
    operator would (one `auditor ingest` per capture), then time the commands; the ranking
    is scored against the generated truth."""
    from auditor.parse.ibnetdiscover import parse_ibnetdiscover as parse_topology
    from auditor.simulate.evaluate import _score
    from auditor.timeparse import parse_instant

    root: Path = args.keep
    scen = root / "scenario"
    days = args.days
    truth_file = scen / "truth.json"
    if not truth_file.exists() or json.loads(truth_file.read_text())["scenario"]["days"] != days:
        t = time.perf_counter()
        generate_65k(scen, days)
        print(f"generated {days:g} days of the 65,536-GPU fabric in "
              f"{time.perf_counter() - t:.0f} s")
    truth: dict[str, Any] = json.loads(truth_file.read_text())
    fab = truth["fabric"]
    print(f"fabric: {fab['hosts']:,} hosts x {fab['hcas_per_host']} rails, {fab['leaves']:,} "
          f"leaves, {fab['spines']:,} spines, {fab['cores']:,} cores, {fab['links']:,} links; "
          f"{truth['jobs_total']:,} jobs, {len(truth['flaps']):,} flaps "
          f"({len(truth['flaps']) / days:,.0f} a day), {len(truth['bad_cables'])} bad cables, "
          f"{len(truth['network_failed_jobs']):,} jobs killed by the network")
    db = root / "scale.duckdb"
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    run = _Run(db)
    figures: dict[str, Any] = {"days": days, "links": fab["links"]}
    growth: list[tuple[str, float]] = []
    topo = scen / "topology" / "ibnetdiscover.txt"
    topo_at = parse_instant(truth["topology_at"])
    print("topology (one `auditor ingest` a day):")
    base = run.process("baseline: DuckDB read_csv scan of the capture",
                       [sys.executable, "-c", _SCAN, str(topo)])
    first = run.auditor("ingest, first capture (empty database)", "ingest", "--at",
                        _iso(topo_at), str(topo))
    nightly = []
    # --sample-days D: the first capture and the last D days' only (the evidence of the whole
    # window stays); every day's otherwise
    sample = int(args.sample_days or days)
    topo_days = sorted({*range(max(1, int(days) - sample), int(days))})
    figures["topology_days"] = [0, *topo_days]
    for day in topo_days:
        label = "ingest, a nightly capture" if day in (topo_days[0], topo_days[-1]) else None
        nightly.append(run.auditor(label, "ingest", "--at", _iso(topo_at + timedelta(days=day)),
                                   str(topo)))
    figures |= {"topology_first": first, "topology_nightly_median": (
        statistics.median(n[0] for n in nightly), statistics.median(n[1] for n in nightly),
        max(n[2] for n in nightly)) if nightly else first, "topology_scan_baseline": base}
    growth.append((f"{1 + len(topo_days)} topology snapshots", run.size()))

    print("counters: a full `ibqueryerrors --data` snapshot every 12 h (one ingest each):")
    parsed = parse_topology(topo.read_text())
    desc = {n.guid: n.description for n in parsed.nodes}
    switches = {n.guid for n in parsed.nodes if str(n.node_type) == "switch"}
    ports: dict[str, list[tuple[int, str]]] = {}
    for p in parsed.ports:
        if p.width is not None:
            ports.setdefault(p.guid, []).append((p.port, p.port_guid or p.guid))
    del parsed
    snap_path = root / "full-snapshot.txt"
    counter_runs = []
    snaps = list(enumerate(truth["snapshots"]))
    snaps = [snaps[0], *snaps[max(1, len(snaps) - 2 * sample):]]
    figures["counter_snapshots"] = len(snaps)
    for k, snap in snaps:
        lines = full_snapshot_65k(snap_path, ports, desc, switches, k,
                                  scenario_errors(scen / snap["file"]))
        if k == 0:
            figures["counters_scan_baseline"] = run.process(
                f"baseline: DuckDB read_csv scan ({lines:,} port lines)",
                [sys.executable, "-c", _SCAN, str(snap_path)])
        label = ("ingest --kind ibqueryerrors, one full snapshot"
                 if k in (0, snaps[-1][0]) else None)
        counter_runs.append(run.auditor(label, "ingest", "--kind", "ibqueryerrors", "--at",
                                        _iso(parse_instant(snap["at"])), str(snap_path)))
    snap_path.unlink(missing_ok=True)
    if counter_runs:
        figures["counters_median"] = (statistics.median(c[0] for c in counter_runs),
                                      statistics.median(c[1] for c in counter_runs),
                                      max(c[2] for c in counter_runs))
        print(f"  {len(counter_runs)} snapshots: median {figures['counters_median'][0]:.2f} s, "
              f"peak {figures['counters_median'][2]:.0f} MB", flush=True)
    growth.append((f"+ {len(counter_runs)} full counter snapshots", run.size()))

    print("logs and jobs:")
    log_paths = sorted((scen / "logs").iterdir())
    lines, _ = read_lines(log_paths)
    logs = [str(p) for p in log_paths]
    figures["syslog_lines"] = lines
    figures["syslog"] = run.auditor(f"ingest --kind syslog ({lines:,} lines)", "ingest",
                                    "--kind", "syslog", *logs)
    growth.append(("+ switch syslog", run.size()))
    site = [scen / "hosts", scen / "maintenance.csv", scen / "inventory.csv", scen / "cabling.csv"]
    run.auditor("ingest hosts, maintenance, inventory, cabling", "ingest",
                *(str(p) for p in site))
    sacct = scen / "jobs" / "sacct.txt"
    figures["sacct"] = run.auditor(f"ingest --kind sacct ({truth['jobs_total']:,} jobs)",
                                   "ingest", "--kind", "sacct", str(sacct))
    job_logs = sorted((scen / "jobs" / "logs").glob("*.log"))
    # as `xargs` would run it: as many logs a process as fit in 512 kB of arguments
    batches: list[list[str]] = [[]]
    for log in job_logs:
        if sum(len(b) + 1 for b in batches[-1]) + len(str(log)) > 512_000:
            batches.append([])
        batches[-1].append(str(log))
    parts = [run.auditor(None, "ingest", "--kind", "joblog", *b) for b in batches if b]
    figures["joblogs"] = (sum(p[0] for p in parts), sum(p[1] for p in parts),
                          max(p[2] for p in parts))
    run.rows.append((f"ingest --kind joblog ({len(job_logs):,} logs, {len(parts)} processes)",
                     *figures["joblogs"]))
    print(f"  {run.rows[-1][0]:<58} {figures['joblogs'][0]:7.2f} s "
          f"({figures['joblogs'][1]:6.2f} s CPU) {figures['joblogs'][2]:6.0f} MB", flush=True)
    for kind, rel in (("slurm-events", "slurm/events.txt"), ("slurmctld", "slurm/slurmctld.log")):
        if (scen / rel).exists():
            run.auditor(f"ingest --kind {kind}", "ingest", "--kind", kind, str(scen / rel))
    growth.append(("+ sacct, job logs, site files, Slurm events", run.size()))

    end = _iso(START + timedelta(days=days))
    if args.optics:
        # Daily diagnostics of every host module, then the nightly's precomputation of the
        # watch list (issue #25), before the commands: they read it, as after a nightly run.
        print("optics (every host module once a day, ethtool -m as the sweep reads it):")
        t, c = time.perf_counter(), time.process_time()
        total, sources = write_optics(db, scenario_65k(days))
        print(f"  {total:,} module readings, {sources:,} sources, written in "
              f"{time.perf_counter() - t:.0f} s ({time.process_time() - c:.0f} s CPU)",
              flush=True)
        growth.append(("+ daily optics of every host module", run.size()))
        figures["watch_list_refresh"] = run.auditor(
            "watch-list --refresh (the nightly's precomputation)", "watch-list", "--refresh",
            "--since", f"{days:g}d", "--until", end, "--format", "json")
        figures["watch_list_read"] = run.auditor(
            "watch-list (reading it)", "watch-list", "--since", f"{days:g}d", "--until", end,
            "--format", "json")
    print("commands:")
    figures["count_baseline"] = run.process("baseline: DuckDB count of every table",
                                            [sys.executable, "-c", _COUNT_TABLES, str(db)])
    for label, since in (("24h", "24h"), ("30d", f"{days:g}d")):
        run.auditor(None, "suspects", "--since", since, "--until", end, "--format", "json")
        figures[f"suspects_{label}"] = run.auditor(f"suspects --since {since}", "suspects",
                                                   "--since", since, "--until", end,
                                                   "--format", "json")
    figures["report_24h"] = run.auditor("report --since 24h", "report", "--since", "24h",
                                        "--until", end, "--out", str(root / "report"))
    figures["db_growth_mb"] = growth
    figures["db_mb"] = run.size()
    figures["rows"] = dict(_table_rows(db))
    res = subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), "suspects",
                          "--since", f"{days:g}d", "--until", end, "--format", "json"],
                         capture_output=True, text=True, check=True, env=_ENV)
    score = _score(scen, truth, json.loads(res.stdout))
    figures["recall_at_k"] = score.recall
    figures["k"] = score.k
    figures["false_blames"] = score.false_blames
    figures["network_jobs"] = (score.network_jobs, score.network_jobs_truth)
    print(f"ranking over {days:g} days: recall@{score.k} {score.recall:.3f}, "
          f"{len(score.false_blames)} false blames; network-caused jobs "
          f"{score.network_jobs:,} (truth {score.network_jobs_truth:,})")
    print("database growth:")
    for what, mb in growth:
        print(f"  after {what:<46} {mb:8.0f} MB")
    print(f"peak memory of any command: {max(r[3] for r in run.rows):.0f} MB")
    figures["process_rows"] = run.rows
    return figures


def _table_rows(db: Path) -> list[tuple[str, int]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        # DuckDB's row count of each table (exact for tables only appended to)
        return [(str(t), int(n)) for t, n in con.execute(
            "select table_name, estimated_size from duckdb_tables() order by 1").fetchall()]
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--gpus", type=int, choices=(65536,), help="65536: the three-tier fabric "
                    "(needs --keep: its files and database stay there, several GB)")
    ap.add_argument("--sample-days", type=int, help="--gpus 65536: topology and counter "
                    "snapshots of the last N days only (and the first), to fit a short run")
    ap.add_argument("--optics", action="store_true", help="--gpus 65536: also every host "
                    "module's transceiver diagnostics once a day (ethtool -m, 65,536 a day), "
                    "and the watch list's nightly precomputation timed on them")
    args = ap.parse_args()
    if args.gpus:
        if args.keep is None:
            ap.error("--gpus 65536 needs --keep DIR")
        out = run_65k(args)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
        return
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
