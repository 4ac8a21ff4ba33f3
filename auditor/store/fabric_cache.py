"""The fabric as its snapshots: reading one, and keeping the newest ready to read in
fabric_cache (the reads it answers: fabric, port_peers, node_names, fabric_links_changed).
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Sequence
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, NamedTuple

from auditor.models import Fabric, FabricNode, Link, NodeType, Port
from auditor.store.connection import Connection, duckdb, utc_naive


def _warn(message: str, *args: object) -> None:
    """A warning on the store's logger, whichever of its modules warns (logging is imported
    when one is given: 3 ms of every command otherwise, #25)."""
    import logging

    logging.getLogger("auditor.store").warning(message, *args)


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


def _encode_fabric(parts: dict[str, Columns]) -> dict[str, bytes]:
    """The lookup lists (as JSON) and every part's index columns, as fabric_cache stores them.
    Each part comes as its columns (`_as_columns` of a query's rows)."""
    strings: dict[str, int] = {}
    numbers: dict[int, int] = {}
    out: dict[str, bytes] = {}
    for name, kinds in _CACHE_PARTS.items():
        ids = array(_U32)
        for column, kind in zip(parts[name], kinds, strict=True):
            index: dict[Any, int] = strings if kind in (_S, _S0) else numbers
            # Places are given in the order values are first seen (part, column, row): a
            # column's distinct values in that order (dict.fromkeys, in C), then one lookup a
            # cell in C (issue #25: a 4,096-host snapshot is 460,000 cells).
            if kind in (_S, _N):
                for value in dict.fromkeys(column):
                    if value not in index:
                        index[value] = len(index)
                ids.extend(map(index.__getitem__, column))
                continue
            places: dict[Any, int] = {None: 0}
            for value in dict.fromkeys(column):
                if value is not None:
                    places[value] = index.setdefault(value, len(index)) + 1
            if len(places) == 1:  # all null (a port's state in ibnetdiscover's snapshot)
                ids.frombytes(bytes(4 * len(column)))
            else:
                ids.extend(map(places.__getitem__, column))
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


class FabricCache(Connection):
    """The snapshots' reads, answered from fabric_cache when it holds the one asked about."""

    # fabric_cache as read (None: there is none, or it is stale); read again after a topology
    # write (`_fabric_read` False)
    _cached_fabric: _CachedFabric | None = None
    _fabric_read = False

    _cache_due = False
    # What this open wrote of each snapshot (time -> source -> part -> columns, in the order of
    # fabric_nodes', fabric_ports' and fabric_links' rows): refresh_fabric_cache encodes a
    # snapshot that one source of this open wrote alone from these, without reading it back
    # (issue #25: 0.08 s of fetching rows at 4,096 hosts, and the encoding of strings whose hashes
    # are already known).
    _written: dict[datetime, dict[int, dict[str, Columns]]] | None = None

    def _note_written(self, source_id: int, seen_at: datetime, part: str,
                      columns: Columns) -> None:
        if self._written is None:
            self._written = {}
        parts = self._written.setdefault(utc_naive(seen_at), {}).setdefault(source_id, {})
        if part in parts:  # written twice by one source: the tables say what it makes
            parts["twice"] = []
        parts[part] = columns

    def _rolled_back(self) -> None:
        self._written = None

    def _migrated(self, version: int) -> None:
        # A database from before the cache: build it once, after the last step, whose schema
        # the snapshot queries read (schema 16 added sources.has_topology to snapshot_times).
        if version == _FABRIC_CACHE_VERSION:
            self._cache_due = True
        if self._cache_due and version == self.latest_version():
            self._cache_due = False
            self.refresh_fabric_cache()

    def snapshot_times(self, at: datetime, limit: int = 2) -> list[datetime]:
        """Times of the newest topology snapshots at or before `at`, newest first."""
        return [r[0] for r in self.run("snapshot_times", at=utc_naive(at), limit=limit)]

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
        snapshot = self._snapshot_as_written(at)
        if snapshot is None:
            snapshot = (_as_columns(self.run("fabric_nodes", seen_at=at), 7),
                        _as_columns(self.run("fabric_ports", seen_at=at), 10),
                        _as_columns(self.run("fabric_links", seen_at=at), 6))
        parts = _encode_fabric({
            "nodes": snapshot[0], "ports": snapshot[1], "links": snapshot[2],
            "peers": _as_columns(self.run("port_peers", until=at), 4),
            "names": _as_columns(self.run("node_names"), 3),
            "changed": _as_columns(self.run("fabric_links_changed", seen_at=at, prev_at=prev)
                                   if prev else [], 6)})
        self.run("fabric_cache_insert", seen_at=at, prev_at=prev,
                 fingerprint=self._topology_fingerprint(), format=_FABRIC_CACHE_FORMAT, **parts)

    def _snapshot_as_written(self, at: datetime) -> tuple[Columns, Columns, Columns] | None:
        """The columns of what fabric_nodes, fabric_ports and fabric_links would read of the
        snapshot at `at`, when one source of this open wrote it alone, each of its nodes, ports
        and links once: then a group is one row, and its aggregates are that row's values. None
        when the tables must say."""
        written = (self._written or {}).get(at)
        self._written = None  # a later refresh reads the tables (and the memory is freed)
        if written is None or len(written) != 1:
            return None
        (source_id, parts), = written.items()
        if "twice" in parts or [r[0] for r in self.run("snapshot_writers", seen_at=at)] != [
                source_id]:
            return None
        out: list[Columns] = []
        for part, width, key in (("nodes", 7, 1), ("ports", 10, 2), ("links", 6, 4)):
            columns = parts.get(part, [[] for _ in range(width)])
            if len(columns) != width:
                return None
            keys = list(zip(*columns[:key], strict=True))
            # one row per group: each node GUID, port and link written once
            if len(set(keys)) != len(keys):
                return None
            # in the queries' order (GUID, port; a link by its ends; the keys are distinct).
            # UTF-8 text sorts in DuckDB as in Python, by code point.
            order = sorted(range(len(keys)), key=keys.__getitem__)
            out.append([_pick(list(c), order) for c in columns])
        return out[0], out[1], out[2]

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
                _warn("%s: the fabric cache cannot be read (%s); the topology tables "
                             "answer instead", self.path, type(exc).__name__)
                return None
            if len(rows) == 1 and rows[0][2] == self._topology_fingerprint():
                row = rows[0]
                try:
                    self._cached_fabric = _decode_fabric((row[0], row[1], *row[3:]))
                except _DamagedCacheError as exc:
                    _warn("%s: the fabric cache is damaged (%s); the topology tables "
                                 "answer instead (slower, the same answers) until the next "
                                 "topology ingest rewrites it", self.path, exc)
            elif len(rows) > 1:
                _warn("%s: the fabric cache holds %d rows, not one; the topology "
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

    def routing_snapshot(self, seen_at: datetime
                         ) -> tuple[list[Link], list[tuple[str, int, int]]]:
        """What routes need of the snapshot taken at `seen_at` (issue #23): its links, and
        (node GUID, port, LID) of its CA and router ports with a LID; from the cached columns
        when it is the newest (the whole fabric's objects cost 4x as much at 4,096 hosts)."""
        at = utc_naive(seen_at)
        cached = self._fabric_cache()
        if cached is not None and cached.seen_at == at:
            ends_types = {NodeType.HCA.value, NodeType.ROUTER.value}
            ends = {g for g, t in zip(cached.nodes[0], cached.nodes[1], strict=True)
                    if t in ends_types}
            guids, ports, lids = cached.ports[0], cached.ports[1], cached.ports[3]
            return list(map(Link, *cached.links)), [
                (g, p, lid) for g, p, lid in zip(guids, ports, lids, strict=True)
                if lid and g in ends]
        return ([Link(*row) for row in self.run("fabric_links", seen_at=at)],
                [(r[0], r[1], r[2]) for r in self.run("lft_end_lids", seen_at=at)])

    def port_peers(self, until: datetime) -> dict[tuple[str, int], tuple[str, int]]:
        """Every port that ever carried a link up to `until`: its last peer."""
        at = utc_naive(until)
        cached = self._fabric_cache()
        # Links are stored at their snapshot's time: when the newest snapshot of all is not
        # after `until`, every link up to `until` is in the cached answer.
        if cached is not None and cached.seen_at <= at:
            return dict(cached.peers)
        return {(r[0], r[1]): (r[2], r[3]) for r in self.run("port_peers", until=at)}

    def node_names(self) -> dict[str, tuple[str, str]]:
        """The newest (name, node type) of every node GUID ever seen."""
        cached = self._fabric_cache()
        if cached is not None:
            return dict(cached.names)
        return {r[0]: (r[1], r[2]) for r in self.run("node_names")}

