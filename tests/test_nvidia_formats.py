"""Edge-case and round-trip tests for the readers of what current NVIDIA fabrics write (issue
#24): ibdiagnet's db_csv, net_dump and log, the NVOS event table and UFM's REST events, and the
writers of `auditor.simulate.vendor_formats` that the simulator uses.

Their fixtures run in tests/test_fixtures.py: every `tests/fixtures/<format>/<case>.txt` is
parsed with the "params" of `<case>.json` and compared in full with that JSON ("about" says
where the text comes from).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.errors import ParseError
from auditor.models import CableInfo, CounterTable, NodeType, PortEvent
from auditor.parse.ibdiagnet import (
    label_port_number,
    parse_ibdiagnet,
    parse_ibdiagnet_folder,
    parse_ibdiagnet_log,
    parse_ibdiagnet_net_dump,
    speed_name,
    split_sections,
    width_name,
)
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.nvos_events import parse_nvos_events, parse_time
from auditor.parse.ufm_rest_events import parse_ufm_rest_events
from auditor.portmap import nvos_port_name, port_number
from auditor.simulate.ibsim import FatTree, IbSim, write_net_file
from auditor.simulate.vendor_formats import (
    db_csv,
    net_dump,
    nvos_events_json,
    topology_of_tree,
    ufm_rest_events_json,
)
from tests.strategies import near_miss
from tests.test_fixtures import counters_json, ibdiagnet_json, summarise

FIXTURES = Path(__file__).parent / "fixtures"


# ---------------------------------------------------------------------------------------------
# db_csv: what must not break it, and what must be refused with the line named

FULL = (FIXTURES / "ibdiagnet" / "written_all_tables_warnings_ber.txt").read_text()


def test_unknown_table_is_skipped_and_listed() -> None:
    text = FULL + "START_SOMETHING_NEW\nA,B\n1,2\nEND_SOMETHING_NEW\n"
    with_new, plain = parse_ibdiagnet(text), parse_ibdiagnet(FULL)
    assert with_new.sections[-1] == "SOMETHING_NEW"
    assert ibdiagnet_json(with_new) | {"sections": None, "notes": None} == ibdiagnet_json(
        plain) | {"sections": None, "notes": None}


@pytest.mark.parametrize("table", ["NODES", "PORTS", "LINKS", "PM_INFO", "CABLE_INFO"])
def test_a_missing_table_is_named_and_the_rest_still_read(table: str) -> None:
    start = FULL.index(f"START_{table}\n")
    end = FULL.index(f"END_{table}\n") + len(f"END_{table}\n")
    r = parse_ibdiagnet(FULL[:start] + FULL[end:])
    assert r.missing == [table]
    full = parse_ibdiagnet(FULL)
    if table == "NODES":
        assert r.topology is None
    elif table == "LINKS":
        assert r.topology is not None and r.topology.links == []
        assert r.topology.nodes == full.topology.nodes  # type: ignore[union-attr]
    elif table == "PORTS":
        # ports only where the links name them, without state; switch LIDs unknown
        assert r.topology is not None and {p.state for p in r.topology.ports} == {None}
        assert r.topology.links == [lk.__class__(lk.a_guid, lk.a_port, lk.b_guid, lk.b_port)
                                    for lk in full.topology.links]  # type: ignore[union-attr]
    assert (r.counters is None) == (table == "PM_INFO")
    assert (r.cables == []) == (table == "CABLE_INFO")


def test_key_column_case_and_name_differences_read_the_same() -> None:
    rows = "0xfc6a1c0300b00580,0xfc6a1c0300b00580,7,12,1,300\n"
    tables = [f"START_PM_INFO\n{h}\n{rows}END_PM_INFO\n" for h in (
        "NodeGUID,PortGUID,PortNumber,SymbolErrorCounter,LinkDownedCounter,LinkDownedCounterExt",
        "NodeGuid,PortGuid,PortNum,SymbolErrorCounter,LinkDownedCounter,LinkDownedCounterExt",
        "nodeguid,portguid,portnumber,symbolerrorcounter,linkdownedcounter,linkdownedcounterext",
    )]
    got = [counters_json(parse_ibdiagnet(t).counters) for t in tables]
    assert got[0] == got[1] == [["0xfc6a1c0300b00580", 7, "SymbolErrorCounter", 12],
                                ["0xfc6a1c0300b00580", 7, "LinkDownedCounter", 300]]
    # lower-case columns keep their printed names (no base name to fold them into)
    assert [r[2] for r in got[2] or []] == ["symbolerrorcounter", "linkdownedcounter",
                                            "linkdownedcounterext"]


def test_the_64_bit_reading_wins_and_na_is_no_reading() -> None:
    text = ("START_PM_INFO\nNodeGUID,PortNumber,PortXmitData,PortXmitDataExtended,"
            "LinkDownedCounterExt,LinkDownedCounter\n0x1,3,4294967295,9000000000,N/A,255\n"
            "END_PM_INFO\n")
    assert counters_json(parse_ibdiagnet(text).counters) == [
        ["0x0000000000000001", 3, "PortXmitData", 9000000000],
        ["0x0000000000000001", 3, "LinkDownedCounter", 255]]


def test_a_truncated_file_names_the_table_it_cut() -> None:
    lines = FULL.split("\n")
    starts = {i + 1: line for i, line in enumerate(lines) if line.startswith("START_")}
    for k in range(len(lines)):
        cut = "\n".join(lines[:k]) + ("\n" + lines[k][: len(lines[k]) // 2] if k else "")
        open_start = max((no for no in starts if no <= k + 1), default=None)
        inside = open_start is not None and not any(
            ln.startswith("END_") for ln in lines[open_start - 1: k])
        if inside:
            with pytest.raises(ParseError) as err:
                parse_ibdiagnet(cut)
            if err.value.line_no != k + 1:  # not the half-written marker line itself
                assert err.value.line_no == open_start, k
                assert "truncated" in err.value.reason
        elif open_start is None:
            with pytest.raises(ParseError):
                parse_ibdiagnet(cut)
        else:
            parse_ibdiagnet(cut)  # cut between tables: what is there is whole


@pytest.mark.parametrize(("text", "line_no", "reason"), [
    ('vendid=0x2c9\nSwitch 8 "S-b8599f0300bb0004" # "x" enhanced port 0 lid 6 lmc 0\n', 1,
     "expected START_"),
    ("START_NODES\nNodeGUID,NodeType\n0x1,2\nSTART_PORTS\n", 4, "inside table NODES"),
    ("START_NODES\nNodeGUID,NodeType\n0x1,2\nEND_PORTS\n", 4, "END_ of another table"),
    ("START_NODES\nNodeGUID,NodeType\n0x1,2,3\nEND_NODES\n", 3, "3 fields"),
    ("START_NODES\nNodeGUID,NodeType\nguid?,2\nEND_NODES\n", 3, "not a GUID"),
    ("START_NODES\nNodeGUID,NodeType\n0x1,7\nEND_NODES\n", 3, "unknown NodeType"),
    ("START_NODES\nNodeType\n2\nEND_NODES\n", 2, "no NodeGUID column"),
    ("START_LINKS\nA\nEND_LINKS\nSTART_LINKS\nA\nEND_LINKS\n", 4, "appears twice"),
    ("START_NODES\nNodeGUID,NodeType\n0x1,2\nEND_NODES\nstray text\n", 5, "expected START_"),
    ("START_NODES\nNodeGUID,NodeType\n0x1,2\nEND_NODES\nSTART_LINKS\n"
     "NodeGuid1,PortNum1,NodeGuid2,PortNum2\n0x1,3,0x1,3\nEND_LINKS\n", 7, "its own peer"),
    ("START_PM_INFO\nNodeGUID,PortNumber,X\n0x1,300,1\nEND_PM_INFO\n", 3, "port number"),
    ("", 1, "no START_"),
])
def test_wrong_or_broken_text_is_a_parse_error_naming_the_line(
        text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_ibdiagnet(text)
    assert err.value.line_no == line_no
    assert reason in err.value.reason


def test_a_byte_order_mark_is_not_text() -> None:
    assert ibdiagnet_json(parse_ibdiagnet("\ufeff" + FULL)) == ibdiagnet_json(parse_ibdiagnet(FULL))


def test_sections_keep_their_rows_as_printed() -> None:
    sections, info = split_sections(FULL)
    nodes = sections["NODES"]
    assert nodes.header[:3] == ("NodeDesc", "NumPorts", "NodeType")
    assert [no for no, _ in nodes.rows] == [13, 14, 15]
    assert info["run_at"] == datetime(2025, 3, 1, 4, 19, 52, tzinfo=UTC)


def test_a_long_hostile_description_is_cut_and_counted() -> None:
    desc = "x" * 5000 + '\u202e"; drop'
    text = (f'START_NODES\nNodeDesc,NodeType,NodeGUID\n"{desc.replace(chr(34), chr(34) * 2)}",'
            "1,0x5\nEND_NODES\n")
    topo = parse_ibdiagnet(text).topology
    assert topo is not None and len(topo.nodes[0].description) == 256 and len(topo.cut) == 1


@pytest.mark.parametrize(("value", "name"), [
    (2052, "NDR"), (1028, "HDR"), (516, "EDR"), (260, "FDR"), (4, "QDR"), (2, "DDR"), (1, "SDR"),
    ((1 << 16) | 4, "FDR10"), ((1 << 24) | 4, "XDR"), ((16 << 8) | 4, "XDR"), (0, None),
    (3, None), (3845, None), ((2 << 16) | 4, None), (None, None)])
def test_speed_codes(value: int | None, name: str | None) -> None:
    assert speed_name(value) == name


@pytest.mark.parametrize(("value", "name"), [
    (1, "1X"), (2, "4X"), (4, "8X"), (8, "12X"), (16, "2X"), (19, None), (0, None)])
def test_width_codes(value: int, name: str | None) -> None:
    assert width_name(value) == name


@pytest.mark.parametrize(("label", "port"), [
    ("12", 12), ("3/1", 5), ("3/2", 6), ("1/16/1", 31), ("1/3/1", 5), ("1/32/2", 64),
    ("1/3/1/2", 10), ("2/3/1", None), ("1/3/3", None), ("3/3", None), ("0", None), ("x", None),
    ("1//2", None)])
def test_ibdiagnet_labels_to_ib_ports(label: str, port: int | None) -> None:
    assert label_port_number(label) == port


# ---------------------------------------------------------------------------------------------
# the output folder

LOG = (FIXTURES / "ibdiagnet_log" / "pot_and_ncar_real_lines.txt").read_text()
NET_DUMP = (FIXTURES / "ibdiagnet_net_dump" / "ufm_sdk_ibdiag_2_10_quantum_hdr.txt").read_text()


def test_folder_dates_the_log_by_the_db_csv_run() -> None:
    r = parse_ibdiagnet_folder({"ibdiagnet2.db_csv": FULL, "ibdiagnet2.log": LOG,
                                "ibdiagnet2.lst": "ignored"})
    assert r.topology is not None and len(r.topology.links) == 2
    assert {e.at for e in r.events} == {datetime(2025, 3, 1, 4, 19, 52, tzinfo=UTC)}
    assert [e.state for e in r.events][:2] == ["flap", "counter_alarm"]


def test_folder_without_db_csv_falls_back_to_the_net_dump() -> None:
    r = parse_ibdiagnet_folder({"ibdiagnet2.net_dump": NET_DUMP, "ibdiagnet2.log": LOG})
    assert r.topology is not None and len(r.topology.links) == 8
    assert r.run_at == datetime(2022, 8, 25, 17, 45, 38, tzinfo=UTC)
    assert len(r.events) == 6 and r.notes == []


def test_folder_with_neither_is_refused() -> None:
    with pytest.raises(ParseError, match=r"no \*\.db_csv or \*\.net_dump"):
        parse_ibdiagnet_folder({"ibdiagnet2.log": LOG})


def test_net_dump_that_is_not_one_is_refused() -> None:
    with pytest.raises(ParseError) as err:
        parse_ibdiagnet_net_dump("  1 : 1 : ACT : LINK UP : 5 : 4x : 50\n")
    assert err.value.line_no == 1 and "switch line" in err.value.reason


# ---------------------------------------------------------------------------------------------
# NVOS and UFM REST: refusals and times


@pytest.mark.parametrize(("value", "tz", "expected"), [
    ("2026-11-30 06:20:11 Etc/UTC", None, datetime(2026, 11, 30, 6, 20, 11, tzinfo=UTC)),
    ("2026-07-21 09:03:13 IDT", None, datetime(2026, 7, 21, 6, 3, 13, tzinfo=UTC)),
    ("2026-01-21 09:03:13 IST", "Asia/Jerusalem", datetime(2026, 1, 21, 7, 3, 13, tzinfo=UTC)),
    ("2026-01-21 09:03:13 IST", "Asia/Kolkata", datetime(2026, 1, 21, 3, 33, 13, tzinfo=UTC)),
    ("2026-01-21 09:03:13 IST", None, "ambiguous"),
    ("2026-01-21 09:03:13 +05:30", None, datetime(2026, 1, 21, 3, 33, 13, tzinfo=UTC)),
    ("2026-01-21 09:03:13", "UTC", datetime(2026, 1, 21, 9, 3, 13, tzinfo=UTC)),
    ("2026-01-21 09:03:13", None, "no zone"),
    ("21/01/2026 09:03", None, "unreadable"),
    ("2026-02-30 09:03:13 UTC", None, "impossible"),
])
def test_nvos_times(value: str, tz: str | None, expected: datetime | str) -> None:
    got = parse_time(value, ZoneInfo(tz) if tz else None)
    if isinstance(expected, str):
        assert isinstance(got, str) and expected in got
    else:
        assert got == expected


@pytest.mark.parametrize(("text", "line_no", "reason"), [
    ('{\n  "1": {"text": "x",\n  }\n}', 3, "not JSON"),
    ('[{"text": "Interface operational state is up"}]', 1, "JSON object"),
    ('{"hostname": "leaf07"}', 1, "not an NVOS event table"),
])
def test_nvos_refuses_what_is_not_an_event_table(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_nvos_events(text, host="leaf07")
    assert err.value.line_no == line_no and reason in err.value.reason


def test_nvos_empty_table_is_empty() -> None:
    result = parse_nvos_events('{"table-occupancy": 0, "table-size": "1000"}', host="x")
    assert summarise(result) == {"events": [], "unparsed": [], "ignored": 0}


@pytest.mark.parametrize(("text", "reason"), [
    ("[1, 2]", "array of event objects"),
    ('[{"id": 1, "name": "x"}]', "no timestamp and description"),
    ("<html>502 Bad Gateway</html>", "not JSON"),
])
def test_ufm_rest_refuses_what_is_not_events(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_ufm_rest_events(text)


def test_ufm_rest_single_event_by_id() -> None:
    one = json.loads((FIXTURES / "ufm_rest_events" /
                      "guide_v6_18_shape_link_and_external_events.txt").read_text())[2]
    result = parse_ufm_rest_events(json.dumps(one))
    assert [(e.state, e.guid, e.port, e.peer_port) for e in result.events] == [
        ("down", "0x9c0591030090e000", 33, 8)]


# ---------------------------------------------------------------------------------------------
# NVOS port names


@pytest.mark.parametrize(("name", "port"), [
    ("sw1p1", 1), ("sw1p2", 2), ("sw16p1", 31), ("sw32p2", 64), ("SW3P2", 6), ("sw3p2s1", 11),
    ("sw3p2s2", 12), ("sw32p1pl1", None), ("fnm1", None), ("1/3/1/2", 10), ("IB1/3/1/1", 9),
    ("2/3/1/1", None), ("1/3/3/1", None)])
def test_nvos_and_quantum2_names_to_ib_ports(name: str, port: int | None) -> None:
    assert port_number(name) == port


def test_nvos_names_are_the_inverse() -> None:
    assert [nvos_port_name(p) for p in (1, 2, 3, 31, 64)] == [
        "sw1p1", "sw1p2", "sw2p1", "sw16p1", "sw32p2"]
    assert all(port_number(nvos_port_name(p)) == p for p in range(1, 129))
    with pytest.raises(ValueError, match="no NVOS name"):
        nvos_port_name(0)


# ---------------------------------------------------------------------------------------------
# The writers: what they write reads back as what they were given

TREE = FatTree(spines=2, leaves=4, hosts_per_leaf=2, leaf_ports=8, spine_ports=8)
RUN = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def _same(a: list[Any], b: list[Any]) -> bool:
    return sorted(map(repr, a)) == sorted(map(repr, b))


@pytest.mark.parametrize("rails", [1, 2])
def test_db_csv_of_a_tree_reads_back_as_the_tree(rails: int) -> None:
    tree = FatTree(spines=2, leaves=4, hosts_per_leaf=3, leaf_ports=8, rails=rails)
    topo = topology_of_tree(tree, {(tree.leaf_name(2), tree.spine_name(1)): "1x"})
    r = parse_ibdiagnet(db_csv(topo, run_at=RUN))
    assert r.topology is not None and r.run_at == RUN and r.notes == [] and r.missing == [
        "PM_INFO", "CABLE_INFO"]
    assert _same(r.topology.nodes, topo.nodes)
    assert _same(r.topology.ports, topo.ports)
    assert _same(r.topology.links, topo.links)
    assert {(lk.width, lk.speed) for lk in r.topology.links} == {("4X", "HDR"), ("1X", "HDR")}
    labels = {(x.guid, x.port): x.label for x in r.labels}
    assert all(labels[(p.guid, p.port)] == str(p.port) for p in topo.ports
               if p.port_guid is None)


def test_net_dump_of_a_tree_reads_back_links_and_switch_ports() -> None:
    topo = topology_of_tree(TREE)
    back = parse_ibdiagnet_net_dump(net_dump(topo, run_at=RUN))
    assert _same(back.links, topo.links)
    switch_ports = [p for p in topo.ports if p.port_guid is None]
    assert _same([p for p in back.ports if p.port_guid is None and p.state], switch_ports)
    types = {n.guid: n.node_type for n in back.nodes}
    assert all(types[n.guid] == n.node_type for n in topo.nodes)


def test_db_csv_with_counters_and_cables_reads_back() -> None:
    topo = topology_of_tree(TREE)
    leaf = f"0x{TREE.leaf_guid(1):016x}"
    counters = CounterTable.from_rows([(leaf, 1, "SymbolErrorCounter", 5),
                                       (leaf, 1, "LinkDownedCounter", 2),
                                       (leaf, 1, "PortXmitData", 10**12)])
    cables = [CableInfo(leaf, 1, "Nvidia", "MMA4Z00-NS", "MT2330FT09118", "30 m", "A6",
                        "850 nm VCSEL", 48.5)]
    r = parse_ibdiagnet(db_csv(topo, counters=counters, cables=cables))
    readings = {(g, p, n): v for g, p, n, v in (r.counters.rows() if r.counters else [])}
    assert readings[(leaf, 1, "SymbolErrorCounter")] == 5
    assert readings[(leaf, 1, "LinkDownedCounter")] == 2
    assert readings[(leaf, 1, "PortXmitData")] == 10**12
    assert readings[(leaf, 1, "PortRcvErrors")] == 0
    assert [dataclasses.replace(c, line_no=0) for c in r.cables] == cables


def test_nvos_events_written_read_back_with_their_ib_ports() -> None:
    events = [PortEvent(RUN, "down", port=31), PortEvent(RUN.replace(second=7), "up", port=31),
              PortEvent(RUN.replace(minute=5), "admin_down", port_name="sw3p2s1")]
    result = parse_nvos_events(nvos_events_json(events), host="leaf01")
    assert [(e.at, e.state, e.device, e.port_name, port_number(e.port_name or ""))
            for e in result.events] == [
        (RUN, "down", "leaf01", "sw16p1", 31), (RUN.replace(second=7), "up", "leaf01", "sw16p1", 31),
        (RUN.replace(minute=5), "admin_down", "leaf01", "sw3p2s1", 11)]
    with pytest.raises(ValueError, match="no NVOS text"):
        nvos_events_json([PortEvent(RUN, "flap", port=1)])


def test_ufm_rest_events_written_read_back_both_ends() -> None:
    a, b = f"0x{TREE.leaf_guid(1):016x}", f"0x{TREE.spine_guid(1):016x}"
    events = [PortEvent(RUN, "down", "leaf01", "1/3", a, 3, "spine01", "1/1", b, 1),
              PortEvent(RUN.replace(second=9), "up", "leaf01", "1/3", a, 3, "spine01", "1/1", b, 1)]
    result = parse_ufm_rest_events(ufm_rest_events_json(events))
    assert [(e.at, e.state, e.guid, e.port, e.peer_guid, e.peer_port, e.device)
            for e in result.events] == [
        (RUN, "down", a, 3, b, 1, "leaf01"), (RUN.replace(second=9), "up", a, 3, b, 1, "leaf01")]


def test_topology_of_tree_matches_the_tree() -> None:
    topo = topology_of_tree(TREE)
    assert len(topo.links) == TREE.hosts * TREE.rails + TREE.leaves * TREE.spines
    assert sum(n.node_type is NodeType.SWITCH for n in topo.nodes) == TREE.switches
    down = [p for p in topo.ports if p.state == "Down"]
    # leaf ports beyond hosts + spines and spine ports beyond the leaves are not cabled
    assert len(down) == TREE.leaves * (8 - 4) + TREE.spines * (8 - 4)


# ---------------------------------------------------------------------------------------------
# ibsim: a db_csv written for a simulated fabric is the fabric real ibnetdiscover sees


def _port_view(p: Any) -> tuple[Any, ...]:
    return (p.guid, p.port, p.port_guid, p.lid, p.width, p.speed)


@pytest.mark.ibsim
@pytest.mark.usefixtures("need_ibsim")
@pytest.mark.parametrize("rails", [1, 2])
def test_db_csv_of_an_ibsim_fabric_is_what_ibnetdiscover_sees(tmp_path: Path, rails: int) -> None:
    tree = FatTree(spines=2, leaves=4, hosts_per_leaf=2, leaf_ports=8, spine_ports=6, rails=rails)
    degrade = {(tree.leaf_name(3), tree.spine_name(2)): "1x"}
    with IbSim(write_net_file(tree, degrade), tmp_path / "sim") as sim:
        sim.opensm_once()
        result = sim.run("ibnetdiscover")
    assert result.returncode == 0, result.stderr
    seen = parse_ibnetdiscover(result.stdout)
    written = parse_ibdiagnet(db_csv(topology_of_tree(tree, degrade), run_at=RUN)).topology
    assert written is not None
    # node for node (GUID, type, description, port count, switch LID) and link for link
    assert sorted(map(repr, written.nodes)) == sorted(map(repr, seen.nodes))
    assert sorted(map(repr, written.links)) == sorted(map(repr, seen.links))
    assert ("1X", "HDR") in {(lk.width, lk.speed) for lk in seen.links}
    # every port ibnetdiscover prints (the cabled ones), with its GUID, LID, width and speed;
    # the db_csv lists the uncabled ones too, Down
    cabled = {(p.guid, p.port): _port_view(p) for p in seen.ports}
    listed = {(p.guid, p.port): p for p in written.ports}
    assert {k: _port_view(listed[k]) for k in cabled} == cabled
    assert {p.state for k, p in listed.items() if k not in cabled} == {"Down"}


# ---------------------------------------------------------------------------------------------
# fuzzing: mangled real lines give results or ParseErrors naming a line, nothing else

FUZZ: dict[str, Callable[[str], Any]] = {
    "ibdiagnet": parse_ibdiagnet,
    "ibdiagnet_net_dump": parse_ibdiagnet_net_dump,
    "ibdiagnet_log": lambda text: parse_ibdiagnet_log(text, at=RUN),
    "nvos_events": lambda text: parse_nvos_events(text, host="x"),
    "ufm_rest_events": parse_ufm_rest_events,
}


def _mangled(family: str) -> st.SearchStrategy[str]:
    lines = [ln for p in (FIXTURES / family).glob("*.txt") for ln in p.read_text().split("\n")]
    return st.lists(near_miss(lines), max_size=40).map("\n".join)


@pytest.mark.parametrize("family", sorted(FUZZ))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_fuzz_only_parse_errors(family: str, data: st.DataObject) -> None:
    text = data.draw(st.one_of(st.text(), _mangled(family)))
    error: ParseError | None = None
    try:
        FUZZ[family](text)
    except ParseError as exc:
        error = exc
    if error is not None:
        assert 0 <= error.line_no <= text.count("\n") + 1
