"""Behaviour check for refactors (issue #22): the suspects JSON of five windows of a database,
each from a whole `auditor suspects` process, written to a folder so that two runs (before and
after a change, on copies of the same database) can be compared byte for byte. Not a test.

The windows are the scale benchmark's (bench_scale.py: 30 days ending 2026-11-30T00:00:00Z):
the last 24 h, 7 d and 30 d, and two older ones (24 h ending 10 days before, 7 d ending 20
days before).

    python benchmarks/suspects_windows.py DB OUT [--code CHECKOUT]
    diff -r OUT_BEFORE OUT_AFTER && echo identical
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

END = datetime(2026, 11, 30)  # noqa: DTZ001 - the windows name UTC times (Z)
WINDOWS = [("24h", END), ("7d", END), ("30d", END), ("24h", END - timedelta(days=10)),
           ("7d", END - timedelta(days=20))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--code", type=Path, help="run the auditor of this checkout (PYTHONPATH)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = str(args.code.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        # a copy: a newer auditor migrates the database it opens read-write
        db = Path(tmp) / "copy.duckdb"
        shutil.copy(args.db, db)
        for since, until in WINDOWS:
            name = f"{since}-{until:%Y%m%d}.json"
            res = subprocess.run(
                [sys.executable, "-m", "auditor", "--db", str(db), "suspects", "--since", since,
                 "--until", f"{until:%Y-%m-%dT%H:%M:%S}Z", "--format", "json"],
                # run in the temporary folder: `-m` puts the working folder first on sys.path,
                # where a checkout would win over --code
                capture_output=True, text=True, env=env, cwd=tmp, check=False)
            if res.returncode != 0:
                sys.exit(f"{name}: exit {res.returncode}: {res.stderr.strip()}")
            (args.out / name).write_text(res.stdout)
            print(f"{name}: {len(res.stdout)} bytes")


if __name__ == "__main__":
    main()
