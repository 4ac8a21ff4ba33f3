"""Unit and fuzz tests for the host-event parsers (issue #20): `sacctmgr show event -P`,
slurmctld.log, and a host's boot records (`journalctl --list-boots`, `last -x`).

Their fixtures run in tests/test_fixtures.py: every
`tests/fixtures/{slurm_events,slurmctld,boots}/<case>.txt` is parsed with the "params" of
`<case>.json` (tz: null = UTC, "+01:00", or an IANA name; boots also host, year, reference) and
compared with its "events" (records without `message`, times as ISO-8601 UTC), "unparsed"
([line_no, reason] pairs) and "ignored", or with its "error" ({line_no, reason}) when the whole
input must be refused. Each .json's "about" says where the capture came from:

* slurm_events/loopback_*, slurmctld/loopback_*: verbatim output of a loopback Slurm 22.05.8
  (Debian 12) driven through node failures, drains, reboots and "unexpected reboots" (slurmd
  restarted in a Linux time namespace whose boot clock reads ~1 s).
* boots/newer_systemd_252_*: verbatim journalctl 252 output over a journal file made with
  systemd-journal-remote from entries written here; boots/*_issue_*: verbatim from
  systemd/systemd issues; boots/last_*_2_38_*: verbatim util-linux 2.38.1 `last` over a wtmp
  written with utmpdump -r from records written here; boots/util_linux_2_41_test_*: verbatim
  util-linux test expectations; boots/unix_se_7760_*: a public answer's capture.
* *handmade* and *written_from_source*: written here (the "about" says from what).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.errors import ParseError
from auditor.models import HostEventsResult
from auditor.parse._hostevents import OTHER, UP, state_kind
from auditor.parse.boots import parse_boots
from auditor.parse.dmesg import parse_dmesg
from auditor.parse.slurm_events import parse_slurm_events
from auditor.parse.slurmctld import parse_slurmctld
from tests.strategies import near_miss
from tests.test_fixtures import check_host_event_invariants as check_invariants

FIXTURES = Path(__file__).parent / "fixtures"
KINDS = ("slurm_events", "slurmctld", "boots")
BERLIN = ZoneInfo("Europe/Berlin")
CHICAGO = ZoneInfo("America/Chicago")


def _tz(spec: str | None) -> tzinfo:
    if spec is None:
        return UTC
    if spec[0] in "+-":
        sign = -1 if spec[0] == "-" else 1
        hours, minutes = spec[1:].split(":")
        return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))
    return ZoneInfo(spec)


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def test_every_host_event_parser_has_fixtures() -> None:
    for kind in KINDS:
        cases = sorted((FIXTURES / kind).glob("*.txt"))
        assert len(cases) >= 3, kind
        assert all(c.with_suffix(".json").is_file() for c in cases), kind
    banners = [p for p in (FIXTURES / "dmesg").glob("*.json")
               if json.loads(p.read_text()).get("boots")]
    assert banners, "no dmesg fixture with a boot banner"


# --- Slurm node states ------------------------------------------------------------------------

# Every string node_state_string_compact returns at SchedMD/slurm@slurm-22-05-8-1 and
# slurm-25-11-7-1 (src/common/slurm_protocol_defs.c), which is what sacctmgr show event prints.
COMPACT = (
    "ALLOC", "ALLOC!", "ALLOC#", "ALLOC$", "ALLOC%", "ALLOC*", "ALLOC+", "ALLOC@", "ALLOC^",
    "ALLOC~", "BLOCK", "BOOT", "BOOT*", "BOOT^", "CANC_R", "CLOUD", "COMP", "COMP!", "COMP#",
    "COMP$", "COMP%", "COMP*", "COMP@", "COMP^", "COMP~", "DOWN", "DOWN!", "DOWN#", "DOWN$",
    "DOWN%", "DOWN*", "DOWN@", "DOWN^", "DOWN~", "DRAIN", "DRAIN!", "DRAIN#", "DRAIN$", "DRAIN%",
    "DRAIN*", "DRAIN@", "DRAIN^", "DRAIN~", "DRNG", "DRNG!", "DRNG#", "DRNG$", "DRNG%", "DRNG*",
    "DRNG@", "DRNG^", "DRNG~", "EXT", "FAIL", "FAIL*", "FAILG", "FAILG*", "FUTR", "FUTR!",
    "FUTR#", "FUTR$", "FUTR%", "FUTR*", "FUTR@", "FUTR^", "FUTR~", "IDLE", "IDLE!", "IDLE#",
    "IDLE$", "IDLE%", "IDLE*", "IDLE@", "IDLE^", "IDLE~", "INVAL", "MAINT", "MAINT*", "MIX",
    "MIX!", "MIX#", "MIX$", "MIX%", "MIX*", "MIX-", "MIX@", "MIX^", "MIX~", "NPC", "PLND",
    "POWERED_DN", "POWERING_UP", "POWRING_DN", "POW_DN", "POW_UP", "RESM", "RESV", "UNK", "UNK*",
)


@pytest.mark.parametrize("state", COMPACT)
def test_every_compact_node_state_is_known(state: str) -> None:
    assert state_kind(state) is not None


@pytest.mark.parametrize(
    ("state", "kind"),
    [
        ("DOWN", "down"),
        ("DOWN*", "down"),
        ("DOWN@", "down"),  # the base decides: a down node with a reboot queued is down
        ("down", "down"),
        ("DRAIN", "drain"),
        ("DRNG", "drain"),
        ("DRAIN@", "drain"),
        ("DRAINED", "drain"),
        ("DRAINING", "drain"),
        ("FAIL", "drain"),
        ("FAILG*", "drain"),
        ("IDLE+DRAIN", "drain"),
        ("MIXED+DRAIN+REBOOT_REQUESTED", "drain"),
        ("DOWN+DRAIN", "down"),
        ("IDLE+REBOOT_ISSUED", "reboot_requested"),
        ("BOOT", "reboot_requested"),
        ("BOOT^", "reboot_requested"),
        ("REBOOT^", "reboot_requested"),
        ("REBOOT_ISSUED", "reboot_requested"),
        ("IDLE@", "reboot_requested"),
        ("MIX^", "reboot_requested"),
        ("ALLOC+", UP),
        ("IDLE", UP),
        ("MIXED", UP),
        ("POW_DN", OTHER),
        ("MAINT", OTHER),
        ("FUTURE", OTHER),
        ("", None),
        ("RUNNING", None),
        ("DOWN**", None),
    ],
)
def test_state_kind(state: str, kind: str | None) -> None:
    assert state_kind(state) == kind


# --- sacctmgr show event -P -------------------------------------------------------------------

ROW = "labcluster|gpu-004|2026-12-01T23:46:32|2026-12-01T23:47:00|DOWN*|Not responding|root(0)"
HEADER = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"


def test_sacctmgr_minimal_reordered_columns() -> None:
    text = "State|TimeStart|NodeName\nDRAIN|2026-12-01T08:00:00|gpu-[001-002]\n"
    result = parse_slurm_events(text)
    assert [(e.host, e.kind, e.end_at, e.reason) for e in result.events] == [
        ("gpu-001", "drain", None, ""), ("gpu-002", "drain", None, "")]
    assert result.events[0].at == datetime(2026, 12, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("NodeName|TimeStart|TimeEnd", "missing column(s) State (need NodeName, TimeStart, State)"),
        ("NodeName|State", "missing column(s) TimeStart (need NodeName, TimeStart, State)"),
        ("JobID|JobName|State|Start|End|NodeList", "not a sacctmgr show event -P output"),
        ("Cluster|TimeStart|TimeEnd|Reason", "not a sacctmgr show event -P output: no NodeName column"),
        (ROW, "no header line: run sacctmgr show event -P without -n"),
        ("Unknown field 'cpus'", "not a sacctmgr show event -P output"),
    ],
)
def test_sacctmgr_refuses_on_line_1(header: str, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_slurm_events(f"{header}\n{ROW}\n")
    assert (err.value.line_no, err.value.reason, err.value.kind) == (
        1, reason, "sacctmgr show event")


def test_sacctmgr_header_after_blank_lines_and_repeated() -> None:
    text = f"\n\n{HEADER}\n{ROW}\nNodeName|TimeStart|State\ngpu-009|2026-12-01T00:00:00|FAIL\n"
    result = parse_slurm_events(text, tz=BERLIN)
    assert [(e.host, e.kind, e.line_no) for e in result.events] == [
        ("gpu-004", "down", 4), ("gpu-009", "drain", 6)]
    assert result.events[1].at == datetime(2026, 11, 30, 23, tzinfo=UTC)


def test_sacctmgr_crlf_and_empty_input() -> None:
    result = parse_slurm_events(f"{HEADER}\r\n{ROW}\r\n")
    assert [e.host for e in result.events] == ["gpu-004"] and not result.unparsed
    assert parse_slurm_events("") == HostEventsResult()
    assert parse_slurm_events("\n  \n") == HostEventsResult()


def test_sacctmgr_fewer_fields_mid_file_is_not_half_written() -> None:
    text = f"{HEADER}\nlabcluster|gpu-001|2026-12-01T23:46:32\n{ROW}\n"
    result = parse_slurm_events(text)
    assert [(n, r) for n, _, r in result.unparsed] == [(2, "fewer fields than the header")]
    assert [e.host for e in result.events] == ["gpu-004"]


def test_sacctmgr_reason_is_clipped() -> None:
    row = ROW.replace("Not responding", "x" * 500)
    (event,) = parse_slurm_events(f"{HEADER}\n{row}\n").events
    assert len(event.reason) == 200 and event.reason.endswith("\u2026")


# --- slurmctld.log ----------------------------------------------------------------------------


def _ctld(line: str, tz: tzinfo = UTC) -> HostEventsResult:
    return parse_slurmctld(line + "\n", tz=tz)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[2026-12-01T23:46:32.185] error: Nodes gpu-004 not responding, setting DOWN",
         [("gpu-004", "down", "Not responding")]),
        ("[2026-12-01T16:50:49] error: Nodes gpu-[001-002] not responding",
         [("gpu-001", "not_responding", ""), ("gpu-002", "not_responding", "")]),
        ("[2026-12-01T23:47:00.972] Node gpu-004 now responding", [("gpu-004", "responding", "")]),
        ("[2026-12-01T23:47:00.972] node gpu-004 returned to service",
         [("gpu-004", "returned", "")]),
        ("[2026-12-01T23:47:00.972] node_did_resp: node gpu-004 returned to service",
         [("gpu-004", "returned", "")]),
        ("[2026-12-01T23:47:23.124] reboot request queued for nodes gpu-[001,003]",
         [("gpu-001", "reboot_requested", ""), ("gpu-003", "reboot_requested", "")]),
        ("[2026-12-01T23:47:04.001] update_node: node gpu-002 state set to DRAINING",
         [("gpu-002", "drain", "")]),
        ("[2026-12-01T23:47:04.001] update_node: node gpu-002 state set to FAIL",
         [("gpu-002", "drain", "")]),
        ("[2026-12-01T23:47:04.001] update_node: node gpu-002 state set to ALLOCATED",
         [("gpu-002", "returned", "")]),
        ("[2026-12-01T23:47:04.001] drain_nodes: node gpu-002 state set to DRAIN",
         [("gpu-002", "drain", "")]),
        ("[2026-12-01T23:47:19+01:00] _validate_node_specs: Node n1 unexpectedly rebooted "
         "boot_time=1796165237 last response=1796165230",
         [("n1", "boot", "Node unexpectedly rebooted"),
          ("n1", "down", "Node unexpectedly rebooted")]),
    ],
)
def test_slurmctld_messages(line: str, expected: list[tuple[str, str, str]]) -> None:
    result = _ctld(line, tz=BERLIN)
    assert [(e.host, e.kind, e.reason) for e in result.events] == expected
    assert not result.unparsed and result.ignored == 0
    assert all(line.endswith(e.message) for e in result.events)


@pytest.mark.parametrize(
    "line",
    [
        "[2026-12-01T23:46:03.322] slurmctld version 22.05.8 started on cluster labcluster",
        "[2026-12-01T23:46:32.184] Killing JobId=1 on failed node gpu-004",
        "[2026-12-01T23:48:24.107] error: Node gpu-003 appears to have a different slurm.conf "
        "than the slurmctld.",
        "[2026-12-01T23:48:30.355] Invalid node state transition requested for node gpu-002 "
        "from=IDLE to=RESUME",
        "[2026-12-01T23:48:30.355] update_node: node gpu-002 reason set to: cable",
        "[2026-12-01T23:48:30.355] error: ControlMachine head not responding, BackupController1 "
        "head2 taking over",
        "[2026-12-01T23:48:30.355] update_node: node gpu-002 state set to FUTURE",
        "[2026-12-01T23:48:30.355] error: Script for JobId=4 lost, state set to FAILED",
        "slurmctld: continuation line without a stamp",
    ],
)
def test_slurmctld_ignored_lines(line: str) -> None:
    result = _ctld(line)
    assert result.events == [] and result.unparsed == [] and result.ignored == 1


def test_slurmctld_reason_joins_only_its_own_update() -> None:
    text = (
        "[2026-12-01T23:47:04.001] update_node: node gpu-002 reason set to: IB link flapping\n"
        "[2026-12-01T23:47:04.001] update_node: node gpu-002 state set to DRAINED\n"
        "[2026-12-01T23:47:05.001] update_node: node gpu-003 reason set to: old\n"
        "[2026-12-01T23:47:09.027] update_node: node gpu-003 state set to DOWN\n"
        "[2026-12-01T23:47:10.000] update_node: node gpu-002 state set to DOWN\n"
    )
    result = parse_slurmctld(text)
    assert [(e.host, e.kind, e.reason) for e in result.events] == [
        ("gpu-002", "drain", "IB link flapping"), ("gpu-003", "down", ""), ("gpu-002", "down", "")]
    assert result.ignored == 2


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[2026-12-01T23:46:32.185] error: Nodes gpu-[004 not responding, setting DOWN",
         "bad hostlist"),
        ("[2026-12-01T23:46:32.185] Nodes gpu-004 not responding any more", "unexpected form of "
         "a node message"),
        ("[2026-13-01T23:46:32.185] Node gpu-004 now responding", "bad time stamp"),
        ("[yesterday] Node gpu-004 now responding", "bad time stamp"),
        ("[2026-12-01T23:47:19.081] validate_node_specs: Node n1 unexpectedly rebooted "
         "boot_time=99999999999999999999 last response=1", "boot_time out of range"),
    ],
)
def test_slurmctld_unparsed(line: str, reason: str) -> None:
    result = _ctld(line)
    assert [(n, r) for n, _, r in result.unparsed] == [(1, reason)]
    assert result.events == []


def test_slurmctld_complete_last_line_without_newline_is_read() -> None:
    result = parse_slurmctld("[2026-12-01T23:47:00.972] Node gpu-004 now responding")
    assert [e.kind for e in result.events] == ["responding"] and not result.unparsed


def test_slurmctld_zone_in_stamp_wins_over_tz() -> None:
    (event,) = _ctld("[2026-12-01T23:47:00.972+01:00] Node n now responding", tz=CHICAGO).events
    assert event.at == datetime(2026, 12, 1, 22, 47, 0, 972000, tzinfo=UTC)
    (event,) = _ctld("[2026-12-01T16:47:00] Node n now responding", tz=CHICAGO).events
    assert event.at == datetime(2026, 12, 1, 22, 47, tzinfo=UTC)


# --- journalctl --list-boots ------------------------------------------------------------------

NEW = " -1 6503176bb8ce4a3ca1edd3a9aec02b72 {first} {last}"


def _boots(text: str, **kwargs: Any) -> HostEventsResult:
    return parse_boots(text + "\n", host="h", **kwargs)


def test_list_boots_sample_row_from_the_notes() -> None:
    line = (" -1 6503176bb8ce4a3ca1edd3a9aec02b72 Sat 2025-11-01 02:54:13 UTC "
            "Sat 2025-11-01 03:08:54 UTC")
    (event,) = _boots(line).events
    assert (event.at, event.end_at, event.reason) == (
        datetime(2025, 11, 1, 2, 54, 13, tzinfo=UTC), datetime(2025, 11, 1, 3, 8, 54, tzinfo=UTC),
        "boot 6503176bb8ce4a3ca1edd3a9aec02b72")


@pytest.mark.parametrize(
    ("first", "utc"),
    [
        # 2026-10-25 02:30 happens twice in Berlin: the zone name says which.
        ("Sun 2026-10-25 02:30:00 CEST", datetime(2026, 10, 25, 0, 30, tzinfo=UTC)),
        ("Sun 2026-10-25 02:30:00 CET", datetime(2026, 10, 25, 1, 30, tzinfo=UTC)),
        ("Sun 2026-10-25 02:30:00 GMT", datetime(2026, 10, 25, 2, 30, tzinfo=UTC)),
        ("Sun 2026-10-25 08:00:00 +0530", datetime(2026, 10, 25, 2, 30, tzinfo=UTC)),
        ("Sun 2026-10-25 02:30:00 UTC-05:00", datetime(2026, 10, 25, 7, 30, tzinfo=UTC)),
    ],
)
def test_list_boots_zone_names(first: str, utc: datetime) -> None:
    line = NEW.format(first=first, last="Mon 2026-10-26 09:00:00 CET")
    (event,) = _boots(line, tz=BERLIN).events
    assert event.at == utc


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        ("Sun 2026-10-25 02:30:00 EDT", "time zone abbreviation not known: pass --tz"),
        ("Sat 2026-10-25 02:30:00 CET", "weekday does not match the date"),
        ("So 2026-10-25 02:30:00 CET", "unknown locale or time stamp: run with LC_ALL=C"),
        ("n/a", "no time (n/a)"),
        ("Sun 2026-02-30 02:30:00 CET", "bad date"),
        ("Mon 2026-10-26 10:00:00 CET", "last entry before first entry"),
    ],
)
def test_list_boots_unparsed(first: str, reason: str) -> None:
    result = _boots(NEW.format(first=first, last="Mon 2026-10-26 09:00:00 CET"), tz=BERLIN)
    assert [(n, r) for n, _, r in result.unparsed] == [(1, reason)] and not result.events


def test_list_boots_older_layout_dashed_uuid_and_garbage() -> None:
    text = ("-1 a2e1f9d5-d6c9-5f9c-0e4f-8b3d2e5f0a9b Fri 2026-05-01 14:00:00 UTC\u2014"
            "Fri 2026-05-01 22:19:00 UTC\n No journal files were found.")
    result = parse_boots(text, host="h")
    assert [e.at for e in result.events] == [datetime(2026, 5, 1, 14, tzinfo=UTC)]
    assert [(n, r) for n, _, r in result.unparsed] == [(2, "not a journalctl --list-boots row")]


# --- last -------------------------------------------------------------------------------------

BOOT_ROW = "reboot   system boot  6.1.0-25-amd64   {login} {tail}"


def test_last_sample_rows_from_the_notes() -> None:
    text = "\n".join((
        BOOT_ROW.format(login="Tue Oct 15 19:43", tail="  still running"),
        "shutdown system down  6.1.0-25-amd64   Tue Oct 15 19:40 - 19:43  (00:03)",
        BOOT_ROW.format(login="Tue Oct 15 19:16", tail="- 19:40  (00:24)"),
    ))
    result = parse_boots(text, host="h", year=2024)
    assert [(e.kind, e.at.isoformat(), _when(e.end_at)) for e in result.events] == [
        ("boot", "2024-10-15T19:43:00+00:00", None),
        ("shutdown", "2024-10-15T19:40:00+00:00", "2024-10-15T19:43:00+00:00"),
        ("boot", "2024-10-15T19:16:00+00:00", "2024-10-15T19:40:00+00:00"),
    ]


def test_last_year_walks_back_over_new_year_and_a_gap() -> None:
    text = "\n".join((
        BOOT_ROW.format(login="Fri Jan  2 03:15", tail="  still running"),
        BOOT_ROW.format(login="Wed Dec 31 23:50", tail="- 03:10 (1+03:20)"),
        # No record for years: Tuesday 28 February is 2023 (2025's is a Friday, 2024's a
        # Wednesday).
        BOOT_ROW.format(login="Tue Feb 28 10:00", tail="- 11:00  (01:00)"),
        # Saturday 28 February: 2015, more than four years before 2023: refused.
        BOOT_ROW.format(login="Sat Feb 28 09:00", tail="- 09:50  (00:50)"),
    ))
    result = parse_boots(text, host="h", reference=datetime(2026, 1, 3, tzinfo=UTC))
    assert [e.at.date().isoformat() for e in result.events if e.kind == "boot"] == [
        "2026-01-02", "2025-12-31", "2023-02-28"]
    assert result.events[1].end_at == datetime(2026, 1, 2, 3, 10, tzinfo=UTC)
    assert [(n, r) for n, _, r in result.unparsed] == [(4, "weekday does not match the date")]


def test_last_end_crosses_midnight_and_days() -> None:
    text = "\n".join((
        BOOT_ROW.format(login="Wed Dec 31 23:50", tail="- 00:17  (00:27)"),
        BOOT_ROW.format(login="Mon Dec 29 17:42", tail="- 11:00 (1+17:17)"),
    ))
    result = parse_boots(text, host="h", year=2025)
    assert [_when(e.end_at) for e in result.events] == [
        "2026-01-01T00:17:00+00:00", "2025-12-31T11:00:00+00:00"]


def test_last_crash_without_a_newer_boot_uses_the_length() -> None:
    line = BOOT_ROW.format(login="Mon Dec 29 17:42", tail="- crash (3+09:33)")
    result = parse_boots(line, host="h", year=2025, tz=CHICAGO)
    assert [(e.kind, e.at.isoformat()) for e in result.events] == [
        ("boot", "2025-12-29T23:42:00+00:00"), ("crash", "2026-01-02T09:15:00+00:00")]


def test_last_without_host_column_host_last_and_wtmpdb() -> None:
    text = "\n".join((
        "reboot   system boot  Mon Jan  5 11:03   still running",  # last -R
        "reboot   system boot  Fri Jan  2 03:15 - 11:00 (3+07:44)    6.1.0-28-amd64",  # last -a
        # wtmpdb (src/wtmpdb.c print_line: " - " always, ISO with %z, soft-reboot)
        "soft-reboot system boot  6.1.0-28-amd64 2026-01-01T10:00:00+0100 - "
        "2026-01-02T03:15:40+0100  (17:15)",
        "reboot   system boot  6.1.0-28-amd64 2025-12-29T17:42:11+0100 - crash",
    ))
    result = parse_boots(text, host="h", year=2026, tz=CHICAGO)
    assert [(e.kind, e.at.isoformat(), e.reason) for e in result.events] == [
        ("boot", "2026-01-05T17:03:00+00:00", ""),
        ("boot", "2026-01-02T09:15:00+00:00", ""),
        ("boot", "2026-01-01T09:00:00+00:00", "soft-reboot"),
        ("boot", "2025-12-29T16:42:11+00:00", ""),
        ("crash", "2026-01-01T09:00:00+00:00", "no shutdown record before the next boot"),
    ]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (BOOT_ROW.format(login="Di Okt 15 19:43", tail="  still running"),
         "unknown locale or time stamp: run with LC_ALL=C"),
        (BOOT_ROW.format(login="Wed Oct 15 19:43:12 2024", tail="  still running"),
         "weekday does not match the date"),  # -F: the year is printed, 2024-10-15 is a Tuesday
        ("reboot   system boot  6.1.0-25-amd64     running", "no time in the record (last "
         "--time-format notime?)"),
        ("... and 40 more", "not a last record"),
    ],
)
def test_last_unparsed(line: str, reason: str) -> None:
    result = parse_boots(line + "\n", host="h", year=2024)
    assert [(n, r) for n, _, r in result.unparsed] == [(1, reason)] and not result.events


def test_last_cut_record_at_the_end() -> None:
    text = BOOT_ROW.format(login="Tue Oct 15 19:43", tail="  still running") + "\nreboot   sys"
    result = parse_boots(text, host="h", year=2024)
    assert [(n, r) for n, _, r in result.unparsed] == [(2, "half-written line")]


# --- dmesg boot banner ------------------------------------------------------------------------

BANNER = ("Linux version 6.1.0-25-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian "
          "12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC "
          "Debian 6.1.106-3 (2024-08-26)")


def test_dmesg_banner_forms() -> None:
    text = "\n".join((f"[Tue Oct 15 19:43:12 2024] {BANNER}",
                      f"2024-10-15T19:43:12,000000+02:00 {BANNER}",
                      f"2024-10-15T19:43:12+0200 gpu-001 kernel: {BANNER}",
                      f"2024-10-15T19:43:12+0200 gpu-001 sshd[12]: {BANNER}",
                      f"[    0.000000] {BANNER}"))
    result = parse_dmesg(text, host="gpu-001", tz=timezone(timedelta(hours=2)))
    assert [(b.line_no, b.at, b.reason) for b in result.boots] == [
        (n, datetime(2024, 10, 15, 17, 43, 12, tzinfo=UTC), "Linux 6.1.0-25-amd64")
        for n in (1, 2, 3)]
    assert [(n, r) for n, _, r in result.unparsed] == [(5, "no boot time")]
    assert result.ignored == 1  # not a kernel line


# --- fuzz -------------------------------------------------------------------------------------

_FUZZ = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _fixture_lines(kind: str) -> list[str]:
    return [line for p in sorted((FIXTURES / kind).glob("*.txt"))
            for line in p.read_text().split("\n") if line.strip()]


def _text(kind: str) -> st.SearchStrategy[str]:
    return st.lists(near_miss(_fixture_lines(kind)), min_size=1, max_size=8).map("\n".join)


Parser = Callable[[str], HostEventsResult]
_PARSERS: dict[str, Parser] = {
    "slurmctld": lambda text: parse_slurmctld(text, tz=BERLIN),
    "boots": lambda text: parse_boots(text, host="h", tz=BERLIN,
                                      reference=datetime(2026, 1, 6, tzinfo=UTC)),
}


@_FUZZ
@given(text=st.one_of(st.text(), _text("slurmctld")))
def test_fuzz_slurmctld_never_raises(text: str) -> None:
    result = _PARSERS["slurmctld"](text)
    check_invariants(result, text)
    lines = text.replace("\r\n", "\n").split("\n")
    read = {e.line_no for e in result.events} | {n for n, _, _ in result.unparsed}
    assert len(read) + result.ignored == sum(1 for line in lines if line.strip())


@_FUZZ
@given(text=st.one_of(st.text(), _text("boots")))
def test_fuzz_boots_never_raises(text: str) -> None:
    result = _PARSERS["boots"](text)
    check_invariants(result, text)


@_FUZZ
@given(rows=st.lists(near_miss(_fixture_lines("slurm_events")), max_size=8))
def test_fuzz_sacctmgr_raises_only_parse_errors(rows: list[str]) -> None:
    text = "\n".join([HEADER, *rows])
    error: ParseError | None = None
    try:
        result = parse_slurm_events(text, tz=BERLIN)
    except ParseError as exc:
        error = exc
    if error is not None:
        assert error.reason and 1 <= error.line_no <= len(rows) + 1
    else:
        check_invariants(result, text)


def test_last_year_given_is_the_newest_records_year() -> None:
    # 2025-01-01 is a Wednesday: the given year does not fit the newest record.
    line = BOOT_ROW.format(login="Thu Jan  1 10:00", tail="  still running")
    result = parse_boots(line, host="h", year=2025)
    assert [(n, r) for n, _, r in result.unparsed] == [(1, "weekday does not match the date")]
    (event,) = parse_boots(line, host="h", year=2026).events
    assert event.at == datetime(2026, 1, 1, 10, tzinfo=UTC)
    # A reference is only an upper limit: a host up for over a year is found further back.
    (event,) = parse_boots(line, host="h", reference=datetime(2026, 12, 1, tzinfo=UTC)).events
    assert event.at == datetime(2026, 1, 1, 10, tzinfo=UTC)
    (event,) = parse_boots(line, host="h", reference=datetime(2028, 12, 1, tzinfo=UTC)).events
    assert event.at == datetime(2026, 1, 1, 10, tzinfo=UTC)
    result = parse_boots(line, host="h", reference=datetime(2025, 12, 1, tzinfo=UTC))
    assert [(n, r) for n, _, r in result.unparsed] == [(1, "weekday does not match the date")]


def test_last_negative_length_and_end_without_length() -> None:
    # A clock set back: the end is before the login, so unknown.
    line = BOOT_ROW.format(login="Mon Dec  1 00:01", tail="- 00:00 (-00:01)")
    (event,) = parse_boots(line, host="h", year=2025).events
    assert (event.at, event.end_at) == (datetime(2025, 12, 1, 0, 1, tzinfo=UTC), None)
    # No length: the end is the next such time of day.
    (event,) = parse_boots("reboot system boot Sun Nov 30 23:50 00:10", host="h",
                           year=2025).events
    assert event.end_at == datetime(2025, 12, 1, 0, 10, tzinfo=UTC)
