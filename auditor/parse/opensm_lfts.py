"""Parse the forwarding tables opensm writes into `--dump_files_dir` (default /var/log) when its
log flags include 0x40 (OSM_LOG_ROUTING, e.g. `-D 0x43`), after each routing pass:

`opensm-lfts.dump` (opensm 3.3.23 opensm/osm_dump.c:331-366, `dump_ucast_lfts`), per switch:

    Unicast lids [0-14] of switch Lid 3 guid 0x<GUID> ('<desc>'):
    0x0001 003 # Switch portguid 0x<port GUID>: '<desc>'
    0x0009 000 # unknown node and type
    14 lids dumped

LIDs are decimal in the header, the description is quoted, and the totals line prints the
switch's top LID, not a count. DLIDs without a route are left out (`port >= num_ports`, which
counts port 0); `unknown node and type` is a routed DLID no port has (stale). The tables are
the ones the SM computed and set (OSM_NEW_LFT), so they match `dump_lfts` once it has run.

`opensm.fdbs` (osm_dump.c:117-237, `dump_ucast_routes`), per switch:

    dump_ucast_routes: Switch 0x<GUID>
    LID    : Port : Hops : Optimal
    0x0001 : 003  : 01   : yes
    0x0005 : 001  : 02   : No 1 hop path possible via port 2!
    0x000A : UNREACHABLE
    0x000B : 004  : HOPS UNKNOWN

No LID range, switch LID or description: the switch's LID is the DLID routed to port 0.
"""

from __future__ import annotations

import re

from auditor.errors import ParseError
from auditor.models import NO_ROUTE, ForwardingTables, LidOwner, SwitchLft, clip
from auditor.parse._common import EXAMPLE_MAX, GUID_HEX, cap_description, norm_guid, split_lines
from auditor.parse.dump_lfts import NODE_TYPES, TableBuilder

_KIND = "opensm_lfts"
_FDBS = "opensm_fdbs"

_HEADER = re.compile(
    rf"Unicast lids \[(?P<first>\d{{1,5}})-(?P<last>\d{{1,5}})\] of switch Lid (?P<lid>\d{{1,5}})"
    rf" guid 0x(?P<guid>{GUID_HEX}) \('(?P<desc>.*)'\):"
)
_ENTRY = re.compile(
    rf"0x(?P<lid>[0-9a-fA-F]{{4}}) (?P<port>\d{{3}}) # (?:(?P<type>Switch|Channel Adapter|Router"
    rf"|UNKNOWN) portguid 0x(?P<guid>{GUID_HEX}): '(?P<desc>.*)'|(?P<stale>unknown node and type))"
)
_TOTALS = re.compile(r"(?P<top>\d{1,5}) lids dumped")


def parse_opensm_lfts(text: str) -> ForwardingTables:
    """Every switch table of an `opensm-lfts.dump`, with the DLID owners it names."""
    result = ForwardingTables()
    lines = split_lines(text)
    current: TableBuilder | None = None
    for line_no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line:
            continue
        m = _ENTRY.fullmatch(line)
        if m and current is not None:
            lid, port = int(m["lid"], 16), int(m["port"])
            routed = current.add(lid, port, line_no, raw)
            if m["stale"]:
                if routed:
                    current.table.stale.append(lid)
            else:
                desc = cap_description(m["desc"], line_no, raw, result.cut)
                result.owners.setdefault(lid, LidOwner(norm_guid(m["guid"]),
                                                       NODE_TYPES.get(m["type"]), desc, lid))
            if routed:
                current.table.ports[lid] = port
            continue
        m = _TOTALS.fullmatch(line)
        if m and current is not None:
            if int(m["top"]) != current.table.last_lid:
                raise ParseError(_KIND, line_no, raw,
                                 f"the totals give top LID {m['top']}, the header "
                                 f"{current.table.last_lid}: a cut or edited capture")
            result.switches.append(current.finish())
            current = None
            continue
        m = _HEADER.fullmatch(line)
        if m:
            if current is not None:
                raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX),
                                 "a new table before the last one's totals line")
            first, last = int(m["first"]), int(m["last"])
            if first > last:
                raise ParseError(_KIND, line_no, raw, "empty LID range")
            desc = cap_description(m["desc"], line_no, raw, result.cut)
            current = TableBuilder(_KIND, line_no, raw,
                                   SwitchLft(norm_guid(m["guid"]), None, desc, first, last),
                                   header_lid=int(m["lid"]))
            continue
        raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX),
                         "not an opensm-lfts.dump line")
    if current is not None:
        raise ParseError(_KIND, current.line_no, clip(current.line, EXAMPLE_MAX),
                         "this table has no totals line: the capture was cut short")
    if not result.switches:
        raise ParseError(_KIND, 1, clip(lines[0], EXAMPLE_MAX) if lines else "",
                         "no forwarding table in the input")
    return result


_FDBS_HEADER = re.compile(rf"dump_ucast_routes: Switch 0x(?P<guid>{GUID_HEX})")
_FDBS_COLUMNS = "LID    : Port : Hops : Optimal"
_FDBS_ENTRY = re.compile(
    r"0x(?P<lid>[0-9a-fA-F]{4}) : (?:UNREACHABLE|(?P<port>\d{3})  : (?:HOPS UNKNOWN"
    r"|\d{2,3}   : (?:yes|No \d{1,3} hop path possible via port \d{1,3}!)))"
)


def parse_opensm_fdbs(text: str) -> ForwardingTables:
    """Every switch table of an `opensm.fdbs`. It names no owners and no descriptions; its
    range is 1 to the last DLID printed (it starts at 1 and prints every DLID to the top)."""
    result = ForwardingTables()
    lines = split_lines(text)
    current: TableBuilder | None = None
    columns = False

    def close() -> None:
        if current is None:
            return
        if not current.printed:
            raise ParseError(_FDBS, current.line_no, clip(current.line, EXAMPLE_MAX),
                             "a switch with no entries: a cut capture")
        current.table.last_lid = max(current.seen)
        result.switches.append(current.finish())

    for line_no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line:
            continue
        if columns:
            if line != _FDBS_COLUMNS:
                raise ParseError(_FDBS, line_no, clip(raw, EXAMPLE_MAX),
                                 "expected the table's column headers")
            columns = False
            continue
        m = _FDBS_ENTRY.fullmatch(line)
        if m and current is not None:
            lid = int(m["lid"], 16)
            port = NO_ROUTE if m["port"] is None else int(m["port"])
            if current.add(lid, port, line_no, raw):
                current.table.ports[lid] = port
            continue
        m = _FDBS_HEADER.fullmatch(line)
        if m:
            close()
            # the range is not printed: open it wide, then close it at the last DLID seen
            current = TableBuilder(_FDBS, line_no, raw,
                                   SwitchLft(norm_guid(m["guid"]), None, "", 1, 0xFFFF))
            columns = True
            continue
        raise ParseError(_FDBS, line_no, clip(raw, EXAMPLE_MAX), "not an opensm.fdbs line")
    close()
    if not result.switches:
        raise ParseError(_FDBS, 1, clip(lines[0], EXAMPLE_MAX) if lines else "",
                         "no forwarding table in the input")
    return result
