"""`auditor demo`: the main job on a bundled demo, end to end, in a few seconds.

The default demo generates a seeded scenario (auditor.simulate.scenario: a fat tree with bad
cables, a switch reboot, a host that crashed under a job, a re-imaged host in maintenance, jobs
that died of the network and of GPU errors, in the real file formats), ingests every file and
shows the ranked suspects.

`--captures` builds instead a database from real captures shipped in the package: made with the
real infiniband-diags tools against an ibsim fat tree (scripts/make_demo_data.py), a healthy
sweep, then one after a cable was pulled, a link trained down to 1X and error counters rose.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.analyse import topology as fabric
from auditor.errors import AuditorError
from auditor.ingest.captures import ingest_files
from auditor.report.tables import to_table
from auditor.store import Store
from auditor.timeparse import parse_instant

DATA = Path(__file__).resolve().parent / "demo_data"


def _fresh(out: Path, allowed: Path) -> None:
    """Remove an earlier demo database at `out`, refusing to touch one with other data."""
    if out.exists():
        with Store(out, read_only=True) as old:
            if any(not str(s["path"]).startswith(str(allowed)) for s in old.sources()):
                raise AuditorError(f"{out}: holds more than demo data; choose another --out")
        out.unlink()
        Path(f"{out}.wal").unlink(missing_ok=True)


def build_scenario_demo(out: Path, workdir: Path, seed: int = 7) -> str:
    """Generate a scenario under `workdir`, ingest it into `out`, return the suspects table."""
    from auditor.analyse.pipeline import rank_window
    from auditor.simulate.evaluate import load_scenario
    from auditor.simulate.scenario import generate
    from auditor.store import utc_naive

    _fresh(out, workdir)
    # The demo's day ends at the current hour, so `suspects --since 24h` and `nightly` work on
    # it as they would on a live fabric; the faults are the same for a seed whatever the date.
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    generate(workdir, seed=seed, spines=4, leaves=8, hosts_per_leaf=8,
             start=end - timedelta(days=1), host_reboots=1)
    truth = load_scenario(workdir, out)
    since = utc_naive(parse_instant(truth["window_start"]))
    until = utc_naive(parse_instant(truth["window_end"]))
    with Store(out, read_only=True) as store:
        data = rank_window(store, since, until).as_json(limit=8)
        topo = fabric.topology(store, until)
    rows = [{
        "rank": s["rank"], "score": s["score"], "verdict": s["component"],
        "end A": f"{s['ends'][0]['name']} {s['ends'][0]['label']}".strip(),
        "end B": f"{s['ends'][1]['name']} {s['ends'][1]['label']}" if len(s["ends"]) > 1 else "",
        "evidence": "; ".join(s["evidence"][:2]), "action": s["action"],
    } for s in data["suspects"]]
    jobs = data["jobs"]
    lines = [
        f"demo database: {out} (scenario files in {workdir})",
        f"fabric: {topo['switches']} switches, {topo['hcas']} HCAs, {topo['links']} links; "
        f"window {data['window']['since']} .. {data['window']['until']}",
        f"jobs: {jobs['failed']} failed, {jobs['network']} by the network, "
        f"{jobs['killed_by_host']} by their host going away, "
        f"{jobs['other_causes']} by other causes (GPU errors, OOM), "
        f"{jobs['unexplained']} unexplained",
        "",
        to_table(rows, title="what to replace first (auditor suspects)"),
        f"next: auditor --db {out} suspects --since 24h --format json   |   "
        f"auditor --db {out} report --since 24h --out reports/demo   |   "
        f"auditor --db {out} nightly --no-sweep",
    ]
    return "\n".join(lines)


def build_demo(out: Path) -> str:
    """(Re)create the demo database at `out` and return what the auditor finds in it."""
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    _fresh(out, DATA)
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


def run_demo(out: Path, captures: bool = False, seed: int = 7) -> str:
    """`auditor demo`: the scenario demo (its files beside `out`), or with `captures` the
    fabric-health demo from the real captures shipped in the package."""
    if captures:
        return build_demo(out)
    return build_scenario_demo(out, out.with_name(out.stem + "-scenario"), seed=seed)
