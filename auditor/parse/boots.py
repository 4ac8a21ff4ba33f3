"""Parse a host's own boot records: `journalctl --list-boots` and `last -x` (util-linux, wtmpdb).

The layout is detected per file: a `journalctl --list-boots` header or row makes it a journal
listing, anything else is read as `last` output. `host` names every event's host.

journalctl --list-boots (systemd src/journal/journalctl.c list_boots(); from v256
src/journal/journalctl-misc.c action_list_boots()):

* systemd 251 and later print a table (systemd/systemd pull request #22721, merged March 2022,
  first released in v251): a header `IDX BOOT ID FIRST ENTRY LAST ENTRY` (padded with spaces;
  `-q` leaves it out), then rows
  ` -1 6503176bb8ce4a3ca1edd3a9aec02b72 Sat 2025-11-01 02:54:13 UTC Sat 2025-11-01 03:08:54 UTC`
  (cells separated by spaces, the index right-aligned, a shorter zone name padded).
* Older systemd print no header and an em dash between the times (journalctl.c list_boots,
  `printf("% *i " SD_ID128_FORMAT_STR " %s—%s\\n", ...)`):
  `-1 e833ad... Wed 2017-08-16 19:03:28 UTC—Wed 2017-08-16 21:54:57 UTC`.
* Each row is a `boot` event at FIRST ENTRY with end_at = LAST ENTRY (the journal's first and
  last entries of that boot, not the kernel's start and the power-off). `reason` holds the boot
  ID. The times are format_timestamp's `%a %Y-%m-%d %H:%M:%S <zone>` in journalctl's local zone
  (`--utc`: UTC). Zone names: UTC/GMT and numeric offsets are exact; another abbreviation
  (CET, CEST, EDT...) is read in `tz` when it is `tz`'s abbreviation at that wall-clock time
  (which also settles the hour repeated when summer time ends), else the row goes to
  `unparsed` ("time zone abbreviation not known: pass --tz").
* `%a` follows LC_TIME: a weekday that is not English (`Di 2016-06-21`) goes to `unparsed`
  ("unknown locale or time stamp: run with LC_ALL=C"); an English weekday that is not the
  date's goes to `unparsed` too. A row whose last entry is before its first (a clock that was
  wrong for part of the boot) goes to `unparsed`.

last (util-linux login-utils/last.c at util-linux/util-linux@v2.41.2; wtmpdb src/wtmpdb.c at
thkukuk/wtmpdb@v0.75.0; both print the same columns):

* `reboot   system boot  6.1.0-25-amd64   Tue Oct 15 19:43   still running`
  `reboot   system boot  6.1.0-25-amd64   Tue Oct 15 19:43 - 20:10  (00:27)`
  `shutdown system down  6.1.0-25-amd64   Tue Oct 15 20:10 - 20:11  (00:00)` (only with -x)
  The login time is `--time-format short` (the default: ctime's first 16 characters, no year;
  last.c timefmts[] :141-147), `full` (-F: `Tue Oct 15 19:43:12 2024`) or `iso`
  (`2024-10-15T19:43:12+02:00`; wtmpdb prints `+0200`). The end is `- HH:MM`, `- <full>`,
  `- <iso>`, `still running`, `- crash` or `- down`, then the length `(HH:MM)` or
  `(D+HH:MM)` (last.c list() :393, the end and length :455-505). -R drops the host column,
  -a moves it to the end. ctime is not localised, so only the trailer changes with the
  locale (`wtmp beginnt Sat Dec 20 09:00:00 2025`); a time in other words goes to `unparsed`.
* `reboot system boot` -> `boot` at the login time, end_at = the printed end (the shutdown
  record that ended it; None while running, after a crash, and when the end is before the
  login, a clock set back: last prints a negative length then). wtmpdb's
  `soft-reboot`/`s-reboot` (systemd soft-reboot: userspace restarted, kernel kept) is a `boot`
  with reason "soft-reboot". `shutdown system down` -> `shutdown` at its time, end_at = the
  next boot. Other records (logins, runlevel changes, time changes) are ignored, and so is the
  `<file> begins <time>` trailer in any language.
* `crash`: a boot session that ended without a shutdown record. util-linux 2.40 and later
  (commit 9d0b73a64, "Report crashes on reboot lines insted of overlapping uptimes";
  last.c:807-813 at v2.41.2) print `- crash` on such a reboot line; older versions print the
  end of the next shutdown record found (an end later than the next boot: "overlapping
  uptimes") or `still running` when no later shutdown record exists. All three are read as
  a crash when a newer boot is in the file: a `crash` event at that next boot's time (the
  last moment the crash can have happened; last does not know when the host died), end_at
  None, reason "no shutdown record before the next boot". A `- crash` line with no newer
  boot in the file puts the crash at the login time plus the printed length.
* Years: `full` and `iso` carry them. For `short`, the newest record (last prints newest
  first) is placed in `year` if given (that year only), else at or before `reference` (the
  file's modification time; no record is after it), else the record goes to `unparsed` ("no
  year: use last -F or --time-format iso"). Going down the file each record takes the latest
  year that puts it at or before the record above it (a day of slack for a clock set back)
  and matches its printed weekday within five years, so a December -> January turn is
  crossed, and so is a gap of up to four years between records (a host up that long); a
  record no year fits goes to `unparsed` ("weekday does not match the date"). Times are
  last's local time: `tz`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from auditor.models import HostEvent, HostEventsResult
from auditor.parse._common import split_lines
from auditor.parse._hostevents import host_event

__all__ = ["parse_boots"]

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
_EXACT_ZONES = {"UTC": UTC, "GMT": UTC, "Z": UTC}

NO_ZONE = "time zone abbreviation not known: pass --tz"
LOCALE = "unknown locale or time stamp: run with LC_ALL=C"
WRONG_WEEKDAY = "weekday does not match the date"
LAST_BEFORE_FIRST = "last entry before first entry"
NOT_LIST_BOOTS = "not a journalctl --list-boots row"
NO_YEAR = "no year: use last -F or --time-format iso"
NOT_LAST = "not a last record"
NO_TIME = "no time in the record (last --time-format notime?)"
CRASH_REASON = "no shutdown record before the next boot"
HALF_WRITTEN = "half-written line"

# --- journalctl --list-boots -----------------------------------------------------------------

_BOOT_ID = r"(?P<id>[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
_JTIME = r"\S{1,32} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: \S{1,32})?|n/a"
_JOURNAL_HEADER_RE = re.compile(r"^\s*(?:IDX|#)\s+BOOT ID\s+FIRST ENTRY\s+LAST ENTRY\s*$")
_JOURNAL_ROW_RE = re.compile(
    rf"^\s*(?P<idx>[+-]?\d{{1,9}})\s+{_BOOT_ID}\s+(?P<first>{_JTIME})"
    rf"(?:\s*\u2014\s*|\s+)(?P<last>{_JTIME})\s*$"
)
_JOURNAL_START_RE = re.compile(rf"^\s*[+-]?\d{{1,9}}\s+{_BOOT_ID}\s")
_JTIME_RE = re.compile(
    r"^(?P<wd>\S{1,32}) (?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?: (?P<zone>\S+))?$"
)
_OFFSET_RE = re.compile(r"^(?:UTC|GMT)?(?P<sign>[+-])(?P<h>\d\d):?(?P<m>\d\d)$")


def _zone_time(naive: datetime, zone: str | None, tz: tzinfo) -> datetime | str:
    """`naive` wall-clock time printed with the zone name `zone`, as aware UTC; or a reason."""
    if zone is None:
        return naive.replace(tzinfo=tz).astimezone(UTC)
    exact = _EXACT_ZONES.get(zone)
    if exact is not None:
        return naive.replace(tzinfo=exact)
    m = _OFFSET_RE.match(zone)
    if m is not None:
        offset = timedelta(hours=int(m.group("h")), minutes=int(m.group("m")))
        sign = -1 if m.group("sign") == "-" else 1
        return naive.replace(tzinfo=timezone(sign * offset)).astimezone(UTC)
    for fold in (0, 1):
        local = naive.replace(tzinfo=tz, fold=fold)
        if local.tzname() == zone:
            return local.astimezone(UTC)
    return NO_ZONE


def _journal_time(text: str, tz: tzinfo) -> datetime | str:
    m = _JTIME_RE.match(text)
    if m is None:
        return "no time (n/a)" if text == "n/a" else NOT_LIST_BOOTS
    try:
        naive = datetime.fromisoformat(f"{m.group('date')}T{m.group('time')}")
    except ValueError:
        return "bad date"
    weekday = m.group("wd")
    if weekday not in _WEEKDAYS:
        return LOCALE
    if _WEEKDAYS.index(weekday) != naive.weekday():
        return WRONG_WEEKDAY
    try:
        return _zone_time(naive, m.group("zone"), tz)
    except (OverflowError, ValueError):
        return "time out of range"


def _journal(lines: list[str], host: str, tz: tzinfo, result: HostEventsResult) -> None:
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if _JOURNAL_HEADER_RE.match(line):
            result.ignored += 1
            continue
        m = _JOURNAL_ROW_RE.match(line)
        if m is None:
            result.unparsed.append((line_no, line, NOT_LIST_BOOTS))
            continue
        first = _journal_time(m.group("first"), tz)
        last = _journal_time(m.group("last"), tz)
        if isinstance(first, str) or isinstance(last, str):
            result.unparsed.append((line_no, line, first if isinstance(first, str) else
                                    str(last)))
            continue
        if last < first:
            result.unparsed.append((line_no, line, LAST_BEFORE_FIRST))
            continue
        result.events.append(host_event(host, first, "boot", end_at=last,
                                        reason=f"boot {m.group('id')}", line_no=line_no,
                                        message=line.strip()))


# --- last ------------------------------------------------------------------------------------

_WORD = r"[^\W\d_]{1,16}"  # a weekday or month name in any script
_FULL = rf"{_WORD} {_WORD} [ \d]\d \d\d:\d\d:\d\d \d{{4}}"
_SHORT = rf"{_WORD} {_WORD} [ \d]\d \d\d:\d\d"
_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)"
_LENGTH = r"\((?P<len>-?\d{1,6}\+\d\d:\d\d|-?\d\d:\d\d)\)"
_LAST_RE = re.compile(
    r"^(?P<user>reboot|shutdown|soft-reboot|s-reboot)\s+system (?P<what>boot|down)\s+"
    rf"(?:(?P<host>\S+)\s+)??(?P<login>{_ISO}|{_FULL}|{_SHORT})"
    rf"(?:\s+(?:-\s+)?(?P<end>still running|crash|down|{_ISO}|{_FULL}|\d\d:\d\d)"
    rf"(?:\s+{_LENGTH})?)?(?:\s+(?P<host_last>\S+))?\s*$"
)
_RECORD_START_RE = re.compile(r"^(?:reboot|shutdown|soft-reboot|s-reboot)\b")
# Any other record: a user (8 columns), a tty, maybe a host, a login time.
_OTHER_RECORD_RE = re.compile(
    rf"^\S+\s+.*?(?:{_ISO}|{_WORD} {_WORD} [ \d]\d \d\d:\d\d)"
)
# `wtmp begins Wed Aug 28 03:00:00 2013`, or translated (`wtmp beginnt ...`): the time decides.
_TRAILER_RE = re.compile(rf"^\S+ .*(?:{_FULL}|{_ISO})(?:\s.*)?$")
_OUT_OF_ORDER = timedelta(days=1)
_MINUTE = timedelta(minutes=1)  # short times are cut to the minute
# A date's weekday repeats after 5, 6 or 11 years: within 5 years at most one year fits, so the
# walk is right for gaps under five years, and a record no year fits (a wrong reference, year
# or tz) is refused instead of being put a decade back.
_YEARS_BACK = 5
_FULL_RE = re.compile(
    r"^(?P<wd>\S+) (?P<mon>\S+) +(?P<day>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d)"
    r"(?::(?P<s>\d\d) (?P<y>\d{4}))?$"
)


@dataclass(slots=True)
class _Wall:
    """A login time as printed: wall clock, with or without its year."""

    weekday: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    year: int | None


@dataclass(slots=True)
class _Record:
    line_no: int
    line: str
    kind: str  # boot | shutdown
    at: datetime
    end: str | None  # "still running", "crash", "down", a time, or None (notime)
    end_at: datetime | None
    length: timedelta | None
    soft: bool


def _wall(text: str) -> _Wall | str:
    m = _FULL_RE.match(text)
    if m is None:
        return LOCALE
    weekday, month = m.group("wd"), _MONTHS.get(m.group("mon"))
    if weekday not in _WEEKDAYS or month is None:
        return LOCALE
    year = m.group("y")
    return _Wall(_WEEKDAYS.index(weekday), month, int(m.group("day")), int(m.group("h")),
                 int(m.group("m")), int(m.group("s") or 0), int(year) if year else None)


def _length(text: str | None) -> timedelta | None:
    if text is None:
        return None
    negative = text.startswith("-")
    days, _, clock = text.lstrip("-").rpartition("+")
    hours, minutes = clock.split(":")
    span = timedelta(days=int(days or 0), hours=int(hours), minutes=int(minutes))
    return -span if negative else span


def _local(wall: _Wall, year: int, tz: tzinfo) -> datetime | None:
    try:
        return datetime(year, wall.month, wall.day, wall.hour, wall.minute, wall.second,
                        tzinfo=tz)
    except ValueError:
        return None


def _place(wall: _Wall, bound: datetime | None, tz: tzinfo, slack: timedelta,
           years: int) -> datetime | str:
    """The login time as aware UTC. Without a printed year: the latest of `years` years whose
    date has the printed weekday and is not after `bound` + `slack`."""
    if wall.year is not None:
        local = _local(wall, wall.year, tz)
        if local is None:
            return "bad date"
        if local.weekday() != wall.weekday:
            return WRONG_WEEKDAY
        return local.astimezone(UTC)
    if bound is None:
        return NO_YEAR
    limit = bound + slack
    top = bound.astimezone(tz).year
    for year in range(top + (1 if slack else 0), top - years, -1):
        local = _local(wall, year, tz)
        if local is not None and local.weekday() == wall.weekday and local <= limit:
            return local.astimezone(UTC)
    return WRONG_WEEKDAY


def _login_time(login: str, bound: datetime | None, tz: tzinfo, slack: timedelta,
                years: int) -> datetime | str:
    try:
        if re.fullmatch(_ISO, login):
            return datetime.fromisoformat(login.replace(",", ".")).astimezone(UTC)
        wall = _wall(login)
        return wall if isinstance(wall, str) else _place(wall, bound, tz, slack, years)
    except (OverflowError, ValueError):
        return "time out of range"


def _end_time(end: str, at: datetime, length: timedelta | None, tz: tzinfo) -> datetime | None:
    """The printed end (`HH:MM`, full or ISO) as aware UTC."""
    if re.fullmatch(_ISO, end):
        return datetime.fromisoformat(end.replace(",", ".")).astimezone(UTC)
    wall = _wall(end) if " " in end else None
    if isinstance(wall, _Wall) and wall.year is not None:
        local = _local(wall, wall.year, tz)
        return None if local is None else local.astimezone(UTC)
    hour, minute = (int(x) for x in end.split(":"))
    start = at.astimezone(tz)
    if length is None:  # the first such time of day from the login on
        day = start.date()
        moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
        if moment < start.replace(second=0, microsecond=0):
            moment += timedelta(days=1)
        return moment.astimezone(UTC)
    # The length says on which day: the time of day nearest login + length.
    guess = start + length
    best: datetime | None = None
    for days in (-1, 0, 1):
        day = (guess + timedelta(days=days)).date()
        moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
        if best is None or abs(moment - guess) < abs(best - guess):
            best = moment
    return None if best is None else best.astimezone(UTC)


def _last(lines: list[str], text: str, host: str, tz: tzinfo, year: int | None,
          reference: datetime | None, result: HostEventsResult) -> None:
    bound: datetime | None
    if year is not None:
        bound = datetime(year, 12, 31, 23, 59, 59, tzinfo=tz)
    elif reference is not None:
        bound = reference if reference.tzinfo is not None else reference.replace(tzinfo=tz)
    else:
        bound = None
    slack = timedelta(0)
    years = 1 if year is not None else _YEARS_BACK  # `year` is the newest record's year
    last_line_no = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    records: list[_Record] = []
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        m = _LAST_RE.match(line)
        if m is None:
            cut = line_no == last_line_no and not text.endswith("\n")
            if _RECORD_START_RE.match(line):
                result.unparsed.append((line_no, line, HALF_WRITTEN if cut else
                                        _time_problem(line)))
            elif _TRAILER_RE.match(line) or _OTHER_RECORD_RE.match(line):
                result.ignored += 1
            else:
                result.unparsed.append((line_no, line, HALF_WRITTEN if cut else NOT_LAST))
            continue
        at = _login_time(m.group("login"), bound, tz, slack, years)
        if isinstance(at, str):
            result.unparsed.append((line_no, line, at))
            continue
        # last prints newest first: the next record is not after this one, give or take a
        # clock set back a little (the year or reference given is a hard limit).
        bound, slack, years = at, _OUT_OF_ORDER, _YEARS_BACK
        length = _length(m.group("len"))
        end = m.group("end")
        end_at = None
        if end is not None and end not in ("still running", "crash", "down"):
            try:
                end_at = _end_time(end, at, length, tz)
            except (OverflowError, ValueError):
                end_at = None
            if end_at is not None and end_at < at:
                # last.c: "Under strange circumstances, secs < 0 can happen" (a clock set
                # back): the boot stands, its end is unknown.
                end_at = None
        records.append(_Record(line_no, line, "boot" if m.group("what") == "boot" else
                               "shutdown", at, end, end_at, length,
                               m.group("user") in ("soft-reboot", "s-reboot")))
    _emit(records, host, result)


def _time_problem(line: str) -> str:
    """Why a reboot/shutdown line did not read: its time is in another language, or it is not
    a record at all."""
    if re.search(rf"{_WORD} {_WORD} [ \d]\d \d\d:\d\d", line):
        return LOCALE
    return NO_TIME


def _plus(at: datetime, length: timedelta | None) -> datetime:
    """`at` + `length` (last's printed length), or `at` when that is not a date."""
    try:
        return at + (length or timedelta(0))
    except OverflowError:
        return at


def _emit(records: list[_Record], host: str, result: HostEventsResult) -> None:
    boots = sorted((r for r in records if r.kind == "boot"), key=lambda r: r.at)
    next_boot = {id(b): (boots[i + 1] if i + 1 < len(boots) else None)
                 for i, b in enumerate(boots)}
    events: list[tuple[int, int, HostEvent]] = []
    for order, rec in enumerate(records):
        message = rec.line.strip()
        if rec.kind == "shutdown":
            events.append((rec.line_no, order, host_event(
                host, rec.at, "shutdown", end_at=rec.end_at, line_no=rec.line_no,
                message=message)))
            continue
        newer = next_boot[id(rec)]
        crashed = rec.end == "crash" or (newer is not None and (
            rec.end == "still running"
            or (rec.end_at is not None and rec.end_at - newer.at > _MINUTE)))
        end_at = None if crashed or rec.end == "still running" else rec.end_at
        events.append((rec.line_no, order, host_event(
            host, rec.at, "boot", end_at=end_at, reason="soft-reboot" if rec.soft else "",
            line_no=rec.line_no, message=message)))
        if crashed:
            crash_at = newer.at if newer is not None else _plus(rec.at, rec.length)
            events.append((rec.line_no, order, host_event(
                host, crash_at, "crash", reason=CRASH_REASON, line_no=rec.line_no,
                message=message)))
    result.events.extend(e for _, _, e in sorted(events, key=lambda t: (t[0], t[1])))


def parse_boots(
    text: str,
    *,
    host: str,
    tz: tzinfo = UTC,
    year: int | None = None,
    reference: datetime | None = None,
) -> HostEventsResult:
    """Boots (and crashes, shutdowns) of one host from `journalctl --list-boots` or
    `last -x`. `tz` is the zone the tool printed its local times in; `year` or `reference`
    (the file's modification time) place `last`'s year-less times."""
    lines = split_lines(text)
    result = HostEventsResult()
    first = next((line for line in lines if line.strip()), "")
    if _JOURNAL_HEADER_RE.match(first) or _JOURNAL_START_RE.match(first):
        _journal(lines, host, tz, result)
    else:
        _last(lines, text, host, tz, year, reference, result)
    return result
