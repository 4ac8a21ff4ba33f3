"""Output for people (tables) and for automation (JSON, CSV).

Every table and CSV cell is inert text (auditor/safe_text.py): names and messages come from the
fabric, and neither rich markup, terminal escapes nor spreadsheet formulas in them take effect.
Tables get rich `Text` cells (never parsed for markup); JSON is left as it is (json.dumps
escapes control characters itself).
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from auditor.safe_text import NAME_MAX, TEXT_MAX, cell_text, csv_cell, inert, json_text


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def to_json(data: Any) -> str:
    """Every JSON document the auditor writes (commands' --format json, report.json): NaN and
    infinities as null (auditor.safe_text.json_text)."""
    return json_text(data, indent=2, default=_default)


def cell_limit(column: str) -> int:
    """How many characters a cell of `column` shows: a name column (`name`, `a_name`,
    `device`, ...) holds one node's name, any other a label, a message or a number."""
    key = column.lower()
    return NAME_MAX if key.endswith("name") or key in _NAME_COLUMNS else TEXT_MAX


_NAME_COLUMNS = frozenset({"device", "host", "peer_device", "switch", "node"})


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    cols = list(columns or (rows[0].keys() if rows else []))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_cell(c) for c in cols])
    limits = [cell_limit(c) for c in cols]
    for row in rows:
        writer.writerow([csv_cell(row.get(c), n) for c, n in zip(cols, limits, strict=True)])
    return buf.getvalue()


def _plain_table(title: str | None, header: list[str], cells: list[list[str]],
                 width: int) -> str | None:
    """The table exactly as rich draws it (below), when nothing in it needs rich: every text
    one line of printable ASCII (a terminal cell per character), a title without surrounding
    spaces (rich trims those) and every row fitting `width`, so no column is wrapped; else
    None. rich takes 0.3 ms a row: 2 s for the table of a 6,105-file ingest (issue #13).
    tests/test_tables.py holds the two to the same output."""
    texts = [header, *cells]
    if not header or not cells or not all(t.isascii() and t.isprintable()
                                          for row in texts for t in row):
        return None
    sizes = [max(map(len, column)) for column in zip(*texts, strict=True)]
    total = sum(sizes) + 3 * len(sizes) + 1  # a space either side of each cell, the rules
    if total > width:
        return None
    lines = []
    if title is not None:
        if not (title.isascii() and title.isprintable() and title == title.strip()
                and 0 < len(title) <= total):
            return None
        left = (total - len(title)) // 2
        lines.append(" " * left + title + " " * (total - len(title) - left))
    # rich's default box (HEAVY_HEAD): heavy lines around the header, light ones below it
    lines.append("\u250f" + "\u2533".join("\u2501" * (n + 2) for n in sizes) + "\u2513")
    lines.append("\u2503 " + " \u2503 ".join(t.ljust(n) for t, n in zip(header, sizes,
                                                                      strict=True)) + " \u2503")
    lines.append("\u2521" + "\u2547".join("\u2501" * (n + 2) for n in sizes) + "\u2529")
    lines += ["\u2502 " + " \u2502 ".join(t.ljust(n) for t, n in zip(row, sizes, strict=True))
              + " \u2502" for row in cells]
    lines.append("\u2514" + "\u2534".join("\u2500" * (n + 2) for n in sizes) + "\u2518")
    return "\n".join(lines) + "\n"


def to_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None,
             title: str | None = None, width: int | None = None) -> str:
    """A text table laid out for `width` columns (default: the terminal's, at least 100)."""
    width = width or max(100, shutil.get_terminal_size((160, 40)).columns)
    cols = list(columns or (rows[0].keys() if rows else []))
    limits = [cell_limit(c) for c in cols]
    shown_title = inert(title) if title is not None else None
    header = [inert(col.replace("_", " ")) for col in cols]
    cells = [[inert(cell_text(row.get(c)), n) for c, n in zip(cols, limits, strict=True)]
             for row in rows]
    plain = _plain_table(shown_title, header, cells, width)
    if plain is not None:
        return plain
    # rich costs 30 ms to import; JSON and CSV output never need it (issue #13)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(shown_title) if shown_title is not None else None,
                  show_lines=False, header_style="bold")
    for text in header:
        table.add_column(Text(text), overflow="fold")
    for row_cells in cells:
        table.add_row(*(Text(t) for t in row_cells))
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(table)
    out = console.file.getvalue() if isinstance(console.file, io.StringIO) else ""
    return out


def render_rows(rows: Sequence[Mapping[str, Any]], fmt: str, columns: Sequence[str] | None = None,
                title: str | None = None) -> str:
    if fmt == "json":
        return to_json(list(rows))
    if fmt == "csv":
        return to_csv(rows, columns)
    if not rows:
        return f"{inert(title) + ': ' if title else ''}nothing to show\n"
    return to_table(rows, columns, title)
