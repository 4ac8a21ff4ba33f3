"""`auditor demo`: a database built from real captures shipped in the package, and a look at it.

The captures in auditor/demo_data/ were made with the real infiniband-diags tools against an
ibsim fat tree (scripts/make_demo_data.py): a healthy sweep, then one after a cable was pulled,
a link trained down to 1X and error counters rose.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from auditor import fabric
from auditor.errors import AuditorError
from auditor.ingest import ingest_files
from auditor.render import to_table
from auditor.store import Store
from auditor.timeparse import parse_instant

DATA = Path(__file__).resolve().parent / "demo_data"


def build_demo(out: Path) -> str:
    """(Re)create the demo database at `out` and return what the auditor finds in it."""
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    if out.exists():
        with Store(out, read_only=True) as old:
            if any(not str(s["path"]).startswith(str(DATA)) for s in old.sources()):
                raise AuditorError(f"{out}: holds more than demo data; choose another --out")
        out.unlink()
        Path(f"{out}.wal").unlink(missing_ok=True)
    last: datetime | None = None
    with Store(out) as store:
        for snap in manifest["snapshots"]:
            last = parse_instant(snap["at"])
            ingest_files(store, [DATA / f for f in snap["files"]], at=last)
        if last is None:
            raise AuditorError(f"{DATA / 'manifest.json'}: lists no snapshots")
        topo = fabric.topology(store, last)
        down = fabric.links(store, last, degraded_only=True, down_only=True)
    lines = [
        f"demo database: {out}",
        f"fabric at {topo['snapshot_at']}: {topo['switches']} switches, {topo['hcas']} HCAs, "
        f"{topo['links']} links, {topo['ports_down']} port(s) down, "
        f"{len(topo['degraded'])} degraded link(s)",
        "",
        to_table(down, ["a_name", "a_port", "b_name", "b_port", "state", "width", "speed",
                        "note"], title="links that need a look"),
        f"next: auditor --db {out} topology   |   auditor --db {out} links --format json",
    ]
    return "\n".join(lines)
