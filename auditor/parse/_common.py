"""Small helpers shared by the parser modules (GUIDs, IBTA width and speed names, lines)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from auditor.errors import ParseError
from auditor.models import clip

# infiniband-diags prints GUIDs with "%" PRIx64 in some places, so leading zeros may be missing.
GUID_HEX = r"[0-9a-fA-F]{1,16}"

WIDTHS: dict[str, str] = {
    "1x": "1X",
    "2x": "2X",
    "4x": "4X",
    "8x": "8X",
    "12x": "12X",
    "1X": "1X",
    "2X": "2X",
    "4X": "4X",
    "8X": "8X",
    "12X": "12X",
}

SPEEDS: frozenset[str] = frozenset(
    {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}
)

# iblinkinfo prints the per-lane rate; FDR10 shows as "10.0 Gbps (FDR10)" (Mellanox extension),
# and some firmware/tool versions print its real lane rate 10.3125 instead.
LANE_SPEEDS: dict[str, str] = {
    "2.5 Gbps": "SDR",
    "5.0 Gbps": "DDR",
    "10.0 Gbps": "QDR",
    "10.0 Gbps (FDR10)": "FDR10",
    "10.3125 Gbps": "FDR10",
    "14.0625 Gbps": "FDR",
    "25.78125 Gbps": "EDR",
    "53.125 Gbps": "HDR",
    "106.25 Gbps": "NDR",
    "212.5 Gbps": "XDR",
}


# IBTA caps a NodeDescription at 64 bytes; a node-name map or a tool may add a little. Anything
# longer is cut where it is parsed (the cut is counted per capture: `auditor sources`).
DESCRIPTION_MAX = 256
EXAMPLE_MAX = 200  # an example line stored with an issue


def cap_description(desc: str, line_no: int, line: str, cut: list[tuple[int, str]]) -> str:
    """`desc` cut to DESCRIPTION_MAX characters; a cut is noted in `cut` (line number, line)."""
    if len(desc) <= DESCRIPTION_MAX:
        return desc
    cut.append((line_no, clip(line, EXAMPLE_MAX)))
    return clip(desc, DESCRIPTION_MAX)


def norm_guid(hex_digits: str) -> str:
    """`b8599f0300AA01` -> `0x00b8599f0300aa01` (caller guarantees 1-16 hex digits)."""
    return "0x" + hex_digits.lower().rjust(16, "0")


def json_document(text: str, kind: str) -> Any:
    """A whole-file JSON document, or ParseError naming the line json stopped at."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        line = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
        raise ParseError(kind, exc.lineno, line, f"not JSON: {exc.msg}") from None


def split_lines(text: str) -> list[str]:
    """Split on newlines only, so line numbers match what `nl` or an editor shows."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text.split("\n")


def csv_records(text: str, kind: str, required: tuple[str, ...], allowed: tuple[str, ...]
                ) -> Iterator[tuple[int, str, dict[str, str]]]:
    """(line number, raw line, {column: stripped value}) for each data row of a CSV whose first
    row names its columns. Blank rows and rows starting with `#` are skipped. A header missing
    a required column or naming an unknown one (a misspelt name must not be silently ignored),
    a row wider than the header, or no header at all is a ParseError naming the line."""
    import csv
    import io

    from auditor.errors import ParseError

    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text))
    header: dict[str, int] | None = None
    for row in reader:
        line_no = reader.line_num
        line = lines[line_no - 1] if 0 < line_no <= len(lines) else ",".join(row)
        if not row or not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            names = [c.strip().lower() for c in row]
            missing = [c for c in required if c not in names]
            unknown = [n for n in names if n not in allowed]
            if missing or unknown:
                raise ParseError(kind, line_no, line,
                                 f"header must name {', '.join(required)} (and may name "
                                 f"{', '.join(c for c in allowed if c not in required)})"
                                 + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
            header = {n: i for i, n in enumerate(names)}
            continue
        if len(row) > len(header):
            raise ParseError(kind, line_no, line, f"{len(row)} fields, header has {len(header)}")
        yield line_no, line, {c: (row[i].strip() if i < len(row) else "")
                              for c, i in header.items()}
    if header is None and text.strip():
        raise ParseError(kind, 1, lines[0] if lines else "", "no header row")
