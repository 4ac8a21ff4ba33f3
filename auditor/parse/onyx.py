"""Parse Onyx / MLNX-OS switch CLI output: `show interfaces ib status` and per-port
`show interfaces ib <port> transceiver`.

Provenance (see /work/shared/reference/switch/README.md section 5): the transceiver block is the
one the MLNX-OS user manual documents ("InfiniBand Interface" page, 3.10.42xx and 3.11.2xxx):
a `Slot 1 port 36 state` header, then `key : value` lines. No verbatim `show interfaces ib
status` capture is public; the table parsed here has the column set of the reference notes
(Interface, Description, Speed, Current line rate, Logical port state, Physical port state).
The parser therefore reads a row from both ends instead of trusting column offsets, so a long
description or a firmware that pads columns differently still parses. Capture real output from
a switch and add it as a fixture before relying on anything beyond port, state and phys_state.

Port names: `IB1/17` on 1U systems, `IB1/1/2` for a split port (x/y -> x/y/z), `IB1/3/1` on
Quantum-2 (asic/cage/port) and up to four levels on modular or split Quantum-2 ports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from auditor.errors import ParseError
from auditor.models import clip
from auditor.parse._common import DESCRIPTION_MAX, split_lines

_STATUS_KIND = "onyx-ib-status"
_XCVR_KIND = "onyx-transceiver"

_PORT = r"\d{1,2}(?:/\d{1,3}){1,3}"
_NA = "N/A"

# The Speed column is "<generation> - <width> <lane rate> Gbps" ("HDR - 4X 50.0 Gbps") or N/A on
# a port that is not up; "Current line rate" is the aggregate ("200.0 Gbps") or N/A.
_ROW_RE = re.compile(
    r"^(?P<port>IB" + _PORT + r")\s+(?P<desc>.*?)\s+"
    r"(?P<speed>N/A|(?P<gen>[A-Z][A-Z0-9]*) - (?P<width>\d{1,2}X) \d+(?:\.\d+)? Gbps)\s+"
    r"(?P<rate>N/A|\d+(?:\.\d+)? Gbps)\s+"
    r"(?P<state>[A-Za-z]+)\s+(?P<phys>[A-Za-z]+)$",
    re.ASCII,
)
_HEADER_RE = re.compile(r"^Interface\s+.*\bstate\b", re.ASCII | re.IGNORECASE)
_RULE_RE = re.compile(r"^[-\s]+$")

# Documented header: "Slot 1 port 36 state". Onyx prints "Port 1/36 state" for Ethernet
# transceivers (same CLI family); accepted here too because the split-port (1/1/2) form of the
# IB header is not documented anywhere public.
_SLOT_HEADER_RE = re.compile(r"^Slot (\d{1,2}) port (\d{1,3}) state$", re.ASCII)
_PORT_HEADER_RE = re.compile(r"^Port (" + _PORT + r") state$", re.ASCII)
_FIELD_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 /()_.-]*?)\s*:\s*(?P<value>.*)$", re.ASCII)
# "Cable is not present" is what Onyx prints for an empty Ethernet cage; assumed for IB.
_ABSENT_RE = re.compile(r"^(?:cable|module|transceiver) is not present\.?$", re.IGNORECASE)

_FIELDS: dict[str, str] = {
    "identifier": "identifier",
    "cable/module type": "cable_type",
    "infiniband speeds": "speeds",
    "vendor": "vendor",
    "cable length": "length",
    "supported cable length": "length",  # wording on some Onyx releases (Ethernet side)
    "part number": "part_number",
    "revision": "revision",
    "serial number": "serial_number",
}


@dataclass(frozen=True, slots=True)
class IbInterface:
    """One row of `show interfaces ib status`; values as printed, N/A as None."""

    port: str  # "IB1/17", "IB1/1/2"
    state: str  # "Logical port state": Active, Down, Initialize, Armed
    phys_state: str  # "Physical port state": LinkUp, Polling, Disabled, ...
    description: str | None = None
    speed: str | None = None  # IBTA generation from the Speed column: "HDR", "FDR10"
    width: str | None = None  # "4X"; a split port runs "2X"
    line_rate: str | None = None  # "200.0 Gbps"


@dataclass(frozen=True, slots=True)
class Transceiver:
    """One port's module EEPROM data from `show interfaces ib <port> transceiver`."""

    port: str  # "IB1/36"
    present: bool
    identifier: str | None = None  # connector: QSFP+, QSFP56, OSFP
    cable_type: str | None = None  # "cable/module type": Passive copper ..., Optical module ...
    speeds: str | None = None  # "infiniband speeds" as printed
    vendor: str | None = None
    length: str | None = None  # "2m"; Onyx rounds up to whole metres
    part_number: str | None = None
    revision: str | None = None
    serial_number: str | None = None
    other: tuple[tuple[str, str], ...] = ()  # fields this parser does not know, in order


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", _NA) else text


def parse_interfaces_ib_status(text: str) -> list[IbInterface]:
    rows: list[IbInterface] = []
    seen: set[str] = set()
    header = False
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.rstrip()
        if not line.strip() or (header and _RULE_RE.match(line)):
            continue
        if not header:
            if _HEADER_RE.match(line):
                header = True
                continue
            raise ParseError(_STATUS_KIND, line_no, raw, "expected the 'Interface ...' header")
        m = _ROW_RE.match(line)
        if m is None:
            raise ParseError(_STATUS_KIND, line_no, raw, "not an 'IB<port> ... <state> <phys>' row")
        port = m.group("port")
        if port in seen:
            raise ParseError(_STATUS_KIND, line_no, raw, f"{port} listed twice")
        seen.add(port)
        rows.append(
            IbInterface(
                port=port,
                state=m.group("state"),
                phys_state=m.group("phys"),
                description=_value(m.group("desc")),
                speed=m.group("gen"),
                width=m.group("width"),
                line_rate=_value(m.group("rate")),
            )
        )
    if not header:
        raise ParseError(_STATUS_KIND, 0, "", "empty output: no 'Interface ... state' header")
    return rows


@dataclass(slots=True)
class _Block:
    port: str
    line_no: int
    line: str
    absent: bool = False
    fields: dict[str, str | None] = field(default_factory=dict)
    other: list[tuple[str, str]] = field(default_factory=list)

    def build(self) -> Transceiver:
        if not self.fields and not self.other and not self.absent:
            raise ParseError(_XCVR_KIND, self.line_no, self.line, "port block has no fields")
        def f(key: str) -> str | None:
            # EEPROM fields are 16-byte strings; a switch that prints more is cut, not stored.
            value = self.fields.get(key)
            return clip(value, DESCRIPTION_MAX) if value is not None else None

        return Transceiver(
            port=self.port,
            present=not self.absent,
            identifier=f("identifier"),
            cable_type=f("cable_type"),
            speeds=f("speeds"),
            vendor=f("vendor"),
            length=f("length"),
            part_number=f("part_number"),
            revision=f("revision"),
            serial_number=f("serial_number"),
            other=tuple(self.other),
        )


def parse_transceivers(text: str) -> list[Transceiver]:
    """Accepts one block or several (the collector may join per-port outputs)."""
    result: list[Transceiver] = []
    seen: set[str] = set()
    block: _Block | None = None
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        m = _SLOT_HEADER_RE.match(line) or _PORT_HEADER_RE.match(line)
        if m is not None:
            port = "IB" + ("/".join(m.groups()) if m.re is _SLOT_HEADER_RE else m.group(1))
            if port in seen:
                raise ParseError(_XCVR_KIND, line_no, raw, f"{port} listed twice")
            seen.add(port)
            if block is not None:
                result.append(block.build())
            block = _Block(port, line_no, raw)
            continue
        if block is None:
            raise ParseError(_XCVR_KIND, line_no, raw, "expected a 'Slot N port M state' header")
        if _ABSENT_RE.match(line):
            if block.fields or block.other:
                raise ParseError(_XCVR_KIND, line_no, raw, "'not present' after module fields")
            block.absent = True
            continue
        f = _FIELD_RE.match(line)
        if f is None:
            raise ParseError(_XCVR_KIND, line_no, raw, "not a 'key : value' line")
        if block.absent:
            raise ParseError(_XCVR_KIND, line_no, raw, "module field on a port with no module")
        key = " ".join(f.group("key").lower().split())
        attr = _FIELDS.get(key)
        if attr is None:
            if any(k == key for k, _ in block.other):
                raise ParseError(_XCVR_KIND, line_no, raw, f"field {key!r} repeated")
            block.other.append((key, f.group("value").strip()))
        elif attr in block.fields:
            raise ParseError(_XCVR_KIND, line_no, raw, f"field {key!r} repeated")
        else:
            block.fields[attr] = _value(f.group("value"))
    if block is None:
        raise ParseError(_XCVR_KIND, 0, "", "empty output: no 'Slot N port M state' header")
    result.append(block.build())
    return result
