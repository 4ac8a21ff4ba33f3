"""Where things are (inventory, port labels) and the replacements recorded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from auditor.models import Location
from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import LocationRow, ReplacementRow, SerialSeenRow


class InventoryQueries(Connection):
    """Locations, port labels and replacements."""

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

    def add_port_labels(self, source_id: int, rows: Sequence[tuple[str, int, str]]) -> None:
        """Front-panel labels (node name, port, label) a fabric tool reported (ibdiagnet's
        PORT_HIERARCHY_INFO), under its source."""
        if rows:
            self.run("port_labels_insert", source_id=source_id, name=[r[0] for r in rows],
                     port=[r[1] for r in rows], label=[r[2] for r in rows])

    def locations(self) -> dict[str, LocationRow]:
        return {r["name"]: r for r in cast("list[LocationRow]",
                                           self.run_dicts("inventory_latest"))}

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

    def replacements(self) -> list[ReplacementRow]:
        return cast("list[ReplacementRow]", self.run_dicts("replacements_all"))

    def serials_seen(self, serials: Sequence[str], after: datetime) -> list[SerialSeenRow]:
        if not serials:
            return []
        return cast("list[SerialSeenRow]", self.run_dicts(
            "transceiver_serial_ports", serials=list(serials), after=utc_naive(after)))
