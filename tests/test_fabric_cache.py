"""The newest snapshot kept ready to read (fabric_cache, issue #13): what the store answers from
it is what the tables say, and a cache the topology has moved past is never used."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from auditor.ingest.captures import ingest_files
from auditor.models import Fabric
from auditor.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAT_TREE = FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"
LINKINFO = FIXTURES / "iblinkinfo" / "ibsim_fattree_small.txt"
DUPLICATE = FIXTURES / "ibnetdiscover" / "edited_duplicate_caguid_two_hosts.txt"
T0, T1, T2 = (datetime(2026, 11, d, 6, tzinfo=UTC) for d in (1, 2, 3))
END = datetime(2026, 12, 1, tzinfo=UTC)

Answers = tuple[Fabric, dict[tuple[str, int], tuple[str, int]], dict[str, tuple[str, str]]]


def _answers(store: Store, at: datetime) -> Answers:
    return store.fabric(at), store.port_peers(END), store.node_names()


def _from_tables(db: Path, at: datetime) -> Answers:
    """The same answers with the cache emptied: read from nodes, ports and links."""
    con = duckdb.connect(str(db))
    con.execute("delete from fabric_cache")
    con.close()
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is None
        return _answers(store, at)


def _cache_rows(db: Path) -> list[tuple[datetime, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [(r[0], r[1]) for r in con.execute("select seen_at, fingerprint from fabric_cache")
                .fetchall()]
    finally:
        con.close()


def test_an_ingested_snapshot_is_cached_and_reads_as_the_tables(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE, LINKINFO], at=T0)
        ingest_files(store, [DUPLICATE], at=T1)
    (seen_at, _), = _cache_rows(db)
    assert seen_at == T1.replace(tzinfo=None)
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is not None
        cached = _answers(store, T1)
    tables = _from_tables(db, T1)
    assert cached == tables
    fabric, peers, names = cached
    assert len(fabric.nodes) > 0 and len(fabric.ports) > 0 and len(fabric.links) > 0
    assert peers and names
    # Both GUID holders of the edited capture (`<guid>~2`) survive the round trip.
    assert any("~" in guid for guid in fabric.nodes)


def test_an_older_snapshot_and_an_earlier_until_read_the_tables(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
        ingest_files(store, [DUPLICATE], at=T1)
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is not None  # built for T1, not for T0
        old, peers_then, peers_now = store.fabric(T0), store.port_peers(T0), store.port_peers(END)
        new = store.fabric(T1)
    assert peers_then != peers_now and old != new  # else this test could not tell
    assert old == _from_tables(db, T0)[0]
    with Store(db, read_only=True) as store:
        assert store.port_peers(T0) == peers_then


def test_a_cache_built_before_the_topology_changed_is_not_used(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
    (_, before), = _cache_rows(db)
    with Store(db) as store:
        ingest_files(store, [DUPLICATE], at=T1)
        # A topology source forgotten behind the ingest's back (no rebuild): the fingerprint
        # no longer matches and the tables answer.
        ours = [s["source_id"] for s in store.sources() if s["observed_at"] == T1.replace(
            tzinfo=None)]
        with store.transaction():
            store.forget_sources(ours)
        assert store._fabric_cache() is None
        assert store.fabric(T1).nodes == {}
        assert store.fabric(T0) == _answers(store, T0)[0]
    (_, after), = _cache_rows(db)
    assert after != before


def test_a_damaged_cache_row_is_ignored(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
    con = duckdb.connect(str(db))
    con.execute("update fabric_cache set body = '\\x00\\x01'::blob")
    con.close()
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is None
        fabric = store.fabric(T0)
    assert len(fabric.links) > 0


def test_a_database_from_before_the_cache_gets_one_when_migrated(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
        version = store.schema_version()
    con = duckdb.connect(str(db))
    con.execute("drop table fabric_cache")
    con.execute("delete from schema_version where version >= 11")
    con.close()
    with Store(db, read_only=True) as store:  # a read-only command migrates it once
        assert store.schema_version() == version
        assert store._fabric_cache() is not None
        cached = _answers(store, T0)
    assert cached == _from_tables(db, T0)


def test_the_links_that_ran_otherwise_before_come_from_the_cache_as_from_the_tables(
        db: Path) -> None:
    """The snapshot before the newest: which of its links ran at another width or speed."""
    slow = FIXTURES / "iblinkinfo" / "ibsim_fattree_small.txt"
    text = slow.read_text()
    assert "4X" in text
    narrow = db.parent / "narrow.txt"
    narrow.write_text(text.replace("4X", "1X", 3))
    with Store(db) as store:
        ingest_files(store, [narrow], at=T0)
        ingest_files(store, [slow], at=T1)
    with Store(db, read_only=True) as store:
        cached = store._fabric_cache()
        assert cached is not None and cached.prev_at == T0.replace(tzinfo=None)
        changed = store.fabric_links_changed(T1, T0)
    assert changed  # else this test could not tell
    _from_tables(db, T1)
    with Store(db, read_only=True) as store:
        assert store.fabric_links_changed(T1, T0) == changed
