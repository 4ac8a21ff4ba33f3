"""The forwarding-table formats read as one ingest kind, `lfts` (issue #23): each capture is
told by its first meaningful line and read by its own parser.

- `Unicast lids [0x...` : dump_lfts.sh / dump_fts / ibroute (auditor.parse.dump_lfts);
- `Unicast lids [<decimal>...` : opensm's opensm-lfts.dump (auditor.parse.opensm_lfts);
- `dump_ucast_routes: Switch 0x...` : opensm's opensm.fdbs (auditor.parse.opensm_lfts).
"""

from __future__ import annotations

import re

from auditor.errors import ParseError
from auditor.models import ForwardingTables, clip
from auditor.parse._common import EXAMPLE_MAX
from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.opensm_lfts import parse_opensm_fdbs, parse_opensm_lfts

_KIND = "lfts"
_DUMP_LFTS = re.compile(r"Unicast lids \[0x")
_OPENSM_LFTS = re.compile(r"Unicast lids \[\d")
_FDBS = re.compile(r"dump_ucast_routes: Switch 0x")


def parse_lfts(text: str) -> ForwardingTables:
    """Every switch table of a forwarding-table capture in any of the three formats."""
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if _DUMP_LFTS.match(line):
            return parse_dump_lfts(text)
        if _OPENSM_LFTS.match(line):
            return parse_opensm_lfts(text)
        if _FDBS.match(line):
            return parse_opensm_fdbs(text)
        raise ParseError(_KIND, line_no, clip(line, EXAMPLE_MAX),
                         "not a forwarding-table dump (dump_lfts.sh, ibroute, opensm-lfts.dump "
                         "or opensm.fdbs)")
    raise ParseError(_KIND, 1, "", "no forwarding table in the input")
