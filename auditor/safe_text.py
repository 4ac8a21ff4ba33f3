"""Fabric text made inert before a person, a terminal or a spreadsheet sees it.

Node descriptions, host names, switch and host log lines and job logs are written by whoever has
root on a host or a switch: they may hold rich markup (`[bold red]`), terminal escapes
(`\\x1b[2J`), bidi overrides, spreadsheet formulas (`=HYPERLINK(...)`) or 200 kB of padding.
The database keeps that text as it came (only its length is capped, at parse time: `clip`);
every output goes through this module:

* `inert(text, limit)` for a terminal, a table cell, an HTML page or a metric label: each
  character Python would not print as itself (`str.isprintable`: C0 and C1 controls, DEL, bidi
  and other format characters, line/paragraph separators, unusual spaces, surrogates,
  unassigned code points) becomes a visible escape such as `\\x1b` or `\\u202e`, and the text is
  cut to `limit` characters ending in an ellipsis. Rich markup is not this module's concern:
  render.py hands cells to rich as `Text`, which is never parsed for markup.
* `csv_cell(value, limit)` for one cell of every CSV we write: `inert`, and then the OWASP
  rule against formula injection: a text cell whose first character (after spaces) is one of
  `= + - @` gets a leading `'` (tab, CR and LF cannot lead any more: `inert` escaped them).
  Decision: the quote goes on every *text* cell that starts so, even one that reads as a
  negative number ("-3" from a log stays "'-3"); numbers the auditor computed itself (Python
  int/float: scores, counts, deltas) are written as they are, so a spreadsheet still sums them.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from auditor.models import clip

NAME_MAX = 128  # a node, host or device name shown to a person (IB caps NodeDescription at 64)
TEXT_MAX = 400  # any other cell: a log message, an evidence line, an action

# OWASP "CSV Injection": cells starting with these are formulas in Excel, LibreOffice and
# Google Sheets (tab, CR and LF are in the list too; `inert` has already escaped them).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(ch: str) -> str:
    if ch.isprintable():
        return ch
    code = ord(ch)
    if ch in _SHORT:
        return _SHORT[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def inert(text: object, limit: int | None = TEXT_MAX) -> str:
    """`text` (anything: str() is applied) safe to show: every non-printable character as a
    visible escape, at most `limit` characters (None: no limit) ending in an ellipsis if cut."""
    s = text if isinstance(text, str) else str(text)
    if limit is not None:
        s = s[: limit + 1]  # each character yields at least one: enough to decide on the cut
    if not s.isprintable():  # C speed for the common case: nothing to escape
        s = "".join(_escape(ch) for ch in s)
    return clip(s, limit) if limit is not None else s


def _json_default(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def finite(value: Any) -> Any:
    """`value` with every NaN and infinity (at any depth of dicts, lists and tuples) as None:
    JSON has no such numbers, and json.dumps would write a bare `NaN` no parser accepts."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_text(value: Any, indent: int | None = None, default: Any = _json_default) -> str:
    """The one JSON writer of every output (command --format json, report.json, table and CSV
    cells): non-finite numbers become null (`finite`), never `NaN`. The walk runs only when
    the fast path finds one: allow_nan=False refuses them. Indented, the text is
    `json.dumps(value, indent=indent, default=default, allow_nan=False)`'s, written by
    `_indented` (tests/test_bounds.py holds them equal)."""
    def dumps(data: Any) -> str:
        if indent is None:
            return json.dumps(data, default=default, allow_nan=False)
        return _indented(data, indent, default)

    try:
        return dumps(value)
    except ValueError:
        return dumps(finite(value))


_str_json = json.encoder.encode_basestring_ascii  # json.dumps' own (C) string writer
_int_json = int.__repr__  # what json.dumps writes for an int (an IntEnum too) and a float
_float_json = float.__repr__
_INFINITIES = (math.inf, -math.inf)


def _indented(value: Any, indent: int, default: Any) -> str:
    """json.dumps(value, indent=indent, default=default, allow_nan=False), twice as fast:
    with an indent json.dumps runs its pure-Python writer, a generator per level (0.43 s of
    the 13 MB `suspects --format json` at 65,536 GPUs, issue #25); this one appends to one
    list. A NaN or infinity is a ValueError, as there."""
    out: list[str] = []
    append = out.append
    breaks = ["\n" + " " * (indent * level) for level in range(32)]

    def newline(level: int) -> str:
        return breaks[level] if level < len(breaks) else "\n" + " " * (indent * level)

    def key_text(k: Any) -> str:
        if isinstance(k, str):
            return k
        if isinstance(k, float):
            return _number(k)
        if k is True or k is False or k is None:
            return {True: "true", False: "false", None: "null"}[k]
        if isinstance(k, int):
            return _int_json(k)
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")

    def put(o: Any, level: int) -> None:
        kind = type(o)
        if kind is str:
            append(_str_json(o))
        elif kind is int:
            append(_int_json(o))
        elif kind is float:
            append(_number(o))
        elif o is None:
            append("null")
        elif o is True:
            append("true")
        elif o is False:
            append("false")
        elif isinstance(o, str):
            append(_str_json(o))
        elif isinstance(o, int):
            append(_int_json(o))
        elif isinstance(o, float):
            append(_number(o))
        elif isinstance(o, list | tuple):
            if not o:
                append("[]")
                return
            inner = newline(level + 1)
            append("[")
            for i, item in enumerate(o):
                append(inner if not i else "," + inner)
                put(item, level + 1)
            append(newline(level))
            append("]")
        elif isinstance(o, dict):
            if not o:
                append("{}")
                return
            inner = newline(level + 1)
            append("{")
            for i, (k, item) in enumerate(o.items()):
                append(inner if not i else "," + inner)
                append(_str_json(key_text(k)))
                append(": ")
                put(item, level + 1)
            append(newline(level))
            append("}")
        else:
            put(default(o), level)

    put(value, 0)
    return "".join(out)


def _number(o: float) -> str:
    if o != o or o in _INFINITIES:
        raise ValueError("Out of range float values are not JSON compliant: " + repr(o))
    return _float_json(o)


def cell_text(value: Any) -> str:
    """A value as the text of one table or CSV cell (before `inert`): lists and dicts as JSON,
    times to the second, None as empty."""
    if value is None:
        return ""
    if isinstance(value, list | dict | tuple):
        return json_text(value)
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def csv_cell(value: Any, limit: int | None = TEXT_MAX) -> str:
    """One CSV cell: inert text, never a formula (see the module docstring for the rule).
    JSON cells (lists, dicts) are not cut: cutting would break them, and their parts are
    bounded where they are parsed."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return str(value)  # our own number: a spreadsheet may read "-3" as minus three
    if isinstance(value, list | dict | tuple):
        limit = None
    text = inert(cell_text(value), limit)
    if text.lstrip(" ").startswith(FORMULA_START):
        return "'" + text
    return text


def is_csv_safe(cell: str) -> bool:
    """What `csv_cell` guarantees: printable, and no formula at the start (tests use it)."""
    return cell.isprintable() and not cell.lstrip(" ").startswith(FORMULA_START)
