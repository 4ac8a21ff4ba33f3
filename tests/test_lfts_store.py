"""Forwarding tables stored and used (issue #23): `ingest --kind lfts` of every format, the
history kept as changes only (captures out of order included), `routes_at` against the routes
`analyse.paths` traces in the same dump directly, the reroutes between captures, and `auditor
path` both ways with its errors. On a generated `lfts` scenario (its `dump_lfts.sh` captures,
the subnet manager's reroutes around long flaps) and the parsers' fixtures."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from itertools import permutations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.analyse.paths import Routes, end_ports
from auditor.analyse.routing import lost_routes, reroutes, routes_at, routes_from
from auditor.cli import app
from auditor.ingest.captures import ingest_files, stored_tables
from auditor.models import NO_ROUTE
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.lfts import parse_lfts
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.ibsim import FatTree, FatTree3
from auditor.simulate.lfts import dmodk_tables, fabric_links, hca_ends
from auditor.simulate.scenario import generate
from auditor.store import Store
from tests.conftest import FIXTURES

OPTIONS: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 4, "frequent_flappers": 2,
                           "rare_flappers": 4, "lfts": True}
T0 = datetime(2026, 11, 30, 6, tzinfo=UTC)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path]:
    """A small fat tree's scenario with its forwarding tables, loaded into a database."""
    root = tmp_path_factory.mktemp("lftstore")
    generate(root / "sc", seed=3, **OPTIONS)
    truth = load_scenario(root / "sc", root / "sc.duckdb")
    assert any(c["reason"] == "reroute" for c in truth["lft_captures"])
    return root / "sc", truth, root / "sc.duckdb"


def _cli(db: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--db", str(db), *args])


def _stored(path: Path) -> dict[str, bytes]:
    return {t.guid: t.ports for t in stored_tables(parse_lfts(path.read_text()).switches)}


# ------------------------------------------------------------------------- ingest


@pytest.mark.parametrize("case", ["dump_lfts/ibsim_2tier_minhop_sh_trailer.txt",
                                  "dump_lfts/ibroute_stale_unknown_node_and_type.txt",
                                  "opensm_lfts/ibsim_3tier_ftree.txt",
                                  "opensm_fdbs/ibsim_2tier_minhop.txt"])
def test_every_format_is_ingested_as_lfts_once(tmp_path: Path, case: str) -> None:
    db = tmp_path / "a.duckdb"
    path = FIXTURES / case
    res = _cli(db, "ingest", "--at", "2026-11-30T06:00:00Z", "--format", "json", str(path))
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    tables = parse_lfts(path.read_text()).switches
    assert (row["kind"], row["status"], row["records"]) == ("lfts", "ingested", len(tables))
    again = _cli(db, "ingest", "--kind", "lfts", "--at", "2026-11-30T06:00:00Z", "--format",
                 "json", str(path))
    assert json.loads(again.stdout)[0]["status"] == "already ingested"
    with Store(db, read_only=True) as store:
        assert store.lft_captures_span()[0] == 1
        back = {t.guid: t.ports for t in store.lft_tables_at(T0)}
    assert back == _stored(path)
    # the blob holds the table: DLID -> out port, no route elsewhere
    for t in tables:
        row_ports = np.frombuffer(back[t.guid], dtype=np.uint8)
        assert {d: int(p) for d, p in enumerate(row_ports) if p != NO_ROUTE} == t.ports


def test_bad_input_is_one_line_naming_file_and_line_and_nothing_is_stored(
        tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    text = (FIXTURES / "dump_lfts/ibsim_2tier_minhop_sh_trailer.txt").read_text()
    lines = text.splitlines(keepends=True)
    cut = tmp_path / "cut.txt"  # the first table's totals say more entries than printed
    cut.write_text("".join(lines[:6] + [ln for ln in lines[6:] if "valid lids dumped" in ln
                                         or not ln.startswith("0x")][:1] + lines[20:]))
    res = _cli(db, "ingest", "--kind", "lfts", str(cut))
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert re.match(rf"error: {re.escape(str(cut))}:\d+: ", line), line
    other = tmp_path / "notes.txt"
    other.write_text("this is no table\n")
    res = _cli(db, "ingest", "--kind", "lfts", str(other))
    assert res.exit_code == 2
    assert res.stderr.strip() == (f"error: {other}:1: lfts: not a forwarding-table dump "
                                  "(dump_lfts.sh, ibroute, opensm-lfts.dump or opensm.fdbs): "
                                  "'this is no table'")
    with Store(db, read_only=True) as store:
        assert store.lft_captures_span()[0] == 0 and store.sources() == []


def test_history_keeps_changes_only_whatever_the_order(
        scenario: tuple[Path, dict[str, Any], Path], tmp_path: Path) -> None:
    folder, truth, _ = scenario
    caps = truth["lft_captures"]
    first = folder / caps[0]["file"]
    moved = folder / next(c["file"] for c in caps if c["reason"] == "reroute")
    a, b = _stored(first), _stored(moved)
    changed = {g for g in a if a[g] != b[g]}
    assert 0 < len(changed) < len(a)
    t1, t2, t3 = T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)
    with Store(tmp_path / "h.duckdb") as store:
        ingest_files(store, [first], kind="lfts", at=t1)
        ingest_files(store, [first], kind="lfts", at=t3)  # unchanged: nothing stored
        assert len(store.lft_changes(t1 - timedelta(1), t3)) == len(a)
        # then the capture taken between them, ingested last: t3 keeps the tables it saw
        ingest_files(store, [moved], kind="lfts", at=t2)
        seen = {t: {s.guid: s.ports for s in store.lft_tables_at(t)} for t in (t1, t2, t3)}
        rows = store._con.execute(
            "select captured_at, count(*) from lft_switches group by 1 order by 1").fetchall()
        moves = reroutes(store, t1, t3)
    assert seen == {t1: a, t2: b, t3: a}
    assert [n for _, n in rows] == [len(a), len(changed), len(changed)]
    # the reroute at t2 and its undoing at t3, each from the capture before it
    assert {(r.at, r.before) for r in moves} == {(t2.replace(tzinfo=None), t1.replace(
        tzinfo=None)), (t3.replace(tzinfo=None), t2.replace(tzinfo=None))}
    assert {r.switch for r in moves} == changed


def test_lost_routes_counts_each_port_left() -> None:
    old = bytes([NO_ROUTE, 0, 1, 1, 2, 3, 3])
    new = bytes([NO_ROUTE, 0, 4, 1, 2, 4, NO_ROUTE, 5])
    assert lost_routes(old, new) == {1: {4: 1}, 3: {4: 1, NO_ROUTE: 1}}
    assert lost_routes(old, old) == {}


# ------------------------------------------------------------------------- routes_at


def test_routes_at_are_the_paths_of_the_capture_in_effect(
        scenario: tuple[Path, dict[str, Any], Path]) -> None:
    folder, truth, db = scenario
    topo = parse_ibnetdiscover((folder / "topology" / "ibnetdiscover.txt").read_text())
    with Store(db, read_only=True) as store:
        assert routes_at(store, _at(truth["lft_captures"][0]["at"]) - timedelta(seconds=1)) \
            is None
        for cap in truth["lft_captures"]:
            at = _at(cap["at"])
            stored = routes_at(store, at + timedelta(seconds=30))
            assert stored is not None
            dump = parse_lfts((folder / cap["file"]).read_text())
            direct = Routes(topo.links, dump.switches, end_ports(topo, dump.owners))
            # the snapshot's links are the capture's (the snapshot's own GUID keys)
            assert sorted(stored.ends) == sorted(direct.ends)
            for src, dst in permutations(sorted(direct.ends), 2):
                one, other = stored.routes(src, dst)[0], direct.routes(src, dst)[0]
                assert (one.status, one.hops, one.dest) == (other.status, other.hops, other.dest)
            every = sorted(direct.ends)
            assert {str(k) for k in stored.links_of(stored.crossed(every).link_ids)} == \
                {str(k) for k in direct.links_of(direct.crossed(every).link_ids)}


def test_no_tables_no_routes(tmp_path: Path) -> None:
    with Store(tmp_path / "e.duckdb") as store:
        ingest_files(store, [FIXTURES / "paths/ibsim_3tier_ftree/ibnetdiscover-p.txt"], at=T0)
        assert routes_at(store, T0) is None
        assert reroutes(store, T0 - timedelta(days=1), T0) == []


@pytest.mark.parametrize("tree", [FatTree(4, 8, 4, rails=2), FatTree3(pods=2, leaves_per_pod=4, spines_per_pod=4, cores=8, hosts_per_leaf=2, rails=2)],
                         ids=["2-tier", "3-tier"])
def test_routes_from_arrays_are_the_routes_from_tables(tree: FatTree | FatTree3) -> None:
    links, tables, ends = fabric_links(tree), dmodk_tables(tree), hca_ends(tree)
    direct = Routes(links, tables, ends)
    from auditor.models import Fabric, FabricNode, NodeType, Port

    fabric = Fabric(seen_at=T0, links=links)
    for e in ends:
        fabric.nodes[e.guid] = FabricNode(e.guid, NodeType.HCA, "", e.guid)
        fabric.ports[(e.guid, e.port)] = Port(e.guid, e.port, lid=e.lid)
    for t in tables:
        fabric.nodes[t.guid] = FabricNode(t.guid, NodeType.SWITCH, t.description, t.guid)
    rows = stored_tables(tables)
    stored = routes_from(fabric, rows)
    every = sorted(direct.ends)
    assert np.array_equal(stored.crossed(every).link_ids, direct.crossed(every).link_ids)
    assert np.array_equal(stored.crossed(every, adaptive=True).link_ids,
                          direct.crossed(every, adaptive=True).link_ids)
    for src, dst in list(permutations(every, 2))[::7]:
        one, other = stored.routes(src, dst)[0], direct.routes(src, dst)[0]
        assert one == other
        assert stored.widen(one) == direct.widen(other)
    assert dict(stored.tables[tables[0].guid].ports) == tables[0].ports


# ------------------------------------------------------------------------- reroutes


def test_a_reroute_names_the_link_the_sm_routed_around(
        scenario: tuple[Path, dict[str, Any], Path]) -> None:
    _, truth, db = scenario
    start, end = _at(truth["window_start"]), _at(truth["window_end"])
    with Store(db, read_only=True) as store:
        moves = reroutes(store, start - timedelta(days=1), end)
        names = {g: n.name for g, n in store.latest_fabric().nodes.items()}  # type: ignore[union-attr]
    for cap in truth["lft_captures"]:
        if cap["reason"] != "reroute":
            continue
        at = _at(cap["at"]).replace(tzinfo=None)
        left = {frozenset({f"{names[r.link.a_guid]}:{r.link.a_port}",
                           f"{names[r.link.b_guid]}:{r.link.b_port}"})
                for r in moves if r.at == at and r.link is not None}
        for link in cap["avoids"]:
            assert frozenset(link.split("=")) in left, (cap["file"], link)


# ------------------------------------------------------------------------- auditor path


def _hosts(store: Store) -> dict[str, tuple[str, int]]:
    fabric = store.latest_fabric()
    assert fabric is not None
    return {n.name: (g, 1) for g, n in fabric.nodes.items() if n.name.startswith("node-")}


def test_path_prints_both_directions_as_the_routes_go(
        scenario: tuple[Path, dict[str, Any], Path]) -> None:
    _, truth, db = scenario
    cap = next(c for c in truth["lft_captures"] if c["reason"] == "reroute")
    at = _at(cap["at"]) + timedelta(seconds=5)
    with Store(db, read_only=True) as store:
        routes = routes_at(store, at)
        hosts = _hosts(store)
    assert routes is not None
    a, b = "node-001", sorted(hosts)[-1]
    res = _cli(db, "path", a, b, "--at", at.isoformat(), "--since", "7d", "--format", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [(d["from"], d["to"]) for d in data["directions"]] == [(a, b), (b, a)]
    for d, (src, dst) in zip(data["directions"], ((a, b), (b, a)), strict=True):
        route = routes.routes(hosts[src], hosts[dst])[0]
        assert d["status"] == "ok" and d["dlid"] == route.dlid
        assert [(h["guid"], h["in_port"], h["out_port"]) for h in d["hops"][1:]] == [
            (h.switch, h.in_port, h.out_port) for h in route.hops]
        cables = [{(e["guid"], e["port"]) for e in h["link"]["ends"]} for h in d["hops"]]
        assert cables == [{(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)}
                          for lk in route.links]
    table = _cli(db, "path", a, b, "--at", at.isoformat())
    assert table.exit_code == 0 and f"{a} -> {b}" in table.stdout and "IB1/" in table.stdout


def test_path_counts_a_cables_flaps_in_the_window(
        scenario: tuple[Path, dict[str, Any], Path]) -> None:
    """A host pair whose route crossed a link that went down shows that link's flap on the
    hop that crosses it (the tables still the old ones: the SM reroutes a second later)."""
    _, truth, db = scenario
    flap = next(r for r in truth["reroutes"] if r["captures"])
    at = _at(flap["down_at"]) + timedelta(milliseconds=500)
    leaf, spine = (end.split(":") for end in flap["link"].split("="))
    ends = {(leaf[0], int(leaf[1])), (spine[0], int(spine[1]))}
    with Store(db, read_only=True) as store:
        routes = routes_at(store, at)
        hosts = _hosts(store)
        names = {g: n.name for g, n in store.latest_fabric().nodes.items()}  # type: ignore[union-attr]
    assert routes is not None
    crossing = [(a, b) for a, b in permutations(sorted(hosts), 2)
                if any({(names[lk.a_guid], lk.a_port), (names[lk.b_guid], lk.b_port)} == ends
                       for lk in routes.routes(hosts[a], hosts[b])[0].links)]
    assert crossing
    a, b = crossing[0]
    res = _cli(db, "path", a, b, "--at", at.isoformat(), "--since", "1h", "--format", "json")
    hops = json.loads(res.stdout)["directions"][0]["hops"]
    flapped = [h for h in hops if h["link"]["flaps"]]
    assert len(flapped) == 1
    assert {(e["name"], e["port"]) for e in flapped[0]["link"]["ends"]} == ends
    assert flapped[0]["link"]["last_down"] is not None
    # a window that ends before the flap shows none
    earlier = _cli(db, "path", a, b, "--at", (at - timedelta(minutes=5)).isoformat(),
                   "--since", "1h", "--format", "json")
    assert not any(h["link"]["flaps"] for d in json.loads(earlier.stdout)["directions"]
                   for h in d["hops"])


def test_path_errors_are_one_line(scenario: tuple[Path, dict[str, Any], Path],
                                  tmp_path: Path) -> None:
    folder, _, db = scenario
    res = _cli(db, "path", "node-001", "no-such-host")
    assert res.exit_code == 2
    assert res.stderr.strip() == ("error: 'no-such-host': no host, HCA or GUID of that name "
                                  "with a LID in the topology snapshot")
    res = _cli(db, "path", "node-001", "node-002", "--rail", "1")
    assert res.exit_code == 2 and "--rail 1 is none of them" in res.stderr
    res = _cli(db, "path", "node-001", "node-002", "--at", "2020-01-01T00:00:00Z")
    assert res.exit_code == 2 and "no forwarding tables captured at or before 2020-01-01" \
        in res.stderr
    empty = tmp_path / "e.duckdb"
    _cli(empty, "ingest", str(folder / "topology" / "ibnetdiscover.txt"))
    res = _cli(empty, "path", "node-001", "node-002")
    assert res.exit_code == 2 and res.stderr.startswith(
        "error: no forwarding tables are stored; ingest")
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_routing_loop_is_refused_with_exit_1(scenario: tuple[Path, dict[str, Any], Path],
                                               tmp_path: Path) -> None:
    """The spine on node-001's route to another leaf's host is made to send the DLID back
    down to the leaf it came from: the leaf sends it up again, for ever."""
    folder, truth, _ = scenario
    db = tmp_path / "loop.duckdb"
    cap = truth["lft_captures"][0]
    topo_at = _at(truth["topology_at"])
    with Store(db) as store:
        ingest_files(store, [folder / "topology" / "ibnetdiscover.txt"], at=topo_at)
        ingest_files(store, [folder / cap["file"]], kind="lfts", at=_at(cap["at"]))
        routes = routes_at(store, _at(cap["at"]))
        hosts = _hosts(store)
    assert routes is not None
    b = next(h for h in sorted(hosts, reverse=True)
             if len(routes.routes(hosts["node-001"], hosts[h])[0].hops) == 3)
    route = routes.routes(hosts["node-001"], hosts[b])[0]
    spine = route.hops[1]
    text = (folder / cap["file"]).read_text()
    head = text.index(f"guid {spine.switch} (")
    entry = re.compile(rf"^0x{route.dlid:04x} \d{{3}}", re.MULTILINE)
    m = entry.search(text, head)
    assert m is not None
    edited = tmp_path / "loop.txt"
    edited.write_text(text[:m.start()] + f"0x{route.dlid:04x} {spine.in_port:03d}"
                      + text[m.end():])
    later = _at(cap["at"]) + timedelta(seconds=10)
    with Store(db) as store:
        ingest_files(store, [edited], kind="lfts", at=later)
    res = _cli(db, "path", "node-001", b, "--at", later.isoformat())
    assert res.exit_code == 1
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"error: node-001 -> {b}: loop: DLID {route.dlid} comes back to "
                           "switch")
    assert f"node-001 -> {b} (DLID {route.dlid}): LOOP" in " ".join(res.stdout.split())


# ------------------------------------------------------------------------- the report's plot


def test_the_neighbourhood_plot_shows_the_failed_jobs_routes_through_the_suspect(
        scenario: tuple[Path, dict[str, Any], Path]) -> None:
    from auditor.analyse.audit import audit
    from auditor.report.build import build_report
    from auditor.report.html import render_html

    _, truth, db = scenario
    since = _at(truth["window_start"]).replace(tzinfo=None)
    until = _at(truth["window_end"]).replace(tzinfo=None)
    with Store(db, read_only=True) as store:
        result = audit(store, since, until, judge=False)
        routes = {f.rank: routes_at(store, f.jobs[0]["died_at"]) for f in result.findings
                  if f.jobs}
    shown = [f for f in result.findings if f.neighbourhood.paths]
    assert shown, "no suspect link with a failed job's route through it"
    for f in shown:
        cable = frozenset((e["guid"], e["port"]) for e in f.suspect.ends)
        assert {j["job_id"] for j in f.jobs} >= {p.job_id for p in f.neighbourhood.paths}
        ids = {n.guid for n in f.neighbourhood.nodes}
        for p in f.neighbourhood.paths:
            assert cable in [frozenset({(a, pa), (b, pb)}) for a, pa, b, pb in p.cables]
            assert {g for a, _, b, _ in p.cables for g in (a, b)} <= ids
            # the cables in order, each leaving the node the one before arrived at
            assert all(p.cables[i][2] == p.cables[i + 1][0] for i in range(len(p.cables) - 1))
            assert p.cables[0][0] != p.cables[-1][2]
        suspect = next(e for e in f.neighbourhood.edges if e.suspect)
        assert set(suspect.jobs) == {p.job_id for p in f.neighbourhood.paths}
        assert routes[f.rank] is not None
    report = build_report(result)
    hood = report["neighbourhoods"][str(shown[0].rank)]
    assert hood["paths"] and any(e["jobs"] for e in hood["edges"] if not e["suspect"])
    page = render_html(report)
    assert "#f29900" in page and "route(s) of the failed jobs through it" in page
    # without tables the same audit has no paths
    assert all(not f.neighbourhood.paths for f in _audit_without_tables(truth, db))


def _audit_without_tables(truth: dict[str, Any], db: Path) -> list[Any]:
    from auditor.analyse.audit import audit

    plain = db.with_name("plain.duckdb")
    if not plain.exists():
        load_scenario(db.with_name("sc"), plain, lfts=False)
    since = _at(truth["window_start"]).replace(tzinfo=None)
    until = _at(truth["window_end"]).replace(tzinfo=None)
    with Store(plain, read_only=True) as store:
        return audit(store, since, until, judge=False).findings


def test_the_routing_snapshot_is_the_fabrics_links_and_ca_lids(
        scenario: tuple[Path, dict[str, Any], Path], tmp_path: Path) -> None:
    """Read from the cached columns (the newest snapshot) or the tables (an older one): the
    same as the whole fabric says."""
    from auditor.models import NodeType

    folder, _, _ = scenario
    with Store(tmp_path / "t.duckdb") as store:
        for hours in (0, 1):
            ingest_files(store, [folder / "topology" / "ibnetdiscover.txt"],
                         at=T0 + timedelta(hours=hours))
        times = store.snapshot_times(T0 + timedelta(hours=2), limit=5)
        assert len(times) == 2
        for t in times:
            links, ends = store.routing_snapshot(t)
            fabric = store.fabric(t)
            assert links and sorted(map(str, links)) == sorted(map(str, fabric.links))
            assert ends and sorted(ends) == sorted(
                (g, p, port.lid) for (g, p), port in fabric.ports.items()
                if port.lid and fabric.nodes[g].node_type == NodeType.HCA)


def test_path_prints_fabric_text_inert(scenario: tuple[Path, dict[str, Any], Path],
                                       tmp_path: Path) -> None:
    """Every spine named with a terminal escape, an RTL override and rich markup, in the
    topology and in the tables: the hops and a loop's reason show them as text."""
    folder, truth, _ = scenario
    evil = "MF0;sp\x1b[2Jine{n}\u202e[bold red]x[/]:MQM8700/U1"
    cap = truth["lft_captures"][0]
    for name, src in (("topo.txt", folder / "topology" / "ibnetdiscover.txt"),
                      ("lfts.txt", folder / cap["file"])):
        text = src.read_text()
        for n in range(1, 5):
            text = text.replace(f"MF0;spine0{n}:MQM8700/U1", evil.format(n=n))
        (tmp_path / name).write_text(text)
    db = tmp_path / "evil.duckdb"
    assert _cli(db, "ingest", "--at", truth["topology_at"], str(tmp_path / "topo.txt")
                ).exit_code == 0
    assert _cli(db, "ingest", "--at", cap["at"], str(tmp_path / "lfts.txt")).exit_code == 0
    at = (_at(cap["at"]) + timedelta(seconds=5)).isoformat()
    res = CliRunner(env={"COLUMNS": "400"}).invoke(
        app, ["--db", str(db), "path", "node-001", "node-032", "--at", at])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout and "\u202e" not in res.stdout
    assert "sp\\x1b[2Jine" in res.stdout and "[bold red]x[/]" in res.stdout
    data = json.loads(_cli(db, "path", "node-001", "node-032", "--at", at, "--format",
                           "json").stdout)
    assert any("\x1b" in h["switch"] for h in data["directions"][0]["hops"])


def test_path_takes_guids_and_hca_names(scenario: tuple[Path, dict[str, Any], Path]) -> None:
    _, truth, db = scenario
    at = (_at(truth["lft_captures"][0]["at"]) + timedelta(seconds=5)).isoformat()
    with Store(db, read_only=True) as store:
        fabric = store.latest_fabric()
        hosts = _hosts(store)
    assert fabric is not None
    guid_a = hosts["node-001"][0]
    port_b = fabric.ports[hosts["node-020"]]
    assert port_b.port_guid is not None
    by_name = json.loads(_cli(db, "path", "node-001", "node-020", "--at", at, "--format",
                              "json").stdout)
    by_guid = json.loads(_cli(db, "path", guid_a.removeprefix("0x").upper(),
                              port_b.port_guid, "--at", at, "--format", "json").stdout)
    described = fabric.nodes[guid_a].description
    by_desc = json.loads(_cli(db, "path", described, "node-020", "--at", at, "--format",
                              "json").stdout)
    hops = [[h["guid"] for h in d["hops"]] for d in by_name["directions"]]
    assert [[h["guid"] for h in d["hops"]] for d in by_guid["directions"]] == hops
    assert [[h["guid"] for h in d["hops"]] for d in by_desc["directions"]] == hops


def test_rails_are_a_hosts_hca_ports_in_name_order() -> None:
    from auditor.analyse.routing import host_ports
    from auditor.models import Fabric, FabricNode, NodeType, Port

    fabric = Fabric(seen_at=T0)
    for i, dev in enumerate(("mlx5_10", "mlx5_2", "mlx5_0")):
        guid = f"0x{i + 1:016x}"
        fabric.nodes[guid] = FabricNode(guid, NodeType.HCA, f"gpu-07 {dev}", "gpu-07")
        fabric.ports[(guid, 1)] = Port(guid, 1, lid=10 + i)
    fabric.ports[("0x0000000000000009", 1)] = Port("0x0000000000000009", 1, lid=30)
    assert host_ports(fabric, "gpu-07") == [("0x0000000000000003", 1),
                                            ("0x0000000000000002", 1),
                                            ("0x0000000000000001", 1)]
    assert host_ports(fabric, "0x2") == [("0x0000000000000002", 1)]
    assert host_ports(fabric, "gpu-07 mlx5_10") == [("0x0000000000000001", 1)]
    assert host_ports(fabric, "gpu-08") == []


def test_one_switchs_table_leaves_the_others_and_a_whole_dump_without_one_drops_it(
        tmp_path: Path) -> None:
    whole = FIXTURES / "dump_lfts/ibsim_2tier_minhop_sh_trailer.txt"
    one = FIXTURES / "dump_lfts/ibroute_stale_unknown_node_and_type.txt"
    tables = _stored(whole)
    (guid,) = _stored(one)
    text = whole.read_text()
    # the same dump without its first switch's table (header to totals line)
    start = text.index("Unicast lids")
    end = text.index("valid lids dumped", start) + len("valid lids dumped")
    dropped = tmp_path / "without_one.txt"
    dropped.write_text(text[:start] + text[end:].lstrip("\n "))
    gone = next(iter(parse_lfts(text).switches)).guid
    t1, t2, t3 = T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)
    with Store(tmp_path / "o.duckdb") as store:
        ingest_files(store, [whole], kind="lfts", at=t1)
        ingest_files(store, [one], kind="lfts", at=t2)
        ingest_files(store, [dropped], kind="lfts", at=t3)
        at2 = {t.guid: t.ports for t in store.lft_tables_at(t2)}
        at3 = {t.guid for t in store.lft_tables_at(t3)}
        lost = reroutes(store, t2, t3)
    assert set(at2) == set(tables) and guid in tables
    assert at3 == set(tables) - {gone}
    assert {r.switch for r in lost} == {gone} and all(r.to == ((NO_ROUTE, r.dlids),)
                                                      for r in lost)
