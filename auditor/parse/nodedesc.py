"""Node descriptions and node-name maps: turn what a device calls itself into a host name.

`describe` splits an InfiniBand NodeDescription into the host (or switch) name plus the switch
model or HCA device; `parse_node_name_map` reads the `--node-name-map` file that
infiniband-diags tools use to rename nodes by GUID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.errors import ParseError
from auditor.parse._common import GUID_HEX, norm_guid, split_lines

_KIND = "node-name-map"

# Mellanox/NVIDIA managed switches report "MF0;<hostname>:<model>/U<n>"; the /U<n> suffix is the
# ASIC index (U1, U2 on dual-ASIC systems) and is missing on some older firmware.
_SWITCH_RE = re.compile(r"^MF0;([^:;]+):([^/]+?)(?:/U\d+)?$", re.ASCII)
# Linux HCAs report "<hostname> <ibdev>"; the ibdev name depends on the driver
# (mlx4_*/mlx5_* Mellanox, hfi1_* Omni-Path, qib* QLogic, ibp* renamed by udev); sites that set
# the description themselves often write "<hostname> HCA-<n>" (issue #20: a host is its HCAs).
_HCA_RE = re.compile(r"^(\S+) ((?:mlx\d|hfi\d|qib|ibp)\S*|HCA-?\d{1,2})$", re.ASCII)

_MAP_LINE_RE = re.compile(r"^\s*0[xX](" + GUID_HEX + r")(?=[\s#]|$)\s*(.*)$", re.ASCII)


@dataclass(frozen=True, slots=True)
class NodeName:
    name: str
    model: str | None = None  # switch model, e.g. MQM8700
    device: str | None = None  # HCA device, e.g. mlx5_0


def describe(desc: str) -> NodeName:
    """Split a NodeDescription; anything unrecognised is returned whole as the name."""
    m = _SWITCH_RE.match(desc)
    if m:
        return NodeName(name=m.group(1), model=m.group(2))
    m = _HCA_RE.match(desc)
    if m:
        return NodeName(name=m.group(1), device=m.group(2))
    return NodeName(name=desc)


def parse_node_name_map(text: str) -> dict[str, str]:
    """`0x<guid> "name"` lines (the quotes are optional) -> {normalised GUID: name}.

    Blank lines and `#` comments are skipped, as libibnetdisc does. Unlike the C tools, which
    keep the first entry for a GUID silently, two different names for one GUID are an error.
    """
    result: dict[str, str] = {}
    for line_no, line in enumerate(split_lines(text), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _MAP_LINE_RE.match(line)
        if not m:
            raise ParseError(_KIND, line_no, line, "expected 0x<GUID> followed by a name")
        guid = norm_guid(m.group(1))
        rest = m.group(2)
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                raise ParseError(_KIND, line_no, line, "unterminated quoted name")
            name = rest[1:end]
            trailing = rest[end + 1 :].strip()
            if trailing and not trailing.startswith("#"):
                raise ParseError(_KIND, line_no, line, "text after the quoted name")
        else:
            name = rest.split("#", 1)[0].strip()
        if not name:
            raise ParseError(_KIND, line_no, line, "no name after the GUID")
        previous = result.get(guid)
        if previous is not None and previous != name:
            raise ParseError(_KIND, line_no, line, f"GUID already mapped to {previous!r}")
        result[guid] = name
    return result
