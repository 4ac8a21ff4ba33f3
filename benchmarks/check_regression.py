"""Regression check (run by a developer, not in CI): run the benchmarks and compare their
figures with the ones recorded in benchmarks/recorded.json on the reference machine.

A figure more than --tolerance times slower than recorded is reported as a regression and the
script exits 1. Ratios to the in-run baselines are compared too, so a slower machine does not
count as a regression of the code.

    python benchmarks/check_regression.py [--tolerance 1.5]
                                          [--only syslog topology scale counters process]
                                          [--scale DIR]
    python benchmarks/check_regression.py --record      # after an intended change
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "recorded.json"
BENCHES = {
    "topology": ["bench_topology.py"],
    "syslog": ["bench_syslog.py"],
    "scale": ["bench_scale.py"],
    # issue #13: every command as a whole process beside its in-run baseline (builds the
    # 30-day scale DB itself unless --scale names a kept one)
    "process": ["bench_process.py"],
    "counters": ["bench_counters.py"],
}
# figure -> the in-run baseline it is divided by (machine speed cancels out)
RATIOS = {
    "topology_parse_store_s": "topology_baseline_s",
    "syslog_ingest_s": "syslog_baseline_s",
    "counters_ingest_s": "counters_baseline_s",
    "counters_snapshot_s": "counters_snapshot_baseline_s",
    "counters_snapshot_process_s": "counters_snapshot_process_baseline_s",
}


def run(names: list[str], scale: Path | None = None) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out = Path(tmp) / f"{name}.json"
            cmd = [sys.executable, str(HERE / BENCHES[name][0]), "--json", str(out),
                   *(["--scale", str(scale)] if name == "process" and scale else [])]
            sys.stdout.write(f"running {' '.join(cmd[1:2])} ...\n")
            sys.stdout.flush()
            subprocess.run(cmd, check=True)
            figures |= json.loads(out.read_text())
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tolerance", type=float, default=1.5)
    ap.add_argument("--only", nargs="+", choices=sorted(BENCHES), default=sorted(BENCHES))
    ap.add_argument("--record", action="store_true", help="store this run as the reference")
    ap.add_argument("--scale", type=Path, help="a bench_scale.py --keep folder for `process`")
    args = ap.parse_args()
    now = run(args.only, args.scale)
    recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
    if args.record:
        RECORDED.write_text(json.dumps(recorded | now, indent=1, sort_keys=True) + "\n")
        sys.stdout.write(f"recorded {len(now)} figures in {RECORDED}\n")
        return
    worse = []
    for key, value in sorted(now.items()):
        old = recorded.get(key)
        if old is None or key.endswith("_baseline_s") or not key.endswith(("_s", "_mb")):
            continue
        # bench_process names each figure's in-run baseline <key>_baseline_s
        base = RATIOS.get(key) or (key.removesuffix("_s") + "_baseline_s"
                                   if key.removesuffix("_s") + "_baseline_s" in now else None)
        if base and base in now and base in recorded and now[base] and recorded[base]:
            value, old = value / now[base], old / recorded[base]
            key = f"{key} / {base}"
        flag = value > old * args.tolerance
        worse += [key] if flag else []
        sys.stdout.write(f"{'REGRESSION' if flag else 'ok':>10}  {key}: {value:.3f} "
                         f"(recorded {old:.3f})\n")
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
