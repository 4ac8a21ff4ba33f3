r"""Parse UFM `events.log` lines (native, or as UFM forwards them by syslog).

Native line (UFM server local time, no zone -> `tz`):
`2018-11-27 16:23:09.423 [665916] [627] CRITICAL [Maintenance] Grid [Grid]: text`
= time, [log counter], [event id], severity, [category], object type, [object]
(optionally followed by ` [dev_id: <guid>]`), `: `, text. UFM 6.x puts `Site [name] ` before
the category. Checked against NVIDIA's own log analyzer, Mellanox/ufm_sdk_3.0@3c4d311
plugins/ufm_log_analyzer_plugin/src/loganalyze/log_parsing/event_log_regex.py:19-23 (the regex
it reads `event.log` with). Its optional `(?:Site \[[\w-]*\] )?` (a name, possibly empty) sits
where it is here; here the site is anything but `]` (the syslog streaming plugin's grammar
allows `.`, `/` and `\` in it too: ufm_sdk_3.0@62341fb plugins/ufm_syslog_streaming_plugin/
conf/parsers.conf:4), the category anything but `]` (`\w+` there), and only the date is
stricter (a real date and time, where the analyzer takes any digits and dashes) and the object
type must start with a letter.
A forwarded line (`Nov 27 16:23:09 c650ufm03 eventlog[182483]: CRITICAL - <native>`) is accepted
too; its native part is what is read.

Event ids handled (the rest are ignored): 329 link went down -> "down", 328 link up ("Link is
up" in NVIDIA's analyzer, "Link went up" elsewhere) -> "up", 702 port unhealthy ("Peer Port
T2-E63-L-U37:1/19/2 is considered by SM as unhealthy due to FLAPPING.") -> "unhealthy",
907/908 -> "switch_down"/"switch_up", 331/332 -> "node_down"/"node_up", counter thresholds
110/112/113/115/116 and symbol BER 917/918 -> "counter_alarm", and external events 551-554
whose text is an NVOS interface event (`sw1p1: Interface operational state is down`, what UFM's
gNMI plugin forwards from NVOS switches) -> "down"/"up"/"admin_down"/"admin_up" with the
switch's GUID and the NVOS port name. `code` is the event id. `recognise_ufm_event` is shared
with the REST reader (auditor.parse.ufm_rest_events).

Link text, two generations of UFM:
* `Link went down: (Switch:T3-E21-N-U47:1/17/1)9c0591030090e000:33 - (Switch:T4-E45-L-U51:1/4/2)
  fc6a1c0300244e00:8, cable S/N: MT2330FT09118` (imbue-ai/cluster-health quotes, 2023-24);
* `Link went down: f4521403008817f0 (Switch: mellanox-SX6036) : 12 - e41d2d0300a4f482 (Computer:
  fsgb001 HCA-1) : 1` with object `Link [Source f452..._12  TO Dest: e41d..._1]` (IBM CSM, 2015).
The first end is `device`/`guid`/`port`, the second the peer. A switch end `name:1/17/1` gives
device `name` and port_name `1/17/1` (UFM's label, not Onyx's `IB1/17`); a `Computer` end
`host mlx5_0` gives device `host` and port_name `mlx5_0/<port>`.

Port objects (`IBPort [default / Switch: T3-E21-N-U47 / 1/17/1] [dev_id: 9c0591030090e000]`,
ufm_sdk fluentd parse_object_id.rb) give device, port_name and the node GUID (no port number).
GUIDs are normalised to `0x` + 16 lower-case hex digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from typing import NamedTuple

from auditor.models import PortEvent
from auditor.parse._common import norm_guid
from auditor.parse._logline import (
    UNSTAMPED,
    LogRun,
    Recognised,
    SyslogResult,
    run_lines,
)

# The event ids that carry a port state or alarm (see the module docstring).
UFM_EVENT_IDS = "110|112|113|115|116|328|329|331|332|551|552|553|554|702|907|908|917|918"
PREFILTER: str = r"\] \[(?:" + UFM_EVENT_IDS + r")\] "

_LINE_RE = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,6})?) \[\d+\] \[(\d+)\] \w+ "
    r"(?:Site \[[^\]]*\] )?\[[^\]]*\] ([A-Za-z][\w ]*?) \[(.*?)\]"
    r"(?: \[dev_id: ([\w:]+)\])?: (.*)",
    re.DOTALL,
)
_FORWARDED_RE = re.compile(r"\b[A-Za-z]+ - (\d{4}-\d\d-\d\d \d\d:)")

_COUNTER_CODES = frozenset({"110", "112", "113", "115", "116", "917", "918"})
# External events 551 (informational), 552 (notice), 553 (warning), 554 (error): what UFM's
# gNMI plugin makes of NVOS switch events (gnmi_events_server/helpers.py:155-167, constants of
# pdr_deterministic_plugin/ufm_sim_web_service/constants.py:65-67).
_EXTERNAL_CODES = frozenset({"551", "552", "553", "554"})
_NVOS_TEXT_RE = re.compile(
    r"(sw\d{1,3}p\d{1,2}(?:s\d)?|[\w.-]{1,40}): (Cleared:\s*)?Interface (operational|admin) "
    r"state is (up|down)\.?", re.IGNORECASE)
_STATES: dict[str, str] = {
    "329": "down",
    "328": "up",
    "702": "unhealthy",
    "907": "switch_down",
    "908": "switch_up",
    "331": "node_down",
    "332": "node_up",
    **dict.fromkeys(_COUNTER_CODES, "counter_alarm"),
    **dict.fromkeys(_EXTERNAL_CODES, "external"),
}

_LINK_TEXT_RE = re.compile(
    r"Link (?P<verb>went down|went up|is up|is down): (?P<a>.+?) - (?P<b>.+?)"
    r"(?:, cable S/N: (?P<sn>[^,\s]*))?(?:, .*)?$",
    re.DOTALL,
)
# The current form in one pass: "Link went down: (Switch:A:1/17/1)guid:33 - (Switch:B:1/4/2)
# guid:8, cable S/N: MT2330FT09118" (the general path below handles the rest).
_LINK_FAST_RE = re.compile(
    r"Link (went down|went up|is up|is down): "
    r"\(([A-Za-z][\w ]*?): ?([^)]*)\)([0-9a-fA-F]{1,16}):(\d{1,3}) - "
    r"\(([A-Za-z][\w ]*?): ?([^)]*)\)([0-9a-fA-F]{1,16}):(\d{1,3})"
    r"(?:, cable S/N: ([^,\s]*))?(?:,.*)?$",
    re.DOTALL,
)
_LINK_VERBS = {"went down": "down", "is down": "down", "went up": "up", "is up": "up"}
_END_NEW_RE = re.compile(
    r"\((?P<t>[A-Za-z][\w ]*?): ?(?P<d>[^)]*)\)(?P<g>[0-9a-fA-F]{1,16}):(?P<p>\d{1,3})"
)
_END_OLD_RE = re.compile(
    r"(?P<g>[0-9a-fA-F]{1,16}) \((?P<t>[A-Za-z][\w ]*?): ?(?P<d>[^)]*)\) ?: ?(?P<p>\d{1,3})"
)
_LABEL_RE = re.compile(r"\d{1,3}(?:/\d{1,3}){0,3}")
_OBJ_PORT_RE = re.compile(
    r"(?:[^/\]]*? / )?(?P<kind>[A-Z][\w ]*?): (?P<name>[^/]+?) / (?P<label>\S.*?)\s*"
)
_OBJ_NODE_RE = re.compile(r"(?:[^/\]]*? / )?(?P<kind>[A-Z][\w ]*?): (?P<name>[^/]+?)\s*")
_OBJ_LINK_RE = re.compile(
    r"(?P<g>[0-9a-fA-F]{1,16})_(?P<p>\d{1,3})[\w ]*?: ?(?P<pg>[0-9a-fA-F]{1,16})_(?P<pp>\d{1,3})"
)
_DEV_ID_RE = re.compile(r"(?:0x)?([0-9a-fA-F]{1,16})(?:_(\d{1,3}))?")
_UNHEALTHY_RE = re.compile(
    r"(?P<peer>Peer )?Port (?P<name>[^\s:]+):(?P<label>\S+?) is considered by SM as unhealthy"
)


class _End(NamedTuple):
    device: str | None
    port_name: str | None
    guid: str | None
    port: int | None


_NO_END = _End(None, None, None, None)


def _describe(kind: str, desc: str, port: str) -> tuple[str | None, str | None]:
    desc = desc.strip()
    if kind == "Computer":
        host, _, hca = desc.partition(" ")
        hca = hca.strip()
        return host or None, f"{hca}/{port}" if hca else None
    name, sep, label = desc.rpartition(":")
    if sep and name and _LABEL_RE.fullmatch(label):
        return name, label
    return desc or None, None


def _end(text: str) -> _End | None:
    text = text.strip()
    m = _END_NEW_RE.fullmatch(text) or _END_OLD_RE.fullmatch(text)
    if m is None:
        return None
    device, port_name = _describe(m.group("t"), m.group("d"), m.group("p"))
    return _End(device, port_name, norm_guid(m.group("g")), int(m.group("p")))


def _link_text(text: str, state: str | None, code: str | None) -> PortEvent | None:
    f = _LINK_FAST_RE.search(text)
    if f is not None:
        a_dev, a_name = _describe(f.group(2), f.group(3), f.group(5))
        b_dev, b_name = _describe(f.group(6), f.group(7), f.group(9))
        return PortEvent(
            UNSTAMPED,
            state or _LINK_VERBS[f.group(1)],
            a_dev, a_name, norm_guid(f.group(4)), int(f.group(5)),
            b_dev, b_name, norm_guid(f.group(8)), int(f.group(9)),
            f.group(10) or None,
            code,
        )
    m = _LINK_TEXT_RE.search(text)
    if m is None:
        return None
    a, b = _end(m.group("a")), _end(m.group("b"))
    if a is None or b is None:
        return None
    return PortEvent(
        UNSTAMPED,
        state or _LINK_VERBS[m.group("verb")],
        a.device, a.port_name, a.guid, a.port,
        b.device, b.port_name, b.guid, b.port,
        m.group("sn") or None,
        code,
    )


def recognise_link_text(msg: str) -> Recognised:
    """A bare UFM link text (`Link went down: (...)...`) anywhere in a message."""
    return _link_text(msg, None, None)


def _object(obj_type: str, obj: str, dev_id: str | None) -> _End:
    guid: str | None = None
    port: int | None = None
    if dev_id:
        d = _DEV_ID_RE.fullmatch(dev_id)
        if d is not None:
            guid = norm_guid(d.group(1))
            port = int(d.group(2)) if d.group(2) else None
    if obj_type in ("Grid", "Site"):
        return _End(None, None, guid, port)
    mp = _OBJ_PORT_RE.fullmatch(obj)
    if mp is not None:
        return _End(mp.group("name"), mp.group("label"), guid, port)
    mn = _OBJ_NODE_RE.fullmatch(obj)
    if mn is not None:
        return _End(mn.group("name"), None, guid, port)
    ml = _OBJ_LINK_RE.search(obj)
    if ml is not None:
        return _End(None, None, norm_guid(ml.group("g")), int(ml.group("p")))
    return _End(obj.strip() or None, None, guid, port)


def _link_object(obj: str, state: str, code: str) -> PortEvent | None:
    ml = _OBJ_LINK_RE.search(obj)
    if ml is None:
        return None
    return PortEvent(
        UNSTAMPED,
        state,
        guid=norm_guid(ml.group("g")),
        port=int(ml.group("p")),
        peer_guid=norm_guid(ml.group("pg")),
        peer_port=int(ml.group("pp")),
        code=code,
    )


def recognise_ufm_event(code: str, obj_type: str, obj: str, dev_id: str | None,
                        text: str) -> Recognised:
    """One UFM event (from an events.log line or the REST API) -> an unstamped event, a reason
    it cannot be read, or None (an event id that is not a port event, or an external event
    whose text is not an NVOS port event)."""
    state = _STATES.get(code)
    if state is None:
        return None
    if code in ("328", "329"):
        event = _link_text(text, state, code) or _link_object(obj, state, code)
        return event if event is not None else f"unreadable UFM link event {code}"
    o = _object(obj_type, obj, dev_id)
    if code in _EXTERNAL_CODES:
        # ufm_sdk_3.0@3e96418 plugins/gnmi_nvos_events_plugin/gnmi_events_server/
        # gnmi_events_receiver.py:115-141: an NVOS event becomes an external event of the
        # switch (object_name = its GUID) whose description is "<resource>: <text>".
        x = _NVOS_TEXT_RE.fullmatch(text.strip())
        if x is None:
            return None
        cleared, kind, word = x.group(2) is not None, x.group(3).lower(), x.group(4).lower()
        if cleared and word != "down":
            return None
        if kind == "operational":
            state = "up" if cleared else word
        else:
            state = "admin_up" if cleared else f"admin_{word}"
        return PortEvent(UNSTAMPED, state, o.device, x.group(1), o.guid, None, None, None,
                         None, None, None, code)
    peer = _NO_END
    if code == "702":
        u = _UNHEALTHY_RE.search(text)
        if u is not None:
            named = _End(u.group("name"), u.group("label"), None, None)
            if u.group("peer") and o.device is not None:
                peer = named
            elif o.device is None:
                o = named
    elif code in _COUNTER_CODES:
        # imbue-ai/cluster-health reads the text of a threshold event as the peer port's
        # object description ("default / Switch: X / 1/4/2.") when it is one.
        mp = _OBJ_PORT_RE.fullmatch(text.rstrip(" ."))
        if mp is not None:
            peer = _End(mp.group("name"), mp.group("label"), None, None)
    return PortEvent(
        UNSTAMPED, state, o.device, o.port_name, o.guid, o.port,
        peer.device, peer.port_name, None, None, None, code,
    )


def parse_ufm_line(line: str) -> tuple[datetime, PortEvent, str] | str | None:
    """One native events.log line -> (naive local time, unstamped event, text), a reason, or
    None.

    None: a well-formed line of an event id that is not a port event.
    """
    m = _LINE_RE.match(line)
    if m is None:
        return "not a UFM events.log line"
    code = m.group(2)
    if code not in _STATES:
        return None
    try:  # UFM server local time without zone: naive here, localised by the caller
        when = datetime.fromisoformat(m.group(1).replace(",", "."))
    except ValueError:
        return "impossible date"
    text = m.group(6)
    event = recognise_ufm_event(code, m.group(3), m.group(4), m.group(5), text)
    if event is None or isinstance(event, str):
        return event
    return when, event, text


def _one(run: LogRun, line_no: int, line: str) -> None:
    native = line
    if not line[:1].isdigit():
        fwd = _FORWARDED_RE.search(line)
        if fwd is None:
            run.result.unparsed.append((line_no, line, "not a UFM events.log line"))
            return
        native = line[fwd.start(1) :]
    parsed = parse_ufm_line(native)
    if parsed is None or isinstance(parsed, str):
        run.add(line_no, line, None, parsed, None, native)
        return
    when, event, text = parsed
    # A 329 whose text is empty still names its ends in the object: keep the line as message.
    run.add(line_no, line, when, event, None, text.strip() or native.strip())


def parse_ufm_events(lines: Iterable[tuple[int, str]], *, tz: tzinfo = UTC) -> SyslogResult:
    return run_lines(lines, _one, year=None, reference=None, tz=tz)
