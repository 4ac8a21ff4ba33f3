"""Scoring the ranking against a scenario's ground truth (used by tests and the benchmark).

recall@K: of the K injected bad cables, how many are among the top K suspects. False blames:
top-K suspects that are cables of a rebooted switch, of a maintenance target, or a link whose
only fault was one short reseat flap. The naive ranking (count of DOWN lines per link in the
switch logs) is scored the same way, in the same run. An `optics` scenario's module readings
go in too (`load_optics`), so its ageing transceivers are ranked with the rest.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from auditor.analyse.correlate import gather
from auditor.analyse.rank import as_json, rank
from auditor.ingest.captures import ingest_files
from auditor.ingest.jobs import JobOptions, ingest_job_files
from auditor.ingest.logs import LogOptions, ingest_logs
from auditor.models import LaneReading, OpticsReading, Thresholds
from auditor.simulate.scenario import Scenario
from auditor.simulate.scenario.optics import LIMITS, PART, Reading, history
from auditor.store import SourceMeta, Store, utc_naive
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


def _link(ends: list[dict[str, Any]]) -> LinkId:
    return frozenset((e["name"], e["port"]) for e in ends)


def load_scenario(folder: Path, db: Path, match_logs: bool = False) -> dict[str, Any]:
    """Ingest every file of a generated scenario into `db`; returns the ground truth. Job logs
    are ingested one by one under their job id (the file name), or with `match_logs` all
    together without one, so the auditor has to match them to jobs by host and time."""
    truth: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    topo_at = parse_instant(truth["topology_at"])
    with Store(db) as store:
        ingest_files(store, [folder / "topology" / "ibnetdiscover.txt"], at=topo_at)
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
            load_optics(store, folder, scenario_of(truth))
    return truth


def scenario_of(truth: dict[str, Any]) -> Scenario:
    """The Scenario a truth.json was written from (its `scenario` parameters)."""
    params = dict(truth["scenario"])
    params["start"] = parse_instant(params["start"])
    params["nccl_versions"] = tuple(params["nccl_versions"])
    params["ib_timeouts"] = tuple(params["ib_timeouts"])
    return Scenario(**params)


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


def evaluate(folder: Path, db: Path, match_logs: bool = False) -> tuple[Score, dict[str, Any]]:
    truth = load_scenario(folder, db, match_logs)
    since = utc_naive(parse_instant(truth["window_start"]))
    until = utc_naive(parse_instant(truth["window_end"]))
    with Store(db, read_only=True) as store:
        ev = gather(store, since, until)
    result = as_json(ev, rank(ev))
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
    false = []
    for s in top:
        link = _link(s["ends"])
        names = {e["name"] for e in s["ends"]}
        if link in bad:
            continue
        if names & rebooted or names & maint or link in reseat:
            false.append(" <-> ".join(f"{e['name']}[{e['port']}]" for e in s["ends"]))
    score = Score(k, found / k if k else 1.0, false,
                  [s["ends"][0]["name"] for s in suspects if s["component"] == "switch"],
                  top=[f"{s['component']}:" + ",".join(f"{e['name']}[{e['port']}]"
                                                      for e in s["ends"]) for s in top])
    naive = naive_ranking(folder)[:k]
    # A naive entry is one switch port; it "finds" a bad cable when it names one of its ends.
    score.naive_recall = sum(1 for b in bad if any(n <= b for n in naive)) / k if k else 1.0
    score.naive_false_blames = sum(
        1 for n in naive
        if not any(n <= b for b in bad)
        and ({p[0] for p in n} & (rebooted | maint) or any(n <= r for r in reseat)))
    return score, truth


def window(truth: dict[str, Any]) -> tuple[datetime, datetime]:
    return parse_instant(truth["window_start"]), parse_instant(truth["window_end"])


# --- transceiver diagnostics (issue #14) --------------------------------------------------------


def _dbm(raw: int) -> float:
    return 10 * math.log10(raw / 10000) if raw else -math.inf  # "-inf dBm", as ethtool prints


def _limits(key: str, scale: float, dbm: bool = False) -> Thresholds:
    ha, la, hw, lw = LIMITS[key]

    def value(raw: int) -> float | None:
        if raw == 0:
            return None  # 0 is "no limit"
        return _dbm(raw) if dbm else raw / scale

    return Thresholds(value(la), value(lw), value(hw), value(ha))


_THRESHOLDS = {"tx_bias_ma": _limits("bias", 500), "tx_power_dbm": _limits("tx", 1, dbm=True),
               "rx_power_dbm": _limits("rx", 1, dbm=True), "temperature_c": _limits("temp", 256),
               "vcc_v": _limits("vcc", 10000)}


def optics_reading(r: Reading, sc: Scenario) -> OpticsReading:
    """What a parser of the reading's `ethtool -m` text returns (register units converted)."""
    return OpticsReading(
        device=r.host, port_name=f"{r.device}/1", read_at=sc.start + timedelta(seconds=r.at),
        vendor="Mellanox", part_number=PART, serial_number=r.serial, firmware=None,
        temperature_c=r.temp / 256, vcc_v=r.vcc / 10000,
        lanes=tuple(LaneReading(n, b / 500, _dbm(t), _dbm(x))
                    for n, (b, t, x) in enumerate(zip(r.bias, r.tx, r.rx, strict=True), 1)),
        thresholds=_THRESHOLDS)


def load_optics(store: Store, folder: Path, sc: Scenario) -> int:
    """The `optics` scenario's module readings into the store; how many. Until the `ethtool
    -m` parser and its ingest kind are on main they come straight from the simulator's numbers
    (`history`: the same streams that wrote the text, tests/test_scenario_optics.py holds them
    equal), placed on each HCA's port 1 as the ingest would place them from the topology. Then
    this body becomes the one line
    `ingest_files(store, sorted((folder / "optics").rglob("*.txt")), kind="ethtool-module")`
    (host and device from the file's folder and name, the time from its name)."""
    _ = folder  # what the ingest will read
    readings = history(sc)
    sid = store.add_source(SourceMeta("ethtool-module", "simulated", f"{sc.seed:064x}", "file",
                                      sc.start, True, len(readings), 0, len(readings)))
    store.add_optics(sid, [optics_reading(r, sc) for r in readings],
                     [(r.node_guid, 1) for r in readings])
    return len(readings)
