"""Output for people (tables) and for automation (JSON, CSV)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table

FORMATS = ("table", "json", "csv")


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=_default)


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    cols = list(columns or (rows[0].keys() if rows else []))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else _cell(row.get(k))) for k in cols})
    return buf.getvalue()


def _cell(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value, default=_default)
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def to_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
             title: str | None = None, width: int | None = None) -> str:
    """A text table laid out for `width` columns (default: the terminal's, at least 100)."""
    width = width or max(100, shutil.get_terminal_size((160, 40)).columns)
    cols = list(columns or (rows[0].keys() if rows else []))
    table = Table(title=title, show_lines=False, header_style="bold")
    for col in cols:
        table.add_column(col.replace("_", " "), overflow="fold")
    for row in rows:
        table.add_row(*("" if row.get(c) is None else _cell(row.get(c)) for c in cols))
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
        return f"{title + ': ' if title else ''}nothing to show\n"
    return to_table(rows, columns, title)
