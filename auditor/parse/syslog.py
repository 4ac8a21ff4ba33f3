"""Parse syslog-style log lines that carry InfiniBand (and host HCA / RoCE) port events.

Input is `(line_no, line)` pairs: the caller pre-filters a large file with `PREFILTER`
(auditor.collect.logfile runs ripgrep, else GNU grep, else a Python scan), so line numbers need
not be contiguous. Nothing here raises for a bad line;
every line gets exactly one outcome: a `PortEvent`, an entry in `SyslogResult.unparsed`
(line_no, line, reason) when the line has no readable envelope, no absolute time, an impossible
date or an unreadable port event, or a count in `SyslogResult.ignored` (readable, no port event).

Envelopes (provenance: /work/shared/reference/switch/syslog-samples.txt):

* rsyslog `RSYSLOG_FileFormat` (RFC 3339): `2026-11-30T06:28:57.478325+00:00 host tag[pid]: msg`.
* RFC 3164 / `RSYSLOG_TraditionalFileFormat`: `[<PRI>]Nov 30 06:28:57 host tag: msg`, also with
  microseconds (`May 23 09:17:30.561319 host ...`, as SONiC writes /var/log/syslog).
* RFC 5424: `<189>1 2026-11-30T06:28:57.478325+00:00 host app procid msgid [sd...] msg`. A `port`
  (or `interface`, `ifName`) SD parameter names the port when the message does not
  (`[linkstate@32473 port="IB1/17"] changed state to DOWN`). A `-` timestamp (NILVALUE) leaves
  the line undated.
* Onyx `logging monitor` CLI form `Wed Jul 10 11:30:42 2013: Interface IB1/17 ...` and
  `dmesg -T` (`[Wed Jul 10 11:30:42 2013] msg`); both lack a host, so `device` stays None.
* UFM events.log lines, native or forwarded by UFM's syslog (`eventlog[pid]: SEVERITY - <native>`),
  go to `auditor.parse.ufm_events`; native opensm.log lines go to `auditor.parse.opensm`.
* Plain `dmesg` (`[ 6213.959196] msg`) has only seconds since boot: a port event in it is
  unparsed as "undated port event (<state>): ...", other such lines are ignored. The same
  reason marks a recognised event on a line without any envelope (e.g. a bare UFM text).

Times: a stamp with a zone is converted to UTC; a stamp without one is wall time in `tz`
(default UTC; pass `zoneinfo.ZoneInfo(...)` for `--tz`). Stamps without a year (RFC 3164,
opensm) go through `infer_years`: `year=` is the year of the first such line; otherwise the last
line is put in the latest year that keeps it at or before `reference` (the file's mtime) + 1 day;
a step back of more than ~6 months between consecutive lines is a new year. With neither, the
newest dated line of the same input is the reference; with no dated line either, yearless lines
are unparsed ("year unknown"). A UFM line forwarded in a zoneless envelope keeps UFM's own time
(it has the year); an envelope with a zone wins.

Recognised messages (`device` = envelope host unless said otherwise; state words any case):

* `Interface IB1/17 changed state to DOWN` (Onyx/MLNX-OS; also `IB1/1/2`, `Eth1/1`, Arista/Cisco
  `Interface Ethernet28, changed state to down`) and SONiC SAI `Port 12500 changed state to down`
  (port_name `12500`, the SDK logical port as printed). `administratively down` -> "admin_down";
  a state word outside `normalise_state` is unparsed ("unknown port state").
* mlxsw `mlxsw_spectrum 0000:01:00.0 swp1: link down`, host `mlx5_core 0000:01:00.0 enp1s0f0:
  Link up`, `mlx4_en: eth0: Link Down`: port_name is the netdev name.
* IPoIB debug `ib0: Event 10 on device mlx5_0 port 1`: 10 (IB_EVENT_PORT_ERR) "down", 9
  (IB_EVENT_PORT_ACTIVE) "up", code "10"/"9", port_name `mlx5_0/1`; other numbers are ignored.
* `mlx5_core 0000:01:00.0: Port module event: module 0, Cable plugged|unplugged`, the
  `[error]` variant, and FreeBSD's `mlx5_port_module_event: ... Module 0, status: ...`:
  "module_plugged", "module_unplugged", "module_error"; port_name `module0` (the PCI address
  stays in `message`).
* opensm texts (`... port 3 changed state from ACTIVE to DOWN`, trap 128) and UFM link texts
  (`Link went down: (Switch:...)...`) anywhere in a message: see those modules.

`guid`/`port` are set only where the source names the node GUID itself (UFM, opensm).
`message` is the text after the envelope host (tag included).

Site-specific patterns (`extra=`): compiled regexes with named groups, tried in order, before
the built-in recognisers, with `search` on the message (the text after the host, tag included),
or on the whole line when the envelope is unreadable. Group `state` is required (ValueError
otherwise); optional groups: `time` (ISO 8601, `2018-11-27 16:23:09.423`, `Nov 30 06:28:57`,
`Wed Jul 10 11:30:42 2013`; overrides the envelope time, zoneless = `tz`), `host` (device),
`port` (port_name), `peer_host`, `peer_port`, `serial` (cable_serial). `state` goes through
`normalise_state` (`DOWN`, `went down`, `is down` -> "down"; `UP`, `is up`, `went up`, `Active`
-> "up"); any other text is kept lower-cased with `_` for spaces. `PREFILTER` covers the
built-ins only: the caller ORs its site patterns into the pre-filter.

Half-written lines: pass lines with their terminators when reading a live file. A line without
one after lines that had one is the writer's unfinished last line and is unparsed (a cut UFM line
would otherwise give a wrong port number or serial). Without terminators, a last line cut in its
state word is still caught as an unknown or truncated state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, tzinfo

from auditor.models import PortEvent
from auditor.parse import opensm, ufm_events
from auditor.parse._logline import (
    DAY_FIELD,
    MONTHS,
    NO_ENVELOPE,
    TWO_DIGITS,
    UNSTAMPED,
    LogRun,
    Recognised,
    Stamp,
    SyslogResult,
    port_event,
    run_lines,
)

# One RE2-compatible pattern (no lookaround, no backreference) that matches every line a
# built-in recogniser can turn into an event: each alternative is one recogniser's gate in
# `_recognise` (a superset is harmless, a miss loses events).
PREFILTER: str = (
    r"changed state|[Ll]ink (?:[Uu]p|[Dd]own)|Link (?:went (?:down|up)|is up)"
    r"|Event (?:9|10) on device|[Pp]ort module event|port_module_event|num:128 "
    r"|\] \[(?:" + ufm_events.UFM_EVENT_IDS + r")\] "
)

# ---------------------------------------------------------------------------------------------
# States


_STATE_WORDS: dict[str, str] = {
    "down": "down",
    "went down": "down",
    "is down": "down",
    "link down": "down",
    "linkdown": "down",
    "polling": "down",
    "disabled": "down",
    "up": "up",
    "went up": "up",
    "is up": "up",
    "link up": "up",
    "linkup": "up",
    "active": "up",
    "init": "up",
    "initialize": "up",
    "armed": "up",
    "administratively down": "admin_down",
}
_STATE_FAST: dict[str, str] = {
    variant: state
    for word, state in _STATE_WORDS.items()
    for variant in (word, word.upper(), word.title(), word.capitalize())
}


def normalise_state(text: str) -> str | None:
    """`DOWN`, `Down`, `went down`, `is down` -> "down"; `UP`, `is up`, `Active` -> "up"."""
    state = _STATE_FAST.get(text)
    if state is None:
        state = _STATE_WORDS.get(" ".join(text.lower().split()).rstrip(".!"))
    return state


# ---------------------------------------------------------------------------------------------
# Message recognisers

_CHANGED = "changed state to"
# The word before the port name: Onyx `Interface IB1/17 changed state to DOWN`, Arista/Cisco
# `Interface Ethernet28, changed state to down`, SONiC SAI `Port 12500 changed state to down`.
_PORT_WORDS = frozenset({"Interface", "interface", "Port", "port"})
# mlxsw (`mlxsw_spectrum 0000:01:00.0 swp1: link down`), mlx5 (`... enp1s0f0: Link up`), mlx4_en.
_NETDEV_LINK_RE = re.compile(
    r"\b(?:mlx5_core|mlxsw_\w+|mlx4_en)(?: [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])?:?"
    r" (?P<dev>[^\s:]+): [Ll]ink (?P<state>[Uu]p|[Dd]own)\b"
)
# ipoib_dbg(): "%s: Event %d on device %s port %d" (only with ib_ipoib debug_level=1).
_IPOIB_EVENT_RE = re.compile(r"Event (?P<num>\d+) on device (?P<hca>[\w.-]+) port (?P<port>\d+)")
_IPOIB_STATES = {"9": "up", "10": "down"}  # enum ib_event_type: PORT_ACTIVE, PORT_ERR
# Linux mlx5 events.c: "Port module event: module %u, Cable plugged|unplugged" and
# "Port module event[error]: module %u, Cable error, <reason>"; FreeBSD mlx5_port_module_event.
_MODULE_RE = re.compile(
    r"[Pp]ort module event(?:\[error\])?: module (?P<mod>\d+), Cable (?P<what>\w+)"
    r"|mlx5_port_module_event:\d+:\(pid \d+\): Module (?P<bsd_mod>\d+), status: (?P<bsd>[\w ]+)"
)
_MODULE_STATES = {
    "plugged": "module_plugged",
    "unplugged": "module_unplugged",
    "error": "module_error",
    "plugged and enabled": "module_plugged",
    "plugged and disabled": "module_plugged",
}


def _changed_state(msg: str, sd_port: str | None) -> Recognised:
    i = msg.find(_CHANGED)
    if i < 0:
        return None
    tail = msg[i + len(_CHANGED) :]
    if tail[:1].isalnum():  # "changed state toward ..."
        return None
    after = tail.split(None, 2)
    if not after:
        return "truncated after 'changed state to'"
    word = after[0].rstrip(".,;!")
    if word.lower() == "administratively" and len(after) > 1:
        word = "administratively " + after[1].rstrip(".,;!")
    # A bare "changed state to DOWN" takes its port from RFC 5424 structured data.
    before = msg[:i].rsplit(None, 3)
    port = sd_port
    if len(before) >= 2 and before[-2] in _PORT_WORDS:
        port = before[-1].rstrip(",")
    elif len(before) >= 3 and before[-3] in _PORT_WORDS and before[-2].isalpha():
        port = f"{before[-2]} {before[-1].rstrip(',')}"  # "Interface ib 1/17"
    if port is None:  # "Fan 1 changed state to ...": not a port
        return None
    state = normalise_state(word)
    if state is None:
        return f"unknown port state {word!r}"
    return port_event(state, port)


def _netdev_link(msg: str) -> Recognised:
    m = _NETDEV_LINK_RE.search(msg)
    if m is None:
        return None
    return port_event(m.group("state").lower(), m.group("dev"))


def _ipoib_event(msg: str) -> Recognised:
    m = _IPOIB_EVENT_RE.search(msg)
    if m is None:
        return None
    num = m.group("num")
    state = _IPOIB_STATES.get(num)
    if state is None:  # PKEY_CHANGE, LID_CHANGE, SM_CHANGE, ...: no link change
        return None
    return port_event(state, f"{m.group('hca')}/{m.group('port')}", num)


def _module_event(msg: str) -> Recognised:
    m = _MODULE_RE.search(msg)
    if m is None:
        return None
    if m.group("mod") is not None:
        mod, what = m.group("mod"), m.group("what").lower()
    else:
        mod, what = m.group("bsd_mod"), m.group("bsd").strip().lower()
    state = _MODULE_STATES.get(what)
    if state is None:
        return None
    return port_event(state, f"module{mod}")


def recognise_message(msg: str, sd_port: str | None = None) -> Recognised:
    """Run the built-in recognisers on one message (the text after the envelope)."""
    return _recognise(msg, sd_port)


def _recognise(msg: str, sd_port: str | None) -> Recognised:
    # Cheap substring gates first; each gate is also an alternative of PREFILTER.
    if "changed state" in msg:
        if "changed state from" in msg:
            return opensm.recognise_opensm_message(msg)
        return _changed_state(msg, sd_port)
    if "Link went " in msg or "Link is up" in msg:
        return ufm_events.recognise_link_text(msg)
    if "ink " in msg:
        found = _netdev_link(msg)
        if found is not None:
            return found
    if "on device" in msg:
        return _ipoib_event(msg)
    if "odule" in msg:
        return _module_event(msg)
    if "num:128" in msg:
        return opensm.recognise_opensm_message(msg)
    return None


# ---------------------------------------------------------------------------------------------
# Envelopes

_K_SYSLOG, _K_UFM, _K_OPENSM, _K_DMESG = range(4)
# when: aware or naive (local in tz) datetime, yearless Stamp, or None (undated).
_Envelope = tuple[datetime | Stamp | None, str | None, str, str | None, int]

# "Nov 30 06:28:57" with the microseconds SONiC and journalctl -o short-precise add.
_SYSLOG_STAMP = r"([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?"
_RFC3164_RE = re.compile(r"(?:<\d{1,3}>)?" + _SYSLOG_STAMP + r" +(\S+) (.*)", re.DOTALL)
_RFC5424_RE = re.compile(r"<\d{1,3}>1 (\S+) (\S+) (\S+) (\S+) (\S+) ?(.*)", re.DOTALL)
_CTIME = (
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})"
)
_ONYX_CLI_RE = re.compile(_CTIME + r": (.*)", re.DOTALL)
_DMESG_T_RE = re.compile(r"\[" + _CTIME + r"\] ?(.*)", re.DOTALL)
_DMESG_RE = re.compile(r"\[ *\d+\.\d+\] ?(.*)", re.DOTALL)
_ISO_HEAD_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_UFM_HEAD_RE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
# UFM's syslog forwarding: "eventlog[182483]: CRITICAL - <native events.log line>".
_UFM_FWD_RE = re.compile(
    r"(?:eventlog(?:\[\d+\])?: )?[A-Za-z]+ - (\d{4}-\d\d-\d\d \d\d:.*)", re.DOTALL
)
_SD_PORT_RE = re.compile(r'\b(?:port|interface|ifName)="((?:[^"\\]|\\.)*)"')
_BOM = "\ufeff"
# Two-character fields of the fixed-width RFC 3164 stamp; a miss means "not digits".



def _ctime_naive(m: re.Match[str]) -> datetime | None:
    month = MONTHS.get(m.group(1))
    if month is None:
        return None
    try:
        return datetime(  # noqa: DTZ001 - local wall time, localised by the caller
            int(m.group(6)), month, int(m.group(2)),
            int(m.group(3)), int(m.group(4)), int(m.group(5)),
        )
    except ValueError:
        return None


def _iso(token: str) -> datetime | None:
    try:
        return datetime.fromisoformat(token)
    except ValueError:
        return None


def _split_sd(rest: str) -> tuple[str | None, str]:
    """RFC 5424 STRUCTURED-DATA + MSG -> (port param if any, MSG)."""
    if rest.startswith("-"):
        return None, rest[2:] if rest.startswith("- ") else rest[1:]
    if not rest.startswith("["):
        return None, rest
    i, n, in_quote = 0, len(rest), False
    while i < n:
        c = rest[i]
        if in_quote:
            if c == "\\":
                i += 1
            elif c == '"':
                in_quote = False
        elif c == '"':
            in_quote = True
        elif c == "]" and (i + 1 == n or rest[i + 1] != "["):
            break
        i += 1
    sd, msg = rest[: i + 1], rest[i + 2 :]
    m = _SD_PORT_RE.search(sd)
    port = m.group(1).replace('\\"', '"').replace("\\]", "]") if m else None
    return port, msg


def _envelope(line: str) -> _Envelope | str:
    c = line[0]
    if c == "<":
        gt = line.find(">")
        if line[gt + 1 : gt + 3] == "1 ":
            return _rfc5424(line)
        return _rfc3164(line)
    if c.isdigit():
        if _ISO_HEAD_RE.match(line):
            ts, _, rest = line.partition(" ")
            when = _iso(ts)
            host, _, msg = rest.partition(" ")
            if when is None or not host:
                return "unreadable RFC 3339 envelope"
            return when, host, msg, None, _K_SYSLOG
        if _UFM_HEAD_RE.match(line):
            return None, None, line, None, _K_UFM
        return NO_ENVELOPE
    if c == "[":
        md = _DMESG_RE.match(line)
        if md is not None:
            return None, None, md.group(1), None, _K_DMESG
        mt = _DMESG_T_RE.match(line)
        if mt is not None:
            return _ctime_naive(mt), None, mt.group(7), None, _K_SYSLOG
        return NO_ENVELOPE
    if line[:3] in MONTHS:
        return _rfc3164(line)
    mc = _ONYX_CLI_RE.match(line)
    if mc is not None:
        when_c = _ctime_naive(mc)
        if when_c is None:
            return "impossible date"
        return when_c, None, mc.group(7), None, _K_SYSLOG
    return NO_ENVELOPE


def _rfc5424(line: str) -> _Envelope | str:
    m = _RFC5424_RE.match(line)
    if m is None:
        return "unreadable RFC 5424 header"
    ts, host = m.group(1), m.group(2)
    sd_port, msg = _split_sd(m.group(6))
    when = None
    if ts != "-":  # NILVALUE: the sender did not know the time
        when = _iso(ts)
        if when is None:
            return "unreadable RFC 5424 timestamp"
    return when, None if host == "-" else host, msg.removeprefix(_BOM), sd_port, _K_SYSLOG


def _rfc3164(line: str) -> _Envelope | str:
    # Fast path: fixed-width `Nov 30 06:28:57 host msg` (no PRI, no fraction).
    month = MONTHS.get(line[:3])
    if month is not None and line[15:16] == " " and line[9] == ":" and line[12] == ":":
        day, hh = DAY_FIELD.get(line[4:6]), TWO_DIGITS.get(line[7:9])
        mm, ss = TWO_DIGITS.get(line[10:12]), TWO_DIGITS.get(line[13:15])
        if day is not None and hh is not None and mm is not None and ss is not None:
            host, _, msg = line[16:].partition(" ")
            if host and not (len(host) == 6 and host.isdigit()):
                return (month, day, hh, mm, ss, 0), host, msg, None, _K_SYSLOG
    m = _RFC3164_RE.match(line)
    if m is None:
        return NO_ENVELOPE
    month = MONTHS.get(m.group(1))
    if month is None:
        return NO_ENVELOPE
    host, msg = m.group(7), m.group(8)
    if len(host) == 6 and host.isdigit() and msg.startswith("["):
        # opensm.log's own format: the 6-digit field after the time is microseconds, not a host.
        split = opensm.split_opensm_line(line)
        if split is None:
            return "unreadable opensm line"
        return split[0], None, split[1], None, _K_OPENSM
    frac = m.group(6)
    stamp: Stamp = (
        month, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
        int(frac.ljust(6, "0")) if frac else 0,
    )
    return stamp, host, msg, None, _K_SYSLOG


# ---------------------------------------------------------------------------------------------
# Site patterns

_CTIME_ONLY_RE = re.compile(_CTIME + r"$")
_SYSLOG_TIME_RE = re.compile(_SYSLOG_STAMP + "$")


def _time_text(text: str) -> datetime | Stamp | None:
    """A `time` group: ISO 8601, UFM `2018-11-27 16:23:09.423`, ctime, or `Nov 30 06:28:57`."""
    text = text.strip()
    if text[:1].isdigit():
        return _iso(text.replace(",", "."))
    mc = _CTIME_ONLY_RE.match(text)
    if mc is not None:
        return _ctime_naive(mc)
    m = _SYSLOG_TIME_RE.match(text)
    month = MONTHS.get(m.group(1)) if m is not None else None
    if m is None or month is None:
        return None
    frac = m.group(6)
    return (
        month, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
        int(frac.ljust(6, "0")) if frac else 0,
    )


def _site(
    patterns: Sequence[re.Pattern[str]], text: str
) -> tuple[PortEvent, datetime | Stamp | None, bool] | None:
    """First matching site pattern -> (unstamped event, time of the `time` group, had a time
    group)."""
    for pat in patterns:
        m = pat.search(text)
        if m is None:
            continue
        g = m.groupdict()
        raw = g.get("state") or ""
        state = normalise_state(raw) or "_".join(raw.lower().split()) or "unknown"
        event = PortEvent(
            UNSTAMPED,
            state,
            device=g.get("host"),
            port_name=g.get("port"),
            peer_device=g.get("peer_host"),
            peer_port_name=g.get("peer_port"),
            cable_serial=g.get("serial"),
        )
        t = g.get("time")
        return event, (_time_text(t) if t else None), bool(t)
    return None


def parse_syslog_lines(
    lines: Iterable[tuple[int, str]],
    *,
    year: int | None = None,
    reference: datetime | None = None,
    tz: tzinfo = UTC,
    extra: Sequence[re.Pattern[str]] = (),
) -> SyslogResult:
    """Port events in syslog-style lines; see the module docstring for formats and rules."""
    for pat in extra:
        if "state" not in pat.groupindex:
            raise ValueError(f"site pattern {pat.pattern!r} has no (?P<state>...) group")
    if extra:  # site patterns are tried first on every line: no fast path
        return run_lines(lines, _one, year=year, reference=reference, tz=tz, extra=extra)
    fast, rest = _fast_onyx(lines)
    # Lines taken by the fast path had terminators: a later unterminated one is half-written.
    result = run_lines(rest, _one, year=year, reference=reference, tz=tz,
                       terminated=bool(fast))
    if fast:
        result.events = sorted([*fast, *result.events], key=lambda e: e.line_no)
    return result


# The one shape that makes up nearly all of a big fabric's log (Onyx through rsyslog's default
# RFC 3339 file format), read by one regex. Anything else takes the general path above, which
# gives the same event for these lines (tests compare both on every fixture).
_FAST_ONYX = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)) ([\w.-]+) "
    r"([\w./@-]+(?:\[\d+\])?: (?:\[[\w.-]+\]: )?Interface (IB[\d/]+) changed state to "
    r"(UP|DOWN))\n"
)


def _fast_onyx(
    lines: Iterable[tuple[int, str]],
) -> tuple[list[PortEvent], list[tuple[int, str]]]:
    fast: list[PortEvent] = []
    rest: list[tuple[int, str]] = []
    match = _FAST_ONYX.fullmatch
    for line_no, raw in lines:
        m = match(raw)
        if m is None:
            rest.append((line_no, raw))
            continue
        stamp, host, msg, port, state = m.groups()
        try:
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:  # an impossible date: let the general path say why
            rest.append((line_no, raw))
            continue
        fast.append(PortEvent(at=at, state="down" if state == "DOWN" else "up", device=host,
                              port_name=port, line_no=line_no, message=msg))
    return fast, rest


def _one(run: LogRun, line_no: int, line: str) -> None:
    extra = run.extra
    env = _envelope(line)
    if isinstance(env, str):
        site = _site(extra, line) if extra else None
        if site is not None and site[1] is not None:
            run.add(line_no, line, site[1], site[0], None, line)
            return
        if site is not None and site[2]:
            env = "unreadable time in site pattern"
        undated = site[0] if site is not None else _recognise(line, None)
        if isinstance(undated, PortEvent):
            env = f"undated port event ({undated.state}): {env}"
        run.result.unparsed.append((line_no, line, env))
        return

    env_when, host, msg, sd_port, kind = env
    when = run.dated(env_when) if isinstance(env_when, datetime) else env_when
    event: Recognised
    if kind == _K_UFM:
        event, when = _ufm(msg, env_when)
        msg = msg.partition("]: ")[2] or msg
    elif kind == _K_OPENSM:
        event = opensm.recognise_opensm_message(msg)
    else:
        site = _site(extra, msg) if extra else None
        if site is not None:
            event = site[0]
            if site[2]:
                if site[1] is None:
                    run.result.unparsed.append((line_no, line, "unreadable time in site pattern"))
                    return
                when = site[1]
        else:
            fwd = _UFM_FWD_RE.match(msg) if msg.find(" - ", 0, 48) >= 0 else None
            if fwd is not None:
                event, when = _ufm(fwd.group(1), env_when)
            else:
                event = _recognise(msg, sd_port)
    run.add(line_no, line, when, event, host, msg)


def _ufm(
    native: str, envelope_when: datetime | Stamp | None
) -> tuple[Recognised, datetime | Stamp | None]:
    """A UFM events.log line: its own time (it has the year) unless the envelope has a zone."""
    parsed = ufm_events.parse_ufm_line(native)
    if parsed is None or isinstance(parsed, str):
        return parsed, envelope_when
    ufm_when, event, _ = parsed
    if isinstance(envelope_when, datetime) and envelope_when.tzinfo is not None:
        return event, envelope_when
    return event, ufm_when
