"""Benchmark: how well `auditor suspects` finds the bad cables of generated scenarios.

For several seeds and fabric sizes (up to 128 leaves) it generates a scenario with
`auditor.simulate.scenario`, ingests every file, ranks, and prints per run: recall@K (K = the
number of injected bad cables; over link suspects), false blames in the top K (cables of the
rebooted switch, of a maintenance target, or with one short reseat flap), whether the rebooted
switch came out as one `switch` suspect, and the same recall/false blames for the naive ranking
(count of DOWN lines per switch port) in the same run. Not a test.

Two kinds of scenario: `old`, the generator's defaults (one rail, NCCL 2.28 INFO logs with
stamps, one log per job), and `realistic`, the `REALISTIC` preset (8 rails, mixed NCCL
releases and timeouts, WARN-only logs, no NCCL stamps, launcher prefixes, sacct steps, one
switch whose syslog is lost). `--match-logs` ingests the job logs without their job ids, so
they are matched to jobs by host and time.

    python benchmarks/bench_ranking.py [--seeds 1 2 3] [--quick] [--kind old|realistic|both]
                                       [--match-logs]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from auditor.simulate.evaluate import evaluate
from auditor.simulate.scenario import REALISTIC, ScenarioOptions, generate

SIZES = [(4, 8, 8), (8, 16, 16), (16, 32, 16), (32, 64, 16), (64, 128, 16)]
# 8 rails: leaves come in groups of 8, so 32, 64 and 128 hosts.
REALISTIC_SIZES = [(8, 16, 16), (8, 32, 16), (16, 64, 16)]


def run_kind(kind: str, sizes: list[tuple[int, int, int]], seeds: list[int],
             options: ScenarioOptions, match_logs: bool) -> None:
    recalls, naive, false_total, naive_false, switch_ok, runs = [], [], 0, 0, 0, 0
    print(f"\n{kind} scenarios{' (job logs matched by host and time)' if match_logs else ''}")
    print(f"{'fabric':>14} {'seed':>4} {'K':>3} {'recall@K':>8} {'false':>5} {'switch':>6} "
          f"{'naive':>6} {'n.false':>7} {'time':>6}")
    for spines, leaves, hosts in sizes:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp) / "scenario"
                t = time.perf_counter()
                generate(folder, seed=seed, spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                         **options)
                score, truth = evaluate(folder, Path(tmp) / "a.duckdb", match_logs)
                took = time.perf_counter() - t
            rebooted = {r["name"] for r in truth["switch_reboots"]}
            one_switch = sorted(score.switch_suspects) == sorted(rebooted)
            runs += 1
            recalls.append(score.recall)
            naive.append(score.naive_recall)
            false_total += len(score.false_blames)
            naive_false += score.naive_false_blames
            switch_ok += one_switch
            print(f"{spines:>4}x{leaves:>3}x{hosts:>3} {seed:>4} {score.k:>3} "
                  f"{score.recall:>8.2f} {len(score.false_blames):>5} "
                  f"{'yes' if one_switch else 'NO':>6} {score.naive_recall:>6.2f} "
                  f"{score.naive_false_blames:>7} {took:>5.1f}s")
            for blame in score.false_blames:
                print(f"      false blame: {blame}")
    print(f"\n{kind}: runs: {runs}; mean recall@K {statistics.mean(recalls):.3f} (target >= 0.95), "
          f"naive {statistics.mean(naive):.3f}; false blames in top K: {false_total} "
          f"(naive {naive_false}); rebooted switch as exactly one switch suspect: "
          f"{switch_ok}/{runs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--quick", action="store_true", help="only the two smallest sizes")
    ap.add_argument("--kind", choices=("old", "realistic", "both"), default="both",
                    help="the default scenarios, the REALISTIC preset, or both (default)")
    ap.add_argument("--match-logs", action="store_true",
                    help="ingest the job logs without their job ids (matched by host and time)")
    args = ap.parse_args()
    if args.kind in ("old", "both"):
        run_kind("old", SIZES[:2] if args.quick else SIZES, args.seeds, {}, args.match_logs)
    if args.kind in ("realistic", "both"):
        run_kind("realistic", REALISTIC_SIZES[:2] if args.quick else REALISTIC_SIZES,
                 args.seeds, REALISTIC, args.match_logs)


if __name__ == "__main__":
    main()
