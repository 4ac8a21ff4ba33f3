"""Parse the site inventory CSV: where each node sits, and faceplate labels of its ports.

Format (csv module; quoted fields may hold commas):

    name,site,row,rack,u,port_labels
    leaf04,DC1,R12,R12-04,38,"7=IB1/7;8=IB1/8"
    gpu-node-07,DC1,R12,R12-05,12,

`name` is the node's name in the fabric (switch hostname or host name). Only `name` is
required; the other columns may be missing or empty. `port_labels` overrides what is printed on
the faceplate for some ports (`port=label` pairs joined by `;`), for chassis whose labels are
not `IB1/<port>` (director switches, split ports). A bad row is a ParseError naming its line.
"""

from __future__ import annotations

from auditor.errors import ParseError
from auditor.models import Location
from auditor.parse._common import csv_records

_KIND = "inventory"
_COLUMNS = ("name", "site", "row", "rack", "u", "port_labels")


def _labels(text: str, line_no: int, line: str) -> tuple[tuple[int, str], ...]:
    out = []
    for pair in filter(None, (p.strip() for p in text.split(";"))):
        port, sep, label = pair.partition("=")
        if not sep or not port.strip().isdigit() or not label.strip():
            raise ParseError(_KIND, line_no, line, f"port label {pair!r} is not port=label")
        out.append((int(port), label.strip()))
    return tuple(out)


def parse_inventory(text: str) -> list[Location]:
    out: list[Location] = []
    for line_no, line, values in csv_records(text, _KIND, ("name",), _COLUMNS):
        if not values["name"]:
            raise ParseError(_KIND, line_no, line, "no node name")
        out.append(Location(values["name"], values.get("site") or None,
                            values.get("row") or None, values.get("rack") or None,
                            values.get("u") or None,
                            _labels(values.get("port_labels") or "", line_no, line), line_no))
    return out
