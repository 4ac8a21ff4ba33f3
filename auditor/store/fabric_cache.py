"""The fabric as its snapshots: reading one, and keeping the newest ready to read in
fabric_cache (the reads it answers: fabric, port_peers, node_names, fabric_links_changed).
The row's format is fabric_codec.py; the objects read from it are fabric_views.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.models import Fabric, FabricNode, Link, NodeType, Port, PortPeers
from auditor.store.connection import Connection, duckdb, utc_naive
from auditor.store.fabric_codec import (
    _FABRIC_CACHE_FORMAT,
    _FABRIC_CACHE_VERSION,
    _NODE_TYPES,
    Columns,
    _as_columns,
    _CachedFabric,
    _DamagedCacheError,
    _decode_fabric,
    _encode_fabric,
    _pick,
)
from auditor.store.fabric_views import _Fabric, _Peers


def _warn(message: str, *args: object) -> None:
    """A warning on the store's logger, whichever of its modules warns (logging is imported
    when one is given: 3 ms of every command otherwise, #25)."""
    import logging

    logging.getLogger("auditor.store").warning(message, *args)


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
            return _Fabric(cached)
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
            nodes, ports_part = cached.parts["nodes"], cached.parts["ports"]
            ends = {g for g, t in zip(nodes.column(0), nodes.column(1), strict=True)
                    if t in ends_types}
            guids, ports, lids = (ports_part.column(i) for i in (0, 1, 3))
            return list(map(Link, *(cached.parts["links"].column(i) for i in range(6)))), [
                (g, p, lid) for g, p, lid in zip(guids, ports, lids, strict=True)
                if lid and g in ends]
        return ([Link(*row) for row in self.run("fabric_links", seen_at=at)],
                [(r[0], r[1], r[2]) for r in self.run("lft_end_lids", seen_at=at)])

    def port_peers(self, until: datetime) -> PortPeers:
        """Every port that ever carried a link up to `until`: its last peer."""
        at = utc_naive(until)
        cached = self._fabric_cache()
        # Links are stored at their snapshot's time: when the newest snapshot of all is not
        # after `until`, every link up to `until` is in the cached answer.
        if cached is not None and cached.seen_at <= at:
            return _Peers(cached)
        return PortPeers({(r[0], r[1]): (r[2], r[3]) for r in self.run("port_peers", until=at)})

    def node_names(self) -> dict[str, tuple[str, str]]:
        """The newest (name, node type) of every node GUID ever seen."""
        cached = self._fabric_cache()
        if cached is not None:
            return dict(cached.names)
        return {r[0]: (r[1], r[2]) for r in self.run("node_names")}

