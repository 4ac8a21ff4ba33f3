"""What the three transceiver-diagnostics parsers share (`ethtool_module`, `mlxlink_module`,
`onyx_optics`): units, the zero rules, bounds, and the command line that names the port.

The rules every format follows, so a reading means the same whichever tool took it:

* Powers are dBm. A tool that prints mW is converted (dBm = 10 log10 mW). A power of 0 mW is
  stored as -40 dBm: DDM encodes power in steps of 0.1 uW (SFF-8636 6.2.4, CMIS 8.9.4), so 0
  means "below the first step", and 0.1 uW is -40 dBm; mlxlink prints the same -40 itself.
* A threshold of 0 (0 mA, 0 V, 0 mW, 0 degrees C) is no threshold (None): modules that do not
  implement one leave the bytes at zero, and a limit of 0 would put every reading in alarm.
* A lane whose bias, Tx power and Rx power are all zero is not a lane in use (a 4-lane module in
  an 8-lane CMIS cage, one leg of a breakout, a port that is administratively down with its laser
  off) and is left out; a lane with any light or bias is kept, dark quantities as -40 dBm / 0 mA.
* A module reporting 0 V has no monitors at all (passive copper): its temperature and voltage
  are placeholders and are left out, and so are its lanes.
* Text fields (vendor, part, serial, firmware, port names) come from a module EEPROM or a
  switch: they are cut to FIELD_MAX characters, each cut counted (CUT). Numbers that are not
  finite are refused.
* A reading or threshold outside what the module's 16-bit DDM words can encode
  (`models.OPTICS_BOUNDS`: 1e308 C, -3.3 V, a negative bias) is not a module's: it is left out
  of the reading and counted per quantity (`implausible`), the rest of the reading kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from auditor.errors import ParseError
from auditor.models import (
    OPTICS_BOUNDS,
    OPTICS_QUANTITIES,
    OPTICS_UNITS,
    LaneReading,
    OpticsReading,
    Thresholds,
    clip,
    plausible,
)
from auditor.parse._common import split_lines

# SFF-8636 and CMIS EEPROM strings are 16 bytes; anything longer is not from a module.
FIELD_MAX = 64
# CMIS pages 11h of up to four banks hold 8 lanes each; ethtool numbers them 1..32.
MAX_LANES = 32
NO_LIGHT_DBM = -40.0
NA = frozenset({"", "N/A", "NA", "n/a"})
THRESHOLD_KINDS = ("low_alarm", "low_warning", "high_warning", "high_alarm")
CUT = f"a text field longer than {FIELD_MAX} characters, cut"


def implausible(quantity: str, threshold: bool = False) -> str:
    """The `sources` reason of a value of `quantity` outside OPTICS_BOUNDS, left out."""
    lo, hi = OPTICS_BOUNDS[quantity]
    what = "threshold" if threshold else "reading"
    return (f"implausible {quantity} {what} (outside {lo:g}..{hi:g} {OPTICS_UNITS[quantity]}), "
            "left out")


def text(value: str | None) -> str | None:
    """A text field as stored: stripped, N/A as None, cut to FIELD_MAX."""
    if value is None:
        return None
    value = value.strip()
    return None if value in NA else clip(value, FIELD_MAX)


def number(value: str, kind: str, line_no: int, line: str) -> float:
    """A finite float, or a ParseError naming the line (nan/inf are not readings)."""
    try:
        result = float(value)
    except ValueError:
        raise ParseError(kind, line_no, line, f"not a number: {value[:40]!r}") from None
    if not math.isfinite(result):
        raise ParseError(kind, line_no, line, f"not a finite number: {value[:40]!r}")
    return result


def mw_to_dbm(mw: float) -> float:
    """dBm of a power in mW, rounded to 0.001 dB (finer than any module measures); 0 mW (or a
    step below 0.1 uW) is the -40 dBm floor."""
    if mw <= 0.0001:
        return NO_LIGHT_DBM
    return round(10 * math.log10(mw), 3)


def zero_is_none(value: float | None) -> float | None:
    """A threshold as stored: 0 (in the unit the module encodes it in) is "none"."""
    return None if value is None or value == 0 else value


def lane_number(value: str, kind: str, line_no: int, line: str) -> int:
    lane = int(value)
    if not 1 <= lane <= MAX_LANES:
        raise ParseError(kind, line_no, line, f"lane {lane} out of range 1..{MAX_LANES}")
    return lane


@dataclass(slots=True)
class Module:
    """What one block of output said about one module, gathered line by line."""

    port: str | None
    line_no: int
    line: str
    vendor: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    firmware: str | None = None
    temperature_c: float | None = None
    vcc_v: float | None = None
    no_monitors: bool = False  # passive copper: lanes and module monitors are not readings
    absent: bool = False  # the tool says no module is plugged in
    lanes: dict[int, dict[str, float]] = field(default_factory=dict)
    limits: dict[str, dict[str, float | None]] = field(default_factory=dict)
    seen: bool = False  # a line this parser reads was found
    issues: list[str] = field(default_factory=list)  # what was cut or left out, one each

    def text(self, value: str | None) -> str | None:
        """`text(value)`, a cut counted."""
        kept = text(value)
        if kept is not None and value is not None and len(kept) < len(value.strip()):
            self.issues.append(CUT)
        return kept

    def _clip(self, value: str) -> str:
        kept = clip(value, FIELD_MAX)
        if kept != value:
            self.issues.append(CUT)
        return kept

    def _plausible(self, quantity: str, value: float | None, threshold: bool = False
                   ) -> float | None:
        if value is None or plausible(quantity, value):
            return value
        self.issues.append(implausible(quantity, threshold))
        return None

    def set_lane(self, lane: int, quantity: str, value: float) -> None:
        self.lanes.setdefault(lane, {})[quantity] = value

    def set_limit(self, quantity: str, which: str, value: float | None) -> None:
        """`value` with the zero rule already applied by the caller: it knows the raw unit
        (0 dBm is 1 mW, a real limit; 0 mW is none)."""
        self.limits.setdefault(quantity, {})
        # The first module-wide value wins: per-channel copies (NVUE) repeat it.
        self.limits[quantity].setdefault(which, value)

    def reading(self, device: str, read_at: datetime, kind: str) -> OpticsReading:
        if self.port is None:
            raise ParseError(kind, self.line_no, self.line,
                             "no port named: keep the command line in the capture or pass the "
                             "port (ingest --port)")
        no_monitors = self.no_monitors or self.vcc_v == 0
        limits: dict[str, Thresholds] = {}
        if not no_monitors:
            for q, v in sorted(self.limits.items()):
                if q not in OPTICS_QUANTITIES:
                    continue
                kept = {k: self._plausible(q, v.get(k), threshold=True) for k in THRESHOLD_KINDS}
                if any(value is not None for value in kept.values()):
                    limits[q] = Thresholds(**kept)
        lanes = {} if no_monitors else {
            lane: {q: v for q, v in values.items()
                   if self._plausible(q, v) is not None} for lane, values in self.lanes.items()}
        return OpticsReading(
            device=self._clip(device), port_name=self._clip(self.port),
            read_at=read_at, vendor=self.vendor, part_number=self.part_number,
            serial_number=self.serial_number, firmware=self.firmware,
            temperature_c=None if no_monitors else self._plausible("temperature_c",
                                                                   self.temperature_c),
            vcc_v=None if no_monitors else self._plausible("vcc_v", self.vcc_v),
            lanes=_lanes(lanes), thresholds=limits, issues=tuple(self.issues))


def _dark(values: dict[str, float]) -> bool:
    return (values.get("tx_bias_ma", 0) == 0
            and values.get("tx_power_dbm", NO_LIGHT_DBM) <= NO_LIGHT_DBM
            and values.get("rx_power_dbm", NO_LIGHT_DBM) <= NO_LIGHT_DBM)


def _lanes(lanes: dict[int, dict[str, float]]) -> tuple[LaneReading, ...]:
    return tuple(LaneReading(lane, v.get("tx_bias_ma"), v.get("tx_power_dbm"),
                             v.get("rx_power_dbm"))
                 for lane, v in sorted(lanes.items()) if not _dark(v))


@dataclass(slots=True)
class Block:
    """The lines of one module's output; `port` from its command line, if it had one."""

    port: str | None
    line_no: int
    line: str
    lines: list[tuple[int, str]] = field(default_factory=list)


def blocks(text_in: str, command_port: Callable[[str], str | None], port: str | None,
           kind: str) -> Iterator[Block]:
    """Split a capture at its command lines (`user@host:~$ ethtool -m swp1`): each starts the
    block of the port it names. Lines before the first command line are the block of `port`.
    A port named twice is a ParseError (two readings of one port at one time)."""
    current = Block(port, 1, "")
    seen: set[str] = set()
    for line_no, raw in enumerate(split_lines(text_in), 1):
        named = command_port(raw)
        if named is None:
            current.lines.append((line_no, raw))
            continue
        if current.lines and any(line.strip() for _, line in current.lines):
            yield current
        if named in seen:
            raise ParseError(kind, line_no, raw, f"port {named} listed twice")
        seen.add(named)
        current = Block(named, line_no, raw)
    if any(line.strip() for _, line in current.lines):
        yield current


# A command line is short; longer lines are output (and never fed to the backtracking below).
COMMAND_MAX = 512


def command_re(pattern: str) -> re.Pattern[str]:
    """A command-line matcher: the command after an optional prompt (anything ending in $, # or
    >, Onyx's `leaf01 [standalone: master] #` included) and `sudo`, with nothing after it but a
    pager pipe."""
    return re.compile(r"^(?:.*[$#>]\s*)?(?:sudo\s+)?" + pattern
                      + r"\s*(?:\|\s*(?:less|more))?\s*$", re.ASCII)


def match_command(pattern: re.Pattern[str], line: str) -> re.Match[str] | None:
    return pattern.match(line.strip()) if len(line) <= COMMAND_MAX else None
