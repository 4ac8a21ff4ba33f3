"""The fabric as its snapshots: reading one, and keeping the newest ready to read in
fabric_cache (the reads it answers: fabric, port_peers, node_names, fabric_links_changed).
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import (
    Collection,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from datetime import UTC, datetime
from itertools import accumulate, chain
from operator import add, itemgetter, or_
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from auditor.errors import AuditorError
from auditor.models import (
    EdgeKey,
    Fabric,
    FabricNode,
    Link,
    LinkRows,
    NodeType,
    Port,
    PortKey,
    PortPeers,
)
from auditor.store.connection import Connection, duckdb, utc_naive

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


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
#
# Format 5 (schema 18, issue #25) adds indexes made when the cache is written, so that a command
# makes the objects of only the nodes, ports and links it asks about: at 65,536 GPUs, decoding
# every cell and making 393,216 ports, 196,608 links and the graph's adjacency was 2.5 s of every
# `suspects`. A column of kind _R holds its numbers as they are (a place in another part, or a
# count). `keys`: every node key of the snapshot's nodes, links, ports and peers (the nodes' in
# their order first, then the others as the links, ports and peers name them first), with the
# first place and count of its links (in `adjacent`), its ports and its peers (rows of those
# parts: both are sorted by GUID and port, so a node's rows are together). `adjacent`: link rows,
# node key by node key, each node's ascending, a link with both ends on one node once. `rates`:
# the links grouped by (an end is an HCA, width, speed), in the order of each group's first
# link, with the first place and count of its rows in `rated`.
_FABRIC_CACHE_FORMAT = 5
_FABRIC_CACHE_VERSION = 18  # the schema version that last changed fabric_cache
_S, _S0, _N, _N0, _R = 0, 1, 2, 3, 4  # string, string or null, number, number or null, raw
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
# the indexes made of them (format 5)
_INDEX_PARTS: dict[str, tuple[int, ...]] = {
    "keys": (_S, _R, _R, _R, _R, _R, _R),
    "adjacent": (_R,),
    "rates": (_R, _S0, _S0, _R, _R),
    "rated": (_R,),
}
_ALL_PARTS = {**_CACHE_PARTS, **_INDEX_PARTS}
_U32 = "I" if array("I").itemsize == 4 else "L"
_INT32 = (-(2**31), 2**31 - 1)  # DuckDB's integer, the type of every number cached
_NODE_TYPES = {t.value: t for t in NodeType}
_HCA = NodeType.HCA.value
Columns = list[Sequence[Any]]


class _DamagedCacheError(ValueError):
    """The fabric_cache row is not what this code writes."""


class FabricCacheDamagedError(AuditorError):
    """A part of the fabric cache read only when asked for is not what this code writes (what
    can be checked when the row is read is: a damaged row is read as the tables, with a
    warning)."""


def _as_columns(rows: Sequence[tuple[Any, ...]], width: int) -> Columns:
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


def _pick(values: list[Any], ids: Sequence[int]) -> Sequence[Any]:
    """values[i] for each i: itemgetter's loop runs in C (twice as fast as a map)."""
    if len(ids) > 1:
        return itemgetter(*ids)(values)  # type: ignore[no-any-return]
    return [values[i] for i in ids]


def _spans(at: npt.NDArray[np.int64], keys: int) -> tuple[npt.NDArray[np.int64],
                                                            npt.NDArray[np.int64]]:
    """The first row and count of each key's rows, `at` holding each row's key (0, 0 for a key
    without rows); ValueError when a key's rows are apart (fabric_ports and port_peers sort by
    GUID)."""
    import numpy as np

    count = np.bincount(at, minlength=keys)
    first = np.zeros(keys, dtype=np.int64)
    found, where = np.unique(at, return_index=True)
    first[found] = where
    # together: each row's key is the key of the row its place says it is in
    if len(at) and not np.array_equal(at, np.repeat(np.arange(keys), count)[
            np.argsort(np.repeat(first, count), kind="stable")]):
        raise ValueError("rows of one node apart")
    return first, count


def _index_parts(parts: dict[str, Columns]) -> dict[str, Columns]:
    """keys, adjacent, rates and rated (see above) of the parts, whose ports and peers come
    sorted by GUID and port. With numpy, which a topology ingest has loaded (issue #25: in
    Python, 196,608 links and 393,216 ports and peers at 65,536 GPUs were 1.5 s of every
    ingest)."""
    import numpy as np

    node_guids = parts["nodes"][0]
    a_guids, b_guids = parts["links"][0], parts["links"][2]
    # the nodes' in their order, then the others in the order the links (a end before b end,
    # link by link), the ports and the peers name them first
    order = dict.fromkeys(node_guids)
    for guids in (chain.from_iterable(zip(a_guids, b_guids, strict=True)), parts["ports"][0],
                  parts["peers"][0]):
        order.update(dict.fromkeys(guids))
    keys = list(order)
    place = {g: i for i, g in enumerate(keys)}

    def at(guids: Sequence[str]) -> npt.NDArray[np.int64]:
        return np.fromiter(map(place.__getitem__, guids), dtype=np.int64, count=len(guids))

    # Each key's link rows, ascending: every (key, row) of an end as key * links + row, sorted
    # and once (a link on two ports of one node is one row of its node).
    n = len(a_guids)
    rows = np.arange(n, dtype=np.int64)
    ends = np.sort(np.concatenate([at(a_guids) * n + rows, at(b_guids) * n + rows]))
    ends = ends[np.concatenate([[True], ends[1:] != ends[:-1]])] if n else ends
    adjacent = ends % n if n else ends
    link_count = np.bincount(ends // n if n else ends, minlength=len(keys))
    link_first = np.concatenate([[0], np.cumsum(link_count)[:-1]]) if len(keys) else link_count
    port_first, port_count = _spans(at(parts["ports"][0]), len(keys))
    peer_first, peer_count = _spans(at(parts["peers"][0]), len(keys))
    # the links by (an end is an HCA, width, speed): a group's rows ascending (a stable sort
    # by group), the groups in the order of their first link
    hcas = {g for g, t in zip(node_guids, parts["nodes"][1], strict=True) if t == _HCA}
    labels = list(zip(map(int, map(or_, map(hcas.__contains__, a_guids),
                                   map(hcas.__contains__, b_guids))),
                      *parts["links"][4:], strict=True))
    group_of = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    of_row = np.fromiter(map(group_of.__getitem__, labels), dtype=np.int64, count=n)
    sizes = np.bincount(of_row, minlength=len(group_of)).tolist()
    firsts = [0, *accumulate(sizes)]
    rates = [(*label, firsts[i], sizes[i]) for label, i in group_of.items()]
    return {"keys": [keys, *(c.tolist() for c in (link_first, link_count, port_first,
                                                  port_count, peer_first, peer_count))],
            "adjacent": [adjacent.tolist()], "rates": _as_columns(rates, 5),
            "rated": [np.argsort(of_row, kind="stable").tolist()]}


def _encode_fabric(parts: dict[str, Columns]) -> dict[str, bytes]:
    """The lookup lists (as JSON) and every part's index columns, as fabric_cache stores them,
    with the indexes made of them. Each part comes as its columns (`_as_columns` of a query's
    rows: the ports' and the peers' sorted by GUID and port)."""
    parts = parts | _index_parts(parts)
    strings: dict[str, int] = {}
    numbers: dict[int, int] = {}
    out: dict[str, bytes] = {}
    for name, kinds in _ALL_PARTS.items():
        ids = array(_U32)
        for column, kind in zip(parts[name], kinds, strict=True):
            if kind == _R:
                ids.extend(column)
                continue
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


class _Part:
    """One part of the cache row: its index columns as they are, each decoded when first asked
    for, and single cells read without decoding the rest."""

    __slots__ = ("_columns", "ids", "kinds", "lists", "rows")

    def __init__(self, name: str, blob: bytes, lists: dict[int, list[Any]]) -> None:
        kinds = _ALL_PARTS[name]
        if len(blob) % (4 * len(kinds)):
            raise _DamagedCacheError(f"{name}: not a whole number of rows")
        # Every index below 2**24, checked on the bytes in C (8 ms for 3.9 million): an index
        # past its list but below that is found when its column or cell is read.
        if max(map(len, lists.values())) < 2**24 and blob[3::4].count(0) != len(blob) // 4:
            raise _DamagedCacheError(f"{name}: an index past its list")
        self.ids = array(_U32)
        self.ids.frombytes(blob)
        if sys.byteorder == "big":
            self.ids.byteswap()
        self.kinds, self.lists = kinds, lists
        self.rows = len(self.ids) // len(kinds)
        self._columns: dict[int, Sequence[Any]] = {}

    def raw(self, i: int) -> array[int]:
        """Column i's indexes (or, of kind _R, its numbers)."""
        return self.ids[i * self.rows:(i + 1) * self.rows]

    def column(self, i: int) -> Sequence[Any]:
        found = self._columns.get(i)
        if found is None:
            kind = self.kinds[i]
            try:
                found = self.raw(i) if kind == _R else _pick(self.lists[kind],
                                                             self.raw(i).tolist())
            except IndexError:
                raise _damaged("an index past its list") from None
            self._columns[i] = found
        return found

    def cell(self, i: int, row: int) -> Any:
        try:
            value = self.ids[i * self.rows + row]
            return value if self.kinds[i] == _R else self.lists[self.kinds[i]][value]
        except IndexError:
            raise _damaged("an index past its list") from None

    def nonzero(self, i: int) -> list[int]:
        """The rows whose cell of column i is not 0 (not null, for kinds _S0 and _N0)."""
        raw = self.raw(i)
        blob = raw.tobytes()
        if blob.count(0) == len(blob):
            return []
        return [row for row, value in enumerate(raw) if value]


def _damaged(what: str) -> FabricCacheDamagedError:
    return FabricCacheDamagedError(
        f"the fabric cache is damaged ({what}); the next topology ingest rewrites it (or run "
        "`auditor ingest` on the newest capture again)")


class _CachedFabric(NamedTuple):
    seen_at: datetime
    prev_at: datetime | None  # the snapshot before, and its links that ran otherwise
    parts: dict[str, _Part]
    names: dict[str, tuple[str, str]]  # as node_names returns them
    changed: list[tuple[Any, ...]]
    key_of: dict[str, int]  # node key -> its row in `keys`
    node_count: int  # the first rows of `keys` are the nodes'


def _decode_fabric(row: tuple[Any, ...]) -> _CachedFabric:
    """(seen_at, prev_at, format, lookup, *parts) of the fabric_cache row read back, each part
    checked (but for an index past its list and below 2**24 in a part read only when asked
    for); _DamagedCacheError (saying what is wrong) when it is not what _encode_fabric wrote."""
    if len(row) != 4 + len(_ALL_PARTS) or row[2] != _FABRIC_CACHE_FORMAT:
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
    parts = {name: _Part(name, blob, lists) for name, blob in zip(_ALL_PARTS, blobs, strict=True)}
    try:
        # What every command reads is decoded now: the nodes, the names, the changed links
        # and the indexes' node keys (tens of thousands of cells, not millions).
        nodes, names, changed, keys = (
            [parts[p].column(i) for i in range(len(_ALL_PARTS[p]))]
            for p in ("nodes", "names", "changed", "keys"))
    except FabricCacheDamagedError:
        raise _DamagedCacheError("an index past its list") from None
    if not (set(nodes[1]) <= _NODE_TYPES.keys() and set(names[2]) <= _NODE_TYPES.keys()):
        raise _DamagedCacheError("an unknown node type")
    if prev_at is None and changed[0]:
        raise _DamagedCacheError("links of a snapshot before that is not there")
    key_of = {g: i for i, g in enumerate(keys[0])}
    rated = parts["rates"]
    if (len(key_of) != len(keys[0]) or list(keys[0][:len(nodes[0])]) != list(nodes[0])
            or not _within(keys[1], keys[2], parts["adjacent"].rows)
            or not _within(keys[3], keys[4], parts["ports"].rows)
            or not _within(keys[5], keys[6], parts["peers"].rows)
            or not _within(rated.raw(3), rated.raw(4), parts["rated"].rows)
            or max(parts["adjacent"].ids, default=-1) >= parts["links"].rows
            or max(parts["rated"].ids, default=-1) >= parts["links"].rows):
        raise _DamagedCacheError("indexes that do not fit their parts")
    ng, nn, nt = names
    return _CachedFabric(seen_at, prev_at, parts,
                         dict(zip(ng, zip(nn, nt, strict=True), strict=True)),
                         list(zip(*changed, strict=True)), key_of, len(nodes[0]))


def _within(first: Sequence[int], count: Sequence[int], size: int) -> bool:
    """Every [first, first + count) inside a part of `size` rows."""
    return max(map(add, first, count), default=0) <= size


class _LinkList(Sequence[Link]):
    """The snapshot's links, each made when first asked for (the same object after)."""

    __slots__ = ("_ids", "_made", "_n", "_numbers", "_strings", "_strings0", "_whole")

    def __init__(self, cache: _CachedFabric) -> None:
        part = cache.parts["links"]
        self._ids, self._n = part.ids, part.rows
        self._strings, self._numbers = part.lists[_S], part.lists[_N]
        self._strings0 = part.lists[_S0]
        self._made: list[Link | None] = [None] * part.rows
        self._whole = False  # every one made

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Link: ...
    @overload
    def __getitem__(self, i: slice) -> list[Link]: ...
    def __getitem__(self, i: int | slice) -> Link | list[Link]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        found = self._made[i]
        if found is None:
            ids, n, s, s0, num = self._ids, self._n, self._strings, self._strings0, self._numbers
            row = i if i >= 0 else i + n
            try:  # the cells of row `row` of the columns of _CACHE_PARTS["links"]
                found = Link(s[ids[row]], num[ids[n + row]], s[ids[2 * n + row]],
                             num[ids[3 * n + row]], s0[ids[4 * n + row]], s0[ids[5 * n + row]])
            except IndexError:
                raise _damaged("an index past its list") from None
            self._made[i] = found
        return found

    def __iter__(self) -> Iterator[Link]:
        made = self._made
        if not self._whole:  # all of them at once, in C (those made already kept)
            ids, n = self._ids, self._n
            try:
                columns = [_pick(lst, ids[i * n:(i + 1) * n].tolist()) for i, lst in enumerate(
                    (self._strings, self._numbers, self._strings, self._numbers,
                     self._strings0, self._strings0))]
            except IndexError:
                raise _damaged("an index past its list") from None
            self._made = made = [old or new for old, new in zip(made, map(Link, *columns),
                                                                 strict=True)]
            self._whole = True
        return iter(made)  # type: ignore[arg-type]  # none is None now

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class _PortMap(Mapping[PortKey, Port]):
    """The snapshot's ports: one made when asked for, all of them when iterated."""

    __slots__ = ("_all", "_cache", "_made", "_part")

    def __init__(self, cache: _CachedFabric) -> None:
        self._cache, self._part = cache, cache.parts["ports"]
        self._made: dict[int, Port] = {}
        self._all: dict[PortKey, Port] | None = None

    def row(self, row: int) -> Port:
        found = self._made.get(row)
        if found is None:
            cell = self._part.cell
            found = self._made[row] = Port(*(cell(i, row) for i in range(10)))
        return found

    def _row_of(self, key: object) -> int | None:
        if not (isinstance(key, tuple) and len(key) == 2):
            return None
        k = self._cache.key_of.get(key[0])
        if k is None:
            return None
        keys = self._cache.parts["keys"]
        first = keys.cell(3, k)
        return _find_port(self._part, range(first, first + keys.cell(4, k)), key[1])

    def __getitem__(self, key: PortKey) -> Port:
        row = self._row_of(key)
        if row is None:
            raise KeyError(key)
        return self.row(row)

    def __contains__(self, key: object) -> bool:
        return self._row_of(key) is not None

    def whole(self) -> dict[PortKey, Port]:
        if self._all is None:
            part, made = self._part, self._made
            columns = [part.column(i) for i in range(10)]
            ports: Iterable[Port] = map(Port, *columns)  # in C, unless some were made
            if made:
                ports = [made.get(row) or p for row, p in enumerate(ports)]
            self._all = dict(zip(zip(columns[0], columns[1], strict=True), ports, strict=True))
        return self._all

    def __iter__(self) -> Iterator[PortKey]:
        return iter(self.whole())

    def __len__(self) -> int:
        return self._part.rows

    def keys(self) -> KeysView[PortKey]:
        return self.whole().keys()

    def values(self) -> ValuesView[Port]:
        return self.whole().values()

    def items(self) -> ItemsView[PortKey, Port]:
        return self.whole().items()


def _find_port(part: _Part, rows: range, port: object) -> int | None:
    """The row of `rows` (one node's, in port order) whose column 1 (the port) is `port`: a
    switch's ports are mostly 1 to N, so its place is tried first."""
    if not rows:
        return None
    cell = part.cell
    if isinstance(port, int):
        guess: int = rows.start + port - cell(1, rows.start)
        if guess in rows and cell(1, guess) == port:
            return guess
    for row in rows:
        if cell(1, row) == port:
            return row
    return None


class _Peers(PortPeers):
    """port_peers from the cache: a port's peer read when asked for."""

    __slots__ = ("_cache", "_part")

    def __init__(self, cache: _CachedFabric) -> None:
        super().__init__(None)
        self._cache, self._part = cache, cache.parts["peers"]
        self._peers = None  # type: ignore[assignment]  # made when iterated

    def _rows(self, guid: str) -> range:  # its rows of `peers`
        k = self._cache.key_of.get(guid)
        if k is None:
            return range(0)
        keys = self._cache.parts["keys"]
        first = keys.cell(5, k)
        return range(first, first + keys.cell(6, k))

    def get(self, key: PortKey, default: Any = None) -> Any:
        if not (isinstance(key, tuple) and len(key) == 2):
            return default
        row = _find_port(self._part, self._rows(key[0]), key[1])
        if row is None:
            return default
        cell = self._part.cell
        return cell(2, row), cell(3, row)

    def __getitem__(self, key: PortKey) -> PortKey:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None  # type: ignore[arg-type]

    def _whole(self) -> dict[PortKey, PortKey]:
        if self._peers is None:
            pg, pp, qg, qp = (self._part.column(i) for i in range(4))
            self._peers = dict(zip(zip(pg, pp, strict=True), zip(qg, qp, strict=True),
                                   strict=True))
        return self._peers

    def __iter__(self) -> Iterator[PortKey]:
        return iter(self._whole())

    def __len__(self) -> int:
        return self._part.rows

    def covers(self, fabric: Fabric) -> bool:
        # The cache's peers are port_peers up to its snapshot, whose links are among them.
        return isinstance(fabric, _Fabric) and fabric.cache is self._cache

    def of_nodes(self, guids: Collection[str]) -> list[PortKey]:
        key_of, keys, part = self._cache.key_of, self._cache.parts["keys"], self._part
        firsts, counts = keys.column(5), keys.column(6)
        ids, numbers, off = part.ids, part.lists[_N], part.rows  # column 1: the port
        out: list[PortKey] = []
        try:
            for guid in guids:
                k = key_of.get(guid)
                if k is None:
                    continue
                first, count = firsts[k], counts[k]
                if count == 1:  # a host's port
                    out.append((guid, numbers[ids[off + first]]))
                elif count:
                    out.extend((guid, numbers[ids[off + row]])
                               for row in range(first, first + count))
        except IndexError:
            raise _damaged("an index past its list") from None
        return out


class _Fabric(Fabric):
    """The newest snapshot as the cache holds it: its nodes made, its ports and links when
    asked for, the questions of Fabric answered from the indexes."""

    __slots__ = ("cache",)

    def __init__(self, cache: _CachedFabric) -> None:
        nodes = [cache.parts["nodes"].column(i) for i in range(7)]
        guids, types, *rest = nodes
        super().__init__(cache.seen_at, dict(zip(guids, map(
            FabricNode, guids, map(_NODE_TYPES.__getitem__, types), *rest), strict=True)),
            _PortMap(cache), _LinkList(cache))
        self.cache = cache

    def link_rows(self) -> LinkRows:
        return _LinkRows(self.cache)

    def stray_ends(self) -> list[str]:
        keys = self.cache.parts["keys"]
        counts, guids = keys.column(2), keys.column(0)
        return [guids[k] for k in range(self.cache.node_count, keys.rows) if counts[k]]

    def rate_groups(self) -> dict[tuple[bool, str | None, str | None], list[int]]:
        rates, rated = self.cache.parts["rates"], self.cache.parts["rated"].ids
        return {(bool(hca), width, speed): rated[first:first + count].tolist()
                for hca, width, speed, first, count in zip(
                    *(rates.column(i) for i in range(5)), strict=True)}

    def hinted_ports(self) -> list[Port]:
        part = self.cache.parts["ports"]
        rows = sorted(set(part.nonzero(8)) | set(part.nonzero(9)))
        ports = self.ports
        assert isinstance(ports, _PortMap)  # noqa: S101 - made so in __init__
        return [p for p in map(ports.row, rows) if p.could_be_width or p.could_be_speed]


class _LinkRows(LinkRows):
    """Fabric.link_rows from the `keys` and `adjacent` parts (a node without links is not in
    it; iterated, the nodes come in the order of `keys`), what it answers by node from the
    links' index columns."""

    __slots__ = ("_adjacent", "_cache", "_counts", "_firsts")

    def __init__(self, cache: _CachedFabric) -> None:
        keys = cache.parts["keys"]
        super().__init__({}, ())
        self._cache, self._adjacent = cache, cache.parts["adjacent"].ids
        self._firsts, self._counts = keys.column(1), keys.column(2)

    def _rows(self, guid: str) -> Sequence[int]:
        k = self._cache.key_of.get(guid)
        if k is None:
            return ()
        first = self._firsts[k]
        return self._adjacent[first:first + self._counts[k]]

    def __getitem__(self, guid: str) -> Sequence[int]:
        rows = self._rows(guid)
        if not rows:
            raise KeyError(guid)
        return rows

    def __contains__(self, guid: object) -> bool:
        return isinstance(guid, str) and bool(self._rows(guid))

    def __iter__(self) -> Iterator[str]:
        guids = self._cache.parts["keys"].column(0)
        return (guids[k] for k, count in enumerate(self._counts) if count)

    def __len__(self) -> int:
        return len(self._counts) - list(self._counts).count(0)

    def peers(self, guid: str) -> list[str]:
        k = self._cache.key_of.get(guid)
        if k is None:
            return []
        links = self._cache.parts["links"]
        ids, n, strings = links.ids, links.rows, links.lists[_S]
        mine = self._cache.parts["keys"].ids[k]  # the node's GUID, as links' columns index it
        first, count = self._firsts[k], self._counts[k]
        try:
            if count == 1:  # an HCA's
                row = self._adjacent[first]
                return [strings[ids[2 * n + row] if ids[row] == mine else ids[row]]]
            return [strings[ids[2 * n + row] if ids[row] == mine else ids[row]]
                    for row in self._adjacent[first:first + count]]
        except IndexError:
            raise _damaged("an index past its list") from None

    def peers_of(self, guids: Iterable[str]) -> list[list[str]]:
        key_of, firsts, counts, adjacent = (self._cache.key_of, self._firsts, self._counts,
                                            self._adjacent)
        keys_ids = self._cache.parts["keys"].ids
        links = self._cache.parts["links"]
        ids, n, strings = links.ids, links.rows, links.lists[_S]
        out: list[list[str]] = []
        try:
            for guid in guids:
                k = key_of.get(guid)
                if k is None:
                    out.append([])
                    continue
                mine, first, count = keys_ids[k], firsts[k], counts[k]
                if count == 1:  # an HCA's
                    row = adjacent[first]
                    out.append([strings[ids[2 * n + row] if ids[row] == mine else ids[row]]])
                else:
                    out.append([strings[ids[2 * n + row] if ids[row] == mine else ids[row]]
                                for row in adjacent[first:first + count]])
        except IndexError:
            raise _damaged("an index past its list") from None
        return out

    def at_port(self, guid: str, port: int) -> list[int]:
        k = self._cache.key_of.get(guid)
        if k is None:
            return []
        links = self._cache.parts["links"]
        ids, n, numbers = links.ids, links.rows, links.lists[_N]
        mine = self._cache.parts["keys"].ids[k]
        first = self._firsts[k]
        try:
            return [row for row in self._adjacent[first:first + self._counts[k]]
                    if (ids[row] == mine and numbers[ids[n + row]] == port)
                    or (ids[2 * n + row] == mine and numbers[ids[3 * n + row]] == port)]
        except IndexError:
            raise _damaged("an index past its list") from None

    def keys_to(self, guid: str, peers: Collection[str]) -> list[EdgeKey]:
        k = self._cache.key_of.get(guid)
        if k is None:
            return []
        links = self._cache.parts["links"]
        ids, n, strings, numbers = links.ids, links.rows, links.lists[_S], links.lists[_N]
        mine = self._cache.parts["keys"].ids[k]
        first = self._firsts[k]
        out: list[EdgeKey] = []
        try:
            for row in self._adjacent[first:first + self._counts[k]]:
                a, b = ids[row], ids[2 * n + row]
                if strings[b if a == mine else a] in peers:
                    out.append((strings[a], numbers[ids[n + row]], strings[b],
                                numbers[ids[3 * n + row]]))
        except IndexError:
            raise _damaged("an index past its list") from None
        return out

    def ports_of(self, guids: Iterable[str]) -> list[PortKey]:
        key_of, firsts, counts = self._cache.key_of, self._firsts, self._counts
        adjacent = self._adjacent
        keys_ids = self._cache.parts["keys"].ids
        links = self._cache.parts["links"]
        ids, n, numbers = links.ids, links.rows, links.lists[_N]
        out: list[PortKey] = []
        try:
            for guid in guids:
                k = key_of.get(guid)
                if k is None:
                    continue
                mine, first = keys_ids[k], firsts[k]
                for row in adjacent[first:first + counts[k]]:
                    if ids[row] == mine:
                        out.append((guid, numbers[ids[n + row]]))
                    if ids[2 * n + row] == mine:
                        out.append((guid, numbers[ids[3 * n + row]]))
        except IndexError:
            raise _damaged("an index past its list") from None
        return out


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

