"""Property, unit and fuzz tests for the log parsers: syslog, UFM events.log and opensm.log
(their fixtures run in tests/test_fixtures.py), and the prefilters that pick the lines worth
parsing out of a whole log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.ingest import kinds
from auditor.models import PortEvent
from auditor.parse import syslog
from auditor.parse._logline import UNSTAMPED, SyslogResult, infer_years, run_lines
from auditor.parse.opensm import parse_opensm
from auditor.parse.syslog import (
    normalise_state,
    parse_syslog_lines,
    recognise_message,
)
from auditor.parse.ufm_events import parse_ufm_events
from tests.strategies import near_miss
from tests.test_fixtures import check_log_invariants, load, numbered, read
from tests.test_fixtures import event_record as record

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = Path(__file__).parent / "fixtures" / "reference" / "syslog-samples.txt"
REF = datetime(2026, 12, 1, tzinfo=UTC)

Parser = Callable[..., SyslogResult]


def unstamped(state: str, **fields: Any) -> PortEvent:
    """What a recogniser returns: the event before the driver gives it a time, line and message."""
    return PortEvent(UNSTAMPED, state, **fields)


PARSERS: dict[str, Parser] = {
    "syslog": parse_syslog_lines,
    "ufm_events": parse_ufm_events,
    "opensm": parse_opensm,
}
LOG_FIXTURES = sorted(p for kind in PARSERS for p in (FIXTURES / kind).glob("*.txt"))
# The logs read line by line: each one's prefilter must pass every line its parser makes an
# event of.
LINE_KINDS = [kinds.kind(name) for name in kinds.names("logs")
              if kinds.kind(name).reads == "lines"]
PREFILTERS = {k.name: k.prefilter_pattern() for k in LINE_KINDS}


def test_every_log_parser_has_fixtures() -> None:
    for kind in PARSERS:
        assert len(list((FIXTURES / kind).glob("*.txt"))) >= 2, kind


_LINE_CASES = [(k, p) for k in LINE_KINDS for p in sorted((FIXTURES / k.fixtures).glob("*.txt"))]


@pytest.mark.parametrize(("kind", "path"), _LINE_CASES,
                         ids=[f"{k.fixtures}/{p.stem}" for k, p in _LINE_CASES])
def test_prefilter_matches_every_event_line(kind: kinds.Kind, path: Path) -> None:
    case, _ = load(kind, path)
    result = case.parse()
    assert result.events and case.lines is not None
    by_no = dict(case.lines)
    own = re.compile(kind.prefilter_pattern())
    general = re.compile(syslog.PREFILTER)
    for e in result.events:
        assert own.search(by_no[e.line_no]), by_no[e.line_no]
        # the syslog parser also reads opensm and UFM lines, so its filter must pass them
        assert general.search(by_no[e.line_no]), by_no[e.line_no]


def test_prefilters_are_re2_and_agree_with_python_re() -> None:
    import duckdb  # its regexp_matches is RE2, the dialect ripgrep reads

    texts = [line.rstrip("\n") for p in LOG_FIXTURES for _, line in numbered(read(p))]
    texts += read(SAMPLES).split("\n")
    texts = [t for t in texts if "\x00" not in t]
    con = duckdb.connect()
    for pattern in PREFILTERS.values():
        compiled = re.compile(pattern)
        rows = con.execute(
            "SELECT regexp_matches(t, ?) FROM unnest(?::VARCHAR[]) AS u(t)", [pattern, texts]
        ).fetchall()
        got = [bool(r[0]) for r in rows]
        assert got == [compiled.search(t) is not None for t in texts], pattern
        for construct in ("(?=", "(?!", "(?<=", "(?<!", "\\1"):
            assert construct not in pattern


# ---------------------------------------------------------------------------------------------
# Years and zones

ROLLOVER = [
    "Dec 31 23:58:10 ib-leaf-01 mgmtd[4128]: Interface IB1/17 changed state to DOWN\n",
    "Jan  1 00:00:03 ib-leaf-01 mgmtd[4128]: Interface IB1/17 changed state to UP\n",
    "Jan  2 08:15:00 ib-leaf-01 mgmtd[4128]: Interface IB1/1/2 changed state to DOWN\n",
]


def years(result: SyslogResult) -> list[str]:
    return [e.at.isoformat() for e in result.events]


def test_year_rollover_anchored_on_reference_mtime() -> None:
    lines = list(enumerate(ROLLOVER, 1))
    got = parse_syslog_lines(lines, reference=datetime(2027, 1, 2, 9, 0, tzinfo=UTC))
    assert years(got) == [
        "2026-12-31T23:58:10+00:00", "2027-01-01T00:00:03+00:00", "2027-01-02T08:15:00+00:00"
    ]
    # +1 day slack: an mtime a little before the last stamp (clock skew) keeps the year
    naive = datetime(2027, 1, 1, 12, 0)  # noqa: DTZ001 - a naive reference is read as UTC
    got = parse_syslog_lines(lines, reference=naive)
    assert years(got)[-1] == "2027-01-02T08:15:00+00:00"
    # an mtime well before it puts the whole file one year earlier
    got = parse_syslog_lines(lines, reference=datetime(2026, 12, 31, tzinfo=UTC))
    assert years(got) == [
        "2025-12-31T23:58:10+00:00", "2026-01-01T00:00:03+00:00", "2026-01-02T08:15:00+00:00"
    ]


def test_year_override_is_the_year_of_the_first_line() -> None:
    got = parse_syslog_lines(list(enumerate(ROLLOVER, 1)), year=2019, reference=REF)
    assert years(got) == [
        "2019-12-31T23:58:10+00:00", "2020-01-01T00:00:03+00:00", "2020-01-02T08:15:00+00:00"
    ]
    got = parse_opensm(
        [(7, "Jun 17 17:21:28 927893 [4F2006C0] 0x02 -> osm_pi_rcv_process: Switch 0x200000 "
             "Switch1 port 3 changed state from ACTIVE to DOWN\n")],
        year=2031,
    )
    assert years(got) == ["2031-06-17T17:21:28.927893+00:00"]


def test_small_step_back_is_not_a_new_year() -> None:
    lines = [
        (1, "Nov 30 06:28:57 a mgmtd: Interface IB1/1 changed state to DOWN\n"),
        (2, "Nov 30 06:28:55 b mgmtd: Interface IB1/2 changed state to DOWN\n"),  # late delivery
        (3, "Aug  1 00:00:00 b mgmtd: Interface IB1/2 changed state to UP\n"),  # 4 months back
    ]
    got = parse_syslog_lines(lines, reference=REF)
    assert [e.at.year for e in got.events] == [2026, 2026, 2026]


def test_infer_years_feb_29_and_impossible_dates() -> None:
    leap = infer_years([(2, 29, 12, 0, 0, 0)], reference=datetime(2027, 3, 1, tzinfo=UTC))
    assert leap == [datetime(2024, 2, 29, 12, tzinfo=UTC)]
    assert infer_years([(2, 29, 12, 0, 0, 0)], year=2026) == [None]
    assert infer_years([(1, 1, 0, 0, 0, 0)]) == [None]  # neither year nor reference
    assert infer_years([]) == []


def test_year_unknown_without_reference_or_dated_line() -> None:
    got = parse_syslog_lines(list(enumerate(ROLLOVER, 1)))
    assert not got.events
    assert {u[2] for u in got.unparsed} == {"year unknown (pass year= or reference=)"}
    # a dated line in the same input stands in for the reference
    dated = (9, "2027-01-03T00:00:00+00:00 host kernel: ib0: Event 9 on device mlx5_0 port 1\n")
    got = parse_syslog_lines([*enumerate(ROLLOVER, 1), dated])
    assert years(got)[0] == "2026-12-31T23:58:10+00:00"
    assert len(got.events) == 4


def test_tz_converts_zoneless_stamps_only() -> None:
    la = ZoneInfo("America/Los_Angeles")
    lines = [
        # US DST began 2026-03-08 02:00 local: 01:59:59 is PST (-8), 03:00:00 is PDT (-7)
        (1, "Mar  8 01:59:59 leaf mgmtd: Interface IB1/1 changed state to DOWN\n"),
        (2, "Mar  8 03:00:00 leaf mgmtd: Interface IB1/1 changed state to UP\n"),
        (3, "2026-03-08T03:00:01+00:00 leaf mgmtd: Interface IB1/2 changed state to UP\n"),
        (4, "2026-03-08T03:00:02 leaf mgmtd: Interface IB1/3 changed state to UP\n"),
        (5, "Sun Mar  8 04:00:00 2026: Interface IB1/4 changed state to UP\n"),
    ]
    got = parse_syslog_lines(lines, reference=datetime(2026, 3, 9, tzinfo=UTC), tz=la)
    assert years(got) == [
        "2026-03-08T09:59:59+00:00",
        "2026-03-08T10:00:00+00:00",
        "2026-03-08T03:00:01+00:00",  # has a zone: tz ignored
        "2026-03-08T10:00:02+00:00",
        "2026-03-08T11:00:00+00:00",
    ]
    ufm = parse_ufm_events(
        [(1, "2023-12-20 07:46:24.442 [1] [907] CRITICAL [Fabric_Topology] Switch [sw1]: Switch "
             "is down\n")],
        tz=la,
    )
    assert years(ufm) == ["2023-12-20T15:46:24.442000+00:00"]


def test_ufm_forwarded_by_syslog_keeps_ufm_time_unless_envelope_has_a_zone() -> None:
    native = (
        "2018-11-27 16:25:41.112 [665917] [329] WARNING [Fabric_Topology] Link [x]: Link went "
        "down: (Switch:A:1/1/1)1:1 - (Switch:B:1/2/1)2:2"
    )
    lines = [
        (1, f"Nov 27 16:25:42 ufm eventlog[1]: WARNING - {native}\n"),
        (2, f"2018-11-27T16:25:43.000000-08:00 ufm eventlog[1]: WARNING - {native}\n"),
    ]
    got = parse_syslog_lines(lines, tz=ZoneInfo("America/Los_Angeles"))
    assert years(got) == ["2018-11-28T00:25:41.112000+00:00", "2018-11-28T00:25:43+00:00"]
    assert got.events[0].device == "A" and got.events[0].guid == "0x0000000000000001"


# ---------------------------------------------------------------------------------------------
# Recognisers, site patterns, messy input


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        ("Interface IB1/17 changed state to DOWN", unstamped("down", port_name="IB1/17")),
        ("Interface IB1/1/2 changed state to up.", unstamped("up", port_name="IB1/1/2")),
        ("interface Eth1/1 changed state to Down", unstamped("down", port_name="Eth1/1")),
        (
            "Interface ib 1/17 changed state to administratively down",
            unstamped("admin_down", port_name="ib 1/17"),
        ),
        ("changed state to DOWN", None),  # no port anywhere
        ("Interface IB1/17 changed state to", "truncated after 'changed state to'"),
        ("Interface IB1/17 changed state to Rebooting", "unknown port state 'Rebooting'"),
        ("mlx5_core 0000:01:00.0 enp1s0f0: Link down", unstamped("down", port_name="enp1s0f0")),
        (
            "ib1: Event 10 on device mlx5_3 port 2",
            unstamped("down", port_name="mlx5_3/2", code="10"),
        ),
        ("ib0: Event 13 on device mlx5_0 port 1", None),
        ("mlx5_core 0000:01:00.0: Port module event: module 3, Cable unplugged",
         unstamped("module_unplugged", port_name="module3")),
        ("Received Generic Notice type:1 num:128 (Link state change) Producer:2 (Switch) from "
         "LID:0x1f TID:0x0", unstamped("trap128", device="lid:31", code="128")),
        ("completely unrelated", None),
    ],
)
def test_recognise_message(msg: str, expected: object) -> None:
    assert recognise_message(msg) == expected


def test_sd_port_names_the_port_when_the_message_does_not() -> None:
    assert recognise_message("changed state to DOWN", "IB1/17") == unstamped(
        "down", port_name="IB1/17"
    )


@pytest.mark.parametrize(
    ("text", "state"),
    [("DOWN", "down"), ("Down", "down"), ("went down", "down"), ("is  Down.", "down"),
     ("UP", "up"), ("is up", "up"), ("went up", "up"), ("Active", "up"), ("frobbed", None)],
)
def test_normalise_state(text: str, state: str | None) -> None:
    assert normalise_state(text) == state


def test_extra_site_patterns() -> None:
    site = [
        re.compile(
            r"LINKMON (?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<host>\S+) port (?P<port>\S+) "
            r"(?P<state>went down|went up) peer (?P<peer_host>\S+):(?P<peer_port>\S+)"
            r"(?: sn=(?P<serial>\S+))?"
        ),
        re.compile(r"cablemon: (?P<port>IB\S+) (?P<state>FLAPPING)"),
        re.compile(r"LINKMON2 (?P<time>\S+) (?P<host>\S+) port (?P<port>\S+) (?P<state>went \w+)"),
    ]
    lines = [
        # no syslog envelope: the whole line is searched and `time` dates it (local in tz)
        (3, "LINKMON 2026-11-30 06:00:00 leaf7 port IB1/3 went down peer spine2:IB1/9 sn=MT99\n"),
        # in an envelope: the message is searched and site patterns win over the built-ins
        (8, "Nov 30 06:01:00 leaf7 cablemon: IB1/3 FLAPPING changed state to DOWN\n"),
        (9, "Nov 30 06:02:00 leaf7 mgmtd: Interface IB1/4 changed state to UP\n"),
        (10, "LINKMON2 yesterday leaf7 port IB1/3 went up\n"),  # `time` unreadable
        (11, "LINKMON2 leaf7 port IB1/3 went up\n"),  # matches nothing
    ]
    got = parse_syslog_lines(lines, reference=REF, tz=ZoneInfo("Europe/Berlin"), extra=site)
    assert [record(e) for e in got.events] == [
        {"line_no": 3, "at": "2026-11-30T05:00:00+00:00", "state": "down", "device": "leaf7",
         "port_name": "IB1/3", "peer_device": "spine2", "peer_port_name": "IB1/9",
         "cable_serial": "MT99"},
        {"line_no": 8, "at": "2026-11-30T05:01:00+00:00", "state": "flapping", "device": "leaf7",
         "port_name": "IB1/3"},
        {"line_no": 9, "at": "2026-11-30T05:02:00+00:00", "state": "up", "device": "leaf7",
         "port_name": "IB1/4"},
    ]
    assert [(u[0], u[2]) for u in got.unparsed] == [
        (10, "undated port event (up): unreadable time in site pattern"),
        (11, "no recognised envelope (truncated last line?)"),
    ]
    with pytest.raises(ValueError, match="state"):
        parse_syslog_lines([], extra=[re.compile(r"(?P<port>IB\S+) down")])


def test_half_written_last_line_without_terminators_is_still_caught() -> None:
    text = read(FIXTURES / "syslog" / "half_written_last_line.txt")
    stripped = [(no, line.rstrip("\n")) for no, line in numbered(text)]
    got = parse_syslog_lines(stripped)
    assert len(got.events) == 2
    assert got.unparsed == [(3, stripped[2][1], "unknown port state 'DO'")]


def test_line_numbers_are_the_callers() -> None:
    lines = [
        (17, "Nov 30 06:28:57 a mgmtd: Interface IB1/1 changed state to DOWN"),
        (90_211, "garbage"),
        (4_000_000, "Nov 30 06:28:58 a mgmtd: Interface IB1/1 changed state to UP"),
    ]
    got = parse_syslog_lines(lines, reference=REF)
    assert [e.line_no for e in got.events] == [17, 4_000_000]
    assert [u[0] for u in got.unparsed] == [90_211]


def test_guids_are_normalised() -> None:
    line = (
        "2024-06-21 03:11:00.000 [2003] [329] WARNING [Fabric_Topology] Link [x]: Link went "
        "down: (Switch:A:1/1/1)9C0591030090E000:7 - (Computer:gpu1 mlx5_2)2C90300A1B2C4:1\n"
    )
    (e,) = parse_ufm_events([(1, line)]).events
    assert (e.guid, e.port, e.peer_guid, e.peer_device, e.peer_port_name) == (
        "0x9c0591030090e000", 7, "0x0002c90300a1b2c4", "gpu1", "mlx5_2/1"
    )


# ---------------------------------------------------------------------------------------------
# The research samples (tests/fixtures/reference/syslog-samples.txt)

_SAMPLE_KEYWORDS = (
    "changed state", "Link went down", "Link is up", "Link up", "Link down", "link down",
    "link up", "Event 9", "Event 10", "Port module event", "changed state from",
)


def test_every_port_event_line_of_the_research_samples_is_understood() -> None:
    lines = [
        (no, line) for no, line in enumerate(read(SAMPLES).split("\n"), 1)
        if line and not line.startswith("#") and any(k in line for k in _SAMPLE_KEYWORDS)
    ]
    assert len(lines) >= 15
    for no, line in lines:
        got = parse_syslog_lines([(no, line)], reference=REF)
        if got.events:
            continue
        # Lines with no absolute time (dmesg seconds-since-boot, an RFC 5424 NILVALUE stamp,
        # a bare UFM message body) cannot become a PortEvent; they must still be recognised.
        assert len(got.unparsed) == 1, line
        assert got.unparsed[0][2].startswith("undated port event ("), (line, got.unparsed)
        assert line.startswith(("[", "<189>1 - ", "Link went down: ")), line


# ---------------------------------------------------------------------------------------------
# Fuzz: never raise, every line accounted for

_MANGLED = near_miss([line.rstrip("\n") for p in LOG_FIXTURES for _, line in numbered(read(p))],
                     actions=("cut", "insert", "replace", "raw"), noise=st.text(max_size=12))
_ANY_LINE = st.one_of(_MANGLED, st.text(max_size=200))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_ANY_LINE, max_size=12),
    kind=st.sampled_from(sorted(PARSERS)),
    year=st.one_of(st.none(), st.integers(1, 9999)),
    newline=st.booleans(),
    tz=st.sampled_from(["UTC", "America/Los_Angeles", "Pacific/Kiritimati", "Etc/GMT+12"]),
)
def test_parsers_never_raise(
    lines: list[str], kind: str, year: int | None, newline: bool, tz: str
) -> None:
    numbered_lines = [(i, line + ("\n" if newline else "")) for i, line in enumerate(lines, 1)]
    kw: dict[str, Any] = {"tz": ZoneInfo(tz)}
    if kind != "ufm_events":
        kw["year"] = year
        kw["reference"] = None if year else REF
    result = PARSERS[kind](numbered_lines, **kw)
    check_log_invariants(result, numbered_lines)


# The fast path for the commonest line shape must give exactly what the general path gives.
@given(
    stamp=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),  # noqa: DTZ001
    micros=st.sampled_from(["", ".5", ".478325", ".123"]),
    zone=st.sampled_from(["Z", "+00:00", "-07:00", "+05:30"]),
    host=st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True),
    tag=st.sampled_from(["mgmtd[4128]: [mgmtd.NOTICE]: ", "mgmtd: ", "pm[12]: "]),
    port=st.from_regex(r"IB1/[0-9]{1,2}(/[12])?", fullmatch=True),
    state=st.sampled_from(["UP", "DOWN"]),
)
def test_fast_path_equals_general_path(stamp: datetime, micros: str, zone: str, host: str,
                                       tag: str, port: str, state: str) -> None:
    from auditor.parse import syslog

    line = (f"{stamp:%Y-%m-%dT%H:%M:%S}{micros}{zone} {host} {tag}Interface {port} "
            f"changed state to {state}\n")
    fast, rest = syslog._fast_onyx([(3, line)])
    general = run_lines([(3, line)], syslog._one, year=None, reference=None,
                               tz=UTC).events
    assert rest == [] and fast == general
