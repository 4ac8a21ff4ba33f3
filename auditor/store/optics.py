"""Transceiver diagnostics (issue #14): per-lane readings and the modules' thresholds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from auditor.models import LaneReading, OpticsReading
from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import (
        OpticsDailyRow,
        OpticsDeviceRow,
        OpticsFingerprintRow,
        OpticsModuleRow,
        OpticsReadingRow,
        OpticsThresholdRow,
        WatchEntryRow,
        WatchListRunRow,
    )


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

    def optics_daily_at_ports(self, since: datetime, until: datetime,
                              ports: Sequence[tuple[str, int]]) -> list[OpticsDailyRow]:
        """`optics_daily` of the modules read in any of `ports` (guid, port) in the window."""
        return cast("list[OpticsDailyRow]", self.run_dicts(
            "optics_daily_at_ports", since=utc_naive(since), until=utc_naive(until),
            guids=[g for g, _ in ports], ports=[p for _, p in ports]))

    def optics_thresholds_at_ports(self, since: datetime, until: datetime,
                                   ports: Sequence[tuple[str, int]]
                                   ) -> list[OpticsThresholdRow]:
        """`optics_thresholds_at(until)` of the modules read in any of `ports` in the
        window."""
        return cast("list[OpticsThresholdRow]", self.run_dicts(
            "optics_thresholds_asof_at_ports", since=utc_naive(since), until=utc_naive(until),
            guids=[g for g, _ in ports], ports=[p for _, p in ports]))

    # -- the watch list in buckets of devices (issue #25) -------------------------------------

    def optics_modules_per_device(self, since: datetime, until: datetime
                                  ) -> list[OpticsDeviceRow]:
        """How many modules each device had readings of in the window, by device."""
        return cast("list[OpticsDeviceRow]", self.run_dicts(
            "optics_modules_per_device", since=utc_naive(since), until=utc_naive(until)))

    def optics_modules_between(self, since: datetime, until: datetime, first: str,
                               last: str) -> list[OpticsModuleRow]:
        """The modules of the devices from `first` to `last` read in the window, each with
        its newest read time, placement and identity; numbered by `optics_lane_days`."""
        return cast("list[OpticsModuleRow]", self.run_dicts(
            "optics_modules_between", since=utc_naive(since), until=utc_naive(until),
            first=first, last=last))

    def optics_lane_days(self, since: datetime, until: datetime, first: str,
                         last: str) -> dict[str, Any]:
        """The lane readings of those modules as numpy columns: module (its index in
        `optics_modules_between`), lane (-1: none), day (from the day of `since`) and the
        quantities (masked where NULL), sorted by module, lane and day."""
        return self.run_numpy("optics_lane_days_between", since=utc_naive(since),
                              until=utc_naive(until), first=first, last=last)

    def optics_thresholds_between(self, until: datetime, first: str,
                                  last: str) -> list[OpticsThresholdRow]:
        """`optics_thresholds_at(until)` of the modules of the devices from `first` to
        `last`."""
        return cast("list[OpticsThresholdRow]", self.run_dicts(
            "optics_thresholds_asof_between", until=utc_naive(until), first=first, last=last))

    def optics_ports_read(self, since: datetime, until: datetime) -> set[tuple[str, int]]:
        """The (GUID, port) of every placed module reading in the window."""
        return {(str(g), int(p)) for g, p in self.run(
            "optics_ports_read", since=utc_naive(since), until=utc_naive(until))}

    def optics_fingerprint(self, since: datetime, until: datetime) -> OpticsFingerprintRow:
        """How many lane readings the window holds, the newest read time and source."""
        return cast("OpticsFingerprintRow", self.run_dicts(
            "optics_fingerprint", since=utc_naive(since), until=utc_naive(until))[0])

    # -- the precomputed watch list (issue #25, migration 0017) --------------------------------

    def watch_list_run(self) -> WatchListRunRow | None:
        """The stored watch list computation, if any."""
        found = self.run_dicts("watch_list_run")
        return cast("WatchListRunRow", found[0]) if found else None

    def watch_list_entries(self) -> list[WatchEntryRow]:
        """The stored watch list, strongest first."""
        return cast("list[WatchEntryRow]", self.run_dicts("watch_list_entries"))

    def clear_watch_list(self) -> None:
        self.run("watch_list_entries_clear")
        self.run("watch_list_runs_clear")

    def store_watch_list(self, run: WatchListRunRow, entries: Sequence[WatchEntryRow]) -> None:
        """Replace the stored computation with this one (call inside a transaction)."""
        self.clear_watch_list()
        self.run("watch_list_run_insert", **{k: utc_naive(v) if isinstance(v, datetime) else v
                                             for k, v in run.items()})
        if not entries:
            return
        columns = {k: [e[k] for e in entries]  # type: ignore[literal-required]
                   for k in entries[0]}
        columns["last_at"] = [utc_naive(v) for v in columns["last_at"]]
        self.run("watch_list_entries_insert", **columns)

    def optics_firmware(self) -> dict[str, str]:
        """serial number -> the newest firmware its module reported."""
        return {r[0]: r[1] for r in self.run("optics_firmware_latest")}
