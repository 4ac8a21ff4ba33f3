"""The topology snapshots' nodes, ports and links as ingested, and what else is read of them
(the fabric itself is read through auditor/store/fabric_cache.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from auditor.models import FabricNode, Link, Port
from auditor.store.connection import utc_naive
from auditor.store.fabric_cache import FabricCache


class TopologyQueries(FabricCache):
    """Topology snapshots stored (each write invalidates the fabric cache), and read."""

    def add_nodes(self, source_id: int, seen_at: datetime, nodes: Sequence[FabricNode]) -> None:
        if not nodes:
            return
        self._fabric_read = False
        columns: dict[str, Sequence[object]] = {
            "guid": [n.guid for n in nodes],
            "node_type": [str(n.node_type) for n in nodes],
            "description": [n.description for n in nodes],
            "name": [n.name for n in nodes],
            "model": [n.model for n in nodes],
            "device": [n.device for n in nodes],
            "lid": [n.lid for n in nodes]}
        self._insert("nodes_insert", "node_batch", source_id, seen_at, {}, columns)
        self._note_written(source_id, seen_at, "nodes", list(columns.values()))

    def add_ports(self, source_id: int, seen_at: datetime, ports: Sequence[Port]) -> None:
        if not ports:
            return
        self._fabric_read = False
        numbers = [p.port for p in ports]
        columns: dict[str, Sequence[object]] = {
            "guid": [p.guid for p in ports],
            "port_guid": [p.port_guid for p in ports],
            "lid": [p.lid for p in ports],
            "state": [p.state for p in ports],
            "phys_state": [p.phys_state for p in ports],
            "width": [p.width for p in ports],
            "speed": [p.speed for p in ports],
            "could_be_width": [p.could_be_width for p in ports],
            "could_be_speed": [p.could_be_speed for p in ports]}
        self._insert("ports_insert", "port_batch", source_id, seen_at, {"port": numbers}, columns)
        guids, *rest = columns.values()
        self._note_written(source_id, seen_at, "ports", [guids, numbers, *rest])

    def add_links(self, source_id: int, seen_at: datetime, links: Sequence[Link]) -> None:
        if not links:
            return
        self._fabric_read = False
        ints: dict[str, Sequence[int]] = {"a_port": [lk.a_port for lk in links],
                                          "b_port": [lk.b_port for lk in links]}
        columns: dict[str, Sequence[object]] = {
            "a_guid": [lk.a_guid for lk in links], "b_guid": [lk.b_guid for lk in links],
            "width": [lk.width for lk in links], "speed": [lk.speed for lk in links]}
        self._insert("links_insert", "link_batch", source_id, seen_at, ints, columns)
        self._note_written(source_id, seen_at, "links", [
            columns["a_guid"], ints["a_port"], columns["b_guid"], ints["b_port"],
            columns["width"], columns["speed"]])

    def _insert(self, query: str, batch: str, source_id: int, seen_at: datetime,
                ints: dict[str, Sequence[int]], objects: dict[str, Sequence[object]]) -> None:
        """Run `query`, which reads the rows from the columns registered as `batch`."""
        from auditor.store.columns import topology_columns

        self._con.register(batch, topology_columns(ints, objects))
        try:
            self.run(query, source_id=source_id, seen_at=utc_naive(seen_at))
        finally:
            self._con.unregister(batch)

    def add_topology_events(self, source_id: int, seen_at: datetime, prev_at: datetime) -> None:
        self.run("topology_events_insert", source_id=source_id, seen_at=utc_naive(seen_at),
                 prev_at=utc_naive(prev_at))

    def port_guid_owners(self, at: datetime) -> list[tuple[str, str, int]]:
        """(port GUID, node GUID, port) of the ports whose GUID is not their node's, in the newest
        topology at or before `at` (in the order they were stored)."""
        return [(r[0], r[1], r[2]) for r in self.run("port_guid_owners", at=utc_naive(at))]

    def lid_owners(self, at: datetime) -> list[tuple[int, str]]:
        """(LID, node GUID) of every port with a LID in the newest topology at or before `at`
        (in the order they were stored)."""
        return [(r[0], r[1]) for r in self.run("lid_owners", at=utc_naive(at))]

    def fabric_links(self, seen_at: datetime) -> list[Link]:
        """The links of the snapshot taken at `seen_at`, each once."""
        return [Link(*row) for row in self.run("fabric_links", seen_at=utc_naive(seen_at))]
