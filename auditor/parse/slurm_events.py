"""Parse `sacctmgr show event -P` (Slurm's accounting record of node DOWN/DRAIN/REBOOT states).

Run it as `sacctmgr show event -P Start=<when> End=<when>` (without Start it lists only events
since yesterday's local midnight; `All_Time` for everything; src/sacctmgr/event_functions.c
_set_cond at SchedMD/slurm@slurm-22-05-8-1 :290-310). Verified at slurm-22-05-8-1 and
slurm-25-11-7-1 (SchedMD/slurm), and captured on a loopback Slurm 22.05.8:

* The first non-blank line is the header. sacctmgr prints its own column names whatever the
  user typed: the default node listing is `Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User`
  (event_functions.c:371-376 asks for `Cluster,NodeName,Start,End,State,Reason,User`;
  src/sacctmgr/common.c:737-748 at 22.05.8 prints Start/End as `TimeStart`/`TimeEnd`). Columns
  may come in any order and subset that has NodeName, TimeStart and State (`Start`/`End` are
  accepted as names too). Other known columns: Cluster, TimeEnd, Reason, User, StateRaw,
  Duration, Event, EventRaw, TRES, `Cluster Nodes`, `CPU Cnt`.
* `-p` ends every line with the delimiter: accepted. `-n` drops the header: refused (ParseError
  on line 1), because with `format=` the columns can be in any order and nothing in a row says
  which time is the start. Fixed-width output (no -P) truncates fields with `+`: refused.
* Cluster events are skipped and counted in `ignored`: rows with an empty NodeName (the default
  listing mixes them in: `labcluster||<start>|Unknown||Cluster Registered TRES|`), rows whose
  Event column says `Cluster`, and every row of the cluster layout
  (`Cluster|TRES|TimeStart|TimeEnd|Cluster Nodes`, from `event=cluster`).
* A header of other columns without NodeName (or naming a column sacctmgr does not print) is
  "not a sacctmgr show event -P output": ParseError on line 1, so the file is refused whole.
* TimeStart/TimeEnd are slurmdbd's times printed in sacctmgr's local time without a zone (read
  in `tz`) unless SLURM_TIME_FORMAT added one. TimeEnd `Unknown` = still open: end_at None.
* State is Slurm's compact node state (node_state_string_compact): DOWN, DOWN* -> down;
  DRAIN, DRNG, FAIL, FAILG (and DRAIN@...) -> drain; BOOT, BOOT^, BOOT* and a usable state with
  a reboot flag (IDLE@, MIX^) -> reboot_requested. Known states that are not a fault (IDLE,
  MIX, MAINT, POW_DN, FUTR...) are counted in `ignored`; anything else goes to `unparsed`
  ("unknown node state"). See `_hostevents.state_kind`.
* NodeName may be a hostlist (`gpu-[001-004]`): one event per host, same line.
* `reason` is the Reason column (an admin's free text; a Reason holding the delimiter makes the
  row wider than the header, and the extra fields are joined back into it). `message` is the
  whole row.
* A row that cannot be read (fewer fields than the header, a bad time or hostlist, end before
  start, an unknown state) goes to `unparsed` with the reason; the rest still parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, tzinfo

from auditor.errors import ParseError
from auditor.models import HostEvent, HostEventsResult
from auditor.parse._common import split_lines
from auditor.parse._hostevents import OTHER, UP, host_event, state_kind
from auditor.parse._jobs import parse_slurm_time
from auditor.parse.hostlist import expand_hostlist

__all__ = ["parse_slurm_events"]

_KIND = "sacctmgr show event"
_DELIM = "|"
# Column names as sacctmgr prints them (src/sacctmgr/common.c _get_print_field), lower-cased,
# and the two spellings a hand-made file may use for the times.
_KNOWN = {
    "cluster": "cluster",
    "cluster nodes": "cluster nodes",
    "cpu cnt": "cpu cnt",
    "duration": "duration",
    "event": "event",
    "eventraw": "eventraw",
    "nodename": "nodename",
    "reason": "reason",
    "state": "state",
    "stateraw": "stateraw",
    "timeend": "timeend",
    "end": "timeend",
    "timestart": "timestart",
    "start": "timestart",
    "tres": "tres",
    "user": "user",
}
_REQUIRED = ("nodename", "timestart", "state")
_PRINTED = {"nodename": "NodeName", "timestart": "TimeStart", "state": "State"}
_CLUSTER_LAYOUT = frozenset({"tres", "cluster nodes"})
# A row of the default layout without its header (sacctmgr -n): a cluster, a name, two times.
_HEADERLESS_RE = re.compile(
    r"^[^|]*\|[^|]*\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^|]*\|[^|]*\|", re.ASCII
)
_FIXED_WIDTH_RE = re.compile(r"^\s*Cluster\s+(?:NodeName|TRES)\s+TimeStart\b", re.ASCII)

NOT_SACCTMGR = "not a sacctmgr show event -P output"
HALF_WRITTEN = "half-written line"
FEWER_FIELDS = "fewer fields than the header"
UNKNOWN_STATE = "unknown node state"


@dataclass(frozen=True, slots=True)
class _Header:
    index: dict[str, int]  # canonical lower-case name -> position
    width: int
    trailing: bool  # sacctmgr -p: every line ends with the delimiter
    cluster_layout: bool  # Cluster|TRES|TimeStart|TimeEnd|Cluster Nodes: no node rows


def _header(line_no: int, line: str) -> _Header:
    names = line.split(_DELIM)
    trailing = len(names) > 1 and names[-1] == ""
    if trailing:
        names.pop()
    index: dict[str, int] = {}
    for pos, name in enumerate(names):
        canon = _KNOWN.get(name.strip().lower())
        if canon is None:
            raise ParseError(_KIND, line_no, line, _refusal(line))
        index.setdefault(canon, pos)
    if "nodename" not in index:
        if _CLUSTER_LAYOUT & index.keys():
            return _Header(index, len(names), trailing, cluster_layout=True)
        raise ParseError(_KIND, line_no, line, f"{NOT_SACCTMGR}: no NodeName column")
    missing = [_PRINTED[c] for c in _REQUIRED if c not in index]
    if missing:
        raise ParseError(_KIND, line_no, line,
                         f"missing column(s) {', '.join(missing)} (need NodeName, TimeStart, "
                         "State)")
    return _Header(index, len(names), trailing, cluster_layout=False)


def _refusal(line: str) -> str:
    if _HEADERLESS_RE.match(line):
        return "no header line: run sacctmgr show event -P without -n"
    if _FIXED_WIDTH_RE.match(line):
        return "fixed-width output truncates fields: run sacctmgr show event -P"
    return NOT_SACCTMGR


def _is_header(line: str) -> bool:
    names = line.split(_DELIM)
    if len(names) > 1 and names[-1] == "":
        names.pop()
    return bool(names) and all(n.strip().lower() in _KNOWN for n in names)


def _fields(line: str, header: _Header) -> list[str] | None:
    """The row's fields, one per header column; None when it has too few."""
    fields = line.split(_DELIM)
    if header.trailing and len(fields) > header.width and fields[-1] == "":
        fields.pop()
    extra = len(fields) - header.width
    if extra < 0:
        return None
    reason = header.index.get("reason")
    if extra and reason is not None:
        # A Reason holding the delimiter (admins write free text; -P does not escape it).
        fields[reason: reason + extra + 1] = [_DELIM.join(fields[reason: reason + extra + 1])]
    return fields


def parse_slurm_events(text: str, tz: tzinfo = UTC) -> HostEventsResult:
    """Node events of `sacctmgr show event -P`: down, drain, reboot_requested, one per host.
    Times without a zone are read in `tz` (sacctmgr's local time). Raises ParseError on line 1
    when the input is not sacctmgr show event -P output with a header."""
    lines = split_lines(text)
    result = HostEventsResult()
    header: _Header | None = None
    last_line_no = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if header is None:
            header = _header(line_no, line)
            continue
        if line[0].isalpha() and _is_header(line):  # runs concatenated into one file
            header = _header(line_no, line)
            continue
        if header.cluster_layout:
            result.ignored += 1
            continue
        fields = _fields(line, header)
        if fields is None:
            cut = line_no == last_line_no and not text.endswith("\n")
            result.unparsed.append((line_no, line, HALF_WRITTEN if cut else FEWER_FIELDS))
            continue
        _row(line_no, line, fields, header, tz, result)
    return result


def _row(line_no: int, line: str, fields: list[str], header: _Header, tz: tzinfo,
         result: HostEventsResult) -> None:
    def field(name: str) -> str:
        pos = header.index.get(name)
        return fields[pos].strip() if pos is not None else ""

    node_text = field("nodename")
    if not node_text or field("event").lower() == "cluster":
        result.ignored += 1
        return
    kind = state_kind(field("state"))
    if kind is None:
        result.unparsed.append((line_no, line, UNKNOWN_STATE))
        return
    if kind in (UP, OTHER):
        result.ignored += 1
        return
    try:
        start = parse_slurm_time(field("timestart"), tz)
        end = parse_slurm_time(field("timeend"), tz)
    except ValueError:
        result.unparsed.append((line_no, line, "bad time"))
        return
    if start is None:
        result.unparsed.append((line_no, line, "no start time"))
        return
    if end is not None and end < start:
        result.unparsed.append((line_no, line, "end before start"))
        return
    try:
        hosts = expand_hostlist(node_text)
    except ValueError:
        result.unparsed.append((line_no, line, "bad NodeName hostlist"))
        return
    events: list[HostEvent] = [
        host_event(host, start, kind, end_at=end, reason=field("reason"), line_no=line_no,
                   message=line)
        for host in hosts
    ]
    result.events.extend(events)
