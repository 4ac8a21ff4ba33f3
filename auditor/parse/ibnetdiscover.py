"""Parse `ibnetdiscover` output (default topology form, `-p` ports report, `-l/-S/-H` lists).

The form is detected from the first line that is not blank, a `#` comment or an `-s` progress
line. Conventions the store relies on:

- Default form: every node carries its real node GUID (`switchguid=` / `caguid=` / `rtguid=`),
  and CA/router ports carry their own port GUID in `Port.port_guid`. The tool prints each node
  once, so a second record with a GUID already seen is another node claiming that GUID (cloned
  VMs, misflashed firmware): it is kept apart as `<GUID>~2` (`~3`, ...) and listed in
  `Topology.duplicates`. A port line naming that GUID as its peer goes to the record whose own
  port line names that port back, else to the one with the description printed, else the first.
- `-p` form: the report prints port GUIDs only. A switch's port GUID is its port-0 GUID, equal to
  the node GUID on every switch we know of, but a CA's node GUID is not printed at all. CA and
  router nodes are therefore keyed by their PORT GUID (`Node.guid == Port.guid ==
  Port.port_guid`), exactly as in `auditor.parse.iblinkinfo`; the store maps port GUID -> node
  GUID when it has a default-form snapshot. The ports of one dual-port HCA are printed one after
  the other with the same description and port GUIDs that step with the port number (port GUID
  = base + port, as on ConnectX-3 and in ibsim): they are one node, keyed by the GUID of its
  lowest-numbered port, each port keeping its own GUID in `Port.port_guid`.
- `-l` form: nodes only, no ports or links.
- `Port.port_guid` is None for switch ports (external switch ports have no GUID of their own).
- `Port.state` is never known (ibnetdiscover does not print it). Width and speed are None for
  a `-p` port with no peer, because a port that is not up reports stale values (IBTA C14-24.2.1).
- Each link appears once, ordered so that (a_guid, a_port) < (b_guid, b_port). A port named as
  its own peer is an error.
"""

from __future__ import annotations

import re
from dataclasses import replace

from auditor.errors import ParseError
from auditor.models import (
    DUPLICATE_MARK,
    DuplicateGuid,
    EdgeKey,
    Link,
    Node,
    NodeType,
    Port,
    Topology,
    clip,
)
from auditor.parse._common import (
    DESCRIPTION_MAX,
    EXAMPLE_MAX,
    GUID_HEX,
    SPEEDS,
    WIDTHS,
    cap_description,
    norm_guid,
    split_lines,
)

_KIND = "ibnetdiscover"

_NODE_TYPES_DEFAULT = {"Switch": NodeType.SWITCH, "Ca": NodeType.HCA, "Rt": NodeType.ROUTER}
_NODE_TYPES_PORTS = {"SW": NodeType.SWITCH, "CA": NodeType.HCA, "RT": NodeType.ROUTER}
_NODE_TYPES_LIST = {"Switch": NodeType.SWITCH, "Ca": NodeType.HCA, "Router": NodeType.ROUTER}

# vendid=, devid=, sysimgguid=, switchguid=0x<node>(<port>), caguid=, rtguid=; with -g a
# "# Chassis ..." comment may follow.
_ID_RE = re.compile(
    r"^(?:vendid|devid|sysimgguid|switchguid|caguid|rtguid)=0x[0-9a-fA-F]+"
    r"(?:\([0-9a-fA-F]+\))?\s*(?:#.*)?$",
    re.ASCII,
)
_SWITCH_RE = re.compile(
    r'^Switch\s+(\d{1,3})\s+"S-(' + GUID_HEX + r')"\s*#\s*"(.*)"\s+(?:enhanced|base)\s+'
    r"port 0 lid (\d{1,5}) lmc \d{1,2}.*$",
    re.ASCII,
)
_CA_RE = re.compile(
    r'^(Ca|Rt)\s+(\d{1,3})\s+"[HR?]-(' + GUID_HEX + r')"\s*#\s*"(.*)"(?:\s+\(scp\))?\s*$',
    re.ASCII,
)
# Switch port: [7]  "S-<guid>"[4]  # "<desc>" lid 1 4xHDR
# Switch port to CA: [1]  "H-<node guid>"[1](<port guid>)  # "<desc>" lid 7 4xHDR
# CA port: [1](<own port guid>)  "S-<guid>"[1]  # lid 7 lmc 0 "<desc>" lid 3 4xHDR
# -g adds "[ext N]" after port numbers, -f adds " s=.. w=.. v=.." after the width/speed.
_PORT_RE = re.compile(
    r"^\[(?P<port>\d{1,3})\](?:\[ext \d{1,3}\])?(?:\((?P<port_guid>" + GUID_HEX + r")\))?\s*"
    r'"[SHR?]-(?P<peer>' + GUID_HEX + r')"\[(?P<peer_port>\d{1,3})\](?:\[ext \d{1,3}\])?'
    r"(?:\s*\(" + GUID_HEX + r"\))?\s*#\s*"
    r'(?:lid (?P<lid>\d{1,5}) lmc \d{1,2}\s+)?"(?P<peer_desc>.*)" lid \d{1,5} (?P<ws>\S+)'
    r"(?:\s.*)?$",
    re.ASCII,
)
# Lines printed by -g (grouping) and -s (progress, on stdout) that carry nothing we keep.
_IGNORED_RE = re.compile(r"^(?:DR path |Chassis \d|Hostname: |Non-Chassis Nodes\s*$)", re.ASCII)
_WIDTH_SPEED_RE = re.compile(r"^(\d{1,2}x)(\w+)$", re.ASCII)

_PORTS_RE = re.compile(
    r"^(?P<type>SW|CA|RT|\?\?)\s+(?P<lid>\d{1,5})\s+(?P<port>\d{1,3})\s+0x(?P<guid>"
    + GUID_HEX
    + r")\s+(?P<width>\S+)\s+(?P<speed>\S+)"
    r"(?:\s+-\s+(?P<peer_type>SW|CA|RT|\?\?)\s+\d{1,5}\s+(?P<peer_port>\d{1,3})\s+"
    r"0x(?P<peer>" + GUID_HEX + r")\s+\( '(?P<desc>.*)' - '.*' \)|\s+'(?P<lone_desc>.*)')\s*$",
    re.ASCII,
)
_LIST_RE = re.compile(
    r"^(Switch|Ca|Router)\s+:\s+0x(" + GUID_HEX + r") ports (\d{1,3}) devid 0x[0-9a-fA-F]+ "
    r'vendid 0x[0-9a-fA-F]+ "(.*)"\s*$',
    re.ASCII,
)



def parse_ibnetdiscover(text: str) -> Topology:
    lines = split_lines(text)
    for line in lines:
        if not line.strip() or line.startswith("#") or line.startswith("DR path "):
            continue
        if _PORTS_RE.match(line):
            return _parse_ports_report(lines)
        if _LIST_RE.match(line):
            return _parse_list(lines)
        break
    return _parse_topology(lines)


def _width_speed(token: str) -> tuple[str | None, str | None]:
    m = _WIDTH_SPEED_RE.match(token)
    if not m:
        return None, None
    speed = m.group(2)
    return WIDTHS.get(m.group(1)), speed if speed in SPEEDS else None


def _add_link(
    links: dict[EdgeKey, Link],
    a: tuple[str, int],
    b: tuple[str, int],
    width: str | None,
    speed: str | None,
    where: tuple[int, str],
) -> None:
    if a == b:
        raise ParseError(_KIND, where[0], where[1], "port named as its own peer")
    if b < a:
        a, b = b, a
    key = (a[0], a[1], b[0], b[1])
    if key not in links:
        links[key] = Link(a[0], a[1], b[0], b[1], width, speed)


def _no_records() -> ParseError:
    return ParseError(_KIND, 0, "", "no node records")


# A port line: own node key, port, peer GUID as printed, peer port, peer description, width,
# speed, line number, line.
_PortLine = tuple[str, int, str, int, str, str | None, str | None, int, str]


def _parse_topology(lines: list[str]) -> Topology:
    nodes: dict[str, Node] = {}
    ports: dict[tuple[str, int], Port] = {}
    port_lines: list[_PortLine] = []
    records: dict[str, list[tuple[str, str, int, str]]] = {}  # GUID -> (key, desc, line no, line)
    cut: list[tuple[int, str]] = []
    current: Node | None = None

    def key_of(guid: str, desc: str, line_no: int, line: str) -> str:
        seen = records.setdefault(guid, [])
        key = f"{guid}{DUPLICATE_MARK}{len(seen) + 1}" if seen else guid
        seen.append((key, desc, line_no, line))
        return key

    # A 4,096-host capture has 24,576 port lines naming a few thousand GUIDs and a handful of
    # width/speed tokens: each is normalised once, and a line's groups are read in one call
    # (issue #25: the parse of that capture 0.25-0.29 -> 0.19 s of CPU).
    guids: dict[str, str] = {}
    ws_of: dict[str, tuple[str | None, str | None]] = {}
    is_switch = False
    for line_no, line in enumerate(lines, 1):
        if line.startswith("["):
            m = _PORT_RE.match(line)
            if not m:
                raise ParseError(_KIND, line_no, line, "unrecognised port line")
            if current is None:
                raise ParseError(_KIND, line_no, line, "port line before any node record")
            port_s, own_pg, peer, peer_port, own_lid, peer_desc, ws = m.groups()
            if is_switch == (own_pg is not None):
                raise ParseError(_KIND, line_no, line, "port line does not fit its node type")
            width_speed = ws_of.get(ws)
            if width_speed is None:
                width_speed = ws_of[ws] = _width_speed(ws)
            width, speed = width_speed
            port = int(port_s)
            key = (current.guid, port)
            if key not in ports:
                ports[key] = Port(current.guid, port, None if is_switch else norm_guid(own_pg),
                                  current.lid if is_switch else
                                  (int(own_lid) if own_lid is not None else None),
                                  None, None, width, speed)
            peer_guid = guids.get(peer)
            if peer_guid is None:
                peer_guid = guids[peer] = norm_guid(peer)
            # Cut as the node descriptions are, so that a long one still matches its record.
            port_lines.append((current.guid, port, peer_guid, int(peer_port),
                               peer_desc if len(peer_desc) <= DESCRIPTION_MAX
                               else clip(peer_desc, DESCRIPTION_MAX), width, speed,
                               line_no, line))
            continue
        if not line.strip() or line.startswith("#"):
            continue
        if _ID_RE.match(line):
            current = None  # a new record starts; its Switch/Ca/Rt line follows
            continue
        m = _SWITCH_RE.match(line)
        if m:
            guid = norm_guid(m.group(2))
            desc = cap_description(m.group(3), line_no, line, cut)
            node_key = key_of(guid, desc, line_no, line)
            current = Node(node_key, NodeType.SWITCH, desc, int(m.group(1)), int(m.group(4)))
            nodes[node_key] = current
            is_switch = True
            continue
        m = _CA_RE.match(line)
        if m:
            guid = norm_guid(m.group(3))
            desc = cap_description(m.group(4), line_no, line, cut)
            node_key = key_of(guid, desc, line_no, line)
            current = Node(node_key, _NODE_TYPES_DEFAULT[m.group(1)], desc, int(m.group(2)))
            nodes[node_key] = current
            is_switch = False
            continue
        if _IGNORED_RE.match(line):
            continue
        raise ParseError(_KIND, line_no, line, "unrecognised line")

    if not nodes:
        raise _no_records()
    dups = {guid: seen for guid, seen in records.items() if len(seen) > 1}
    links = _topology_links(port_lines, dups)
    duplicates = [
        DuplicateGuid(guid, tuple(r[0] for r in seen), tuple(r[1] for r in seen), seen[1][2],
                      clip(seen[1][3], EXAMPLE_MAX))
        for guid, seen in dups.items()
    ]
    return Topology(list(nodes.values()), list(ports.values()), list(links.values()), cut,
                    duplicates)


def _topology_links(port_lines: list[_PortLine],
                    dups: dict[str, list[tuple[str, str, int, str]]]) -> dict[EdgeKey, Link]:
    """The links of the port lines; a peer GUID that several records print goes to one of them
    (see the module docstring)."""
    claims: dict[tuple[str, int], str] = {}  # (GUID, port) -> the duplicate record cabled there
    if dups:
        for own, _, peer, peer_port, *_ in port_lines:
            if own.partition(DUPLICATE_MARK)[0] in dups:
                claims[(peer, peer_port)] = own
    links: dict[EdgeKey, Link] = {}
    for own, port, peer, peer_port, peer_desc, width, speed, line_no, line in port_lines:
        seen = dups.get(peer) if dups else None
        if seen is not None:
            keys = [r[0] for r in seen]
            claim = claims.get((own.partition(DUPLICATE_MARK)[0], port))
            named = [r[0] for r in seen if r[1] == peer_desc]
            peer = claim if claim in keys else named[0] if len(named) == 1 else keys[0]
        # _add_link, inline: once per port line (24,576 at 4,096 hosts)
        if (peer, peer_port) < (own, port):
            key = (peer, peer_port, own, port)
        elif (peer, peer_port) == (own, port):
            raise ParseError(_KIND, line_no, line, "port named as its own peer")
        else:
            key = (own, port, peer, peer_port)
        if key not in links:
            links[key] = Link(key[0], key[1], key[2], key[3], width, speed)
    return links


def _parse_ports_report(lines: list[str]) -> Topology:
    nodes: dict[str, Node] = {}
    ports: dict[tuple[str, int], Port] = {}
    links: dict[EdgeKey, Link] = {}
    cut: list[tuple[int, str]] = []
    runs: list[list[tuple[str, int]]] = []  # (port GUID, port) of consecutive CA lines
    prev: tuple[str, int, str] | None = None  # the CA line before: port GUID, port, description

    for line_no, line in enumerate(lines, 1):
        m = _PORTS_RE.match(line)
        if not m:
            if not line.strip() or line.startswith("#"):
                continue
            raise ParseError(_KIND, line_no, line, "unrecognised -p ports line")
        node_type = _NODE_TYPES_PORTS.get(m.group("type"))
        if node_type is None:
            raise ParseError(_KIND, line_no, line, "unknown node type")
        # For CAs and routers this is the port GUID; see the module docstring.
        guid = norm_guid(m.group("guid"))
        is_switch = node_type is NodeType.SWITCH
        lid = int(m.group("lid"))
        connected = m.group("peer_type") is not None
        desc = m.group("desc") if connected else m.group("lone_desc")
        port = int(m.group("port"))
        if is_switch:
            prev = None
        else:
            if (prev is not None and prev[2] == desc and prev[1] != port
                    and int(guid, 16) - int(prev[0], 16) == port - prev[1]):
                runs[-1].append((guid, port))
            else:
                runs.append([(guid, port)])
            prev = (guid, port, desc)
        if guid not in nodes:
            desc = cap_description(desc, line_no, line, cut)
            nodes[guid] = Node(guid, node_type, desc, None, lid if is_switch else None)
        if connected:
            width = WIDTHS.get(m.group("width"))
            speed = m.group("speed") if m.group("speed") in SPEEDS else None
            peer = (norm_guid(m.group("peer")), int(m.group("peer_port")))
            _add_link(links, (guid, port), peer, width, speed, (line_no, line))
        else:
            width = speed = None
        key = (guid, port)
        if key not in ports:
            ports[key] = Port(
                guid=guid,
                port=port,
                port_guid=None if is_switch else guid,
                lid=lid,
                width=width,
                speed=speed,
            )

    if not nodes:
        raise _no_records()
    alias: dict[str, str] = {}  # port GUID -> the key of the CA it belongs to
    for run in runs:
        if len({guid for guid, _ in run}) > 1:
            root = min(run, key=lambda r: r[1])[0]
            alias |= {guid: root for guid, _ in run if guid != root}
    if alias:
        nodes = {guid: n for guid, n in nodes.items() if guid not in alias}
        ports = {(alias.get(g, g), n): replace(p, guid=alias.get(g, g))
                 for (g, n), p in ports.items()}
        renamed: dict[EdgeKey, Link] = {}
        for lk in links.values():
            _add_link(renamed, (alias.get(lk.a_guid, lk.a_guid), lk.a_port),
                      (alias.get(lk.b_guid, lk.b_guid), lk.b_port), lk.width, lk.speed, (0, ""))
        links = renamed
    return Topology(list(nodes.values()), list(ports.values()), list(links.values()), cut)


def _parse_list(lines: list[str]) -> Topology:
    nodes: dict[str, Node] = {}
    cut: list[tuple[int, str]] = []
    for line_no, line in enumerate(lines, 1):
        m = _LIST_RE.match(line)
        if not m:
            if not line.strip() or line.startswith("#"):
                continue
            raise ParseError(_KIND, line_no, line, "unrecognised -l list line")
        guid = norm_guid(m.group(2))
        if guid not in nodes:
            desc = cap_description(m.group(4), line_no, line, cut)
            nodes[guid] = Node(guid, _NODE_TYPES_LIST[m.group(1)], desc, int(m.group(3)))
    if not nodes:
        raise _no_records()
    return Topology(nodes=list(nodes.values()), cut=cut)
