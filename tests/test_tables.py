"""Text tables: the plain drawing (`_plain_table`, issue #13) is rich's drawing, character for
character, whenever it draws at all; anything it does not take goes to rich."""

from __future__ import annotations

import io
import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from auditor.report.tables import _plain_table, to_table

_ASCII = st.text(alphabet=string.printable[:95], max_size=30)  # printable ASCII, space included
_ANY = st.one_of(_ASCII, st.text(max_size=12))  # also wide, combining and control characters


def _rich(title: str | None, header: list[str], cells: list[list[str]], width: int) -> str:
    """What to_table drew before the plain drawing: rich, with to_table's settings."""
    table = Table(title=Text(title) if title is not None else None, show_lines=False,
                  header_style="bold")
    for text in header:
        table.add_column(Text(text), overflow="fold")
    for row in cells:
        table.add_row(*(Text(t) for t in row))
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(table)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data(), columns=st.integers(min_value=1, max_value=6),
       title=st.one_of(st.none(), _ANY, st.sampled_from(["ingest", " ingest", "a  b", ""])),
       width=st.integers(min_value=10, max_value=200))
@example(data=None, columns=2, title="ingest", width=17)  # exactly as wide as the console
def test_plain_drawing_is_riches(data: st.DataObject | None, columns: int, title: str | None,
                                 width: int) -> None:
    if data is None:
        header, cells = ["a", "bb"], [["ccc", ""]]
    else:
        text = st.one_of(_ASCII, _ANY) if data.draw(st.booleans()) else _ASCII
        header = data.draw(st.lists(text, min_size=columns, max_size=columns))
        cells = data.draw(st.lists(st.lists(text, min_size=columns, max_size=columns),
                                   max_size=5))
    plain = _plain_table(title, header, cells, width)
    if plain is not None:
        assert plain == _rich(title, header, cells, width)
    for cut in (-1, 0, 1):  # the edge of fitting, where rich starts to wrap
        if plain is not None:
            edge = len(plain.splitlines()[-1]) + cut
            at_edge = _plain_table(title, header, cells, edge)
            assert at_edge is None or at_edge == _rich(title, header, cells, edge)


def test_an_ingest_of_thousands_of_files_is_drawn_without_rich() -> None:
    rows = [{"file": f"/var/log/jobs/{n}.log", "kind": "joblog", "status": "ingested",
             "records": n % 7, "warnings": "2 line(s): not UTF-8" if n % 5 == 0 else None}
            for n in range(1000)]
    cells = [[r["file"], "joblog", "ingested", str(r["records"]), r["warnings"] or ""]
             for r in rows]
    header = ["file", "kind", "status", "records", "warnings"]
    drawn = to_table(rows, title="ingest", width=160)
    assert _plain_table("ingest", header, cells, 160) == drawn
    assert drawn == _rich("ingest", header, cells, 160)
