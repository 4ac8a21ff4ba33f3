"""Benchmark: does `auditor outcomes` measure each rule's true precision, and name the bad lot?

For each seed it generates an outcomes campaign (`auditor simulate --outcomes`: weeks of link
faults in cables, transceivers and switch ports, the swaps technicians made in the order the
report tells them, some of the wrong part, one-off flaps nobody acts on, and one bad lot of
leaf-spine cables), ingests its files, then replays the weeks night by night: the swaps made
that day are recorded with `auditor replaced` (as a technician would), then the nightly run's
library calls rank the last 24 h and remember the suspects its report shows (`--full-nightly`:
`run_nightly` itself, report files and all). At the end `auditor outcomes --format json` judges
the remembered suspects, and the benchmark compares with the truth (truth.json `outcomes`):

- per rule and per verdict: the measured precision (confirmed / (confirmed + refuted), over the
  suspects that are not young) against the true precision: a suspect is truly right when its
  link had a fault in the part its verdict names; "true % judged" is over the same suspects the
  outcomes judged, "true % grown" over every suspect that is not young (the open ones too),
  "true % all" over every suspect;
- whether the bad lot is the cohort finding, and any other cohort flagged;
- the measured precision at other `[outcomes] clean_days` (`--clean-days`).

Figures only; nothing is asserted. The logs of the whole campaign are ingested first: each
nightly run reads only its own window (flaps, jobs and counters up to its --until).

    python benchmarks/bench_outcomes.py [--seeds 1 2 3] [--quick] [--days 28]
                                        [--clean-days 7 14 21] [--full-nightly]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from auditor.analyse.audit import audit
from auditor.analyse.outcomes import remember
from auditor.analyse.pipeline import RankSettings
from auditor.cli import app
from auditor.config import Settings, load
from auditor.ops.nightly import run_nightly
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_instant

SIZE = (8, 16, 16)  # spines, leaves, hosts per leaf: 256 hosts, 384 links
QUICK = (4, 8, 8)
runner = CliRunner()


def cli(cfg: Path, *args: str) -> str:
    res = runner.invoke(app, ["--config", str(cfg), *args])
    if res.exit_code != 0:
        raise SystemExit(f"auditor {' '.join(args)} failed: {res.output}")
    return res.stdout


def config(root: Path, db: Path, clean_days: float | None = None) -> Path:
    path = root / f"auditor-{clean_days}.toml"
    text = (f'[store]\ndb = "{db}"\ncaptures = "{root / "captures"}"\n'
            f'[nightly]\nreports = "{root / "reports"}"\nlog_file = "{root / "nightly.log"}"\n')
    if clean_days is not None:
        text += f"[outcomes]\nclean_days = {clean_days}\n"
    path.write_text(text, encoding="utf-8")
    return path


def replay(root: Path, folder: Path, truth: dict[str, Any], full: bool) -> tuple[Path, int]:
    """Ingest, then night by night: record the day's swaps, rank and remember."""
    db = root / "auditor.duckdb"
    load_scenario(folder, db)
    cfg = config(root, db)
    settings: Settings = load(cfg, None)
    with (folder / "replacements.csv").open(encoding="utf-8") as f:
        swaps = sorted(csv.DictReader(f), key=lambda r: r["replaced_at"])
    start = parse_instant(truth["window_start"])
    end = parse_instant(truth["window_end"])
    days = round((end - start).total_seconds() / 86400)
    done = 0
    for d in range(1, days + 1):
        until = start + timedelta(days=d)
        while done < len(swaps) and parse_instant(swaps[done]["replaced_at"]) <= until:
            s = swaps[done]
            cli(cfg, "replaced", "--link", s["link"], "--part", s["part"], "--ticket",
                s["ticket"], "--at", s["replaced_at"])
            done += 1
        if full:
            run_nightly(settings, interactive=False, do_sweep=False, until=until)
            continue
        # What run_nightly does, without writing the report files.
        with Store(db, read_only=True) as store:
            audited = audit(store, utc_naive(until - timedelta(hours=24)), utc_naive(until),
                            RankSettings.from_settings(settings), limit=settings.nightly.limit)
        with Store(db) as store, store.transaction():
            remember(store, audited, utc_naive(until))
    return db, days


def _key(ends: list[dict[str, Any]]) -> frozenset[tuple[str, int | None]]:
    return frozenset((e["name"], e["port"]) for e in ends)


def truly_right(suspect: dict[str, Any], faults: dict[frozenset[tuple[str, int | None]],
                                                      dict[str, Any]]) -> bool:
    """The suspect's link had a fault in the part its verdict names during the nights it was a
    suspect (its first evidence to its last night, and the fault's onset to its fix)."""
    fault = faults.get(_key(suspect["ends"]))
    if fault is None or fault["part"] != suspect["component"]:
        return False
    first = parse_instant(suspect["first_at"] or suspect["first_seen"])
    last = parse_instant(suspect["last_seen"])
    fixed = parse_instant(fault["fixed_at"]) if fault["fixed_at"] else None
    return parse_instant(fault["onset"]) - timedelta(hours=1) <= last and (
        fixed is None or first <= fixed)


# Per rule and verdict: suspects, confirmed, refuted, judged and truly right, grown (not young),
# grown and truly right, truly right.
COLUMNS = 7


def compare(result: dict[str, Any], truth: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    faults = {_key(f["ends"]): f for f in truth["outcomes"]["faults"]}
    table: dict[str, dict[str, list[int]]] = {"rule": defaultdict(lambda: [0] * COLUMNS),
                                              "verdict": defaultdict(lambda: [0] * COLUMNS)}
    for s in result["suspects"]:
        right = truly_right(s, faults)
        grown = not s["young"]
        judged = grown and s["verdict"] != "open"
        for by, names in (("rule", s["rules"]), ("verdict", [s["component"]]),
                          ("verdict", ["all"])):
            for name in names:
                row = table[by][name]
                row[0] += 1
                row[1] += grown and s["verdict"] == "confirmed"
                row[2] += grown and s["verdict"] == "refuted"
                row[3] += judged and right
                row[4] += grown
                row[5] += grown and right
                row[6] += right
    return table


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:5.1f}" if den else "    -"


def print_table(table: dict[str, dict[str, list[int]]], title: str) -> None:
    print(f"\n{title}")
    print(f"{'':>8} {'name':<13} {'suspects':>8} {'confirmed':>9} {'refuted':>7} "
          f"{'measured %':>10} {'true % judged':>13} {'true % grown':>12} {'true % all':>10}")
    for by in ("rule", "verdict"):
        for name, (n, c, r, rj, g, rg, ra) in sorted(table[by].items(), key=lambda kv: (
                kv[0] == "all", -kv[1][0], kv[0])):
            print(f"{by:>8} {name:<13} {n:>8} {c:>9} {r:>7} {_pct(c, c + r):>10} "
                  f"{_pct(rj, c + r):>13} {_pct(rg, g):>12} {_pct(ra, n):>10}")


def misjudged(result: dict[str, Any], truth: dict[str, Any]) -> tuple[int, int]:
    """(confirmed but truly wrong, refuted but truly right) among the judged suspects."""
    faults = {_key(f["ends"]): f for f in truth["outcomes"]["faults"]}
    judged = [(s["verdict"], truly_right(s, faults)) for s in result["suspects"]
              if not s["young"] and s["verdict"] != "open"]
    return (sum(v == "confirmed" and not r for v, r in judged),
            sum(v == "refuted" and r for v, r in judged))


def bad_lot(result: dict[str, Any], truth: dict[str, Any]) -> tuple[bool, list[str], str]:
    co = result["cohorts"]
    lot = truth["outcomes"]["bad_lot"]
    named = any(g["flagged"] and g["explained_by"] is None and g["field"] == "lot"
                and g["value"] == lot for g in co["groups"])
    others = [f"{g['field']} {g['value']}" for g in co["groups"]
              if g["flagged"] and g["explained_by"] is None
              and not (g["field"] == "lot" and g["value"] == lot)]
    return named, others, "; ".join(co["findings"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--quick", action="store_true", help="a small fabric over 21 days")
    ap.add_argument("--days", type=float, default=None, help="campaign length (default 28)")
    ap.add_argument("--clean-days", type=float, nargs="+", default=[7.0, 14.0, 21.0])
    ap.add_argument("--full-nightly", action="store_true",
                    help="run run_nightly itself each night (report files too; slower)")
    args, _ = ap.parse_known_args()  # ./run.sh bench passes every benchmark the same flags
    spines, leaves, hosts = QUICK if args.quick else SIZE
    days = args.days or (21.0 if args.quick else 28.0)
    total: dict[str, dict[str, list[int]]] = {"rule": defaultdict(lambda: [0] * COLUMNS),
                                              "verdict": defaultdict(lambda: [0] * COLUMNS)}
    clean: dict[float, list[int]] = defaultdict(lambda: [0] * 5)
    named = 0
    print(f"outcomes campaign: {spines} spines, {leaves} leaves, {hosts} hosts per leaf, "
          f"{days:g} days, seeds {args.seeds}")
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            t = time.perf_counter()
            generate(root / "scenario", seed=seed, spines=spines, leaves=leaves,
                     hosts_per_leaf=hosts, days=days, outcomes=True)
            truth = json.loads((root / "scenario" / "truth.json").read_text())
            db, nights = replay(root, root / "scenario", truth, args.full_nightly)
            until = truth["window_end"]
            result = json.loads(cli(config(root, db), "outcomes", "--since",
                                    f"{nights + 2}d", "--until", until, "--format", "json"))
            table = compare(result, truth)
            for by in table:
                for name, row in table[by].items():
                    total[by][name] = [a + b for a, b in zip(total[by][name], row, strict=True)]
            for cd in args.clean_days:
                other = json.loads(cli(config(root, db, cd), "outcomes", "--since",
                                       f"{nights + 2}d", "--until", until, "--format", "json"))
                row = compare(other, truth)["verdict"]["all"]
                wrong = misjudged(other, truth)
                clean[cd] = [a + b for a, b in zip(clean[cd], (row[1], row[2], row[3], *wrong),
                                                   strict=True)]
            took = time.perf_counter() - t
            oc = truth["outcomes"]
            swaps = [s for f in oc["faults"] for s in f["swaps"]]
            print(f"\nseed {seed}: {len(oc['faults'])} faulty links ({oc['bad_lot_faults']} of "
                  f"{oc['bad_lot_cables']} in bad lot {oc['bad_lot']}), {len(oc['noise'])} "
                  f"one-off flaps, {len(swaps)} swaps ({sum(not s['right'] for s in swaps)} "
                  f"wrong); {nights} nights, {result['nights']} remembered, "
                  f"{len(result['suspects'])} suspects ({result['unjudged']} whole-node events "
                  f"not judged); {took:.0f} s")
            print_table(table, f"seed {seed}: measured vs true precision")
            found, others, text = bad_lot(result, truth)
            named += found
            print(f"bad lot {oc['bad_lot']} named: {'yes' if found else 'NO'}; other cohorts "
                  f"flagged: {', '.join(others) or 'none'}")
            print(f"  finding: {text or '(none)'}")
    print_table(total, f"all seeds ({len(args.seeds)}): measured vs true precision")
    print(f"\nbad lot named in {named} of {len(args.seeds)} campaigns")
    print("\nall suspects at other [outcomes] clean_days:")
    print(f"{'clean_days':>10} {'confirmed':>9} {'refuted':>7} {'measured %':>10} "
          f"{'true % judged':>13} {'confirmed, wrong':>16} {'refuted, right':>14}")
    for cd, (c, r, rj, cw, rr) in sorted(clean.items()):
        print(f"{cd:>10g} {c:>9} {r:>7} {_pct(c, c + r):>10} {_pct(rj, c + r):>13} "
              f"{cw:>16} {rr:>14}")


if __name__ == "__main__":
    start_wall = datetime.now().astimezone()
    main()
    print(f"\n(started {start_wall:%Y-%m-%d %H:%M}, "
          f"{(datetime.now().astimezone() - start_wall).total_seconds():.0f} s)")
