"""Parse the NVOS event table (Quantum-2 and later switches running NVOS, NVIDIA's NVUE-based
switch OS): `nv show system events -o json` or the REST `GET /nvue_v1/system/events`.

**Shapes** (NVIDIA's own NVOS tests, echuawu/sonic-mgmt@f7d3019): `nv show system events` gives
`{"last": {"<id>": {...}, ...}, "table-occupancy": N}` (ngts/tests_nvos/system/
test_system_events.py:44, `output['last']`); some releases put the entries at the top level
beside `table-occupancy` (test_system_ssd_cleanup.py:123, `events_dict[str(table-occupancy)]`;
the NVL6 capture in zypgithub/sonic-mgmt, NVOS 25.03.0442, has `"table-size"` as a string and
`"table-occupancy"` as a number there); `... events last 25` gives `{"<id>": {...}}` alone.
All three are read: every key made of digits is an entry, `last` and `recent` are opened, the
rest (table size and occupancy) carries nothing. An entry is `{"resource": "sw1p1", "severity":
"INFORMATIONAL", "text": "Interface operational state is up", "time-created": "2026-07-21
09:03:13 IDT"}` (the zypgithub capture, entry 530, `resource` a port there), sometimes with a
`type-id` (test_platform_environment.py:350).

**Events read.** `Interface operational state is up|down` -> "up"/"down" and `Interface admin
state is up|down` -> "admin_up"/"admin_down" (the texts of the NVOS user manual for NVLink
switches v25.02.2444, "Event Management"; the IB-switch manual v25.02.5002 lists the event
table but shows only PSU events, so on IB switches these texts are assumed, not seen). A text
`Cleared: <text>` ends the condition: a cleared "is down" is the port back "up" (its message
keeps the `Cleared:`), anything else cleared is ignored. Other events (PSU, fan, health) are
ignored.
`device` is the switch the caller names (`host`: the table never names its own switch),
`port_name` the `resource` as printed (`sw1p1`, `sw3p2s1`; auditor.portmap turns it into the IB
port number), `code` the entry's id in the table: the table is a ring (1000 entries by
default, 10000 at most), so reading it again gives the same ids back and the ingest can drop
what it already has by (switch, id, time).

**Times.** `YYYY-MM-DD HH:MM:SS <zone>`. Since NVOS 25.02.5002 the zone is the IANA name
`Etc/UTC` (IB manual v25.02.5002 "Event Management Commands"); earlier releases print the
switch's abbreviation (`IDT` in the zypgithub capture). An IANA name is used as such; an
abbreviation is taken from `tz` (the switch's zone, when the caller knows it) when `tz` uses
that abbreviation at that moment, else from a short table of unambiguous ones (`IDT` is Israel
Daylight Time: NVIDIA's NVOS labs; `IST` is Israel, India or Ireland and is not guessed). An
entry with no zone is read in `tz`; with none given it is unparsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from auditor.errors import ParseError
from auditor.models import PortEvent, clip
from auditor.parse._common import json_document
from auditor.parse._logline import SyslogResult

_KIND = "nvos-events"

_TIME_RE = re.compile(
    r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(?:\.\d{1,6})?)"
    r"(?:\s*(Z|[+-]\d\d:?\d\d|[A-Za-z][\w/+-]{0,40}))?")
_TEXT_RE = re.compile(r"(Cleared:\s*)?Interface (operational|admin) state is (up|down)\.?",
                      re.IGNORECASE)
# Abbreviations with one meaning in practice (hours east of UTC).
ZONE_ABBREVIATIONS: dict[str, float] = {
    "UTC": 0, "GMT": 0, "Z": 0, "IDT": 3, "EST": -5, "EDT": -4, "PST": -8, "PDT": -7,
    "CET": 1, "CEST": 2, "JST": 9, "KST": 9,
}
NAME_MAX = 64
TEXT_MAX = 300


def _entries(doc: object) -> Iterator[tuple[str, dict[str, object]]]:
    if not isinstance(doc, dict):
        return
    for key, value in doc.items():
        if isinstance(key, str) and key.isdigit() and isinstance(value, dict):
            yield key, value
        elif key in ("last", "recent") and isinstance(value, dict):
            yield from _entries(value)


def _key_lines(text: str) -> dict[str, int]:
    """Line number of each entry key (`"530": {`), for reporting."""
    lines: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r'"(\d{1,12})"\s*:\s*\{', line):
            lines.setdefault(m.group(1), line_no)
    return lines


def _zone(name: str, naive: datetime, tz: tzinfo | None) -> tzinfo | str:
    """The zone a printed name stands for at `naive`, or why not."""
    if name == "Z" or re.fullmatch(r"[+-]\d\d:?\d\d", name):
        if name == "Z":
            return UTC
        sign = -1 if name[0] == "-" else 1
        digits = name[1:].replace(":", "")
        return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    if "/" in name or name == "UTC":
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            return f"unknown time zone {name[:40]!r}"
    if tz is not None and naive.replace(tzinfo=tz).tzname() == name:
        return tz
    hours = ZONE_ABBREVIATIONS.get(name.upper())
    if hours is not None:
        return timezone(timedelta(hours=hours))
    return f"time zone {name[:40]!r} is ambiguous or unknown (pass the switch's zone)"


def parse_time(value: str, tz: tzinfo | None) -> datetime | str:
    """An NVOS `time-created` -> aware UTC, or why it cannot be read."""
    m = _TIME_RE.fullmatch(value.strip())
    if m is None:
        return "unreadable time-created"
    try:
        naive = datetime.fromisoformat(f"{m.group(1)} {m.group(2)}")
    except ValueError:
        return "impossible date"
    if m.group(3) is None:
        if tz is None:
            return "time-created has no zone (pass the switch's zone)"
        zone: tzinfo | str = tz
    else:
        zone = _zone(m.group(3), naive, tz)
    if isinstance(zone, str):
        return zone
    return naive.replace(tzinfo=zone).astimezone(UTC)


def parse_nvos_events(text: str, *, host: str, tz: tzinfo | None = None) -> SyslogResult:
    """The port events of one switch's event table (see the module docstring)."""
    doc = json_document(text, _KIND)
    if not isinstance(doc, dict):
        raise ParseError(_KIND, 1, text.lstrip()[:80], "expected a JSON object of events")
    entries = list(_entries(doc))
    if not entries and not ({"table-occupancy", "last", "recent"} & set(doc)):
        raise ParseError(_KIND, 1, text.lstrip()[:80],
                         "no event entries and no table-occupancy: not an NVOS event table")
    key_lines = _key_lines(text)
    result = SyslogResult()
    device = clip(host, NAME_MAX)
    for key, entry in entries:
        line_no = key_lines.get(key, 0)
        raw_text = entry.get("text")
        shown = clip(json.dumps(entry, sort_keys=True), TEXT_MAX)
        if not isinstance(raw_text, str):
            result.unparsed.append((line_no, shown, "event without text"))
            continue
        m = _TEXT_RE.fullmatch(raw_text.strip())
        if m is None:
            result.ignored += 1
            continue
        cleared, kind, word = m.group(1) is not None, m.group(2).lower(), m.group(3).lower()
        if cleared and word != "down":
            result.ignored += 1
            continue
        state = ("up" if cleared else word) if kind == "operational" else f"admin_{word}"
        if cleared and kind == "admin":
            state = "admin_up"
        resource = entry.get("resource")
        if not isinstance(resource, str) or not resource.strip():
            result.unparsed.append((line_no, shown, "interface event without a resource"))
            continue
        created = entry.get("time-created")
        when = parse_time(created, tz) if isinstance(created, str) else "no time-created"
        if isinstance(when, str):
            result.unparsed.append((line_no, shown, when))
            continue
        result.events.append(PortEvent(
            at=when, state=state, device=device, port_name=clip(resource.strip(), NAME_MAX),
            code=key, line_no=line_no,
            message=clip(raw_text.strip(), TEXT_MAX)))
    return result
