"""Benchmark (b): ingest a 5-million-line switch syslog with about 1 % port events.

Prints lines/s of `auditor ingest --kind syslog` (scan, parse, map onto the fabric, store) and
the ratio to DuckDB's own `read_csv` scan of the same file, both measured in the same run (the
median of three runs of each, alternating; each ingest into a fresh copy of the store).
Targets: at least 500,000 lines/s and within 3x of that scan. Not a test.

    python benchmarks/bench_syslog.py [--lines 5000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from auditor.demo import build_demo
from auditor.ingest.common import LogOptions
from auditor.ingest.logs import ingest_logs, log_scanner
from auditor.store import Store

NOISE = [
    "sshd[{pid}]: pam_unix(sshd:session): session closed for user admin",
    "mgmtd[4128]: [mgmtd.NOTICE]: Configuration saved to database initial",
    "snmpd[{pid}]: Connection from UDP: [10.0.0.{n}]:{pid}->[10.0.1.1]:161",
    "ntpd[812]: adjusting local clock by 0.00{n}s",
    "kernel: [  {pid}.{n:06d}] i2c i2c-{n}: sendbytes: NAK bailout.",
]


def write_log(path: Path, lines: int, seed: int = 7) -> int:
    """A syslog of the demo fabric's switches; returns how many port events it holds."""
    rng = random.Random(seed)
    switches = [f"leaf{i:02d}" for i in range(1, 9)] + [f"spine{i:02d}" for i in range(1, 5)]
    start = datetime(2026, 11, 29, 0, 0, tzinfo=UTC)
    events = 0
    with path.open("w", encoding="utf-8") as fh:
        for i in range(lines):
            at = start + timedelta(seconds=i * 86400 / lines)
            stamp = at.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
            host = switches[i % len(switches)]
            if rng.random() < 0.01:
                state = "DOWN" if rng.random() < 0.5 else "UP"
                msg = (f"mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/{rng.randint(1, 12)} "
                       f"changed state to {state}")
                events += 1
            else:
                msg = rng.choice(NOISE).format(pid=rng.randint(100, 99999), n=rng.randint(0, 9))
            fh.write(f"{stamp} {host} {msg}\n")
    return events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side (median)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "switches.log"
        t = time.perf_counter()
        events = write_log(log, args.lines)
        print(f"wrote {args.lines:,} lines ({log.stat().st_size / 1e6:.0f} MB, {events:,} port "
              f"events) in {time.perf_counter() - t:.1f} s")
        fabric = folder / "fabric.duckdb"
        fabric.unlink(missing_ok=True)
        build_demo(fabric)  # the fabric the switch names map onto
        os.sync()  # the 500 MB just written is not flushed to disk while we measure

        # Each side three times, alternating, in the same run; the medians are compared.
        baselines, takes = [], []
        for _ in range(args.repeat):
            con = duckdb.connect()
            t = time.perf_counter()
            (count,) = con.execute(
                "select count(*) from read_csv($p, columns={'line': 'VARCHAR'}, "
                "delim='\\x00', quote='', escape='', header=false, auto_detect=false, "
                "strict_mode=false, null_padding=true)", {"p": str(log)}).fetchone() or (0,)
            baselines.append(time.perf_counter() - t)
            con.close()

            db = folder / "bench.duckdb"
            shutil.copyfile(fabric, db)  # a store without these events, every time
            with Store(db) as store:
                t = time.perf_counter()
                (result,) = ingest_logs(store, [log], "syslog", LogOptions(),
                                        now=datetime(2026, 12, 1, tzinfo=UTC))
                takes.append(time.perf_counter() - t)
        baseline, took = statistics.median(baselines), statistics.median(takes)
        tool = log_scanner("syslog")
    rate = args.lines / took
    print(f"medians of {args.repeat} runs each (all: baseline "
          f"{', '.join(f'{b:.2f}' for b in baselines)} s; ingest "
          f"{', '.join(f'{t:.2f}' for t in takes)} s)")
    print(f"baseline: DuckDB read_csv scan of {count:,} lines   {baseline:6.2f} s "
          f"({count / baseline:,.0f} lines/s)")
    print(f"auditor ingest --kind syslog (scan+parse+map+store) {took:6.2f} s "
          f"({rate:,.0f} lines/s), {result.records:,} events stored, scanner: {tool}")
    print(f"ratio to the DuckDB scan: {took / baseline:.2f}x   targets: >= 500,000 lines/s "
          f"{'met' if rate >= 500_000 else 'MISSED'}, within 3x "
          f"{'met' if took <= 3 * baseline else 'MISSED'}")
    if args.json:
        import json

        args.json.write_text(json.dumps({"syslog_ingest_s": took, "syslog_baseline_s": baseline,
                                         "syslog_lines_per_s": rate}, indent=1) + "\n")


if __name__ == "__main__":
    main()
