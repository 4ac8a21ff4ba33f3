"""Parse `iblinkinfo` output, default (per-node sections) and `--line` form, line by line.

iblinkinfo prints the GUID of a CA's PORT, never the CA's node GUID. Conventions the store
relies on, shared with the `-p` form of `auditor.parse.ibnetdiscover`:

- CA and router nodes are keyed by a PORT GUID: `Node.guid == Port.guid`, and every port keeps
  its own GUID in `Port.port_guid`. The ports under one `CA:` header are one node (a dual-port
  HCA is one HCA), keyed by the GUID of its lowest-numbered port. `--line` form has no headers:
  consecutive lines with the same description whose port GUIDs step with their port numbers
  (port GUID = base + port, as on ConnectX-3 and in ibsim) are taken as one node. The store
  maps port GUID -> node GUID when it has a default-form ibnetdiscover snapshot.
- Switches are keyed by the GUID iblinkinfo prints (port 0's, equal to the node GUID on every
  switch we know of); their `Port.port_guid` is None.
- The default form names a link's far end by LID, port and description only. The LID is looked
  up among the nodes in the same capture (then description + port, for fabrics where LIDs are
  still 0 or clash). A far end that is not in the capture (`--switches-only`, `--down`, `-S`)
  keeps `b_guid = "lid:<N>"`, for the store to resolve, and gets a placeholder node with that
  key and the description printed for it (a switch when the description names a model or the
  far port is above 2, else a CA; the ports of one CA share the key of its first LID). Such
  placeholders always sort after real GUIDs, so they are always the `b` end, and are dropped
  when the other end's own line already gave the link. A far end with LID 0 (no SM) gets no
  placeholder node: nothing could ever resolve it.
- `--line` form names the far end by GUID, so nothing is left to resolve. It has no node
  headers: a GUID listed with several ports, or with a `MF0;host:model` description, is taken
  as a switch, anything else as a CA.
- Width, speed and the "Could be" hints are None for a port that is Down (IBTA C14-24.2.1 lets
  such a port report garbage), and speeds are the IBTA names (HDR, not 53.125 Gbps).
- Each link appears once, ordered so that (a_guid, a_port) < (b_guid, b_port). A port named as
  its own peer is an error.
- A port that is up but has no peer (`"Port not available"`: the tool could not place the far
  end, which is what two nodes sharing one GUID look like) is listed in `Topology.unplaced`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.errors import ParseError
from auditor.models import LID_KEY_PREFIX, Link, Node, NodeType, Port, Topology, clip
from auditor.parse._common import (
    DESCRIPTION_MAX,
    EXAMPLE_MAX,
    GUID_HEX,
    LANE_SPEEDS,
    WIDTHS,
    cap_description,
    norm_guid,
    split_lines,
)
from auditor.parse.nodedesc import describe

_KIND = "iblinkinfo"

# "%6d %4d[%2s] ==(<link>)==>  <remote>"; `-p` adds " (HOQ:n VL_Stall:n)" after the link. The
# link text itself may contain parentheses ("10.0 Gbps (FDR10)", "undefined (0)").
_BODY = (
    r"(?P<lid>\d{1,5})\s+(?P<port>\d{1,3})\[[ \d]{0,3}\]\s+"
    r"==\((?P<link>.*?)\)(?: \(HOQ:\d+ VL_Stall:\d+\))?==>\s*"
    r"(?:(?:0x(?P<peer_guid>" + GUID_HEX + r")\s+)?(?P<peer_lid>\d{1,5})\s+"
    r'(?P<peer_port>\d{1,3})\[[ \d]{0,3}\]\s+"(?P<peer_desc>.*)"\s+\((?P<hints>.*)\)'
    r'|\[\s*\]\s+""\s+\(\s*\)'
    r'|"Port not available")\s*$'
)
_SWITCH_PORT_RE = re.compile(r"^\s+" + _BODY, re.ASCII)
_CA_PORT_RE = re.compile(r"^\s+0x(?P<guid>" + GUID_HEX + r")\s+" + _BODY, re.ASCII)
# --line: 0x<guid> "<desc right-aligned in 30 columns>" <body>
_LINE_RE = re.compile(r"^0x(?P<guid>" + GUID_HEX + r') "(?P<desc>.*?)"\s+' + _BODY, re.ASCII)
_SWITCH_HEADER_RE = re.compile(r"^Switch: 0x(" + GUID_HEX + r") (.*):\s*$", re.ASCII)
_OTHER_HEADER_RE = re.compile(r"^(CA|Router|\?\?): (.*):\s*$", re.ASCII)

_LINK_UP_RE = re.compile(
    r"^\s*(?P<width>\d{1,2}X|undefined \(\d+\))\s+(?P<speed>.+?)\s+"
    r"(?P<state>\S+)/\s*(?P<phys>.+?)\s*$",
    re.ASCII,
)
_LINK_DOWN_RE = re.compile(r"^\s*(?P<state>\S+)/\s*(?P<phys>.+?)\s*$", re.ASCII)
_HINT_RE = re.compile(r"Could be (\d{1,2}X|[\d.]+ Gbps(?: \(FDR10\))?|FDR10)", re.ASCII)

_HEADER_TYPES = {"CA": NodeType.HCA, "Router": NodeType.ROUTER}


@dataclass(slots=True)
class _PortLine:
    guid: str
    port: int
    lid: int
    state: str
    phys_state: str
    width: str | None
    speed: str | None
    could_be_width: str | None
    could_be_speed: str | None
    peer_guid: str | None  # --line form only
    peer_lid: int | None  # None: no peer
    peer_port: int | None
    peer_desc: str | None
    port_guid: str | None = None  # a CA's own port GUID (guid becomes its node's key)
    section: int | None = None  # which `CA:`/`Router:` section the line is in
    line_no: int = 0
    line: str = ""


# What a port line's link text says: state, physical state, width, speed.
_LinkState = tuple[str, str, str | None, str | None]


class _Memo:
    """What the port lines of one capture repeat, worked out once each: a 4,096-host capture's
    24,576 port lines hold a handful of link texts and hint texts and a few thousand peer GUIDs
    (issue #25)."""

    __slots__ = ("guids", "hints", "links")

    def __init__(self) -> None:
        self.links: dict[str, _LinkState] = {}
        self.hints: dict[str, tuple[str | None, str | None]] = {}
        self.guids: dict[str, str] = {}


def _link_state(link: str, line_no: int, line: str) -> _LinkState:
    up = _LINK_UP_RE.match(link)
    if up is not None:
        return (up.group("state"), up.group("phys"), WIDTHS.get(up.group("width")),
                LANE_SPEEDS.get(up.group("speed")))
    down = _LINK_DOWN_RE.match(link)
    if down is None:
        raise ParseError(_KIND, line_no, line, "unrecognised link state")
    return down.group("state"), down.group("phys"), None, None


def _could_be(hints: str) -> tuple[str | None, str | None]:
    could_be_width = could_be_speed = None
    for hint in _HINT_RE.findall(hints):
        if hint.endswith("X"):
            could_be_width = WIDTHS.get(hint)
        else:
            could_be_speed = LANE_SPEEDS.get(hint, "FDR10" if hint == "FDR10" else None)
    return could_be_width, could_be_speed


def _port_line(guid: str, m: re.Match[str], line_no: int, line: str, memo: _Memo) -> _PortLine:
    lid, port, link, peer_guid, peer_lid, peer_port, peer_desc, hints = m.group(
        "lid", "port", "link", "peer_guid", "peer_lid", "peer_port", "peer_desc", "hints")
    state = memo.links.get(link)
    if state is None:
        state = memo.links[link] = _link_state(link, line_no, line)
    could_be: tuple[str | None, str | None] = (None, None)
    if hints:
        found = memo.hints.get(hints)
        if found is None:
            found = memo.hints[hints] = _could_be(hints)
        could_be = found
    if peer_guid is not None:
        peer_guid = memo.guids.get(peer_guid) or memo.guids.setdefault(peer_guid,
                                                                       norm_guid(peer_guid))
    return _PortLine(
        guid, int(port), int(lid), state[0], state[1], state[2], state[3], could_be[0],
        could_be[1], peer_guid,
        int(peer_lid) if peer_lid is not None else None,
        int(peer_port) if peer_lid is not None else None,
        # Cut as the node descriptions are, so that a long one still matches its node.
        clip(peer_desc, DESCRIPTION_MAX) if peer_desc is not None else None,
        None, None, line_no, line)


@dataclass(slots=True)
class _NodeInfo:
    node_type: NodeType
    description: str
    lid: int | None = None
    port_numbers: set[int] | None = None  # --line form only, for the switch heuristic


def parse_iblinkinfo(text: str) -> Topology:
    nodes: dict[str, _NodeInfo] = {}
    port_lines: list[_PortLine] = []
    section_guid: str | None = None  # current Switch: section
    section: tuple[NodeType, str] | None = None  # current CA:/Router: section
    sections = 0
    line_mode_guids: set[str] = set()
    cut: list[tuple[int, str]] = []
    memo = _Memo()

    for line_no, line in enumerate(split_lines(text), 1):
        first = line[:1]
        if first == " ":
            if line.lstrip().startswith("0x"):
                m = _CA_PORT_RE.match(line)
                if m is None:
                    raise ParseError(_KIND, line_no, line, "unrecognised CA port line")
                if section is None:
                    raise ParseError(_KIND, line_no, line, "CA port line outside a CA section")
                guid = norm_guid(m.group("guid"))
                pl = _port_line(guid, m, line_no, line, memo)
                pl.port_guid, pl.section = guid, sections
                if guid not in nodes:
                    nodes[guid] = _NodeInfo(section[0], section[1])
                port_lines.append(pl)
                continue
            if not line.strip():
                continue
            m = _SWITCH_PORT_RE.match(line)
            if m is None:
                raise ParseError(_KIND, line_no, line, "unrecognised port line")
            if section_guid is None:
                raise ParseError(_KIND, line_no, line, "switch port line outside a Switch section")
            pl = _port_line(section_guid, m, line_no, line, memo)
            info = nodes[section_guid]
            if info.lid is None:
                info.lid = pl.lid
            port_lines.append(pl)
            continue
        if first == "0":
            m = _LINE_RE.match(line)
            if m is None:
                raise ParseError(_KIND, line_no, line, "unrecognised --line port line")
            guid = norm_guid(m.group("guid"))
            pl = _port_line(guid, m, line_no, line, memo)
            pl.port_guid = guid
            line_info = nodes.get(guid)
            if line_info is None:
                # %30s right-aligns the description; the padding is not part of it.
                desc = cap_description(m.group("desc").lstrip(), line_no, line, cut)
                line_info = _NodeInfo(NodeType.HCA, desc, pl.lid, set())
                nodes[guid] = line_info
            if line_info.port_numbers is not None:
                line_info.port_numbers.add(pl.port)
            line_mode_guids.add(guid)
            port_lines.append(pl)
            continue
        if not line.strip():
            continue
        m = _SWITCH_HEADER_RE.match(line)
        if m is not None:
            section_guid = norm_guid(m.group(1))
            section = None
            if section_guid not in nodes:
                desc = cap_description(m.group(2), line_no, line, cut)
                nodes[section_guid] = _NodeInfo(NodeType.SWITCH, desc)
            continue
        m = _OTHER_HEADER_RE.match(line)
        if m is not None:
            node_type = _HEADER_TYPES.get(m.group(1))
            if node_type is None:
                raise ParseError(_KIND, line_no, line, "unknown node type")
            section = (node_type, cap_description(m.group(2), line_no, line, cut))
            sections += 1
            section_guid = None
            continue
        raise ParseError(_KIND, line_no, line, "unrecognised line")

    if not port_lines and not nodes:
        raise ParseError(_KIND, 0, "", "no node records")

    for guid in line_mode_guids:
        info = nodes[guid]
        ports_seen = info.port_numbers or set()
        if len(ports_seen) > 1 or describe(info.description).model is not None:
            info.node_type = NodeType.SWITCH
        else:
            info.lid = None  # a CA's LID belongs to its port, see models.Node
    alias = _group_ca_ports(nodes, port_lines)
    return _build(nodes, port_lines, alias, cut)


def _group_ca_ports(nodes: dict[str, _NodeInfo], port_lines: list[_PortLine]) -> dict[str, str]:
    """Make the ports of one multi-port CA one node (see the module docstring); returns the
    port GUIDs that were folded into another port's key, with that key."""
    groups: list[list[_PortLine]] = []
    prev: _PortLine | None = None
    for pl in port_lines:
        info = nodes[pl.guid]
        if info.node_type is NodeType.SWITCH:
            prev = None
            continue
        if pl.section is not None:
            same = prev is not None and prev.section == pl.section
        else:
            same = (prev is not None and prev.section is None and pl.port != prev.port
                    and nodes[prev.guid].description == info.description
                    and int(pl.guid, 16) - int(prev.guid, 16) == pl.port - prev.port)
        if same:
            groups[-1].append(pl)
        else:
            groups.append([pl])
        prev = pl
    alias: dict[str, str] = {}
    for group in groups:
        if len({pl.guid for pl in group}) < 2:
            continue
        key = min(group, key=lambda pl: pl.port).guid
        for pl in group:
            if pl.guid != key:
                alias[pl.guid] = key
                nodes.pop(pl.guid, None)
                pl.guid = key
    return alias


def _guess_type(description: str, port: int) -> NodeType:
    # iblinkinfo prints no type for a far end. Switch descriptions name a model
    # (`MF0;leaf01:MQM8700/U1`); CAs have one or two ports.
    if describe(description).model is not None or port > 2:
        return NodeType.SWITCH
    return NodeType.HCA


def _build(nodes: dict[str, _NodeInfo], port_lines: list[_PortLine], alias: dict[str, str],
           cut: list[tuple[int, str]]) -> Topology:
    by_lid: dict[int, str | None] = {}  # None: LID used by two nodes
    by_desc_port: dict[tuple[str, int], str | None] = {}
    for pl in port_lines:
        info = nodes[pl.guid]
        if pl.lid:
            known = by_lid.get(pl.lid, pl.guid)
            by_lid[pl.lid] = pl.guid if known == pl.guid else None
        key = (info.description, pl.port)
        known = by_desc_port.get(key, pl.guid)
        by_desc_port[key] = pl.guid if known == pl.guid else None

    ports: dict[tuple[str, int], Port] = {}
    links: dict[tuple[str, int, str, int], Link] = {}
    pending: list[_PortLine] = []  # far end not found in this capture
    for pl in port_lines:
        is_switch = nodes[pl.guid].node_type is NodeType.SWITCH
        key = (pl.guid, pl.port)
        if key not in ports:
            ports[key] = Port(pl.guid, pl.port, None if is_switch else pl.port_guid, pl.lid,
                              pl.state, pl.phys_state, pl.width, pl.speed, pl.could_be_width,
                              pl.could_be_speed)
        if pl.peer_lid is None or pl.peer_port is None:
            continue
        peer = alias.get(pl.peer_guid, pl.peer_guid) if pl.peer_guid else None
        if peer is None and pl.peer_lid:
            peer = by_lid.get(pl.peer_lid)
        if peer is None and pl.peer_desc is not None:
            peer = by_desc_port.get((pl.peer_desc, pl.peer_port))
        if peer is None:
            pending.append(pl)
            continue
        a, b = (pl.guid, pl.port), (peer, pl.peer_port)
        if a == b:
            raise ParseError(_KIND, pl.line_no, pl.line, "port named as its own peer")
        if b < a:
            a, b = b, a
        link_key = (a[0], a[1], b[0], b[1])
        if link_key not in links:
            links[link_key] = Link(a[0], a[1], b[0], b[1], pl.width, pl.speed)

    linked = {(lk[0], lk[1]) for lk in links} | {(lk[2], lk[3]) for lk in links}
    peers: dict[str, Node] = {}  # placeholder key -> node
    ca_peers: dict[str, tuple[str, set[int]]] = {}  # description -> key, ports seen
    for pl in pending:
        if (pl.guid, pl.port) in linked or pl.peer_lid is None or pl.peer_port is None:
            continue
        peer_key = f"{LID_KEY_PREFIX}{pl.peer_lid}"
        if pl.peer_lid and peer_key not in peers:
            desc = pl.peer_desc or ""
            kind = _guess_type(desc, pl.peer_port)
            same_ca = ca_peers.get(desc) if kind is NodeType.HCA else None
            if same_ca is not None and pl.peer_port not in same_ca[1]:
                peer_key = same_ca[0]  # another port of a CA already named by another LID
                same_ca[1].add(pl.peer_port)
            else:
                peers[peer_key] = Node(peer_key, kind, desc)
                if kind is NodeType.HCA and same_ca is None:
                    ca_peers[desc] = (peer_key, {pl.peer_port})
        link_key = (pl.guid, pl.port, peer_key, pl.peer_port)
        if link_key not in links:
            links[link_key] = Link(*link_key, pl.width, pl.speed)

    node_list = [
        Node(guid, info.node_type, info.description, None, info.lid) for guid, info in nodes.items()
    ]
    node_list += peers.values()
    unplaced = [(pl.guid, pl.port, pl.line_no, clip(pl.line, EXAMPLE_MAX))
                for pl in port_lines if pl.peer_lid is None and pl.state != "Down"]
    return Topology(node_list, list(ports.values()), list(links.values()), cut,
                    unplaced=unplaced)
