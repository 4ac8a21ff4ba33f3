"""Benchmark: does the optics watch list (issue #14) see ageing transceivers before they flap?

For several seeds it generates a scenario with `--optics` (every host port's module read once a
day, some modules ageing toward a flap: Tx bias creeping up at flat temperature, one lane's Rx
power sagging, a module heating up; healthy modules with their own scatter, slow dirt, a weak
lane or a warmer spot), puts the topology and the readings in a database and replays the watch
list day by day, each day on the history up to that night's readings (`[optics]` defaults, 30
days back). The readings go in as `auditor ingest --kind ethtool-module` reads the `ethtool -m`
files the scenario wrote (`auditor.simulate.evaluate.load_optics`: parser, placement on the
topology, store). Per run and in all:

- lead time: from the first day an ageing module is on the watch list (any strength) to its
  first flap, in days; negative or missing = seen too late. Target: median >= 1 day.
- strong lead time: the same for the day its watch is strong enough for `suspects` to call the
  link a `transceiver` on the optics alone.
- false watch rate: healthy modules ever on the watch list / healthy modules (and ever strong).

Not a test; no timing asserts. The figures go into docs/performance.md.

    python benchmarks/bench_optics.py [--seeds 1 2 3 4 5] [--days 21] [--ageing 6]
                                      [--spines 4 --leaves 8 --hosts 8]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from auditor.analyse.optics.read import watch_list
from auditor.config import OpticsSettings
from auditor.ingest.captures import ingest_files
from auditor.simulate.evaluate import load_optics
from auditor.simulate.scenario import GroundTruth, Scenario, write_scenario
from auditor.store import Store, utc_naive


def replay(db: Path, truth: GroundTruth, sc: Scenario, cfg: OpticsSettings
           ) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float], int]:
    """First day (hours into the window, at that day's end) each module is watched, and strong;
    and how many modules were read."""
    seen: dict[tuple[str, str], float] = {}
    strong: dict[tuple[str, str], float] = {}
    modules = 0
    start = utc_naive(sc.start)
    with Store(db, read_only=True) as store:
        for day in range(1, math.ceil(sc.days) + 1):
            until = start + timedelta(days=day)
            wl = watch_list(store, until - cfg.history, until, cfg)
            modules = max(modules, wl.modules)
            for w in wl.watches:
                key = (w.module.device, w.module.port_name)
                seen.setdefault(key, day * 24.0)
                if w.strong(cfg):
                    strong.setdefault(key, day * 24.0)
    return seen, strong, modules


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--days", type=float, default=21.0)
    ap.add_argument("--ageing", type=int, default=6, help="ageing modules per scenario")
    ap.add_argument("--spines", type=int, default=4)
    ap.add_argument("--leaves", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=8, help="hosts per leaf")
    args = ap.parse_args()
    cfg = OpticsSettings()
    leads: list[float] = []
    strong_leads: list[float] = []
    missed = healthy_total = healthy_watched = healthy_strong = 0
    print(f"{'seed':>4} {'modules':>7} {'ageing':>6} {'kind':<13} {'lead d':>7} {'strong d':>8} "
          f"{'healthy watched':>15} {'strong':>6} {'time':>6}")
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            folder = Path(tmp) / "scenario"
            # Few jobs: the watch list reads only the topology and the modules, and a month
            # of a busy cluster's jobs takes longer to write than everything else here.
            sc = Scenario(seed=seed, spines=args.spines, leaves=args.leaves,
                          hosts_per_leaf=args.hosts, days=args.days, jobs_per_day=20,
                          optics=True, ageing_optics=args.ageing)
            truth = write_scenario(folder, sc)
            db = Path(tmp) / "a.duckdb"
            with Store(db) as store:
                ingest_files(store, [folder / "topology" / "ibnetdiscover.txt"],
                             at=truth.topology_at)
                load_optics(store, folder)
            seen, strong, modules = replay(db, truth, sc, cfg)
            took = time.perf_counter() - t0
        ageing = {(a.host, a.port_name): a for a in truth.ageing_optics}
        start = sc.start
        for key, a in sorted(ageing.items()):
            flap_h = (a.first_flap - start).total_seconds() / 3600
            lead = (flap_h - seen[key]) / 24 if key in seen else None
            lead_s = (flap_h - strong[key]) / 24 if key in strong else None
            if lead is None or lead <= 0:
                missed += 1
            leads.append(lead if lead is not None else -math.inf)
            strong_leads.append(lead_s if lead_s is not None else -math.inf)
            print(f"{seed:>4} {modules:>7} {a.host + ' ' + a.device:>6} {a.kind:<13} "
                  f"{_days(lead):>7} {_days(lead_s):>8}")
        healthy = modules - len(ageing)
        watched = len(set(seen) - set(ageing))
        strong_h = len(set(strong) - set(ageing))
        healthy_total += healthy
        healthy_watched += watched
        healthy_strong += strong_h
        print(f"{seed:>4} {modules:>7} {len(ageing):>6} {'':<13} {'':>7} {'':>8} "
              f"{watched:>7}/{healthy:<7} {strong_h:>6} {took:>5.1f}s")
    print(f"\nruns: {len(args.seeds)}; ageing modules: {len(leads)}, seen before their first "
          f"flap: {len(leads) - missed}")
    print(f"median lead time {statistics.median(leads):.1f} days (target >= 1), strong "
          f"(transceiver verdict on optics alone) {statistics.median(strong_leads):.1f} days")
    print(f"false watch rate {healthy_watched}/{healthy_total} = "
          f"{healthy_watched / max(healthy_total, 1):.1%} of healthy modules ever watched; "
          f"ever strong {healthy_strong}/{healthy_total} = "
          f"{healthy_strong / max(healthy_total, 1):.1%}")


def _days(lead: float | None) -> str:
    return "never" if lead is None else f"{lead:.1f}"


if __name__ == "__main__":
    main()
