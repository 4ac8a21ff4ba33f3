"""Parse slurmctld.log for what the controller saw happen to whole nodes.

Time stamps (src/common/log.c `[%M] ` before every line; the formats of LogTimeFormat at
SchedMD/slurm@slurm-25-11-7-1 log.c:1118-1160, xstring.c:247-330; the same at
slurm-22-05-8-1 log.c:979-1015):

* iso8601_ms (the default): `[2026-12-01T23:46:03.321]`, local time without a zone: read in
  `tz` (slurmctld's zone).
* iso8601: `[2026-12-01T16:49:49]`, the same without milliseconds.
* rfc5424_ms / rfc5424: `[2026-12-01T23:48:19.262+01:00]`, `[...T23:48:19+01:00]`.
* rfc3339 (23.11 and later): `[2026-12-01T23:48:19+01:00]`.
* short (`Dec 01 23:46:03`) and thread_id (`Dec 01 23:46:03.123456 <pid> <thread> 0x...`)
  carry no year, clock carries no date at all: a recognised message with one of them goes to
  `unparsed` ("no year in the time stamp: set LogTimeFormat=iso8601_ms or rfc5424_ms");
  other lines are ignored.

Messages recognised (level prefixes `error: `, `debug: ` and the `<function>: ` prefix are
allowed; file:line at SchedMD/slurm@slurm-22-05-8-1 / slurm-25-11-7-1, all captured on a
loopback Slurm 22.05.8 except drain_nodes):

* `<func>: Node X unexpectedly rebooted boot_time=<epoch> last response=<epoch>`
  (node_mgr.c:3089 / :3799; func is validate_node_specs; %u in 22.05, %ld in 25.11) -> a `boot`
  event at boot_time (epoch seconds, UTC, from slurmd's uptime) and a `down` event at the
  line's time, both with Slurm's reason "Node unexpectedly rebooted" (node_mgr.c:3087). Printed
  only with ReturnToService=0 or 1.
* `error: Nodes X not responding, setting DOWN` (ping_nodes.c:367 / :323) -> `down`, reason
  "Not responding", one event per host of the hostlist X.
* `error: Nodes X not responding` (node_mgr.c:3774 / :4060; logged every 300 s at
  SlurmctldDebug=info, 60 s at verbose, while nodes miss pings) -> `not_responding` per host.
* `Node X now responding` (node_mgr.c:2927, :3602 / :3538, :3905) -> `responding`.
* `node X returned to service` and `node_did_resp: node X returned to service`
  (node_mgr.c:3064, :3579, :3631 / :3757, :3935) -> `returned`.
* `reboot request queued for nodes X` (proc_req.c:5510 / :5519; `scontrol reboot`, with or
  without ASAP) -> `reboot_requested` per host. The reasons Slurm gives such nodes
  ("reboot requested", "Reboot ASAP", "reboot issued", "reboot complete", "reboot timed out")
  are node reasons, not log lines: they show in sacctmgr show event, not here.
* `update_node: node X state set to S` (node_mgr.c:1923 / :2329; `scontrol update`; S from
  node_state_string: DOWN, DRAINED, DRAINING, FAIL, IDLE...) -> down / drain, or `returned`
  when S is a usable state (an admin's resume). The reason is taken from the
  `update_node: node X reason set to: R` line (node_mgr.c:1575 / :1977) printed just before
  it at the same time stamp.
* `drain_nodes: node X state set to DRAIN` (node_mgr.c:2417 / :2914; a failed registration or
  prolog, or a health check) -> `drain`.

Everything else is counted in `ignored`. A line that starts like one of the messages above but
does not read as it goes to `unparsed` ("unexpected form of a node message"; "no time stamp"
when the `[...]` is missing). slurmctld ends every line with a newline, so a last line without
one that does not read whole is "half-written line" (a log cut while written), whatever it
was. `message` is the line without its time stamp.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo

from auditor.models import HostEventsResult
from auditor.parse._common import split_lines
from auditor.parse._hostevents import OTHER, UP, host_event, state_kind
from auditor.parse._jobs import parse_instant
from auditor.parse.hostlist import expand_hostlist

__all__ = ["parse_slurmctld"]

_STAMP_RE = re.compile(r"^\[(?P<ts>[^\]]{1,64})\] ?(?P<msg>.*)$")
_ISO_STAMP_RE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:?\d\d)?$", re.ASCII
)
# short `Dec 01 23:46:03`, thread_id `Dec 01 23:46:03.123456 ...`, clock `123456`.
_NO_YEAR_STAMP_RE = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\b.*|\d+)$", re.ASCII)
# log.c _log_msg (slurm-22-05-8-1 :1211-1253): "fatal: ", "error: ", "debug:  " (two spaces),
# "debug2: ".."debug5: ", "internal error: " (info and verbose have none), then "sched: " on
# the scheduler's lines.
_LEVEL_RE = re.compile(
    r"^(?:(?:fatal|error|internal error|debug\d?):  ?)?(?:sched: )?", re.ASCII
)
_FUNC = r"(?:\w{1,64}: )?"
_NODE = r"(?P<node>[^\s,]{1,256})"
_NODES = r"(?P<nodes>[^\s]{1,4096})"

_REBOOTED_RE = re.compile(
    _FUNC + _NODE.join(("Node ", " unexpectedly rebooted ")) +
    r"boot_time=(?P<boot>-?\d{1,20}) last response=(?P<last>-?\d{1,20})"
)
_SETTING_DOWN_RE = re.compile(_FUNC + "Nodes " + _NODES + " not responding, setting DOWN")
_NOT_RESPONDING_RE = re.compile(_FUNC + "Nodes " + _NODES + " not responding")
_RESPONDING_RE = re.compile(_FUNC + "Node " + _NODE + " now responding")
_RETURNED_RE = re.compile(_FUNC + "node " + _NODE + " returned to service")
_REBOOT_QUEUED_RE = re.compile(_FUNC + "reboot request queued for nodes " + _NODES)
_STATE_SET_RE = re.compile(
    r"(?P<func>update_node|drain_nodes): node " + _NODE + r" state set to (?P<state>\S+)"
)
_REASON_SET_RE = re.compile(r"update_node: node " + _NODE + r" reason set to: (?P<reason>.*)")
# The start of each message above: a line that has it but does not read as the whole message
# was cut (or is a form this parser does not know).
_LOOSE_RE = re.compile(
    _FUNC + r"(?:Node \S+ unexpectedly\b|Nodes \S+ not\b|Node \S+ now\b|node \S+ returned\b"
    r"|reboot request\b|(?:update_node|drain_nodes): node \S+ state\b)"
)

UNEXPECTED_REBOOT = "Node unexpectedly rebooted"  # node_mgr.c:3087 (22.05), the node's reason
NOT_RESPONDING = "Not responding"  # ping_nodes.c:290 (22.05) set_node_down_ptr(node_ptr, ...)
HALF_WRITTEN = "half-written line"
UNEXPECTED_FORM = "unexpected form of a node message"
NO_YEAR = "no year in the time stamp: set LogTimeFormat=iso8601_ms or rfc5424_ms"
BAD_TIME = "bad time stamp"
NO_STAMP = "no time stamp"


def _hosts(text: str) -> list[str] | None:
    try:
        return expand_hostlist(text)
    except ValueError:
        return None


def _epoch(text: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(text), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def parse_slurmctld(text: str, tz: tzinfo = UTC) -> HostEventsResult:
    """Node events in slurmctld.log: boot, down, not_responding, responding, returned, drain,
    reboot_requested. Time stamps without a zone are read in `tz` (slurmctld's zone)."""
    lines = split_lines(text)
    result = HostEventsResult()
    last_line_no = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    cut_at_end = not text.endswith("\n")
    reasons: dict[str, tuple[str, str]] = {}  # node -> (time stamp text, reason) of update_node
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cut = cut_at_end and line_no == last_line_no
        m = _STAMP_RE.match(line)
        if m is None:
            if cut:
                result.unparsed.append((line_no, line, HALF_WRITTEN))
            elif _LOOSE_RE.match(_LEVEL_RE.sub("", line.strip(), count=1)):
                result.unparsed.append((line_no, line, NO_STAMP))
            else:
                result.ignored += 1
            continue
        stamp, msg = m.group("ts"), m.group("msg")
        body = _LEVEL_RE.sub("", msg, count=1)
        if not _LOOSE_RE.match(body) and not _REASON_SET_RE.fullmatch(body):
            if cut:  # whatever it was, it was cut: it may have been a node message
                result.unparsed.append((line_no, line, HALF_WRITTEN))
            else:
                result.ignored += 1
            continue
        if not _ISO_STAMP_RE.match(stamp):
            if _NO_YEAR_STAMP_RE.match(stamp):
                if _REASON_SET_RE.fullmatch(body):
                    result.ignored += 1
                else:
                    result.unparsed.append((line_no, line, NO_YEAR))
            else:
                result.unparsed.append((line_no, line, BAD_TIME))
            continue
        try:
            at = parse_instant(stamp, tz)
        except ValueError:
            result.unparsed.append((line_no, line, BAD_TIME))
            continue
        problem = _message(body, at, stamp, line_no, msg, reasons, result)
        if problem:
            result.unparsed.append((line_no, line, HALF_WRITTEN if cut else problem))
    return result


def _message(body: str, at: datetime, stamp: str, line_no: int, msg: str,
             reasons: dict[str, tuple[str, str]], result: HostEventsResult) -> str:
    """Add the events of one recognised message; the reason it could not be read, or ""."""
    m = _REASON_SET_RE.fullmatch(body)
    if m is not None:
        reasons[m.group("node")] = (stamp, m.group("reason"))
        result.ignored += 1
        return ""
    m = _REBOOTED_RE.fullmatch(body)
    if m is not None:
        boot = _epoch(m.group("boot"))
        if boot is None:
            return "boot_time out of range"
        node = m.group("node")
        result.events.append(host_event(node, boot, "boot", reason=UNEXPECTED_REBOOT,
                                         line_no=line_no, message=msg))
        result.events.append(host_event(node, at, "down", reason=UNEXPECTED_REBOOT,
                                        line_no=line_no, message=msg))
        return ""
    for regex, kind, reason in (
        (_SETTING_DOWN_RE, "down", NOT_RESPONDING),
        (_NOT_RESPONDING_RE, "not_responding", ""),
        (_REBOOT_QUEUED_RE, "reboot_requested", ""),
    ):
        m = regex.fullmatch(body)
        if m is not None:
            hosts = _hosts(m.group("nodes"))
            if hosts is None:
                return "bad hostlist"
            result.events.extend(host_event(h, at, kind, reason=reason, line_no=line_no,
                                            message=msg) for h in hosts)
            return ""
    for regex, kind in ((_RESPONDING_RE, "responding"), (_RETURNED_RE, "returned")):
        m = regex.fullmatch(body)
        if m is not None:
            result.events.append(host_event(m.group("node"), at, kind, line_no=line_no,
                                            message=msg))
            return ""
    m = _STATE_SET_RE.fullmatch(body)
    if m is None:
        return UNEXPECTED_FORM
    node, state = m.group("node"), m.group("state")
    found = state_kind(state)
    if found is None:
        return "unknown node state"
    if found == OTHER:
        result.ignored += 1
        return ""
    kind = "returned" if found == UP else found
    reason_stamp, reason = reasons.pop(node, ("", ""))
    result.events.append(host_event(node, at, kind,
                                    reason=reason if reason_stamp == stamp else "",
                                    line_no=line_no, message=msg))
    return ""
