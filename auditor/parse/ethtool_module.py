"""Parse `ethtool -m <if>`: a module's EEPROM and diagnostics (DDM/DOM) as ethtool prints them.

ethtool prints one `<name> : <value>` line per field ("\\t%-41s : %s"); indentation varies with
who captured it (a tab, 8 spaces from a mail client, none). The layouts read here, by the
module's memory map:

* SFF-8636 (QSFP+, QSFP28): `Laser tx bias current (Channel 1)`, `Transmit avg optical power
  (Channel 1)`, `Rcvr signal avg optical power(Channel 1)` (no space before the parenthesis up
  to ethtool 6.x, one since), `Receiver signal OMA(Channel 1)` for modules that report OMA;
  Cumulus Linux's ethtool prints `Laser bias current (Channel 1)`.
* CMIS (QSFP-DD, OSFP): the same per-channel names for up to 8 channels a bank, and `Active
  firmware version`.
* SFF-8472 (SFP): one lane without a channel number: `Laser bias current`, `Laser output power`,
  `Receiver signal average optical power`.
* Thresholds, all layouts: `Laser bias current high alarm threshold`, `Laser output power ...`,
  `Module temperature ...`, `Module voltage ...`, `Laser rx power ...`.

Powers are printed `0.9720 mW / -0.12 dBm`; the dBm stored is computed from the mW (ethtool
rounds its dBm to 0.01, and prints `-inf` for 0 mW). The alarm and warning flag lines (`...
(Chan 1) : Off`) are current states, not readings, and are skipped. A cable whose transmitter
technology is copper (`0xa0 (Copper cable unequalized)`) has no lasers: whatever its lane bytes
hold is not a reading (a Cumulus capture of an Edgecore DAC shows 33 mA "bias"). Firmware is the
CMIS active firmware version, else the vendor revision.

The capture may hold several modules, each after its command line (`# ethtool -m eth2`); a
capture without one is the port the caller names. See auditor/parse/_optics.py for the rules
shared with the other diagnostics formats.
"""

from __future__ import annotations

import re
from datetime import datetime

from auditor.errors import ParseError
from auditor.models import OpticsReading
from auditor.parse._optics import (
    Block,
    Module,
    blocks,
    command_re,
    lane_number,
    match_command,
    mw_to_dbm,
    number,
    text,
    zero_is_none,
)

KIND = "ethtool-module"

_COMMAND = command_re(r"ethtool\s+(?:-m|--module-info|--dump-module-eeprom)\s+(?P<port>[\w.:@-]+)")
_FIELD = re.compile(r"^\s*(?P<key>[^:]*?)\s*:\s?(?P<value>.*)$")
_CHANNEL = r"(?:\s?\(Channel (?P<lane>\d{1,3})\))?"
_BIAS = re.compile(r"^Laser (?:tx )?bias current" + _CHANNEL + "$")
_TX = re.compile(r"^(?:Transmit avg optical power|Laser output power)" + _CHANNEL + "$")
_RX = re.compile(r"^(?:Rcvr signal avg optical power|Receiver signal average optical power"
                 r"|Receiver signal OMA)" + _CHANNEL + "$")
_LIMIT = re.compile(r"^(?P<what>Laser bias current|Laser output power|Module temperature"
                    r"|Module voltage|Laser rx power) (?P<side>high|low) (?P<level>alarm|warning)"
                    r" threshold$")
_LIMIT_QUANTITY = {"Laser bias current": "tx_bias_ma", "Laser output power": "tx_power_dbm",
                   "Module temperature": "temperature_c", "Module voltage": "vcc_v",
                   "Laser rx power": "rx_power_dbm"}
_MA = re.compile(r"^(?P<v>-?\d+(?:\.\d+)?) mA$")
_POWER = re.compile(r"^(?P<mw>\d+(?:\.\d+)?) mW / (?:-?inf|-?\d+(?:\.\d+)?) dBm$")
_CELSIUS = re.compile(r"^(?P<v>-?\d+(?:\.\d+)?) degrees C / -?\d+(?:\.\d+)? degrees F$")
_VOLTS = re.compile(r"^(?P<v>-?\d+(?:\.\d+)?) V$")
# Keys that identify ethtool -m output at all (the first field ethtool prints is Identifier).
_KNOWN = frozenset({"Identifier", "Vendor name", "Vendor PN", "Vendor SN", "Module temperature"})


def command_port(line: str) -> str | None:
    """The interface an `ethtool -m <if>` command line names, else None."""
    m = match_command(_COMMAND, line)
    return m.group("port") if m else None


def _value(pattern: re.Pattern[str], value: str, group: str, line_no: int, line: str) -> float:
    m = pattern.match(value.strip())
    if m is None:
        raise ParseError(KIND, line_no, line, f"value not in ethtool's format: {value[:60]!r}")
    return number(m.group(group), KIND, line_no, line)


def _power(value: str, line_no: int, line: str) -> float:
    return mw_to_dbm(_value(_POWER, value, "mw", line_no, line))


def _lane(m: re.Match[str], line_no: int, line: str) -> int:
    return lane_number(m.group("lane"), KIND, line_no, line) if m.group("lane") else 1


def _read(block: Block) -> Module:
    module = Module(block.port, block.line_no, block.line)
    revision = firmware = None
    for line_no, raw in block.lines:
        if not raw.strip():
            continue
        f = _FIELD.match(raw)
        if f is None:
            raise ParseError(KIND, line_no, raw, "not a 'name : value' line")
        key, value = f.group("key"), f.group("value")
        if key in _KNOWN:
            module.seen = True
        if key == "Vendor name":
            module.vendor = module.text(value)
        elif key == "Vendor PN":
            module.part_number = module.text(value)
        elif key == "Vendor SN":
            module.serial_number = module.text(value)
        elif key == "Vendor rev":
            revision = value
        elif key == "Active firmware version":
            firmware = value
        elif key == "Transmitter technology":
            module.no_monitors = "copper" in value.lower()
        elif key == "Module temperature":
            module.temperature_c = _value(_CELSIUS, value, "v", line_no, raw)
        elif key == "Module voltage":
            module.vcc_v = _value(_VOLTS, value, "v", line_no, raw)
        elif m := _BIAS.match(key):
            module.set_lane(_lane(m, line_no, raw), "tx_bias_ma",
                            _value(_MA, value, "v", line_no, raw))
        elif m := _TX.match(key):
            module.set_lane(_lane(m, line_no, raw), "tx_power_dbm", _power(value, line_no, raw))
        elif m := _RX.match(key):
            module.set_lane(_lane(m, line_no, raw), "rx_power_dbm", _power(value, line_no, raw))
        elif m := _LIMIT.match(key):
            quantity = _LIMIT_QUANTITY[m.group("what")]
            if quantity in ("tx_power_dbm", "rx_power_dbm"):
                mw = _value(_POWER, value, "mw", line_no, raw)
                limit: float | None = mw_to_dbm(mw) if mw > 0 else None
            else:
                pattern = {"tx_bias_ma": _MA, "temperature_c": _CELSIUS, "vcc_v": _VOLTS}[quantity]
                limit = zero_is_none(_value(pattern, value, "v", line_no, raw))
            module.set_limit(quantity, f"{m.group('side')}_{m.group('level')}", limit)
    module.firmware = module.text(firmware if text(firmware) is not None else revision)
    if not module.seen:
        first = next((n, line) for n, line in block.lines if line.strip())
        raise ParseError(KIND, first[0], first[1], "not ethtool -m output (no Identifier, "
                         "vendor or module temperature line)")
    return module


def parse_ethtool_module(text_in: str, device: str, read_at: datetime,
                         port: str | None = None) -> list[OpticsReading]:
    """One reading per module in the capture. `device` is the host or switch it was read on,
    `port` the interface when the capture has no `ethtool -m <if>` line."""
    found = [_read(b).reading(device, read_at, KIND)
             for b in blocks(text_in, command_port, port, KIND)]
    if not found:
        raise ParseError(KIND, 0, "", "empty output: no module")
    return found
