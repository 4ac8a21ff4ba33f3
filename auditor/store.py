"""The DuckDB store: the only module that talks to DuckDB.

Every statement lives in queries/<name>.sql. Times are stored as naive UTC timestamps.
"""

from __future__ import annotations

import copy
import errno
import json
import logging
import os
import re
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

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
from auditor.models import (
    CounterTable,
    Fabric,
    FabricNode,
    HostAddress,
    HostEvent,
    JobError,
    JobTable,
    LaneReading,
    Link,
    Location,
    MaintenanceWindow,
    NodeType,
    OpticsReading,
    Port,
    PortEvent,
)

if TYPE_CHECKING:
    import numpy.typing as npt

_log = logging.getLogger(__name__)


# what `auditor export` writes -> the statement (queries/<name>.sql) that writes it
_EXPORTED = {"nodes": "export_nodes", "links": "export_links", "port_events": "export_port_events",
             "counters": "export_counters", "jobs": "export_jobs", "flaps": "export_flaps",
             "suspects": "export_suspects", "outcomes": "export_outcomes"}


# the columns of one remembered suspect (queries/remembered_suspects_insert.sql), issue #15
_REMEMBERED = ("rank", "component", "a_guid", "a_port", "a_name", "b_guid", "b_port", "b_name",
               "score", "points", "rules", "rule_points", "first_at", "last_at", "flaps",
               "jobs_failed", "gpu_hours_lost", "job_ids", "job_died_at", "job_gpu_hours")


@dataclass(frozen=True, slots=True)
class SourceMeta:
    """What the store records about one ingested file."""

    kind: str
    path: str
    sha256: str
    origin: str
    observed_at: datetime
    explicit_at: bool
    lines_total: int
    lines_unparsed: int
    records: int
    # What besides the content changes the result (kind, job, year, zone, ...: JSON text).
    options: str | None = None


@dataclass(frozen=True, slots=True)
class JobLogMeta:
    """What the store records about one job log beside its failure lines."""

    source_id: int
    job_id: str | None
    hosts: frozenset[str]
    first_at: datetime | None
    last_at: datetime | None
    written_at: datetime | None
    nccl_versions: tuple[str, ...]
    ib_timeout: int | None
    ib_retry_cnt: int | None
    # (host as printed, HCA) of the log's `NET/IB : Using` lists; NCCL_IB_HCA as printed
    using: frozenset[tuple[str, str]] = frozenset()
    ib_hca: str | None = None


def _naive_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else utc_naive(moment)


def utc_naive(moment: datetime) -> datetime:
    """The store's time form: UTC without tzinfo."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_NAT = -(2**63)  # numpy's NaT as int64
Placement = tuple[str | None, int | None, str | None, int | None]  # guid, port, peer guid, port


# Port events reach DuckDB as numpy columns of a registered relation: DuckDB scans those in C,
# where list parameters cost a Python-to-Value conversion per field (4x slower at 50,000 events).
# numpy is imported here, not at the top: the read-only commands start 0.1 s sooner without it.

def _events_columns(events: Sequence[PortEvent],
                    placed: Sequence[Placement] | None) -> dict[str, npt.NDArray[Any]]:
    import numpy as np

    if placed is None:
        placed = [(e.guid, e.port, e.peer_guid, e.peer_port) for e in events]
    ints = {
        "line_no": [e.line_no for e in events],
        "event_us": [(e.at - _EPOCH) // _MICROSECOND for e in events],
    }
    objects = {
        "state": [e.state for e in events],
        "device": [e.device for e in events],
        "port_name": [e.port_name for e in events],
        "guid": [p[0] for p in placed],
        "port": [p[1] for p in placed],  # ints or None: an object column keeps the NULLs
        "peer_device": [e.peer_device for e in events],
        "peer_port_name": [e.peer_port_name for e in events],
        "peer_guid": [p[2] for p in placed],
        "peer_port": [p[3] for p in placed],
        "cable_serial": [e.cable_serial for e in events],
        "code": [e.code for e in events],
        "message": [e.message for e in events],
    }
    columns = {k: np.array(v, dtype=np.int64) for k, v in ints.items()}
    columns.update((k, np.array(v, dtype=object)) for k, v in objects.items())
    return columns


# Jobs take the same road: a month of sacct is 100,000 jobs on 1.2 million (job, host) pairs,
# and as list parameters they took 4.0 s of CPU (the pairs most of it). Registered, with each
# job's hosts one string (`JobTable.nodes_joined`) that DuckDB splits into rows: 0.55 s, the
# commit included.

def _micros(moments: Sequence[datetime | None]) -> npt.NDArray[Any]:
    """Aware times as datetime64[us] (UTC), None as NaT, which DuckDB reads as NULL."""
    import numpy as np

    micros = [(m - _EPOCH) // _MICROSECOND if m is not None else _NAT for m in moments]
    return np.array(micros, dtype=np.int64).view("datetime64[us]")


def _jobs_columns(jobs: JobTable) -> dict[str, npt.NDArray[Any]]:
    import numpy as np

    columns = {"start_at": _micros(jobs.start), "end_at": _micros(jobs.end),
               "line_no": np.array(jobs.line_no, dtype=np.int64)}
    objects: dict[str, Sequence[object]] = {
        "job_id": jobs.job_id, "state": jobs.state, "nodes": jobs.nodes_joined,
        "name": jobs.name, "partition": jobs.partition, "gpus": jobs.gpus,
        "exit_code": jobs.exit_code}
    columns.update((k, np.array(v, dtype=object)) for k, v in objects.items())
    return columns


def _split_hosts(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs queries' `hosts`, one sorted comma-joined string (NULL: none), as a list: a
    month's 155,000 names cost DuckDB ~13 ms of CPU more as lists than as 13,000 strings split
    here (issue #13). A stored host name never holds a comma (JobTable.append)."""
    for job in jobs:
        joined = job["hosts"]
        job["hosts"] = joined.split(",") if joined is not None else []
    return jobs


# Counter readings reach DuckDB the same way: a full `ibqueryerrors --data` snapshot of 12,288
# links (98,000 readings) took 0.22 s as list parameters, 0.02 s as these columns. Ports are
# int64 with -1 for NULL (the switch aggregate; a parsed port is never negative): an object
# column of ints and Nones costs DuckDB a Python conversion per reading (+10 ms).
_NO_PORT = -1


def _counter_columns(table: CounterTable) -> dict[str, npt.NDArray[Any]]:
    import numpy as np

    counts = np.array(table.counts, dtype=np.int64)
    ports = [_NO_PORT if p is None else p for p in table.ports]
    try:
        values = np.array(table.values, dtype=np.int64)
    except OverflowError:
        raise AuditorError(f"a counter value over {2**63 - 1} (the store keeps 64-bit "
                           "signed values)") from None
    return {"guid": np.repeat(np.array(table.guids, dtype=object), counts),
            "port": np.repeat(np.array(ports, dtype=np.int64), counts),
            "counter": np.array(table.names, dtype=object), "value": values}


# Never fetch or load an extension because of what a file looks like: a SQLite file given as
# --db would otherwise make DuckDB download its sqlite extension and attach the file.
_CONNECT_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")


# fabric_cache (schema 14, issue #21): the newest snapshot as typed columns whose reading
# allocates only from the bytes actually there. `lookup` is JSON text, [strings, numbers]: every
# distinct text and number of the snapshot once. Each table is a BLOB of unsigned 32-bit
# little-endian indexes into those lists, column by column; its row count is its length over
# 4 x its columns, so nothing in it claims a count. A column of kind _S or _N indexes the
# strings or numbers; _S0 and _N0 index [None, *list] (0 is null): a cell is its column's type
# by construction, and an index outside the list is an IndexError. A marshal body (schema 11)
# was as fast to read, but marshal allocates a list from the count its bytes claim (a 5-byte
# body claiming 2**31 items made every command ask for 16 GiB); pyarrow (Arrow IPC) is not a
# dependency of the commands, and the same columns as DuckDB tables took 45 ms to fetch row by
# row (numpy, whose columns DuckDB hands over faster, costs every read-only command 0.1 s of
# imports).
_FABRIC_CACHE_FORMAT = 4
_T = TypeVar("_T")
_FABRIC_CACHE_VERSION = 14  # the schema version that last changed fabric_cache
_S, _S0, _N, _N0 = 0, 1, 2, 3  # string, string or null, number, number or null
# the columns of each part: the rows of fabric_nodes, fabric_ports, fabric_links, port_peers,
# node_names and fabric_links_changed, in their order
_CACHE_PARTS: dict[str, tuple[int, ...]] = {
    "nodes": (_S, _S, _S, _S, _S0, _S0, _N0),
    "ports": (_S, _N, _S0, _N0, _S0, _S0, _S0, _S0, _S0, _S0),
    "links": (_S, _N, _S, _N, _S0, _S0),
    "peers": (_S, _N, _S, _N),
    "names": (_S, _S, _S),
    "changed": (_S, _N, _S, _N, _S0, _S0),
}
_U32 = "I" if array("I").itemsize == 4 else "L"
_INT32 = (-(2**31), 2**31 - 1)  # DuckDB's integer, the type of every number cached
_NODE_TYPES = {t.value: t for t in NodeType}
Columns = list[Sequence[Any]]


class _CachedFabric(NamedTuple):
    seen_at: datetime
    nodes: Columns
    ports: Columns
    links: Columns
    peers: dict[tuple[str, int], tuple[str, int]]  # as port_peers returns them
    names: dict[str, tuple[str, str]]  # as node_names returns them
    prev_at: datetime | None  # the snapshot before, and its links that ran otherwise
    changed: list[tuple[Any, ...]]


class _DamagedCacheError(ValueError):
    """The fabric_cache row is not what this code writes."""


def _as_columns(rows: Sequence[tuple[Any, ...]], width: int) -> Columns:
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


def _pick(values: list[Any], ids: list[int]) -> Sequence[Any]:
    """values[i] for each i: itemgetter's loop runs in C (twice as fast as a map)."""
    if len(ids) > 1:
        return itemgetter(*ids)(values)  # type: ignore[no-any-return]
    return [values[i] for i in ids]


def _encode_fabric(parts: dict[str, Sequence[tuple[Any, ...]]]) -> dict[str, bytes]:
    """The lookup lists (as JSON) and every part's index columns, as fabric_cache stores them."""
    strings: dict[str, int] = {}
    numbers: dict[int, int] = {}
    out: dict[str, bytes] = {}
    for name, kinds in _CACHE_PARTS.items():
        rows = parts[name]
        ids = array(_U32)
        for i, kind in enumerate(kinds):
            index: dict[Any, int] = strings if kind in (_S, _S0) else numbers
            if kind in (_S, _N):
                ids.extend(index.setdefault(r[i], len(index)) for r in rows)
            else:
                ids.extend(0 if r[i] is None else index.setdefault(r[i], len(index)) + 1
                           for r in rows)
        if sys.byteorder == "big":
            ids.byteswap()
        out[name] = ids.tobytes()
    out["lookup"] = json.dumps([list(strings), list(numbers)], ensure_ascii=False,
                               separators=(",", ":")).encode()
    return out


def _decode_fabric(row: tuple[Any, ...]) -> _CachedFabric:
    """(seen_at, prev_at, format, lookup, *parts) of the fabric_cache row read back, each part
    checked; _DamagedCacheError (saying what is wrong) when it is not what _encode_fabric
    wrote."""
    if len(row) != 4 + len(_CACHE_PARTS) or row[2] != _FABRIC_CACHE_FORMAT:
        raise _DamagedCacheError(f"not format {_FABRIC_CACHE_FORMAT}")
    seen_at, prev_at, lookup, blobs = row[0], row[1], row[3], row[4:]
    if not isinstance(seen_at, datetime) or not (prev_at is None or isinstance(prev_at, datetime)):
        raise _DamagedCacheError("a snapshot time that is not a time")
    if not isinstance(lookup, bytes) or not all(isinstance(b, bytes) for b in blobs):
        raise _DamagedCacheError("a part that is not a blob")
    try:
        strings, numbers = json.loads(lookup)
    except (ValueError, TypeError, RecursionError):
        raise _DamagedCacheError("unreadable lookup lists") from None
    if not (type(strings) is list and type(numbers) is list
            and set(map(type, strings)) <= {str} and set(map(type, numbers)) <= {int}
            and (not numbers or (min(numbers) >= _INT32[0] and max(numbers) <= _INT32[1]))):
        raise _DamagedCacheError("lookup lists of the wrong types")
    lists = {_S: strings, _S0: [None, *strings], _N: numbers, _N0: [None, *numbers]}
    parts: dict[str, Columns] = {}
    for (name, kinds), blob in zip(_CACHE_PARTS.items(), blobs, strict=True):
        if len(blob) % (4 * len(kinds)):
            raise _DamagedCacheError(f"{name}: not a whole number of rows")
        ids = array(_U32)
        ids.frombytes(blob)
        if sys.byteorder == "big":
            ids.byteswap()
        rows = len(ids) // len(kinds)
        try:
            parts[name] = [_pick(lists[kind], ids[i * rows:(i + 1) * rows].tolist())
                           for i, kind in enumerate(kinds)]
        except IndexError:
            raise _DamagedCacheError(f"{name}: an index past its list") from None
    if not (set(parts["nodes"][1]) <= _NODE_TYPES.keys()
            and set(parts["names"][2]) <= _NODE_TYPES.keys()):
        raise _DamagedCacheError("an unknown node type")
    if prev_at is None and parts["changed"][0]:
        raise _DamagedCacheError("links of a snapshot before that is not there")
    pg, pp, qg, qp = parts["peers"]
    ng, nn, nt = parts["names"]
    return _CachedFabric(seen_at, parts["nodes"], parts["ports"], parts["links"],
                         dict(zip(zip(pg, pp, strict=True), zip(qg, qp, strict=True), strict=True)),
                         dict(zip(ng, zip(nn, nt, strict=True), strict=True)),
                         prev_at, list(zip(*parts["changed"], strict=True)))


def _fabric_from_columns(at: datetime, nodes: Columns, ports: Columns, links: Columns) -> Fabric:
    fab = Fabric(seen_at=at)
    guids, types, *rest = nodes
    fab.nodes = dict(zip(guids, map(FabricNode, guids, map(_NODE_TYPES.__getitem__, types),
                                    *rest), strict=True))
    fab.ports = dict(zip(zip(ports[0], ports[1], strict=True), map(Port, *ports), strict=True))
    fab.links = list(map(Link, *links))
    return fab


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


class Store:
    """One DuckDB file. Open it, use it, close it (or use it as a context manager).

    A file another process holds (DuckDB: one writer, or many readers) is retried for
    `busy_timeout_s`, then DatabaseBusyError. A database written by a newer auditor (a schema
    version this code does not know) is refused before anything is read or written."""

    def __init__(self, path: Path | str, read_only: bool = False,
                 busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._in_transaction = False
        # fabric_cache as read (None: there is none, or it is stale); read again after a
        # topology write (`_fabric_read` False)
        self._cached_fabric: _CachedFabric | None = None
        self._fabric_read = False
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
                                      config=_CONNECT_CONFIG)
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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # its queries use this connection's database
            self._pool = None
        self._con.close()

    def in_background(self, work: Callable[[Store], _T]) -> Future[_T]:
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
            with self.transaction():
                for version, name in steps:
                    self._migrate_step(version, name)
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
        if version == _FABRIC_CACHE_VERSION:
            self.refresh_fabric_cache()  # a database from before it: build it once

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
        columns registered at run time (counter_batch) are registered empty meanwhile."""
        self._con.register("counter_batch", _counter_columns(CounterTable([], [], [], [], [])))
        try:
            self._con.execute("prepare _check_query as " + sql.load(query).strip().rstrip(";"))
            self._con.execute("deallocate _check_query")
        finally:
            self._con.unregister("counter_batch")

    def run_dicts(self, query: str, /, **params: Any) -> list[dict[str, Any]]:
        cur = self._con.execute(sql.load(query), params)
        cols = [d[0] for d in cur.description or []]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    # -- sources ------------------------------------------------------------------------------

    def find_source(self, sha256: str, observed_at: datetime, explicit_at: bool) -> int | None:
        rows = self.run(
            "source_find",
            sha256=sha256,
            explicit_at=explicit_at,
            observed_at=utc_naive(observed_at),
        )
        return int(rows[0][0]) if rows else None

    def sources_of(self, sha256: str, observed_at: datetime,
                   explicit_at: bool) -> list[tuple[int, str | None]]:
        """(source id, options) of every source of this content (as `find_source`)."""
        rows = self.run("source_find", sha256=sha256, explicit_at=explicit_at,
                        observed_at=utc_naive(observed_at))
        return [(int(r[0]), r[1]) for r in rows]

    def stored_sources(self, sha256: Sequence[str]) -> dict[str, list[tuple[int, str | None]]]:
        """Which of these contents are stored already (as `find_source` without --at): content
        -> (source id, options) of each source."""
        found: dict[str, list[tuple[int, str | None]]] = {}
        for digest, sid, options in (self.run("sources_known", sha256=list(sha256))
                                     if sha256 else []):
            found.setdefault(digest, []).append((int(sid), options))
        return found

    def forget_sources(self, source_ids: Sequence[int]) -> None:
        """Delete these sources and everything they stored (a file ingested again with other
        options replaces its earlier records; call it in the ingest's transaction)."""
        if not source_ids:
            return
        self._fabric_read = False
        for query in ("source_forget_job_nodes", "source_forget_jobs", "source_forget_nodes",
                      "source_forget_ports", "source_forget_links", "source_forget_counters",
                      "source_forget_port_events", "source_forget_source_issues",
                      "source_forget_job_errors", "source_forget_job_logs",
                      "source_forget_host_addresses", "source_forget_maintenance",
                      "source_forget_host_events",
                      "source_forget_inventory", "source_forget_port_labels",
                      "source_forget_optics_readings", "source_forget_optics_thresholds",
                      "source_forget_transceivers", "source_forget_sources"):
            self.run(query, source_ids=list(source_ids))

    def add_source(self, meta: SourceMeta) -> int:
        rows = self.run(
            "source_insert",
            kind=meta.kind,
            path=meta.path,
            sha256=meta.sha256,
            origin=meta.origin,
            observed_at=utc_naive(meta.observed_at),
            explicit_at=meta.explicit_at,
            ingested_at=utc_naive(datetime.now(UTC)),
            lines_total=meta.lines_total,
            lines_unparsed=meta.lines_unparsed,
            records=meta.records,
            options=meta.options,
        )
        return int(rows[0][0])

    def next_source_ids(self, n: int) -> list[int]:
        """`n` new source ids, ascending, for `add_sources`."""
        return [int(r[0]) for r in self.run("source_ids_next", n=n)] if n > 0 else []

    def add_sources(self, rows: Sequence[tuple[int, SourceMeta]]) -> None:
        """Record several files in one statement, each under an id from `next_source_ids`
        (`add_source` costs a round trip per file: 5 s of 6,105 job logs, issue #13)."""
        if not rows:
            return
        metas = [m for _, m in rows]
        now = utc_naive(datetime.now(UTC))
        self.run("sources_insert_many", source_id=[sid for sid, _ in rows],
                 kind=[m.kind for m in metas], path=[m.path for m in metas],
                 sha256=[m.sha256 for m in metas], origin=[m.origin for m in metas],
                 observed_at=[utc_naive(m.observed_at) for m in metas],
                 explicit_at=[m.explicit_at for m in metas], ingested_at=[now for _ in metas],
                 lines_total=[m.lines_total for m in metas],
                 lines_unparsed=[m.lines_unparsed for m in metas],
                 records=[m.records for m in metas], options=[m.options for m in metas])

    def sources(self) -> list[dict[str, Any]]:
        return self.run_dicts("sources_list")

    # -- topology -----------------------------------------------------------------------------

    def add_nodes(self, source_id: int, seen_at: datetime, nodes: Sequence[FabricNode]) -> None:
        if not nodes:
            return
        self._fabric_read = False
        self.run(
            "nodes_insert",
            source_id=source_id,
            seen_at=utc_naive(seen_at),
            guid=[n.guid for n in nodes],
            node_type=[str(n.node_type) for n in nodes],
            description=[n.description for n in nodes],
            name=[n.name for n in nodes],
            model=[n.model for n in nodes],
            device=[n.device for n in nodes],
            num_ports=[None for _ in nodes],
            lid=[n.lid for n in nodes],
        )

    def add_ports(self, source_id: int, seen_at: datetime, ports: Sequence[Port]) -> None:
        if not ports:
            return
        self._fabric_read = False
        self.run(
            "ports_insert",
            source_id=source_id,
            seen_at=utc_naive(seen_at),
            guid=[p.guid for p in ports],
            port=[p.port for p in ports],
            port_guid=[p.port_guid for p in ports],
            lid=[p.lid for p in ports],
            state=[p.state for p in ports],
            phys_state=[p.phys_state for p in ports],
            width=[p.width for p in ports],
            speed=[p.speed for p in ports],
            could_be_width=[p.could_be_width for p in ports],
            could_be_speed=[p.could_be_speed for p in ports],
        )

    def add_links(self, source_id: int, seen_at: datetime, links: Sequence[Link]) -> None:
        if not links:
            return
        self._fabric_read = False
        self.run(
            "links_insert",
            source_id=source_id,
            seen_at=utc_naive(seen_at),
            a_guid=[lk.a_guid for lk in links],
            a_port=[lk.a_port for lk in links],
            b_guid=[lk.b_guid for lk in links],
            b_port=[lk.b_port for lk in links],
            width=[lk.width for lk in links],
            speed=[lk.speed for lk in links],
        )

    def add_counters(self, source_id: int, seen_at: datetime, table: CounterTable) -> None:
        """Store readings: (node GUID, port or None for the switch aggregate, counter, value)."""
        if not table.names:
            return
        self._con.register("counter_batch", _counter_columns(table))
        try:
            self.run("counters_insert", source_id=source_id, seen_at=utc_naive(seen_at))
        finally:
            self._con.unregister("counter_batch")

    def snapshot_times(self, at: datetime, limit: int = 2) -> list[datetime]:
        """Times of the newest topology snapshots at or before `at`, newest first."""
        return [r[0] for r in self.run("snapshot_times", at=utc_naive(at), limit=limit)]

    def port_guid_owners(self, at: datetime) -> list[tuple[str, str, int]]:
        """(port GUID, node GUID, port) of the ports whose GUID is not their node's, in the newest
        topology at or before `at` (in the order they were stored)."""
        return [(r[0], r[1], r[2]) for r in self.run("port_guid_owners", at=utc_naive(at))]

    def lid_owners(self, at: datetime) -> list[tuple[int, str]]:
        """(LID, node GUID) of every port with a LID in the newest topology at or before `at`
        (in the order they were stored)."""
        return [(r[0], r[1]) for r in self.run("lid_owners", at=utc_naive(at))]

    def latest_fabric(self) -> Fabric | None:
        """The newest topology snapshot, whatever its time (None before the first one)."""
        times = self.snapshot_times(datetime(9999, 1, 1, tzinfo=UTC), limit=1)
        return self.fabric(times[0]) if times else None

    def fabric(self, seen_at: datetime) -> Fabric:
        """The fabric exactly as the snapshot taken at `seen_at` saw it."""
        at = utc_naive(seen_at)
        cached = self._fabric_cache()
        if cached is not None and cached.seen_at == at:
            return _fabric_from_columns(at, cached.nodes, cached.ports, cached.links)
        return _fabric_from_columns(
            at, _as_columns(self.run("fabric_nodes", seen_at=at), 7),
            _as_columns(self.run("fabric_ports", seen_at=at), 10),
            _as_columns(self.run("fabric_links", seen_at=at), 6))

    def refresh_fabric_cache(self) -> None:
        """Keep the newest snapshot ready to read (fabric_cache): call it where a topology
        ingest stores a snapshot, inside its transaction."""
        self._fabric_read = False
        self.run("fabric_cache_clear")
        times = self.snapshot_times(datetime(9999, 1, 1, tzinfo=UTC), limit=2)
        if not times:
            return
        at = utc_naive(times[0])
        prev = utc_naive(times[1]) if len(times) > 1 else None
        parts = _encode_fabric({
            "nodes": self.run("fabric_nodes", seen_at=at),
            "ports": self.run("fabric_ports", seen_at=at),
            "links": self.run("fabric_links", seen_at=at),
            "peers": self.run("port_peers", until=at), "names": self.run("node_names"),
            "changed": self.run("fabric_links_changed", seen_at=at, prev_at=prev) if prev
            else []})
        self.run("fabric_cache_insert", seen_at=at, prev_at=prev,
                 fingerprint=self._topology_fingerprint(), format=_FABRIC_CACHE_FORMAT, **parts)

    def _topology_fingerprint(self) -> str:
        return str(self.run("fabric_fingerprint")[0][0])

    def _fabric_cache(self) -> _CachedFabric | None:
        """The cached newest snapshot, read once per open; None when there is none, the
        topology sources changed since it was built, or it is damaged (then the tables are
        read, with the same answers, and a damaged one is a warning)."""
        if not self._fabric_read:
            self._fabric_read, self._cached_fabric = True, None
            try:
                rows = self.run("fabric_cache_get")
            except duckdb.Error as exc:
                if self._in_transaction:  # the failed statement ended it: nothing to go on with
                    raise
                _log.warning("%s: the fabric cache cannot be read (%s); the topology tables "
                             "answer instead", self.path, type(exc).__name__)
                return None
            if len(rows) == 1 and rows[0][2] == self._topology_fingerprint():
                row = rows[0]
                try:
                    self._cached_fabric = _decode_fabric((row[0], row[1], *row[3:]))
                except _DamagedCacheError as exc:
                    _log.warning("%s: the fabric cache is damaged (%s); the topology tables "
                                 "answer instead (slower, the same answers) until the next "
                                 "topology ingest rewrites it", self.path, exc)
            elif len(rows) > 1:
                _log.warning("%s: the fabric cache holds %d rows, not one; the topology "
                             "tables answer instead", self.path, len(rows))
        return self._cached_fabric

    def fabric_links_changed(self, seen_at: datetime, prev_at: datetime) -> list[Link]:
        """The links of the snapshot at `prev_at` that ran at another width or speed than in
        the snapshot at `seen_at`."""
        at, prev = utc_naive(seen_at), utc_naive(prev_at)
        cached = self._fabric_cache()
        rows = cached.changed if cached is not None and (cached.seen_at, cached.prev_at) == (
            at, prev) else self.run("fabric_links_changed", seen_at=at, prev_at=prev)
        return [Link(*row) for row in rows]

    def fabric_links(self, seen_at: datetime) -> list[Link]:
        """The links of the snapshot taken at `seen_at`, each once."""
        return [Link(*row) for row in self.run("fabric_links", seen_at=utc_naive(seen_at))]

    # -- port events ----------------------------------------------------------------------
    def add_events(self, source_id: int, origin: str, events: Sequence[PortEvent],
                   placed: Sequence[Placement] | None = None) -> None:
        """Store events; `placed` overrides their (GUID, port, peer GUID, peer port)."""
        if not events:
            return
        self._con.register("event_batch", _events_columns(events, placed))
        try:
            self.run("port_events_stage")
        finally:
            self._con.unregister("event_batch")
        self.run("port_events_insert", source_id=source_id, origin=origin)

    def add_issues(self, source_id: int,
                   issues: Sequence[tuple[str, int, int | None, str | None]]) -> None:
        """issues: (reason, number of lines, first line number, example line)."""
        self.add_issues_of_many([(source_id, *i) for i in issues])

    def add_issues_of_many(
            self, issues: Sequence[tuple[int, str, int, int | None, str | None]]) -> None:
        """Issues of several sources in one statement: (source id, reason, lines, first line
        number, example line)."""
        if issues:
            self.run("source_issues_insert", source_id=[i[0] for i in issues],
                     reason=[i[1] for i in issues], lines=[i[2] for i in issues],
                     first_line_no=[i[3] for i in issues], example=[i[4] for i in issues])

    def add_topology_events(self, source_id: int, seen_at: datetime, prev_at: datetime) -> None:
        self.run("topology_events_insert", source_id=source_id, seen_at=utc_naive(seen_at),
                 prev_at=utc_naive(prev_at))

    def unmapped_event_ports(self) -> list[tuple[str, str | None]]:
        """(device, port name) of the port events no topology placed, each pair once."""
        return [(r[0], r[1]) for r in self.run("port_events_unmapped")]

    def map_event_ports(self, rows: Sequence[tuple[str, str | None, str, int | None]]) -> None:
        """Place unplaced port events: rows of (device, port name, GUID, port), one statement."""
        if rows:
            self.run("port_events_map", device=[r[0] for r in rows],
                     port_name=[r[1] for r in rows], guid=[r[2] for r in rows],
                     port=[r[3] for r in rows])

    def events(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        return self.run_dicts("port_events_window", since=utc_naive(since),
                              until=utc_naive(until))

    def port_peers(self, until: datetime) -> dict[tuple[str, int], tuple[str, int]]:
        """Every port that ever carried a link up to `until`: its last peer."""
        at = utc_naive(until)
        cached = self._fabric_cache()
        # Links are stored at their snapshot's time: when the newest snapshot of all is not
        # after `until`, every link up to `until` is in the cached answer.
        if cached is not None and cached.seen_at <= at:
            return dict(cached.peers)
        return {(r[0], r[1]): (r[2], r[3]) for r in self.run("port_peers", until=at)}

    def hosts_read(self, until: datetime) -> tuple[set[str], set[str]]:
        """(host names, HCA GUIDs) the host side has told us anything about up to `until`."""
        names: set[str] = set()
        guids: set[str] = set()
        for what, key in self.run("coverage_hosts_read", until=utc_naive(until)):
            (names if what == "host" else guids).add(key)
        return names, guids

    def node_names(self) -> dict[str, tuple[str, str]]:
        """The newest (name, node type) of every node GUID ever seen."""
        cached = self._fabric_cache()
        if cached is not None:
            return dict(cached.names)
        return {r[0]: (r[1], r[2]) for r in self.run("node_names")}

    def issues(self) -> list[dict[str, Any]]:
        return self.run_dicts("source_issues_list")

    def counter_deltas(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        """Counter increases per port between readings in (since, until]; resets handled."""
        return self.run_dicts("counter_deltas", since=utc_naive(since), until=utc_naive(until))

    def counter_steps(self, flaps_since: datetime, since: datetime, until: datetime
                      ) -> list[dict[str, Any]]:
        """What `suspects` reads of the error counters, in one query: the LinkDownedCounter
        increases above 0 of `counter_deltas(flaps_since, until)`, then every other counter's
        increases of `counter_deltas(since, until)` that are not 0, and SymbolErrorCounter's
        0s; the same rows (less prev_value, value and reset), in the same order."""
        return self.run_dicts("counter_steps", flaps_since=utc_naive(flaps_since),
                              since=utc_naive(since), until=utc_naive(until))

    def data_deltas(self, since: datetime, until: datetime,
                    series: Sequence[tuple[str, int, str]]) -> list[tuple[Any, ...]]:
        """PortXmitData / PortRcvData increases (4-octet words) of `series` (GUID, port,
        counter) between readings in (since, until], as (guid, port, counter, prev_at, seen_at,
        delta); intervals with a reset or a saturated reading left out."""
        if not series:
            return []
        wanted = sorted(set(series))
        return self.run("data_deltas", since=utc_naive(since), until=utc_naive(until),
                        guids=[g for g, _, _ in wanted], ports=[p for _, p, _ in wanted],
                        counters=[c for _, _, c in wanted])

    # -- identity (issue #21) ---------------------------------------------------------------

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
        con = duckdb.connect(config=_CONNECT_CONFIG)
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

    # -- switch-side collection ---------------------------------------------------------------

    def add_device_status(self, checked_at: datetime, device: str, collector: str,
                          status: str, detail: str) -> None:
        self.run("device_status_insert", checked_at=utc_naive(checked_at), device=device,
                 collector=collector, status=status, detail=detail)

    def device_status(self) -> list[dict[str, Any]]:
        return self.run_dicts("device_status_latest")

    def add_snmp_ports(self, polled_at: datetime, device: str, sys_uptime_ticks: int | None,
                       rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        cols = ["if_index", "if_name", "oper_status", "admin_status", "last_change_ticks",
                "in_errors", "out_errors", "hc_in_octets", "hc_out_octets", "symbol_errors",
                "phys_state", "guid", "port"]
        self.run("snmp_ports_insert", polled_at=utc_naive(polled_at), device=device,
                 sys_uptime_ticks=sys_uptime_ticks, **{c: [r[c] for r in rows] for c in cols})

    def last_snmp_poll(self, device: str, before: datetime) -> list[dict[str, Any]]:
        return self.run_dicts("snmp_last_poll", device=device, before=utc_naive(before))

    def add_transceivers(self, seen_at: datetime, device: str, rows: Sequence[dict[str, Any]],
                         source_id: int | None = None) -> None:
        """One device's modules; `source_id`: the cabling plan's source that names them (a
        sweep's have none)."""
        if not rows:
            return
        cols = ["port_name", "guid", "port", "present", "vendor", "part_number", "serial_number",
                "length", "cable_type", "revision"]
        self.run("transceivers_insert", seen_at=utc_naive(seen_at), device=device,
                 **{c: [r[c] for r in rows] for c in cols},
                 lot=[r.get("lot") for r in rows],  # only the cabling plan knows a lot
                 source_id=source_id)

    def cable_types(self, ports: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """(GUID, port) -> the cable type of the newest module there, for `ports` only."""
        if not ports:
            return {}
        wanted = sorted(set(ports))
        return {(g, p): c for g, p, c in self.run(
            "cable_types_of_ports", guids=[g for g, _ in wanted], ports=[p for _, p in wanted])}

    def transceivers(self) -> list[dict[str, Any]]:
        return self.run_dicts("transceivers_latest")

    # -- transceiver diagnostics (issue #14) -----------------------------------------------------

    def add_optics(self, source_id: int, readings: Sequence[OpticsReading],
                   placed: Sequence[tuple[str | None, int | None]] | None = None) -> None:
        """Store module readings, one row per lane, and their thresholds, in two statements.
        `placed` gives each reading's (GUID, port) when the topology places it."""
        if not readings:
            return
        where = placed or [(None, None)] * len(readings)
        rows: list[tuple[OpticsReading, str | None, int | None, LaneReading | None]] = []
        for r, (guid, port) in zip(readings, where, strict=True):
            rows.extend((r, guid, port, lane) for lane in (r.lanes or (None,)))
        self.run("optics_readings_insert", source_id=source_id,
                 read_at=[utc_naive(r.read_at) for r, _, _, _ in rows],
                 device=[r.device for r, _, _, _ in rows],
                 port_name=[r.port_name for r, _, _, _ in rows],
                 guid=[g for _, g, _, _ in rows], port=[p for _, _, p, _ in rows],
                 vendor=[r.vendor for r, _, _, _ in rows],
                 part_number=[r.part_number for r, _, _, _ in rows],
                 serial_number=[r.serial_number for r, _, _, _ in rows],
                 firmware=[r.firmware for r, _, _, _ in rows],
                 temperature_c=[r.temperature_c for r, _, _, _ in rows],
                 vcc_v=[r.vcc_v for r, _, _, _ in rows],
                 lane=[ln.lane if ln else None for _, _, _, ln in rows],
                 tx_bias_ma=[ln.tx_bias_ma if ln else None for _, _, _, ln in rows],
                 tx_power_dbm=[ln.tx_power_dbm if ln else None for _, _, _, ln in rows],
                 rx_power_dbm=[ln.rx_power_dbm if ln else None for _, _, _, ln in rows])
        limits = [(r, q, t) for r in readings for q, t in sorted(r.thresholds.items())]
        if limits:
            self.run("optics_thresholds_insert", source_id=source_id,
                     read_at=[utc_naive(r.read_at) for r, _, _ in limits],
                     device=[r.device for r, _, _ in limits],
                     port_name=[r.port_name for r, _, _ in limits],
                     serial_number=[r.serial_number for r, _, _ in limits],
                     quantity=[q for _, q, _ in limits],
                     low_alarm=[t.low_alarm for _, _, t in limits],
                     low_warning=[t.low_warning for _, _, t in limits],
                     high_warning=[t.high_warning for _, _, t in limits],
                     high_alarm=[t.high_alarm for _, _, t in limits])

    def optics_readings(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        """Every lane reading in the window, oldest first per module and lane."""
        return self.run_dicts("optics_readings_window", since=utc_naive(since),
                              until=utc_naive(until))

    def optics_thresholds(self) -> list[dict[str, Any]]:
        """The newest thresholds of each module and quantity."""
        return self.run_dicts("optics_thresholds_latest")

    def optics_daily(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        """Per module and lane, the daily medians of the window as lists (day numbers from
        the day of `since`)."""
        return self.run_dicts("optics_daily", since=utc_naive(since), until=utc_naive(until))

    def optics_thresholds_at(self, until: datetime) -> list[dict[str, Any]]:
        """The newest thresholds of each module and quantity read up to `until`."""
        return self.run_dicts("optics_thresholds_asof", until=utc_naive(until))

    # -- jobs -----------------------------------------------------------------------------------

    def add_jobs(self, source_id: int, jobs: JobTable) -> None:
        """Store jobs; an earlier record of the same job id and start is replaced."""
        if not jobs:
            return
        self._con.register("job_batch", _jobs_columns(jobs))
        try:
            self.run("jobs_stage")
        finally:
            self._con.unregister("job_batch")
        self.run("jobs_forget")
        self.run("job_nodes_forget")
        self.run("jobs_insert", source_id=source_id)
        self.run("job_nodes_insert")

    def jobs_ended(self, since: datetime, until: datetime, states: Iterable[str]
                   ) -> list[dict[str, Any]]:
        """Jobs that ended in the window in one of `states`, with their hosts, by end time."""
        return _split_hosts(self.run_dicts("jobs_ended_window", since=utc_naive(since),
                                           until=utc_naive(until), states=sorted(states)))

    def jobs_during(self, since: datetime, until: datetime,
                    spans: Sequence[tuple[datetime, datetime]],
                    hosts: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Jobs of the window that had started and were running during one of `spans`, with
        their hosts, by end time; with `hosts` (names as sacct gave them, see
        job_host_names), only those that ran on at least one of them."""
        if not spans:
            return []
        lo, hi = [utc_naive(lo) for lo, _ in spans], [utc_naive(hi) for _, hi in spans]
        if hosts is None:
            return _split_hosts(self.run_dicts("jobs_during", since=utc_naive(since),
                                               until=utc_naive(until), span_lo=lo, span_hi=hi))
        names = sorted(set(hosts))
        if not names:
            return []
        return _split_hosts(self.run_dicts("jobs_during_hosts", since=utc_naive(since),
                                           until=utc_naive(until), span_lo=lo, span_hi=hi,
                                           hosts=names))

    def jobs_through(self, since: datetime, until: datetime,
                     spans: Sequence[tuple[datetime, datetime]], state: str,
                     hosts: Iterable[str]) -> list[dict[str, Any]]:
        """Jobs of the window in `state` that ran through one of `spans` whole (started by its
        start, ended at or after its end) on at least one of `hosts` (names as sacct gave
        them, see job_host_names), with all their hosts, by end time."""
        names = sorted(set(hosts))
        if not spans or not names:
            return []
        return _split_hosts(self.run_dicts(
            "jobs_through", since=utc_naive(since), until=utc_naive(until),
            span_lo=[utc_naive(lo) for lo, _ in spans], span_hi=[utc_naive(hi) for _, hi in spans],
            state=state, hosts=names))

    def job_host_names(self) -> list[str]:
        """Every host name a job was given (as sacct gave it), once each, sorted."""
        return [r[0] for r in self.run("job_host_names")]

    def add_job_errors(self, logs: Sequence[tuple[int, str | None, Sequence[JobError], set[int]]]
                       ) -> None:
        """The failure lines of job logs, all in one statement: (source id, job id or None,
        errors, the line numbers of the errors that are the first of their host/HCA/peer)."""
        rows = [(sid, job, e, e.line_no in first) for sid, job, errors, first in logs
                for e in errors]
        if not rows:
            return
        self.run("job_errors_insert", source_id=[r[0] for r in rows], job_id=[r[1] for r in rows],
                 line_no=[r[2].line_no for r in rows],
                 event_at=[utc_naive(r[2].at) if r[2].at else None for r in rows],
                 kind=[r[2].kind for r in rows], network=[r[2].network for r in rows],
                 host=[r[2].host for r in rows], hca=[r[2].hca for r in rows],
                 hca_port=[r[2].hca_port for r in rows], peer=[r[2].peer for r in rows],
                 status=[r[2].status for r in rows],
                 status_name=[r[2].status_name for r in rows],
                 rank=[r[2].rank for r in rows], is_first=[r[3] for r in rows],
                 message=[r[2].message for r in rows],
                 not_before=[_naive_or_none(r[2].not_before) for r in rows],
                 not_after=[_naive_or_none(r[2].not_after) for r in rows],
                 ran_ms=[r[2].ran_ms for r in rows],
                 dev_index=[r[2].dev_index for r in rows],
                 hca_candidates=[list(r[2].hca_candidates) for r in rows])

    def add_job_logs(self, logs: Sequence[JobLogMeta]) -> None:
        """What each job log says about its NCCL and its time span, in one statement."""
        if not logs:
            return
        self.run("job_logs_insert", source_id=[m.source_id for m in logs],
                 job_id=[m.job_id for m in logs], hosts=[sorted(m.hosts) for m in logs],
                 first_at=[_naive_or_none(m.first_at) for m in logs],
                 last_at=[_naive_or_none(m.last_at) for m in logs],
                 written_at=[_naive_or_none(m.written_at) for m in logs],
                 nccl_versions=[list(m.nccl_versions) for m in logs],
                 ib_timeout=[m.ib_timeout for m in logs],
                 ib_retry_cnt=[m.ib_retry_cnt for m in logs],
                 using=[[{"host": h, "hca": c} for h, c in sorted(m.using)] for m in logs],
                 ib_hca=[m.ib_hca for m in logs])

    def job_logs(self, since: datetime, until: datetime,
                 jobs_since: datetime | None = None) -> list[dict[str, Any]]:
        """The logs dated near [since, until], and those labelled with a job that had not
        ended before `jobs_since` (default: `since`). `hosts`, `first_at`, `last_at` and
        `written_at` only of the logs without a job (None for the others): they serve to
        match such a log to its job."""
        return self.run_dicts("job_logs_window", since=utc_naive(since), until=utc_naive(until),
                              jobs_since=utc_naive(jobs_since or since))

    def job_log_settings(self, since: datetime, until: datetime
                         ) -> tuple[list[str], list[tuple[int, int | None]]]:
        """(NCCL versions, distinct (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT) set by environment) of
        every log labelled with a job or dated near [since, until]."""
        versions: list[str] = []
        waits: list[tuple[int, int | None]] = []
        for what, version, timeout, retry in self.run(
                "job_log_settings", since=utc_naive(since), until=utc_naive(until)):
            if what == "version":
                versions.append(version)
            else:
                waits.append((timeout, retry))
        return sorted(versions), sorted(waits, key=lambda w: (w[0], w[1] is None, w[1] or 0))

    def job_errors(self, since: datetime, until: datetime, sources: Sequence[int] = (),
                   jobs_since: datetime | None = None) -> list[dict[str, Any]]:
        """Failure lines in the window, the undated lines of jobs that had not ended before
        `jobs_since` (default: `since`), and every line of the job logs `sources`: the
        columns the correlation reads (source_id, job_id, event_at, kind, network, host, hca,
        peer, is_first, not_before, not_after, ran_ms, hca_candidates), not the message."""
        return self.run_dicts("job_errors_window", since=utc_naive(since), until=utc_naive(until),
                              sources=list(sources), jobs_since=utc_naive(jobs_since or since))

    def add_host_addresses(self, source_id: int, rows: Sequence[HostAddress]) -> None:
        if rows:
            self.run("host_addresses_insert", source_id=source_id,
                     address=[r.address for r in rows], host=[r.host for r in rows])

    def host_addresses(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self.run("host_addresses_all")}

    def add_maintenance(self, source_id: int | None, rows: Sequence[MaintenanceWindow]) -> None:
        if rows:
            self.run("maintenance_insert", source_id=source_id, target=[r.target for r in rows],
                     start_at=[utc_naive(r.start) for r in rows],
                     end_at=[utc_naive(r.end) for r in rows], reason=[r.reason for r in rows])

    def maintenance(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        return self.run_dicts("maintenance_window", since=utc_naive(since),
                              until=utc_naive(until))

    # -- host events (issue #20) -----------------------------------------------------------------

    def add_host_events(self, source_id: int, rows: Sequence[HostEvent]) -> None:
        if rows:
            self.run("host_events_insert", source_id=source_id, host=[r.host for r in rows],
                     event_at=[utc_naive(r.at) for r in rows], kind=[r.kind for r in rows],
                     end_at=[_naive_or_none(r.end_at) for r in rows],
                     reason=[r.reason for r in rows], line_no=[r.line_no for r in rows],
                     message=[r.message for r in rows])

    def host_events(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        """Boots, crashes and Slurm node states touching [since, until], oldest first."""
        return self.run_dicts("host_events_window", since=utc_naive(since),
                              until=utc_naive(until))

    def host_event_hosts(self) -> dict[str, set[str]]:
        """Source kind (slurm-events, slurmctld, boots, dmesg) -> the host names it speaks of."""
        out: dict[str, set[str]] = {}
        for host, kind in self.run("host_events_hosts"):
            out.setdefault(kind, set()).add(host)
        return out

    # -- inventory and replacements --------------------------------------------------------------

    def add_inventory(self, source_id: int, rows: Sequence[Location]) -> None:
        if not rows:
            return
        self.run("inventory_insert", source_id=source_id, name=[r.name for r in rows],
                 site=[r.site for r in rows], row_name=[r.row for r in rows],
                 rack=[r.rack for r in rows], u=[r.u for r in rows])
        labels = [(r.name, port, label) for r in rows for port, label in r.port_labels]
        if labels:
            self.run("port_labels_insert", source_id=source_id, name=[x[0] for x in labels],
                     port=[x[1] for x in labels], label=[x[2] for x in labels])

    def locations(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: r for r in self.run_dicts("inventory_latest")}

    def port_labels(self) -> dict[tuple[str, int], str]:
        return {(r[0], r[1]): r[2] for r in self.run("port_labels_latest")}

    def add_replacement(self, ticket: str, part: str, replaced_at: datetime,
                        a: tuple[str, int, str], b: tuple[str, int, str] | None,
                        old_serials: Sequence[str]) -> int:
        rows = self.run(
            "replacement_insert", ticket=ticket, part=part, replaced_at=utc_naive(replaced_at),
            a_guid=a[0], a_port=a[1], a_name=a[2], b_guid=b[0] if b else None,
            b_port=b[1] if b else None, b_name=b[2] if b else None,
            old_serials=list(old_serials), recorded_at=utc_naive(datetime.now(UTC)))
        return int(rows[0][0])

    def replacements(self) -> list[dict[str, Any]]:
        return self.run_dicts("replacements_all")

    def serials_seen(self, serials: Sequence[str], after: datetime) -> list[dict[str, Any]]:
        if not serials:
            return []
        return self.run_dicts("transceiver_serial_ports", serials=list(serials),
                              after=utc_naive(after))

    # -- outcomes (issue #15) -------------------------------------------------------------------

    def remember_run(self, run_at: datetime, since: datetime, until: datetime,
                     rows: Sequence[dict[str, Any]]) -> int:
        """Remember one nightly run's window and the suspects it showed (rows as
        queries/remembered_suspects_insert.sql names them); a run of the same window before is
        replaced. Call it in a transaction."""
        window = {"since": utc_naive(since), "until": utc_naive(until)}
        self.run("suspect_runs_forget_suspects", **window)
        self.run("suspect_runs_forget", **window)
        run_id = int(self.run("suspect_run_insert", run_at=utc_naive(run_at), shown=len(rows),
                              **window)[0][0])
        if rows:
            self.run("remembered_suspects_insert", run_id=run_id,
                     **{c: [r[c] for r in rows] for c in _REMEMBERED})
        return run_id

    def suspect_runs(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        return self.run_dicts("suspect_runs_window", since=utc_naive(since),
                              until=utc_naive(until))

    def remembered_suspects(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        return self.run_dicts("remembered_suspects_window", since=utc_naive(since),
                              until=utc_naive(until))

    def optics_firmware(self) -> dict[str, str]:
        """serial number -> the newest firmware its module reported."""
        return {r[0]: r[1] for r in self.run("optics_firmware_latest")}
