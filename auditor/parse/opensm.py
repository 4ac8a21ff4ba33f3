"""Parse opensm.log lines: port state changes seen by the SM sweep, and trap 128.

Native format (linux-rdma/opensm libopensm/osm_log.c, "%s %02d %02d:%02d:%02d %06d [%04X] 0x%02x
-> %s"): `Jun 17 17:21:28 927893 [4F2006C0] 0x02 -> text` = month day time, microseconds,
thread id, log level. No year and no zone: years come from `_logline.infer_years` (`year=` /
`reference=`, the file mtime), wall-clock times are local in `tz` (default UTC).

Events:

* `osm_pi_rcv_process: Switch 0x200000 Switch1 port 3 changed state from ACTIVE to DOWN` (NVIDIA
  MLNX OpenSM; upstream opensm has no such line) and nvlSM's `osm_spst_rcv_process: Switch
  0x... MF0;host:N5110_LD/U1 port 61 (sw7p1s1) changed state from ACTIVE to DOWN`: guid, port,
  device = node description, port_name = the parenthesised label when printed, else None.
  State: to DOWN -> "down"; from DOWN to anything, or to INIT from anything -> "up" (the link
  trained again; ACTIVE -> INIT means it bounced between two sweeps); INIT -> ARMED -> ACTIVE
  are the SM configuring a port that is already up and are ignored.
* `log_trap_info: Received Generic Notice type:1 num:128 (Link state change) ... from LID:1`:
  state "trap128", device `lid:1`, code "128", no port (the trap names only the reporting
  switch; the port shows in the next sweep's state-change line). The `Reporting Generic Notice`
  line that follows is opensm forwarding the same trap to subscribers and is ignored.

Lines not in the native format (sweep banners, "AR Manager - ..." lines) are unparsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo

from auditor.models import PortEvent
from auditor.parse._common import norm_guid
from auditor.parse._logline import (
    DAY_FIELD,
    MONTHS,
    TWO_DIGITS,
    UNSTAMPED,
    LogRun,
    Recognised,
    Stamp,
    SyslogResult,
    run_lines,
)

PREFILTER: str = r"changed state from [A-Z_]+ to |num:128 "

_LINE_RE = re.compile(
    r"([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{6}) \[[0-9A-Fa-f]+\] "
    r"0x[0-9a-fA-F]{1,2} -> (.*)",
    re.DOTALL,
)
_PORT_STATE_RE = re.compile(
    r"(?P<guid>0x[0-9a-fA-F]{1,16})(?: (?P<desc>.*?))? port (?P<port>\d{1,3})"
    r"(?: \((?P<label>[^)]*)\))? changed state from (?P<old>[A-Z_]+) to (?P<new>[A-Z_]+)"
)
_TRAP128_RE = re.compile(
    r"Received Generic Notice type:\d+ num:128 \(Link state change\).*? from LID:"
    r"(?P<lid>0x[0-9a-fA-F]{1,4}|\d{1,5})"
)


def split_opensm_line(line: str) -> tuple[Stamp, str] | None:
    """A native opensm.log line -> (yearless stamp, text after `->`); None if not one."""
    month = MONTHS.get(line[:3])
    arrow = line.find(" -> ", 23, 48)
    if month is not None and arrow > 0 and line[15:16] == " " and line[22:24] == " [":
        day, usec = DAY_FIELD.get(line[4:6]), line[16:22]
        two = TWO_DIGITS.get
        hh, mm, ss = two(line[7:9]), two(line[10:12]), two(line[13:15])
        if (
            day is not None and hh is not None and mm is not None and ss is not None
            and line[9] == ":" and line[12] == ":" and usec.isdigit() and usec.isascii()
        ):
            return (month, day, hh, mm, ss, int(usec)), line[arrow + 4 :]
    m = _LINE_RE.match(line)
    if m is None:
        return None
    month = MONTHS.get(m.group(1))
    if month is None:
        return None
    stamp: Stamp = (
        month, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
        int(m.group(6)),
    )
    return stamp, m.group(7)


def _port_state(old: str, new: str) -> str | None:
    if new == "DOWN":
        return "down"
    if old == "DOWN" or new == "INIT":
        return "up"
    return None


def recognise_opensm_message(msg: str) -> Recognised:
    """The opensm text of one line (native or inside a syslog message)."""
    if "changed state from" in msg:
        m = _PORT_STATE_RE.search(msg)
        if m is None:
            return "unreadable opensm port state change"
        state = _port_state(m.group("old"), m.group("new"))
        if state is None:
            return None
        desc = m.group("desc")
        return PortEvent(
            UNSTAMPED,
            state,
            device=desc.strip() if desc else None,
            port_name=m.group("label"),
            guid=norm_guid(m.group("guid")[2:]),
            port=int(m.group("port")),
        )
    if "num:128" in msg:
        t = _TRAP128_RE.search(msg)
        if t is None:
            return None
        lid = t.group("lid")
        lid_n = int(lid, 16) if lid.startswith("0x") else int(lid)
        return PortEvent(UNSTAMPED, "trap128", device=f"lid:{lid_n}", code="128")
    return None


def _one(run: LogRun, line_no: int, line: str) -> None:
    split = split_opensm_line(line)
    if split is None:
        run.result.unparsed.append((line_no, line, "not an opensm.log line"))
        return
    stamp, msg = split
    run.add(line_no, line, stamp, recognise_opensm_message(msg), None, msg)


def parse_opensm(
    lines: Iterable[tuple[int, str]],
    *,
    year: int | None = None,
    reference: datetime | None = None,
    tz: tzinfo = UTC,
) -> SyslogResult:
    return run_lines(lines, _one, year=year, reference=reference, tz=tz)
