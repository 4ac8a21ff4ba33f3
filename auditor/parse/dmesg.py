"""Parse a host's kernel log for HCA port events: link up/down, IB port state, cable plug/unplug.

Accepted line forms (one file may mix them):

* `dmesg -T`: `[Mon Nov 30 06:28:57 2026] msg`, the host's LOCAL time (pass `tz`). Run it with
  LC_ALL=C: util-linux formats the stamp with strftime, so other locales print other names.
  dmesg computes it as boot time + monotonic stamp, so it drifts after a suspend/resume.
* plain `dmesg`: `[32704.121294] msg`, seconds since boot; placed in time with `boot_time`.
  Without one, port-event lines go to `unparsed` ("no boot time").
* `dmesg -x` / `dmesg -r` prefixes (`kern  :info  : `, `<6>`) in front of either.
* `dmesg --time-format iso`: `2026-11-30T06:28:57,123456+01:00 msg` (comma before the fraction).
* `journalctl -k -o short-iso` (and -o short-iso-precise, rsyslog's RSYSLOG_FileFormat):
  `2026-11-30T06:28:57+0000 host kernel: msg`. Lines of other syslog tags are ignored; the
  `-- Boot <id> --` and `-- No entries --` markers too.

Rejected into `unparsed`: lines with no recognisable time stamp, and port-event lines with an
RFC 3164 `Mar 27 15:37:34 host kernel:` stamp (no year; use journalctl -o short-iso).

Recognised messages (the driver prints; see /work/shared/reference/switch/README.md "Hosts"):

* `mlx5_core <pci> <netdev>: Link up|Link down` (mlx5e Ethernet/RoCE netdevs).
* `<ipoib if>: Event 9|10 on device mlx5_0 port 1`: IPoIB prints the IB async events only with
  ib_ipoib debug_level=1; 9 = IB_EVENT_PORT_ACTIVE -> up, 10 = IB_EVENT_PORT_ERR -> down. Other
  events (11 LID_CHANGE, 12 PKEY_CHANGE, 13 SM_CHANGE, 17, 18) are not transitions: ignored.
* `mlx5_core <pci>: Port module event: module N, Cable plugged|unplugged|disabled` and
  `Port module event[error]: module N, Cable error, <reason>` (drivers/net/ethernet/mellanox/
  mlx5/core/events.c; the error form goes through mlx5_core_err, which puts
  `port_module:<line>:(pid N): ` in front of the text).
* `mlx5_core <pci> mlx5_0: Port DOWN|ACTIVE`: printed by IB core's ib_cache_update() on kernels
  carrying "IB/cache: Add log messages for IB device state changes" (posted to linux-rdma for
  rdma-next in January 2025); older kernels print nothing on IB port transitions.
  mlx5 registers one RDMA device per PCI function with a single port, so the port is 1.
  INIT/ARMED steps of the same message are ignored (not an up/down edge).
* Leniently, any other `mlx5_<n> ... port <p> ... DOWN|ACTIVE` line ("port 1 state changed to
  DOWN", "link state changing to ACTIVE"): no such mlx5_ib line has been captured publicly, so
  the wording is unknown and only the device, port and state word are relied on.

Boots: the kernel's banner `Linux version <release> (<builder>) (<compiler>) #<build> ...`
(init/version.c linux_banner, the first line a kernel prints) is a `boot` HostEvent in
`boots`, at that line's time: with `dmesg -T`, ISO and journal stamps directly; with plain
monotonic stamps only when `boot_time` is given (else the line goes to `unparsed`, "no boot
time"); with an RFC 3164 stamp to `unparsed` (no year). Its reason is `Linux <release>`.

Every event has `device` = the `host` argument and an aware UTC `at`. `port_name` is the netdev
(`enp1s0f0`, `ib0`), `mlx5_0/1` for IB port lines, or the PCI function (`0000:01:00.0`) for
module events. `message` is the kernel text without its time stamp. Everything else counts
as `ignored`. This parser never raises: it reports what it could not read instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo

from auditor.models import HostEvent, PortEvent
from auditor.parse._common import split_lines
from auditor.parse._hostevents import host_event

# The lines worth parsing, for the ingest's scan of a whole log (PCRE, run by grep): what the
# recognisers below read, and the boot banner (#20).
PREFILTER: str = (r"[Ll]ink (?:[Uu]p|[Dd]own)|Event (?:9|10) on device|[Pp]ort module event"
                  r"|mlx5_\d+.*(?:DOWN|ACTIVE)|Linux version \d")

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}

# dmesg -x "kern  :info  : " and dmesg -r "<6>" prefixes.
_PREFIX_RE = re.compile(r"^(?:<\d{1,3}>|[a-z]{2,8} *:[a-z]{3,6} *: )", re.ASCII)
# Any weekday/month word, so a non-C locale is reported as such rather than as garbage.
_CTIME_RE = re.compile(
    r"^\[\S{1,16} (?P<mon>\S{1,16}) {1,2}(?P<day>\d{1,2}) "
    r"(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2}) (?P<y>\d{4})\] ?(?P<msg>.*)$",
    re.ASCII,
)
_MONO_RE = re.compile(r"^\[ *(?P<sec>\d{1,12})\.(?P<frac>\d{1,9})\] ?(?P<msg>.*)$", re.ASCII)
_ISO_RE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?P<frac>[.,]\d{1,9})?"
    r"(?:Z|[+-]\d{2}:?\d{2})?) (?P<rest>.*)$",
    re.ASCII,
)
# journal/syslog envelope after the time: "host ident[pid]: msg".
_ENVELOPE_RE = re.compile(r"^(?P<host>\S+) (?P<ident>[^\s:\[]+)(?:\[\d+\])?: (?P<msg>.*)$")
_RFC3164_RE = re.compile(
    r"^(?P<mon>[A-Z][a-z]{2}) {1,2}\d{1,2} \d{2}:\d{2}:\d{2} (?P<rest>.*)$", re.ASCII
)
_JOURNAL_MARKER_RE = re.compile(r"^-- .* --$")
# A monotonic stamp rsyslog's imklog leaves inside the message.
_INNER_MONO_RE = re.compile(r"^\[ *\d{1,12}\.\d{1,9}\] ?", re.ASCII)

_PCI = r"(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
_NETDEV_LINK_RE = re.compile(
    r"^mlx5_core " + _PCI + r" (?P<ifname>[^\s:]+): Link (?P<state>up|down)\b", re.ASCII
)
_MODULE_RE = re.compile(
    r"^mlx5_core " + _PCI + r":.*?Port module event(?:\[error\])?: module (?P<module>\d+), "
    r"Cable (?P<status>plugged|unplugged|error|disabled)",
    re.ASCII,
)
_IPOIB_EVENT_RE = re.compile(
    r"^(?P<ifname>[^\s:]+): Event (?P<code>\d+) on device (?P<dev>\S+) port (?P<port>\d+)\b",
    re.ASCII,
)
_IBDEV_PORT_RE = re.compile(
    r"^mlx5_core " + _PCI + r" (?P<dev>[^\s:]+): Port (?P<state>[A-Z_]+)\s*$", re.ASCII
)
_LENIENT_RE = re.compile(
    r"\b(?P<dev>mlx5_\d+)\b.*?\bport (?P<port>\d+)\b.*?\b(?P<state>DOWN|ACTIVE)\b", re.ASCII
)

# init/version.c: "Linux version " UTS_RELEASE " (" LINUX_COMPILE_BY "@" LINUX_COMPILE_HOST ")..."
_BANNER_RE = re.compile(r"^Linux version (?P<release>\S{1,128}) \(", re.ASCII)

_IB_EVENTS = {"9": "up", "10": "down"}
_PORT_STATES = {"DOWN": "down", "ACTIVE": "up"}
_MODULE_STATES = {
    "plugged": "module_plugged",
    "unplugged": "module_unplugged",
    "error": "module_error",
    "disabled": "module_disabled",
}

_NO_BOOT_TIME = "no boot time"
_NO_YEAR = "syslog time stamp without a year; use journalctl -k -o short-iso or dmesg -T"


@dataclass(frozen=True, slots=True)
class DmesgResult:
    """Events found, lines that could not be read as (line_no, line, reason), lines skipped,
    and the boots the kernel banner marks (`boot` HostEvents)."""

    events: list[PortEvent] = field(default_factory=list)
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)
    ignored: int = 0
    boots: list[HostEvent] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Match:
    state: str
    port_name: str
    code: str | None = None


def _classify(msg: str) -> _Match | None:
    """The port event a kernel message reports, or None."""
    m = _MODULE_RE.match(msg)
    if m is not None:
        return _Match(_MODULE_STATES[m.group("status")], m.group("pci").lower())
    m = _IPOIB_EVENT_RE.match(msg)
    if m is not None:
        state = _IB_EVENTS.get(m.group("code"))
        if state is None:
            return None
        return _Match(state, f"{m.group('dev')}/{m.group('port')}", m.group("code"))
    m = _NETDEV_LINK_RE.match(msg)
    if m is not None:
        return _Match(m.group("state"), m.group("ifname"))
    m = _IBDEV_PORT_RE.match(msg)
    if m is not None:
        state = _PORT_STATES.get(m.group("state"))
        return None if state is None else _Match(state, f"{m.group('dev')}/1")
    m = _LENIENT_RE.search(msg)
    if m is not None:
        return _Match(_PORT_STATES[m.group("state")], f"{m.group('dev')}/{m.group('port')}")
    return None


def _local(moment: datetime, tz: tzinfo) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=tz)


@dataclass(slots=True)
class _Line:
    """A line split into its time (None when it cannot be placed) and kernel message."""

    msg: str
    at: datetime | None = None
    problem: str | None = None  # why `at` is None
    kernel: bool = True


def _split(line: str, boot_time: datetime | None, tz: tzinfo) -> _Line | str:
    """The line's time and message, or the reason the line is unreadable."""
    text = _PREFIX_RE.sub("", line, count=1)
    m = _CTIME_RE.match(text)
    if m is not None:
        month = _MONTHS.get(m.group("mon"))
        if month is None:
            return "unknown month name (run dmesg -T with LC_ALL=C)"
        try:
            at = datetime(
                int(m.group("y")),
                month,
                int(m.group("day")),
                int(m.group("h")),
                int(m.group("m")),
                int(m.group("s")),
                tzinfo=tz,
            )
        except ValueError as exc:
            return f"bad date: {exc}"
        return _Line(m.group("msg"), at)
    m = _MONO_RE.match(text)
    if m is not None:
        if boot_time is None:
            return _Line(m.group("msg"), problem=_NO_BOOT_TIME)
        micros = int(m.group("frac")[:6].ljust(6, "0"))
        try:
            at = boot_time + timedelta(seconds=int(m.group("sec")), microseconds=micros)
        except OverflowError:
            return "monotonic stamp out of range"
        return _Line(m.group("msg"), at)
    m = _ISO_RE.match(text)
    if m is not None:
        try:
            at = _local(datetime.fromisoformat(m.group("ts")), tz)
        except ValueError as exc:
            return f"bad ISO time: {exc}"
        frac = m.group("frac")
        if frac is not None and frac.startswith(","):
            return _Line(m.group("rest"), at)  # dmesg --time-format iso: no envelope
        env = _ENVELOPE_RE.match(m.group("rest"))
        if env is None:
            return "expected '<host> <tag>: ' after the time"
        return _Line(env.group("msg"), at, kernel=env.group("ident") == "kernel")
    m = _RFC3164_RE.match(text)
    if m is not None and m.group("mon") in _MONTHS:
        env = _ENVELOPE_RE.match(m.group("rest"))
        if env is None:
            return "expected '<host> <tag>: ' after the time"
        return _Line(env.group("msg"), problem=_NO_YEAR, kernel=env.group("ident") == "kernel")
    return "unrecognised time stamp"


def parse_dmesg(
    text: str,
    *,
    boot_time: datetime | None = None,
    host: str,
    tz: tzinfo = UTC,
) -> DmesgResult:
    """Port events in a kernel log. `tz` is the host's zone (dmesg -T and naive times)."""
    if boot_time is not None:
        boot_time = _local(boot_time, tz)
    events: list[PortEvent] = []
    unparsed: list[tuple[int, str, str]] = []
    boots: list[HostEvent] = []
    ignored = 0
    for line_no, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        if _JOURNAL_MARKER_RE.match(line.strip()):
            ignored += 1
            continue
        split = _split(line, boot_time, tz)
        if isinstance(split, str):
            unparsed.append((line_no, line, split))
            continue
        msg = _INNER_MONO_RE.sub("", split.msg.strip(), count=1)
        banner = _BANNER_RE.match(msg) if split.kernel else None
        if banner is not None:
            if split.at is None:
                unparsed.append((line_no, line, split.problem or _NO_BOOT_TIME))
                continue
            try:
                booted = split.at.astimezone(UTC)
            except (OverflowError, ValueError) as exc:
                unparsed.append((line_no, line, f"time out of range: {exc}"))
                continue
            boots.append(host_event(host, booted, "boot",
                                    reason=f"Linux {banner.group('release')}",
                                    line_no=line_no, message=msg))
            continue
        found = _classify(msg) if split.kernel else None
        if found is None:
            ignored += 1
        elif split.at is None:
            unparsed.append((line_no, line, split.problem or _NO_BOOT_TIME))
        else:
            try:
                at = split.at.astimezone(UTC)
            except (OverflowError, ValueError) as exc:
                unparsed.append((line_no, line, f"time out of range: {exc}"))
                continue
            events.append(
                PortEvent(
                    at=at,
                    state=found.state,
                    device=host,
                    port_name=found.port_name,
                    code=found.code,
                    line_no=line_no,
                    message=msg,
                )
            )
    return DmesgResult(events, unparsed, ignored, boots)
