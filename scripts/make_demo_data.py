"""Regenerate auditor/demo_data/ from the real infiniband-diags tools run against ibsim.

Developer script (needs ibsim-utils, infiniband-diags and opensm): two sweeps of a 4 x 8 x 4
fat tree a day apart. The second one sees a pulled cable (leaf02 to spine03), a host cable
pulled (gpu-node-06), a leaf uplink that trained to 1X (leaf05 to spine02) and rising error
counters on leaf03's uplink to spine01.

    python scripts/make_demo_data.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from auditor.simulate.ibsim import FatTree, IbSim, write_net_file

OUT = Path(__file__).resolve().parent.parent / "auditor" / "demo_data"
TREE = FatTree(spines=4, leaves=8, hosts_per_leaf=4, leaf_ports=12, spine_ports=8)


def capture(sim: IbSim, folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, argv in (
        ("ibnetdiscover", ["ibnetdiscover"]),
        ("iblinkinfo", ["iblinkinfo"]),
        ("ibqueryerrors", ["ibqueryerrors", "--skip-sl"]),
    ):
        result = sim.run(*argv)
        if result.returncode not in (0, 1) or not result.stdout.strip():
            sys.exit(f"{name} failed: {result.stderr}")
        (folder / f"{name}.txt").write_text(result.stdout, encoding="utf-8")
        files.append(f"{folder.name}/{name}.txt")
    return files


def main() -> None:
    snapshots = []
    with tempfile.TemporaryDirectory() as tmp:
        with IbSim(write_net_file(TREE), Path(tmp) / "a") as sim:
            sim.opensm_once()
            files = capture(sim, OUT / "sweep-2026-11-29")
            snapshots.append({"at": "2026-11-29T02:00:00Z", "files": files})
        net = write_net_file(TREE, degrade={("leaf05", "spine02"): "1x"})
        with IbSim(net, Path(tmp) / "b") as sim:
            sim.opensm_once()
            sim.set_counter("leaf03", TREE.uplink_port(1), "SymbolErrorCounter", 4210)
            sim.set_counter("leaf03", TREE.uplink_port(1), "LinkErrorRecoveryCounter", 12)
            sim.set_counter("leaf03", TREE.uplink_port(1), "LinkDownedCounter", 4)
            sim.set_counter("spine01", 3, "LinkDownedCounter", 4)
            sim.unlink("leaf02", TREE.uplink_port(3))
            sim.unlink("gpu-node-06")
            files = capture(sim, OUT / "sweep-2026-11-30")
            snapshots.append({"at": "2026-11-30T02:00:00Z", "files": files})
    (OUT / "manifest.json").write_text(
        json.dumps({"fabric": "4 spines x 8 leaves x 4 hosts (ibsim)", "snapshots": snapshots},
                   indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
