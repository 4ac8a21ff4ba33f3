"""Parse a switch's per-port transceiver diagnostics, as NVIDIA's switch CLI prints them.

Provenance, and what is assumed: no output of Onyx's own `show interfaces ib <port> transceiver
diagnostics` is public (not in the Onyx/MLNX-OS manuals' text, GitHub issues or forums that
could be searched). NVIDIA's current switch CLI, NVUE (NVOS on Quantum InfiniBand switches,
Cumulus Linux on Spectrum), prints the same diagnostics in two layouts, both documented with
real output:

* `nv show interface <if> transceiver`: flat `name : value` lines, per channel
  `ch-1-rx-power : 0.8625 mW / -0.64 dBm`, `ch-1-tx-power`, `ch-1-tx-bias-current : 6.750 mA`,
  module `temperature : 42.56 degrees C / 108.61 degrees F`, `voltage : 3.2888 V`.
* `nv show platform transceiver <if>`: the same as a tree with each quantity's thresholds:

      temperature:
        temperature           : 42.56 C
        high-alarm-threshold  : 80.00 C
      channel:
        channel-1:
          rx-power:
              power                 : 0.8625 mW / -0.64 dBm
              low-alarm-threshold   : -13.31 dBm

This parser reads both. The Onyx collector (auditor/collect/onyx.py) asks Onyx for
`show interfaces ib <port> transceiver diagnostics`; if a firmware answers in a layout this
parser does not know, that port's optics read is `parse_failed` (a note in the switch's device
status), nothing is stored for it, and the rest of the sweep is unaffected. Capture a real Onyx
answer and add it as a fixture before relying on that path.

Keys: vendor-name, vendor-pn, vendor-sn, vendor-rev (stored as firmware: NVUE shows no module
firmware here), cable-type (passive copper has no monitors), status (`unplugged`: no module, no
reading). Power thresholds are printed in dBm only: `-inf` or -40 dBm is "none", 0 dBm is 1 mW,
a real limit. NVUE repeats the module's thresholds under every channel; the first is kept.
Lines NVUE adds that are not readings (`alarm : Off`, `temperature-setpoint`, lengths, dates)
are skipped.

A capture may hold several ports, each after its command line (`cumulus@switch:~$ nv show
interface swp1 transceiver`, `leaf01 [standalone: master] # show interfaces ib 1/17 transceiver
diagnostics`); Onyx ports are named `IB1/17`, as `show interfaces ib status` names them.
"""

from __future__ import annotations

import re
from datetime import datetime

from auditor.errors import ParseError
from auditor.models import OpticsReading
from auditor.parse._optics import (
    NO_LIGHT_DBM,
    Block,
    Module,
    blocks,
    command_re,
    lane_number,
    match_command,
    mw_to_dbm,
    number,
    zero_is_none,
)

KIND = "onyx-optics"

_PORT_NAME = r"[\w./:-]+"
_COMMAND = command_re(
    r"(?:nv show interface (?P<nv_if>" + _PORT_NAME + r") transceiver"
    r"|nv show platform transceiver (?P<nv_pt>" + _PORT_NAME + r")"
    r"|show interfaces ib (?P<ib>\d{1,2}(?:/\d{1,3}){1,3}) transceiver diagnostics)")
_FIELD = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][\w-]*)\s*:\s?(?P<value>.*?)\s*$")
_FLAT_CHANNEL = re.compile(r"^ch-(?P<lane>\d{1,3})-(?P<what>rx-power|tx-power|tx-bias-current)$")
_TREE_CHANNEL = re.compile(r"^channel-(?P<lane>\d{1,3})$")
_QUANTITY = {"rx-power": "rx_power_dbm", "tx-power": "tx_power_dbm",
             "tx-bias-current": "tx_bias_ma", "temperature": "temperature_c",
             "voltage": "vcc_v"}
_LIMIT = re.compile(r"^(?P<side>high|low)-(?P<level>alarm|warning)-threshold$")
_NUMBER = r"-?\d+(?:\.\d+)?"
_POWER = re.compile(r"^(?:(?P<mw>\d+(?:\.\d+)?) mW / )?(?P<dbm>-?inf|" + _NUMBER + r") dBm$")
_MA = re.compile(r"^(?P<v>" + _NUMBER + r") mA$")
_CELSIUS = re.compile(r"^(?P<v>" + _NUMBER + r") (?:degrees )?C(?: / " + _NUMBER
                      + r" degrees F)?$")
_VOLTS = re.compile(r"^(?P<v>" + _NUMBER + r") V$")
_UNITS = {"tx_bias_ma": _MA, "temperature_c": _CELSIUS, "vcc_v": _VOLTS}
_KNOWN = frozenset({"identifier", "vendor-name", "vendor-pn", "vendor-sn", "cable-type",
                    "temperature", "status"})


def command_port(line: str) -> str | None:
    """The port a diagnostics command line names (`swp1`, `IB1/17`), else None."""
    m = match_command(_COMMAND, line)
    if m is None:
        return None
    if m.group("ib"):
        return "IB" + m.group("ib")
    return m.group("nv_if") or m.group("nv_pt")


def _power(value: str, line_no: int, line: str) -> float | None:
    """dBm of a printed power; None for a zero-power threshold (`-inf dBm`)."""
    m = _POWER.match(value)
    if m is None:
        raise ParseError(KIND, line_no, line, f"not a power in mW / dBm: {value[:60]!r}")
    if m.group("mw") is not None:
        return mw_to_dbm(number(m.group("mw"), KIND, line_no, line))
    if m.group("dbm").endswith("inf"):
        return None
    return number(m.group("dbm"), KIND, line_no, line)


def _measure(quantity: str, value: str, line_no: int, line: str) -> float | None:
    if quantity.endswith("_dbm"):
        return _power(value, line_no, line)
    m = _UNITS[quantity].match(value)
    if m is None:
        raise ParseError(KIND, line_no, line, f"not a {quantity} value: {value[:60]!r}")
    return number(m.group("v"), KIND, line_no, line)


def _limit(quantity: str, value: float | None) -> float | None:
    if quantity.endswith("_dbm"):
        return None if value is None or value <= NO_LIGHT_DBM else value
    return zero_is_none(value)


def _read(block: Block) -> Module | None:
    module = Module(block.port, block.line_no, block.line)
    revision = None
    path: list[tuple[int, str]] = []  # (indent, section) of the tree layout
    for line_no, raw in block.lines:
        if not raw.strip():
            continue
        f = _FIELD.match(raw)
        if f is None:
            raise ParseError(KIND, line_no, raw, "not a 'name : value' line")
        indent, key, value = len(f.group("indent").expandtabs()), f.group("key"), f.group("value")
        while path and path[-1][0] >= indent:
            path.pop()
        if not value:
            path.append((indent, key))
            continue
        sections = [name for _, name in path]
        if not sections:
            module.seen = module.seen or key in _KNOWN
            _top(module, key, value, line_no, raw)
            if key == "vendor-rev":
                revision = module.text(value)
            continue
        _tree(module, sections, key, value, line_no, raw)
    if not module.seen:
        first = next((n, line) for n, line in block.lines if line.strip())
        raise ParseError(KIND, first[0], first[1], "not transceiver diagnostics (no identifier, "
                         "vendor, cable type or temperature line)")
    module.firmware = revision
    return None if module.absent else module


def _top(module: Module, key: str, value: str, line_no: int, line: str) -> None:
    if key == "vendor-name":
        module.vendor = module.text(value)
    elif key == "vendor-pn":
        module.part_number = module.text(value)
    elif key == "vendor-sn":
        module.serial_number = module.text(value)
    elif key == "cable-type":
        low = value.lower()
        module.no_monitors = "copper" in low and "passive" in low
    elif key == "status":
        module.absent = "unplug" in value.lower() or "not present" in value.lower()
    elif key in ("temperature", "voltage"):
        measured = _measure(_QUANTITY[key], value, line_no, line)
        if key == "temperature":
            module.temperature_c = measured
        else:
            module.vcc_v = measured
    elif m := _FLAT_CHANNEL.match(key):
        quantity = _QUANTITY[m.group("what")]
        measured = _measure(quantity, value, line_no, line)
        module.set_lane(lane_number(m.group("lane"), KIND, line_no, line), quantity,
                        NO_LIGHT_DBM if measured is None else measured)


def _tree(module: Module, sections: list[str], key: str, value: str, line_no: int,
          line: str) -> None:
    if sections in (["temperature"], ["voltage"]):
        quantity = _QUANTITY[sections[0]]
        if key == sections[0]:
            _top(module, key, value, line_no, line)
        elif m := _LIMIT.match(key):
            module.set_limit(quantity, f"{m.group('side')}_{m.group('level')}",
                             _limit(quantity, _measure(quantity, value, line_no, line)))
        return
    if len(sections) != 3 or sections[0] != "channel" or sections[2] not in _QUANTITY:
        return
    channel = _TREE_CHANNEL.match(sections[1])
    if channel is None:
        return
    quantity = _QUANTITY[sections[2]]
    if key in ("power", "current"):
        measured = _measure(quantity, value, line_no, line)
        module.set_lane(lane_number(channel.group("lane"), KIND, line_no, line), quantity,
                        NO_LIGHT_DBM if measured is None else measured)
    elif m := _LIMIT.match(key):
        module.set_limit(quantity, f"{m.group('side')}_{m.group('level')}",
                         _limit(quantity, _measure(quantity, value, line_no, line)))


def parse_onyx_optics(text_in: str, device: str, read_at: datetime,
                      port: str | None = None) -> list[OpticsReading]:
    """One reading per port with a module in the capture (a port whose status says unplugged
    gives none). `device` is the switch, `port` the port when the capture has no command line."""
    found = []
    parts = list(blocks(text_in, command_port, port, KIND))
    if not parts:
        raise ParseError(KIND, 0, "", "empty output: no port")
    for block in parts:
        module = _read(block)
        if module is not None:
            found.append(module.reading(device, read_at, KIND))
    return found
