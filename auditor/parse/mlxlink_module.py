"""Parse `mlxlink -d <dev> -m` (`--show_module`): the "Module Info" section of NVIDIA's link tool.

mlxlink (MFT, mstflint) prints titled sections, each a title line, a line of dashes and `<name>
: <value>` lines ("%-35s: %s"); `-m` adds "Module Info" to the default "Operational Info",
"Supported Info", "Troubleshooting Info" and "Tool Information", `-c` adds "Physical Counters and
BER Info". Only "Module Info" is read: "Tool Information"'s `Firmware Version` is the adapter's,
not the module's.

The monitors are printed as mstflint's prepareDDMSection() builds them: a value or one value per
lane joined by commas, then `[low..high]`, which are the module's alarm thresholds (the PDDR
register's `*_high_th`/`*_low_th`: "Alarm high ... threshold"), e.g.

    Temperature [C]                    : 54 [-5..75]
    Voltage [mV]                       : 3261.2 [2970..3630]
    Bias Current [mA]                  : 8.380,8.380,8.380,8.380 [2..15]
    Rx Power Current [dBm]             : 1.886,1.989,2.281,1.976 [-10.41..6]

`N/A` when the module has no diagnostics. Powers are already dBm; mlxlink prints -40 for no
light (its getPower() starts from -40). A threshold pair [0..0] or a power limit of -40 is "no
threshold". A module reporting 0 V or `N/A`, or whose `Cable Type` is passive copper, has no
monitors (a passive NDR DAC prints `0,0,0,0 [0..0]`). Firmware is the module's `FW Version`,
else `Rev`.

A capture may hold several devices, each after its command line (`sudo mlxlink -d
/dev/mst/mt41692_pciconf0 -p 1 -m -c`); the port is named `<device>/<port>`, the device being
the last path element of -d (`mlx5_0/1`, `mt41692_pciconf0/1`), port 1 when -p is not given.
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
    number,
    text,
    zero_is_none,
)

KIND = "mlxlink-module"

_COMMAND = command_re(r"mlxlink(?P<args>(?:\s+\S+){1,12})")
_DEVICE = re.compile(r"(?:-d|--device)\s+(?P<dev>\S+)")
_PORT = re.compile(r"(?:-p|--port)\s+(?P<port>\d{1,3})")
_SHOW_MODULE = re.compile(r"(?:^|\s)(?:-m|--show_module)(?:\s|$)")
_RULE = re.compile(r"^-{3,}$")
_FIELD = re.compile(r"^(?P<key>[^:]*?)\s*:\s?(?P<value>.*)$")
_MONITOR = re.compile(r"^(?P<values>N/A|-?\d+(?:\.\d+)?(?:,(?:-?\d+(?:\.\d+)?|N/A))*)"
                      r"(?:\s*\[(?P<lo>-?\d+(?:\.\d+)?)\.\.(?P<hi>-?\d+(?:\.\d+)?)\])?$")
_MONITORS = {"Temperature [C]": "temperature_c", "Voltage [mV]": "vcc_v",
             "Bias Current [mA]": "tx_bias_ma", "Rx Power Current [dBm]": "rx_power_dbm",
             "Tx Power Current [dBm]": "tx_power_dbm"}


def command_port(line: str) -> str | None:
    """`<device>/<port>` of an `mlxlink -d <dev> [-p N] -m` command line, else None."""
    m = match_command(_COMMAND, line)
    if m is None:
        return None
    args = m.group("args")
    device = _DEVICE.search(args)
    if device is None or _SHOW_MODULE.search(args) is None:
        return None
    port = _PORT.search(args)
    name = device.group("dev").rstrip("/").rsplit("/", 1)[-1]
    return f"{name}/{int(port.group('port')) if port else 1}"


def _monitor(module: Module, quantity: str, value: str, line_no: int, line: str) -> None:
    m = _MONITOR.match(value.strip())
    if m is None:
        raise ParseError(KIND, line_no, line, f"not a value [low..high]: {value[:60]!r}")
    scale = 1000.0 if quantity == "vcc_v" else 1.0  # mlxlink prints mV
    values = [None if v == "N/A" else round(number(v, KIND, line_no, line) / scale, 6)
              for v in m.group("values").split(",")]
    if m.group("lo") is not None:
        lo = round(number(m.group("lo"), KIND, line_no, line) / scale, 6)
        hi = round(number(m.group("hi"), KIND, line_no, line) / scale, 6)
        unset = lo == hi == 0  # an unprogrammed pair (a passive cable's)
        for which, raw in (("low_alarm", lo), ("high_alarm", hi)):
            if quantity.endswith("_dbm"):
                # 0 dBm is 1 mW, a real limit; -40 dBm is how mlxlink prints a limit of 0 mW.
                limit = None if unset or raw <= NO_LIGHT_DBM else raw
            else:
                limit = None if unset else zero_is_none(raw)
            module.set_limit(quantity, which, limit)
    if quantity == "temperature_c":
        module.temperature_c = values[0]
    elif quantity == "vcc_v":
        module.vcc_v = values[0]
        if values[0] is None:  # N/A: DDM not supported, so nothing else is a reading
            module.no_monitors = True
    else:
        for lane, v in enumerate(values, 1):
            if v is not None:
                module.set_lane(lane_number(str(lane), KIND, line_no, line), quantity, v)


def _read(block: Block) -> Module:
    module = Module(block.port, block.line_no, block.line)
    section: str | None = None
    revision = firmware = None
    lines = block.lines
    for i, (line_no, raw) in enumerate(lines):
        line = raw.strip()
        if not line or _RULE.match(line):
            continue
        if i + 1 < len(lines) and _RULE.match(lines[i + 1][1].strip()):
            section = line
            module.seen = module.seen or section == "Module Info"
            continue
        if section != "Module Info":
            continue  # other sections, and warnings mlxlink prints between them
        f = _FIELD.match(line)
        if f is None:
            raise ParseError(KIND, line_no, raw, "not a 'name : value' line in Module Info")
        key, value = f.group("key"), f.group("value")
        if key in _MONITORS:
            _monitor(module, _MONITORS[key], value, line_no, raw)
        elif key == "Vendor Name":
            module.vendor = module.text(value)
        elif key == "Vendor Part Number":
            module.part_number = module.text(value)
        elif key == "Vendor Serial Number":
            module.serial_number = module.text(value)
        elif key == "Rev":
            revision = value
        elif key == "FW Version":
            firmware = value
        elif key == "Cable Type" and "copper" in value.lower() and "passive" in value.lower():
            module.no_monitors = True
    if not module.seen:
        first = next((n, line) for n, line in lines if line.strip())
        raise ParseError(KIND, first[0], first[1],
                         "no 'Module Info' section (was mlxlink run with -m?)")
    module.firmware = module.text(firmware if text(firmware) is not None else revision)
    return module


def parse_mlxlink_module(text_in: str, device: str, read_at: datetime,
                         port: str | None = None) -> list[OpticsReading]:
    """One reading per `mlxlink -m` output in the capture. `device` is the host it was read on,
    `port` (`mlx5_0/1`) the port when the capture has no mlxlink command line."""
    found = [_read(b).reading(device, read_at, KIND)
             for b in blocks(text_in, command_port, port, KIND)]
    if not found:
        raise ParseError(KIND, 0, "", "empty output: no Module Info")
    return found
