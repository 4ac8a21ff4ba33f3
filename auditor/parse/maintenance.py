"""Parse the maintenance-window CSV: flaps of a target inside its window are expected.

Format (read with the csv module, so quoted fields may hold commas and quotes):

    target,start,end,reason
    leaf04,2026-11-30T06:00:00Z,2026-11-30T08:00:00Z,"firmware upgrade, then reboot"
    leaf04:IB1/7,2026-11-30 09:00,2026-11-30 09:30,reseat cable
    gpu-node-07:mlx5_0/1<->leaf02:17,2026-12-01T10:00:00+01:00,2026-12-01T11:00:00+01:00,

* The first non-blank, non-comment row is the header: `target`, `start` and `end` are required,
  `reason` is optional, in any order (names are case-insensitive); any other column is refused
  so that a misspelt name is not silently ignored. Rows whose first field starts with `#` are
  comments; blank rows are skipped. An input with no rows at all gives [].
* start/end are ISO-8601 with a time of day; without a zone they are wall-clock time in `tz`
  (default UTC). Returned aware UTC. An end before its start is an error.
* `target` is kept verbatim (outer spaces trimmed) after checking it has one of these forms:
  - a host or switch name: `leaf04`, `gpu-node-07.cluster.local`;
  - a port, `device:port`, the port being a number (`17`) or a label such as `IB1/7`,
    `Eth1/1/2` or `mlx5_0/1`: `leaf04:17`, `leaf04:IB1/7`, `gpu-node-07:mlx5_0/1`;
  - a link, two ports joined by `<->`: `gpu-node-07:mlx5_0/1<->leaf02:17`. The separator is
    `<->` because host names contain `-` (so `a:1-b:2` would be ambiguous) and port labels
    contain `/`. The two ends are not reordered.
  Hostlist brackets, spaces and other forms are refused.

Every problem raises ParseError naming the line (the line where the CSV record starts).
"""

from __future__ import annotations

import csv
import re
from datetime import UTC, datetime, tzinfo

from auditor.errors import ParseError
from auditor.models import MaintenanceWindow
from auditor.parse._common import split_lines
from auditor.parse._jobs import parse_instant

_KIND = "maintenance"
_REQUIRED = ("target", "start", "end")
_ALLOWED = (*_REQUIRED, "reason")
LINK_SEPARATOR = "<->"
_DEVICE = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_PORT = r"[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*"
_DEVICE_RE = re.compile(rf"^{_DEVICE}$", re.ASCII)
_PORT_END_RE = re.compile(rf"^{_DEVICE}:{_PORT}$", re.ASCII)


def check_target(target: str) -> None:
    """Raise ValueError unless `target` is `device`, `device:port` or `a:port<->b:port`."""
    if LINK_SEPARATOR in target:
        ends = target.split(LINK_SEPARATOR)
        if len(ends) != 2 or not all(_PORT_END_RE.match(end) for end in ends):
            raise ValueError(f"link target {target!r}: expected device:port<->device:port")
        return
    if ":" in target:
        if _PORT_END_RE.match(target):
            return
        if target.count(":") == 2:
            raise ValueError(
                f"target {target!r}: a link is written device:port{LINK_SEPARATOR}device:port"
            )
        raise ValueError(f"port target {target!r}: expected device:port (e.g. leaf04:IB1/7)")
    if not _DEVICE_RE.match(target):
        raise ValueError(
            f"target {target!r}: expected a host or switch name, device:port, "
            f"or device:port{LINK_SEPARATOR}device:port"
        )


def parse_maintenance(text: str, *, tz: tzinfo = UTC) -> list[MaintenanceWindow]:
    lines = split_lines(text)
    # Line ends are given back so a quoted field spanning lines keeps its newline.
    reader = csv.reader((line + "\n" for line in lines), strict=True)
    columns: dict[str, int] | None = None
    windows: list[MaintenanceWindow] = []
    next_line = 1  # physical line where the record about to be read starts
    while True:
        line_no = next_line
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise ParseError(_KIND, line_no, lines[line_no - 1], f"bad CSV: {exc}") from None
        next_line = reader.line_num + 1
        line = "\n".join(lines[line_no - 1 : reader.line_num])
        if not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        if columns is None:
            columns = _header(row, line_no, line)
            continue
        windows.append(_window(row, columns, line_no, line, tz))
    return windows


def _header(row: list[str], line_no: int, line: str) -> dict[str, int]:
    columns: dict[str, int] = {}
    for pos, cell in enumerate(row):
        # Spreadsheets put a byte-order mark in front of the first cell.
        name = cell.strip().lstrip("\ufeff").strip().lower()
        if name not in _ALLOWED:
            raise ParseError(
                _KIND, line_no, line, f"unknown column {cell!r} (allowed: {', '.join(_ALLOWED)})"
            )
        if name in columns:
            raise ParseError(_KIND, line_no, line, f"column {name!r} given twice")
        columns[name] = pos
    missing = [c for c in _REQUIRED if c not in columns]
    if missing:
        raise ParseError(_KIND, line_no, line, f"header lacks column(s) {', '.join(missing)}")
    return columns


def _window(
    row: list[str], columns: dict[str, int], line_no: int, line: str, tz: tzinfo
) -> MaintenanceWindow:
    def cell(name: str) -> str:
        pos = columns.get(name)
        return row[pos].strip() if pos is not None and pos < len(row) else ""

    if len(row) > len(columns):
        raise ParseError(_KIND, line_no, line, f"{len(row)} fields for {len(columns)} columns")
    target = cell("target")
    if not target:
        raise ParseError(_KIND, line_no, line, "no target")
    try:
        check_target(target)
    except ValueError as exc:
        raise ParseError(_KIND, line_no, line, str(exc)) from None
    times: list[datetime] = []
    for name in ("start", "end"):
        raw = cell(name)
        if not raw:
            raise ParseError(_KIND, line_no, line, f"no {name} time")
        try:
            times.append(parse_instant(raw, tz))
        except ValueError as exc:
            raise ParseError(_KIND, line_no, line, f"{name}: {exc}") from None
    start, end = times
    if end < start:
        raise ParseError(_KIND, line_no, line, "end is before start")
    return MaintenanceWindow(target, start, end, cell("reason"), line_no)
