"""Parse `ibstat` output (infiniband-diags): one HcaPort per `Port N:` of every `CA '<name>'`.

The format is the one `ca_dump()`/`port_dump()` print in rdma-core's infiniband-diags/ibstat.c
(read at rdma-core master; the rdma-core 44 ibsim capture matches it): a `CA '<name>'` header,
tab-indented `CA type`, `Number of ports`, `Firmware version`, `Hardware version`, `Node GUID`,
`System image GUID`, then per port a `Port N:` line and double-tab-indented `State`,
`Physical state`, `Rate`, `Base lid`, `LMC`, `SM lid`, `Capability mask`, `Port GUID`,
`Link layer`. Lines are matched by their key, not their indentation, so output whose tabs
became spaces (pasted into a ticket) still parses.

Normalisation, so hosts compare with iblinkinfo/sysfs data: state `Initializing` becomes
`Initialize` (the auditor.models vocabulary), link layer `IB` (what ibsim's umad2sim reports)
becomes `InfiniBand` (what the kernel's sysfs link_layer reports). `Rate` is the aggregate Gb/s
libibumad reads from sysfs with strtoul, so ibstat prints `2.5` for 1X SDR and `40 (FDR10)` for
4X FDR10 (the FDR10 mark is dropped: `rate` is 40 either way). A port that is not up shows a
placeholder rate (10, i.e. 4X SDR, is common on mlx5) and LID (0 or 65535 before an SM assigned
one); both are kept as printed.

Empty output is valid and gives []: ibstat prints nothing and exits 0 when the host has an
/sys/class/infiniband with no devices in it. Rejected on purpose: `ibstat -p` (port GUIDs only),
`ibstat -l` (names only) and the one-port form `ibstat mlx5_0 1`, whose `CA: 'mlx5_0'` header
has no Node GUID; the collector runs plain `ibstat`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.errors import ParseError
from auditor.parse._common import GUID_HEX, norm_guid, split_lines

_KIND = "ibstat"

# node_type_str[] in ibstat.c; only channel adapters are host ports.
_HEADER_RE = re.compile(
    r"^(?P<type>CA|Switch|Router|iWARP RNIC|\?\?\?)(?P<colon>:?) '(?P<name>[^']*)'$"
)
_PORT_RE = re.compile(r"^Port (?P<port>\d{1,3}):$", re.ASCII)
_FIELD_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?):(?: (?P<value>.*))?$")
_GUID_RE = re.compile(r"^0x(" + GUID_HEX + r")$", re.ASCII)
_INT_RE = re.compile(r"^\d{1,10}$", re.ASCII)
# "%d", "2.5" (1X SDR) or "%d (FDR10)".
_RATE_RE = re.compile(r"^(?P<rate>\d{1,5}(?:\.\d{1,3})?)(?P<fdr10> \(FDR10\))?$", re.ASCII)
_CAPMASK_RE = re.compile(r"^0x[0-9a-fA-F]{1,8}$", re.ASCII)

_CA_KEYS = frozenset(
    {
        "CA type",
        "Number of ports",
        "Firmware version",
        "Hardware version",
        "Node GUID",
        "System image GUID",
    }
)
_PORT_KEYS = frozenset(
    {
        "State",
        "Physical state",
        "Rate",
        "Base lid",
        "LMC",
        "SM lid",
        "Capability mask",
        "Port GUID",
        "Link layer",
    }
)
_REQUIRED_PORT_KEYS = ("State", "Physical state", "Rate", "Base lid", "Port GUID", "Link layer")

# port_state_str[] ("???" for values > 4), normalised to the auditor.models vocabulary.
_STATES = {
    "Down": "Down",
    "Initializing": "Initialize",
    "Armed": "Armed",
    "Active": "Active",
    "???": "???",
}
# port_phy_state_str[] plus "???" for values > 7.
_PHYS_STATES = frozenset(
    {
        "No state change",
        "Sleep",
        "Polling",
        "Disabled",
        "PortConfigurationTraining",
        "LinkUp",
        "LinkErrorRecovery",
        "PhyTest",
        "???",
    }
)
# sysfs link_layer_show() prints InfiniBand/Ethernet/Unknown; ibsim's umad2sim prints "IB".
_LINK_LAYERS = {
    "InfiniBand": "InfiniBand",
    "IB": "InfiniBand",
    "Ethernet": "Ethernet",
    "Unknown": "Unknown",
}


@dataclass(frozen=True, slots=True)
class HcaPort:
    """One HCA port as ibstat saw it. `rate` is the aggregate link rate in Gb/s."""

    device: str  # RDMA device name: mlx5_0, or a udev-renamed ibp65s0
    port: int
    state: str  # Down, Initialize, Armed, Active
    phys_state: str  # LinkUp, Polling, Disabled, ...
    rate: float
    lid: int  # Base lid
    node_guid: str
    port_guid: str
    link_layer: str  # InfiniBand or Ethernet (RoCE)
    sm_lid: int | None = None
    ca_type: str | None = None  # MT4123 (ConnectX-6), "simulator" under ibsim
    system_guid: str | None = None


@dataclass(slots=True)
class _Ca:
    name: str
    line_no: int
    line: str
    fields: dict[str, str]
    ports: list[tuple[int, int, str, dict[str, tuple[int, str, str]]]]  # port, line, text, fields


def _guid(value: str, line_no: int, line: str) -> str:
    m = _GUID_RE.match(value)
    if m is None:
        raise ParseError(_KIND, line_no, line, "expected 0x<GUID>")
    return norm_guid(m.group(1))


def _int(value: str, line_no: int, line: str) -> int:
    if _INT_RE.match(value) is None:
        raise ParseError(_KIND, line_no, line, "expected a decimal number")
    return int(value)


def _check_ca_field(key: str, value: str, line_no: int, line: str) -> None:
    if key in ("Node GUID", "System image GUID"):
        _guid(value, line_no, line)
    elif key == "Number of ports":
        _int(value, line_no, line)


def _port_value(key: str, value: str, line_no: int, line: str) -> str:
    """Checks one port field; returns the value normalised."""
    if key == "State":
        if value not in _STATES:
            raise ParseError(_KIND, line_no, line, "unknown port state")
        return _STATES[value]
    if key == "Physical state":
        if value not in _PHYS_STATES:
            raise ParseError(_KIND, line_no, line, "unknown physical state")
        return value
    if key == "Rate":
        m = _RATE_RE.match(value)
        if m is None:
            raise ParseError(_KIND, line_no, line, "expected a rate in Gb/s")
        return m.group("rate")
    if key in ("Base lid", "LMC", "SM lid"):
        return str(_int(value, line_no, line))
    if key == "Port GUID":
        return _guid(value, line_no, line)
    if key == "Capability mask":
        if _CAPMASK_RE.match(value) is None:
            raise ParseError(_KIND, line_no, line, "expected a 0x<hex> capability mask")
        return value
    if value not in _LINK_LAYERS:  # Link layer
        raise ParseError(_KIND, line_no, line, "unknown link layer")
    return _LINK_LAYERS[value]


def _finish(ca: _Ca, out: list[HcaPort]) -> None:
    fields = ca.fields
    if "Node GUID" not in fields:
        raise ParseError(_KIND, ca.line_no, ca.line, "CA block has no Node GUID")
    node_guid = norm_guid(fields["Node GUID"][2:])
    system = fields.get("System image GUID")
    declared = fields.get("Number of ports")
    # A CA lists ports 1..N (ports[0] is NULL for CAs in libibumad), so fewer blocks than
    # declared means the capture was cut.
    if declared is not None and int(declared) != len(ca.ports):
        raise ParseError(
            _KIND,
            ca.line_no,
            ca.line,
            f"declares {int(declared)} ports but has {len(ca.ports)} Port blocks (truncated?)",
        )
    for port, line_no, line, pf in ca.ports:
        missing = [k for k in _REQUIRED_PORT_KEYS if k not in pf]
        if missing:
            raise ParseError(_KIND, line_no, line, "port block has no " + ", ".join(missing))
        out.append(
            HcaPort(
                device=ca.name,
                port=port,
                state=pf["State"][2],
                phys_state=pf["Physical state"][2],
                rate=float(pf["Rate"][2]),
                lid=int(pf["Base lid"][2]),
                node_guid=node_guid,
                port_guid=pf["Port GUID"][2],
                link_layer=pf["Link layer"][2],
                sm_lid=int(pf["SM lid"][2]) if "SM lid" in pf else None,
                ca_type=fields.get("CA type"),
                system_guid=norm_guid(system[2:]) if system else None,
            )
        )


def parse_ibstat(text: str) -> list[HcaPort]:
    """Every port of every CA in `ibstat` output, in the order printed."""
    out: list[HcaPort] = []
    ca: _Ca | None = None
    port_fields: dict[str, tuple[int, str, str]] | None = None

    for line_no, line in enumerate(split_lines(text), 1):
        stripped = line.strip()
        if not stripped:
            continue
        m = _HEADER_RE.match(stripped)
        if m is not None:
            if m.group("colon"):
                raise ParseError(
                    _KIND,
                    line_no,
                    line,
                    "one-port form (`ibstat CA PORT`) has no Node GUID; run plain ibstat",
                )
            if m.group("type") != "CA":
                raise ParseError(_KIND, line_no, line, "not a channel adapter")
            if ca is not None:
                _finish(ca, out)
            ca = _Ca(m.group("name"), line_no, line, {}, [])
            port_fields = None
            continue
        if ca is None:
            raise ParseError(_KIND, line_no, line, "expected a CA '<name>' header")
        pm = _PORT_RE.match(stripped)
        if pm is not None:
            port = int(pm.group("port"))
            if any(p[0] == port for p in ca.ports):
                raise ParseError(_KIND, line_no, line, "port repeated in one CA block")
            port_fields = {}
            ca.ports.append((port, line_no, line, port_fields))
            continue
        fm = _FIELD_RE.match(stripped)
        if fm is None:
            raise ParseError(_KIND, line_no, line, "expected 'Key: value'")
        key, value = fm.group("key"), (fm.group("value") or "").strip()
        if key in _PORT_KEYS:
            if port_fields is None:
                raise ParseError(_KIND, line_no, line, "port field before any 'Port N:' line")
            if key in port_fields:
                raise ParseError(_KIND, line_no, line, "field repeated in one port block")
            port_fields[key] = (line_no, line, _port_value(key, value, line_no, line))
        elif key in _CA_KEYS:
            if port_fields is not None:
                raise ParseError(_KIND, line_no, line, "CA field after the port blocks")
            if key in ca.fields:
                raise ParseError(_KIND, line_no, line, "field repeated in one CA block")
            _check_ca_field(key, value, line_no, line)
            ca.fields[key] = value
        else:
            raise ParseError(_KIND, line_no, line, f"unknown ibstat field {key!r}")
    if ca is not None:
        _finish(ca, out)
    return out
