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

`--harmless N` adds N harmless links to every scenario (`harmless_flaps`: sound links whose long
flaps adaptive routing or NCCL's port failover absorb; a harmless link in the top K is a false
blame) and ranks each one twice on the same evidence: without the healthy-job evidence of
issue #15 (before) and with it (after). It prints both, and where each harmless link ranks
among the link suspects (`-`: not a suspect; `U` a leaf uplink, `H` a host's cable).

`--kind reboot` (issue #20) runs three settings with hosts that crash and reboot undeclared
while they run a job (`host_reboots`, 3 by default, `--reboots N`): one rail with only sacct's
NODE_FAIL to tell; eight rails, the REALISTIC preset, without Slurm events or boot records;
the same with both (slurm/events.txt, slurm/slurmctld.log, boots/). Per run it prints recall@K
and false blames as above, how many of the top K are cables of a crashed host (`h.cab`, also
counted as false blames), how many crashed hosts a `host` suspect names (`host`), and the
ranking's network-caused jobs against truth's (`net/truth`, with the jobs the crashes killed
in `killed`: NODE_FAIL and FAILED). Its seeds default to 1-10. The targets: no crashed host's
cable in the top K, recall@K >= 0.95, network-caused jobs within 10 % of truth.

`--vendor-formats` (issue #24) writes every scenario also as an NVIDIA site keeps it and ranks
it through those files: the fabric and counters from ibdiagnet2.db_csv runs, the switch-side
flaps from each switch's NVOS event table, each kind once the ingest offers it (else the file it
was written from; the `vendor` column lists the kinds used: `d` ibdiagnet, `n` nvos-events).
The same seed without the flag is the same scenario ranked through ibnetdiscover and syslog.

    python benchmarks/bench_ranking.py [--seeds 1 2 3] [--quick]
                                       [--kind old|realistic|both|reboot] [--match-logs]
                                       [--harmless N] [--reboots N] [--vendor-formats]
                                       [--lfts] [--adaptive-routing]

`--adaptive-routing` ranks with `[fabric] adaptive_routing = true` (issue #23): the generator's
harmless uplinks are ones adaptive routing absorbs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from auditor.analyse.paths import Routes, end_ports
from auditor.analyse.pipeline import RankSettings
from auditor.config import RankingSettings
from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.simulate.evaluate import Score, evaluate
from auditor.simulate.scenario import REALISTIC, ScenarioOptions, generate

# The ranking's settings for every run (None: the defaults; --adaptive-routing sets them).
SETTINGS: RankSettings | None = None
SIZES = [(4, 8, 8), (8, 16, 16), (16, 32, 16), (32, 64, 16), (64, 128, 16)]
# 8 rails: leaves come in groups of 8, so 32, 64 and 128 hosts.
REALISTIC_SIZES = [(8, 16, 16), (8, 32, 16), (16, 64, 16)]
# Host reboots (issue #20): (setting, options, sizes); `host_reboots` is added from --reboots.
# 64 spines (issue #23): (spines, leaves, hosts per leaf); one silent uplink, no other bad cable
SPINES64_SIZES = [(64, 2, 32), (64, 4, 16), (64, 4, 32)]
SPINES64: ScenarioOptions = {"silent_uplink": True, "frequent_flappers": 0, "rare_flappers": 0,
                             "symbol_error_cables": 0}
# With --lfts the old kind stops before 64 x 128 x 16 (about 1 GB of captures a day).
LFT_SIZES = SIZES[:4]
REBOOT_SETTINGS: list[tuple[str, ScenarioOptions, list[tuple[int, int, int]]]] = [
    ("1 rail, NODE_FAIL only", {"host_records": "none"}, [(4, 8, 8), (8, 16, 16)]),
    ("8 rails, realistic, no host records", {**REALISTIC, "host_records": "none"},
     [(8, 16, 16), (8, 32, 16)]),
    ("8 rails, realistic, Slurm events and boot records", {**REALISTIC, "host_records": "both"},
     [(8, 16, 16), (8, 32, 16)]),
]


def run_kind(kind: str, sizes: list[tuple[int, int, int]], seeds: list[int],
             options: ScenarioOptions, match_logs: bool, harmless: int = 0) -> None:
    recalls, naive, false_total, naive_false, switch_ok, runs = [], [], 0, 0, 0, 0
    before = _Before()
    if harmless:
        options = {**options, "harmless_flaps": harmless}
    print(f"\n{kind} scenarios{' (job logs matched by host and time)' if match_logs else ''}"
          f"{f' with {harmless} harmless link(s)' if harmless else ''}")
    lft = bool(options.get("lfts"))
    vendor = bool(options.get("vendor_formats"))
    print(f"{'fabric':>14} {'seed':>4} {'K':>3} {'recall@K':>8} {'false':>5} {'switch':>6} "
          f"{'naive':>6} {'n.false':>7} {'time':>6}" + (f" {'lft':>4}" if lft else "")
          + (f" {'vendor':>6}" if vendor else "")
          + ("  before: recall false | harmless ranks before -> after" if harmless else ""))
    for spines, leaves, hosts in sizes:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp) / "scenario"
                t = time.perf_counter()
                generate(folder, seed=seed, spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                         **options)
                score, truth = evaluate(folder, Path(tmp) / "a.duckdb", match_logs,
                                        before=bool(harmless), vendor_formats=vendor,
                                        settings=SETTINGS)
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
                  f"{score.naive_false_blames:>7} {took:>5.1f}s"
                  + (f" {score.lfts_ingested:>4}" if lft else "")
                  + (f" {_kinds(score.vendor_kinds):>6}" if vendor else "")
                  + (before.add(score, truth) if harmless else ""))
            for blame in score.false_blames:
                print(f"      false blame: {blame}")
    print(f"\n{kind}: runs: {runs}; mean recall@K {statistics.mean(recalls):.3f} (target >= 0.95), "
          f"naive {statistics.mean(naive):.3f}; false blames in top K: {false_total} "
          f"(naive {naive_false}); rebooted switch as exactly one switch suspect: "
          f"{switch_ok}/{runs}")
    if harmless:
        before.summary(kind, recalls, false_total)


def _kinds(kinds: list[str]) -> str:
    return "".join({"ibdiagnet": "d", "nvos-events": "n"}.get(k, "?") for k in kinds) or "-"


class _Before:
    """The same runs ranked without the healthy-job evidence, and the harmless links' places."""

    def __init__(self) -> None:
        self.recalls: list[float] = []
        self.false = 0
        # (mechanism, rank before, rank after, K) per harmless link
        self.links: list[tuple[str, int | None, int | None, int]] = []

    def add(self, score: Score, truth: dict[str, Any]) -> str:
        b = score.before
        assert b is not None  # noqa: S101 - evaluate(before=True)
        self.recalls.append(b.recall)
        self.false += len(b.false_blames)
        cells = []
        for h, rb, ra in zip(truth["harmless_links"], b.harmless_ranks, score.harmless_ranks,
                             strict=True):
            mech = "U" if h["kind"] == "switch" else "H"
            self.links.append((mech, rb, ra, score.k))
            cells.append(f"{mech}{rb if rb else '-'}->{ra if ra else '-'}")
        return f"  {b.recall:>6.2f} {len(b.false_blames):>5} | {' '.join(cells)}"

    def summary(self, kind: str, after: list[float], after_false: int) -> None:
        print(f"{kind}, healthy-job evidence: mean recall@K {statistics.mean(self.recalls):.3f}"
              f" -> {statistics.mean(after):.3f}; false blames in top K {self.false} -> "
              f"{after_false}")
        for mech, name in (("H", "host cables (port failover)"),
                           ("U", "leaf uplinks (adaptive routing)")):
            mine = [x for x in self.links if x[0] == mech]
            if not mine:
                continue
            top_b = sum(1 for _, rb, _, k in mine if rb is not None and rb <= k)
            top_a = sum(1 for _, _, ra, k in mine if ra is not None and ra <= k)
            dropped = sum(1 for _, rb, ra, k in mine
                          if rb is not None and rb <= k and not (ra is not None and ra <= k))
            print(f"  harmless {name}: {len(mine)}; in the top K {top_b} -> {top_a} "
                  f"({dropped} dropped out); median link rank "
                  f"{_median([rb for _, rb, _, _ in mine])} -> "
                  f"{_median([ra for _, _, ra, _ in mine])}")


def _median(ranks: list[int | None]) -> str:
    # a link that is no suspect ranks below every suspect
    known = sorted(r if r is not None else 10**6 for r in ranks)
    mid = known[len(known) // 2] if known else None
    return "-" if mid is None or mid == 10**6 else str(mid)


def run_reboots(setting: str, sizes: list[tuple[int, int, int]], seeds: list[int],
                options: ScenarioOptions, match_logs: bool) -> None:
    recalls: list[float] = []
    false_total = cables_total = found = crashed = near = runs = 0
    gaps: list[float] = []
    print(f"\nhost reboots: {setting}"
          f"{' (job logs matched by host and time)' if match_logs else ''}")
    print(f"{'fabric':>14} {'seed':>4} {'K':>3} {'recall@K':>8} {'false':>5} {'h.cab':>5} "
          f"{'host':>5} {'net/truth':>9} {'killed':>9} {'records':>8} {'time':>6}")
    for spines, leaves, hosts in sizes:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp) / "scenario"
                t = time.perf_counter()
                generate(folder, seed=seed, spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                         **options)
                score, truth = evaluate(folder, Path(tmp) / "a.duckdb", match_logs,
                                        settings=SETTINGS)
                took = time.perf_counter() - t
            killed = [j["state"] for j in truth["host_failed_jobs"]]
            runs += 1
            recalls.append(score.recall)
            false_total += len(score.false_blames)
            cables_total += len(score.host_cable_blames)
            found += score.host_suspects_found
            crashed += len(score.crashed_hosts)
            truth_net = score.network_jobs_truth
            gap = (score.network_jobs - truth_net) / truth_net if truth_net else 0.0
            gaps.append(gap)
            near += abs(gap) <= 0.10
            nf, fl = killed.count("NODE_FAIL"), killed.count("FAILED")
            ingested = ",".join(k.split("-")[-1][:5] for k in score.host_records_ingested)
            print(f"{spines:>4}x{leaves:>3}x{hosts:>3} {seed:>4} {score.k:>3} "
                  f"{score.recall:>8.2f} {len(score.false_blames):>5} "
                  f"{len(score.host_cable_blames):>5} "
                  f"{score.host_suspects_found:>2}/{len(score.crashed_hosts):<2} "
                  f"{score.network_jobs:>4}/{truth_net:<4} {f'{nf}NF+{fl}F':>9} "
                  f"{ingested or '-':>8} {took:>5.1f}s")
            for blame in score.false_blames:
                print(f"      false blame: {blame}")
    print(f"\n{setting}: runs: {runs}; mean recall@K {statistics.mean(recalls):.3f} "
          f"(target >= 0.95); false blames in top K: {false_total}, of them crashed hosts' "
          f"cables: {cables_total} (target 0); crashed hosts named by a host suspect: "
          f"{found}/{crashed}; network-caused jobs within 10 % of truth: {near}/{runs} "
          f"(mean gap {statistics.mean(gaps):+.0%})")


def run_spines64(sizes: list[tuple[int, int, int]], seeds: list[int], options: ScenarioOptions,
                 match_logs: bool) -> None:
    found = tied = runs = 0
    print(f"\n64 spines: one leaf uplink that killed one job, seen only in that job's errors"
          f"{' (job logs matched by host and time)' if match_logs else ''}")
    print(f"{'fabric':>14} {'seed':>4} {'rank':>5} {'tie':>4} {'cands':>5} {'path':>5} "
          f"{'false':>5} "
          f"{'lft':>4} {'time':>6}  first link suspect / the uplink")
    for spines, leaves, hosts in sizes:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp) / "scenario"
                t = time.perf_counter()
                generate(folder, seed=seed, spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                         **options)
                score, truth = evaluate(folder, Path(tmp) / "a.duckdb", match_logs,
                                        settings=SETTINGS)
                took = time.perf_counter() - t
                killed = [j for j in truth["network_failed_jobs"]
                          if j["culprit_cause"] == "silent_stall"]
                path = _path_uplinks(folder, truth, killed[0])
            (rank,) = score.bad_ranks
            (ties,) = score.bad_ties
            runs += 1
            found += rank == 1
            # at the top with others of the same score: the votes cannot tell them apart
            tied += rank is not None and rank <= ties
            # one rail: host node-N sits under leaf (N - 1) // hosts (fabric.py); without routes
            # every uplink of the killed job's leaves may have carried the broken connection
            under = {(int(n.rsplit("-", 1)[1]) - 1) // hosts for n in killed[0]["nodes"]}
            cands = spines * len(under)
            first = score.top[0] if score.top else "-"
            cell = "-" if path is None else (
                f"{len(path)}{'' if killed[0]['culprit_link'] in path else '*'}")
            print(f"{spines:>4}x{leaves:>3}x{hosts:>3} {seed:>4} {rank or '-':>5} {ties:>4} "
                  f"{cands:>5} "
                  f"{cell:>5} {len(score.false_blames):>5} {score.lfts_ingested:>4} {took:>5.1f}s  "
                  f"{first} / {truth['bad_cables'][0]['link']}")
    print(f"\n64 spines: the stalled uplink was the top link suspect in {found}/{runs} runs "
          f"(target: every run); at the top score, alone or tied with the other links of the "
          f"failing pair's paths (`tie`), in {tied}/{runs}")


def _path_uplinks(folder: Path, truth: dict[str, Any], job: dict[str, Any]) -> set[str] | None:
    """The leaf-spine links the job's broken connection crossed, both ways, in the last
    forwarding-table capture before the stall (None without captures), named as truth names
    links (`<leaf>:<port>=<spine>:<port>`)."""
    shots = [c for c in truth.get("lft_captures", []) if c["at"] <= job["flap_down_at"]]
    if not shots:
        return None
    topo = parse_ibnetdiscover((folder / "topology" / "ibnetdiscover.txt").read_text())
    tables = parse_dump_lfts((folder / shots[-1]["file"]).read_text())
    routes = Routes(topo.links, tables.switches, end_ports(topo, tables.owners))
    name = {n.guid: (n.description or "") for n in topo.nodes}
    hca = {(d.split(" ")[0], d.split(" ")[1]): (g, 1) for g, d in name.items() if " mlx5_" in d}
    a, b = (r["host"] for r in job["reporters"])
    out = set()
    for src, dst in ((a, b), (b, a)):
        for route in routes.routes(hca[(src, job["hca"])], hca[(dst, job["hca"])]):
            for lk in route.links:
                ends = [(name[lk.a_guid].split(";")[-1].split(":")[0], lk.a_port),
                        (name[lk.b_guid].split(";")[-1].split(":")[0], lk.b_port)]
                if all(n.startswith(("leaf", "spine")) for n, _ in ends):
                    leaf, spine = sorted(ends, key=lambda e: not e[0].startswith("leaf"))
                    out.add(f"{leaf[0]}:{leaf[1]}={spine[0]}:{spine[1]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="default 1 2 3 (1-10 for --kind reboot)")
    ap.add_argument("--quick", action="store_true", help="only the two smallest sizes")
    ap.add_argument("--kind", choices=("old", "realistic", "both", "reboot", "spines64"),
                    default="both",
                    help="the default scenarios, the REALISTIC preset, both (default), the "
                         "three host-reboot settings (issue #20), or one uplink that killed one "
                         "job on 64 spines (issue #23)")
    ap.add_argument("--match-logs", action="store_true",
                    help="ingest the job logs without their job ids (matched by host and time)")
    ap.add_argument("--harmless", type=int, default=0, metavar="N",
                    help="N harmless links per scenario; rank with and without the healthy-job "
                         "evidence (#15)")
    ap.add_argument("--reboots", type=int, default=3, metavar="N",
                    help="--kind reboot: hosts that crash per scenario (default 3)")
    ap.add_argument("--lfts", action="store_true",
                    help="every scenario with its switches' forwarding tables (issue #23)")
    ap.add_argument("--vendor-formats", action="store_true",
                    help="rank every scenario through its ibdiagnet2.db_csv runs and NVOS event "
                         "tables (issue #24), where the ingest offers those kinds")
    ap.add_argument("--adaptive-routing", action="store_true",
                    help="rank with [fabric] adaptive_routing = true (issue #23)")
    args = ap.parse_args()
    if args.adaptive_routing:
        global SETTINGS
        SETTINGS = RankSettings(ranking=RankingSettings(adaptive_routing=True))
    extra: ScenarioOptions = {"lfts": True} if args.lfts else {}
    if args.vendor_formats:
        extra["vendor_formats"] = True
    if args.kind == "reboot":
        for setting, options, sizes in REBOOT_SETTINGS:
            run_reboots(setting, sizes[:1] if args.quick else sizes,
                        args.seeds or list(range(1, 11)),
                        {**options, **extra, "host_reboots": args.reboots}, args.match_logs)
        return
    if args.kind == "spines64":
        run_spines64(SPINES64_SIZES[:1] if args.quick else SPINES64_SIZES,
                     args.seeds or list(range(1, 11)), {**SPINES64, **extra}, args.match_logs)
        return
    args.seeds = args.seeds or [1, 2, 3]
    sizes = LFT_SIZES if args.lfts else SIZES
    if args.kind in ("old", "both"):
        run_kind("old", sizes[:2] if args.quick else sizes, args.seeds, extra, args.match_logs,
                 args.harmless)
    if args.kind in ("realistic", "both"):
        run_kind("realistic", REALISTIC_SIZES[:2] if args.quick else REALISTIC_SIZES,
                 args.seeds, {**REALISTIC, **extra}, args.match_logs, args.harmless)


if __name__ == "__main__":
    main()
