"""What the host side knows: host addresses (hosts files), maintenance windows, host events
(boots, crashes, Slurm node states), and which hosts any of it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from auditor.models import HostAddress, HostEvent, MaintenanceWindow
from auditor.store.connection import Connection, naive_or_none, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import HostEventRow, MaintenanceRow


class HostQueries(Connection):
    """Host addresses, maintenance windows and host events."""

    def hosts_read(self, until: datetime) -> tuple[set[str], set[str]]:
        """(host names, HCA GUIDs) the host side has told us anything about up to `until`."""
        names: set[str] = set()
        guids: set[str] = set()
        for what, key in self.run("coverage_hosts_read", until=utc_naive(until)):
            (names if what == "host" else guids).add(key)
        return names, guids

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

    def maintenance(self, since: datetime, until: datetime) -> list[MaintenanceRow]:
        return cast("list[MaintenanceRow]", self.run_dicts(
            "maintenance_window", since=utc_naive(since), until=utc_naive(until)))

    # -- host events (issue #20) -----------------------------------------------------------------

    def add_host_events(self, source_id: int, rows: Sequence[HostEvent]) -> None:
        if rows:
            self.run("host_events_insert", source_id=source_id, host=[r.host for r in rows],
                     event_at=[utc_naive(r.at) for r in rows], kind=[r.kind for r in rows],
                     end_at=[naive_or_none(r.end_at) for r in rows],
                     reason=[r.reason for r in rows], line_no=[r.line_no for r in rows],
                     message=[r.message for r in rows])

    def host_events(self, since: datetime, until: datetime) -> list[HostEventRow]:
        """Boots, crashes and Slurm node states touching [since, until], oldest first."""
        return cast("list[HostEventRow]", self.run_dicts(
            "host_events_window", since=utc_naive(since), until=utc_naive(until)))

    def host_event_hosts(self) -> dict[str, set[str]]:
        """Source kind (slurm-events, slurmctld, boots, dmesg) -> the host names it speaks of."""
        out: dict[str, set[str]] = {}
        for host, kind in self.run("host_events_hosts"):
            out.setdefault(kind, set()).add(host)
        return out
