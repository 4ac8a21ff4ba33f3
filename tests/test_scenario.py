"""The seeded scenario generator (auditor/simulate/scenario/): same seed -> same bytes, every
file reads with the project's real parsers, the topology has the requested size, and the ground
truth agrees with what the files show. Small fabrics, so the module runs in a few seconds."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.models import CounterSample, NodeType
from auditor.parse import hosts_file, joblog, maintenance, sacct
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.ibqueryerrors import parse_ibqueryerrors
from auditor.parse.syslog import parse_syslog_lines
from auditor.simulate.scenario import (
    REALISTIC,
    GroundTruth,
    Scenario,
    generate,
    ib_timeout_default,
    nccl_death_s,
)

DEMO = Path(__file__).resolve().parent.parent / "auditor" / "demo_data" / "sweep-2026-11-30"
SEED = 5
SMALL: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 4}
FAULTS: dict[str, Any] = {"frequent_flappers": 2, "rare_flappers": 2, "symbol_error_cables": 3,
                          "reimaged_hosts": 2, "reseat_flaps": 3}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth, dict[str, Any]]:
    out = tmp_path_factory.mktemp("scenario")
    truth = generate(out, seed=SEED, **SMALL, **FAULTS)
    return out, truth, json.loads((out / "truth.json").read_text())


# ------------------------------------------------------------------------- determinism


def test_same_seed_same_bytes_and_other_seed_other_bytes(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate(a, seed=11, **SMALL)
    generate(b, seed=11, **SMALL)
    assert _tree(a) == _tree(b)
    generate(c, seed=12, **SMALL)
    assert _tree(c)["logs/switches.log"] != _tree(a)["logs/switches.log"]
    # Re-using a directory leaves no stale job logs or snapshots from the earlier run.
    generate(c, seed=11, **SMALL)
    assert _tree(c) == _tree(a)


def test_fault_placement_does_not_depend_on_the_job_load(tmp_path: Path) -> None:
    few = generate(tmp_path / "few", seed=3, **SMALL, jobs_per_day=5)
    many = generate(tmp_path / "many", seed=3, **SMALL, jobs_per_day=80)
    assert few.flaps == many.flaps and few.bad_cables == many.bad_cables
    assert few.jobs_total < many.jobs_total


# ------------------------------------------------------------------------- topology


def _shape(line: str) -> str:
    """A line with names, GUIDs and numbers blanked, to compare layouts byte for byte."""
    line = re.sub(r"generated on .*", "generated on T", line)
    line = re.sub(r'"[^"]*"', '"Q"', line)
    line = re.sub(r"[0-9a-f]{6,16}", "G", line)
    return re.sub(r"\d+", "N", line)


def test_topology_has_the_requested_size_and_the_real_layout(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    text = (out / "topology" / "ibnetdiscover.txt").read_text()
    topo = parse_ibnetdiscover(text)
    kinds = Counter(n.node_type for n in topo.nodes)
    spines, leaves, per_leaf = SMALL["spines"], SMALL["leaves"], SMALL["hosts_per_leaf"]
    assert kinds[NodeType.SWITCH] == spines + leaves
    assert kinds[NodeType.HCA] == leaves * per_leaf
    assert len(topo.links) == leaves * per_leaf + leaves * spines
    assert truth.fabric["links"] == len(topo.links)
    descs = {n.description for n in topo.nodes}
    assert "MF0;spine01:MQM8700/U1" in descs and "MF0;leaf08:MQM8700/U1" in descs
    assert "node-001 mlx5_0" in descs and "node-032 mlx5_0" in descs
    # Every line has the layout of a line of the real ibsim capture (tabs, spacing, GUID forms).
    real = {_shape(line) for line in (DEMO / "ibnetdiscover.txt").read_text().splitlines()}
    assert {_shape(line) for line in text.splitlines()} <= real


def test_rails_cable_each_hca_to_its_own_leaf_and_names_follow_the_prefixes(
        tmp_path: Path) -> None:
    truth = generate(tmp_path, seed=2, spines=2, leaves=8, hosts_per_leaf=3, hcas_per_host=4,
                     host_prefix="gpu", leaf_prefix="tor", spine_prefix="agg")
    topo = parse_ibnetdiscover((tmp_path / "topology" / "ibnetdiscover.txt").read_text())
    by_guid = {n.guid: n for n in topo.nodes}
    assert truth.fabric == {"spines": 2, "leaves": 8, "switches": 10, "hosts": 6, "hcas": 24,
                            "links": 40, "host_links": 24, "switch_links": 16,
                            "hcas_per_host": 4}
    leaf_of: dict[tuple[str, str], str] = {}
    for link in topo.links:
        a, b = by_guid[link.a_guid], by_guid[link.b_guid]
        if NodeType.HCA in (a.node_type, b.node_type):
            hca, sw = (a, b) if a.node_type is NodeType.HCA else (b, a)
            host, dev = hca.description.split()
            leaf_of[(host, dev)] = sw.description.split(";")[1].split(":")[0]
    assert sorted({h for h, _ in leaf_of}) == [f"gpu-{i:03d}" for i in range(1, 7)]
    for i in range(1, 7):
        su = (i - 1) // 3
        # Rail-optimised: mlx5_k of every host of a scalable unit shares leaf k of that unit.
        assert [leaf_of[(f"gpu-{i:03d}", f"mlx5_{k}")] for k in range(4)] == [
            f"tor{su * 4 + k + 1:02d}" for k in range(4)]
    assert {n.description for n in topo.nodes if n.node_type is NodeType.SWITCH} >= {
        "MF0;agg01:MQM8700/U1", "MF0;tor08:MQM8700/U1"}


def test_a_large_fabric_generates_in_seconds(tmp_path: Path) -> None:
    began = time.perf_counter()
    truth = generate(tmp_path, seed=1, spines=16, leaves=128, hosts_per_leaf=32)
    elapsed = time.perf_counter() - began
    assert truth.fabric["hosts"] == 4096 and truth.fabric["links"] == 4096 + 128 * 16
    assert elapsed < 8.0, f"128 leaves x 32 hosts took {elapsed:.1f} s"


# ------------------------------------------------------------------------- switch log


def test_switch_log_parses_and_shows_every_truth_flap_at_each_switch_end(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    text = (out / "logs" / "switches.log").read_text()
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00 \S+ \S+\[\d+\]: ", text)
    result = parse_syslog_lines(enumerate(text.splitlines(keepends=True), 1))
    assert result.unparsed == []
    assert result.ignored > 0  # sshd, ntpd, cli and config-saved noise
    events: dict[tuple[str, str, str], list[datetime]] = defaultdict(list)
    for e in result.events:
        assert e.device is not None and e.port_name is not None
        events[(e.device, e.port_name, e.state)].append(e.at)
    slack = timedelta(seconds=truth.scenario["max_clock_skew_s"] + 0.35)
    logged = 0
    for flap in truth.flaps:
        switch_ends = [end for end in flap.ends if end.kind == "switch"]
        assert tuple(end.name for end in switch_ends) == flap.logged_by
        for end in switch_ends:
            assert end.port_name is not None
            for state, when in (("down", flap.down_at), ("up", flap.up_at)):
                seen = events[(end.name, end.port_name, state)]
                assert any(abs(at - when) <= slack for at in seen), (flap.link, end.name, state)
            logged += 1
    # Nothing but the injected flaps: one down and one up line per logging end.
    assert len(result.events) == 2 * logged
    hosts = {end.name for flap in truth.flaps for end in flap.ends if end.kind == "hca"}
    assert not hosts & {e.device for e in result.events}  # HCA ends never log here
    # Each switch's stamps are off by its own skew, at most max_clock_skew_s.
    assert max(abs(s) for s in truth.clock_skew_s.values()) <= 2.0


# ------------------------------------------------------------------------- counters


def _counters(out: Path, truth: GroundTruth) -> list[dict[tuple[str, int | None], dict[str, int]]]:
    snaps = []
    for snap in truth.snapshots:
        samples: list[CounterSample] = parse_ibqueryerrors((out / snap.file).read_text())
        snaps.append({(s.guid or "", s.port): s.counters for s in samples})
    return snaps


def _items_shape(line: str) -> str:
    return _shape(re.sub(r"(?: ?\[\w+ == \d+\])+", " ITEMS", line))


def _key(end: Any) -> tuple[str, int]:
    return (end.port_guid or end.guid, end.port)


def test_counter_snapshots_parse_and_follow_the_faults(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    assert [s.file for s in truth.snapshots] == [
        f"counters/ibqueryerrors-{h:02d}00.txt" for h in range(0, 24, 4)]
    snaps = _counters(out, truth)
    times = [s.at for s in truth.snapshots]
    # Same layout as real ibqueryerrors reports (ibsim capture; a CA block from a real HCA).
    fixtures = Path(__file__).resolve().parent / "fixtures" / "ibqueryerrors"
    real = {_items_shape(line) for path in (DEMO / "ibqueryerrors.txt",
                                            fixtures / "ca_header_short_guids_thresholds.txt")
            for line in path.read_text().splitlines()}
    for snap in truth.snapshots:
        assert {_items_shape(line) for line in (out / snap.file).read_text().splitlines()
                if not line.startswith("##")} <= real
    for snap in snaps:
        for values in snap.values():
            assert values.get("LinkDownedCounter", 0) <= 255
            assert values.get("SymbolErrorCounter", 0) <= 65535

    reset_ports = {_key(end) for r in truth.switch_reboots for f in truth.flaps
                   if f.link in r.links for end in f.ends if end.name == r.name}
    reset_ports |= {_key(end) for m in truth.maintenance for f in truth.flaps
                    if f.link in m.links for end in f.ends if end.kind == "hca"}
    # Cumulative: a counter never goes down except where a reboot reset it.
    for before, after in itertools.pairwise(snaps):
        for key, values in after.items():
            if key in reset_ports or key[1] is None:
                continue
            for name, v in before.get(key, {}).items():
                assert values.get(name, 0) >= v, (key, name)

    # Every flap counts on both ends (LinkDownedCounter, 8-bit) unless the end was reset.
    for flap in truth.flaps:
        for end in flap.ends:
            if _key(end) in reset_ports:
                continue
            for at, snap in zip(times, snaps, strict=True):
                downs = sum(1 for f in truth.flaps if f.down_at <= at
                            and any(_key(e) == _key(end) for e in f.ends))
                got = snap.get(_key(end), {}).get("LinkDownedCounter", 0)
                assert got >= min(downs, 255), (flap.link, end.name, at)

    # A rebooted switch starts again from zero: none of its ports has a LinkDownedCounter after.
    assert truth.switch_reboots
    for reboot in truth.switch_reboots:
        since = [snap for at, snap in zip(times, snaps, strict=True) if at > reboot.up_at]
        ports = {_key(end) for f in truth.flaps if f.link in reboot.links for end in f.ends
                 if end.name == reboot.name}
        assert since and ports
        for snap in since:
            assert not any("LinkDownedCounter" in snap.get(p, {}) for p in ports)

    # Symbol errors rise on the erroring end(s) only; one end only = a transceiver.
    symbol = [b for b in truth.bad_cables if b.fault == "symbol_errors"]
    assert symbol
    for cable in symbol:
        assert cable.symbol_onset is not None
        later = [snap for at, snap in zip(times, snaps, strict=True) if at > cable.symbol_onset]
        assert len(later) >= 2, "the rise must be seen in two snapshots at least"
        for i, end in enumerate(cable.ends):
            seq = [snap.get(_key(end), {}).get("SymbolErrorCounter", 0) for snap in later]
            if i in cable.symbol_error_ends:
                assert seq == sorted(seq) and seq[-1] > seq[0]
            else:
                assert seq == [0] * len(seq)
        assert (cable.cause == "transceiver") == (len(cable.symbol_error_ends) == 1)


# ------------------------------------------------------------------------- jobs


def test_sacct_lists_every_job_in_the_real_format(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    text = (out / "jobs" / "sacct.txt").read_text()
    lines = text.splitlines()
    assert lines[0] == ("JobID|JobIDRaw|JobName|Partition|State|ExitCode|Start|End|NNodes|"
                        "NodeList|AllocTRES")
    assert len(lines) == truth.jobs_total + 1
    assert all(line.count("|") == 10 for line in lines)
    result = sacct.parse_sacct(text)
    assert result.unparsed == []
    jobs = result.jobs
    assert len(jobs) == truth.jobs_total
    assert Counter(j.state for j in jobs) == Counter(truth.job_states)
    hosts = {line.split()[1] for line in (out / "hosts").read_text().splitlines()[2:]}
    window_end = truth.window_end
    busy: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for job in jobs:
        assert 2 <= len(job.nodes) <= 64 and set(job.nodes) <= hosts
        assert job.gpus == 8 * len(job.nodes)
        assert job.start is not None and truth.window_start <= job.start < window_end
        for node in job.nodes:
            busy[node].append((job.start, job.end or datetime.max.replace(tzinfo=UTC)))
    for spans in busy.values():  # no node runs two jobs at once
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    # Re-imaged hosts are drained: no job overlaps their declared window.
    for m in truth.maintenance:
        assert all(end <= m.start or start >= m.end for start, end in busy[m.target])
    by_id = {j.job_id: j for j in jobs}
    assert truth.network_failed_jobs and truth.non_network_failed_jobs
    for nj in truth.network_failed_jobs:
        assert by_id[nj.job_id].state == "FAILED" and by_id[nj.job_id].nodes == nj.nodes
    for oj in truth.non_network_failed_jobs:
        assert by_id[oj.job_id].state == "FAILED"
    for cj in truth.cancelled_jobs:
        assert by_id[cj.job_id].state == "CANCELLED"


def test_network_failures_follow_a_long_enough_flap_on_the_footprint(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    _, truth, _ = small
    flaps = {(f.link, f.down_at): f for f in truth.flaps}
    assert truth.network_failed_jobs
    for job in truth.network_failed_jobs:
        flap = flaps[(job.culprit_link, job.flap_down_at)]
        assert flap.cause == job.culprit_cause
        effective = max(flap.down_at, job.start)
        # The default: NCCL 2.28.7 with NCCL_IB_TIMEOUT=18 from the environment, 8.59 s.
        assert (job.nccl_version, job.ib_timeout, job.ib_timeout_set) == ("2.28.7", 18, True)
        assert job.death_s == pytest.approx(8.589935, abs=1e-6)
        assert (flap.up_at - effective).total_seconds() > job.death_s
        assert job.death_s <= (job.error_at - effective).total_seconds() <= job.death_s + 2.0
        assert job.start <= job.error_at < job.end
        a, b = job.reporters
        assert (a.host, a.peer_host) == (b.peer_host, b.host) and a.hca == b.hca
        assert {a.host, b.host} <= set(job.nodes)
        if job.culprit_link.split("=")[0].count("/"):  # a host link: its host is a reporter
            assert job.culprit_link.split("/")[0] == a.host
    # Short flaps (reseats < 5 s) never kill a job.
    assert len(truth.reseat_flaps) == FAULTS["reseat_flaps"]
    assert all(f.duration_s < 5 for f in truth.reseat_flaps)
    assert not {j.culprit_cause for j in truth.network_failed_jobs} & {"reseat"}


def test_job_logs_name_both_sides_or_only_the_gpu(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    logs = sorted(p.stem for p in (out / "jobs" / "logs").glob("*.log"))
    failed = [j.job_id for j in truth.network_failed_jobs]
    failed += [j.job_id for j in truth.non_network_failed_jobs]
    assert truth.network_failed_jobs and truth.non_network_failed_jobs
    assert logs == sorted(failed)
    completion = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] (\S+?):\d+:\d+ \[\d\] \S+ "
                            r"NCCL WARN NET/IB: Got completion from peer ([\d.]+)<\d+> with "
                            r"status=IBV_WC_RETRY_EXC_ERR\(12\) .* hca (mlx5_\d+)$", re.M)
    for job in truth.network_failed_jobs:
        text = (out / "jobs" / "logs" / f"{job.job_id}.log").read_text()
        seen = {(m.group(2), m.group(3), m.group(4)) for m in completion.finditer(text)}
        assert seen == {(r.host, r.peer_ip, r.hca) for r in job.reporters}
        assert "Process group watchdog thread terminated" in text
    for other in truth.non_network_failed_jobs:
        text = (out / "jobs" / "logs" / f"{other.job_id}.log").read_text()
        assert "Got completion" not in text
        assert ("OutOfMemoryError" in text) == (other.kind == "oom")
        assert ("NVRM: Xid (PCI:0000:" in text) == (other.kind == "xid")

    for job in truth.network_failed_jobs:
        path = out / "jobs" / "logs" / f"{job.job_id}.log"
        result = joblog.parse_joblog(enumerate(path.read_text().splitlines(keepends=True), 1))
        assert result.unparsed == []
        first = {(e.host, e.hca, e.peer) for e in result.first
                 if e.kind == "completion_error" and e.network}
        assert first == {(r.host, r.hca, r.peer_ip) for r in job.reporters}
        assert min(e.at for e in result.first if e.kind == "completion_error") == \
            job.error_at.replace(microsecond=0)
    for other in truth.non_network_failed_jobs:
        path = out / "jobs" / "logs" / f"{other.job_id}.log"
        result = joblog.parse_joblog(enumerate(path.read_text().splitlines(keepends=True), 1))
        assert result.unparsed == [] and not any(e.network for e in result.errors)
        assert {"oom": "oom", "xid": "gpu_error"}[other.kind] in {e.kind for e in result.errors}


# ------------------------------------------------------------------------- hosts, maintenance


def test_hosts_file_maps_every_reporter_address_to_its_host(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    assert truth.network_failed_jobs
    records = hosts_file.parse_hosts_file((out / "hosts").read_text())
    by_address = {r.address: r.host for r in records}
    assert len({r.host for r in records} - {"localhost"}) == truth.fabric["hosts"]
    for job in truth.network_failed_jobs:
        for rep in job.reporters:
            assert by_address[rep.peer_ip] == rep.peer_host


def test_maintenance_csv_declares_every_reimaged_host(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    text = (out / "maintenance.csv").read_text()
    assert text.splitlines()[0] == "target,start,end,reason"
    assert len(truth.maintenance) == FAULTS["reimaged_hosts"]
    for m in truth.maintenance:
        assert 3 <= len(m.flaps) <= 6
        assert all(m.start < f.down_at < f.up_at < m.end for f in m.flaps)
    windows = maintenance.parse_maintenance(text)
    assert sorted((w.target, w.start, w.end) for w in windows) == sorted(
        (m.target, m.start, m.end) for m in truth.maintenance)


# ------------------------------------------------------------------------- ground truth


def test_truth_json_is_the_returned_truth_and_faults_match_the_model(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, data = small
    assert data == json.loads(json.dumps(truth.to_json()))
    assert data["schema"] == 1 and data["seed"] == SEED
    topo = parse_ibnetdiscover((out / "topology" / "ibnetdiscover.txt").read_text())
    links = {frozenset({(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)}) for lk in topo.links}

    def cable(ends: Any) -> frozenset[tuple[str, int]]:
        return frozenset((e.guid, e.port) for e in ends)

    counts = Counter(b.fault for b in truth.bad_cables)
    assert counts == {"frequent_flaps": 2, "rare_long_flaps": 2, "symbol_errors": 3}
    assert {b.kind for b in truth.bad_cables} == {"host", "switch"}
    all_links = [b.link for b in truth.bad_cables] + [f.link for f in truth.reseat_flaps]
    all_links += [lk for r in truth.switch_reboots for lk in r.links]
    all_links += [lk for m in truth.maintenance for lk in m.links]
    assert len(all_links) == len(set(all_links))  # every fault on its own link(s)
    flap_keys = {(f.link, f.down_at) for f in truth.flaps}
    for bad in truth.bad_cables:
        assert cable(bad.ends) in links
        assert all((bad.link, f.down_at) in flap_keys for f in bad.flaps)
        durations = [f.duration_s for f in bad.flaps]
        if bad.fault == "frequent_flaps":
            assert len(durations) >= 4 and all(2 <= d <= 40 for d in durations)
        elif bad.fault == "rare_long_flaps":
            assert 1 <= len(durations) <= 2 and all(60 <= d <= 600 for d in durations)
        else:
            assert len(durations) <= 2
    (reboot,) = truth.switch_reboots
    mine = [f for f in truth.flaps if f.cause == "switch_reboot"]
    assert sorted(f.link for f in mine) == sorted(reboot.links)
    assert len(reboot.links) == (SMALL["leaves"] if reboot.tier == "spine"
                                 else SMALL["hosts_per_leaf"] + SMALL["spines"])
    assert max(f.down_at for f in mine) - min(f.down_at for f in mine) <= timedelta(seconds=2)
    assert all(115 <= f.duration_s <= 250 for f in mine)
    assert all(f.down_at < f.up_at for f in truth.flaps)
    assert all(truth.window_start < f.down_at and f.up_at < truth.window_end for f in truth.flaps)


def test_window_start_is_a_parameter_and_no_wall_clock_is_read(tmp_path: Path) -> None:
    start = datetime(2027, 3, 1, 6, 30, tzinfo=UTC)
    truth = generate(tmp_path, seed=9, spines=2, leaves=4, hosts_per_leaf=4, days=0.5,
                     start=start)
    assert truth.window_start == start and truth.window_end == start + timedelta(hours=12)
    assert [s.file for s in truth.snapshots] == [
        "counters/ibqueryerrors-0630.txt", "counters/ibqueryerrors-1030.txt",
        "counters/ibqueryerrors-1430.txt"]
    text = (tmp_path / "logs" / "switches.log").read_text()
    stamps = [_at(line.split()[0]) for line in text.splitlines()]
    assert min(stamps) >= start - timedelta(seconds=3)
    assert "# Topology file: generated on Mon Mar  1 06:3" in (
        tmp_path / "topology" / "ibnetdiscover.txt").read_text()


def test_multi_day_snapshots_carry_the_date(tmp_path: Path) -> None:
    truth = generate(tmp_path, seed=4, spines=2, leaves=4, hosts_per_leaf=2, days=2,
                     snapshot_every_h=12)
    assert [s.file for s in truth.snapshots] == [
        "counters/ibqueryerrors-20261129-0000.txt", "counters/ibqueryerrors-20261129-1200.txt",
        "counters/ibqueryerrors-20261130-0000.txt", "counters/ibqueryerrors-20261130-1200.txt"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"spines": 0}, "spines must be >= 1"),
        ({"hcas_per_host": 3}, "multiple of hcas_per_host"),
        ({"days": 0.1}, "days must be"),
        ({"start": datetime(2026, 11, 29)}, "timezone-aware"),  # noqa: DTZ001 - the point
        ({"host_prefix": "no de"}, "host_prefix"),
        ({"switch_model": "SB7800"}, "switch_model"),
        ({"frequent_flappers": 40}, "too many faulty cables"),
        ({"hcas_per_host": 16, "leaves": 16}, "one per GPU"),
        ({"nccl_versions": ("2.7.8",)}, "only 2.8.0 and later"),
        ({"nccl_versions": ("3.0.1",)}, "expected 2.MINOR.PATCH"),
        ({"nccl_versions": ()}, "must not be empty"),
        ({"ib_timeouts": (0,)}, "ib_timeouts"),
        ({"ib_timeouts": (None, 32)}, "ib_timeouts"),
        ({"info_share": 1.5}, "info_share"),
        ({"lost_switch_logs": 13}, "lost_switch_logs"),
    ],
)
def test_bad_parameters_are_refused(change: dict[str, Any], message: str) -> None:
    params: dict[str, Any] = {"seed": 1, **SMALL, **change}
    with pytest.raises(ValueError, match=message):
        Scenario(**params)


# ------------------------------------------------------------------------- job evidence options

# Releases whose wording differs (NVIDIA/nccl tags, see _completion_msg); seed 5 fails jobs on
# every one of them and with every launcher style.
VERSIONS = ("2.9.9", "2.12.12", "2.18.3", "2.19.4", "2.20.5", "2.21.5", "2.22.3", "2.23.4",
            "2.27.7", "2.28.3", "2.28.7", "2.29.2", "2.30.7")
MIXED: dict[str, Any] = {
    "spines": 4, "leaves": 8, "hosts_per_leaf": 6, "hcas_per_host": 2, "days": 2,
    "frequent_flappers": 6, "rare_flappers": 4, "jobs_per_day": 300,
    "nccl_versions": VERSIONS, "ib_timeouts": (None, None, 22), "info_share": 0.6,
    "launcher_prefixes": True, "sacct_steps": True, "lost_switch_logs": 1,
}
_PEER = r"[\d.]+<\d+>"
# Expected completion-error texts, written from the NCCL sources independently of the generator.
_WORDING = [
    ((2, 10, 0), r"NET/IB : Got completion with error 12, opcode [01], len 0, vendor err 129"),
    ((2, 18, 0), rf"NET/IB : Got completion from peer {_PEER} with error 12, opcode [01], len 0, "
                 r"vendor err 129"),
    ((2, 20, 0), rf"NET/IB : Got completion from peer {_PEER} with error 12, opcode [01], len 0, "
                 r"vendor err 129 \((Send|Recv)\)"),
    ((2, 22, 0), rf"NET/IB : Got completion from peer {_PEER} with status=12 opcode=[01] len=0 "
                 r"vendor err 129 \((Send|Recv)\)"),
    ((2, 28, 7), rf"NET/IB: Got completion from peer {_PEER} with status=12 opcode=[01] len=0 "
                 r"vendor err 129 \((Send|Recv)\) hca (mlx5_\d)"),
    ((2, 29, 0), rf"NET/IB: Got completion from peer {_PEER} with status=IBV_WC_RETRY_EXC_ERR"
                 r"\(12\) opcode=IBV_WC_(SEND\(0\)|RDMA_WRITE\(1\)) reqSize=\d+ vendor_err=129 "
                 r"req_type=(Send|Recv) hca (mlx5_\d)"),
    ((9, 0, 0), rf"NET/IB: Got completion from peer {_PEER} with status=IBV_WC_RETRY_EXC_ERR"
                r"\(12\) opcode=IBV_WC_(SEND\(0\)|RDMA_WRITE\(1\)) vendor_err=129  hca (mlx5_\d)"),
]
_ASYNC = [
    ((2, 20, 0), r"NET/IB : Got async event : port error"),
    ((2, 23, 0), r"NET/IB : mlx5_\d:1 Got async event : port error"),
    ((2, 28, 7), r"NET/IB : mlx5_\d:1 Got async error event: port error"),
    ((9, 0, 0), r"NET/IB : mlx5_\d:1 Got non-fatal async event: port error\(10\)"),
]
# Launcher prefixes: srun --label (task padded to the widest), torchrun --tee, ts, CRI.
_PREFIX = {
    "srun": re.compile(r"^ *(\d+): "),
    "torchrun": re.compile(r"^\[default(\d)\]:"),
    "ts": re.compile(r"^[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d "),
    "cri": re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z std(out|err) F "),
}
_NCCL_LINE = re.compile(r"(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] )?([\w-]+):\d+:\d+ \[(\d)\] ")


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in text.split("."))
    return major, minor, patch


def _rule(table: list[tuple[tuple[int, int, int], str]], version: str) -> str:
    return next(pattern for upto, pattern in table if _version(version) < upto)


def _strip(line: str, launcher: str) -> str:
    m = _PREFIX[launcher].match(line) if launcher in _PREFIX else None
    return line[m.end():] if m else line


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth]:
    out = tmp_path_factory.mktemp("mixed")
    return out, generate(out, seed=5, **MIXED)


def test_new_options_keep_same_seed_same_bytes(tmp_path: Path) -> None:
    options = {**MIXED, "days": 1, "nccl_stamps": False, "channel_lines": True}
    generate(tmp_path / "a", seed=3, **options)
    generate(tmp_path / "b", seed=3, **options)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")


def test_formatting_options_do_not_change_what_happens(tmp_path: Path) -> None:
    base = {**SMALL, "hcas_per_host": 2, "nccl_versions": ("2.18.3", "2.29.2")}
    plain = generate(tmp_path / "a", seed=8, **base)
    styled = generate(tmp_path / "b", seed=8, **base, info_share=0.3, nccl_stamps=False,
                      channel_lines=True, launcher_prefixes=True, lost_switch_logs=2)
    assert [(f.link, f.down_at, f.up_at) for f in plain.flaps] == [
        (f.link, f.down_at, f.up_at) for f in styled.flaps]
    assert plain.job_states == styled.job_states
    assert [(j.job_id, j.culprit_link, j.error_at, j.nccl_version, j.death_s)
            for j in plain.network_failed_jobs] == [
        (j.job_id, j.culprit_link, j.error_at, j.nccl_version, j.death_s)
        for j in styled.network_failed_jobs]


def test_each_release_writes_its_own_wording_stamps_and_header(
        mixed: tuple[Path, GroundTruth]) -> None:
    out, truth = mixed
    assert {j.nccl_version for j in truth.network_failed_jobs} == set(VERSIONS)
    asyncs = set()
    proxy_lines = 0
    for job in truth.network_failed_jobs:
        lines = [_strip(line, job.launcher)
                 for line in (out / "jobs" / "logs" / f"{job.job_id}.log").read_text().splitlines()]
        v = _version(job.nccl_version)
        wording = re.compile(_rule(_WORDING, job.nccl_version) + "$")
        warns = [line for line in lines if " NCCL WARN " in line]
        completions = [line for line in warns if "status=12" in line or "error 12" in line
                       or "RETRY_EXC" in line]
        assert len(completions) == 2, job.job_id
        for line in completions:
            assert wording.search(line.split(" NCCL WARN ", 1)[1]), (job.nccl_version, line)
            m = _NCCL_LINE.match(line)
            assert m is not None
            # Each reporter prints from a GPU on the broken rail (GPU d uses rail d mod 2).
            assert int(m.group(2)) % 2 == job.rail
            if "hca mlx5" in line:
                assert line.endswith(f"hca {job.hca}")
        for line in warns:
            if "async" in line:
                assert re.search(_rule(_ASYNC, job.nccl_version) + "$", line), line
                asyncs.add(job.nccl_version)
            # NCCL stamps WARN lines from 2.26 (NCCL_DEBUG_TIMESTAMP_LEVELS), never before.
            assert bool(re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ", line)) == (
                v >= (2, 26, 0)), line
        assert (v >= (2, 30, 0)) == any("Got CQE with error" in line for line in warns)
        info = [line for line in lines if " NCCL INFO " in line]
        assert bool(info) == (job.nccl_debug == "INFO")
        banner = f"NCCL version {job.nccl_version}+cuda"
        if job.nccl_debug == "INFO" and v >= (2, 22, 0):
            assert any(f"NCCL INFO {banner}" in line for line in info)
        else:  # printf'd up to 2.21, VERSION level under WARN: no prefix
            assert any(line.startswith(banner) for line in lines)
        timeout = f"NCCL_IB_TIMEOUT set by environment to {job.ib_timeout}."
        assert any(line.endswith(timeout) for line in info) == (
            job.ib_timeout_set and job.nccl_debug == "INFO")
        code = "-> 6" if v >= (2, 13, 0) else "-> 2"
        proxy = [line for line in info if "proxy.cc" in line]
        assert all(code in line for line in proxy)
        proxy_lines += len(proxy)
        assert any(f"NCCL version {job.nccl_version}" in line and "ProcessGroupNCCL" in line
                   for line in lines)
    assert len(asyncs) >= 4  # async port events in several wordings
    assert proxy_lines > 0


def test_no_stamps_when_turned_off(tmp_path: Path) -> None:
    truth = generate(tmp_path, seed=5, **{**MIXED, "nccl_versions": ("2.27.7", "2.29.2")},
                     nccl_stamps=False)
    assert truth.network_failed_jobs
    for log in (tmp_path / "jobs" / "logs").glob("*.log"):
        assert not re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \S+:\d+:\d+ \[\d\] ",
                             log.read_text())


def test_death_time_follows_the_release_and_the_timeout(mixed: tuple[Path, GroundTruth]) -> None:
    assert [ib_timeout_default(v) for v in ("2.9.9", "2.13.4", "2.14.3", "2.22.3", "2.23.4",
                                            "2.29.2")] == [14, 14, 18, 18, 20, 20]
    assert nccl_death_s(14) == pytest.approx(0.537, abs=1e-3)
    assert nccl_death_s(18) == pytest.approx(8.590, abs=1e-3)
    assert nccl_death_s(20) == pytest.approx(34.360, abs=1e-3)
    _, truth = mixed
    flaps = {(f.link, f.down_at): f for f in truth.flaps}
    assert {j.ib_timeout_set for j in truth.network_failed_jobs} == {True, False}
    for job in truth.network_failed_jobs:
        if not job.ib_timeout_set:
            assert job.ib_timeout == ib_timeout_default(job.nccl_version)
        assert job.death_s == pytest.approx(4.096e-6 * 2**job.ib_timeout * 8, abs=1e-5)
        flap = flaps[(job.culprit_link, job.flap_down_at)]
        effective = max(flap.down_at, job.start)
        # Never killed by a flap shorter than the job's death time; the error comes that long
        # (plus up to 2 s) after the flap.
        assert (flap.up_at - effective).total_seconds() > job.death_s
        assert job.death_s <= (job.error_at - effective).total_seconds() <= job.death_s + 2.0
    # Long timeouts ride out flaps that would have killed a job at 18.
    assert truth.survived_long_flaps > 0
    assert any(j.death_s > 100 for j in truth.network_failed_jobs)


def test_launcher_prefixes_mark_every_line_of_the_task(mixed: tuple[Path, GroundTruth]) -> None:
    out, truth = mixed
    assert {j.launcher for j in truth.network_failed_jobs} == {"none", *_PREFIX}
    for job in truth.network_failed_jobs:
        text = (out / "jobs" / "logs" / f"{job.job_id}.log").read_text()
        lines = text.splitlines()
        if job.launcher == "none":
            assert not any(p.match(line) for p in _PREFIX.values() for line in lines)
            continue
        prefix = _PREFIX[job.launcher]
        marked = [line for line in lines if prefix.match(line)]
        if job.launcher in ("ts", "cri"):
            assert marked == lines  # every line, in arrival order
            continue
        # srun: every line of a node's task; torchrun: every line of a worker.
        nccl_lines = 0
        for line in marked:
            m = _NCCL_LINE.match(line[prefix.match(line).end():])  # type: ignore[union-attr]
            if m is None:
                continue
            nccl_lines += 1
            tag = int(prefix.match(line).group(1))  # type: ignore[union-attr]
            if job.launcher == "srun":
                assert job.nodes[tag] == m.group(1)
            else:
                assert tag == int(m.group(2))
        assert nccl_lines > 0, job.job_id
        unmarked = [line for line in lines if not prefix.match(line)]
        assert not any(_NCCL_LINE.match(line) for line in unmarked)
        if job.launcher == "srun":
            assert unmarked == []


def test_sacct_steps_fold_back_into_the_same_jobs(mixed: tuple[Path, GroundTruth]) -> None:
    out, truth = mixed
    text = (out / "jobs" / "sacct.txt").read_text()
    lines = text.splitlines()
    steps = [line for line in lines[1:] if "." in line.split("|")[0]]
    assert {line.split("|")[0].rsplit(".", 1)[1] for line in steps} == {"batch", "extern", "0"}
    full = sacct.parse_sacct(text)
    allocations = sacct.parse_sacct("\n".join(line for line in lines
                                              if line not in set(steps)) + "\n")
    assert full.unparsed == [] and full.skipped_steps == len(steps)
    assert full.jobs == [replace(j, line_no=full.jobs[i].line_no)
                         for i, j in enumerate(allocations.jobs)]
    ids = {j.job_id: j for j in full.jobs}
    # Every job once, the het job as its two components.
    (het,) = truth.het_jobs
    assert len(full.jobs) == truth.jobs_total + 1
    assert {f"{het}+0", f"{het}+1"} <= set(ids) and het not in ids
    assert set(ids[f"{het}+0"].nodes).isdisjoint(ids[f"{het}+1"].nodes)
    assert truth.array_jobs and set(truth.array_jobs) <= set(ids)
    raw = {line.split("|")[0]: line.split("|")[1] for line in lines[1:]}
    assert any(raw[a] != a.split("_")[0] for a in truth.array_jobs)
    assert Counter(j.state for j in full.jobs) == Counter(truth.job_states) + Counter(
        {ids[f"{het}+0"].state: 1})
    for job in truth.network_failed_jobs:
        assert ids[job.job_id].state == "FAILED" and ids[job.job_id].nodes == job.nodes
        assert (out / "jobs" / "logs" / f"{job.job_id}.log").exists()
        mine = [line.split("|") for line in steps if line.startswith(f"{job.job_id}.")]
        states = {f[0].rsplit(".", 1)[1]: f[4] for f in mine}
        assert states["extern"] == "COMPLETED" and states["batch"] == "FAILED"
        assert states["0"] in ("FAILED", "CANCELLED")


def test_a_lost_switch_log_leaves_out_a_leaf_that_killed_jobs(
        mixed: tuple[Path, GroundTruth]) -> None:
    out, truth = mixed
    (lost,) = truth.lost_switch_logs
    text = (out / "logs" / "switches.log").read_text()
    assert not any(line.split()[1] == lost for line in text.splitlines())
    assert lost not in text
    killers = {j.culprit_link for j in truth.network_failed_jobs}
    bad = [b for b in truth.bad_cables if b.link in killers]
    assert bad and lost in {e.name for b in bad for e in b.ends}
    assert all(lost not in f.logged_by for f in truth.flaps)
    # The counters keep counting on its ports.
    last = _counters(out, truth)[-1]
    downs = [last.get((e.port_guid or e.guid, e.port), {}).get("LinkDownedCounter", 0)
             for b in bad for e in b.ends if e.name == lost]
    assert max(downs) > 0


def test_the_project_parsers_read_the_realistic_logs(mixed: tuple[Path, GroundTruth]) -> None:
    out, truth = mixed
    assert truth.network_failed_jobs
    for job in truth.network_failed_jobs:
        path = out / "jobs" / "logs" / f"{job.job_id}.log"
        result = joblog.parse_joblog(enumerate(path.read_text().splitlines(keepends=True), 1))
        assert result.unparsed == []
        seen = {(e.host, e.peer) for e in result.first
                if e.kind == "completion_error" and e.network}
        named = _version(job.nccl_version) >= (2, 10, 0)  # no peer before 2.10
        assert seen == {(r.host, r.peer_ip if named else None) for r in job.reporters}, (
            job.job_id)


def test_default_writes_the_files_it_wrote(small: tuple[Path, GroundTruth, dict[str, Any]]
                                           ) -> None:
    out, truth, _ = small
    files = set(_tree(out))
    fixed = {"topology/ibnetdiscover.txt", "logs/switches.log", "jobs/sacct.txt", "hosts",
             "maintenance.csv", "inventory.csv", "cabling.csv", "truth.json"}
    assert fixed <= files
    failed = [j.job_id for j in truth.network_failed_jobs]
    failed += [j.job_id for j in truth.non_network_failed_jobs]
    assert {f for f in files - fixed if not f.startswith("counters/")} == {
        f"jobs/logs/{job_id}.log" for job_id in failed}
    assert not any("." in line.split("|")[0] for line in
                   (out / "jobs" / "sacct.txt").read_text().splitlines())
    assert truth.lost_switch_logs == () and truth.array_jobs == () and truth.het_jobs == ()
    for job in truth.network_failed_jobs:
        text = (out / "jobs" / "logs" / f"{job.job_id}.log").read_text()
        assert (job.nccl_debug, job.launcher) == ("INFO", "none")
        assert " NCCL INFO NCCL version 2.28.7+cuda12.9\n" in text
        assert " NCCL INFO NCCL_IB_TIMEOUT set by environment to 18.\n" in text
        assert all(not _NCCL_LINE.match(line) or line.startswith(("[2026-", "node-"))
                   for line in text.splitlines())


def test_cli_simulate_realistic_and_explicit_options_win(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from auditor.cli import app

    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path), "--realistic",
                                   "--spines", "2", "--leaves", "8", "--hosts", "2",
                                   "--info-share", "0.5", "--ib-timeouts", "default,20",
                                   "--no-sacct-steps"])
    assert res.exit_code == 0, res.output
    params = json.loads((tmp_path / "truth.json").read_text())["scenario"]
    assert params["hcas_per_host"] == 8 and params["info_share"] == 0.5
    assert params["ib_timeouts"] == [None, 20] and params["sacct_steps"] is False
    assert params["nccl_versions"] == list(REALISTIC["nccl_versions"])
    assert params["launcher_prefixes"] is True and params["lost_switch_logs"] == 1
    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path / "r"), "--rails", "4",
                                   "--spines", "2", "--leaves", "8", "--hosts", "2"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r" / "truth.json").read_text())["fabric"]["hcas"] == 16


# ------------------------------------------------------------------------- harmless flaps


def test_harmless_flaps_same_seed_same_bytes_and_off_changes_nothing(tmp_path: Path) -> None:
    generate(tmp_path / "a", seed=SEED, **SMALL, harmless_flaps=2)
    generate(tmp_path / "b", seed=SEED, **SMALL, harmless_flaps=2)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    generate(tmp_path / "off", seed=SEED, **SMALL)
    generate(tmp_path / "zero", seed=SEED, **SMALL, harmless_flaps=0)
    assert _tree(tmp_path / "off") == _tree(tmp_path / "zero")
    data = json.loads((tmp_path / "zero" / "truth.json").read_text())
    assert "harmless_links" not in data and "harmless_flaps" not in data["scenario"]
    assert _tree(tmp_path / "a") != _tree(tmp_path / "off")
    with pytest.raises(ValueError, match="harmless_flaps"):
        Scenario(seed=1, **SMALL, harmless_flaps=-1)


def test_harmless_flaps_are_absorbed_and_change_no_fault_and_no_fate(tmp_path: Path) -> None:
    options = {**MIXED, "days": 1}
    plain = generate(tmp_path / "plain", seed=4, **options)
    out = tmp_path / "h"
    truth = generate(out, seed=4, **options, harmless_flaps=4)
    for name in ("bad_cables", "switch_reboots", "maintenance", "reseat_flaps",
                 "network_failed_jobs", "non_network_failed_jobs", "job_states"):
        assert getattr(truth, name) == getattr(plain, name), name
    assert plain.harmless_links == () and len(truth.harmless_links) == 4
    assert Counter(h.mechanism for h in truth.harmless_links) == {
        "adaptive_routing": 2, "port_failover": 2}
    assert {h.kind for h in truth.harmless_links} == {"switch", "host"}
    faulty = {b.link for b in truth.bad_cables} | {f.link for f in plain.flaps}
    harmless = {h.link for h in truth.harmless_links}
    assert len(harmless) == 4 and not harmless & faulty
    longest = max(nccl_death_s(ib_timeout_default(v) if t is None else t)
                  for v in options["nccl_versions"] for t in options["ib_timeouts"])
    mine = [f for f in truth.flaps if f.link in harmless]
    assert len(mine) == sum(len(h.flaps) for h in truth.harmless_links)
    assert all(f.cause in ("adaptive_routing", "port_failover") for f in mine)
    assert all(f.duration_s > longest for f in mine)
    assert not {j.culprit_link for j in truth.network_failed_jobs} & harmless
    # every switch end shows each of its flaps going down
    text = (out / "logs" / "switches.log").read_text()
    downs = [(e.device, e.port_name, e.at)
             for e in parse_syslog_lines(enumerate(text.splitlines(keepends=True), 1)).events
             if e.state == "down"]
    for f in mine:
        for end in f.ends:
            if end.kind == "switch":
                assert any(d == end.name and p == end.port_name
                           and abs((at - f.down_at).total_seconds()) < 3
                           for d, p, at in downs), (f.link, end.name)
    # the COMPLETED jobs that crossed them left their NCCL start-up lines
    states = {line.split("|")[0]: line.split("|")[4]
              for line in (out / "jobs" / "sacct.txt").read_text().splitlines()[1:]}
    crossers = {j for h in truth.harmless_links for c in h.crossed_by for j in c}
    done = {j for j in crossers if states[j] == "COMPLETED"}
    assert done
    logs = {p.stem for p in (out / "jobs" / "logs").glob("*.log")}
    assert done <= logs
    assert not logs - done - {j.job_id for j in truth.network_failed_jobs} - {
        j.job_id for j in truth.non_network_failed_jobs}


def test_cli_simulate_harmless_flaps(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from auditor.cli import app

    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path), "--spines", "2",
                                   "--leaves", "4", "--hosts", "4", "--harmless-flaps", "1"])
    assert res.exit_code == 0, res.output
    assert "1 harmless link(s)" in res.output
    data = json.loads((tmp_path / "truth.json").read_text())
    assert data["scenario"]["harmless_flaps"] == 1
    assert [h["mechanism"] for h in data["harmless_links"]] == ["adaptive_routing"]
