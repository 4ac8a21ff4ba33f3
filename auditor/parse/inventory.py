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

import csv
import io
from dataclasses import dataclass

from auditor.errors import ParseError

_KIND = "inventory"
_COLUMNS = ("name", "site", "row", "rack", "u", "port_labels")


@dataclass(frozen=True, slots=True)
class Location:
    name: str
    site: str | None = None
    row: str | None = None
    rack: str | None = None
    u: str | None = None
    port_labels: tuple[tuple[int, str], ...] = ()
    line_no: int = 0


def _labels(text: str, line_no: int, line: str) -> tuple[tuple[int, str], ...]:
    out = []
    for pair in filter(None, (p.strip() for p in text.split(";"))):
        port, sep, label = pair.partition("=")
        if not sep or not port.strip().isdigit() or not label.strip():
            raise ParseError(_KIND, line_no, line, f"port label {pair!r} is not port=label")
        out.append((int(port), label.strip()))
    return tuple(out)


def parse_inventory(text: str) -> list[Location]:
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text))
    header: dict[str, int] | None = None
    out: list[Location] = []
    for row in reader:
        line_no = reader.line_num
        line = lines[line_no - 1] if 0 < line_no <= len(lines) else ",".join(row)
        if not row or not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            names = [c.strip().lower() for c in row]
            unknown = [n for n in names if n not in _COLUMNS]
            if "name" not in names or unknown:
                raise ParseError(_KIND, line_no, line, "header must name columns of "
                                 f"{', '.join(_COLUMNS)} including name"
                                 + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
            header = {n: i for i, n in enumerate(names)}
            continue
        if len(row) > len(header):
            raise ParseError(_KIND, line_no, line, f"{len(row)} fields, header has {len(header)}")

        def get(col: str, row: list[str] = row, header: dict[str, int] = header) -> str | None:
            i = header.get(col)
            value = row[i].strip() if i is not None and i < len(row) else ""
            return value or None

        name = get("name")
        if name is None:
            raise ParseError(_KIND, line_no, line, "no node name")
        out.append(Location(name, get("site"), get("row"), get("rack"), get("u"),
                            _labels(get("port_labels") or "", line_no, line), line_no))
    if header is None and text.strip():
        raise ParseError(_KIND, 1, lines[0] if lines else "", "no header row")
    return out
