"""Benchmark (a): a 64-spine x 128-leaf x 32-host fat tree (4,096 hosts) built in ibsim; its real
ibnetdiscover + iblinkinfo output parsed and stored, then `auditor topology --format json`.

Prints the figures and their ratio to a baseline measured in the same run (reading the same
files line by line). Target: parse + store under 2 s. Not a test: run it by hand or with
`./run.sh bench`.

    python benchmarks/bench_topology.py [--spines 64 --leaves 128 --hosts 32] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spines", type=int, default=64)
    ap.add_argument("--leaves", type=int, default=128)
    ap.add_argument("--hosts", type=int, default=32, help="hosts per leaf")
    ap.add_argument("--keep", type=Path, help="keep captures and DB in this folder")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    tree = FatTree(args.spines, args.leaves, args.hosts)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"fat tree {tree.spines} x {tree.leaves} x {tree.hosts_per_leaf}: "
              f"{tree.hosts} hosts, {tree.switches} switches, {expected_links(tree)} links")
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

    print(f"baseline: read {lines} lines line by line      {baseline:6.3f} s")
    print(f"parse only                                  {parse_only:6.3f} s "
          f"({parse_only / baseline:5.1f}x baseline)")
    print(f"parse + store (auditor ingest)              {total:6.3f} s "
          f"({total / baseline:5.1f}x baseline)  target < 2 s: "
          f"{'met' if total < 2 else 'MISSED'}")
    print(f"auditor topology --format json (process)    {query:6.3f} s")
    got = (data["switches"], data["hcas"], data["links"])
    want = (tree.switches, tree.hosts, expected_links(tree))
    print(f"topology: {got[0]} switches, {got[1]} HCAs, {got[2]} links "
          f"({'exact' if got == want else f'WRONG, expected {want}'})")
    if args.json:
        args.json.write_text(json.dumps({"topology_parse_store_s": total,
                                         "topology_baseline_s": baseline,
                                         "topology_cli_s": query}, indent=1) + "\n")
    if got != want:
        sys.exit(1)


if __name__ == "__main__":
    main()
