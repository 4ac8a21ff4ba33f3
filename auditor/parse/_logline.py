"""What the log parsers share (syslog, opensm, UFM events.log, job logs): the result types, the
unstamped event a message recogniser returns, years for stamps printed without one (RFC 3164,
glog), and the line driver (terminators, blank and half-written lines, errors, the year
reference)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo

from auditor.models import HostEvent, PortEvent

# (month, day, hour, minute, second, microsecond) of a stamp printed without a year.
Stamp = tuple[int, int, int, int, int, int]

MONTHS: dict[str, int] = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}

NO_ENVELOPE = "no recognised envelope"
HALF_WRITTEN = "half-written last line (no line terminator)"
# What a corrupt line can make the stdlib raise while being read; anything else is a bug.
LINE_ERRORS = (ValueError, IndexError, OverflowError, KeyError)


# The time of an event a recogniser has read but the driver has not yet placed: recognisers
# return a PortEvent with this time, and the driver sets its time, line number and message (and
# the envelope's host as `device` when the message named none) before it leaves the parser.
UNSTAMPED = datetime.min.replace(tzinfo=UTC)


def port_event(state: str, port_name: str, code: str | None = None) -> PortEvent:
    """A recognised event that names only a port: positional, as the hot path wants."""
    return PortEvent(UNSTAMPED, state, None, port_name, None, None, None, None, None, None, None,
                     code)


# A recogniser returns an unstamped event, a reason string for a line it claims but cannot
# read (-> unparsed), or None (not its line, or a known non-event -> ignored).
Recognised = PortEvent | str | None


@dataclass(slots=True)
class SyslogResult:
    events: list[PortEvent] = field(default_factory=list)
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)  # line_no, line, reason
    ignored: int = 0
    boots: list[HostEvent] = field(default_factory=list)  # a host's kernel log: its boots (#20)


# ---------------------------------------------------------------------------------------------
# Time


def localise(naive: datetime, tz: tzinfo) -> datetime:
    """A wall-clock time in `tz` -> aware UTC (fold=0: the first of a repeated DST hour)."""
    if tz is UTC:
        return naive.replace(tzinfo=UTC)
    return naive.replace(tzinfo=tz).astimezone(UTC)


def _at_year(year: int, s: Stamp, tz: tzinfo) -> datetime | None:
    try:
        if tz is UTC:
            return datetime(year, s[0], s[1], s[2], s[3], s[4], s[5], UTC)
        return datetime(year, s[0], s[1], s[2], s[3], s[4], s[5], tz).astimezone(UTC)
    except (ValueError, OverflowError):  # Feb 29 outside a leap year, Feb 30, year 10000, ...
        return None


# Days before each month in a leap year: a year-agnostic position, so Feb 29 orders correctly.
_DAYS_BEFORE = (0, 0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335)
# Going back by more than about half a year between consecutive lines is read as a new year
# (Dec -> Jan); a smaller step back is out-of-order delivery (merged remote logs, DST fall-back)
# and keeps the year. Consecutive candidate lines more than ~6 months apart across New Year
# therefore get the later year for both (a quiet fabric after pre-filtering): `year=` fixes it.
_ROLLOVER_SECONDS = 183 * 86400


def infer_years(
    stamps: Sequence[Stamp],
    *,
    year: int | None = None,
    reference: datetime | None = None,
    tz: tzinfo = UTC,
) -> list[datetime | None]:
    """Aware UTC datetimes for yearless stamps given in file order (local wall time in `tz`).

    `year` is the year of the first stamp. Otherwise the last stamp goes in the latest year
    that keeps it at or before `reference` + 1 day (a naive `reference` is UTC), and the years
    before it follow from the rollovers. None in the result: an impossible date (Feb 29 of a
    non-leap year), or neither `year` nor `reference` given.
    """
    if not stamps:
        return []
    offsets: list[int] = []
    k = 0
    prev: int | None = None
    for s in stamps:
        pos = ((_DAYS_BEFORE[s[0]] + s[1]) * 24 + s[2]) * 3600 + s[3] * 60 + s[4]
        if prev is not None and prev - pos > _ROLLOVER_SECONDS:
            k += 1
        prev = pos
        offsets.append(k)
    if year is None:
        if reference is None:
            return [None] * len(stamps)
        ref = reference if reference.tzinfo is not None else reference.replace(tzinfo=UTC)
        limit = ref + timedelta(days=1)
        # Next year (the +1 day slack at New Year) back to four years ago: a last line on
        # Feb 29 always finds its leap year.
        for last_year in range(ref.year + 1, ref.year - 5, -1):
            at = _at_year(last_year, stamps[-1], tz)
            if at is not None and at <= limit:
                year = last_year - offsets[-1]
                break
        else:
            return [None] * len(stamps)
    return [_at_year(year + k, s, tz) for s, k in zip(stamps, offsets, strict=True)]


TWO_DIGITS = {f"{i:02d}": i for i in range(60)}
DAY_FIELD = {**{f"{i:2d}": i for i in range(1, 32)}, **{f"{i:02d}": i for i in range(1, 32)}}


# ---------------------------------------------------------------------------------------------
# Driver

# line_no, line, when (aware UTC, or an index into LogRun.yearless), event, host, message
_Pending = tuple[int, str, datetime | int, PortEvent, str | None, str]


@dataclass(slots=True)
class LogRun:
    """State of one parse over a file's lines (shared by the syslog, opensm and UFM parsers)."""

    tz: tzinfo
    extra: Sequence[re.Pattern[str]]
    result: SyslogResult = field(default_factory=SyslogResult)
    yearless: list[Stamp] = field(default_factory=list)
    pending: list[_Pending] = field(default_factory=list)
    newest: datetime | None = None

    def dated(self, when: datetime) -> datetime:
        """Aware UTC; also tracks the newest dated line (the fallback year reference)."""
        if when.tzinfo is None:
            at = localise(when, self.tz)
        elif when.tzinfo is UTC:
            at = when
        else:
            at = when.astimezone(UTC)
        if self.newest is None or at > self.newest:
            self.newest = at
        return at

    def add(
        self, line_no: int, line: str, when: datetime | Stamp | None, event: Recognised,
        host: str | None, msg: str,
    ) -> None:
        if event is None:
            self.result.ignored += 1
            if isinstance(when, tuple):  # keeps a Dec -> Jan step visible to infer_years
                self.yearless.append(when)
        elif isinstance(event, str):
            self.result.unparsed.append((line_no, line, event))
        elif when is None:
            reason = f"undated port event ({event.state}): no absolute timestamp"
            self.result.unparsed.append((line_no, line, reason))
        elif isinstance(when, tuple):
            self.pending.append((line_no, line, len(self.yearless), event, host, msg))
            self.yearless.append(when)
        else:
            self.pending.append((line_no, line, self.dated(when), event, host, msg))

    def finish(
        self, year: int | None, reference: datetime | None, last_no: int | None
    ) -> SyslogResult:
        resolved: list[datetime | None] = []
        if self.yearless:
            ref = reference if reference is not None else self.newest
            try:
                resolved = infer_years(self.yearless, year=year, reference=ref, tz=self.tz)
            except LINE_ERRORS:  # year= far outside datetime's range
                resolved = [None] * len(self.yearless)
        no_year = year is None and reference is None and self.newest is None
        result = self.result
        unparsed, events = result.unparsed, result.events
        append = events.append
        for line_no, line, when, event, host, msg in self.pending:
            at = when if isinstance(when, datetime) else resolved[when]
            if at is None:
                reason = "year unknown (pass year= or reference=)" if no_year else "impossible date"
                unparsed.append((line_no, line, reason))
                continue
            event.at = at
            event.line_no = line_no
            event.message = msg
            if event.device is None:
                event.device = host
            append(event)
        if unparsed:
            unparsed.sort(key=lambda u: u[0])
            u_no, u_line, u_reason = unparsed[-1]
            if u_no == last_no and u_reason == NO_ENVELOPE:
                unparsed[-1] = (u_no, u_line, NO_ENVELOPE + " (truncated last line?)")
        return result


def run_lines(
    lines: Iterable[tuple[int, str]],
    one: Callable[[LogRun, int, str], None],
    *,
    year: int | None,
    reference: datetime | None,
    tz: tzinfo,
    extra: Sequence[re.Pattern[str]] = (),
    terminated: bool = False,
) -> SyslogResult:
    """Drive `one(run, line_no, line)` over the lines: terminators, blanks, errors, years.
    `terminated`: lines before these (handled elsewhere) ended with a line terminator."""
    run = LogRun(tz, extra)
    unparsed = run.result.unparsed
    saw_newline = terminated
    last_no: int | None = None
    for line_no, raw in lines:
        last_no = line_no
        if raw.endswith("\n"):
            saw_newline = True
            line = raw.rstrip("\r\n")
        elif saw_newline:
            unparsed.append((line_no, raw, HALF_WRITTEN))
            continue
        else:
            line = raw.rstrip("\r")
        if not line or line.isspace():
            run.result.ignored += 1
            continue
        try:
            one(run, line_no, line)
        except LINE_ERRORS as exc:
            unparsed.append((line_no, line, f"unreadable ({type(exc).__name__})"))
    return run.finish(year, reference, last_no)
