"""Scoring the ranking against a scenario's ground truth (used by tests and the benchmark).

recall@K: of the K injected bad cables, how many are among the top K suspects. False blames:
top-K suspects that are cables of a rebooted switch, of a maintenance target, a link whose
only fault was one short reseat flap, or a harmless link (`harmless_flaps`: sound, its long
flaps absorbed). The naive ranking (count of DOWN lines per link in the switch logs) is scored
the same way, in the same run. `before=True` also scores the ranking without the healthy-job
evidence (#15) on the same evidence, as `Score.before`. An `optics` scenario's `ethtool -m`
files go in too (`load_optics`, through the ingest), so its ageing transceivers are ranked with
the rest.

Host reboots (`host_reboots`, issue #20): an HCA link of a host that crashed is a false blame
in the top K (also listed in `host_cable_blames`); `host_suspects` are the `host` suspects and
`host_suspects_found` those naming a crashed host; `network_jobs` is the ranking's count of
network-caused jobs, `network_jobs_truth` truth's. The site's host records (slurm/events.txt,
slurm/slurmctld.log, boots/<host>.txt) are ingested through the kinds in `HOST_RECORDS` that
the ingest offers, so the same code scores before and after the ingest knows them; which were
ingested is in `host_records_ingested`.

Forwarding tables (`lfts`, issue #23): a scenario's `lfts/dump_lfts-*.txt` captures are
ingested as `--kind lfts` at their capture times (truth's `lft_captures`) when the ingest offers
that kind, the same guard; `lfts_ingested` counts them. `bad_ranks` is each bad cable's rank
among the link suspects (truth's order), so a scenario with one bad cable (`silent_uplink`)
says whether it is the top link suspect.

NVIDIA formats (`vendor_formats`, issue #24): the scenario's fabric, counters and switch-side
flaps are ingested from its `vendor/` files (ibdiagnet2.db_csv runs, NVOS event tables) instead
of ibnetdiscover, ibqueryerrors and syslog, each kind when the ingest offers it (the same
guard); `vendor_kinds` lists those used. Everything else (jobs, site files) is the same.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from auditor.analyse.pipeline import RankSettings, rank_window
from auditor.analyse.rank import as_json, rank
from auditor.ingest.captures import KINDS as CAPTURE_KINDS
from auditor.ingest.captures import ingest_files
from auditor.ingest.common import LogOptions
from auditor.ingest.jobs import JOB_KINDS, JobOptions, ingest_job_files
from auditor.ingest.logs import LOG_KINDS, ingest_logs
from auditor.ingest.optics import OpticsOptions, ingest_optics_files
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_instant

LinkId = frozenset[tuple[str, int]]


@dataclass(slots=True)
class Score:
    k: int
    recall: float
    false_blames: list[str] = field(default_factory=list)
    switch_suspects: list[str] = field(default_factory=list)
    naive_recall: float = 0.0
    naive_false_blames: int = 0
    top: list[str] = field(default_factory=list)
    # each harmless link's rank among the link suspects (None: not a suspect), truth's order
    harmless_ranks: list[int | None] = field(default_factory=list)
    before: Score | None = None  # the same evidence ranked without the healthy-job evidence
    # host reboots (issue #20)
    host_cable_blames: list[str] = field(default_factory=list)  # also in false_blames
    host_suspects: list[str] = field(default_factory=list)  # hosts of the `host` suspects
    host_suspects_found: int = 0  # of the crashed hosts, how many a host suspect names
    crashed_hosts: list[str] = field(default_factory=list)
    network_jobs: int = 0  # the ranking's network-caused jobs (`jobs.network`)
    network_jobs_truth: int = 0
    host_records_ingested: list[str] = field(default_factory=list)
    # forwarding tables (issue #23)
    lfts_ingested: int = 0  # captures ingested (0 while the ingest has no `lfts` kind)
    bad_ranks: list[int | None] = field(default_factory=list)  # per bad cable, truth's order
    # per bad cable, how many link suspects share its score (itself included; 0: no suspect)
    bad_ties: list[int] = field(default_factory=list)
    # NVIDIA formats (issue #24): the kinds a vendor_formats evaluation ingested
    vendor_kinds: list[str] = field(default_factory=list)


# The host records a scenario may hold (issue #20): (ingest kind, files, one host per file).
# A kind is used only when the ingest offers it, by the ingester that offers it (`_offer`).
HOST_RECORDS: tuple[tuple[str, str, bool], ...] = (
    ("slurm-events", "slurm/events.txt", False),
    ("slurmctld", "slurm/slurmctld.log", False),
    ("boots", "boots/*.txt", True),  # `ingest --kind boots --host <the file's stem>`
)


def _link(ends: list[dict[str, Any]]) -> LinkId:
    return frozenset((e["name"], e["port"]) for e in ends)


def load_scenario(folder: Path, db: Path, match_logs: bool = False,
                  lfts: bool = True, vendor_formats: bool = False) -> dict[str, Any]:
    """Ingest every file of a generated scenario into `db`; returns the ground truth. Job logs
    are ingested one by one under their job id (the file name), or with `match_logs` all
    together without one, so the auditor has to match them to jobs by host and time. `lfts`
    False leaves the forwarding-table captures out (the same scenario ranked without them).
    `vendor_formats`: the fabric, counters and switch-side flaps come from the scenario's
    NVIDIA files instead (`load_vendor_formats`); truth's `vendor_kinds` says which kinds."""
    truth: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    topo_at = parse_instant(truth["topology_at"])
    with Store(db) as store:
        if vendor_formats:
            truth["vendor_kinds"] = load_vendor_formats(store, folder, truth)
        else:
            ingest_files(store, [folder / "topology" / "ibnetdiscover.txt"], at=topo_at)
        if lfts:
            load_lfts(store, folder, truth)
        if not vendor_formats:
            for snap in truth["snapshots"]:
                ingest_files(store, [folder / snap["file"]], at=parse_instant(snap["at"]))
            ingest_logs(store, sorted((folder / "logs").iterdir()), "auto", LogOptions(),
                        now=parse_instant(truth["window_end"]))
        site = [folder / "hosts", folder / "maintenance.csv", folder / "jobs" / "sacct.txt",
                folder / "inventory.csv", folder / "cabling.csv"]
        ingest_job_files(store, [f for f in site if f.exists()], "auto", JobOptions())
        logs = sorted((folder / "jobs" / "logs").glob("*.log"))
        if match_logs:
            # What `ingest --kind joblog` without `--job` does with a folder of logs.
            if logs:
                ingest_job_files(store, logs, "joblog", JobOptions())
        else:
            for log in logs:
                # One log per job, named for its id: `ingest --kind joblog --job ID`.
                ingest_job_files(store, [log], "joblog", JobOptions(job=log.stem))
        if truth["scenario"].get("optics"):
            load_optics(store, folder)
        load_host_records(store, folder, parse_instant(truth["window_end"]))
    return truth


def offered(kind: str) -> str | None:
    """Which ingester takes `kind` ("captures", "jobs" or "logs"), None while the ingest has
    no such kind."""
    if kind in CAPTURE_KINDS[1:]:  # the first is "auto"
        return "captures"
    if kind in JOB_KINDS:
        return "jobs"
    if kind in LOG_KINDS:
        return "logs"
    return None


def _ingest_as(store: Store, paths: list[Path], kind: str, where: str, at: datetime,
               host: str | None = None) -> None:
    """`paths` as `auditor ingest --kind <kind> [--host]` reads them, by the ingester `where`
    (`offered`) names, at `at` (the capture's time, or the ingest's "now")."""
    if where == "captures":
        ingest_files(store, paths, kind=kind, at=at)
    elif where == "jobs":
        ingest_job_files(store, paths, kind, JobOptions(host=host), now=at)
    else:
        ingest_logs(store, paths, kind, LogOptions(host=host), now=at)


def load_lfts(store: Store, folder: Path, truth: dict[str, Any]) -> int:
    """An `lfts` scenario's forwarding-table captures into the store, each as `auditor ingest
    --kind lfts --at <its capture time>` reads it, when the ingest offers the kind; how many."""
    captures = truth.get("lft_captures", [])
    where = offered("lfts")
    if not captures or where is None:
        return 0
    for cap in captures:
        _ingest_as(store, [folder / cap["file"]], "lfts", where, parse_instant(cap["at"]))
    return len(captures)


def load_vendor_formats(store: Store, folder: Path, truth: dict[str, Any]) -> list[str]:
    """A `vendor_formats` scenario through its NVIDIA files (issue #24), each kind only when
    the ingest offers it (the `offered` guard), else through the file it was written from:
    every `ibdiagnet2.db_csv` run as `ingest --kind ibdiagnet --at <its time>` (else
    ibnetdiscover and the ibqueryerrors snapshots), every switch's NVOS event table as
    `ingest --kind nvos-events --host <switch>` (else the switch syslog). The kinds used."""
    files = truth.get("vendor_formats")
    if files is None:
        raise ValueError(f"{folder}: written without vendor_formats (simulate --vendor-formats)")
    now = parse_instant(truth["window_end"])
    used = []
    where = offered("ibdiagnet")
    if where is None:
        ingest_files(store, [folder / "topology" / "ibnetdiscover.txt"],
                     at=parse_instant(truth["topology_at"]))
        for snap in truth["snapshots"]:
            ingest_files(store, [folder / snap["file"]], at=parse_instant(snap["at"]))
    else:
        for run in files["ibdiagnet"]:
            _ingest_as(store, [folder / run["path"]], "ibdiagnet", where,
                       parse_instant(run["at"]))
        used.append("ibdiagnet")
    if offered("nvos-events") == "logs":
        for switch, rel in sorted(files["nvos_events"].items()):
            ingest_logs(store, [folder / rel], "nvos-events", LogOptions(host=switch), now=now)
        used.append("nvos-events")
    else:
        ingest_logs(store, sorted((folder / "logs").iterdir()), "auto", LogOptions(), now=now)
    return used


def load_host_records(store: Store, folder: Path, now: datetime) -> list[str]:
    """The scenario's host records into the store, each through the ingest kind `HOST_RECORDS`
    names when the ingest offers it; the kinds ingested."""
    done = []
    for kind, pattern, per_host in HOST_RECORDS:
        paths = sorted(folder.glob(pattern))
        where = offered(kind)
        if not paths or where is None:
            continue
        for group in ([p] for p in paths) if per_host else [paths]:
            _ingest_as(store, group, kind, where, now, group[0].stem if per_host else None)
        done.append(kind)
    return done


def naive_ranking(folder: Path) -> list[LinkId]:
    """Links ordered by how many DOWN lines their switch ends logged (what people grep for)."""
    down = Counter[tuple[str, int]]()
    pattern = re.compile(r" (\S+) \S+: (?:\[\S+\]: )?Interface IB1/(\d+) changed state to DOWN")
    for log in (folder / "logs").iterdir():
        for line in log.read_text().splitlines():
            m = pattern.search(line)
            if m:
                down[(m.group(1), int(m.group(2)))] += 1
    return [frozenset({port}) for port, _ in down.most_common()]


def evaluate(folder: Path, db: Path, match_logs: bool = False, before: bool = False,
             lfts: bool = True, vendor_formats: bool = False,
             settings: RankSettings | None = None) -> tuple[Score, dict[str, Any]]:
    """Load a scenario into `db` and score its ranking (`settings`: the site's, e.g. `[fabric]
    adaptive_routing`; the defaults otherwise)."""
    truth = load_scenario(folder, db, match_logs, lfts, vendor_formats)
    since = utc_naive(parse_instant(truth["window_start"]))
    until = utc_naive(parse_instant(truth["window_end"]))
    with Store(db, read_only=True) as store:
        ranking = rank_window(store, since, until, settings)
    score = _score(folder, truth, ranking.as_json())
    score.host_records_ingested = [kind for kind, pattern, _ in HOST_RECORDS
                                   if offered(kind) and any(folder.glob(pattern))]
    if lfts and offered("lfts"):
        score.lfts_ingested = len(truth.get("lft_captures", []))
    score.vendor_kinds = truth.get("vendor_kinds", [])
    if before:
        ev = ranking.evidence
        for le in ev.links.values():
            # what the ranking did before #15 with the same evidence (no job evidence on flaps)
            le.healthy, le.idle_flaps = [], []
        # The ablation re-ranks the same evidence without it: the benchmark's own experiment.
        score.before = _score(folder, truth, as_json(ev, rank(ev)))
    return score, truth


def _score(folder: Path, truth: dict[str, Any], result: dict[str, Any]) -> Score:
    bad = [_link(c["ends"]) for c in truth["bad_cables"]]
    k = len(bad)
    suspects = result["suspects"]
    # recall@K is over link suspects: a switch or host event is a suspect of another kind
    # and does not take a cable's place.
    links = [s for s in suspects if s["component"] not in ("switch", "host")]
    top = links[:k]
    found = sum(1 for b in bad if any(_link(s["ends"]) == b for s in top))
    rebooted = {r["name"] for r in truth["switch_reboots"]}
    maint = {m["target"].split(":")[0] for m in truth["maintenance"]}
    reseat = [_link(r["ends"]) for r in truth["reseat_flaps"]]
    harmless = [_link(h["ends"]) for h in truth.get("harmless_links", [])]
    crashed = {r["host"] for r in truth.get("host_reboots", [])}
    false, host_cables = [], []
    for s in top:
        link = _link(s["ends"])
        names = {e["name"] for e in s["ends"]}
        if link in bad:
            continue
        text = " <-> ".join(f"{e['name']}[{e['port']}]" for e in s["ends"])
        if {_host_of(n) for n in names} & crashed:
            host_cables.append(text)
        if (names & rebooted or names & maint or link in reseat or link in harmless
                or text in host_cables):
            false.append(text)
    score = Score(k, found / k if k else 1.0, false,
                  [s["ends"][0]["name"] for s in suspects if s["component"] == "switch"],
                  top=[f"{s['component']}:" + ",".join(f"{e['name']}[{e['port']}]"
                                                      for e in s["ends"]) for s in top])
    score.host_cable_blames = host_cables
    score.host_suspects = [_host_of(s["ends"][0]["name"]) for s in suspects
                           if s["component"] == "host" and s["ends"]]
    score.crashed_hosts = sorted(crashed)
    score.host_suspects_found = len(crashed & set(score.host_suspects))
    score.network_jobs = int(result.get("jobs", {}).get("network", 0))
    score.network_jobs_truth = len(truth["network_failed_jobs"])
    ranks = {_link(s["ends"]): i for i, s in enumerate(links, 1)}
    score.harmless_ranks = [ranks.get(h) for h in harmless]
    score.bad_ranks = [ranks.get(b) for b in bad]
    scores = {_link(s["ends"]): s.get("score") for s in links}
    score.bad_ties = [sum(1 for s in links if s.get("score") == scores[b]) if b in scores else 0
                      for b in bad]
    naive = naive_ranking(folder)[:k]
    # A naive entry is one switch port; it "finds" a bad cable when it names one of its ends.
    score.naive_recall = sum(1 for b in bad if any(n <= b for n in naive)) / k if k else 1.0
    score.naive_false_blames = sum(
        1 for n in naive
        if not any(n <= b for b in bad)
        and ({p[0] for p in n} & (rebooted | maint) or any(n <= r for r in reseat)
             or any(n <= h for h in harmless)))
    return score


def _host_of(name: str) -> str:
    """The host of an end or suspect name: an HCA's node description is `<host> mlx5_N`."""
    return name.split(" ", 1)[0]


def window(truth: dict[str, Any]) -> tuple[datetime, datetime]:
    return parse_instant(truth["window_start"]), parse_instant(truth["window_end"])


# --- transceiver diagnostics (issue #14) --------------------------------------------------------


def load_optics(store: Store, folder: Path) -> int:
    """An `optics` scenario's `ethtool -m` files into the store, as `auditor ingest --kind
    ethtool-module --host <host> --port <mlx5_N>/1` reads them: a host port's days in one call,
    each file's read time its modification time (the simulator sets it; the name says it too).
    How many readings."""
    total = 0
    for host in sorted(p for p in (folder / "optics").iterdir() if p.is_dir()):
        by_device: dict[str, list[Path]] = {}
        for path in sorted(host.glob("mlx5_*.txt")):
            by_device.setdefault(path.name.split("-", 1)[0], []).append(path)
        for device, paths in sorted(by_device.items()):
            done = ingest_optics_files(store, paths, "ethtool-module",
                                       OpticsOptions(host=host.name, port=f"{device}/1"))
            total += sum(r.records for r in done)
    return total
