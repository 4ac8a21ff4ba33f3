"""Write what current NVIDIA fabrics write, for a simulated fabric: an ibdiagnet2.db_csv and
net_dump, an NVOS switch's event table and UFM's REST events (issue #24). For tests, the demo
and `simulate --vendor-formats`; what each writer copies (table and column names, value
encodings) is what `auditor.parse.ibdiagnet`, `nvos_events` and `ufm_rest_events` read, with
the sources named there. Layout details no capture showed are marked where they are written.

    tree = FatTree(spines=2, leaves=4, hosts_per_leaf=2)
    text = db_csv(topology_of_tree(tree), run_at=datetime(2026, 11, 30, tzinfo=UTC))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.models import (
    CableInfo,
    CounterTable,
    Fabric,
    FabricNode,
    Link,
    Node,
    NodeType,
    Port,
    PortEvent,
    Topology,
)
from auditor.portmap import nvos_port_name
from auditor.simulate.ibsim import FatTree

__all__ = [
    "DEGRADED",
    "db_csv",
    "net_dump",
    "nvos_events_json",
    "topology_of_tree",
    "ufm_rest_events_json",
    "write_scenario_formats",
]

IBDIAG_VERSION = '"IBDIAGNET 2.10.0 (fabric-auditor simulation)"'
_VENDOR_ID = 0x02C9
_SWITCH_DEVICE_ID = 0xD2F0  # Quantum (MQM8700), as auditor.simulate.ibsim writes
_HCA_DEVICE_ID = 0x101B  # ConnectX-6

# (width, speed) a degraded link trains to, for ibsim.DEGRADE_MODES' keys.
DEGRADED = {"1x": ("1X", "HDR"), "2x": ("2X", "HDR"), "QDR": ("4X", "QDR"),
            "FDR": ("4X", "FDR"), "EDR": ("4X", "EDR")}

# The real column lists (CrackedPoly/Rapimt@b08b032 crates/rapimt_io/examples/ibdiagnet2/).
NODES_HEADER = ("NodeDesc,NumPorts,NodeType,ClassVersion,BaseVersion,SystemImageGUID,NodeGUID,"
                "PortGUID,DeviceID,PartitionCap,revision,VendorID,LocalPortNum")
PORTS_HEADER = (
    "NodeGuid,PortGuid,PortNum,MKey,GIDPrfx,MSMLID,LID,CapMsk,M_KeyLeasePeriod,DiagCode,"
    "LinkWidthActv,LinkWidthSup,LinkWidthEn,LocalPortNum,LinkSpeedEn,LinkSpeedActv,LMC,"
    "MKeyProtBits,LinkDownDefState,PortPhyState,PortState,LinkSpeedSup,VLArbHighCap,VLHighLimit,"
    "InitType,VLCap,MSMSL,NMTU,FilterRawOutb,FilterRawInb,PartEnfOutb,PartEnfInb,OpVLs,HoQLife,"
    "VLStallCnt,MTUCap,InitTypeReply,VLArbLowCap,PKeyViolations,MKeyViolations,SubnTmo,"
    "MulticastPKeyTrapSuppressionEnabled,ClientReregister,GUIDCap,QKeyViolations,MaxCreditHint,"
    "OverrunErrs,LocalPhyError,RespTimeValue,LinkRoundTripLatency,OOOSLMask,CapMsk2,FECActv,"
    "RetransActv")
PORTS_COLUMNS = tuple(PORTS_HEADER.split(","))
LINKS_HEADER = "NodeGuid1,PortNum1,NodeGuid2,PortNum2"
# PM_INFO: the key columns as ibdiagnet spells them there, PortCounters by IBTA name and the
# 64-bit `...Ext` twins (the CERN cables-info-exporter README's list); the full real column
# list and order were not seen.
PM_COUNTERS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter",
               "PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors",
               "PortXmitDiscards", "PortXmitConstraintErrors", "PortRcvConstraintErrors",
               "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped",
               "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait")
PM_EXT = ("SymbolErrorCounterExt", "LinkErrorRecoveryCounterExt", "LinkDownedCounterExt",
          "PortRcvErrorsExt", "PortRcvRemotePhysicalErrorsExt", "PortXmitDiscardsExt",
          "PortXmitWaitExt", "LocalLinkIntegrityErrorsExt", "ExcessiveBufferOverrunErrorsExt",
          "PortXmitDataExtended", "PortRcvDataExtended", "PortXmitPktsExtended",
          "PortRcvPktsExtended")
CABLE_HEADER = ("NodeGuid,PortGuid,PortNum,Source,Vendor,OUI,PN,SN,Rev,LengthDesc,TypeDesc,"
                "Temperature")

_WIDTH_CODES = {"1X": 1, "4X": 2, "8X": 4, "12X": 8, "2X": 16}
_SPEED_CODES = {"SDR": 1, "DDR": 2, "QDR": 4, "FDR": (1 << 8) | 4, "EDR": (2 << 8) | 4,
                "HDR": (4 << 8) | 4, "NDR": (8 << 8) | 4, "XDR": (1 << 24) | 4,
                "FDR10": (1 << 16) | 4}
_LANE_RATES = {"SDR": "2.5", "DDR": "5", "QDR": "10", "FDR": "14", "EDR": "25", "HDR": "50",
               "NDR": "100", "XDR": "200", "FDR10": "FDR10"}
_STATE_CODES = {"Down": 1, "Initialize": 2, "Armed": 3, "Active": 4}
_PHYS_CODES = {"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4,
               "LinkUp": 5, "LinkErrorRecovery": 6, "PhyTest": 7}
_NODE_TYPE_CODES = {NodeType.HCA: 1, NodeType.SWITCH: 2, NodeType.ROUTER: 3}


def _g(guid: str) -> str:
    return f"0x{int(guid, 16):016x}"


def _q(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


# ---------------------------------------------------------------------------------------------
# The fabric of an ibsim FatTree


def topology_of_tree(tree: FatTree, degrade: Mapping[tuple[str, str], str] | None = None
                     ) -> Topology:
    """The fabric `write_net_file(tree, degrade)` builds, as a capture would show it after an
    opensm sweep: every port of every node (the unused ones Down/Polling), LIDs static."""
    nodes: list[Node] = []
    ports: dict[tuple[str, int], Port] = {}
    links: list[Link] = []
    slow = {(leaf, spine): DEGRADED[mode] for (leaf, spine), mode in (degrade or {}).items()}

    def switch(name: str, guid: int, nports: int, lid: int) -> str:
        key = f"0x{guid:016x}"
        nodes.append(Node(key, NodeType.SWITCH, tree.switch_description(name), nports, lid))
        for p in range(1, nports + 1):
            ports[(key, p)] = Port(key, p, None, lid, "Down", "Polling")
        return key

    spines = [switch(tree.spine_name(s), tree.spine_guid(s), tree.spine_ports, tree.spine_lid(s))
              for s in range(1, tree.spines + 1)]
    leaves = [switch(tree.leaf_name(i), tree.leaf_guid(i), tree.leaf_ports, tree.leaf_lid(i))
              for i in range(1, tree.leaves + 1)]

    def cable(a: tuple[str, int], b: tuple[str, int], width: str, speed: str) -> None:
        for end in (a, b):
            p = ports[end]
            ports[end] = Port(p.guid, p.port, p.port_guid, p.lid, "Active", "LinkUp", width,
                              speed)
        a, b = min(a, b), max(a, b)
        links.append(Link(a[0], a[1], b[0], b[1], width, speed))

    for host in range(1, tree.hosts + 1):
        name = tree.host_name(host)
        for rail in range(tree.rails):
            guid = tree.host_guid(host, rail)
            key = f"0x{guid:016x}"
            nodes.append(Node(key, NodeType.HCA, tree.host_description(name, rail), 1))
            ports[(key, 1)] = Port(key, 1, f"0x{guid + 1:016x}", tree.host_lid(host, rail),
                                   "Down", "Polling")
            leaf, leaf_port = tree.host_attachment(host, rail)
            cable((key, 1), (leaves[leaf - 1], leaf_port), "4X", "HDR")
    for i, leaf_key in enumerate(leaves, 1):
        for s, spine_key in enumerate(spines, 1):
            width, speed = slow.get((tree.leaf_name(i), tree.spine_name(s)), ("4X", "HDR"))
            cable((leaf_key, tree.uplink_port(s)), (spine_key, i), width, speed)
    return Topology(nodes, list(ports.values()), links)


# ---------------------------------------------------------------------------------------------
# ibdiagnet2.db_csv and net_dump


def _header(run_at: datetime | None, command: str) -> list[str]:
    # The comment block of a real net_dump (ufm_sdk_3.0@8028db2 ndt_file_creator.py:141-145);
    # whether db_csv opens with the same block was not seen: the parser only reads it if so.
    lines = ["# This database file was automatically generated by IBDIAG",
             f"# Running version   : {IBDIAG_VERSION}",
             f"# Running command   : {command}"]
    if run_at is not None:
        stamp = run_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"# Running timestamp : {stamp} UTC +0000")
    return [*lines, ""]


def _table(name: str, header: str, rows: Sequence[str]) -> list[str]:
    return [f"START_{name}", header, *rows, f"END_{name}", ""]


def _port_guid(node: Node, port: Port) -> str:
    if node.node_type is NodeType.SWITCH or port.port_guid is None:
        return _g(node.guid)
    return _g(port.port_guid)


def db_csv(topo: Topology, *, counters: CounterTable | None = None,
           cables: Sequence[CableInfo] = (), run_at: datetime | None = None,
           labels: bool = True) -> str:
    """An ibdiagnet2.db_csv of `topo` (NODES, PORTS, LINKS; PORT_HIERARCHY_INFO with the port
    number as label, Quantum's unsplit label; PM_INFO and CABLE_INFO when given)."""
    by_guid = {n.guid: n for n in topo.nodes}
    ports_of: dict[str, list[Port]] = {}
    for p in topo.ports:
        ports_of.setdefault(p.guid, []).append(p)
    out = _header(run_at, "ibdiagnet --pm_per_lane --get_cable_info")

    node_rows = []
    for n in topo.nodes:
        own = sorted(ports_of.get(n.guid, []), key=lambda p: p.port)
        first = own[0] if own else None
        pguid = _port_guid(n, first) if first is not None else _g(n.guid)
        device = _SWITCH_DEVICE_ID if n.node_type is NodeType.SWITCH else _HCA_DEVICE_ID
        node_rows.append(",".join((
            _q(n.description), str(n.num_ports or len(own)), str(_NODE_TYPE_CODES[n.node_type]),
            "1", "1", _g(n.guid), _g(n.guid), pguid, str(device), "8", "0",
            str(_VENDOR_ID), str(first.port if first else 1))))
    out += _table("NODES", NODES_HEADER, node_rows)

    port_rows = []
    for n in topo.nodes:
        own = sorted(ports_of.get(n.guid, []), key=lambda p: p.port)
        if n.node_type is NodeType.SWITCH:
            port0 = Port(n.guid, 0, None, n.lid, None, None)
            own = [port0, *own]
        for p in own:
            values = dict.fromkeys(PORTS_COLUMNS, "0")
            values |= {"NodeGuid": _g(n.guid), "PortGuid": _port_guid(n, p),
                       "PortNum": str(p.port), "MKey": "0x0000000000000000",
                       "GIDPrfx": "0xfe80000000000000" if p.port == 0 or
                       n.node_type is not NodeType.SWITCH else "0x0000000000000000",
                       "OOOSLMask": "N/A", "CapMsk2": "N/A", "FECActv": "N/A",
                       "RetransActv": "N/A"}
            lid = p.lid if (p.port == 0 or n.node_type is not NodeType.SWITCH) else 0
            values["LID"] = str(lid or 0)
            if p.port:
                values["LinkWidthActv"] = str(_WIDTH_CODES.get(p.width or "", 0))
                values["LinkSpeedActv"] = str(_SPEED_CODES.get(p.speed or "", 0))
                values["PortState"] = str(_STATE_CODES.get(p.state or "", 0))
                values["PortPhyState"] = str(_PHYS_CODES.get(p.phys_state or "", 0))
            port_rows.append(",".join(values[c] for c in PORTS_COLUMNS))
    out += _table("PORTS", PORTS_HEADER, port_rows)

    link_rows = [f"{_g(lk.a_guid)},{lk.a_port},{_g(lk.b_guid)},{lk.b_port}" for lk in topo.links]
    out += _table("LINKS", LINKS_HEADER, link_rows)

    if labels:
        label_rows = [f"{_g(p.guid)},{_port_guid(by_guid[p.guid], p)},{p.port},{p.port},{p.port}"
                      for p in topo.ports if p.guid in by_guid
                      and by_guid[p.guid].node_type is NodeType.SWITCH]
        out += _table("PORT_HIERARCHY_INFO", "NodeGUID,PortGUID,PortNum,Label,ExtendedLabel",
                      label_rows)

    if counters is not None:
        header = ["NodeGUID", "PortGUID", "PortNumber", *PM_COUNTERS, *PM_EXT]
        merged: dict[tuple[str, int], dict[str, int]] = {}
        for guid, port, name, value in counters.rows():
            if port is not None:
                merged.setdefault((guid, port), {})[name] = value
        rows = []
        for (guid, port), readings in merged.items():
            cells = [_g(guid), _g(guid), str(port)]
            cells += [str(readings.get(c, 0)) for c in PM_COUNTERS]
            for ext in PM_EXT:
                base = ext.removesuffix("Extended").removesuffix("Ext")
                cells.append(str(readings.get(base, 0)))
            rows.append(",".join(cells))
        out += _table("PM_INFO", ",".join(header), rows)

    if cables:
        rows = []
        for c in cables:
            temp = "N/A" if c.temperature_c is None else f"{c.temperature_c:g}C"
            rows.append(",".join((
                _g(c.guid), _g(c.guid), str(c.port), "cable_info", _q(c.vendor or "N/A"),
                "0x2c9", _q(c.part_number or "N/A"), _q(c.serial_number or "N/A"),
                _q(c.revision or "N/A"), _q(c.length or "N/A"), _q(c.cable_type or "N/A"),
                _q(temp))))
        out += _table("CABLE_INFO", CABLE_HEADER, rows)
    return "\n".join(out)


def net_dump(topo: Topology, *, run_at: datetime | None = None) -> str:
    """An ibdiagnet2.net_dump of `topo`: a section per switch, a row per port."""
    by_guid = {n.guid: n for n in topo.nodes}
    peer: dict[tuple[str, int], tuple[str, int]] = {}
    for lk in topo.links:
        peer[(lk.a_guid, lk.a_port)] = (lk.b_guid, lk.b_port)
        peer[(lk.b_guid, lk.b_port)] = (lk.a_guid, lk.a_port)
    lid_of = {(p.guid, p.port): p.lid for p in topo.ports}
    out = _header(run_at, "ibdiagnet --discovery_only --enable_output net_dump")
    out += ["", "# Switch label port numbering explanation:",
            "#   Quantum switch no split mode: Port", "", ""]
    for n in topo.nodes:
        if n.node_type is not NodeType.SWITCH:
            continue
        out.append(f'"{n.description}", Mellanox, {_g(n.guid)}, LID {n.lid or 0}')
        out.append("  #          : IB# : Sta  : PhysSta    : MTU : LWA     : LSA     : "
                   "FEC mode            : Retran : Neighbor Guid      : N#         : NLID : "
                   "Neighbor Description")
        for p in sorted((p for p in topo.ports if p.guid == n.guid), key=lambda p: p.port):
            sta = {"Active": "ACT", "Initialize": "INI", "Armed": "ARM"}.get(p.state or "",
                                                                           "DOWN")
            phys = "LINK UP" if p.phys_state == "LinkUp" else (p.phys_state or "").upper()
            width = (p.width or "").lower() if sta != "DOWN" else ""
            lsa = _LANE_RATES.get(p.speed or "", "") if sta != "DOWN" else ""
            row = [str(p.port), str(p.port), sta, phys, "5" if sta != "DOWN" else "",
                   width, lsa, "MLNX_RS_271_257_PLR" if sta != "DOWN" else "",
                   "NO-RTR" if sta != "DOWN" else ""]
            far = peer.get((p.guid, p.port))
            if far is not None:
                far_node = by_guid.get(far[0])
                desc = far_node.description if far_node else ""
                row += [_g(far[0]), str(far[1]), str(lid_of.get(far, 0) or 0)]
                out.append("  " + " : ".join(row) + f' : "{desc}"')
            else:
                out.append("  " + " : ".join([*row, "", "", ""]))
        out.append("")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# NVOS event table and UFM REST events


def nvos_events_json(events: Sequence[PortEvent], *, first_id: int = 1,
                     table_size: int = 1000) -> str:
    """An NVOS switch's event table (`nv show system events -o json`, the 25.03 shape with the
    entries at the top level) holding `events` ("up"/"down"/"admin_up"/"admin_down"), times in
    `Etc/UTC` as NVOS prints them since 25.02.5002. The port is named by `port_name`, else by
    the NVOS name of `port`."""
    doc: dict[str, object] = {}
    for i, e in enumerate(events, first_id):
        word = e.state.removeprefix("admin_")
        kind = "admin" if e.state.startswith("admin_") else "operational"
        if word not in ("up", "down"):
            raise ValueError(f"no NVOS text for state {e.state!r}")
        name = e.port_name or (nvos_port_name(e.port) if e.port else None)
        if name is None:
            raise ValueError("an NVOS event needs a port_name or a port")
        doc[str(i)] = {"resource": name, "severity": "INFORMATIONAL",
                       "text": f"Interface {kind} state is {word}",
                       "time-created": e.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
                       + " Etc/UTC"}
    doc["table-occupancy"] = len(events)
    doc["table-size"] = str(table_size)
    return json.dumps(doc, indent=2) + "\n"


def _end_text(device: str | None, port_name: str | None, guid: str | None,
              port: int | None) -> str:
    g = f"{int(guid, 16):016x}" if guid else "0" * 16
    return f"(Switch:{device or g}:{port_name or port})" + f"{g}:{port or 0}"


def ufm_rest_events_json(events: Sequence[PortEvent], *, first_id: int = 1) -> str:
    """`GET /ufmRest/app/events` (the v6.17+ shape) holding link events ("down" -> 329, "up" ->
    328) with both ends' GUIDs and ports in the description, as events.log prints them; times
    are UFM's local wall clock, written here in UTC."""
    out = []
    for i, e in enumerate(events, first_id):
        if e.state not in ("up", "down"):
            raise ValueError(f"no UFM link event for state {e.state!r}")
        code, verb = ("329", "went down") if e.state == "down" else ("328", "is up")
        a = _end_text(e.device, e.port_name, e.guid, e.port)
        b = _end_text(e.peer_device, e.peer_port_name, e.peer_guid, e.peer_port)
        g = f"{int(e.guid, 16):016x}" if e.guid else "0" * 16
        pg = f"{int(e.peer_guid, 16):016x}" if e.peer_guid else "0" * 16
        out.append({
            "id": i, "name": "Link went down" if code == "329" else "Link is up",
            "type": "Link", "event_type": code,
            "severity": "Warning" if code == "329" else "Info",
            "timestamp": e.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            "counter": "N/A", "category": "Fabric Topology",
            "object_name": f"{g}_{e.port or 0} : {pg}_{e.peer_port or 0}",
            "object_path": "default / Link", "write_to_syslog": False,
            "description": f"Link {verb}: {a} - {b}",
        })
    return json.dumps(out, indent=2) + "\n"



# ---------------------------------------------------------------------------------------------
# A generated scenario's fabric and switch-side flaps, as an NVIDIA site keeps them


VENDOR_DIR = "vendor"


def _port_guids_to_nodes(topo: Topology) -> dict[str, tuple[str, int]]:
    """ibqueryerrors keys an HCA's block by its port GUID: the (node GUID, port) it stands for."""
    return {p.port_guid: (p.guid, p.port) for p in topo.ports
            if p.port_guid and p.port_guid != p.guid}


def write_scenario_formats(out_dir: Path) -> dict[str, Any]:
    """Write the scenario under `out_dir` again as an NVIDIA site's files, from the files the
    scenario wrote (so the same evidence, skews and lost switch logs, reaches both):

    * `vendor/ibdiagnet/ibdiagnet2-<snapshot>.db_csv`: one ibdiagnet run per counter snapshot,
      the topology (NODES, PORTS, LINKS, PORT_HIERARCHY_INFO) with that snapshot's counters in
      PM_INFO (every active port, zeros where ibqueryerrors printed none), run at the
      snapshot's time;
    * `vendor/nvos/<switch>.json`: each switch's NVOS event table (`nv show system events -o
      json`) holding its syslog's port events, ports named as NVOS names them (`IB1/17` ->
      `sw9p1`); a switch whose syslog was lost has no table either;
    * `vendor/ufm/events.json`: UFM's REST events of the same link changes, one 329/328 per
      link change (UFM reports a link once, with both ends), stamped as the first end logged.

    Returns what truth.json records under `vendor_formats`: the files, relative to `out_dir`,
    and the time each db_csv ran at."""
    from auditor.parse.ibnetdiscover import parse_ibnetdiscover
    from auditor.parse.ibqueryerrors import parse_ibqueryerrors_table
    from auditor.parse.syslog import parse_syslog_lines
    from auditor.portmap import PortMap, port_number

    topo = _trained(parse_ibnetdiscover((out_dir / "topology" / "ibnetdiscover.txt").read_text()))
    truth = json.loads((out_dir / "truth.json").read_text())
    root = out_dir / VENDOR_DIR
    for sub in ("ibdiagnet", "nvos", "ufm"):
        folder = root / sub
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            stale.unlink()
    owners = _port_guids_to_nodes(topo)
    runs = []
    for snap in truth["snapshots"]:
        rel = Path(snap["file"])
        table = parse_ibqueryerrors_table((out_dir / rel).read_text())
        # ibdiagnet reads every port's PortCounters; ibqueryerrors prints only ports with
        # errors: the others are zeros in the run (a port first seen with errors would
        # otherwise have no reading to count from).
        rows: list[tuple[str, int | None, str, int]] = [
            (p.guid, p.port, "SymbolErrorCounter", 0) for p in topo.ports
            if p.state == "Active"]
        for guid, port, name, value in table.rows():
            node, node_port = owners.get(guid, (guid, port))
            rows.append((node, port if port is not None else node_port, name, value))
        at = datetime.fromisoformat(snap["at"])
        name = f"{VENDOR_DIR}/ibdiagnet/ibdiagnet2-{rel.stem.removeprefix('ibqueryerrors-')}" \
            ".db_csv"
        (out_dir / name).write_text(
            db_csv(topo, counters=CounterTable.from_rows(rows), run_at=at), encoding="utf-8")
        runs.append({"path": name, "at": snap["at"]})

    log = (out_dir / "logs" / "switches.log").read_text()
    parsed = parse_syslog_lines(enumerate(log.splitlines(), 1))
    per_switch: dict[str, list[PortEvent]] = {}
    for e in parsed.events:
        number = port_number(e.port_name or "")
        if e.device is None or number is None or e.state not in ("up", "down"):
            continue
        per_switch.setdefault(e.device, []).append(
            PortEvent(at=e.at, state=e.state, device=e.device, port_name=nvos_port_name(number)))
    tables = {}
    for switch, events in sorted(per_switch.items()):
        rel_name = f"{VENDOR_DIR}/nvos/{switch}.json"
        (out_dir / rel_name).write_text(nvos_events_json(events), encoding="utf-8")
        tables[switch] = rel_name

    fabric = _fabric_of(topo)
    fabric_map = PortMap(fabric)
    peers = {}
    for lk in topo.links:
        peers[(lk.a_guid, lk.a_port)] = (lk.b_guid, lk.b_port)
        peers[(lk.b_guid, lk.b_port)] = (lk.a_guid, lk.a_port)
    names = {g: n.name for g, n in fabric.nodes.items()}
    seen: dict[tuple[frozenset[tuple[str, int]], str], datetime] = {}
    link_events = []
    for e in sorted(parsed.events, key=lambda ev: ev.at):
        r = fabric_map.resolve(e.device, e.port_name)
        if r.guid is None or r.port is None or e.state not in ("up", "down"):
            continue
        far = peers.get((r.guid, r.port))
        if far is None:
            continue
        key = (frozenset({(r.guid, r.port), far}), e.state)
        last = seen.get(key)
        seen[key] = e.at
        if last is not None and abs((e.at - last).total_seconds()) <= _SAME_CHANGE_S:
            continue  # the other end's line of the same change
        link_events.append(PortEvent(
            at=e.at, state=e.state, device=e.device, port_name=f"1/{r.port}/1", guid=r.guid,
            port=r.port, peer_device=names.get(far[0]), peer_port_name=f"1/{far[1]}/1",
            peer_guid=far[0], peer_port=far[1]))
    ufm = f"{VENDOR_DIR}/ufm/events.json"
    (out_dir / ufm).write_text(ufm_rest_events_json(link_events), encoding="utf-8")
    return {"ibdiagnet": runs, "nvos_events": tables, "ufm_rest_events": ufm}


def _trained(topo: Topology) -> Topology:
    """ibnetdiscover gives a link's width and speed, not its ports' state; ibdiagnet's PORTS
    table gives each port's: a cabled port is Active/LinkUp at its link's width and speed."""
    from dataclasses import replace

    ends: dict[tuple[str, int], Link] = {}
    for lk in topo.links:
        ends[(lk.a_guid, lk.a_port)] = ends[(lk.b_guid, lk.b_port)] = lk
    ports = []
    for p in topo.ports:
        cable = ends.get((p.guid, p.port))
        ports.append(p if cable is None else replace(
            p, state="Active", phys_state="LinkUp", width=cable.width, speed=cable.speed))
    return Topology(topo.nodes, ports, topo.links)


# Both ends log one link change within a second or two (plus the switches' clock skew).
_SAME_CHANGE_S = 90.0


def _fabric_of(topo: Topology) -> Fabric:
    """The fabric graph of a parsed topology, nodes named as the ingest names them."""
    from auditor.parse.nodedesc import describe

    fab = Fabric(seen_at=None)
    for n in topo.nodes:
        who = describe(n.description)
        fab.nodes[n.guid] = FabricNode(n.guid, n.node_type, n.description, who.name, who.model,
                                       who.device, n.lid)
    fab.ports = {(p.guid, p.port): p for p in topo.ports}
    fab.links = list(topo.links)
    return fab
