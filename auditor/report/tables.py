"""Output for people (tables) and for automation (JSON, CSV).

Every table and CSV cell is inert text (auditor/safe_text.py): names and messages come from the
fabric, and neither rich markup, terminal escapes nor spreadsheet formulas in them take effect.
Tables get rich `Text` cells (never parsed for markup); JSON is left as it is (json.dumps
escapes control characters itself).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from auditor.safe_text import NAME_MAX, TEXT_MAX, cell_text, csv_cell, inert


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=_default)


def cell_limit(column: str) -> int:
    """How many characters a cell of `column` shows: a name column (`name`, `a_name`,
    `device`, ...) holds one node's name, any other a label, a message or a number."""
    key = column.lower()
    return NAME_MAX if key.endswith("name") or key in _NAME_COLUMNS else TEXT_MAX


_NAME_COLUMNS = frozenset({"device", "host", "peer_device", "switch", "node"})


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    cols = list(columns or (rows[0].keys() if rows else []))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_cell(c) for c in cols])
    limits = [cell_limit(c) for c in cols]
    for row in rows:
        writer.writerow([csv_cell(row.get(c), n) for c, n in zip(cols, limits, strict=True)])
    return buf.getvalue()


def to_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
             title: str | None = None, width: int | None = None) -> str:
    """A text table laid out for `width` columns (default: the terminal's, at least 100)."""
    # rich costs 30 ms to import; JSON and CSV output never need it (issue #13)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    width = width or max(100, shutil.get_terminal_size((160, 40)).columns)
    cols = list(columns or (rows[0].keys() if rows else []))
    table = Table(title=Text(inert(title)) if title is not None else None, show_lines=False,
                  header_style="bold")
    for col in cols:
        table.add_column(Text(inert(col.replace("_", " "))), overflow="fold")
    limits = [cell_limit(c) for c in cols]
    for row in rows:
        table.add_row(*(Text(inert(cell_text(row.get(c)), n))
                        for c, n in zip(cols, limits, strict=True)))
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(table)
    out = console.file.getvalue() if isinstance(console.file, io.StringIO) else ""
    return out


def render_rows(rows: Sequence[dict[str, Any]], fmt: str, columns: Sequence[str] | None = None,
                title: str | None = None) -> str:
    if fmt == "json":
        return to_json(list(rows))
    if fmt == "csv":
        return to_csv(rows, columns)
    if not rows:
        return f"{inert(title) + ': ' if title else ''}nothing to show\n"
    return to_table(rows, columns, title)
