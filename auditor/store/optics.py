"""Transceiver diagnostics (issue #14): per-lane readings and the modules' thresholds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from auditor.models import LaneReading, OpticsReading
from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import OpticsDailyRow, OpticsReadingRow, OpticsThresholdRow


class OpticsQueries(Connection):
    """Transceiver diagnostics."""

    def add_optics(self, source_id: int, readings: Sequence[OpticsReading],
                   placed: Sequence[tuple[str | None, int | None]] | None = None) -> None:
        """Store module readings, one row per lane, and their thresholds, in two statements.
        `placed` gives each reading's (GUID, port) when the topology places it."""
        if not readings:
            return
        where = placed or [(None, None)] * len(readings)
        rows: list[tuple[OpticsReading, str | None, int | None, LaneReading | None]] = []
        for r, (guid, port) in zip(readings, where, strict=True):
            rows.extend((r, guid, port, lane) for lane in (r.lanes or (None,)))
        self.run("optics_readings_insert", source_id=source_id,
                 read_at=[utc_naive(r.read_at) for r, _, _, _ in rows],
                 device=[r.device for r, _, _, _ in rows],
                 port_name=[r.port_name for r, _, _, _ in rows],
                 guid=[g for _, g, _, _ in rows], port=[p for _, _, p, _ in rows],
                 vendor=[r.vendor for r, _, _, _ in rows],
                 part_number=[r.part_number for r, _, _, _ in rows],
                 serial_number=[r.serial_number for r, _, _, _ in rows],
                 firmware=[r.firmware for r, _, _, _ in rows],
                 temperature_c=[r.temperature_c for r, _, _, _ in rows],
                 vcc_v=[r.vcc_v for r, _, _, _ in rows],
                 lane=[ln.lane if ln else None for _, _, _, ln in rows],
                 tx_bias_ma=[ln.tx_bias_ma if ln else None for _, _, _, ln in rows],
                 tx_power_dbm=[ln.tx_power_dbm if ln else None for _, _, _, ln in rows],
                 rx_power_dbm=[ln.rx_power_dbm if ln else None for _, _, _, ln in rows])
        limits = [(r, q, t) for r in readings for q, t in sorted(r.thresholds.items())]
        if limits:
            self.run("optics_thresholds_insert", source_id=source_id,
                     read_at=[utc_naive(r.read_at) for r, _, _ in limits],
                     device=[r.device for r, _, _ in limits],
                     port_name=[r.port_name for r, _, _ in limits],
                     serial_number=[r.serial_number for r, _, _ in limits],
                     quantity=[q for _, q, _ in limits],
                     low_alarm=[t.low_alarm for _, _, t in limits],
                     low_warning=[t.low_warning for _, _, t in limits],
                     high_warning=[t.high_warning for _, _, t in limits],
                     high_alarm=[t.high_alarm for _, _, t in limits])

    def optics_readings(self, since: datetime, until: datetime) -> list[OpticsReadingRow]:
        """Every lane reading in the window, oldest first per module and lane."""
        return cast("list[OpticsReadingRow]", self.run_dicts(
            "optics_readings_window", since=utc_naive(since), until=utc_naive(until)))

    def optics_thresholds(self) -> list[OpticsThresholdRow]:
        """The newest thresholds of each module and quantity."""
        return cast("list[OpticsThresholdRow]", self.run_dicts("optics_thresholds_latest"))

    def optics_daily(self, since: datetime, until: datetime) -> list[OpticsDailyRow]:
        """Per module and lane, the daily medians of the window as lists (day numbers from
        the day of `since`)."""
        return cast("list[OpticsDailyRow]", self.run_dicts(
            "optics_daily", since=utc_naive(since), until=utc_naive(until)))

    def optics_thresholds_at(self, until: datetime) -> list[OpticsThresholdRow]:
        """The newest thresholds of each module and quantity read up to `until`."""
        return cast("list[OpticsThresholdRow]", self.run_dicts("optics_thresholds_asof",
                                                               until=utc_naive(until)))

    def optics_firmware(self) -> dict[str, str]:
        """serial number -> the newest firmware its module reported."""
        return {r[0]: r[1] for r in self.run("optics_firmware_latest")}
