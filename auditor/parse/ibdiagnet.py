"""Parse what `ibdiagnet` leaves in its output folder (`/var/tmp/ibdiagnet2/` by default):
`ibdiagnet2.db_csv` (everything, as CSV tables), `ibdiagnet2.net_dump` (the topology as text)
and `ibdiagnet2.log` (the checks' findings). Pure functions; `parse_ibdiagnet_folder` takes the
folder as a mapping of file name -> text.

**db_csv layout.** Tables, each a line `START_<NAME>`, a CSV header row, data rows and a line
`END_<NAME>` (ibutils2 `ibdiag_csv_out.h` DumpStart/DumpEnd; every public reader splits on those
markers: NCAR/ops_tracking_toolkit@5a4f8ee opstt/ib_diagnostics.py:742, Mellanox/ufm_sdk_3.0@
3e96418 plugins/UFM_NDT_Plugin/ndt_file_creator.py:137). `#` lines and blank lines carry
nothing; the `# Running timestamp : 2022-08-25 17:45:38 UTC +0000` comment, when there is one,
dates the run. Tables are found by name and their columns by name, case-insensitively:
`--disable_output csv:<table>` drops tables (IBUtils2 v2.23 "Flexible Output Options"),
`--back_compat_db` and new versions change the columns, and the key columns are spelt
`NodeGUID`/`PortNumber` in PM_INFO but `NodeGuid`/`PortNum` elsewhere. A table this parser does
not know is skipped; one it reads but finds missing is named in `IbdiagnetResult.missing`.
Text outside the tables, a `START_` inside a table, an `END_` of another table, a table cut off
before its `END_` (a truncated file), a row wider than its header or a bad key value is a
ParseError naming the line: half a NODES table would make cables look gone.

Tables read (column names as ibutils2 `ibdiag_csv_records.h` and real sections in
CrackedPoly/Rapimt@b08b032 crates/rapimt_io/examples/ibdiagnet2/*.test show them):

- NODES `NodeDesc,NumPorts,NodeType,...,NodeGUID,PortGUID,...`: NodeType 1 CA, 2 switch,
  3 router (IBTA NodeInfo; ibdm `Fabric.h` IBNodeType; `SW`/`CA`/`RTR` accepted too).
- PORTS `NodeGuid,PortGuid,PortNum,...,LID,...,LinkWidthActv,...,LinkSpeedActv,...,PortPhyState,
  PortState`: PortInfo fields as numbers. Width is the IBTA bit (1 1X, 2 4X, 4 8X, 8 12X,
  16 2X); speed is ibdm's IBLinkSpeed layout, classic speed in byte 0 (1 SDR, 2 DDR, 4 QDR),
  extended in byte 1 (1 FDR, 2 EDR, 4 HDR, 8 NDR), vendor in byte 2 (1 FDR10) and extended-2
  in byte 3 (1 XDR) (ibdm `Fabric.h` IB_LINK_SPEED_*). A port running an extended speed keeps a
  classic bit set too (a real NDR port: `2052` = 8<<8 | 4): the extended one wins.
- LINKS `NodeGuid1,PortNum1,NodeGuid2,PortNum2`.
- PM_INFO: PortCounters by their IBTA names, plus the 64-bit PortCountersExtended ones named
  `<name>Ext` (`LinkDownedCounterExt`) or `<name>Extended` (`PortXmitDataExtended`). Both are
  stored under the base name ibqueryerrors and perfquery use (`LinkDownedCounter`,
  `PortXmitData`), the 64-bit value winning when the port gave one (`N/A` is no reading).
- CABLE_INFO `NodeGuid,PortGuid,PortNum,...,Vendor,...,PN,SN,Rev,...,LengthDesc,...,TypeDesc,
  ...,Temperature` (`CombinedCableInfo` in ibdiag_csv_records.h; `42C`, or `N/A`).
- PORT_HIERARCHY_INFO `NodeGUID,PortNum,...,Label,ExtendedLabel`: the front-panel label
  (ufm_sdk_3.0@3e96418 plugins/UFM_NDT_Plugin/ufm_sim_web_service/topo_diff/ndt_infra.py:78).
- `WARNINGS_<CHECK>` / `ERRORS_<CHECK>` (e.g. `WARNINGS_SYMBOL_BER_CHECK`,
  `ERRORS_LINKS_SPEED_CHECK`): every warning and error of the run (the screen and the .log show
  at most 5 of each: ibdiagnet v2.9 "warnings and errors printing policy"), columns `Scope,
  NodeGUID,PortGUID,PortNumber,EventName,Summary` (scope and event names: ibdiag_fabric_errs.h);
  the summary is the rest of the line, commas and quotes included.
- PHY_DB16: `field12/13`, `14/15`, `16/17` are mantissa/exponent pairs of the raw, effective
  and symbol BER, value = mantissa x 10^-exponent. The only source is NVIDIA's own analysis
  tool (ib_analysis `ber.py`, `Ber.calculate_ber`, NVIDIA-proprietary; a copy is in the public
  code index, its repository not resolved), which names no ibdiagnet version: read only when a
  row's pairs are plausible (exponent 0..255; real files carry 10^9 placeholders), else noted.
  The other PHY_DB tables have no field mapping we could establish: noted, not read.

**Topology conventions** (as `auditor.parse.ibnetdiscover` default form, so the same fabric
gives the same graph): nodes keyed by node GUID; a switch's LID is its port 0 LID (port 0 is not
a Port); switch ports carry the switch LID and no port GUID, CA ports their own LID and port
GUID; each link once, (a_guid, a_port) < (b_guid, b_port), width and speed from the a end's
PORTS row. Unlike ibnetdiscover every port is listed, with its state; a port that is Down has
no width or speed (IBTA C14-24.2.1: stale values), as in `auditor.parse.iblinkinfo`.

**net_dump** (`parse_ibdiagnet_net_dump`): a real one is quoted in ufm_sdk_3.0@8028db2
plugins/UFM_NDT_Plugin/ndt_file_creator.py:140-165 (IBDIAGNET 2.10.0, a Quantum fabric): per
switch a line `"<desc>", <vendor>, 0x<guid>, LID <n>`, then rows `label : IB# : Sta : PhysSta :
MTU : LWA : LSA : FEC mode : Retran : Neighbor Guid : N# : NLID : "Neighbor Description"`. LSA
is the lane rate in Gb/s as ibdm prints it (2.5 5 10 14 25 50 100 200, FDR10). Only switches
have sections: a neighbour that has none is a CA (or, in an excerpt, a switch whose description
names a model) keyed by the GUID printed (named `peer_node_guid` by ufm_sdk's reader; whether
ibdiagnet prints a CA's node or port GUID there is not confirmed by any capture we found).

**ibdiagnet2.log** (`parse_ibdiagnet_log`): the port findings, `<port> - "link_down_counter"
increased during the run (difference value=1,difference allowed threshold=1)` and `<port> -
Cable High Temperature Alarm reported, current temperature: 64C, threshold: 80C` (lines quoted
from a production NDR fabric's report, wuchanghui5220/pot tested.md, and NCAR
ib_diagnostics.py:518), optionally after a `-E-`/`-W-` level. `<port>` is `S<system GUID>/
N<node GUID>/P<label>` or, with a node-name map, `<name>/U<n>/P<label>`. The log's lines carry
no time: the events are dated by the run (`at`, or a `Running timestamp` line).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

from auditor.errors import ParseError
from auditor.models import (
    CableInfo,
    CounterTable,
    Link,
    Node,
    NodeType,
    Port,
    PortBer,
    PortEvent,
    Topology,
    clip,
)
from auditor.parse._common import (
    DESCRIPTION_MAX,
    EXAMPLE_MAX,
    cap_description,
    norm_guid,
    split_lines,
)
from auditor.parse._logline import SyslogResult
from auditor.parse._optics import text as field_text
from auditor.parse.nodedesc import describe

_KIND = "ibdiagnet"
_NET_DUMP = "ibdiagnet net_dump"
_LOG = "ibdiagnet log"

# Section names seen in real files include `WARNINGS_PORTS_COUNTERS_DIFFERENCE_CHECK_(DURING_RUN)`.
_MARK_RE = re.compile(r"(START|END)_([A-Za-z0-9_().\-]{1,120})")
_GUID_RE = re.compile(r"(?:0x)?([0-9a-fA-F]{1,16})")
_TIMESTAMP_RE = re.compile(
    r"Running timestamp\s*:\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\s+\S+)?\s+([+-]\d\d)(\d\d)")
_VERSION_RE = re.compile(r"Running version\s*:\s*(.*\S)")
NA = frozenset({"", "N/A", "NA", "n/a"})

# Tables this parser reads; the ones a topology or counter snapshot needs are reported missing.
READ_TABLES = ("NODES", "PORTS", "LINKS", "PM_INFO", "CABLE_INFO", "PORT_HIERARCHY_INFO")
BER_TABLE = "PHY_DB16"

_NODE_TYPES = {"1": NodeType.HCA, "2": NodeType.SWITCH, "3": NodeType.ROUTER,
               "CA": NodeType.HCA, "SW": NodeType.SWITCH, "RTR": NodeType.ROUTER,
               "RT": NodeType.ROUTER}
_WIDTH_BITS = {1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}
_CLASSIC_SPEEDS = {1: "SDR", 2: "DDR", 4: "QDR"}
# IBTA 1.7 added 200G as LinkSpeedExtActive bit 16 too; ibdm keeps it in byte 3.
_EXT_SPEEDS = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR", 16: "XDR"}
PORT_STATES = {1: "Down", 2: "Initialize", 3: "Armed", 4: "Active"}
# Names as infiniband-diags (iblinkinfo) prints them.
PHYS_STATES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining",
               5: "LinkUp", 6: "LinkErrorRecovery", 7: "PhyTest"}

# PortCounters (IBTA 16.1.3.5) and their PortCountersExtended twins, by the names the
# ibqueryerrors and perfquery parsers store.
BASE_COUNTERS = frozenset({
    "SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
    "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
    "PortXmitConstraintErrors", "PortRcvConstraintErrors", "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitData", "PortRcvData",
    "PortXmitPkts", "PortRcvPkts", "PortXmitWait", "QP1Dropped", "PortUnicastXmitPkts",
    "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts",
})
_PM_SKIP = frozenset({"nodeguid", "portguid", "portnumber", "portnum", "lid", "portselect",
                      "counterselect", "counterselect2"})
BER_MAX_EXPONENT = 255
SUMMARY_MAX = 300


@dataclass(frozen=True, slots=True)
class Section:
    """One `START_<name>` ... `END_<name>` table: header and data rows as printed."""

    name: str
    start_line: int
    header: tuple[str, ...]
    header_line: int
    rows: tuple[tuple[int, str], ...]  # (line number, line)


@dataclass(frozen=True, slots=True)
class PortLabel:
    """A port's front-panel label (PORT_HIERARCHY_INFO): `Label` and `ExtendedLabel` as
    printed (`1/1/1/1` on Quantum-2: ASIC/Cage/Port/Split)."""

    guid: str
    port: int
    label: str | None
    extended_label: str | None
    line_no: int = 0


@dataclass(frozen=True, slots=True)
class DiagIssue:
    """One row of a `WARNINGS_<check>` or `ERRORS_<check>` table."""

    level: str  # "warning" or "error"
    check: str  # the table name without its prefix: SYMBOL_BER_CHECK
    scope: str | None
    guid: str | None
    port: int | None
    event: str | None  # BER_EXCEEDS_THRESHOLD, PM_COUNTER_INCREASED, ...
    summary: str
    line_no: int = 0


@dataclass(slots=True)
class IbdiagnetResult:
    """What one ibdiagnet run gave. `notes` are (line number, line, reason) of what was seen
    but not read (a table whose layout is not known, a link to a node NODES does not list),
    for `sources`; `issues` are ibdiagnet's own warnings and errors."""

    topology: Topology | None = None
    counters: CounterTable | None = None
    cables: list[CableInfo] = field(default_factory=list)
    labels: list[PortLabel] = field(default_factory=list)
    ber: list[PortBer] = field(default_factory=list)
    issues: list[DiagIssue] = field(default_factory=list)
    events: list[PortEvent] = field(default_factory=list)  # from ibdiagnet2.log
    notes: list[tuple[int, str, str]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    run_at: datetime | None = None  # aware UTC
    version: str | None = None


# ---------------------------------------------------------------------------------------------
# Sections


def _header_info(line: str, info: dict[str, object]) -> None:
    m = _TIMESTAMP_RE.search(line)
    if m is not None and "run_at" not in info:
        sign = -1 if m.group(2).startswith("-") else 1
        offset = timedelta(hours=int(m.group(2)[1:]), minutes=int(m.group(3))) * sign
        try:
            naive = datetime.fromisoformat(m.group(1))
            info["run_at"] = naive.replace(tzinfo=timezone(offset)).astimezone(UTC)
        except ValueError:
            pass
    v = _VERSION_RE.search(line)
    if v is not None and "version" not in info:
        info["version"] = clip(v.group(1), EXAMPLE_MAX)


def run_header(text: str) -> tuple[datetime | None, str | None]:
    """When the run was (aware UTC) and the version that ran, from the `#` header of a
    db_csv or net_dump (its first 20 lines); None for what it does not say."""
    info: dict[str, object] = {}
    for line in split_lines(text[:8192])[:20]:
        _header_info(line, info)
    run_at, version = info.get("run_at"), info.get("version")
    return (run_at if isinstance(run_at, datetime) else None,
            version if isinstance(version, str) else None)


def split_sections(text: str, kind: str = _KIND) -> tuple[dict[str, Section], dict[str, object]]:
    """The tables of a db_csv by name, and what its `#` header says (`run_at`, `version`)."""
    sections: dict[str, Section] = {}
    info: dict[str, object] = {}
    current: tuple[str, int] | None = None
    header: tuple[str, ...] | None = None
    header_line = 0
    rows: list[tuple[int, str]] = []
    lines = split_lines(text.removeprefix("\ufeff"))  # a BOM, from an editor round trip
    for line_no, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            _header_info(stripped, info)
            continue
        mark = _MARK_RE.fullmatch(stripped.rstrip(","))
        if current is None:
            if mark is None or mark.group(1) != "START":
                raise ParseError(kind, line_no, line,
                                 "expected START_<TABLE> (not an ibdiagnet2.db_csv, or text "
                                 "between its tables)")
            name = mark.group(2)
            if name in sections:
                raise ParseError(kind, line_no, line, f"table {name} appears twice")
            current, header, rows = (name, line_no), None, []
            continue
        if mark is not None:
            if mark.group(1) == "START":
                raise ParseError(kind, line_no, line,
                                 f"START_ inside table {current[0]} (its END_ is missing)")
            if mark.group(2) != current[0]:
                raise ParseError(kind, line_no, line, f"END_ of another table inside {current[0]}")
            sections[current[0]] = Section(current[0], current[1], header or (), header_line,
                                           tuple(rows))
            current = None
            continue
        if header is None:
            header, header_line = tuple(c.strip() for c in _fields(line)), line_no
        else:
            rows.append((line_no, line))
    if current is not None:
        raise ParseError(kind, current[1], lines[current[1] - 1],
                         f"table {current[0]} has no END_{current[0]} (truncated file?)")
    if not sections:
        raise ParseError(kind, 1, lines[0] if lines else "", "no START_<TABLE>: not a db_csv")
    return sections, info


def _fields(line: str) -> list[str]:
    if '"' not in line:
        return line.split(",")
    return next(csv.reader((line,)))


class _Table:
    """One section's rows as fields, columns found by name whatever their case."""

    def __init__(self, section: Section, kind: str = _KIND) -> None:
        self.section = section
        self.kind = kind
        self.cols = {name.lower(): i for i, name in enumerate(section.header)}

    def col(self, *names: str) -> int | None:
        for name in names:
            i = self.cols.get(name.lower())
            if i is not None:
                return i
        return None

    def need(self, *names: str) -> int:
        i = self.col(*names)
        if i is None:
            s = self.section
            raise ParseError(self.kind, s.header_line, ",".join(s.header)[:EXAMPLE_MAX],
                             f"table {s.name} has no {names[0]} column")
        return i

    def rows(self, *, rest_last: bool = False) -> Iterator[tuple[int, str, list[str]]]:
        width = len(self.section.header)
        for line_no, line in self.section.rows:
            if rest_last and width > 1:
                fields = line.split(",", width - 1)
            else:
                fields = _fields(line)
                # a trailing comma (an empty last field too many) is not data
                while len(fields) > width and fields[-1].strip() == "":
                    fields.pop()
            if len(fields) > width:
                raise ParseError(self.kind, line_no, line,
                                 f"{len(fields)} fields, table {self.section.name} has {width}")
            fields += [""] * (width - len(fields))
            yield line_no, line, fields


def _guid(value: str, kind: str, line_no: int, line: str) -> str:
    m = _GUID_RE.fullmatch(value.strip())
    if m is None:
        raise ParseError(kind, line_no, line, f"not a GUID: {value[:40]!r}")
    return norm_guid(m.group(1))


def _int(value: str, kind: str, line_no: int, line: str) -> int | None:
    v = value.strip()
    if v in NA:
        return None
    try:
        return int(v, 16) if v[:2].lower() == "0x" else int(v)
    except ValueError:
        raise ParseError(kind, line_no, line, f"not a number: {v[:40]!r}") from None


def _port(value: str, kind: str, line_no: int, line: str) -> int:
    n = _int(value, kind, line_no, line)
    if n is None or not 0 <= n <= 255:
        raise ParseError(kind, line_no, line, f"not a port number: {value[:40]!r}")
    return n


def width_name(value: int | None) -> str | None:
    """IBTA LinkWidthActive bit -> `4X`; None for 0 or several bits (an enabled mask)."""
    return _WIDTH_BITS.get(value) if value is not None else None


def speed_name(value: int | None) -> str | None:
    """ibdm IBLinkSpeed value (see the module docstring) -> `HDR`; None if unknown."""
    if not value:
        return None
    if (value >> 24) & 0xFF == 1:
        return "XDR"
    ext = (value >> 8) & 0xFF
    if ext:
        return _EXT_SPEEDS.get(ext)
    vendor = (value >> 16) & 0xFF
    if vendor:
        return "FDR10" if vendor == 1 else None  # 2 is EDR20, not an IBTA speed
    return _CLASSIC_SPEEDS.get(value & 0xFF)


# ---------------------------------------------------------------------------------------------
# db_csv


def parse_ibdiagnet(text: str) -> IbdiagnetResult:
    """A whole `ibdiagnet2.db_csv`."""
    sections, info = split_sections(text)
    run_at = info.get("run_at")
    version = info.get("version")
    result = IbdiagnetResult(sections=list(sections),
                             run_at=run_at if isinstance(run_at, datetime) else None,
                             version=version if isinstance(version, str) else None)
    result.missing = [name for name in READ_TABLES if name not in sections]
    if "NODES" in sections:
        result.topology = _topology(sections, result.notes)
    if "PM_INFO" in sections:
        result.counters = _counters(_Table(sections["PM_INFO"]), result.notes)
    if "CABLE_INFO" in sections:
        result.cables = _cables(_Table(sections["CABLE_INFO"]))
    if "PORT_HIERARCHY_INFO" in sections:
        result.labels = _labels(_Table(sections["PORT_HIERARCHY_INFO"]))
    for name, section in sections.items():
        if name.startswith(("WARNINGS_", "ERRORS_")):
            result.issues += _issues(_Table(section))
        elif name == BER_TABLE:
            result.ber = _ber(_Table(section), result.notes)
        elif name.startswith("PHY_DB"):
            result.notes.append((section.start_line, f"START_{name}",
                                 f"{name}: field mapping unknown for this ibdiagnet version, "
                                 "not read"))
    return result


def _topology(sections: dict[str, Section], notes: list[tuple[int, str, str]]) -> Topology:
    nodes_t = _Table(sections["NODES"])
    g_col = nodes_t.need("NodeGUID")
    t_col = nodes_t.need("NodeType")
    d_col = nodes_t.col("NodeDesc")
    n_col = nodes_t.col("NumPorts")
    nodes: dict[str, Node] = {}
    cut: list[tuple[int, str]] = []
    for line_no, line, f in nodes_t.rows():
        guid = _guid(f[g_col], _KIND, line_no, line)
        node_type = _NODE_TYPES.get(f[t_col].strip().upper())
        if node_type is None:
            raise ParseError(_KIND, line_no, line, f"unknown NodeType {f[t_col][:20]!r}")
        if guid in nodes:
            notes.append((line_no, clip(line, EXAMPLE_MAX),
                          "NODES lists a node GUID twice (the first is kept)"))
            continue
        desc = cap_description(f[d_col].strip() if d_col is not None else "", line_no, line, cut)
        num = _int(f[n_col], _KIND, line_no, line) if n_col is not None else None
        nodes[guid] = Node(guid, node_type, desc, num)

    ports: dict[tuple[str, int], Port] = {}
    if "PORTS" in sections:
        ports = _ports(_Table(sections["PORTS"]), nodes, notes)
    links: dict[tuple[str, int, str, int], Link] = {}
    if "LINKS" in sections:
        _links(_Table(sections["LINKS"]), nodes, ports, links, notes)
    return Topology(list(nodes.values()), list(ports.values()), list(links.values()), cut)


def _ports(table: _Table, nodes: dict[str, Node],
           notes: list[tuple[int, str, str]]) -> dict[tuple[str, int], Port]:
    g_col = table.need("NodeGuid")
    p_col = table.need("PortNum", "PortNumber")
    pg_col = table.col("PortGuid")
    lid_col = table.col("LID")
    w_col = table.col("LinkWidthActv")
    s_col = table.col("LinkSpeedActv")
    st_col = table.col("PortState")
    ph_col = table.col("PortPhyState")
    rows: list[tuple[int, str, str, int, list[str]]] = []
    switch_lid: dict[str, int | None] = {}
    strays = 0
    for line_no, line, f in table.rows():
        guid = _guid(f[g_col], _KIND, line_no, line)
        port = _port(f[p_col], _KIND, line_no, line)
        node = nodes.get(guid)
        if node is None:
            strays += 1
            if strays == 1:
                notes.append((line_no, clip(line, EXAMPLE_MAX),
                              "PORTS lists a port of a node NODES does not list"))
            continue
        if port == 0:
            if node.node_type is NodeType.SWITCH and lid_col is not None:
                switch_lid[guid] = _int(f[lid_col], _KIND, line_no, line)
            continue
        rows.append((line_no, line, guid, port, f))
    for guid, lid in switch_lid.items():
        n = nodes[guid]
        nodes[guid] = Node(n.guid, n.node_type, n.description, n.num_ports, lid)
    ports: dict[tuple[str, int], Port] = {}
    for line_no, line, guid, port, f in rows:
        is_switch = nodes[guid].node_type is NodeType.SWITCH

        def num(col: int | None, f: list[str] = f, line_no: int = line_no,
                line: str = line) -> int | None:
            return _int(f[col], _KIND, line_no, line) if col is not None else None

        state = PORT_STATES.get(num(st_col) or 0)
        phys = PHYS_STATES.get(num(ph_col) or 0)
        up = state not in (None, "Down")
        pg = f[pg_col].strip() if pg_col is not None else ""
        ports[(guid, port)] = Port(
            guid=guid,
            port=port,
            port_guid=None if is_switch or pg in NA else _guid(pg, _KIND, line_no, line),
            lid=switch_lid.get(guid) if is_switch else num(lid_col),
            state=state,
            phys_state=phys,
            width=width_name(num(w_col)) if up else None,
            speed=speed_name(num(s_col)) if up else None,
        )
    return ports


def _links(table: _Table, nodes: dict[str, Node], ports: dict[tuple[str, int], Port],
           links: dict[tuple[str, int, str, int], Link],
           notes: list[tuple[int, str, str]]) -> None:
    cols = (table.need("NodeGuid1"), table.need("PortNum1"), table.need("NodeGuid2"),
            table.need("PortNum2"))
    unknown = 0
    for line_no, line, f in table.rows():
        a = (_guid(f[cols[0]], _KIND, line_no, line), _port(f[cols[1]], _KIND, line_no, line))
        b = (_guid(f[cols[2]], _KIND, line_no, line), _port(f[cols[3]], _KIND, line_no, line))
        if a == b:
            raise ParseError(_KIND, line_no, line, "port named as its own peer")
        if a[0] not in nodes or b[0] not in nodes:
            unknown += 1
            if unknown == 1:
                notes.append((line_no, clip(line, EXAMPLE_MAX),
                              "LINKS names a node NODES does not list (kept)"))
        if b < a:
            a, b = b, a
        key = (a[0], a[1], b[0], b[1])
        if key in links:
            continue
        for end in (a, b):
            if end[0] in nodes and end not in ports:
                ports[end] = Port(end[0], end[1])
        pa, pb = ports.get(a), ports.get(b)
        width = (pa.width if pa else None) or (pb.width if pb else None)
        speed = (pa.speed if pa else None) or (pb.speed if pb else None)
        links[key] = Link(a[0], a[1], b[0], b[1], width, speed)


def _counter_name(column: str) -> tuple[str, bool]:
    """(name stored, whether it is the 64-bit extended reading)."""
    for suffix in ("Extended", "Ext"):
        if column.endswith(suffix) and column[: -len(suffix)] in BASE_COUNTERS:
            return column[: -len(suffix)], True
    return column, False


def _counters(table: _Table, notes: list[tuple[int, str, str]]) -> CounterTable:
    g_col = table.need("NodeGUID")
    p_col = table.need("PortNumber", "PortNum")
    counter_cols: list[tuple[int, str, bool]] = []
    for i, name in enumerate(table.section.header):
        if name.lower() in _PM_SKIP or not name:
            continue
        base, extended = _counter_name(name)
        counter_cols.append((i, base, extended))
    # base (32-bit or 16-bit) readings first, so a 64-bit one of the same counter replaces them
    counter_cols.sort(key=lambda c: c[2])
    guids: list[str] = []
    ports: list[int | None] = []
    counts: list[int] = []
    names: list[str] = []
    values: list[int] = []
    bad_columns: set[str] = set()
    for line_no, line, f in table.rows():
        readings: dict[str, int] = {}
        for i, name, _ in counter_cols:
            raw = f[i].strip()
            if raw in NA:
                continue
            try:
                readings[name] = int(raw, 16) if raw[:2].lower() == "0x" else int(raw)
            except ValueError:
                if name not in bad_columns:
                    bad_columns.add(name)
                    notes.append((line_no, clip(line, EXAMPLE_MAX),
                                  f"PM_INFO column {name} is not a number: not read"))
        guids.append(_guid(f[g_col], _KIND, line_no, line))
        ports.append(_port(f[p_col], _KIND, line_no, line))
        counts.append(len(readings))
        names.extend(readings)
        values.extend(readings.values())
    return CounterTable(guids, ports, counts, names, values)


_TEMPERATURE_RE = re.compile(r"(-?\d{1,3}(?:\.\d+)?)\s*C?")


def _cables(table: _Table) -> list[CableInfo]:
    g_col = table.need("NodeGuid")
    p_col = table.need("PortNum", "PortNumber")

    def col(*names: str) -> int | None:
        return table.col(*names)

    cols = {"vendor": col("Vendor"), "pn": col("PN"), "sn": col("SN"), "rev": col("Rev"),
            "length": col("LengthDesc"), "type": col("TypeDesc"), "temp": col("Temperature")}
    out: list[CableInfo] = []
    for line_no, line, f in table.rows():

        def get(key: str, f: list[str] = f) -> str | None:
            i = cols[key]
            return field_text(f[i].strip().strip('"')) if i is not None else None

        temp_text = get("temp")
        temperature: float | None = None
        if temp_text is not None:
            m = _TEMPERATURE_RE.fullmatch(temp_text)
            temperature = float(m.group(1)) if m else None
        out.append(CableInfo(
            guid=_guid(f[g_col], _KIND, line_no, line),
            port=_port(f[p_col], _KIND, line_no, line),
            vendor=get("vendor"), part_number=get("pn"), serial_number=get("sn"),
            length=get("length"), revision=get("rev"), cable_type=get("type"),
            temperature_c=temperature, line_no=line_no))
    return out


def _labels(table: _Table) -> list[PortLabel]:
    g_col = table.need("NodeGUID")
    p_col = table.need("PortNum", "PortNumber")
    l_col = table.col("Label")
    e_col = table.col("ExtendedLabel")
    out = []
    for line_no, line, f in table.rows():
        label = field_text(f[l_col].strip('" ')) if l_col is not None else None
        ext = field_text(f[e_col].strip('" ')) if e_col is not None else None
        out.append(PortLabel(_guid(f[g_col], _KIND, line_no, line),
                             _port(f[p_col], _KIND, line_no, line), label, ext, line_no))
    return out


def _issues(table: _Table) -> list[DiagIssue]:
    name = table.section.name
    level, _, check = name.partition("_")
    s_col = table.col("Scope")
    g_col = table.col("NodeGUID")
    p_col = table.col("PortNumber", "PortNum")
    e_col = table.col("EventName")
    m_col = table.col("Summary")
    out = []
    for line_no, _line, f in table.rows(rest_last=True):

        def get(i: int | None, f: list[str] = f) -> str | None:
            return f[i].strip() or None if i is not None else None

        raw_guid = get(g_col)
        guid = None
        if raw_guid is not None and raw_guid not in NA:
            m = _GUID_RE.fullmatch(raw_guid)
            guid = norm_guid(m.group(1)) if m else None
        raw_port = get(p_col)
        port = int(raw_port) if raw_port is not None and raw_port.isdigit() else None
        summary = get(m_col) or ""
        if len(summary) > 1 and summary[0] == summary[-1] == '"':  # a quoted CSV field
            summary = summary[1:-1].replace('""', '"')
        out.append(DiagIssue(
            level="warning" if level == "WARNINGS" else "error", check=check,
            scope=get(s_col), guid=guid, port=port, event=get(e_col),
            summary=clip(summary, SUMMARY_MAX), line_no=line_no))
    return out


def _ber(table: _Table, notes: list[tuple[int, str, str]]) -> list[PortBer]:
    name = table.section.name
    g_col = table.col("NodeGuid")
    p_col = table.col("PortNum", "PortNumber")
    pairs = [table.col(f"field{i}") for i in range(12, 18)]
    if g_col is None or p_col is None or any(c is None for c in pairs):
        notes.append((table.section.header_line, clip(",".join(table.section.header),
                                                      EXAMPLE_MAX),
                      f"{name}: no NodeGuid/PortNum/field12..field17 columns, not read"))
        return []
    out: list[PortBer] = []
    implausible = 0
    for line_no, line, f in table.rows():
        values = [_int(f[c], _KIND, line_no, line) if c is not None else None for c in pairs]
        bers: list[float | None] = []
        ok = True
        for mantissa, exponent in zip(values[0::2], values[1::2], strict=True):
            if mantissa is None or exponent is None:
                bers.append(None)
            elif 0 <= exponent <= BER_MAX_EXPONENT and mantissa >= 0:
                # through decimal text: 15e-254 is 1.5e-253, not 1.4999999999999998e-253
                value = float(f"{mantissa}e-{exponent}")
                bers.append(value if math.isfinite(value) else None)
            else:
                ok = False
                bers.append(None)
        if not ok:
            implausible += 1
            if implausible == 1:
                notes.append((line_no, clip(line, EXAMPLE_MAX),
                              f"{name}: a BER exponent outside 0..{BER_MAX_EXPONENT} "
                              "(placeholder): that BER not read"))
        if all(b is None for b in bers):
            continue
        out.append(PortBer(_guid(f[g_col], _KIND, line_no, line),
                           _port(f[p_col], _KIND, line_no, line), bers[0], bers[1], bers[2],
                           f"{name} field12-17", line_no))
    return out


# ---------------------------------------------------------------------------------------------
# net_dump

_SWITCH_RE = re.compile(r'"(.*)"\s*,\s*([^,]*),\s*0x([0-9a-fA-F]{1,16})\s*,\s*LID\s+(\d{1,5})\s*')
# Lane rates as ibdm prints them (Fabric.h IB_LINK_SPEED_*_STR).
_LSA = {"2.5": "SDR", "5": "DDR", "10": "QDR", "14": "FDR", "25": "EDR", "50": "HDR",
        "100": "NDR", "200": "XDR", "FDR10": "FDR10"}
_NET_STATES = {"ACT": "Active", "DOWN": "Down", "INI": "Initialize", "ARM": "Armed"}
_NET_PHYS = {"LINK UP": "LinkUp", "LINK_UP": "LinkUp", "POLLING": "Polling",
             "DISABLED": "Disabled", "SLEEP": "Sleep"}


def parse_ibdiagnet_net_dump(text: str) -> Topology:
    """`ibdiagnet2.net_dump`: the switches' ports and what each one is cabled to."""
    nodes: dict[str, Node] = {}
    ports: dict[tuple[str, int], Port] = {}
    links: dict[tuple[str, int, str, int], Link] = {}
    peers: dict[str, str] = {}  # GUID -> description, of neighbours with no section
    peer_lids: dict[tuple[str, int], int] = {}  # their ports' LIDs (the NLID column)
    cut: list[tuple[int, str]] = []
    current: Node | None = None
    for line_no, line in enumerate(split_lines(text), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _SWITCH_RE.fullmatch(stripped)
        if m is not None:
            guid = norm_guid(m.group(3))
            desc = cap_description(m.group(1), line_no, line, cut)
            if guid in nodes and nodes[guid].node_type is NodeType.SWITCH:
                raise ParseError(_NET_DUMP, line_no, line, "switch listed twice")
            current = Node(guid, NodeType.SWITCH, desc, None, int(m.group(4)))
            nodes[guid] = current
            continue
        if current is None:
            raise ParseError(_NET_DUMP, line_no, line,
                             'expected a switch line "<desc>", <vendor>, 0x<guid>, LID <n>')
        left, quote, rest = stripped.partition('"')
        fields = [x.strip() for x in left.split(":")]
        if len(fields) < 4 or not fields[1].isdigit():
            raise ParseError(_NET_DUMP, line_no, line, "unrecognised port line")
        fields += [""] * (12 - len(fields))
        port = int(fields[1])
        state = _NET_STATES.get(fields[2].upper())
        up = state not in (None, "Down")
        ports[(current.guid, port)] = Port(
            current.guid, port, None, current.lid, state, _NET_PHYS.get(fields[3].upper()),
            _WIDTH_NAMES.get(fields[5].lower()) if up else None,
            _LSA.get(fields[6]) if up else None)
        if fields[9] and fields[10].isdigit():
            peer = _guid(fields[9], _NET_DUMP, line_no, line)
            desc = rest.rpartition('"')[0] if quote else ""
            peers.setdefault(peer, clip(desc, DESCRIPTION_MAX))
            a, b = (current.guid, port), (peer, int(fields[10]))
            if fields[11].isdigit():
                peer_lids.setdefault(b, int(fields[11]))
            if a == b:
                raise ParseError(_NET_DUMP, line_no, line, "port named as its own peer")
            if b < a:
                a, b = b, a
            key = (a[0], a[1], b[0], b[1])
            if key not in links:
                p = ports[(current.guid, port)]
                links[key] = Link(a[0], a[1], b[0], b[1], p.width, p.speed)
    if not nodes:
        raise ParseError(_NET_DUMP, 0, "", "no switch records")
    for guid, desc in peers.items():
        if guid not in nodes:
            # a neighbour with no section of its own (an excerpt, or a CA): a switch when its
            # description names a switch model (`MF0;name:MQM8700/U1`), as iblinkinfo's are
            kind = NodeType.SWITCH if describe(desc).model is not None else NodeType.HCA
            lid = (next((v for (g, _), v in peer_lids.items() if g == guid), None)
                   if kind is NodeType.SWITCH else None)
            nodes[guid] = Node(guid, kind, desc, None, lid)
    for a_guid, a_port, b_guid, b_port in links:
        for end in ((a_guid, a_port), (b_guid, b_port)):
            if end not in ports:
                node = nodes[end[0]]
                lid = node.lid if node.node_type is NodeType.SWITCH else peer_lids.get(end)
                ports[end] = Port(end[0], end[1], None, lid)
    return Topology(list(nodes.values()), list(ports.values()), list(links.values()), cut)


_WIDTH_NAMES = {"1x": "1X", "2x": "2X", "4x": "4X", "8x": "8X", "12x": "12X"}


# ---------------------------------------------------------------------------------------------
# ibdiagnet2.log

_WHERE = (r"(?:S(?P<sys>[0-9a-fA-F]{1,16})/N(?P<node>[0-9a-fA-F]{1,16})"
          r"|(?P<name>[^\s/]+)(?:/[^\s/]+)*?)/P(?P<label>\d{1,3}(?:/\d{1,3}){0,3})")
_COUNTER_RE = re.compile(
    r"(?:-[EWI]-\s+)?" + _WHERE + r'\s+-\s+"(?P<counter>\w{1,80})" increased during the run '
    r"\(difference value=(?P<value>\d{1,20}),\s*difference allowed threshold=(?P<limit>\d{1,20})")
_TEMP_RE = re.compile(
    r"(?:-[EWI]-\s+)?" + _WHERE + r"\s+-\s+Cable High Temperature [\w ]{0,40}?(?:reported|detected)"
    r", current temperature: (?P<t>-?\d{1,4})C, threshold: (?P<limit>-?\d{1,4})C")
# Counters whose increase during the run means the link went down and came back.
FLAP_COUNTERS = frozenset({"link_down_counter", "link_downed_counter"})


def label_port_number(label: str) -> int | None:
    """The IB port number an ibdiagnet port label stands for: `12`; Quantum split `Port/Split`
    (2*(Port-1)+Split, as Onyx splits: auditor.portmap); Quantum-2 `ASIC/Cage/Port` (two
    ports per cage: 2*(Cage-1)+Port; the real net_dump row `1/16/1:31:...` in ufm_sdk_3.0@
    8028db2 ndt_file_creator.py:204 is cage 16 port 1 = IB port 31) and `ASIC/Cage/Port/Split`
    (split as Quantum's; unverified). None for anything else (a second ASIC, a director)."""
    parts = [int(p) for p in label.split("/") if p.isdigit()]
    if len(parts) != label.count("/") + 1 or not parts or min(parts) < 1:
        return None
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        port, split = parts
        return 2 * (port - 1) + split if split <= 2 else None
    asic, cage, port = parts[:3]
    if asic != 1 or port > 2:
        return None
    base = 2 * (cage - 1) + port
    if len(parts) == 3:
        return base
    return 2 * (base - 1) + parts[3] if parts[3] <= 2 else None


def _log_event(m: re.Match[str], state: str, code: str, line_no: int, line: str,
               at: datetime) -> PortEvent:
    label = m.group("label")
    guid = norm_guid(m.group("node")) if m.group("node") else None
    return PortEvent(at=at, state=state, device=m.group("name"), port_name=label, guid=guid,
                     port=label_port_number(label), code=code, line_no=line_no,
                     message=clip(line.strip(), EXAMPLE_MAX))


def parse_ibdiagnet_log(text: str, *, at: datetime | None = None) -> SyslogResult:
    """The port findings of `ibdiagnet2.log`, dated `at` (the run; a `Running timestamp` line
    in the text wins). A `link_down_counter` increase is a "flap", other counters
    "counter_alarm" (code = the counter), cable temperature "temperature_alarm"."""
    result = SyslogResult()
    info: dict[str, object] = {}
    lines = split_lines(text)
    for line in lines:
        if "Running timestamp" in line:
            _header_info(line, info)
            break
    found = info.get("run_at")
    when = found if isinstance(found, datetime) else at
    if when is not None:
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        m = _COUNTER_RE.search(line)
        t = None if m is not None else _TEMP_RE.search(line)
        if m is None and t is None:
            result.ignored += 1
            continue
        if when is None:
            result.unparsed.append((line_no, line, "undated port finding: pass the run's time"))
            continue
        if m is not None:
            counter = m.group("counter")
            state = "flap" if counter in FLAP_COUNTERS else "counter_alarm"
            result.events.append(_log_event(m, state, counter, line_no, line, when))
        elif t is not None:
            result.events.append(_log_event(t, "temperature_alarm", "cable_temperature",
                                            line_no, line, when))
    return result


# ---------------------------------------------------------------------------------------------
# The whole output folder


def parse_ibdiagnet_folder(files: Mapping[str, str]) -> IbdiagnetResult:
    """An ibdiagnet output folder as {file name: text}: the db_csv if there is one (else the
    net_dump for the topology), and the log's port findings dated by the run."""
    def find(suffix: str) -> str | None:
        names = sorted(n for n in files if n.endswith(suffix))
        return files[names[0]] if names else None

    db_csv, net_dump, log = find(".db_csv"), find(".net_dump"), find(".log")
    if db_csv is None and net_dump is None:
        raise ParseError(_KIND, 0, "", "no *.db_csv or *.net_dump in the folder")
    result = parse_ibdiagnet(db_csv) if db_csv is not None else IbdiagnetResult()
    if result.topology is None and net_dump is not None:
        result.topology = parse_ibdiagnet_net_dump(net_dump)
        if result.run_at is None:
            result.run_at = run_header(net_dump)[0]
    if log is not None:
        parsed = parse_ibdiagnet_log(log, at=result.run_at)
        result.events = parsed.events
        result.notes += parsed.unparsed
    return result
