"""One DuckDB file open: connecting (busy retry, read-only, refusing a newer schema), the
migrations, transactions, a second connection for background reads, and running a statement
of queries/ by name. The subjects' queries (auditor/store/*.py) are methods of mixins on top.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

if TYPE_CHECKING:
    import duckdb
else:
    try:
        # duckdb >= 2.0 is a Python package (`duckdb`) around the engine (`_duckdb`). The
        # package's __init__ builds 36 dataclasses and reads its own version from the installed
        # metadata: 40-50 ms of every command, a tenth of `suspects --since 24h` (issue #13).
        # Connections, queries, errors and registering numpy columns are the engine's own (the
        # package adds Arrow and polars scans, which nothing here registers).
        import _duckdb as duckdb
    except ImportError:  # duckdb 1.x: the engine lives inside the package
        import duckdb

from auditor import sql
from auditor.config import DEFAULT_BUSY_TIMEOUT_S
from auditor.errors import AuditorError, DatabaseBusyError
from auditor.models import CounterTable

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["CONNECT_CONFIG", "Connection", "duckdb", "naive_or_none", "utc_naive"]

_T = TypeVar("_T")


def naive_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else utc_naive(moment)


def utc_naive(moment: datetime) -> datetime:
    """The store's time form: UTC without tzinfo."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


# Never fetch or load an extension because of what a file looks like: a SQLite file given as
# --db would otherwise make DuckDB download its sqlite extension and attach the file.
CONNECT_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")


class Connection:
    """One DuckDB file open (the base of auditor.store.Store, whose docstring says how)."""

    def __init__(self, path: Path | str, read_only: bool = False,
                 busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._in_transaction = False
        self._pool: ThreadPoolExecutor | None = None
        self._busy_timeout_s = busy_timeout_s
        if read_only and not self.path.exists():
            raise AuditorError(f"{self.path}: no such database (run 'auditor ingest' first)")
        self._con = self._connect(read_only)
        try:
            found = self._refuse_newer()
            if not read_only:
                self._migrate()
            elif found < self.latest_version():
                # An older database opened by a read-only command: upgrade it once, then go on
                # read-only (migrations only add tables and columns).
                self._con.close()
                self._con = self._connect(read_only=False)
                self._migrate()
                self._con.close()
                self._con = self._connect(read_only=True)
        except BaseException:
            self._con.close()
            raise

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        try:
            with self.path.open("rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except OSError:
            head = b""  # missing (a new database) or unreadable: DuckDB says which
        if head == _SQLITE_MAGIC:
            raise AuditorError(f"{self.path}: not a DuckDB database (it is a SQLite file)")
        deadline = time.monotonic() + max(self._busy_timeout_s, 0.0)
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only,
                                      config=CONNECT_CONFIG)
            except duckdb.Error as exc:
                text = str(exc)
                if "Could not set lock" not in text:
                    if "not a valid DuckDB database" in text:
                        raise AuditorError(f"{self.path}: not a DuckDB database") from None
                    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
                    raise AuditorError(f"{self.path}: cannot open database: {first}") from exc
                left = deadline - time.monotonic()
                if left > 0:
                    time.sleep(min(0.2, left))
                    continue
                m = _LOCK_HOLDER.search(text)
                who = (f"pid {m['pid']} ({Path(m['exe']).name})" if m
                       else "another process")
                raise DatabaseBusyError(
                    f"{self.path}: database busy: {who} holds it; gave up after "
                    f"{self._busy_timeout_s:g} s ([store] busy_timeout_s)") from None

    def _refuse_newer(self) -> int:
        """The database's schema version, if this code knows it."""
        found, known = self.schema_version(), self.latest_version()
        if found > known:
            raise AuditorError(
                f"{self.path}: the database is from a newer auditor (schema version {found}; "
                f"this one knows up to {known}); upgrade the auditor, nothing was changed")
        return found

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # its queries use this connection's database
            self._pool = None
        self._con.close()

    def in_background(self, work: Callable[[Self], _T]) -> Future[_T]:
        """Run `work` (reads only) on a second connection to this database in a worker thread,
        while the caller goes on. DuckDB runs a query without holding the GIL, so its scan
        overlaps the caller's Python: a `suspects` asks for the counters and the jobs while it
        builds the fabric (issue #13). Inside a transaction the work runs here and now (a
        second connection would not see what the transaction wrote)."""
        from concurrent.futures import Future, ThreadPoolExecutor

        if self._in_transaction:
            done: Future[_T] = Future()
            try:
                done.set_result(work(self))
            except Exception as exc:  # noqa: BLE001 - handed to whoever asks for the result
                done.set_exception(exc)
            return done
        if self._pool is None:
            # Two: one read does not queue behind another (the BER's data counters waited
            # 120 ms for the month's failed jobs in `suspects --since 30d` with one).
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="auditor-store")
        twin = copy.copy(self)
        twin._con, twin._pool = self._con.cursor(), None

        def run() -> _T:
            try:
                return work(twin)
            finally:
                twin._con.close()

        return self._pool.submit(run)

    # -- schema -------------------------------------------------------------------------------

    def schema_version(self) -> int:
        """0 for a new database. Called at open only, outside any transaction (a failed
        statement would end one)."""
        # Asked directly: looking the table up in the catalog first (information_schema or
        # duckdb_tables()) cost 6-8 ms on every command's open, twice (issue #13).
        try:
            ver = self._con.execute("select max(version) from schema_version").fetchone()
        except duckdb.CatalogException:
            return 0
        return int(ver[0]) if ver and ver[0] is not None else 0

    @staticmethod
    def latest_version() -> int:
        return max([1, *(v for v, _ in sql.migrations())])

    def _migrate(self) -> None:
        current = self.schema_version()
        steps: list[tuple[int, str]] = []
        if current < 1:
            steps.append((1, "schema"))
        steps.extend((v, name) for v, name in sql.migrations() if v > current)
        if current < 1:
            # A new database takes every step in one transaction: a commit each was 0.035 s of
            # the 0.07 s a first `ingest` spends creating it (issue #13); all or nothing as well.
            # Its steps' statements go to DuckDB in one call (one parse and plan per call: 17
            # calls were 0.03 s more of a first `ingest`, issue #25).
            with self.transaction():
                self._con.execute("\n;\n".join(sql.load(name) for _, name in steps))
                self._con.execute(
                    "insert into schema_version select unnest($v), $at",
                    {"v": [version for version, _ in steps], "at": utc_naive(datetime.now(UTC))},
                )
                for version, _ in steps:
                    self._migrated(version)
            return
        for version, name in steps:
            with self.transaction():
                self._migrate_step(version, name)

    def _migrate_step(self, version: int, name: str) -> None:
        self._con.execute(sql.load(name))
        self._con.execute(
            "insert into schema_version values ($v, $at)",
            {"v": version, "at": utc_naive(datetime.now(UTC))},
        )
        self._migrated(version)

    def _migrated(self, version: int) -> None:
        """What a subject does once a migration step is applied (inside its transaction)."""

    def _rolled_back(self) -> None:
        """What a subject forgets when a transaction is rolled back."""

    # -- plumbing -----------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing: everything written inside is kept only if the block finishes.
        Nested blocks join the outermost one, so a command spanning several ingests is one."""
        if self._in_transaction:
            yield
            return
        self._con.execute("begin transaction")
        self._in_transaction = True
        try:
            yield
        except BaseException:
            self._con.execute("rollback")
            self._rolled_back()
            raise
        finally:
            self._in_transaction = False
        self._con.execute("commit")

    def run(self, query: str, /, **params: Any) -> list[tuple[Any, ...]]:
        """Run queries/<name>.sql with DuckDB named parameters and return all rows."""
        return self._con.execute(sql.load(query), params).fetchall()

    def check_query(self, query: str) -> None:
        """Bind queries/<query>.sql against this database's schema without running it (every
        table and column it names must exist); raises duckdb.Error when it does not. The
        columns registered at run time (counter_batch, the topology batches) are registered empty
        meanwhile."""
        from auditor.store.columns import counter_columns, empty_topology_batches

        batches = {"counter_batch": counter_columns(CounterTable([], [], [], [], [])),
                   **empty_topology_batches()}
        for name, columns in batches.items():
            self._con.register(name, columns)
        try:
            self._con.execute("prepare _check_query as " + sql.load(query).strip().rstrip(";"))
            self._con.execute("deallocate _check_query")
        finally:
            for name in batches:
                self._con.unregister(name)

    def run_numpy(self, query: str, /, **params: Any) -> dict[str, Any]:
        """Run queries/<name>.sql and return its columns as numpy arrays (masked where a
        column holds NULL): numbers by the million without a Python object each."""
        return dict(self._con.execute(sql.load(query), params).fetchnumpy())

    def run_dicts(self, query: str, /, **params: Any) -> list[dict[str, Any]]:
        cur = self._con.execute(sql.load(query), params)
        cols = [d[0] for d in cur.description or []]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

