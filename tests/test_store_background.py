"""Store.in_background (issue #13): a read run on a second connection in a worker thread gives
what the same read gives here, sees what a transaction wrote when asked inside it, and hands
its errors to whoever asks for the result."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from auditor.ingest.captures import ingest_files
from auditor.store import Store

FAT_TREE = Path(__file__).resolve().parent / "fixtures" / "ibnetdiscover" / "ibsim_fattree_small.txt"
T0, T1 = datetime(2026, 11, 1, 6, tzinfo=UTC), datetime(2026, 11, 2, 6, tzinfo=UTC)


def test_a_read_in_the_background_gives_what_it_gives_here(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
    with Store(db, read_only=True) as store:
        threads: list[str] = []

        def read(s: Store) -> list[datetime]:
            threads.append(threading.current_thread().name)
            return s.snapshot_times(T1, limit=5)

        pending = [store.in_background(read) for _ in range(3)]
        here = store.snapshot_times(T1, limit=5)
        assert [p.result() for p in pending] == [here] * 3
        assert here  # else this test could not tell
        assert threads and all(t != threading.current_thread().name for t in threads)


def test_inside_a_transaction_it_reads_what_the_transaction_wrote(db: Path) -> None:
    with Store(db) as store, store.transaction():
        ingest_files(store, [FAT_TREE], at=T0)
        got = store.in_background(lambda s: s.snapshot_times(T1, limit=5)).result()
        assert got == [T0.replace(tzinfo=None)]


def test_an_error_reaches_whoever_asks_and_close_waits(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
    store = Store(db, read_only=True)
    failing = store.in_background(lambda s: s.run_dicts("source_issues_list", unused=1))
    slow = store.in_background(lambda s: s.snapshot_times(T1, limit=5))
    store.close()  # waits for both: neither is cut off by the connection closing
    assert slow.done() and slow.result() == [T0.replace(tzinfo=None)]
    with pytest.raises(duckdb.Error):
        failing.result()
