"""The fabric cache's format: a topology snapshot encoded as the columns and indexes of the
fabric_cache row, and that row decoded and checked (the store mixin that writes and reads it is
fabric_cache.py; the objects made of a decoded row are fabric_views.py).
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Sequence
from datetime import datetime
from itertools import accumulate, chain
from operator import add, itemgetter, or_
from typing import TYPE_CHECKING, Any, NamedTuple

from auditor.errors import AuditorError
from auditor.models import NodeType

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


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
