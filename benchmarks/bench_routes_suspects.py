"""Benchmark (issue #23): what the forwarding tables cost `auditor suspects`, as whole processes.

It takes a database `bench_scale.py --keep DIR` built (by default /work/scale4096: a 64 x 128 x
32 fat tree, 4,096 hosts, 12,288 links, 30 days of jobs and flaps) and its scenario's
ibnetdiscover capture, works out the tables opensm's min-hop/ftree routing gives such a
two-level tree (destination-mod-K up ports: every leaf sends a host's DLID up to spine
(host number mod K), as the scenario's own job model routes it, every spine down to the
host's leaf), writes them as `dump_lfts.sh` prints them, and ingests that capture
(`ingest --kind lfts`) into a copy of the database. It then times `auditor suspects --since 24h`
and `--since 30d` (to the end of its history, as JSON, as bench_scale.py does) on both copies,
best of `--repeat` runs each: the difference is what reading the tables and working out the
paths of the window's failed jobs (and of the jobs that ran through its flaps) costs. Target
(issue #23): <= 0.2 s at 4,096 hosts for 24 h. Not a test.

    python benchmarks/bench_routes_suspects.py [--keep /work/scale4096] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.models import LidOwner, NodeType, SwitchLft
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.simulate.lfts import write_dump_lfts
from auditor.store import Store


def dmodk_dump(topo_text: str) -> str:
    """The min-hop tables of a two-level fat tree from its ibnetdiscover capture."""
    topo = parse_ibnetdiscover(topo_text)
    kind = {n.guid: n.node_type for n in topo.nodes}
    desc = {n.guid: n.description or "" for n in topo.nodes}
    lid = {(p.guid, p.port): p.lid for p in topo.ports if p.lid}
    switch_lid = {g: lid.get((g, 0)) for g, t in kind.items() if t == NodeType.SWITCH}
    owners: dict[int, LidOwner] = {}
    ca_leaf: dict[int, tuple[str, int]] = {}  # CA LID -> (its leaf, the leaf's port to it)
    ups: dict[str, list[int]] = defaultdict(list)  # leaf -> up ports, in order
    down: dict[tuple[str, str], int] = {}  # (spine, leaf) -> spine's port to it
    for lk in topo.links:
        for (g, p), (h, q) in (((lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)),
                               ((lk.b_guid, lk.b_port), (lk.a_guid, lk.a_port))):
            if kind.get(g) == NodeType.HCA and kind.get(h) == NodeType.SWITCH:
                ca = lid.get((g, p))
                if ca:
                    ca_leaf[ca] = (h, q)
                    owners[ca] = LidOwner(g, NodeType.HCA, desc[g], ca)
    leaves = {leaf for leaf, _ in ca_leaf.values()}
    for lk in topo.links:
        for (g, p), (h, q) in (((lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)),
                               ((lk.b_guid, lk.b_port), (lk.a_guid, lk.a_port))):
            if g in leaves and kind.get(h) == NodeType.SWITCH and h not in leaves:
                ups[g].append(p)
                down[(h, g)] = q
    for g, s_lid in switch_lid.items():
        if s_lid:
            owners[s_lid] = LidOwner(g, NodeType.SWITCH, desc[g], s_lid)
    top = max(owners)
    # the destination's spine: its host's number mod K, as the scenario's own routing (and
    # its job model) assigns it (auditor/simulate/scenario/fabric.py spine_for); LID mod K for
    # a name without one
    spread = {d: (int(m.group(1)) - 1 if (m := re.match(r"\S*?(\d+)\b", desc[o.port_guid]))
                  else d) for d, o in owners.items() if d in ca_leaf}
    tables = []
    for g in sorted(switch_lid):
        ports: dict[int, int] = {}
        for d in sorted(owners):
            if d == switch_lid[g]:
                ports[d] = 0
            elif d in ca_leaf:
                leaf, port = ca_leaf[d]
                if g == leaf:
                    ports[d] = port
                elif g in leaves:
                    up = sorted(ups[g])
                    ports[d] = up[spread[d] % len(up)]
                elif (g, leaf) in down:
                    ports[d] = down[(g, leaf)]
        tables.append(SwitchLft(g, switch_lid[g], desc[g], 0, top, ports))
    return write_dump_lfts(tables, owners)


def timed(db: Path, *args: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), *args],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, default=Path("/work/scale4096"),
                    help="a bench_scale.py --keep folder (scale.duckdb, scenario/)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    source = args.keep / "scale.duckdb"
    topo_file = args.keep / "scenario" / "topology" / "ibnetdiscover.txt"
    if not source.exists() or not topo_file.exists():
        sys.exit(f"{args.keep}: no scale.duckdb or scenario/ (run bench_scale.py --keep first)")
    with tempfile.TemporaryDirectory() as tmp:
        plain, routed = Path(tmp) / "plain.duckdb", Path(tmp) / "routed.duckdb"
        shutil.copy(source, plain)
        shutil.copy(source, routed)
        dump = Path(tmp) / "dump_lfts.txt"
        t = time.perf_counter()
        dump.write_text(dmodk_dump(topo_file.read_text()))
        made = time.perf_counter() - t
        # the capture taken with the first topology snapshot: in effect for the whole history
        with Store(plain, read_only=True) as store:
            shots = store.snapshot_times(datetime.now(UTC), limit=10_000)
        at = min(shots)
        # bench_scale.py's history ends a day after its last daily snapshot
        end = (max(shots) + timedelta(days=1)).isoformat() + "Z"
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "auditor", "--db", str(routed), "ingest",
                        "--kind", "lfts", "--at", at.isoformat() + "Z", str(dump)],
                       check=True, stdout=subprocess.DEVNULL)
        ingest = time.perf_counter() - t
        print(f"64x128x32 tables: {dump.stat().st_size / 1e6:.1f} MB of dump_lfts.sh written "
              f"in {made:.1f} s, ingested in {ingest:.2f} s (whole process); load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; best of {args.repeat}")
        for since in ("24h", "30d"):
            base = timed(plain, "suspects", "--since", since, "--until", end,
                         "--format", "json", repeat=args.repeat)
            with_tables = timed(routed, "suspects", "--since", since, "--until", end,
                                "--format", "json", repeat=args.repeat)
            print(f"suspects --since {since}: {with_tables:.2f} s with the tables, "
                  f"{base:.2f} s without (baseline, same run): +{with_tables - base:.2f} s "
                  f"({with_tables / base:.2f}x)")


if __name__ == "__main__":
    main()
