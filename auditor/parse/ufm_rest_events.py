"""Parse the events UFM gives over REST: `GET /ufmRest/app/events` (a JSON array), or one event
(`GET /ufmRest/app/events/<id>`, an object).

Two shapes, both in NVIDIA's UFM Enterprise REST API guides, "Events REST API":
* v6.12.0-v6.16: `{"category", "severity", "timestamp": "2017-09-19 10:49:03.018", "counter",
  "object_name", "object_path", "name", "write_to_syslog", "type": "352", "id",
  "description"}`: `type` is the event id;
* v6.17.0 on (v6.18.0, v6.20.2, v6.22.1): `{"id", "name", "type": "Site", "event_type": "67",
  "severity", "timestamp": "2024-05-28 08:03:05", "counter": "N/A", "category", "object_name",
  "object_path", "write_to_syslog", "description"}`: `type` is the object type and
  `event_type` the event id.
The event id, object and description are read as the same event's events.log line is
(`auditor.parse.ufm_events.recognise_ufm_event`): 329/328 link down/up with both ends' GUIDs
and ports from the description (`Link went down: (Switch:A:1/17/1)9c05...:33 - (...)...`) or
from a `<guid>_<port> : <guid>_<port>` object, port objects, 702, switch and node events,
counter thresholds, and external events 551-554 carrying NVOS port events. The timestamp is the
UFM server's local time without zone, as in events.log: `tz` places it. An object name that is
a GUID (`9c0591030090e000`) or `<GUID>_<port>` gives the GUID (and port) as events.log's
`[dev_id: ...]` does.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, tzinfo

from auditor.errors import ParseError
from auditor.models import PortEvent, clip
from auditor.parse._common import json_document
from auditor.parse._logline import SyslogResult, localise
from auditor.parse.ufm_events import recognise_ufm_event

_KIND = "ufm-rest-events"
_DEV_ID_RE = re.compile(r"(?:0x)?[0-9a-fA-F]{16}(?:_\d{1,3})?")
_TIME_RE = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,6})?")
_ID_RE = re.compile(r'"id"\s*:\s*"?(\d{1,20})')
TEXT_MAX = 500
FIELD_MAX = 200


def _id_lines(text: str) -> dict[str, int]:
    lines: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        for m in _ID_RE.finditer(line):
            lines.setdefault(m.group(1), line_no)
    return lines


def _str(value: object) -> str:
    return "" if value is None else clip(str(value).strip(), FIELD_MAX)


def parse_ufm_rest_events(text: str, *, tz: tzinfo = UTC) -> SyslogResult:
    """The port events of a `/ufmRest/app/events` answer (see the module docstring)."""
    doc = json_document(text, _KIND)
    events = [doc] if isinstance(doc, dict) else doc
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise ParseError(_KIND, 1, text.lstrip()[:80], "expected a JSON array of event objects")
    if events and not all({"timestamp", "description"} <= set(e) for e in events[:1]):
        raise ParseError(_KIND, 1, text.lstrip()[:80],
                         "event objects have no timestamp and description: not UFM events")
    id_lines = _id_lines(text)
    result = SyslogResult()
    for index, e in enumerate(events, 1):
        ident = _str(e.get("id"))
        line_no = id_lines.get(ident, 0)
        shown = clip(json.dumps(e, sort_keys=True), TEXT_MAX)
        event_type, type_ = _str(e.get("event_type")), _str(e.get("type"))
        code = event_type if event_type.isdigit() else type_ if type_.isdigit() else ""
        if not code:
            result.unparsed.append((line_no or index, shown, "no event id (event_type/type)"))
            continue
        obj_type = type_ if type_ and not type_.isdigit() else ""
        name, path = _str(e.get("object_name")), _str(e.get("object_path"))
        dev_id = name if _DEV_ID_RE.fullmatch(name) else None
        obj = name if code in ("328", "329") else (path or name)
        description = _str(e.get("description")) if e.get("description") is not None else ""
        recognised = recognise_ufm_event(code, obj_type, obj, dev_id, description)
        if recognised is None:
            result.ignored += 1
            continue
        if isinstance(recognised, str):
            result.unparsed.append((line_no or index, shown, recognised))
            continue
        stamp = _str(e.get("timestamp"))
        if not _TIME_RE.fullmatch(stamp):
            result.unparsed.append((line_no or index, shown, "unreadable timestamp"))
            continue
        try:
            naive = datetime.fromisoformat(stamp.replace(",", ".").replace("T", " "))
        except ValueError:
            result.unparsed.append((line_no or index, shown, "impossible date"))
            continue
        event: PortEvent = recognised
        event.at = localise(naive, tz)
        event.line_no = line_no or index
        event.message = clip(description, TEXT_MAX) or shown
        result.events.append(event)
    return result
