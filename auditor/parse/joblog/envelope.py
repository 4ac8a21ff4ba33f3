"""Line envelope: what surrounds a message (a collector's stamp, mpirun / srun / torchrun stream
prefixes and ranks, NCCL / UCX / syslog host prefixes) and the date patterns inside a line.
`read_envelope` reads the first; `machine._Run._time` reads the dates, because which stamp wins
and the year of a yearless one depend on the rest of the log."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from auditor.parse._logline import MONTHS, Stamp

# A collector's stamp at the very start: ISO 8601 / RFC 3339 (any fraction, `Z`, `+08:00`, also
# space-separated), CRI `stdout F `, then mpirun --tag-output `[1,12]<stdout>:` and srun -l `3: `.
_LEAD_RE = re.compile(
    # Ray prints each worker's output behind `(RayTrainWorker pid=355353) ` (NVIDIA/nccl#1212).
    r"\s*(?:\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\) )?"
    r"(?:(?P<Y>\d{4})-(?P<M>\d\d)-(?P<D>\d\d)[T ](?P<h>\d\d):(?P<m>\d\d)"
    r"(?::(?P<s>\d\d)(?:[.,](?P<f>\d{1,9}))?)?(?: ?(?P<z>Z|[+-]\d\d:?\d\d))?:?\s+"
    r"(?:(?:stdout|stderr) [FP] )?)?"
    # Open MPI's --timestamp-output: ctime(3), glued to the --tag-output tag (NVIDIA/nccl#957).
    r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<cmon>[A-Z][a-z]{2}) +(?P<cd>\d{1,2}) "
    r"(?P<ch>\d\d):(?P<cm>\d\d):(?P<cs>\d\d) (?P<cy>\d{4}) ?)?"
    r"(?:\[\d+,(?P<mpi>\d+)\]<(?:stdout|stderr)>:)?"
    r"(?:(?P<task>\d+): )?"
)
# torchrun --tee `[default3]:`, `[rank13]:` (one or more, e.g. `[default0]:[rank0]:`).
_TAGS_RE = re.compile(r"(?:\[[A-Za-z][\w-]*?\d+\]:)+")
_RANK_TAG_RE = re.compile(r"\[rank(\d+)\]:")
_PG0_RANK_RE = re.compile(r"\[PG (?:ID )?0 (?:PG GUID 0(?:\([^)]*\))? )?Rank (\d+)\]")
# NCCL debug prefix (src/debug.cc): optional WARN timestamp (>= 2.26), host:pid:tid [cudaDev].
_NCCL_PREFIX_RE = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\] )?"
    r"(?<![\w.-])(?P<host>[\w.-]+):(?P<pid>\d+):\d+ \[(?P<dev>\d+)\] "
)
# What every NCCL prefix holds (`:pid:tid [cudaDev] `), found fast from its leading colon.
_NCCL_PREFIX_CORE_RE = re.compile(r":\d+:\d+ \[\d+\] ")
_UCX_PREFIX_RE = re.compile(r"(?:^|\[)(?P<host>[\w.-]+):\d+:\d+(?::\d+)?\] ")
_SYSLOG_RE = re.compile(
    r"(?:<\d+>)?(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<f>\d{1,9}))? (?P<host>[\w.-]+) "
)
_KERNEL_HOST_RE = re.compile(r"(?:^|\s)([\w.-]+) kernel: ")
BRACKET_DATE_RE = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\]"
)
# glog: PyTorch c10 `[E218 04:54:22.864467604 file:line]` (month not zero-padded) and the
# torchelastic agent `E0517 08:24:03.805000 <tid> file:line]`. The look-behind (no word or dot
# before the letter) comes after the letter: a pattern that starts with a look-behind is tried
# at every position, one that starts with a letter set is not (17 us -> 3 us on a 575-character
# PyTorch OOM line).
GLOG_RE = re.compile(r"[IWEF](?<![\w.][IWEF])(\d{3,4}) (\d\d):(\d\d):(\d\d)\.(\d{1,9})\b")
CTIME_RE = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d) (?P<y>\d{4})\]"
)
_NCCL_LEVEL_RE = re.compile(r"NCCL (?:WARN|INFO|TRACE) ")
# `ts` (moreutils) and similar wrappers: a syslog-style stamp with no host after it.
_TS_RE = re.compile(
    r"(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<f>\d{1,9}))? "
)


def micros(frac: str | None) -> int:
    return int(frac[:6].ljust(6, "0")) if frac else 0


def _zone(z: str) -> tzinfo:
    if z == "Z":
        return UTC
    sign = -1 if z[0] == "-" else 1
    digits = z[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


# year, month, day, hour, minute, second, microsecond of a wall-clock time
_Parts = tuple[int, int, int, int, int, int, int]


def wall(p: _Parts, tz: tzinfo) -> datetime | None:
    """A wall-clock time in `tz` -> aware UTC, None if impossible (Feb 30, hour 25...)."""
    try:
        return datetime(p[0], p[1], p[2], p[3], p[4], p[5], p[6], tzinfo=tz).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


@dataclass(slots=True)
class Line:
    """What the envelope of one (failure or state) line says."""

    body: str  # the line after the collector stamp and mpirun/srun prefixes
    stream: str  # the prefixes that tell one process's output from another's ("" if none)
    text_start: int  # where the text starts in `body` after torchrun tags
    zoned: datetime | None = None  # collector stamp with a zone
    naive: _Parts | None = None  # collector stamp without a zone
    syslog: Stamp | None = None
    host: str | None = None
    dev: str | None = None  # NCCL [cudaDev]
    pid: str | None = None
    rank: int | None = None
    msg_start: int = 0


# What the envelope regexes below need to find anything past leading whitespace: a lead starts
# with a digit, `(`, `[` or a weekday, a syslog envelope with `<` or a month, and the rest need
# these substrings. The lines of a torchelastic block or a traceback have none of them, and
# every one is read while a block is open (issue #13: 118,712 such lines in the 6,105 logs of
# the scale scenario, 0.27 s read fully, 0.17 s here). tests/test_joblog_fast.py holds both
# ways to the same answer.
_WEEKDAYS = frozenset({"Mon ", "Tue ", "Wed ", "Thu ", "Fri ", "Sat ", "Sun "})


def read_envelope(line: str) -> Line:
    body = line.lstrip()  # what `_LEAD_RE`'s leading `\s*` takes (`\s` is `str.isspace`)
    head = body[:1]
    if (
        head and head not in "([<" and not head.isdigit() and body[:3] not in MONTHS
        and body[:4] not in _WEEKDAYS and "]:" not in body and " [" not in body
        and "] " not in body and "NCCL " not in body and " kernel: " not in body
        and "Rank " not in body
    ):
        return Line(body, "", 0)
    return read_envelope_fully(line)


def read_envelope_fully(line: str) -> Line:
    """`read_envelope` without its shortcut for lines that have no envelope."""
    lead = _LEAD_RE.match(line)
    zoned: datetime | None = None
    naive: _Parts | None = None
    stream = ""
    pos = 0
    rank: int | None = None
    if lead is not None:
        pos = lead.end()
        if lead.group("Y"):
            parts: _Parts = (
                int(lead.group("Y")), int(lead.group("M")), int(lead.group("D")),
                int(lead.group("h")), int(lead.group("m")), int(lead.group("s") or 0),
                micros(lead.group("f")),
            )
            z = lead.group("z")
            if z:
                zoned = wall(parts, _zone(z))
            else:
                naive = parts
        elif lead.group("cy") and (cmon := MONTHS.get(lead.group("cmon"))) is not None:
            naive = (int(lead.group("cy")), cmon, int(lead.group("cd")), int(lead.group("ch")),
                     int(lead.group("cm")), int(lead.group("cs")), 0)
        mpi = lead.group("mpi")
        if mpi is not None:
            stream = f"mpi{mpi}"
            rank = int(mpi)
        if lead.group("task") is not None:
            stream += f"task{lead.group('task')}"
    body = line[pos:] if pos else line
    syslog: Stamp | None = None
    host: str | None = None
    if body[:1] == "<" or body[:3] in MONTHS:  # a syslog envelope (e.g. kernel Xid lines)
        sm = _SYSLOG_RE.match(body)
        mon = MONTHS.get(sm.group("mon")) if sm else None
        if sm is not None and mon is not None:
            syslog = (mon, int(sm.group("d")), int(sm.group("h")), int(sm.group("m")),
                      int(sm.group("s")), micros(sm.group("f")))
            host = sm.group("host")
            body = body[sm.end():]
        else:
            ts = _TS_RE.match(body)
            mon = MONTHS.get(ts.group("mon")) if ts else None
            if ts is not None and mon is not None:
                syslog = (mon, int(ts.group("d")), int(ts.group("h")), int(ts.group("m")),
                          int(ts.group("s")), micros(ts.group("f")))
                body = body[ts.end():]
    text_start = 0
    # Each search below only where the text it needs is: tried at every position of a long
    # line they cost 10-60 us each (a 575-character PyTorch OOM line: 50 us -> 2 us).
    tags = _TAGS_RE.search(body) if "]:" in body else None
    if tags is not None:
        # The outermost tag names the process; c10d adds `[rankN]:` to its C++ lines only, not
        # to the Python traceback lines that follow them.
        run = tags.group(0)
        stream += run[: run.index("]:") + 2]
        text_start = tags.end()
        rt = _RANK_TAG_RE.search(tags.group(0))
        if rt is not None:
            rank = int(rt.group(1))
    info = Line(body, stream, text_start, zoned, naive, syslog, host, rank=rank)
    prefix = (_NCCL_PREFIX_RE.search(body, text_start)
              if _NCCL_PREFIX_CORE_RE.search(body, text_start) else None)
    if prefix is not None:
        info.host, info.dev, info.pid = prefix.group("host", "dev", "pid")
        level = _NCCL_LEVEL_RE.match(body, prefix.end())
        if level is None:  # WARN lines carry `file:line [(func)] ` before the level
            level = _NCCL_LEVEL_RE.search(body, prefix.end(), prefix.end() + 160)
        info.msg_start = level.end() if level is not None else prefix.end()
    else:
        level = _NCCL_LEVEL_RE.search(body, text_start, text_start + 160)
        info.msg_start = level.end() if level is not None else text_start
        if host is None:
            ucx = _UCX_PREFIX_RE.match(body, text_start)
            if ucx is not None:
                info.host = ucx.group("host")
                info.msg_start = ucx.end()
            elif " kernel: " in body:
                kh = _KERNEL_HOST_RE.search(body)
                info.host = kh.group(1) if kh else None
        else:
            info.host = host
    if info.rank is None and "Rank " in body:
        pg = _PG0_RANK_RE.search(body)
        if pg is not None:
            info.rank = int(pg.group(1))
    return info
