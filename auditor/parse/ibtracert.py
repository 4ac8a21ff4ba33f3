"""Parse `ibtracert` unicast traces (one, or many from `--ports-file`).

Format (rdma-core v44.0 infiniband-diags/ibtracert.c:212-259, `dump_endnode` / `dump_route`):

    From ca {0x<node GUID>} portnum 1 lid 7-7 "gpu-node-01 mlx5_0"
    [1] -> switch port {0x<GUID>}[1] lid 3-3 "MF0;leaf01:MQM8700/U1"
    [4] -> switch port {0x<GUID>}[1] lid 2-2 "MF0;spine02:MQM8700/U1"
    [2] -> ca port {0x<port GUID>}[1] lid 14-14 "gpu-node-08 mlx5_0"
    To ca {0x<node GUID>} portnum 1 lid 14-14 "gpu-node-08 mlx5_0"

- `From`/`To` print NODE GUIDs, hop lines PORT GUIDs (a switch's is its node GUID). A switch end
  prints `portnum 0`. Types are `ca`, `switch`, `router`, `iwarp rnic`, `???`.
- `-n` prints the simple form: `From {0x<GUID>}[1]`, `[1] -> {0x<GUID>}[1]`, `To {0x<GUID>}[1]`.
- A failed trace stops after the hops it found; ibexit then prints
  `ibtracert: iberror: failed: Failed to get route information` on stdout
  (ibdiag_common.c:415-434; the reason is an `ibwarn` on stderr). `--ports-file` traces each
  line's pair, stops at the first failure, and ends with `N lid/guid pairs processed from F`.
- Multicast traces (`-m`) print another form and are not read.
"""

from __future__ import annotations

import re

from auditor.errors import ParseError
from auditor.models import NodeType, Trace, TraceEnd, TraceHop, clip
from auditor.parse._common import (
    DESCRIPTION_MAX,
    EXAMPLE_MAX,
    GUID_HEX,
    norm_guid,
    split_lines,
)

_KIND = "ibtracert"

_TYPES: dict[str, NodeType | None] = {
    "ca": NodeType.HCA,
    "switch": NodeType.SWITCH,
    "router": NodeType.ROUTER,
    "iwarp rnic": None,
    "???": None,
}
_TYPE = r"(?P<type>ca|switch|router|iwarp rnic|\?\?\?)"
_LIDS = r"lid (?P<lid>\d{1,5})-(?P<last>\d{1,5}) \"(?P<desc>.*)\""
_END = re.compile(
    rf"(?P<which>From|To) (?:{_TYPE} {{0x(?P<guid>{GUID_HEX})}} portnum (?P<port>\d{{1,3}})"
    rf" {_LIDS}|{{0x(?P<sguid>{GUID_HEX})}}\[(?P<sport>\d{{1,3}})\])"
)
_HOP = re.compile(
    rf"\[(?P<out>\d{{1,3}})\] -> (?:{_TYPE} port {{0x(?P<guid>{GUID_HEX})}}\[(?P<port>\d{{1,3}})\]"
    rf" {_LIDS}|{{0x(?P<sguid>{GUID_HEX})}}\[(?P<sport>\d{{1,3}})\])"
)
_FAILED = re.compile(r"(?:\S+: )?iberror: (?:\[pid \d+\] \S+: )?failed: (?P<why>.*)")
_PAIRS = re.compile(r"\d+ lid/guid pairs processed from .*")


def _fields(m: re.Match[str]) -> tuple[NodeType | None, str, int, int | None, int | None,
                                        str | None]:
    if m["sguid"] is not None:  # the simple (-n) form
        return None, norm_guid(m["sguid"]), int(m["sport"]), None, None, None
    return (_TYPES[m["type"]], norm_guid(m["guid"]), int(m["port"]), int(m["lid"]),
            int(m["last"]), clip(m["desc"], DESCRIPTION_MAX))


def parse_ibtracert(text: str) -> list[Trace]:
    """Every trace in an ibtracert capture, in order; a failed one has `dest` None and the
    tool's reason in `error`."""
    traces: list[Trace] = []
    current: Trace | None = None
    lines = split_lines(text)
    for line_no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _HOP.fullmatch(line)
        if m:
            if current is None or current.dest is not None:
                raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX), "a hop outside a trace")
            node_type, guid, port, lid, last, desc = _fields(m)
            current.hops.append(TraceHop(int(m["out"]), node_type, guid, port, lid, last, desc))
            continue
        m = _END.fullmatch(line)
        if m:
            end = TraceEnd(*_fields(m))
            if m["which"] == "From":
                current = Trace(end)
                traces.append(current)
            elif current is None or current.dest is not None:
                raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX), "a To with no From")
            else:
                current.dest = end
            continue
        m = _FAILED.fullmatch(line)
        if m:
            why = clip(m["why"], EXAMPLE_MAX)
            if current is not None and current.dest is None and current.error is None:
                current.error = why
            else:
                current = Trace(None, error=why)
                traces.append(current)
            continue
        if _PAIRS.fullmatch(line):
            continue
        raise ParseError(_KIND, line_no, clip(raw, EXAMPLE_MAX), "not an ibtracert line")
    if not traces:
        raise ParseError(_KIND, 1, clip(lines[0], EXAMPLE_MAX) if lines else "",
                         "no trace in the input")
    return traces
