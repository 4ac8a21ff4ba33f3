"""Parse the site's cabling plan CSV: which cable (vendor, part number, serial number, length)
connects which two ports. It fills the report's part columns where no switch CLI was read.

    a_name,a_port,b_name,b_port,vendor,part_number,serial_number,length,type
    leaf04,IB1/7,spine01,IB1/4,NVIDIA,MFS1S00-H010V,MT2330FT09118,10m,AOC
    gpu-node-07,mlx5_0/1,leaf04,IB1/1,NVIDIA,MCP1650-H002E30,MT2331VS02215,2m,DAC

Ports are written as printed (IB1/7, a number, or mlx5_0/1 for an HCA). Only the four end
columns are required; the others may be empty. A bad row is a ParseError naming its line.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from auditor.errors import ParseError

_KIND = "cabling"
_REQUIRED = ("a_name", "a_port", "b_name", "b_port")
_COLUMNS = (*_REQUIRED, "vendor", "part_number", "serial_number", "length", "type")


@dataclass(frozen=True, slots=True)
class Cable:
    a_name: str
    a_port: str
    b_name: str
    b_port: str
    vendor: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    length: str | None = None
    cable_type: str | None = None
    line_no: int = 0


def parse_cabling(text: str) -> list[Cable]:
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text))
    header: dict[str, int] | None = None
    out: list[Cable] = []
    for row in reader:
        line_no = reader.line_num
        line = lines[line_no - 1] if 0 < line_no <= len(lines) else ",".join(row)
        if not row or not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            names = [c.strip().lower() for c in row]
            missing = [c for c in _REQUIRED if c not in names]
            unknown = [n for n in names if n not in _COLUMNS]
            if missing or unknown:
                raise ParseError(_KIND, line_no, line, "header needs "
                                 f"{', '.join(_REQUIRED)}" + (f"; unknown: {', '.join(unknown)}"
                                                              if unknown else ""))
            header = {n: i for i, n in enumerate(names)}
            continue
        if len(row) > len(header):
            raise ParseError(_KIND, line_no, line, f"{len(row)} fields, header has {len(header)}")
        values = {c: (row[i].strip() if i < len(row) else "") for c, i in header.items()}
        if not all(values[c] for c in _REQUIRED):
            raise ParseError(_KIND, line_no, line, "both ends need a name and a port")
        out.append(Cable(values["a_name"], values["a_port"], values["b_name"], values["b_port"],
                         values.get("vendor") or None, values.get("part_number") or None,
                         values.get("serial_number") or None, values.get("length") or None,
                         values.get("type") or None, line_no))
    if header is None and text.strip():
        raise ParseError(_KIND, 1, lines[0] if lines else "", "no header row")
    return out
