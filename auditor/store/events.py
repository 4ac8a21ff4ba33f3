"""Port events (link down/up, flaps) from switch logs, UFM, OpenSM, SNMP and the topology
snapshots, and placing them on the fabric's ports.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from auditor.models import PortEvent
from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import EventRow

Placement = tuple[str | None, int | None, str | None, int | None]  # guid, port, peer guid, port


class EventQueries(Connection):
    """Port events."""

    def add_events(self, source_id: int, origin: str, events: Sequence[PortEvent],
                   placed: Sequence[Placement] | None = None) -> None:
        """Store events; `placed` overrides their (GUID, port, peer GUID, peer port)."""
        if not events:
            return
        from auditor.store.columns import events_columns

        self._con.register("event_batch", events_columns(events, placed))
        try:
            self.run("port_events_stage")
        finally:
            self._con.unregister("event_batch")
        self.run("port_events_insert", source_id=source_id, origin=origin)

    def unmapped_event_ports(self) -> list[tuple[str, str | None]]:
        """(device, port name) of the port events no topology placed, each pair once."""
        return [(r[0], r[1]) for r in self.run("port_events_unmapped")]

    def map_event_ports(self, rows: Sequence[tuple[str, str | None, str, int | None]]) -> None:
        """Place unplaced port events: rows of (device, port name, GUID, port), one statement."""
        if rows:
            self.run("port_events_map", device=[r[0] for r in rows],
                     port_name=[r[1] for r in rows], guid=[r[2] for r in rows],
                     port=[r[3] for r in rows])

    def stored_events(self, origin: str, since: datetime, until: datetime
                      ) -> set[tuple[datetime, str, str | None, str | None, str | None,
                                     str | None]]:
        """(time UTC naive, state, device, port name, code, message) of the events of
        `origin` stored between `since` and `until`."""
        return {(r[0], r[1], r[2], r[3], r[4], r[5]) for r in self.run(
            "port_events_stored", origin=origin, since=utc_naive(since),
            until=utc_naive(until))}

    def events(self, since: datetime, until: datetime) -> list[EventRow]:
        return cast("list[EventRow]", self.run_dicts("port_events_window", since=utc_naive(since),
                                                     until=utc_naive(until)))
