"""Error, unit and fuzz tests for the capture parsers in auditor/parse: ibnetdiscover,
iblinkinfo, perfquery, ibqueryerrors and node-name maps (their fixtures run in
tests/test_fixtures.py, with every other parser's).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.errors import ParseError
from auditor.models import CounterSample, NodeType, Topology
from auditor.parse import ibqueryerrors
from auditor.parse.iblinkinfo import parse_iblinkinfo
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.parse.ibqueryerrors import parse_ibqueryerrors, parse_ibqueryerrors_table
from auditor.parse.nodedesc import NodeName, describe, parse_node_name_map
from auditor.parse.perfquery import parse_perfquery
from tests.strategies import near_miss
from tests.test_fixtures import check_topology_invariants

FIXTURES = Path(__file__).parent / "fixtures"

PARSERS: dict[str, Callable[[str], Any]] = {
    "ibnetdiscover": parse_ibnetdiscover,
    "iblinkinfo": parse_iblinkinfo,
    "perfquery": parse_perfquery,
    "ibqueryerrors": parse_ibqueryerrors,
    "nodedesc": parse_node_name_map,
}

FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*/*.txt") if p.parent.name in PARSERS)


@pytest.mark.parametrize(
    ("desc", "expected"),
    [
        ("MF0;leaf04:MQM8700/U1", NodeName("leaf04", model="MQM8700")),
        ("MF0;ib-core-2:MQM9790/U2", NodeName("ib-core-2", model="MQM9790")),
        ("MF0;sw-ib01:MSB7800", NodeName("sw-ib01", model="MSB7800")),
        ("gpu-node-08 mlx5_0", NodeName("gpu-node-08", device="mlx5_0")),
        ("node01 mlx4_1", NodeName("node01", device="mlx4_1")),
        ("cn042 hfi1_0", NodeName("cn042", device="hfi1_0")),
        ("login1 ibp65s0", NodeName("login1", device="ibp65s0")),
        ("node-17 HCA-2", NodeName("node-17", device="HCA-2")),
        ("dgx0014 mlx5_3", NodeName("dgx0014", device="mlx5_3")),
        ("Quantum Mellanox Technologies", NodeName("Quantum Mellanox Technologies")),
        (
            "MT4123 ConnectX6   Mellanox Technologies",
            NodeName("MT4123 ConnectX6   Mellanox Technologies"),
        ),
        ("", NodeName("")),
    ],
)
def test_describe(desc: str, expected: NodeName) -> None:
    assert describe(desc) == expected


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        *(
            (kind, text)
            for kind in ("ibnetdiscover", "iblinkinfo", "perfquery")
            for text in ("", "\n\n")
        ),
        ("ibnetdiscover", "#\n# Topology file: generated on Mon Nov 30 06:40:37 2026\n#\n"),
        ("ibnetdiscover", "DR path slid 0; dlid 0; 0 -> new Channel Adapter {1070fd0300000100}\n"),
    ],
)
def test_empty_input_is_an_error(kind: str, text: str) -> None:
    with pytest.raises(ParseError) as err:
        PARSERS[kind](text)
    assert err.value.kind == kind
    assert err.value.line_no == 0


def test_empty_ibqueryerrors_and_name_map_are_valid() -> None:
    assert parse_ibqueryerrors("") == []
    assert parse_node_name_map("") == {}


def _last_record_line(text: str) -> int:
    lines = text.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if line.strip() and not line.startswith("#"):
            return index
    raise AssertionError("no record line")


TRUNCATABLE = [
    "ibnetdiscover/ibsim_fattree_small",
    "ibnetdiscover/ibsim_p_degraded",
    "ibnetdiscover/ibsim_l_list",
    "iblinkinfo/ibsim_fattree_small",
    "iblinkinfo/ibsim_line",
    "iblinkinfo/fdr10_armed_dual_port_hca",
    "perfquery/ibsim_basic",
    "ibqueryerrors/ibsim_after_errors",
    "nodedesc/node_name_map",
]


@pytest.mark.parametrize("case", TRUNCATABLE)
def test_truncated_last_line(case: str) -> None:
    kind = case.split("/")[0]
    lines = (FIXTURES / f"{case}.txt").read_text().split("\n")
    index = _last_record_line("\n".join(lines))
    if lines[index].startswith("##"):  # ibqueryerrors: cut the last port line instead
        index = max(i for i, line in enumerate(lines) if "GUID 0x" in line)
    cut = lines[index]
    cut = cut[: cut.index('"') + 3] if kind == "nodedesc" else cut[: len(cut) // 2]
    text = "\n".join([*lines[:index], cut])
    with pytest.raises(ParseError) as err:
        PARSERS[kind](text)
    assert err.value.line_no == index + 1
    assert err.value.line == cut


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_binary_garbage(kind: str) -> None:
    garbage = bytes(range(256)).decode("latin-1") * 3
    with pytest.raises(ParseError) as err:
        PARSERS[kind](garbage)
    assert err.value.line_no == 1


@pytest.mark.parametrize(
    ("fixture", "kind", "line_no"),
    [
        ("perfquery/ibsim_basic", "iblinkinfo", 1),
        ("perfquery/ibsim_basic", "ibqueryerrors", 1),
        ("perfquery/ibsim_basic", "nodedesc", 2),  # '#' is a comment in a name map
        ("perfquery/ibsim_basic", "ibnetdiscover", 2),  # ... and in ibnetdiscover output
        ("ibnetdiscover/ibsim_fattree_small", "iblinkinfo", 1),
        ("ibnetdiscover/ibsim_fattree_small", "perfquery", 1),
        ("iblinkinfo/ibsim_fattree_small", "ibnetdiscover", 1),
        ("iblinkinfo/ibsim_line", "ibnetdiscover", 1),
        ("iblinkinfo/ibsim_fattree_small", "perfquery", 1),
        ("ibqueryerrors/ibsim_after_errors", "iblinkinfo", 1),
        ("ibnetdiscover/ibsim_p_ports", "iblinkinfo", 1),
    ],
)
def test_wrong_kind(fixture: str, kind: str, line_no: int) -> None:
    text = (FIXTURES / f"{fixture}.txt").read_text()
    with pytest.raises(ParseError) as err:
        PARSERS[kind](text)
    expected_kind = "node-name-map" if kind == "nodedesc" else kind
    assert (err.value.kind, err.value.line_no) == (expected_kind, line_no)
    assert err.value.line == text.split("\n")[line_no - 1]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('0xzz "name"', "expected 0x<GUID>"),
        ('0x12 "unterminated', "unterminated"),
        ("0x12", "no name"),
        ('0x12 "a"\n0x0012 "b"', "already mapped"),
        ('0x12345678901234567 "too long"', "expected 0x<GUID>"),
    ],
)
def test_bad_node_name_map(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_node_name_map(text)


def test_crlf_line_endings() -> None:
    text = (FIXTURES / "iblinkinfo/ibsim_link_down.txt").read_text()
    plain = parse_iblinkinfo(text)
    assert parse_iblinkinfo(text.replace("\n", "\r\n")) == plain


def test_lid_placeholder_dropped_when_far_end_reports_the_link() -> None:
    # leaf02 port 1 names its peer by LID 9, which appears nowhere: a placeholder. The CA's own
    # line then names leaf02 by LID 4, which resolves, so the placeholder must go.
    text = (
        "Switch: 0xb8599f0300bb0002 MF0;leaf02:MQM8700/U1:\n"
        "           4    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       9    1[  ] "
        '"gpu-node-03 mlx5_0" (Could be 12X )\n'
    )
    only_switch = parse_iblinkinfo(text)
    assert [(lk.b_guid, lk.b_port) for lk in only_switch.links] == [("lid:9", 1)]
    both = parse_iblinkinfo(
        text + "CA: gpu-node-03 mlx5_0:\n"
        "      0x1070fd0300000301      0    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>"
        '       4    1[  ] "MF0;leaf02:MQM8700/U1" (Could be 12X )\n'
    )
    assert [(lk.a_guid, lk.b_guid) for lk in both.links] == [
        ("0x1070fd0300000301", "0xb8599f0300bb0002")
    ]


def test_lid_zero_fabric_resolves_peers_by_description() -> None:
    # Before an SM has run every LID is 0, so the far end can only be found by description.
    link = "==( 4X        53.125 Gbps Initialize/  LinkUp)==>"
    topo = parse_iblinkinfo(
        "CA: gpu-node-03 mlx5_0:\n"
        f"      0x1070fd0300000301      0    1[  ] {link}       0    1[  ] "
        '"MF0;leaf02:MQM8700/U1" (Could be 12X )\n'
        "Switch: 0xb8599f0300bb0002 MF0;leaf02:MQM8700/U1:\n"
        f'           0    1[  ] {link}       0    1[  ] "gpu-node-03 mlx5_0" (Could be 12X )\n'
    )
    assert [(lk.a_guid, lk.a_port, lk.b_guid, lk.b_port) for lk in topo.links] == [
        ("0x1070fd0300000301", 1, "0xb8599f0300bb0002", 1)
    ]


def test_line_form_single_down_switch_port_is_a_switch() -> None:
    topo = parse_iblinkinfo(
        '0xb8599f0300bb0002 "         MF0;leaf02:MQM8700/U1"      4    7[  ] '
        '==(                Down/ Polling)==>             [  ] "" ( )\n'
    )
    assert [(n.node_type, n.description, n.lid) for n in topo.nodes] == [
        (NodeType.SWITCH, "MF0;leaf02:MQM8700/U1", 4)
    ]
    assert topo.links == []


# --- fuzzing --------------------------------------------------------------------------------

_near_miss_text = st.lists(
    near_miss([line for path in FIXTURE_FILES for line in path.read_text().split("\n")]),
    max_size=30).map("\n".join)


@pytest.mark.parametrize("kind", sorted(PARSERS))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=st.one_of(st.text(), _near_miss_text))
def test_fuzz_only_parse_errors(kind: str, text: str) -> None:
    error: ParseError | None = None
    try:
        result = PARSERS[kind](text)
    except ParseError as exc:
        error = exc
    if error is not None:
        assert error.kind in {kind, "node-name-map"}
        assert 0 <= error.line_no <= text.count("\n") + 1
    elif isinstance(result, Topology):
        check_topology_invariants(result)


# --- ibqueryerrors in columns ----------------------------------------------------------------
# The ingest reads ibqueryerrors through parse_ibqueryerrors_table, whose fast path must give
# exactly the readings of the line-by-line parser, and its errors where there are any.

IBQUERYERRORS_FIXTURES = sorted((FIXTURES / "ibqueryerrors").glob("*.txt"))


def _sample_rows(samples: list[CounterSample]) -> list[tuple[str | None, int | None, str, int]]:
    return [(s.guid, s.port, name, value) for s in samples for name, value in s.counters.items()]


def _same_as_line_by_line(text: str) -> None:
    error: ParseError | None = None
    try:
        expected = _sample_rows(parse_ibqueryerrors(text))
    except ParseError as exc:
        error = exc
    if error is not None:
        with pytest.raises(ParseError) as err:
            parse_ibqueryerrors_table(text)
        assert (err.value.line_no, err.value.line, str(err.value)) == \
            (error.line_no, error.line, str(error))
        assert ibqueryerrors._fast_table(text) is None
        return
    assert parse_ibqueryerrors_table(text).rows() == expected
    fast = ibqueryerrors._fast_table(text)
    assert fast is None or fast.rows() == expected


@pytest.mark.parametrize("path", IBQUERYERRORS_FIXTURES, ids=lambda p: p.stem)
def test_ibqueryerrors_table_is_the_samples_in_columns(path: Path) -> None:
    text = path.read_text()
    _same_as_line_by_line(text)
    _same_as_line_by_line(text.replace("\n", "\r\n"))
    assert ibqueryerrors._fast_table(text) is not None  # real output takes the fast path


def test_ibqueryerrors_data_counters_end_every_port_line() -> None:
    """`--data` prints the data counters last on every port line, after the error counters of
    the ports that have some: those are the names the fast path reads with its line regex,
    even when the first port line has an error counter too."""
    data = " [PortXmitData == 5 (5.000B)] [PortRcvData == 6 (6.000B)]"
    lines = ['Errors for 0x1 "sw"', f"   GUID 0x1 port ALL: [SymbolErrorCounter == 3]{data}"]
    lines += [f"   GUID 0x1 port {port}:{data}" for port in range(1, 40)]
    lines[20] = lines[20].replace(":", ": [LinkDownedCounter == 1]")
    text = "\n".join(lines)
    assert ibqueryerrors._shared_ending(text) == ("PortXmitData", "PortRcvData")
    _same_as_line_by_line(text)
    assert ibqueryerrors.parse_ibqueryerrors_table(text).counts[:3] == [3, 2, 2]


def _ibqueryerrors_lines(broken: bool) -> st.SearchStrategy[list[str]]:
    """A header, then port lines, headers and notes. Each part is drawn mostly from what real
    output prints, else from what only the line-by-line parser accepts (brackets in a suffix,
    a vertical tab, a CR) or, when `broken`, from what neither accepts."""

    def pick(good: list[str], odd: list[str], bad: list[str]) -> st.SearchStrategy[str]:
        return st.sampled_from(good * 8 + odd + (bad * 4 if broken else []))

    item = st.builds(
        "[{} == {}{}]".format,
        st.sampled_from(["SymbolErrorCounter", "PortXmitData", "VL15Dropped", "PortRcvPkts",
                         "PortXmitPkts", "PortRcvData", "LinkDownedCounter", "x"]),
        st.integers(0, 10**21 if broken else 10**20 - 1).map(str),
        pick(["", " (1.395MB)", " (730.000)", " ()"], [" (a]b)", " ([)"], [" (x", "(1K)"]),
    )
    port_line = st.builds(
        "{}GUID 0x{} port {}:{}{}".format,
        pick(["   ", "\t", " \t "], ["\x0b "], ["", "x "]),
        st.integers(0, 2**68 if broken else 2**64 - 1).map(lambda g: f"{g:x}"),
        pick(["1", "07", "255", "ALL"], [], ["1000", "all"]),
        st.lists(item, max_size=4).map(lambda items: "".join(f" {i}" for i in items)),
        pick(["", " ", "\t"], ["\r"], [" x"]),
    )
    header = pick(['Errors for 0xb8599f0300bb0002 "MF0;leaf02:MQM8700/U1"',
                   'Errors for "node01 mlx4_0"', 'Data Counters for "a "quoted" name" '],
                  ['Errors for "tab"\t', 'Errors for "vt"\x0b'], ['Errors for "x', "Link info:"])
    other = pick(["       Link info:      4   7[  ] ==( 4X   53.125 Gbps Active/  LinkUp)==>  1",
                  "## Summary: 3 nodes checked", "", "   ", "\t"],
                 ["Link info: x", "\x0c", " \u3000"],
                 ["#", "garbage", "GUID 0x1 port 1:", "   GUID 0X1 port 1:", "\tGUIDE"])
    rest = st.lists(st.one_of(port_line, port_line, header, other), max_size=10)
    return st.builds(lambda first, more: [first, *more], header, rest)


def _text(lines: list[str], crlf: bool, end: str) -> str:
    return ("\r\n" if crlf else "\n").join(lines) + end


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lines=_ibqueryerrors_lines(broken=False), crlf=st.booleans(),
       end=st.sampled_from(["", "\n", "\r\n"]))
def test_ibqueryerrors_fast_path_equals_line_by_line(lines: list[str], crlf: bool,
                                                      end: str) -> None:
    _same_as_line_by_line(_text(lines, crlf, end))


# Good lines and one that may not be: the fast path must not accept what the other refuses.
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lines=_ibqueryerrors_lines(broken=False), bad=_ibqueryerrors_lines(broken=True),
       where=st.integers(0, 12), crlf=st.booleans())
def test_ibqueryerrors_fast_path_fails_where_line_by_line_fails(
        lines: list[str], bad: list[str], where: int, crlf: bool) -> None:
    _same_as_line_by_line(_text([*lines[:where], bad[-1], *lines[where:]], crlf, "\n"))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=st.lists(
    near_miss([line for path in IBQUERYERRORS_FIXTURES for line in path.read_text().split("\n")],
              actions=("keep", "keep", "cut", "insert", "digits", "replace")),
    max_size=20).map("\n".join))
def test_ibqueryerrors_fast_path_equals_line_by_line_near_misses(text: str) -> None:
    _same_as_line_by_line(text)
