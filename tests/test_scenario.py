"""The seeded scenario generator (auditor/simulate/scenario.py): same seed -> same bytes, every
file reads with the project's real parsers, the topology has the requested size, and the ground
truth agrees with what the files show. Small fabrics, so the module runs in a few seconds."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auditor.models import CounterSample, NodeType
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.ibqueryerrors import parse_ibqueryerrors
from auditor.parse.syslog import parse_syslog_lines
from auditor.simulate.scenario import GroundTruth, Scenario, generate

DEMO = Path(__file__).resolve().parent.parent / "auditor" / "demo_data" / "sweep-2026-11-30"
SEED = 5
SMALL: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 4}
FAULTS: dict[str, Any] = {"frequent_flappers": 2, "rare_flappers": 2, "symbol_error_cables": 3,
                          "reimaged_hosts": 2, "reseat_flaps": 3}


def _parser(module: str) -> ModuleType:
    # sacct/joblog/hosts/maintenance parsers were written alongside this generator; without
    # them only those cross-checks are skipped.
    found: ModuleType = pytest.importorskip(module, reason=f"{module} is not in this tree yet")
    return found


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
    for reboot in truth.switch_reboots:
        since = [snap for at, snap in zip(times, snaps, strict=True) if at > reboot.up_at]
        ports = {_key(end) for f in truth.flaps if f.link in reboot.links for end in f.ends
                 if end.name == reboot.name}
        for snap in since:
            assert not any("LinkDownedCounter" in snap.get(p, {}) for p in ports)

    # Symbol errors rise on the erroring end(s) only; one end only = a transceiver.
    symbol = [b for b in truth.bad_cables if b.fault == "symbol_errors"]
    assert symbol
    for cable in symbol:
        assert cable.symbol_onset is not None
        later = [snap for at, snap in zip(times, snaps, strict=True) if at > cable.symbol_onset]
        for i, end in enumerate(cable.ends):
            seq = [snap.get(_key(end), {}).get("SymbolErrorCounter", 0) for snap in later]
            if i in cable.symbol_error_ends:
                assert seq == sorted(seq) and (len(seq) < 2 or seq[-1] > seq[0])
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
    sacct = _parser("auditor.parse.sacct")
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
    lo, hi = truth.scenario["nccl_timeout_s"]
    for job in truth.network_failed_jobs:
        flap = flaps[(job.culprit_link, job.flap_down_at)]
        assert flap.cause == job.culprit_cause
        effective = max(flap.down_at, job.start)
        assert (flap.up_at - effective).total_seconds() > truth.scenario["nccl_death_s"]
        assert lo <= (job.error_at - effective).total_seconds() <= hi
        assert job.start <= job.error_at < job.end
        a, b = job.reporters
        assert (a.host, a.peer_host) == (b.peer_host, b.host) and a.hca == b.hca
        assert {a.host, b.host} <= set(job.nodes)
        if job.culprit_link.split("=")[0].count("/"):  # a host link: its host is a reporter
            assert job.culprit_link.split("/")[0] == a.host
    # Short flaps (reseats < 5 s) never kill a job.
    assert all(f.duration_s < 5 for f in truth.reseat_flaps)
    assert not {j.culprit_cause for j in truth.network_failed_jobs} & {"reseat"}


def test_job_logs_name_both_sides_or_only_the_gpu(
        small: tuple[Path, GroundTruth, dict[str, Any]]) -> None:
    out, truth, _ = small
    logs = sorted(p.stem for p in (out / "jobs" / "logs").glob("*.log"))
    failed = [j.job_id for j in truth.network_failed_jobs]
    failed += [j.job_id for j in truth.non_network_failed_jobs]
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

    joblog = _parser("auditor.parse.joblog")
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
    hosts_file = _parser("auditor.parse.hosts_file")
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
    maintenance = _parser("auditor.parse.maintenance")
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
        ({"nccl_timeout_s": (30.0, 5.0)}, "nccl_timeout_s"),
    ],
)
def test_bad_parameters_are_refused(change: dict[str, Any], message: str) -> None:
    params: dict[str, Any] = {"seed": 1, **SMALL, **change}
    with pytest.raises(ValueError, match=message):
        Scenario(**params)
