"""The newest snapshot as the fabric cache holds it, read lazily: the Fabric, its ports and
links, its link rows and port_peers, each object made when asked for from a decoded row
(fabric_codec.py).
"""

from __future__ import annotations

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
from typing import Any, overload

from auditor.models import (
    EdgeKey,
    Fabric,
    FabricNode,
    Link,
    LinkRows,
    Port,
    PortKey,
    PortPeers,
)
from auditor.store.fabric_codec import (
    _N,
    _NODE_TYPES,
    _S,
    _S0,
    _CachedFabric,
    _damaged,
    _Part,
    _pick,
)


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
