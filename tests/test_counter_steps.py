"""`suspects` reads the error counters of the flaps' window and of the ranking window in one query
(queries/counter_steps.sql, issue #13); each window's rows must be exactly what
queries/counter_deltas.sql gives for that window, whatever the readings: resets, saturated
counters, readings missing from an ibqueryerrors snapshot (an implied zero), windows whose
snapshots before them differ."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.models import CounterTable
from auditor.store import SourceMeta, Store

T0 = datetime(2026, 3, 1)  # noqa: DTZ001 - the store's naive UTC
KINDS = ("ibqueryerrors", "perfquery", "sysfs")
# LinkDownedCounter 8 bits, LocalLinkIntegrityErrors 4, SymbolErrorCounter and VL15Dropped 16
# (counter_widths); PortXmitData has no width: it is not an error counter.
COUNTERS = ("LinkDownedCounter", "SymbolErrorCounter", "LocalLinkIntegrityErrors",
            "VL15Dropped", "PortXmitData")
PORTS = (("0xa", 1), ("0xa", 2), ("0xb", 1), ("0xa", None))
VALUES = st.one_of(st.sampled_from([0, 1, 2, 15, 255, 65535, 65534, 2**32 - 1]),
                   st.integers(0, 40))
KEEP = ("guid", "port", "counter", "prev_at", "seen_at", "delta", "reset", "saturated")
_serial = count()


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("steps") / "empty.duckdb"
    Store(path).close()
    return path


def _store(empty_db: Path) -> Store:
    """A fresh store per example: a copy of one migrated empty database."""
    path = empty_db.with_name(f"s{next(_serial)}.duckdb")
    shutil.copy(empty_db, path)
    return Store(path)


snapshot = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, 12),  # observed at hour
    st.integers(-1, 1),  # its readings' seen_at, hours from observed_at (0: the same)
    st.lists(st.tuples(st.sampled_from(PORTS), st.sampled_from(COUNTERS), VALUES),
             max_size=10),
)


def _fill(store: Store, snaps: list[tuple[str, int, int, list[Any]]]) -> None:
    for i, (kind, hour, skew, readings) in enumerate(snaps):
        at = T0 + timedelta(hours=hour)
        digest = hashlib.sha256(str(i).encode()).hexdigest()
        sid = store.add_source(SourceMeta(kind, f"s{i}", digest, "file", at, True, 1, 0,
                                          len(readings)))
        store.add_counters(sid, at + timedelta(hours=skew) if skew and i % 3 == 0 else at,
                           CounterTable.from_rows([(g, p, c, v) for (g, p), c, v in readings]))


def _expected(store: Store, flaps_since: datetime, since: datetime,
              until: datetime) -> list[dict[str, Any]]:
    downs = [{k: d[k] for k in KEEP} for d in store.counter_deltas(flaps_since, until)
             if d["counter"] == "LinkDownedCounter" and (d["delta"] > 0 or d["reset"])]
    rest = [{k: d[k] for k in KEEP} for d in store.counter_deltas(since, until)
            if d["counter"] != "LinkDownedCounter"
            and (d["delta"] != 0 or d["reset"] or d["counter"] == "SymbolErrorCounter")]
    return sorted(downs + rest, key=lambda d: (d["guid"], d["port"], d["counter"], d["seen_at"]))


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(snaps=st.lists(snapshot, max_size=7), flaps_h=st.integers(-1, 13),
       since_h=st.integers(-1, 13), until_h=st.integers(0, 14))
def test_one_query_gives_each_windows_counter_deltas(empty_db: Path, snaps: list[Any],
                                                     flaps_h: int, since_h: int,
                                                     until_h: int) -> None:
    with _store(empty_db) as store:
        _fill(store, snaps)
        at = [T0 + timedelta(hours=h) for h in (flaps_h, since_h, until_h)]
        assert store.counter_steps(*at) == _expected(store, *at)


def _snap(store: Store, kind: str, hour: int, rows: list[tuple[str, int, str, int]]) -> None:
    at = T0 + timedelta(hours=hour)
    digest = hashlib.sha256(f"{kind}{hour}".encode()).hexdigest()
    sid = store.add_source(SourceMeta(kind, f"{kind}{hour}", digest, "file", at, True, 1, 0,
                                      len(rows)))
    store.add_counters(sid, at, CounterTable.from_rows(rows))


@pytest.fixture
def store(empty_db: Path) -> Iterator[Store]:
    with _store(empty_db) as s:
        yield s


def test_the_flaps_window_reaches_a_snapshot_the_ranking_window_does_not(store: Store) -> None:
    """ibqueryerrors printed the port's counters at 0:00 and left them out at 2:00 (0 then): the
    flaps' window, from the 0:00 snapshot on, holds that reading and so the zero at 2:00; the
    ranking window, from the 2:00 snapshot on, holds neither, and its symbol errors are
    perfquery's step from 9 to 12 alone, not a step from an implied 0 to 9."""
    _snap(store, "ibqueryerrors", 0, [("0xa", 1, "SymbolErrorCounter", 7),
                                      ("0xa", 1, "LinkDownedCounter", 3)])
    _snap(store, "ibqueryerrors", 2, [])
    _snap(store, "perfquery", 3, [("0xa", 1, "SymbolErrorCounter", 9),
                                  ("0xa", 1, "LinkDownedCounter", 4)])
    _snap(store, "ibqueryerrors", 4, [("0xa", 1, "LinkDownedCounter", 4)])
    _snap(store, "perfquery", 5, [("0xa", 1, "SymbolErrorCounter", 12)])
    flaps_since, since, until = (T0 + timedelta(hours=h) for h in (1, 2, 6))
    rows = store.counter_steps(flaps_since, since, until)
    assert rows == _expected(store, flaps_since, since, until)
    # LinkDownedCounter over the flaps' window: 3 -> 0 (implied at 2:00) -> 4 (perfquery)
    assert [(d["counter"], d["delta"], d["seen_at"].hour) for d in rows] == [
        ("LinkDownedCounter", 0, 2), ("LinkDownedCounter", 4, 3), ("SymbolErrorCounter", 3, 5)]
    assert [d["reset"] for d in rows] == [True, False, False]


def test_ber_reads_only_the_data_counter_asked_of_each_port(store: Store) -> None:
    """A port's PortRcvData and its peer's PortXmitData, resets and saturated 32-bit readings
    left out, as before the counters were asked per series (issue #13)."""
    for hour, (rcv, xmit) in enumerate([(10, 100), (30, 2**32 - 1), (20, 2**32 - 1), (50, 400)]):
        _snap(store, "perfquery", hour, [("0xa", 1, "PortRcvData", rcv),
                                         ("0xa", 1, "PortXmitData", xmit),
                                         ("0xb", 1, "PortRcvData", rcv),
                                         ("0xb", 1, "PortXmitData", xmit)])
    since, until = T0, T0 + timedelta(hours=4)
    got = store.data_deltas(since, until, [("0xa", 1, "PortRcvData"), ("0xb", 1, "PortXmitData")])
    at = [T0 + timedelta(hours=h) for h in range(4)]
    assert got == [("0xa", 1, "PortRcvData", at[0], at[1], 20),  # 30 -> 20: a reset, unknown
                   ("0xa", 1, "PortRcvData", at[2], at[3], 30)]  # 0xb: saturated, then 400 < max
    assert store.data_deltas(since, until, []) == []
