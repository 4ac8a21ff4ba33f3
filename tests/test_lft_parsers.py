"""Forwarding-table and trace parsers (issue #23): dump_lfts.sh / ibroute, opensm-lfts.dump,
opensm.fdbs and ibtracert, on real captures from ibsim (scripts/capture_lft_fixtures.py).

Every `tests/fixtures/<folder>/<case>.txt` of these parsers is parsed and compared in full with
the hand-reviewed `<case>.json` beside it by tests/test_fixtures.py. Captures of one opensm run
in two formats must give the same tables: that is how the expected files were checked, and it
keeps checking them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.errors import ParseError
from auditor.models import NodeType, Trace
from auditor.parse._common import DESCRIPTION_MAX
from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.ibtracert import parse_ibtracert
from auditor.parse.opensm_lfts import parse_opensm_fdbs, parse_opensm_lfts

FIXTURES = Path(__file__).parent / "fixtures"

PARSERS: dict[str, Callable[[str], Any]] = {
    "dump_lfts": parse_dump_lfts,
    "opensm_lfts": parse_opensm_lfts,
    "opensm_fdbs": parse_opensm_fdbs,
    "ibtracert": parse_ibtracert,
}
def tables(folder: str, case: str) -> dict[str, tuple[int | None, dict[int, int]]]:
    parsed = PARSERS[folder]((FIXTURES / folder / f"{case}.txt").read_text())
    return {t.guid: (t.lid, t.ports) for t in parsed.switches}


@pytest.mark.parametrize(("run", "captures"), [
    ("2-tier minhop", [("dump_lfts", "ibsim_2tier_minhop_sh_trailer"),
                       ("dump_lfts", "ibsim_n_no_destination_info"),
                       ("dump_lfts", "ibsim_a_illegal_port_255"),
                       ("opensm_lfts", "ibsim_2tier_minhop"),
                       ("opensm_fdbs", "ibsim_2tier_minhop")]),
    ("LMC 1", [("dump_lfts", "ibsim_lmc1_path_2_of_2"),
               ("opensm_lfts", "ibsim_lmc1_two_lids_a_port"),
               ("opensm_fdbs", "ibsim_lmc1_unreachable_unused_lid")]),
    ("3-tier ftree", [("dump_lfts", "ibsim_3tier_ftree"), ("opensm_lfts", "ibsim_3tier_ftree")]),
])
def test_one_run_gives_one_table_whatever_the_format(
        run: str, captures: list[tuple[str, str]]) -> None:
    first, *others = [tables(folder, case) for folder, case in captures]
    assert len(first) in (6, 10), run
    for other, (folder, case) in zip(others, captures[1:], strict=True):
        assert other == first, f"{folder}/{case} differs from {captures[0]}"


def test_ibroute_shows_one_switch_of_the_whole_dump() -> None:
    whole = tables("dump_lfts", "ibsim_2tier_minhop_sh_trailer")
    one = tables("dump_lfts", "ibroute_D_direct_route_header")
    assert len(one) == 1 and one.items() <= whole.items()


def test_stale_entries_stay_routed_and_are_listed() -> None:
    text = (FIXTURES / "dump_lfts/ibsim_stale_node_info_not_available.txt").read_text()
    for parsed in (parse_dump_lfts(text), parse_dump_lfts(
            (FIXTURES / "dump_lfts/ibroute_stale_unknown_node_and_type.txt").read_text())):
        assert all(t.stale == [14] and 14 in t.ports for t in parsed.switches)
        assert 14 not in parsed.owners  # nobody answers for LID 14 any more


def test_lmc_owner_covers_both_lids() -> None:
    parsed = parse_dump_lfts((FIXTURES / "dump_lfts/ibsim_lmc1_path_2_of_2.txt").read_text())
    owner = parsed.owners[8]
    assert (owner.base_lid, owner.count, owner.node_type) == (8, 2, NodeType.HCA)
    assert parsed.owners[9] is owner and owner.description == "gpu-node-02 mlx5_0"
    assert 7 not in parsed.owners and all(7 not in t.ports for t in parsed.switches)


# ---------------------------------------------------------------- broken and hostile input

TWO_TIER = FIXTURES / "dump_lfts/ibsim_2tier_minhop_sh_trailer.txt"


def test_cut_capture_is_an_error() -> None:
    lines = TWO_TIER.read_text().split("\n")
    last_table = max(i for i, line in enumerate(lines) if line.startswith("Unicast lids"))
    with pytest.raises(ParseError, match="no totals line"):
        parse_dump_lfts("\n".join(lines[:last_table + 6]))
    entry = next(i for i, line in enumerate(lines) if line.startswith("0x0002"))
    with pytest.raises(ParseError, match="the totals say 14 entries but 13"):
        parse_dump_lfts("\n".join(lines[:entry] + lines[entry + 1:]))
    osm = (FIXTURES / "opensm_lfts/ibsim_2tier_minhop.txt").read_text().split("\n")
    with pytest.raises(ParseError, match="no totals line"):
        parse_opensm_lfts("\n".join(osm[:-3]))


@pytest.mark.parametrize(("kind", "text", "reason"), [
    ("dump_lfts", "", "no forwarding table"),
    ("dump_lfts", (FIXTURES / "ibnetdiscover/ibsim_p_ports.txt").read_text(), "not a unicast"),
    ("dump_lfts", "Multicast mlids [0xc000-0xc00f] of switch Lid 3 guid 0x1 (sw):\n",
     "multicast tables are not read"),
    ("dump_lfts", "0x0001 003 \n", "not a unicast"),
    ("opensm_lfts", TWO_TIER.read_text(), "not an opensm-lfts.dump line"),
    ("opensm_fdbs", TWO_TIER.read_text(), "not an opensm.fdbs line"),
    ("ibtracert", TWO_TIER.read_text(), "not an ibtracert line"),
    ("ibtracert", "", "no trace"),
])
def test_wrong_input_is_an_error(kind: str, text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        PARSERS[kind](text)


def test_dlid_twice_or_out_of_range_is_an_error() -> None:
    head = ("Unicast lids [0x0-0x3] of switch Lid 3 guid 0x0000000000000003 (sw):\n"
            "  Lid  Out   Destination\n       Port     Info \n")
    with pytest.raises(ParseError, match="printed twice"):
        parse_dump_lfts(head + "0x0001 001 \n0x0001 002 \n2 valid lids dumped \n")
    with pytest.raises(ParseError, match="outside the dumped range"):
        parse_dump_lfts(head + "0x0009 001 \n1 valid lids dumped \n")


def test_hostile_descriptions_stay_data() -> None:
    # a NodeDescription may hold quotes, parentheses and text that looks like the header
    desc = "x') guid 0x0000000000000001 (y: 'z"
    long = "L" * (DESCRIPTION_MAX + 50)
    text = (f"Unicast lids [0x0-0x3] of switch Lid 3 guid 0x0000000000000003 ({desc}):\n"
            "  Lid  Out   Destination\n       Port     Info \n"
            f"0x0001 001 : (Channel Adapter portguid 0x0000000000000011: '{desc}')\n"
            f"0x0002 002 : (Switch portguid 0x0000000000000022: '{long}')\n"
            "0x0003 000 : (?(9)? portguid 0x0000000000000003: 'me')\n"
            "3 valid lids dumped \n")
    parsed = parse_dump_lfts(text)
    table = parsed.switches[0]
    assert (table.guid, table.description, table.lid) == ("0x0000000000000003", desc, 3)
    assert parsed.owners[1].description == desc
    assert len(parsed.owners[2].description) == DESCRIPTION_MAX and len(parsed.cut) == 1
    assert parsed.owners[3].node_type is None


@pytest.mark.parametrize("kind", sorted(PARSERS))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("0x123 :()#[]{}-'\"\nUnicastlidsPortTo")),
                    max_size=300))
def test_fuzz_only_parse_errors(kind: str, text: str) -> None:
    with contextlib.suppress(ParseError):
        PARSERS[kind](text)


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_binary_garbage(kind: str) -> None:
    with pytest.raises(ParseError):
        PARSERS[kind](bytes(range(256)).decode("latin-1") * 3)


# ---------------------------------------------------------------- ibtracert


def test_trace_fields() -> None:
    traces = parse_ibtracert((FIXTURES / "ibtracert/ibsim_ports_file_3tier_cross_pod.txt")
                             .read_text())
    assert len(traces) == 4 and all(t.dest is not None and t.error is None for t in traces)
    cross = traces[2]
    assert cross.source is not None and cross.dest is not None
    assert (cross.source.node_type, cross.source.guid, cross.source.lid) == (
        NodeType.HCA, "0x0c42a10300000100", 11)
    assert [h.description for h in cross.hops][:-1] == [
        f"MF0;{n}:MQM8700/U1" for n in ("leaf01", "spine02", "core02", "spine04", "leaf03")]
    # hops name the CA by its port GUID, From/To by its node GUID
    assert (cross.hops[-1].port_guid, cross.dest.guid) == ("0x0c42a10300000601",
                                                          "0x0c42a10300000600")
    failed = parse_ibtracert((FIXTURES / "ibtracert/ibsim_failed_stale_route.txt").read_text())
    assert failed == [Trace(None, [], None, "Failed to get route information")]
