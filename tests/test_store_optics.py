"""Transceiver diagnostics in the store (issue #14): one row per lane, thresholds beside them,
and a re-ingest with other options forgetting what the first one stored."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from auditor.models import LaneReading, OpticsReading, Thresholds
from auditor.store import SourceMeta, Store

AT = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def _reading(rx: float) -> OpticsReading:
    return OpticsReading(
        device="leaf01", port_name="IB1/17", read_at=AT, vendor="Mellanox",
        part_number="MMA4Z00-NS", serial_number="MT2231FT01234", firmware="46.120",
        temperature_c=41.5, vcc_v=3.29,
        lanes=(LaneReading(1, 7.1, 1.2, rx), LaneReading(2, 7.0, 1.1, -0.4)),
        thresholds={"rx_power_dbm": Thresholds(-10.4, -8.4, 4.0, 5.0),
                    "temperature_c": Thresholds(None, None, 70.0, 80.0)})


def _source(store: Store, digest: str) -> int:
    return store.add_source(SourceMeta("onyx-optics", "x.txt", digest, "file", AT, True, 9, 0, 1))


def test_readings_and_thresholds_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "a.duckdb") as store:
        sid = _source(store, "a" * 64)
        store.add_optics(sid, [_reading(-7.9), OpticsReading("gpu01", "mlx5_0/1", AT)],
                         placed=[("0x0002c90300a1b2c3", 17), (None, None)])
        rows = store.optics_readings(datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
        limits = store.optics_thresholds()
    assert [(r["device"], r["lane"], r["rx_power_dbm"], r["port"]) for r in rows] == [
        ("gpu01", None, None, None), ("leaf01", 1, -7.9, 17), ("leaf01", 2, -0.4, 17)]
    assert rows[1]["serial_number"] == "MT2231FT01234" and rows[1]["vcc_v"] == 3.29
    assert [(t["quantity"], t["low_alarm"], t["high_alarm"]) for t in limits] == [
        ("rx_power_dbm", -10.4, 5.0), ("temperature_c", None, 80.0)]


def test_forgetting_a_source_removes_its_readings(tmp_path: Path) -> None:
    with Store(tmp_path / "a.duckdb") as store:
        first = _source(store, "b" * 64)
        store.add_optics(first, [_reading(-7.9)])
        second = _source(store, "c" * 64)
        store.add_optics(second, [_reading(-9.0)])
        store.forget_sources([first])
        rows = store.optics_readings(datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
        limits = store.optics_thresholds()
    assert sorted(r["rx_power_dbm"] for r in rows) == [-9.0, -0.4]
    assert len(limits) == 2
