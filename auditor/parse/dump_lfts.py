"""Parse unicast forwarding tables as infiniband-diags prints them: `dump_lfts.sh` / `dump_fts`
(every switch of the fabric) and `ibroute <lid>` (one switch).

Format (rdma-core v44.0 infiniband-diags/dump_fts.c:331-373 and ibroute.c:351-391), per switch:

    Unicast lids [0x0-0xe] of switch DR path slid 0; dlid 0; 0,1 guid 0x<GUID> (<desc>):
      Lid  Out   Destination
           Port     Info
    0x0001 003 : (Switch portguid 0x<port GUID>: '<desc>')
    0x0007 001 : (Channel Adapter portguid 0x<port GUID>: '<desc>')
    14 valid lids dumped

- The address between `switch` and `guid` is how the tool reached it: `DR path slid 0; dlid 0;
  0,1,3` (dump_fts), `Lid 3` (ibroute by LID), `DR path slid 65535; dlid 65535; 0,1` (ibroute
  -D); libibmad portid2str (libibmad/portid.c:55) may also print `Lid 3 Gid ...`. Not kept.
- An entry is `0x%04x %03u <info>`: hex DLID, decimal out port. Out port 0 is the switch itself.
  A port above the switch's port count (255: the SM's "no route") is not printed, unless `-a`:
  then the info says `(illegal port)` (`(path #0 - illegal port)` for DLID 0). `-n` prints no
  info at all (`0x0001 003 ` with a trailing space); a `-a -n` dump's 255s are the only
  no-route entries that can still be told apart.
- With LMC > 0 a port's 2nd..2^LMC-th LIDs say `(path #2 out of 2: portguid 0x...)` after the
  first, which names the port (dump_fts.c:242-258).
- A DLID that no port has (stale, kept until the SM rewrites the table): dump_fts says
  `(node info not available fabric scan)` (its fabric scan has no such LID, dump_fts.c:269),
  ibroute `(unknown node and type)` (its LID-routed query got no answer, ibroute.c:294).
- The totals line `%d valid lids dumped ` (`%d lids dumped ` with `-a`) counts the entries
  printed; a table whose count disagrees, or that has none, was cut short.
- `dump_lfts.sh` (Debian installs it as `dump_lfts`) is `dump_fts "$@"` followed by a
  `*** WARNING ***: this command has been replaced by dump_fts` trailer. Switches come in the
  order the fabric scan found them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from auditor.errors import ParseError
from auditor.models import NO_ROUTE, ForwardingTables, LidOwner, NodeType, SwitchLft, clip
from auditor.parse._common import EXAMPLE_MAX, GUID_HEX, cap_description, norm_guid, split_lines

_KIND = "dump_lfts"

_HEADER = re.compile(
    rf"Unicast lids \[0x(?P<first>[0-9a-fA-F]{{1,4}})-0x(?P<last>[0-9a-fA-F]{{1,4}})\] of switch"
    rf" (?P<addr>.*?) guid 0x(?P<guid>{GUID_HEX}) \((?P<desc>.*)\):"
)
_ADDR_LID = re.compile(r"Lid (\d{1,5})\b")
_COLUMNS = ("  Lid  Out   Destination", "       Port     Info")
_ENTRY = re.compile(r"0x([0-9a-fA-F]{4}) (\d{3}) ?(.*)")  # DLID, out port, info
_TOTALS = re.compile(r"(?P<n>\d{1,6}) (?P<valid>valid )?lids dumped")
_TRAILER = "*** WARNING ***: this command has been replaced by dump_fts"

NODE_TYPES: dict[str, NodeType] = {
    "Switch": NodeType.SWITCH,
    "Channel Adapter": NodeType.HCA,
    "Router": NodeType.ROUTER,
}
# mad_dump_node_type (libibmad/dump.c:684-703) prints "?(<n>)?" for a type it does not know
_OWNER = re.compile(
    rf": \((?P<type>Switch|Channel Adapter|Router|\?\(\d+\)\?) portguid 0x(?P<guid>{GUID_HEX}):"
    r" '(?P<desc>.*)'\)"
)
_PATH = re.compile(rf": \(path #(?P<k>\d{{1,3}}) out of (?P<n>\d{{1,3}})"
                   rf"(?:: portguid 0x(?P<guid>{GUID_HEX}))?\)")
_ILLEGAL = re.compile(r": \((?:path #\d{1,3} - )?illegal port\)")
_STALE = frozenset({": (node info not available fabric scan)", ": (unknown node and type)"})


@dataclass(slots=True)
class TableBuilder:
    """One switch's table while its lines are read (shared with auditor.parse.opensm_lfts)."""

    kind: str
    line_no: int
    line: str
    table: SwitchLft
    header_lid: int | None = None
    printed: int = 0
    seen: set[int] = field(default_factory=set)

    def add(self, lid: int, port: int, line_no: int, line: str) -> bool:
        """Count an entry; False when it is a no-route one (255). A DLID printed twice or out of
        the header's range is an error."""
        table = self.table
        if lid in self.seen:
            raise ParseError(self.kind, line_no, line, f"DLID {lid} printed twice for this switch")
        if not table.first_lid <= lid <= table.last_lid:
            raise ParseError(self.kind, line_no, line,
                             f"DLID {lid} outside the dumped range "
                             f"{table.first_lid}-{table.last_lid}")
        self.seen.add(lid)
        self.printed += 1
        return port != NO_ROUTE

    def finish(self) -> SwitchLft:
        table = self.table
        own = sorted(lid for lid, port in table.ports.items() if port == 0)
        table.lid = own[0] if own else self.header_lid
        return table


def _owner(owners: dict[int, LidOwner], lid: int, info: str, desc_cut: list[tuple[int, str]],
           line_no: int, line: str) -> bool:
    """Record whom `info` says DLID `lid` belongs to; False when the info is not an owner."""
    m = _OWNER.fullmatch(info)
    if m:
        desc = cap_description(m["desc"], line_no, line, desc_cut)
        node_type = NODE_TYPES.get(m["type"])
        owners.setdefault(lid, LidOwner(norm_guid(m["guid"]), node_type, desc, lid))
        return True
    m = _PATH.fullmatch(info)
    if m:
        k, n = int(m["k"]), int(m["n"])
        base = lid - (k - 1)
        first = owners.get(base)
        if k < 1 or n < k or n & (n - 1):
            raise ParseError(_KIND, line_no, line, "LMC path number out of range")
        if first is not None and first.base_lid == base:
            widened = LidOwner(first.port_guid, first.node_type, first.description, base, n)
            owners[base] = widened
            owners[lid] = widened
        return True
    return False


def parse_dump_lfts(text: str) -> ForwardingTables:
    """Every switch table of a `dump_lfts.sh` / `dump_fts` / `ibroute` capture (one or more
    unicast tables), with the DLID owners their info column named."""
    result = ForwardingTables()
    lines = split_lines(text)
    current: TableBuilder | None = None
    columns = 0  # column-header lines still expected after a table header
    # A fabric's dump repeats each DLID's info on every switch (4,096 hosts: 824,000 lines,
    # 192 times each): an info already read for that DLID is not read again.
    info_read: dict[int, str] = {}
    entry = _ENTRY.fullmatch
    # the table being read, as locals (the loop runs once a line)
    seen: set[int] = set()
    ports: dict[int, int] = {}
    first = last = 0
    for line_no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line:
            continue
        if current is not None and columns:
            if line != _COLUMNS[len(_COLUMNS) - columns]:
                raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX),
                                 "expected the table's column headers")
            columns -= 1
            continue
        if current is not None and (m := entry(line)):
            hexlid, decport, info = m.group(1, 2, 3)
            lid, port = int(hexlid, 16), int(decport)
            if lid in seen or not first <= lid <= last:
                current.add(lid, port, line_no, raw)  # raises, saying which
            seen.add(lid)
            routed = port != NO_ROUTE
            if not info or info_read.get(lid) == info:
                pass
            elif _ILLEGAL.fullmatch(info):
                routed = False
            elif info in _STALE:
                if routed:
                    current.table.stale.append(lid)
            elif _owner(result.owners, lid, info, result.cut, line_no, raw):
                info_read[lid] = info
            else:
                raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX),
                                 "unknown destination info")
            if routed:
                ports[lid] = port
            continue
        m = _TOTALS.fullmatch(line)
        if m and current is not None:
            current.printed = len(seen)
            if int(m["n"]) != current.printed:
                raise ParseError(_KIND, line_no, raw,
                                 f"the totals say {m['n']} entries but {current.printed} were "
                                 "printed: a cut or edited capture")
            result.switches.append(current.finish())
            current = None
            continue
        m = _HEADER.fullmatch(line)
        if m:
            if current is not None:
                raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX),
                                 "a new table before the last one's totals line")
            first, last = int(m["first"], 16), int(m["last"], 16)
            if first > last:
                raise ParseError(_KIND, line_no, raw, "empty LID range")
            desc = cap_description(m["desc"], line_no, raw, result.cut)
            addr_lid = _ADDR_LID.match(m["addr"])
            current = TableBuilder(_KIND, line_no, raw,
                                   SwitchLft(norm_guid(m["guid"]), None, desc, first, last),
                                   header_lid=int(addr_lid[1]) if addr_lid else None)
            seen, ports = current.seen, current.table.ports
            columns = len(_COLUMNS)
            continue
        if line == _TRAILER and current is None:
            continue
        reason = ("multicast tables are not read (run without -M)"
                  if line.startswith("Multicast mlids") else "not a unicast forwarding table line")
        raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX), reason)
    if current is not None:
        raise ParseError(_KIND, current.line_no, clip(current.line, EXAMPLE_MAX),
                         "this table has no totals line: the capture was cut short")
    if not result.switches:
        raise ParseError(_KIND, 1, clip(lines[0], EXAMPLE_MAX) if lines else "",
                         "no forwarding table in the input")
    return result
