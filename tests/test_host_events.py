"""Issue #20: a host that goes away is not a cable.

On a rail-optimised fabric simulated by ibsim and read with the real ibnetdiscover (several HCAs
per host, each its own node), a host's rails going down together are one `host` suspect whose
jobs died with it, not N cable suspects; a single rail's flap stays a cable; NODE_FAIL jobs are
their host's, not the network's; a job's peers on several rails losing one silent host give that
host the vote; an HCA's counters restarting is boot evidence, not new errors; a single-rail
host's long flap with no host records stays a cable whose evidence says what would settle it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.analyse import hosts
from auditor.analyse.correlate import gather
from auditor.analyse.rank import as_json, rank
from auditor.cli import app
from auditor.config import RankingSettings
from auditor.ingest.captures import ingest_files
from auditor.ingest.common import LogOptions
from auditor.ingest.jobs import JobOptions, ingest_job_files
from auditor.ingest.logs import ingest_logs
from auditor.models import CounterTable, HostEvent
from auditor.simulate import ibsim
from auditor.store import SourceMeta, Store

pytestmark = pytest.mark.skipif(not ibsim.available(), reason=ibsim.unavailable_reason() or "")

runner = CliRunner()
# 2 groups of 4 rails: 8 leaves, 3 hosts per group, 4 HCAs each (gpu-node-1..6)
TREE = ibsim.FatTree(spines=2, leaves=8, hosts_per_leaf=3, rails=4)
T0 = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)
SINCE, UNTIL = T0 - timedelta(hours=1), T0 + timedelta(hours=3)


@pytest.fixture(scope="module")
def ibnetdiscover(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("rails")
    with ibsim.IbSim(ibsim.write_net_file(TREE), tmp) as sim:
        return sim.run("ibnetdiscover").stdout


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _flap_lines(host: int, rails: list[int], down: datetime, seconds: float) -> list[str]:
    """What each rail's leaf logs when `host`'s HCAs on `rails` go down and come back."""
    out = []
    for r in rails:
        leaf, port = TREE.host_attachment(host, r)
        name = TREE.leaf_name(leaf)
        at = down + timedelta(milliseconds=150 * r)
        out.append(f"{_stamp(at)} {name} mgmtd[4128]: [mgmtd.NOTICE]: Interface IB1/{port} "
                   "changed state to DOWN")
        out.append(f"{_stamp(at + timedelta(seconds=seconds))} {name} mgmtd[4128]: "
                   f"[mgmtd.NOTICE]: Interface IB1/{port} changed state to UP")
    return out


def _sacct(rows: list[tuple[str, str, datetime, datetime, str]]) -> str:
    out = ["JobID|JobName|State|Start|End|NodeList"]
    out += [f"{job}|train|{state}|{s:%Y-%m-%dT%H:%M:%S}|{e:%Y-%m-%dT%H:%M:%S}|{nodes}"
            for job, state, s, e, nodes in rows]
    return "\n".join(out) + "\n"


def _build(tmp: Path, ibnetdiscover: str, log: list[str], sacct: str,
           joblogs: dict[str, str] | None = None) -> Path:
    db = tmp / "a.duckdb"
    (tmp / "ibnetdiscover.txt").write_text(ibnetdiscover)
    (tmp / "switches.log").write_text("\n".join(sorted(log)) + "\n")
    (tmp / "sacct.txt").write_text(sacct)
    with Store(db) as store:
        ingest_files(store, [tmp / "ibnetdiscover.txt"], at=T0 - timedelta(hours=2))
        ingest_logs(store, [tmp / "switches.log"], "syslog", LogOptions(), now=UNTIL)
        ingest_job_files(store, [tmp / "sacct.txt"], "sacct", JobOptions())
        for job, text in (joblogs or {}).items():
            (tmp / f"{job}.log").write_text(text)
            ingest_job_files(store, [tmp / f"{job}.log"], "joblog", JobOptions(job=job))
    return db


def _rank(db: Path, cfg: RankingSettings | None = None) -> dict:
    with Store(db, read_only=True) as store:
        ev = gather(store, SINCE.replace(tzinfo=None), UNTIL.replace(tzinfo=None), cfg)
    return as_json(ev, rank(ev, cfg))


def _host(n: int) -> str:
    return TREE.host_name(n)


def test_hcas_of_a_host_are_grouped_by_name_not_guid(ibnetdiscover: str, tmp_path: Path) -> None:
    db = _build(tmp_path, ibnetdiscover, [], _sacct([]))
    with Store(db, read_only=True) as store:
        fabric = store.latest_fabric()
        assert fabric is not None
        peers = store.port_peers(UNTIL.replace(tzinfo=None))
        found = hosts.rails(fabric, peers)
    assert sorted(found.ports) == [_host(h) for h in range(1, TREE.hosts + 1)]
    for h in range(1, TREE.hosts + 1):
        # four HCAs, four node GUIDs, one host
        assert found.hcas[_host(h)] == [f"0x{TREE.host_guid(h, r):016x}" for r in range(4)]
        assert len(found.ports[_host(h)]) == 4


def test_all_rails_down_together_is_one_host_suspect(ibnetdiscover: str, tmp_path: Path) -> None:
    down = T0 + timedelta(minutes=30)
    log = _flap_lines(2, [0, 1, 2, 3], down, 260)
    # A real cable fault elsewhere: one rail of host 5 down for two minutes.
    log += _flap_lines(5, [1], T0 + timedelta(minutes=90), 120)
    sacct = _sacct([("101", "NODE_FAIL", T0, down + timedelta(seconds=330),
                     f"{_host(1)},{_host(2)}"),
                    ("102", "COMPLETED", T0, T0 + timedelta(hours=2), _host(3))])
    data = _rank(_build(tmp_path, ibnetdiscover, log, sacct))
    kinds = [(s["component"], [e["name"] for e in s["ends"]]) for s in data["suspects"]]
    host = [s for s in data["suspects"] if s["component"] == "host"]
    assert [s["ends"][0]["name"] for s in host] == [_host(2)], kinds
    assert "4 of its 4 rails went down within 30 s" in host[0]["evidence"][0]
    assert host[0]["jobs_failed"] == 1 and "do not replace its cables" in host[0]["action"]
    assert host[0]["rules"][0] == "killed_job" and "host_event" in host[0]["rules"]
    # None of host 2's rail cables is a suspect; host 5's one rail is.
    cables = [s for s in data["suspects"] if s["component"] != "host"]
    assert not any(_host(2) in [e["name"] for e in s["ends"]] for s in cables)
    assert any(_host(5) in [e["name"] for e in s["ends"]] for s in cables)
    assert data["jobs"] == {"failed": 1, "network": 0, "other_causes": 0, "unexplained": 0,
                            "killed_by_host": 1}


def test_a_missing_rail_does_not_hide_the_host(ibnetdiscover: str, tmp_path: Path) -> None:
    """One rail's leaf logged nothing (its syslog lost): 3 of 4 rails is still most."""
    log = _flap_lines(4, [0, 2, 3], T0 + timedelta(minutes=40), 200)
    data = _rank(_build(tmp_path, ibnetdiscover, log, _sacct([])))
    assert [s["component"] for s in data["suspects"]] == ["host"]
    # two of four is not most: two cables (the fraction is a setting)
    (tmp_path / "two").mkdir()
    log = _flap_lines(4, [0, 2], T0 + timedelta(minutes=40), 200)
    db = _build(tmp_path / "two", ibnetdiscover, log, _sacct([]))
    assert sorted(s["component"] for s in _rank(db)["suspects"]) == ["cable", "cable"]
    loose = RankingSettings(host_event_fraction=0.5)
    assert [s["component"] for s in _rank(db, loose)["suspects"]] == ["host"]


def test_a_single_rail_flap_with_node_fail_is_the_host(tmp_path: Path) -> None:
    """A single-rail host: its one cable down for minutes and a job on it ending NODE_FAIL
    within slurmctld's notice is the host; without the NODE_FAIL it stays a cable whose evidence
    says a reboot would look the same and which capture settles it."""
    tree = ibsim.FatTree(spines=2, leaves=2, hosts_per_leaf=2)
    with ibsim.IbSim(ibsim.write_net_file(tree), tmp_path / "sim") as sim:
        text = sim.run("ibnetdiscover").stdout
    leaf, port = tree.host_attachment(3)
    down = T0 + timedelta(minutes=20)
    log = [f"{_stamp(down)} {tree.leaf_name(leaf)} mgmtd[1]: [mgmtd.NOTICE]: Interface "
           f"IB1/{port} changed state to DOWN",
           f"{_stamp(down + timedelta(seconds=250))} {tree.leaf_name(leaf)} mgmtd[1]: "
           f"[mgmtd.NOTICE]: Interface IB1/{port} changed state to UP"]
    (tmp_path / "a").mkdir()
    failed = _sacct([("7", "NODE_FAIL", T0, down + timedelta(seconds=310),
                      f"{tree.host_name(3)},{tree.host_name(4)}")])
    data = _rank(_build(tmp_path / "a", text, log, failed))
    assert [s["component"] for s in data["suspects"]] == ["host"]
    assert "NODE_FAIL" in " ".join(data["suspects"][0]["evidence"])
    assert data["jobs"]["killed_by_host"] == 1 and data["jobs"]["network"] == 0
    (tmp_path / "b").mkdir()
    data = _rank(_build(tmp_path / "b", text, log, _sacct([])))
    assert [s["component"] for s in data["suspects"]] == ["cable"]
    said = " ".join(data["suspects"][0]["evidence"])
    assert "a reboot or crash of" in said and "journalctl --list-boots" in said


def test_host_records_make_a_single_rail_flap_a_host_event(tmp_path: Path) -> None:
    """A boot recorded while the link was down (or Slurm setting the node DOWN just after)."""
    tree = ibsim.FatTree(spines=2, leaves=2, hosts_per_leaf=2)
    with ibsim.IbSim(ibsim.write_net_file(tree), tmp_path / "sim") as sim:
        text = sim.run("ibnetdiscover").stdout
    leaf, port = tree.host_attachment(2)
    down = T0 + timedelta(minutes=50)
    log = [f"{_stamp(down)} {tree.leaf_name(leaf)} mgmtd[1]: [mgmtd.NOTICE]: Interface "
           f"IB1/{port} changed state to DOWN",
           f"{_stamp(down + timedelta(seconds=300))} {tree.leaf_name(leaf)} mgmtd[1]: "
           f"[mgmtd.NOTICE]: Interface IB1/{port} changed state to UP"]
    for n, event in enumerate([
            HostEvent(tree.host_name(2), down + timedelta(seconds=95), "boot", line_no=1),
            HostEvent(tree.host_name(2).upper(), down + timedelta(seconds=301), "down",
                      reason="Not responding", line_no=1)]):
        folder = tmp_path / f"r{n}"
        folder.mkdir()
        db = _build(folder, text, log, _sacct([]))
        with Store(db) as store, store.transaction():
            kind = "boots" if event.kind == "boot" else "slurm-events"
            sid = store.add_source(SourceMeta(kind, "records", f"{n:064x}", "file", UNTIL, False,
                                              1, 0, 1))
            store.add_host_events(sid, [event])
        data = _rank(db, RankingSettings())
        assert [s["component"] for s in data["suspects"]] == ["host"], n
        said = " ".join(data["suspects"][0]["evidence"])
        assert ("booted at" in said) if n == 0 else ("Slurm: set DOWN" in said), said
        if n == 0:
            assert "rebooted at" in data["suspects"][0]["action"]


def _nccl_line(host: str, dev: str, peer_ip: str, rank: int) -> str:
    return (f"{host}:1234:1300 [{rank}] transport/net_ib.cc:1696 NCCL WARN NET/IB : "
            f"Got completion from peer {peer_ip}<40321> with status=12 opcode=0 len=0 "
            f"vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:{peer_ip} hca "
            f"{dev}")


def test_peers_on_several_rails_losing_one_silent_host_vote_for_the_host(
        ibnetdiscover: str, tmp_path: Path) -> None:
    """No switch saw the host's rails go (every leaf's log lost): the job's peers on three
    rails lost host 2, whose own ranks said nothing. The host gets the job, not the cables."""
    down = T0 + timedelta(minutes=30)
    hosts_file = "\n".join(f"10.0.0.{h}\t{_host(h)}" for h in range(1, TREE.hosts + 1)) + "\n"
    (tmp_path / "hosts").write_text(hosts_file)
    at = down + timedelta(seconds=25)
    lines = [f"[{at:%Y-%m-%d %H:%M:%S}] " + _nccl_line(_host(h), f"mlx5_{r}", "10.0.0.2",
                                                        8 * h + r)
             for h in (1, 3) for r in (0, 1, 2)]
    sacct = _sacct([("201", "FAILED", T0, down + timedelta(seconds=90),
                     f"{_host(1)},{_host(2)},{_host(3)}")])
    db = _build(tmp_path, ibnetdiscover, [], sacct, {"201": "\n".join(lines) + "\n"})
    with Store(db) as store, store.transaction():
        ingest_job_files(store, [tmp_path / "hosts"], "hosts", JobOptions())
    data = _rank(db)
    assert [s["component"] for s in data["suspects"]] == ["host"], data["suspects"]
    assert data["suspects"][0]["ends"][0]["name"] == _host(2)
    assert "its peers on 3 rails" in " ".join(data["suspects"][0]["evidence"])
    assert data["jobs"]["killed_by_host"] == 1 and data["jobs"]["network"] == 0


def test_hca_counter_restart_is_boot_evidence_not_new_errors(ibnetdiscover: str,
                                                            tmp_path: Path) -> None:
    """Host 6's HCA counters read 5 link-downs and 40 symbol errors, then restart from 0 and
    read 1 and 3: a restart across its flap (a reboot), and the 1 and 3 are no new errors."""
    down = T0 + timedelta(minutes=70)
    log = _flap_lines(6, [2], down, 200)  # one rail's leaf logged it
    db = _build(tmp_path, ibnetdiscover, log, _sacct([]))
    with Store(db) as store, store.transaction():
        for n, (at, downs, symbols) in enumerate([(T0, 5, 40), (T0 + timedelta(hours=2), 1, 3)]):
            rows = [(f"0x{TREE.host_guid(6, r):016x}", 1, name, value) for r in range(4)
                    for name, value in (("LinkDownedCounter", downs),
                                        ("SymbolErrorCounter", symbols))]
            sid = store.add_source(SourceMeta("ibqueryerrors", f"c{n}", f"{n + 7:064x}",
                                              "file", at, True, 1, 0, len(rows)))
            store.add_counters(sid, at, CounterTable.from_rows(rows))
    data = _rank(db)
    assert [s["component"] for s in data["suspects"]] == ["host"], data["suspects"]
    assert "HCA counters restarted" in " ".join(data["suspects"][0]["evidence"])
    assert data["suspects"][0]["flaps"] == 1


@pytest.fixture
def cli_db(ibnetdiscover: str, tmp_path: Path) -> Path:
    log = _flap_lines(1, [0, 1, 2, 3], T0 + timedelta(minutes=10), 240)
    return _build(tmp_path, ibnetdiscover, log, _sacct([]))


def test_suspects_cli_shows_the_host_and_keeps_the_job_keys(cli_db: Path) -> None:
    res = runner.invoke(app, ["--db", str(cli_db), "suspects", "--since", "4h", "--until",
                              UNTIL.isoformat(), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"failed", "network", "other_causes", "unexplained", "killed_by_host"} == set(
        data["jobs"])
    assert [s["component"] for s in data["suspects"]] == ["host"]
    assert data["suspects"][0]["ends"] == [{"name": _host(1), "guid":
                                            f"0x{TREE.host_guid(1, 0):016x}", "port": None,
                                            "label": ""}]


def test_a_host_is_its_name_never_a_shared_model_string() -> None:
    """HCAs whose description was never set print their model, which many hosts share: each is
    a host of its own. `[aliases]` joins two spellings of one host when both are HCA names."""
    names = {"dgx0014", "dgx0014-ib", "MT4123 ConnectX6   Mellanox Technologies"}
    assert hosts.host_key("MT4123 ConnectX6   Mellanox Technologies", "0xa", {}, names) == "0xa"
    assert hosts.host_key("", "0xb", {}, names) == "0xb"
    assert hosts.host_key("dgx0014-ib", "0xc", {"dgx0014-ib": "dgx0014"}, names) == "dgx0014"
    # an alias to a name no HCA has does not invent a host
    assert hosts.host_key("dgx0014-ib", "0xc", {"dgx0014-ib": "nope"}, names) == "dgx0014-ib"
