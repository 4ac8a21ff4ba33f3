"""Benchmark: the precomputed optics watch list (issue #25, item 3).

It writes N transceivers' daily diagnostics for D days into a new database through the store's
own writer (`Store.add_optics`, one source per day as a nightly sweep leaves: every module's
temperature, Vcc, 4 lanes of Tx bias, Tx and Rx power, and its alarm and warning limits, the
limits of a real Mellanox SR4 module as `auditor.simulate.scenario.optics` uses), healthy
modules with daily scatter, and some that drift, have a weak lane or run warm, then measures:
  - the precomputation (`auditor.analyse.watchlist.refresh`: what the nightly runs), in process,
    and as a whole process (`auditor watch-list --refresh`: its wall and CPU time and peak
    memory); with `--before CHECKOUT` the same process with the code of that checkout (the
    baseline of the same run: the code before a change);
  - baseline: the same list computed on demand (`auditor.analyse.optics.watch_list`: what
    every `suspects`, `report` and `watch-list` paid before), in process, same run;
  - `auditor watch-list` as a whole process reading the precomputation, and before it
    `python -c pass` and the same command with no precomputation (computed on demand);
  - that the stored list equals the one computed on demand.
Targets (issue #25): `watch-list` <= 1 s whole process; the precomputation <= 60 s and <= 2 GB
(whole process) at 65,536 modules x 30 days. The modules carry synthetic GUIDs and no topology
(no peers: the link budget rule has nothing to compare, as in the scenarios, whose switch ends
are not read).
Not a test.

    python benchmarks/bench_watch.py [--modules 4096] [--days 30] [--keep DB] [--json OUT]
                                     [--repeat 3] [--no-baseline] [--before CHECKOUT]
                                     [--cap-gb GB]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.analyse.optics.outputs import as_json
from auditor.analyse.optics.read import watch_list
from auditor.config import OpticsSettings
from auditor.models import LaneReading, OpticsReading, Thresholds
from auditor.store import Store
from auditor.store.meta import SourceMeta

START = datetime(2026, 10, 31, tzinfo=UTC)
# A real Mellanox SR4 module's page 03h (auditor/simulate/scenario/optics.py LIMITS), in units.
LIMITS = {"tx_bias_ma": Thresholds(5.492, 6.0, 8.0, 8.5),
          "tx_power_dbm": Thresholds(-11.4, -8.4, 2.4, 5.4),
          "rx_power_dbm": Thresholds(-13.31, -10.3, 2.4, 5.4),
          "temperature_c": Thresholds(-10.0, 0.0, 70.0, 80.0),
          "vcc_v": Thresholds(3.1, 3.135, 3.465, 3.5)}


class Module:
    """One synthetic module: its levels, and what ails it (None: healthy)."""

    def __init__(self, i: int, rng: random.Random, days: int) -> None:
        self.host, self.port_name = f"gpu{i // 8:05d}", f"mlx5_{i % 8}/1"
        self.guid = f"0x{0xa088c20300000000 + i // 8 * 16:016x}"
        self.port = 1 + i % 8
        self.serial = f"MT23{rng.randint(1, 52):02d}FT{i:06d}"
        self.temp0, self.vcc0 = rng.uniform(36.0, 48.0), rng.uniform(3.26, 3.32)
        self.bias0 = [rng.gauss(6.75, 0.12) for _ in range(4)]
        self.tx0 = [rng.gauss(0.8, 0.3) for _ in range(4)]
        self.rx0 = [rng.gauss(0.8, 0.3) - rng.uniform(0.5, 1.8) for _ in range(4)]
        draw = rng.random()
        self.kind = ("ageing" if draw < 0.01 else "sag" if draw < 0.02 else "hot" if draw < 0.03
                     else "weak" if draw < 0.08 else "dirt" if draw < 0.16 else None)
        self.onset = rng.uniform(0.0, days / 2)
        self.lane = rng.randint(0, 3)

    def read(self, day: int, at: datetime, rng: random.Random) -> OpticsReading:
        p = max(0.0, day - self.onset)
        temp = self.temp0 + rng.gauss(0.0, 0.35) + (1.2 * p if self.kind == "hot" else 0.0)
        lanes = []
        for n in range(4):
            bias = self.bias0[n] + 0.03 * (temp - self.temp0) + rng.gauss(0.0, 0.015)
            if self.kind == "ageing" and n == self.lane:
                bias += 0.08 * p
            rx = self.rx0[n] + rng.gauss(0.0, 0.08)
            if self.kind == "sag" and n == self.lane:
                rx -= 0.5 * p
            elif self.kind == "weak" and n == self.lane:
                rx -= 3.5
            elif self.kind == "dirt":
                rx -= 0.05 * day
            lanes.append(LaneReading(n + 1, round(bias, 3),
                                     round(self.tx0[n] + rng.gauss(0.0, 0.04), 2), round(rx, 2)))
        return OpticsReading(self.host, self.port_name, at, "Mellanox", "MMA1T00-HS",
                             self.serial, "46.120.0012", round(temp, 2),
                             round(self.vcc0 + rng.gauss(0.0, 0.002), 4), tuple(lanes),
                             dict(LIMITS))


def build(db: Path, modules: int, days: int) -> tuple[datetime, float]:
    """The readings of every module and day, one source per day; the last read time."""
    rng = random.Random(25)
    mods = [Module(i, rng, days) for i in range(modules)]
    last = START
    t = time.perf_counter()
    with Store(db) as store:
        for day in range(days):
            at = START + timedelta(days=day, hours=2, minutes=30)
            readings = [m.read(day, at + timedelta(seconds=i % 600), rng)
                        for i, m in enumerate(mods)]
            with store.transaction():
                sid = store.add_source(SourceMeta("ethtool-module", f"bench/day{day}", f"{day}",
                                                  "bench", at, True, 0, 0, len(readings)))
                store.add_optics(sid, readings, [(m.guid, m.port) for m in mods])
            last = max(last, at + timedelta(seconds=599))
    return last, time.perf_counter() - t


_MEASURE = """
import os, resource, subprocess, sys, time
cap = int(sys.argv[1])
def limit():
    if cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
t = time.perf_counter()
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     preexec_fn=limit)
_, status, usage = os.wait4(p.pid, 0)
print(time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
      os.waitstatus_to_exitcode(status))
"""
CAP = 0  # bytes of address space a measured process may take (0: no cap; --cap-gb)


def whole(*argv: str, code: Path | None = None, may_fail: bool = False
          ) -> tuple[float, float, float]:
    """Wall time, CPU time (user + system) and peak memory (MB) of a whole process (`code`: a
    checkout whose `auditor` it runs); with `may_fail`, a failed process's figures with a
    negative wall time."""
    env = None if code is None else dict(os.environ, PYTHONPATH=str(code.resolve()))
    # `python -m` puts the working directory first on the path: the checkout's own.
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(CAP), *argv],
                         capture_output=True, text=True, check=True, env=env, cwd=code)
    took, cpu, rss_kb, code = out.stdout.split()
    if int(code) != 0:
        if may_fail:
            return -float(took), float(cpu), int(rss_kb) / 1024
        sys.exit(f"{' '.join(argv)} failed with {code}")
    return float(took), float(cpu), int(rss_kb) / 1024


def best(runs: int, *argv: str) -> tuple[float, float, float]:
    """The fastest of `runs` (wall and CPU) and the largest peak memory."""
    got = [whole(*argv) for _ in range(runs)]
    return (min(t for t, _, _ in got), min(c for _, c, _ in got), max(m for _, _, m in got))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", type=int, default=4096)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--keep", type=Path, help="keep (or reuse) the database here")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the on-demand runs (at 65,536 modules each is the precomputation "
                    "again): the precomputation, its peak memory and the read")
    ap.add_argument("--before", type=Path, metavar="CHECKOUT",
                    help="also time `watch-list --refresh` as a whole process with the code of "
                    "another checkout (e.g. a worktree of the commit before a change): the "
                    "baseline of the same run")
    ap.add_argument("--cap-gb", type=float, default=0.0,
                    help="cap each measured process's address space (GB; a run over it fails "
                    "and is reported as such, so as not to starve the machine)")
    args = ap.parse_args()
    global CAP
    CAP = int(args.cap_gb * 2**30)
    from auditor.analyse.watchlist import refresh

    cfg = OpticsSettings()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or Path(tmp) / "watch.duckdb"
        if not db.exists():
            _, took = build(db, args.modules, args.days)
            print(f"wrote {args.modules:,} modules x {args.days} days in {took:.1f} s")
        with Store(db) as store:
            newest = store.optics_fingerprint(START, START + timedelta(days=366))
            store.clear_watch_list()
        if newest["newest_read_at"] is None:
            sys.exit(f"{db}: no optics readings")
        until = newest["newest_read_at"].replace(tzinfo=UTC)
        since = until - cfg.history
        env = [sys.executable, "-m", "auditor", "--db", str(db), "watch-list", "--until",
               until.isoformat(), "--format", "json"]
        base, _, _ = best(args.repeat, sys.executable, "-c", "pass")
        figures["python_s"] = base
        if not args.no_baseline:
            (figures["on_demand_process_s"], figures["on_demand_process_cpu_s"],
             figures["on_demand_rss_mb"]) = best(1, *env)
        with Store(db) as store:
            on_demand = None
            if not args.no_baseline:
                t, c = time.perf_counter(), time.process_time()
                on_demand = watch_list(store, since, until, cfg)
                figures["on_demand_s"] = time.perf_counter() - t
                figures["on_demand_cpu_s"] = time.process_time() - c
            t, c = time.perf_counter(), time.process_time()
            fresh = refresh(store, since, until, cfg)  # as the nightly: its own transaction
            figures["precompute_s"] = time.perf_counter() - t
            figures["precompute_cpu_s"] = time.process_time() - c
        # this process's peak: the precomputation (and the on-demand run before it)
        figures["precompute_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # The precomputation as the nightly runs it, a whole process (`watch-list --refresh`
        # stores what the nightly's step stores); before it, the same with the code of before.
        refresh_argv = [sys.executable, "-m", "auditor", "--db", str(db.resolve()), "watch-list",
                        "--refresh", "--since", f"{cfg.history_days:g}d", "--until",
                        until.isoformat(), "--format", "json"]
        if args.before:
            (figures["before_refresh_process_s"], figures["before_refresh_process_cpu_s"],
             figures["before_refresh_rss_mb"]) = whole(*refresh_argv, code=args.before,
                                                       may_fail=True)
        (figures["refresh_process_s"], figures["refresh_process_cpu_s"],
         figures["refresh_rss_mb"]) = whole(*refresh_argv)
        (figures["watch_list_process_s"], figures["watch_list_process_cpu_s"],
         figures["watch_list_rss_mb"]) = best(args.repeat, *env)
        out = subprocess.run(env, capture_output=True, text=True, check=True)
        stored = json.loads(out.stdout)
        same = (stored["watch"] == as_json(on_demand or fresh, cfg)["watch"]
                and stored["watch_list_precomputed"])
        figures["watched"] = len(fresh.watches)
        print(f"{args.modules:,} modules x {args.days} days: {figures['watched']} watched; "
              f"stored list equals the {'on-demand' if on_demand else 'refreshed'} one: {same}; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"  precomputation (in process)      {figures['precompute_s']:6.2f} s "
              f"({figures['precompute_cpu_s']:.2f} s CPU), peak {figures['precompute_rss_mb']:.0f}"
              " MB" + (f"   baseline: on demand, as every suspects/report paid: "
                       f"{figures['on_demand_s']:.2f} s ({figures['on_demand_cpu_s']:.2f} s CPU)"
                       if on_demand else ""))
        before = ""
        if args.before:
            b = figures["before_refresh_process_s"]
            before = (f"   baseline: the code of {args.before}: "
                      + (f"{b:.2f} s ({figures['before_refresh_process_cpu_s']:.2f} s CPU), "
                         f"{figures['before_refresh_rss_mb']:.0f} MB" if b >= 0 else
                         f"failed after {-b:.0f} s ({figures['before_refresh_process_cpu_s']:.1f}"
                         f" s CPU, {figures['before_refresh_rss_mb']:.0f} MB"
                         + (f", capped at {args.cap_gb:g} GB)" if CAP else ")")))
        print(f"  precomputation (watch-list --refresh, process) {figures['refresh_process_s']:.2f}"
              f" s ({figures['refresh_process_cpu_s']:.2f} s CPU), "
              f"{figures['refresh_rss_mb']:.0f} MB{before}")
        print(f"  watch-list reading it (process)  {figures['watch_list_process_s']:6.2f} s "
              f"({figures['watch_list_process_cpu_s']:.2f} s CPU), "
              f"{figures['watch_list_rss_mb']:.0f} MB   baseline: python -c pass {base:.2f} s" +
              (f"; watch-list computing on demand {figures['on_demand_process_s']:.2f} s "
               f"({figures['on_demand_process_cpu_s']:.2f} s CPU), "
               f"{figures['on_demand_rss_mb']:.0f} MB" if on_demand else ""))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        if not same:
            sys.exit("the stored watch list differs from the one computed on demand")


if __name__ == "__main__":
    main()
