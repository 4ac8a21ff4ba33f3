"""The Parquet export (issue #15): a day of a table, rows the analysis made, reading an
export's files back; and the database's identity that export records.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from auditor import sql
from auditor.errors import AuditorError
from auditor.store.connection import CONNECT_CONFIG, Connection, duckdb, utc_naive

# what `auditor export` writes -> the statement (queries/<name>.sql) that writes it
_EXPORTED = {"nodes": "export_nodes", "links": "export_links", "port_events": "export_port_events",
             "counters": "export_counters", "jobs": "export_jobs", "flaps": "export_flaps",
             "suspects": "export_suspects", "outcomes": "export_outcomes"}


def literal_path(path: Path) -> str:
    """`path` as DuckDB's file readers take it literally: they expand `*`, `?` and `[...]` as
    a glob anywhere in a path (a folder `d[1]` reads `d1`, `fabric=*` every fabric), and take
    a one-character class as that character (checked on DuckDB 2.0.1:
    tests/test_export_hostile.py). Hive partitioning is switched off by each query."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in str(path))


_ERRNO = re.compile(r'"errno"\s*:\s*"?(\d{1,4})')


@contextmanager
def _file_errors() -> Iterator[None]:
    """DuckDB's IOException of a file it writes as an OSError carrying the system's reason
    (`IO Error: Cannot open file "/x/y": Operation not permitted` -> "Operation not
    permitted"), so the caller reports it as any other write error (issue #21)."""
    try:
        yield
    except duckdb.IOException as exc:
        text = str(exc).strip()
        # DuckDB 1.x-2.0 puts errno in a JSON tail when it has one ("Async write failed ...:
        # {...,"errno":"28"}" for a full disk), else ends the message with strerror.
        code = _ERRNO.search(text)
        if code is not None:
            raise OSError(int(code[1]), os.strerror(int(code[1]))) from None
        last = text.splitlines()[0].rpartition(": ")[2] if text else ""
        raise OSError(errno.EIO, last or "I/O error") from None


class ExportQueries(Connection):
    """Parquet export and the database's identity."""

    def identity(self) -> str:
        """This database's id (a UUID written when it was created, migration 0013): export
        records it with each fabric's partitions, so two databases never share one silently."""
        rows = self.run("database_identity")
        if not rows or not rows[0][0]:
            raise AuditorError(f"{self.path}: the database has no identity (its "
                               "database_identity table is empty)")
        return str(rows[0][0])

    # -- export (issue #15) -----------------------------------------------------------------

    def export_day(self, table: str, day: datetime, path: Path) -> None:
        """Write the rows of `table` (nodes, links, port_events, counters, jobs) of the UTC day
        starting at `day` as one Parquet file at `path` (queries/export_<table>.sql). A file
        that cannot be written is an OSError whose strerror is the system's reason."""
        with _file_errors():
            self.run(_EXPORTED[table], day=utc_naive(day), path=str(path))

    def export_rows(self, table: str, columns: dict[str, list[Any]], path: Path) -> None:
        """Write rows the analysis made (flaps, suspects), given as columns, as one Parquet file
        at `path` (queries/export_<table>.sql names and types the columns); OSError as above."""
        with _file_errors():
            self.run(_EXPORTED[table], path=str(path), **columns)

    @staticmethod
    def read_export_files(query: str, files: Sequence[tuple[Path, dict[str, Any]]]
                          ) -> list[list[dict[str, Any]] | str]:
        """Run queries/<query>.sql over each Parquet file of an export (`$file`) with that
        file's own parameters, in one in-memory DuckDB (no database file is opened). Per file,
        its rows, or why it could not be read: a corrupt or foreign file is the caller's
        warning, and the others are still read. The path is handed over literally
        (`literal_path`), never as a glob."""
        con = duckdb.connect(config=CONNECT_CONFIG)
        out: list[list[dict[str, Any]] | str] = []
        try:
            text = sql.load(query)
            for path, params in files:
                try:
                    cur = con.execute(text, {**params, "file": literal_path(path)})
                    cols = [d[0] for d in cur.description or []]
                    out.append([dict(zip(cols, row, strict=True)) for row in cur.fetchall()])
                except duckdb.Error as exc:
                    lines = str(exc).strip().splitlines()
                    out.append(lines[0][:300] if lines else type(exc).__name__)
        finally:
            con.close()
        return out
