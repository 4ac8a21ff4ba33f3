"""Hosts that crash and reboot undeclared (`host_reboots`, issue #20) and the records a site keeps
of its hosts (`host_records`): off changes nothing, the other faults and the jobs placed before a
crash do not move, every rail of a crashed host flaps together, its job ends NODE_FAIL (or
FAILED on multi-rail hosts), its peers' NCCL names it on every rail, and the Slurm events,
slurmctld.log and journalctl files appear only where the site keeps them. Small fabrics."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.parse.ibqueryerrors import parse_ibqueryerrors
from auditor.parse.joblog import parse_joblog
from auditor.parse.sacct import parse_sacct
from auditor.parse.syslog import parse_syslog_lines
from auditor.simulate.scenario import (
    REALISTIC,
    GroundTruth,
    Scenario,
    ScenarioOptions,
    generate,
)

SMALL: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 8}
RAILS: dict[str, Any] = {"spines": 2, "leaves": 16, "hosts_per_leaf": 8, "hcas_per_host": 8}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _sacct_rows(out: Path) -> dict[str, list[str]]:
    lines = (out / "jobs" / "sacct.txt").read_text().splitlines()[1:]
    return {line.split("|")[0]: line.split("|") for line in lines}


@pytest.fixture(scope="module")
def one_rail(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth]:
    out = tmp_path_factory.mktemp("one")
    return out, generate(out, seed=1, **SMALL, host_reboots=3)


@pytest.fixture(scope="module")
def rails(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth]:
    out = tmp_path_factory.mktemp("rails")
    return out, generate(out, seed=4, **RAILS, host_reboots=4)


# ------------------------------------------------------------------------- off, streams


def test_off_changes_nothing_and_on_is_deterministic(tmp_path: Path) -> None:
    generate(tmp_path / "off", seed=2, **SMALL)
    generate(tmp_path / "zero", seed=2, **SMALL, host_reboots=0)
    assert _tree(tmp_path / "off") == _tree(tmp_path / "zero")
    data = json.loads((tmp_path / "zero" / "truth.json").read_text())
    assert not {"host_reboots", "host_failed_jobs", "host_records"} & set(data)
    assert not {"host_reboots", "host_records"} & set(data["scenario"])
    assert not (tmp_path / "zero" / "slurm").exists() and not (tmp_path / "zero" / "boots").exists()
    generate(tmp_path / "a", seed=2, **SMALL, host_reboots=2)
    generate(tmp_path / "b", seed=2, **SMALL, host_reboots=2)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    # Re-using the folder without the option leaves none of its files behind.
    generate(tmp_path / "a", seed=2, **SMALL)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "off")


def test_faults_and_the_jobs_before_a_crash_do_not_move(
        tmp_path: Path, one_rail: tuple[Path, GroundTruth]) -> None:
    out, truth = one_rail
    plain = generate(tmp_path / "plain", seed=1, **SMALL)
    for name in ("bad_cables", "switch_reboots", "maintenance", "reseat_flaps", "snapshots",
                 "clock_skew_s", "topology_at"):
        assert getattr(truth, name) == getattr(plain, name), name
    assert [f for f in truth.flaps if f.cause != "host_reboot"] == list(plain.flaps)
    # Jobs are numbered in placement order: every job placed before the first crashed one is
    # the same line in sacct.
    first = min(int(j.job_id) for j in truth.host_failed_jobs)
    mine, theirs = _sacct_rows(out), _sacct_rows(tmp_path / "plain")
    before = {k for k in theirs if int(k) < first}
    assert before and all(mine[k] == theirs[k] for k in before)
    # The switch log is the plain one plus the crashed hosts' flaps.
    extra = Counter((out / "logs" / "switches.log").read_text().splitlines())
    extra.subtract(Counter((tmp_path / "plain" / "logs" / "switches.log").read_text()
                           .splitlines()))
    assert min(extra.values()) >= 0
    crashed_ports = {(e.name, e.port_name) for r in truth.host_reboots
                     for f in truth.flaps if f.cause == "host_reboot" and f.link in r.links
                     for e in f.ends if e.kind == "switch"}
    added = [line for line, n in extra.items() for _ in range(n)]
    assert len(added) == 2 * len(crashed_ports)  # a DOWN and an UP per rail
    for line in added:
        assert any(f" {sw} " in line and f"Interface {port} changed" in line
                   for sw, port in crashed_ports), line


def test_host_records_change_which_files_are_written_and_nothing_else(
        tmp_path: Path, one_rail: tuple[Path, GroundTruth]) -> None:
    out, _ = one_rail
    generate(tmp_path / "none", seed=1, **SMALL, host_reboots=3, host_records="none")
    mine, none = _tree(out), _tree(tmp_path / "none")
    assert set(mine) - set(none) == {f for f in mine if f.startswith(("slurm/", "boots/"))}
    assert all(mine[f] == none[f] for f in none if f != "truth.json")
    a, b = (json.loads(x["truth.json"]) for x in (mine, none))
    assert a["host_records"] == "both" and b["host_records"] == "none"
    assert [r["records"] for r in b["host_reboots"]] == ["none"] * 3


@pytest.mark.parametrize(("records", "slurm", "boots"), [
    ("none", False, False), ("slurm", True, False), ("boots", False, True),
    ("both", True, True)])
def test_files_appear_only_where_the_site_keeps_them(tmp_path: Path, records: str, slurm: bool,
                                                     boots: bool) -> None:
    truth = generate(tmp_path, seed=3, spines=2, leaves=4, hosts_per_leaf=8, host_reboots=1,
                     host_records=records)
    files = set(_tree(tmp_path))
    assert ({"slurm/events.txt", "slurm/slurmctld.log"} <= files) is slurm
    assert not slurm or not {f for f in files if f.startswith("slurm/")} - {
        "slurm/events.txt", "slurm/slurmctld.log"}
    hosts = {f"boots/node-{i:03d}.txt" for i in range(1, 33)}
    assert {f for f in files if f.startswith("boots/")} == (hosts if boots else set())
    assert truth.host_records == records


def test_records_without_reboots_are_background_only(tmp_path: Path) -> None:
    truth = generate(tmp_path, seed=3, **SMALL, host_records="both")
    plain = generate(tmp_path / "plain", seed=3, **SMALL)
    assert truth.host_reboots == () and truth.jobs_total == plain.jobs_total
    events = (tmp_path / "slurm" / "events.txt").read_text()
    assert "DOWN" not in events and "re-image OPS-4000" in events
    data = json.loads((tmp_path / "truth.json").read_text())
    assert data["host_records"] == "both" and data["host_reboots"] == []


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="host_reboots"):
        Scenario(seed=1, **SMALL, host_reboots=-1)
    with pytest.raises(ValueError, match="host_reboots"):
        Scenario(seed=1, **SMALL, host_reboots=17)  # 64 hosts: at most 16
    with pytest.raises(ValueError, match="host_records"):
        Scenario(seed=1, **SMALL, host_reboots=1, host_records="syslog")


# ------------------------------------------------------------------------- the crash


def test_every_rail_of_a_crashed_host_flaps_together_in_the_syslog(
        rails: tuple[Path, GroundTruth]) -> None:
    out, truth = rails
    assert len(truth.host_reboots) == 4
    text = (out / "logs" / "switches.log").read_text()
    events = parse_syslog_lines(enumerate(text.splitlines(keepends=True), 1)).events
    skew = max(abs(s) for s in truth.clock_skew_s.values())
    by_port: dict[tuple[str | None, str | None], list[tuple[str, datetime]]] = {}
    for e in events:
        by_port.setdefault((e.device, e.port_name), []).append((e.state, e.at))
    hosts = {r.host for r in truth.host_reboots}
    for r in truth.host_reboots:
        assert len(r.links) == len(r.flaps) == 8
        assert {link.split("/")[1].split(":")[0] for link in r.links} == {
            f"mlx5_{k}" for k in range(8)}
        assert all(0.0 <= (f.down_at - r.at).total_seconds() < 1.0 for f in r.flaps)
        # Down 170-315 s: POST, kernel, driver, link training.
        assert all(170.0 <= f.duration_s <= 316.0 for f in r.flaps)
        assert r.at < r.boot_at < r.up_at < r.slurmd_at
        mine = [f for f in truth.flaps if f.link in r.links and f.cause == "host_reboot"]
        assert len(mine) == 8
        for f in mine:
            leaf = next(e for e in f.ends if e.kind == "switch")
            seen = by_port[(leaf.name, leaf.port_name)]
            downs = [at for state, at in seen if state == "down"
                     and abs((at - r.at).total_seconds()) <= skew + 1.5]
            ups = [at for state, at in seen if state == "up"
                   and abs((at - f.up_at).total_seconds()) <= skew + 0.5]
            assert len(downs) == 1 and len(ups) == 1, (r.host, leaf.name, leaf.port_name)
    # Only those hosts' links flap for that cause, and no other fault sits on them.
    assert {f.ends[0].name for f in truth.flaps if f.cause == "host_reboot"} == hosts
    assert not hosts & {f.ends[0].name for f in truth.flaps
                        if f.cause not in ("host_reboot", "switch_reboot")}
    assert not hosts & {m.target for m in truth.maintenance}


def test_the_crashed_hosts_job_ends_node_fail_or_failed_in_sacct(
        one_rail: tuple[Path, GroundTruth], rails: tuple[Path, GroundTruth]) -> None:
    states: Counter[str] = Counter()
    for out, truth in (one_rail, rails):
        multi = truth.fabric["hcas_per_host"] > 1
        rows = _sacct_rows(out)
        parsed = {j.job_id: j for j in parse_sacct((out / "jobs" / "sacct.txt").read_text()).jobs}
        network = {j.job_id for j in truth.network_failed_jobs}
        assert len(truth.host_failed_jobs) == len(truth.host_reboots)
        for job, crash in zip(truth.host_failed_jobs, truth.host_reboots, strict=True):
            assert crash.jobs == (job.job_id,) and crash.job_states == (job.state,)
            assert job.host == crash.host and job.host in job.nodes
            assert job.job_id not in network
            assert job.start < crash.at < job.end
            row = rows[job.job_id]
            assert (row[4], row[5]) == (job.state, job.exit_code)
            assert parsed[job.job_id].state == job.state
            states[job.state] += 1
            if job.state == "NODE_FAIL":
                # End: when slurmctld set the node DOWN (its time(NULL), whole seconds).
                assert job.exit_code == "0:1"
                assert job.end.timestamp() == math.floor(crash.down_at.timestamp())
            else:
                assert multi and not job.log_cut and job.batch_host != job.host
                assert job.end < crash.down_at and job.exit_code in ("1:0", "0:6")
            if job.log_cut:
                assert job.batch_host == job.host and job.state == "NODE_FAIL"
        if not multi:
            assert {j.state for j in truth.host_failed_jobs} == {"NODE_FAIL"}
        assert truth.job_states.get("NODE_FAIL", 0) == sum(
            1 for j in truth.host_failed_jobs if j.state == "NODE_FAIL")
    assert states["FAILED"] and states["NODE_FAIL"]


def test_peers_nccl_names_the_crashed_host_on_every_rail(
        one_rail: tuple[Path, GroundTruth], rails: tuple[Path, GroundTruth]) -> None:
    checked = 0
    for out, truth in (one_rail, rails):
        n_rails = truth.fabric["hcas_per_host"]
        ips = dict(line.split("\t")[1].split()[0:1] + line.split("\t")[0:1] for line in
                   (out / "hosts").read_text().splitlines() if "\t" in line
                   and not line.startswith("127."))
        for job, crash in zip(truth.host_failed_jobs, truth.host_reboots, strict=True):
            text = (out / "jobs" / "logs" / f"{job.job_id}.log").read_text()
            log = parse_joblog(list(enumerate(text.splitlines(keepends=True), 1)))
            errors = [e for e in log.errors if e.kind == "completion_error"]
            if job.log_cut:
                assert not errors and not job.reporters and job.error_at is None
                continue
            checked += 1
            assert job.reporters and {r.peer_host for r in job.reporters} == {job.host}
            assert {r.hca for r in job.reporters} == {f"mlx5_{k}" for k in range(n_rails)}
            assert {e.peer for e in errors} == {ips[job.host]}
            assert job.host not in {e.host for e in log.errors}  # it died: it prints nothing
            assert {e.host for e in errors} == {r.host for r in job.reporters}
            named = {e.hca for e in errors if e.hca is not None}
            if n_rails > 1 and named:
                assert len(named) > 1  # more than one rail names the same peer
            assert job.error_at is not None and job.error_at > crash.at
            if job.state == "NODE_FAIL":
                assert f"srun: error: Node failure on {job.host}" in text
                assert (f"*** JOB {job.job_id} ON {job.batch_host} CANCELLED AT "
                        f"{crash.down_at:%Y-%m-%dT%H:%M:%S} DUE TO NODE FAILURE, SEE "
                        "SLURMCTLD LOG FOR DETAILS ***") in text
    assert checked >= 3


def test_the_hca_counters_restart_when_the_driver_loads(rails: tuple[Path, GroundTruth]) -> None:
    out, truth = rails
    crashed = {r.host: r for r in truth.host_reboots}
    restarted = 0
    for snap, after in zip(truth.snapshots, truth.snapshots[1:], strict=False):
        crossed = [r for r in crashed.values() if snap.at < r.at and r.up_at < after.at]
        if not crossed:
            continue
        now = {s.description: s.counters for s in parse_ibqueryerrors((out / snap.file)
                                                                      .read_text())}
        then = {s.description: s.counters for s in parse_ibqueryerrors((out / after.file)
                                                                       .read_text())}
        for r in crossed:
            for k in range(8):
                desc = f"{r.host} mlx5_{k}"
                if now.get(desc, {}).get("LinkDownedCounter"):
                    # the old count is gone: the port counts from 0 since the driver loaded
                    assert "LinkDownedCounter" not in then.get(desc, {})
                    restarted += 1
    assert restarted


# ------------------------------------------------------------------------- the records

_CTL = re.compile(r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\] \S")
_BOOT = re.compile(r"( {0,2}-?\d+) ([0-9a-f]{32}) ((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d "
                   r"\d\d:\d\d:\d\d UTC) ((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d "
                   r"\d\d:\d\d:\d\d UTC)")


def _stamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def test_slurm_events_and_slurmctld_log_tell_what_slurmctld_saw(
        one_rail: tuple[Path, GroundTruth]) -> None:
    out, truth = one_rail
    events = (out / "slurm" / "events.txt").read_text().splitlines()
    assert events[0] == "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"
    rows = [line.split("|") for line in events[1:]]
    assert all(len(r) == 7 for r in rows)
    assert rows[0][1:] == ["", rows[0][2], "Unknown", "", "", ""]  # the cluster's TRES event
    assert [r[1] for r in rows[1:]] == sorted(r[1] for r in rows[1:])
    log = (out / "slurm" / "slurmctld.log").read_text().splitlines()
    assert all(_CTL.match(line) for line in log)
    assert log == sorted(log)
    for crash in truth.host_reboots:
        mine = [r for r in rows if r[1] == crash.host]
        last = mine[-1]
        assert last[4:] == ["DOWN", "Node unexpectedly rebooted", "slurm(64030)"]
        assert _stamp(last[2]) == crash.slurmd_at.replace(microsecond=0)
        assert last[3] == ("Unknown" if crash.resumed_at is None
                           else f"{crash.resumed_at:%Y-%m-%dT%H:%M:%S}")
        if crash.down_by == "not_responding":
            assert mine[-2][4:] == ["DOWN*", "Not responding", "slurm(64030)"]
            assert _stamp(mine[-2][2]) == crash.down_at.replace(microsecond=0)
        text = "\n".join(line for line in log if crash.host in line)
        boot = math.floor(crash.boot_at.timestamp())
        assert re.search(rf"\] validate_node_specs: Node {crash.host} unexpectedly rebooted "
                         rf"boot_time={boot} last response=\d+\n", text + "\n")
        assert f"Killing JobId={crash.jobs[0]} on failed node {crash.host}" in text
        assert (f"error: Nodes {crash.host} not responding, setting DOWN" in text) is (
            crash.down_by == "not_responding")
    # every job is allocated in the log; a re-imaged host is drained by root with its ticket
    allocated = {m.group(1) for line in log if (m := re.search(r"sched: Allocate JobId=(\d+)",
                                                                line))}
    assert allocated == set(_sacct_rows(out))
    for window in truth.maintenance:
        assert any(r[1] == window.target and r[4] == "DRAIN" and r[5] == window.reason
                   and r[6] == "root(0)" for r in rows)


def test_journalctl_list_boots_of_every_host(one_rail: tuple[Path, GroundTruth]) -> None:
    out, truth = one_rail
    crashed = {r.host: r for r in truth.host_reboots}
    files = sorted((out / "boots").glob("*.txt"))
    assert len(files) == truth.fabric["hosts"]
    for path in files:
        lines = path.read_text().splitlines()
        assert lines[0] == "IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY"
        boots = [_BOOT.fullmatch(line) for line in lines[1:]]
        assert all(boots)
        idx = [int(m.group(1)) for m in boots if m]
        assert idx == list(range(1 - len(idx), 1))

        def at(text: str) -> datetime:
            return datetime.strptime(text, "%a %Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)

        spans = [(at(m.group(3)), at(m.group(4))) for m in boots if m]
        assert all(a <= b for a, b in spans)
        assert all(b < c for (_, b), (c, _) in itertools.pairwise(spans))
        assert spans[-1][1] <= truth.window_end
        crash = crashed.get(path.stem)
        if crash is not None:
            assert spans[-1][0] == crash.boot_at.replace(microsecond=0)
            assert spans[-2][1] <= crash.at
        elif path.stem not in {m.target for m in truth.maintenance}:
            assert spans[-1][0] < truth.window_start  # up since before the window


# ------------------------------------------------------------------------- realistic, CLI


def test_realistic_preset_combines_with_reboots(tmp_path: Path) -> None:
    options: ScenarioOptions = {**REALISTIC, "host_reboots": 3}
    truth = generate(tmp_path, seed=2, spines=8, leaves=16, hosts_per_leaf=16, **options)
    assert len(truth.host_reboots) == 3 and truth.lost_switch_logs
    params = json.loads((tmp_path / "truth.json").read_text())["scenario"]
    assert params["host_reboots"] == 3 and "host_records" not in params
    assert (tmp_path / "slurm" / "events.txt").exists()
    # the job logs of the crashes read as the others do (launcher prefixes, old releases)
    for job in truth.host_failed_jobs:
        text = (tmp_path / "jobs" / "logs" / f"{job.job_id}.log").read_text()
        log = parse_joblog(list(enumerate(text.splitlines(keepends=True), 1)))
        assert not log.unparsed
        assert job.log_cut or any(e.kind == "completion_error" for e in log.errors)


def test_cli_simulate_reboots(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from auditor.cli import app

    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path), "--spines", "2",
                                   "--leaves", "4", "--hosts", "8", "--reboots", "2",
                                   "--host-records", "slurm"])
    assert res.exit_code == 0, res.output
    assert "2 host reboot(s) killing 2 job(s) (host records: slurm)" in res.output
    data = json.loads((tmp_path / "truth.json").read_text())
    assert data["scenario"]["host_reboots"] == 2 and data["host_records"] == "slurm"
    assert (tmp_path / "slurm" / "slurmctld.log").exists() and not (tmp_path / "boots").exists()
    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path / "x"), "--reboots", "1",
                                   "--host-records", "syslog"])
    assert res.exit_code == 2 and "host_records must be one of" in res.output


# ------------------------------------------------------------------------- scoring


def test_each_host_record_kind_goes_to_the_ingester_that_offers_it() -> None:
    from auditor.errors import AuditorError
    from auditor.ingest.plan import plan_ingest
    from auditor.simulate.evaluate import HOST_RECORDS, offered

    for kind, _, _ in HOST_RECORDS:
        try:
            plan_ingest([], kind)
        except AuditorError:
            known = False
        else:
            known = True
        # A kind the ingest learns elsewhere than the job or log ingester needs evaluate.py's
        # hook taught where it is, or the benchmark would leave its files out silently.
        assert known == (offered(kind) is not None), kind


def test_evaluate_counts_crashed_hosts_cables_as_false_blames(tmp_path: Path) -> None:
    from auditor.simulate.evaluate import HOST_RECORDS, _score, evaluate, offered

    folder = tmp_path / "s"
    truth = generate(folder, seed=2, spines=4, leaves=8, hosts_per_leaf=4, host_reboots=2)
    score, data = evaluate(folder, tmp_path / "a.duckdb")
    assert score.crashed_hosts == sorted(r.host for r in truth.host_reboots)
    assert score.network_jobs_truth == len(truth.network_failed_jobs)
    assert score.network_jobs >= 0 and set(score.host_cable_blames) <= set(score.false_blames)
    assert score.host_records_ingested == [k for k, _, _ in HOST_RECORDS if offered(k)]
    # A crashed host's cable on top of a ranking is a false blame, and named as such.
    flap = next(f for f in truth.flaps if f.cause == "host_reboot")
    cable = {"component": "cable", "ends": [{"name": e.name, "port": e.port} for e in flap.ends]}
    host = {"component": "host", "ends": [{"name": f"{flap.ends[0].name} mlx5_0", "port": None}]}
    scored = _score(folder, data, {"suspects": [cable, host], "jobs": {"network": 7}})
    assert len(scored.host_cable_blames) == 1 and scored.host_cable_blames[0].startswith(
        f"{flap.ends[0].name}[1] <-> ")
    assert scored.false_blames == scored.host_cable_blames
    assert scored.host_suspects == [flap.ends[0].name] and scored.host_suspects_found == 1
    assert scored.network_jobs == 7
