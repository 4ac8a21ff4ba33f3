"""What a sweep collects from the switches besides counters: each device's collection status,
SNMP interface polls and the transceivers in the ports.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import DeviceStatusRow, SnmpPortRow, TransceiverRow


class SwitchQueries(Connection):
    """Device status, SNMP polls and transceivers."""

    def add_device_status(self, checked_at: datetime, device: str, collector: str,
                          status: str, detail: str) -> None:
        self.run("device_status_insert", checked_at=utc_naive(checked_at), device=device,
                 collector=collector, status=status, detail=detail)

    def device_status(self) -> list[DeviceStatusRow]:
        return cast("list[DeviceStatusRow]", self.run_dicts("device_status_latest"))

    def add_snmp_ports(self, polled_at: datetime, device: str, sys_uptime_ticks: int | None,
                       rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        cols = ["if_index", "if_name", "oper_status", "admin_status", "last_change_ticks",
                "in_errors", "out_errors", "hc_in_octets", "hc_out_octets", "symbol_errors",
                "phys_state", "guid", "port"]
        self.run("snmp_ports_insert", polled_at=utc_naive(polled_at), device=device,
                 sys_uptime_ticks=sys_uptime_ticks, **{c: [r[c] for r in rows] for c in cols})

    def last_snmp_poll(self, device: str, before: datetime) -> list[SnmpPortRow]:
        return cast("list[SnmpPortRow]", self.run_dicts("snmp_last_poll", device=device,
                                                        before=utc_naive(before)))

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

    def transceivers(self) -> list[TransceiverRow]:
        return cast("list[TransceiverRow]", self.run_dicts("transceivers_latest"))

    def transceivers_at(self, ports: Sequence[tuple[str, int | None]]) -> list[TransceiverRow]:
        """The newest module in each of `ports` (GUID, port; the port may be None), in
        transceivers_latest's order: the rows of those ports only."""
        if not ports:
            return []
        wanted = sorted(set(ports), key=lambda gp: (gp[0], gp[1] is not None, gp[1] or 0))
        return cast("list[TransceiverRow]", self.run_dicts(
            "transceivers_of_ports", guids=[g for g, _ in wanted],
            ports=[p for _, p in wanted]))

    def cohort_parts(self, incidents: dict[tuple[str, int], int]
                     ) -> list[tuple[str, str | None, str | None, str | None, str | None, int]]:
        """The cohorts' parts as (ident, part number, vendor, firmware, lot, incidents), by
        ident (cohort_parts.sql); `incidents`: per (GUID, port), the ports that had any."""
        wanted = sorted(incidents.items())
        return self.run("cohort_parts", guids=[g for (g, _), _ in wanted],
                        ports=[p for (_, p), _ in wanted], incidents=[n for _, n in wanted])

    def cohort_counts(self, incidents: dict[tuple[str, int], int]
                      ) -> list[tuple[str, str | None, int, int, int, str | None]]:
        """The cohorts' counts (cohort_counts.sql): per field and known value (field, value,
        parts, parts with an incident, incidents, most common part number), and the totals of
        all parts as field ''. `incidents` as for cohort_parts."""
        wanted = sorted(incidents.items())
        return self.run("cohort_counts", guids=[g for (g, _), _ in wanted],
                        ports=[p for (_, p), _ in wanted], incidents=[n for _, n in wanted])
