"""Parse the site's cabling plan CSV: which cable (vendor, part number, serial number, length)
connects which two ports. It fills the report's part columns where no switch CLI was read.

    a_name,a_port,b_name,b_port,vendor,part_number,serial_number,length,type
    leaf04,IB1/7,spine01,IB1/4,NVIDIA,MFS1S00-H010V,MT2330FT09118,10m,AOC
    gpu-node-07,mlx5_0/1,leaf04,IB1/1,NVIDIA,MCP1650-H002E30,MT2331VS02215,2m,DAC

Ports are written as printed (IB1/7, a number, or mlx5_0/1 for an HCA). Only the four end
columns are required; the others may be empty. An optional `lot` column names the cable's
manufacturing lot (date code or batch on the label or the delivery note): the outcomes' cohorts
(auditor/analyse/cohorts.py) then show a bad batch as one finding. A bad row is a ParseError
naming its line.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.errors import ParseError
from auditor.parse._common import csv_records

_KIND = "cabling"
_REQUIRED = ("a_name", "a_port", "b_name", "b_port")
_COLUMNS = (*_REQUIRED, "vendor", "part_number", "serial_number", "length", "type", "lot")


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
    lot: str | None = None  # optional column (issue #15)


def parse_cabling(text: str) -> list[Cable]:
    out: list[Cable] = []
    for line_no, line, values in csv_records(text, _KIND, _REQUIRED, _COLUMNS):
        if not all(values[c] for c in _REQUIRED):
            raise ParseError(_KIND, line_no, line, "both ends need a name and a port")
        out.append(Cable(values["a_name"], values["a_port"], values["b_name"], values["b_port"],
                         values.get("vendor") or None, values.get("part_number") or None,
                         values.get("serial_number") or None, values.get("length") or None,
                         values.get("type") or None, line_no, values.get("lot") or None))
    return out
