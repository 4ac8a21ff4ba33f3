"""Healthy-job evidence (issue #15): COMPLETED jobs whose traffic crossed a link through a flap
longer than they could wait make its flaps weigh less, unless the link also killed a job.

A hand-built store through the real ingest pins the crossing rules (rails from the job's own
logs, one-host jobs, the time margins, NCCL_IB_HCA) and the precedence of killing evidence; a
small generated scenario with `harmless_flaps` shows a harmless link going below a killer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.analyse.correlate import gather
from auditor.analyse.evidence import Evidence, link_of
from auditor.analyse.rank import ABSORBED_FLAP, as_json, rank
from auditor.ingest.captures import ingest_files
from auditor.ingest.common import LogOptions
from auditor.ingest.jobs import JobOptions, ingest_job_files
from auditor.ingest.logs import ingest_logs
from auditor.models import NodeType
from auditor.nccl import ib_hca_selects
from auditor.parse.joblog import parse_joblog
from auditor.simulate.evaluate import evaluate, load_scenario
from auditor.simulate.scenario import generate
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_instant

T = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)  # the flap goes down
FLAP_S = 300  # longer than any NCCL here waits (2.21: 8.6 s, 2.27: 34 s)
STAMP = "%Y-%m-%dT%H:%M:%S"


def test_ib_hca_selects_as_nccl_matches_its_list() -> None:
    assert ib_hca_selects("mlx5_1", "mlx5_1", 1)
    assert ib_hca_selects("mlx5_1", "mlx5_10", 1)  # a prefix, as NCCL compares
    assert not ib_hca_selects("=mlx5_1", "mlx5_10", 1)
    assert ib_hca_selects("=mlx5_1", "mlx5_1", 1)
    assert not ib_hca_selects("^mlx5_1", "mlx5_1", 1)
    assert ib_hca_selects("^mlx5_1", "mlx5_0", 1)
    assert not ib_hca_selects("^=mlx5_1", "mlx5_1", 1)
    assert ib_hca_selects("^=mlx5_1", "mlx5_10", 1)
    assert ib_hca_selects("mlx5_0:1,mlx5_1:1", "mlx5_1", 1)
    assert not ib_hca_selects("mlx5_0:1,mlx5_1:2", "mlx5_1", 1)
    assert not ib_hca_selects("mlx5_0", "mlx5_1", 1)


def test_the_job_log_parser_keeps_the_using_lists_and_nccl_ib_hca() -> None:
    lines = [
        "node-001:100:100 [0] NCCL INFO NCCL_IB_HCA set to ^=mlx5_1\n",
        "node-001:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>\n",
        "node-002:200:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/IB [RO]; "
        "OOB ib0:10.0.0.2<0>\n",
    ]
    res = parse_joblog(list(enumerate(lines, 1)))
    assert res.ib_hca == "^=mlx5_1"
    assert res.using == {("node-001", "mlx5_0"), ("node-002", "mlx5_0"), ("node-002", "mlx5_2")}


# ------------------------------------------------------------------ a hand-built store


def _nccl_log(host: str, peer: str, devices: list[str] | None, ib_hca: str | None) -> str:
    out = [f"{host}:4100:4100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"]
    if ib_hca is not None:
        out.append(f"{host}:4100:4100 [0] NCCL INFO NCCL_IB_HCA set to {ib_hca}")
    if devices is not None:
        for h in (host, peer):
            listed = " ".join(f"[{i}]{d}:1/IB" for i, d in enumerate(devices))
            out.append(f"{h}:4100:4100 [0] NCCL INFO NET/IB : Using {listed} [RO]; OOB ib0:"
                       f"10.9.9.9<0>")
    return "\n".join(out) + "\n"


def _build(tmp: Path, killer: bool, domain: str = "", flap_s: int = FLAP_S,
           inside: tuple[tuple[str, timedelta], ...] = ()
           ) -> tuple[Path, tuple[tuple[str, int], ...], dict[str, str]]:
    """Two rails, four hosts; host X's mlx5_1 cable goes down at T for `flap_s`. Jobs on X and
    Y (and, with `killer`, a job that died of that flap; `inside`: jobs whose Using lists name
    mlx5_1 that COMPLETED that long after T), sacct naming each host with `domain` after its
    name. Returns the DB, the link and names."""
    src = tmp / "fabric"
    generate(src, seed=1, spines=2, leaves=4, hosts_per_leaf=2, hcas_per_host=2)
    truth = json.loads((src / "truth.json").read_text())
    db = tmp / "a.duckdb"
    with Store(db) as store:
        ingest_files(store, [src / "topology" / "ibnetdiscover.txt"],
                     at=parse_instant(truth["topology_at"]))
        fabric = store.fabric(store.snapshot_times(datetime.now(UTC), limit=1)[0])
    hca = next(n for n in sorted(fabric.nodes.values(), key=lambda n: n.name)
               if n.device == "mlx5_1")
    x = hca.name
    y = next(n.name for n in sorted(fabric.nodes.values(), key=lambda n: n.name)
             if n.device == "mlx5_1" and n.name != x)
    lk = next(lk for lk in fabric.links if hca.guid in (lk.a_guid, lk.b_guid))
    hca_port, leaf_guid, leaf_port = ((lk.a_port, lk.b_guid, lk.b_port)
                                      if lk.a_guid == hca.guid else
                                      (lk.b_port, lk.a_guid, lk.a_port))
    leaf = fabric.nodes[leaf_guid].name
    up = T + timedelta(seconds=flap_s)
    log = tmp / "switch.log"
    log.write_text(
        f"{T.isoformat()} {leaf} mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/{leaf_port} "
        "changed state to DOWN\n"
        f"{up.isoformat()} {leaf} mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/{leaf_port} "
        "changed state to UP\n")
    hour = timedelta(hours=1)
    rows = [  # job, state, start, end, hosts
        ("101", "COMPLETED", T - hour, up + hour, f"{x},{y}"),  # Using names mlx5_1: sure
        ("102", "COMPLETED", T - hour, up + hour, f"{x},{y}"),  # Using names mlx5_0 only
        ("103", "COMPLETED", T - hour, up + hour, f"{x},{y}"),  # no log: rail not known
        ("104", "COMPLETED", T - hour, up + hour, x),  # one host: NVLink, never the cable
        # ended too soon: the flap began in its last 10 minutes, which may be idle
        ("105", "COMPLETED", T - hour, up + timedelta(minutes=4), f"{x},{y}"),
        ("106", "COMPLETED", T - timedelta(minutes=1), up + hour, f"{x},{y}"),  # NCCL not up yet
        # cancelled an hour after the link's return: no watchdog would have waited that long
        ("107", "CANCELLED", T - hour, up + hour, f"{x},{y}"),
        # cancelled 20 minutes after: a stuck job a user gave up on, as far as we can tell
        ("112", "CANCELLED", T - hour, up + timedelta(minutes=20), f"{x},{y}"),
        ("108", "COMPLETED", T - hour, up + hour, f"{x},{y}"),  # NCCL_IB_HCA=^mlx5_1
        ("109", "COMPLETED", T - hour, up + hour, f"{x},{y}"),  # NCCL_IB_HCA==mlx5_1
    ]
    logs = {"101": _nccl_log(x, y, ["mlx5_0", "mlx5_1"], None),
            "102": _nccl_log(x, y, ["mlx5_0"], "mlx5_0"),
            "108": _nccl_log(x, y, None, "^mlx5_1"),
            "109": _nccl_log(x, y, None, "=mlx5_1")}
    for job, after in inside:
        rows.append((job, "COMPLETED", T - hour, T + after, f"{x},{y}"))
        # (a line of its own: the same text twice would be the same file, ingested once)
        logs[job] = (f"{x}:4100:4100 [0] NCCL INFO comm 0x{job} rank 0 nranks 2\n"
                     + _nccl_log(x, y, ["mlx5_0", "mlx5_1"], None))
    if killer:
        # NCCL 2.27 (IB timeout 20: 34.4 s) on rail 1 of X and Y: its QP gives up 34 s in.
        rows.append(("110", "FAILED", T - hour, T + timedelta(seconds=90), f"{x},{y}"))
        died = T + timedelta(seconds=35)
        y_ip = next(line.split()[0] for line in (src / "hosts").read_text().splitlines()
                    if line.split()[1:2] == [y])
        logs["110"] = (
            f"{x}:617:617 [1] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            f"[{died:%Y-%m-%d %H:%M:%S}] {x}:617:2799 [1] transport/net_ib.cc:2360 NCCL WARN "
            f"NET/IB: Got completion from peer {y_ip}<53393> with status=12 opcode=1 len=0 "
            "vendor err 129 (Send) hca mlx5_1\n")
    sacct = tmp / "sacct.txt"
    sacct.write_text("JobID|State|Start|End|NodeList\n" + "".join(
        f"{j}|{state}|{a:{STAMP}}|{b:{STAMP}}|"
        f"{','.join(h + domain for h in hosts.split(','))}\n"
        for j, state, a, b, hosts in rows))
    with Store(db) as store:
        ingest_logs(store, [log], "auto", LogOptions(), now=up + 2 * hour)
        ingest_job_files(store, [src / "hosts", sacct], "auto", JobOptions())
        for job, text in logs.items():
            path = tmp / f"{job}.log"
            path.write_text(text)
            ingest_job_files(store, [path], "joblog", JobOptions(job=job))
    link = link_of([(hca.guid, hca_port), (leaf_guid, leaf_port)])
    return db, link, {"x": x, "y": y, "leaf": leaf}


def _gather(db: Path) -> Evidence:
    with Store(db, read_only=True) as store:
        return gather(store, utc_naive(T - timedelta(hours=6)), utc_naive(T + timedelta(hours=6)))


def _mine(result: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return next(s for s in result["suspects"]
                if {e["name"] for e in s["ends"]} == {names["x"], names["leaf"]})


def test_only_jobs_whose_traffic_crossed_the_cable_count(tmp_path: Path) -> None:
    db, link, names = _build(tmp_path, killer=False)
    ev = _gather(db)
    le = ev.links[link]
    assert {h.job_id: h.weight for h in le.healthy} == {"101": 1.0, "103": 0.5, "107": 0.5, "109": 1.0}
    assert {h.job_id: h.how for h in le.healthy} == {
        "101": "its Using list names the HCA", "103": "rail not known",
        "107": "rail not known", "109": "NCCL_IB_HCA==mlx5_1 picks the HCA"}
    before = _mine(as_json(ev, rank(ev)), names)
    assert before["survived_jobs"] == ["101", "103", "107", "109"]
    said = [line for line in before["evidence"] if line.startswith("survived by")]
    assert said and said[0].startswith("survived by 4 job(s) that crossed it (101, 103, 107, "
                                       "109): its flaps did not kill traffic")
    # A sure crossing: the one long flap weighs what an absorbed flap weighs.
    assert before["survived_points_off"] > 3
    assert before["score"] == round(1 - 2.718281828459045 ** (-ABSORBED_FLAP / 6), 3)
    le.healthy = []
    plain = _mine(as_json(ev, rank(ev)), names)
    assert plain["score"] > before["score"] and plain["survived_jobs"] == []
    assert plain["survived_points_off"] == 0


def test_a_job_that_completed_well_inside_a_long_flap_lived_through_it(tmp_path: Path) -> None:
    """A 15-minute flap of the cable (issue #23: NCCL's port failover carried the rail): a job
    that completed 14 minutes in had run 13.4 minutes past the moment its NCCL 2.21 would have
    given up (8.6 s) and its last 10 may have been idle: it lived through the flap. One that
    completed 9 minutes in proves nothing (its last 10 minutes may have been a checkpoint)."""
    db, link, names = _build(tmp_path, killer=False, flap_s=900,
                             inside=(("120", timedelta(minutes=14)),
                                     ("121", timedelta(minutes=9))))
    ev = _gather(db)
    weights = {h.job_id: h.weight for h in ev.links[link].healthy}
    assert weights.get("120") == 1.0
    assert "121" not in weights
    assert "120" in _mine(as_json(ev, rank(ev)), names)["survived_jobs"]


def test_a_flap_a_raised_timeout_would_outlast_is_a_half_sure_trial_of_a_job_with_no_info_log(
        tmp_path: Path) -> None:
    """A 30 s flap: NCCL 2.21 (the version the logs show) gives up after 8.6 s, but a job that
    set NCCL_IB_TIMEOUT 2 higher (20: 34 s) would have ridden it out, and only an INFO log says
    what a job set. Job 103 has no log: its trial counts half (issue #23); job 101's INFO log
    sets nothing, so its 8.6 s holds."""
    db, link, _ = _build(tmp_path, killer=False, flap_s=30)
    healthy = {h.job_id: h for h in _gather(db).links[link].healthy}
    assert {j: h.weight for j, h in healthy.items()} == {"101": 1.0, "103": 0.25, "107": 0.25,
                                                          "109": 1.0}
    assert "NCCL_IB_TIMEOUT not known (a job that set it 2 higher waits 34 s)" in healthy[
        "103"].how
    assert "NCCL_IB_TIMEOUT" not in healthy["101"].how


def test_jobs_sacct_lists_by_their_hosts_fqdn_cross_the_same(tmp_path: Path) -> None:
    """gather reads only the jobs on the hosts next to a flap, by the names sacct gave them
    that resolve to those hosts (issue #13): an FQDN is one of them."""
    db, link, _ = _build(tmp_path, killer=False, domain=".cluster.example")
    with Store(db, read_only=True) as store:
        assert all(h.endswith(".cluster.example") for h in store.job_host_names())
    le = _gather(db).links[link]
    assert {h.job_id: h.weight for h in le.healthy} == {"101": 1.0, "103": 0.5, "107": 0.5, "109": 1.0}


def test_a_cable_that_killed_a_job_keeps_its_points_whoever_else_lived(tmp_path: Path) -> None:
    db, link, names = _build(tmp_path, killer=True)
    ev = _gather(db)
    le = ev.links[link]
    assert [j["job_id"] for j in le.jobs] == ["110"]
    assert {h.job_id for h in le.healthy} == {"101", "103", "107", "109"}
    with_them = as_json(ev, rank(ev))
    mine = _mine(with_them, names)
    assert mine["jobs_failed"] == 1 and mine["survived_jobs"] == ["101", "103", "107", "109"]
    assert mine["survived_points_off"] == 0
    assert any("killing evidence wins" in line for line in mine["evidence"])
    le.healthy = []
    without = _mine(as_json(ev, rank(ev)), names)
    assert (mine["rank"], mine["score"]) == (without["rank"], without["score"])


def test_a_failing_pairs_vote_keeps_only_its_share_of_what_survivors_take_off(
        tmp_path: Path) -> None:
    """A failing pair spreads one vote over the links its routes may cross (issue #23: with
    adaptive routing, a hundred of them): a hundredth of a vote keeps a hundredth of the
    points the jobs that lived through the flap take off, a whole vote keeps them all."""
    db, link, names = _build(tmp_path, killer=False)
    ev = _gather(db)
    le = ev.links[link]
    alone = _mine(as_json(ev, rank(ev)), names)["survived_points_off"]
    assert alone > 3
    le.voters = {"110"}
    le.votes = 0.01
    dust = _mine(as_json(ev, rank(ev)), names)
    assert dust["survived_points_off"] == pytest.approx(0.99 * alone, abs=0.01)
    assert any("0.01 of a vote, so 99% of the cut stands" in line for line in dust["evidence"])
    le.votes = 1.0
    whole = _mine(as_json(ev, rank(ev)), names)
    assert whole["survived_points_off"] == 0
    assert any("killing evidence wins" in line for line in whole["evidence"])


# ------------------------------------------------------------------ a generated scenario


@pytest.fixture(scope="module")
def harmless(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Evidence, Path]:
    folder = tmp_path_factory.mktemp("harmless")
    generate(folder / "s", seed=18, spines=4, leaves=8, hosts_per_leaf=4, harmless_flaps=2)
    truth = load_scenario(folder / "s", folder / "a.duckdb")
    with Store(folder / "a.duckdb", read_only=True) as store:
        ev = gather(store, utc_naive(parse_instant(truth["window_start"])),
                    utc_naive(parse_instant(truth["window_end"])))
    return truth, ev, folder


def _key(ends: list[dict[str, Any]]) -> frozenset[tuple[str, int]]:
    return frozenset((e["name"], e["port"]) for e in ends)


def test_a_harmless_link_goes_below_a_link_that_killed(
        harmless: tuple[dict[str, Any], Evidence, Path]) -> None:
    truth, ev, _ = harmless
    after = as_json(ev, rank(ev))["suspects"]
    # before: without the evidence of jobs, neither those that crossed a flap and lived nor the
    # host's having run none through it
    saved = {k: (le.healthy, le.idle_flaps) for k, le in ev.links.items()}
    for le in ev.links.values():
        le.healthy, le.idle_flaps = [], []
    before = as_json(ev, rank(ev))["suspects"]
    for k, (found, idle) in saved.items():
        ev.links[k].healthy, ev.links[k].idle_flaps = found, idle
    crossed = {_key(h["ends"]): {j for c in h["crossed_by"] for j in c}
               for h in truth["harmless_links"]}
    rank_before = {_key(s["ends"]): s["rank"] for s in before}
    killers = [s for s in after if s["jobs_failed"] and s["component"] not in ("switch", "host")]
    moved = [(s, k) for s in after if _key(s["ends"]) in crossed for k in killers
             if rank_before[_key(s["ends"])] < rank_before[_key(k["ends"])]
             and s["rank"] > k["rank"]]
    assert moved, "a harmless link that outranked a killer goes below it"
    for s, _ in moved:
        assert s["jobs_failed"] == 0 and s["survived_points_off"] > 0
        # every job it names did cross that link in the simulation, and none died of it
        assert set(s["survived_jobs"]) <= crossed[_key(s["ends"])]
        assert any(line.startswith(f"survived by {len(s['survived_jobs'])} job(s) that crossed "
                                   "it (") and "its flaps did not kill traffic" in line
                   for line in s["evidence"])
    bad = {_key(b["ends"]) for b in truth["bad_cables"]}
    assert not bad & set(crossed)


def test_the_benchmark_scores_harmless_links_before_and_after(
        harmless: tuple[dict[str, Any], Evidence, Path]) -> None:
    truth, _, folder = harmless
    score, _ = evaluate(folder / "s", folder / "b.duckdb", before=True)
    before = score.before
    assert before is not None and before.before is None
    assert len(score.harmless_ranks) == len(before.harmless_ranks) == 2
    for scored in (before, score):
        # a harmless link in the top K is a false blame, one below it is not
        in_top = [r for r in scored.harmless_ranks if r is not None and r <= scored.k]
        names = [" <-> ".join(f"{e['name']}[{e['port']}]" for e in h["ends"])
                 for h in truth["harmless_links"]]
        assert len([b for b in scored.false_blames
                    if any(set(b.split(" <-> ")) == set(n.split(" <-> ")) for n in names)]
                   ) == len(in_top)
    assert sum(r or 99 for r in score.harmless_ranks) > sum(r or 99 for r in before.harmless_ranks)


def test_a_host_cables_long_flaps_while_its_host_ran_no_job_weigh_as_flaps_only(
        harmless: tuple[dict[str, Any], Evidence, Path]) -> None:
    """Seed 18: the harmless cable of node-019 goes down for minutes twice while sacct shows no
    job on node-019 (issue #23). Such flaps count as flaps, not long flaps, and add no
    downtime: a link that killed a job ranks above them."""
    truth, ev, folder = harmless
    since = utc_naive(parse_instant(truth["window_start"]))
    until = utc_naive(parse_instant(truth["window_end"]))
    idle = {k: le for k, le in ev.links.items() if le.idle_flaps}
    assert idle
    with Store(folder / "a.duckdb", read_only=True) as store:
        # sacct names the hosts as the fabric does here: a host's jobs are asked for by its
        # own name
        named = store.job_host_names()
        assert set(named) <= {n.name for n in ev.fabric.nodes.values()
                              if n.node_type == NodeType.HCA}
        for le in idle.values():
            (host,) = {ev.fabric.nodes[g].name for g, _ in le.link
                       if ev.fabric.nodes[g].node_type == NodeType.HCA}
            assert host in named
            for f in le.idle_flaps:
                assert f in le.flaps and f.down_at is not None and f.up_at is not None
                assert (f.duration_s or 0) > 34  # longer than any default NCCL waits
                assert store.jobs_on_hosts_during(since, until,
                                                  [(0, f.down_at, f.up_at, host)]) == []
    cable = next(h for h in truth["harmless_links"] if h["link"].startswith("node-019/"))
    assert [len(c) for c in cable["crossed_by"]][:2] == [0, 0]
    suspects = {_key(s["ends"]): s for s in as_json(ev, rank(ev))["suspects"]}
    mine = suspects[_key(cable["ends"])]
    assert any(line.startswith("2 of its long flap(s) came while its host ran no job")
               for line in mine["evidence"])
    killers = [s for s in suspects.values() if s["jobs_failed"]
               and s["component"] not in ("switch", "host")]
    assert killers and all(k["rank"] < mine["rank"] for k in killers)
    # Without the job that crossed its third flap and lived (which takes its flaps down to
    # what absorbed ones weigh), the idle flaps still weigh less than long ones.
    le = next(le for k, le in idle.items() if _key(mine["ends"]) == frozenset(
        (ev.fabric.nodes[g].name, p) for g, p in k))
    kept = le.healthy, le.idle_flaps
    try:
        le.healthy = []
        with_idle = {_key(s["ends"]): s for s in as_json(ev, rank(ev))["suspects"]}
        le.idle_flaps = []
        without = {_key(s["ends"]): s for s in as_json(ev, rank(ev))["suspects"]}
    finally:
        le.healthy, le.idle_flaps = kept
    assert with_idle[_key(cable["ends"])]["score"] < without[_key(cable["ends"])]["score"]
