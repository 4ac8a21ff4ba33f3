"""The newest snapshot kept ready to read (fabric_cache, issue #13): what the store answers from
it is what the tables say, and a cache the topology has moved past is never used."""

from __future__ import annotations

import logging
import marshal
import os
import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from auditor import sql
from auditor.demo import DATA
from auditor.errors import AuditorError
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


Statement = str | tuple[str, dict[str, Any]]


def _damage(db: Path, *statements: Statement) -> None:
    con = duckdb.connect(str(db))
    try:
        for statement in statements:
            text, params = (statement, {}) if isinstance(statement, str) else statement
            con.execute(text, params)
    finally:
        con.close()


def _swap_string(old: str, new: str) -> Statement:
    """A statement that replaces one string of the cache's lookup list (JSON text)."""
    return ("update fabric_cache set lookup = encode(replace(decode(lookup), $old, $new))",
            {"old": f'"{old}"', "new": f'"{new}"'})


# Rows of the right fingerprint that are not what the store writes (issue #21): each is read as
# damaged, with a warning, and the tables answer.
DAMAGED: dict[str, list[Statement]] = {
    "not JSON lookup lists": ["update fabric_cache set lookup = '\\x00\\x01'::blob"],
    "lookup lists nested past the recursion limit": [
        "update fabric_cache set lookup = (repeat('[', 100000) || repeat(']', 100000))::blob"],
    "one lookup list": ["update fabric_cache set lookup = '[[\"a\"]]'::blob"],
    "a number that is text": [
        "update fabric_cache set lookup = encode(replace(decode(lookup), ']]', ',\"7\"]]'))"],
    "a number that is a float": [
        "update fabric_cache set lookup = encode(replace(decode(lookup), ']]', ',1.5]]'))"],
    "a number that is true": [
        "update fabric_cache set lookup = encode(replace(decode(lookup), ']]', ',true]]'))"],
    "a number past 32 bits": [
        "update fabric_cache set lookup = encode(replace(decode(lookup), ']]', ',4294967296]]'))"],
    "a part cut in a row": ["update fabric_cache set ports = ports[:-4]"],
    "a part of 5 bytes": ["update fabric_cache set nodes = '\\xff\\xff\\xff\\x7f\\x00'::blob"],
    "an index past its list": [
        "update fabric_cache set links = '\\xff\\xff\\xff\\x7f' || links[5:]"],
    "an unknown node type": [_swap_string("switch", "toaster")],
    "another format": ["update fabric_cache set format = 3"],
    "changed links without a snapshot before": [
        "update fabric_cache set changed = links, prev_at = null"],
    "a snapshot time that is bad text": [
        "alter table fabric_cache alter prev_at type varchar",
        "update fabric_cache set prev_at = '2026-13-45T99:00:00'"],
    "a part that is text": [
        "alter table fabric_cache alter names type varchar",
        "update fabric_cache set names = 'abc'"],
    "two rows": ["insert into fabric_cache select * from fabric_cache"],
    "no table": ["drop table fabric_cache"],
    "another table": ["drop table fabric_cache", "create table fabric_cache (body blob)",
                      "insert into fabric_cache values ('\\x5b\\xff\\xff\\xff\\x7f'::blob)"],
}


@pytest.mark.parametrize("how", DAMAGED)
def test_a_damaged_cache_row_is_read_as_the_tables_with_a_warning(
        db: Path, how: str, caplog: pytest.LogCaptureFixture) -> None:
    slow = FIXTURES / "iblinkinfo" / "ibsim_fattree_small.txt"
    narrow = db.parent / "narrow.txt"
    narrow.write_text(slow.read_text().replace("4X", "1X", 3))
    with Store(db) as store:
        ingest_files(store, [narrow], at=T0)
        ingest_files(store, [slow], at=T1)
    with Store(db, read_only=True) as store:
        assert store._fabric_cache() is not None
        intact = _answers(store, T1), store.fabric_links_changed(T1, T0)
    _damage(db, *DAMAGED[how])
    with caplog.at_level(logging.WARNING, logger="auditor.store"), \
            Store(db, read_only=True) as store:
        assert store._fabric_cache() is None
        damaged = _answers(store, T1), store.fabric_links_changed(T1, T0)
    assert damaged == intact
    assert intact[1]  # else the links that ran otherwise could not tell
    warned = [r.getMessage() for r in caplog.records if r.name == "auditor.store"]
    assert len(warned) == 1 and "fabric cache" in warned[0] and "tables answer" in warned[0]


def test_a_cache_claiming_huge_counts_allocates_nothing_for_them(db: Path) -> None:
    """Schema 11's marshal body `[` + 2**31 - 1 made every reader allocate 16 GiB; no part of
    the new row claims a count, so the same bytes anywhere in it cost nothing."""
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
        expected = _answers(store, T0)
    claim = b"[\xff\xff\xff\x7f"  # marshal: a list of 2**31 - 1 items
    _damage(db, ("update fabric_cache set lookup = $claim, nodes = $claim, ports = $claim || "
                 "$claim[:3], links = $huge || links[5:]", {"claim": claim, "huge": claim[1:]}))
    tracemalloc.start()
    try:
        with Store(db, read_only=True) as store:
            assert store._fabric_cache() is None
            got = _answers(store, T0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == expected
    assert peak < 20 * 2**20, peak  # what the small fabric itself takes, not gigabytes


# Schema 11 bodies (marshal, format 3) of the right fingerprint that every reader trusted:
# 5 bytes claiming a list of 2**31 - 1 items (16 GiB asked for), and the right format with rows
# of the wrong length, a bad ISO date and an unknown node type (a traceback from every command).
SCHEMA_11_BODIES = {
    "a list claiming 2**31 - 1 items": b"[\xff\xff\xff\x7f",
    "rows of the wrong shape": marshal.dumps(
        (3, [("0x1", "toaster")], [("0x1",)], [(1, 2, 3)], {}, {}, "2026-13-45", [])),
}


@pytest.mark.parametrize("body", SCHEMA_11_BODIES)
def test_a_schema_11_cache_body_is_dropped_unread_by_the_migration(db: Path, body: str) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
        fingerprint = store._topology_fingerprint()
    tables = _from_tables(db, T0)
    _damage(db, "drop table fabric_cache", sql.load("migrations/0011_fabric_cache"),
            "delete from schema_version where version >= 14")
    con = duckdb.connect(str(db))
    con.execute("insert into fabric_cache values ($at, $fp, $body)",
                {"at": T0.replace(tzinfo=None), "fp": fingerprint,
                 "body": SCHEMA_11_BODIES[body]})
    con.close()
    tracemalloc.start()
    try:
        with Store(db, read_only=True) as store:  # migrated once, as a read-only command does
            assert store._fabric_cache() is not None
            got = _answers(store, T0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == tables
    assert peak < 20 * 2**20, peak


def test_the_warning_of_a_damaged_cache_is_on_stderr_and_the_output_the_same(
        tmp_path: Path) -> None:
    db = tmp_path / "cli.duckdb"
    snap = DATA / "sweep-2026-11-30"

    def auditor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), *args],
                              capture_output=True, text=True, check=False, timeout=120,
                              env={**os.environ, "AUDITOR_CONFIG": "", "AUDITOR_DB": ""})

    ingest = auditor("ingest", "--at", "2026-11-30T02:00:00Z", str(snap / "ibnetdiscover.txt"),
                     str(snap / "iblinkinfo.txt"))
    assert ingest.returncode == 0, ingest.stderr
    window = ["--since", "3d", "--until", "2026-11-30T03:00:00Z", "--format", "json"]
    intact = auditor("topology", "--format", "json"), auditor("suspects", *window)
    _damage(db, _swap_string("switch", "toaster"))
    damaged = auditor("topology", "--format", "json"), auditor("suspects", *window)
    for good, bad in zip(intact, damaged, strict=True):
        assert good.returncode == bad.returncode == 0, bad.stderr
        assert good.stdout == bad.stdout and good.stdout.strip()
        assert "fabric cache" not in good.stderr
        assert "the fabric cache is damaged (an unknown node type)" in bad.stderr


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


def _cache_parts(db: Path) -> dict[str, Any]:
    """The fabric_cache row: the snapshot's nodes, ports and links parts as stored, and all of
    it decoded (node_names names no order, so its part and the places of what only it holds in
    the lookup lists come in the order the engine gave them)."""
    from auditor.store.fabric_codec import _decode_fabric

    con = duckdb.connect(str(db), read_only=True)
    try:
        (row,) = con.execute(sql.load("fabric_cache_get")).fetchall()
    finally:
        con.close()
    return {"nodes": row[5], "ports": row[6], "links": row[7], "fingerprint": row[2],
            "decoded": _decoded(_decode_fabric((row[0], row[1], *row[3:])))}


def _decoded(cache: Any) -> dict[str, Any]:
    """A decoded cache row as plain values: every part's columns (names as the dict
    node_names gives, its order being the engine's)."""
    out: dict[str, Any] = {name: [list(part.column(i)) for i in range(len(part.kinds))]
                           for name, part in cache.parts.items() if name != "names"}
    return out | {"seen_at": cache.seen_at, "prev_at": cache.prev_at, "names": cache.names,
                  "changed": cache.changed}


TOPOLOGY_FIXTURES = sorted((FIXTURES / "ibnetdiscover").glob("*.txt")) + sorted(
    (FIXTURES / "iblinkinfo").glob("*.txt"))


@pytest.mark.parametrize("capture", TOPOLOGY_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_snapshot_one_ingest_wrote_is_cached_as_the_tables_read_it(db: Path,
                                                                      capture: Path) -> None:
    """An ingest encodes the snapshot it wrote alone from what it wrote (issue #25); the cache
    is the one the tables make, byte for byte (the day before's snapshot, other captures, in
    the database: peers, names and changed links over both)."""
    with Store(db) as store:
        ingest_files(store, [FAT_TREE, LINKINFO], at=T0)
        ingest_files(store, [capture], at=T1)
        assert store._written is None  # used and let go
    written = _cache_parts(db)
    with Store(db) as store, store.transaction():
        store.refresh_fabric_cache()  # nothing written in this open: from the tables
    assert _cache_parts(db) == written
    assert written["decoded"]["seen_at"] == T1.replace(tzinfo=None) and written["nodes"]


def test_a_snapshot_two_sources_make_is_cached_from_the_tables(db: Path) -> None:
    with Store(db) as store:
        ingest_files(store, [FAT_TREE], at=T0)
        ingest_files(store, [LINKINFO], at=T0)  # the same snapshot, another source
        assert store._written is None
        merged = store.fabric(T0)
    # what neither capture says alone: ibnetdiscover's port GUIDs, iblinkinfo's port states
    assert any(p.port_guid for p in merged.ports.values())
    assert any(p.state for p in merged.ports.values())
    cached = _cache_parts(db)
    with Store(db) as store, store.transaction():
        store.refresh_fabric_cache()
    assert _cache_parts(db) == cached


def test_what_a_rolled_back_ingest_wrote_is_forgotten(db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("Switch 2 nonsense\n")
    with Store(db) as store:
        with pytest.raises(AuditorError):
            ingest_files(store, [FAT_TREE, bad], kind="ibnetdiscover", at=T0)
        assert store._written is None
        with store.transaction():
            store.add_nodes(1, T1, [])  # nothing to write: nothing noted
        assert store._written is None


def _encode_row_by_row(parts: dict[str, list[tuple[Any, ...]]]) -> dict[str, bytes]:
    """fabric_cache's format written the plain way (the code before #25): every cell of every
    part, column by column, row by row, takes the next place when first seen."""
    import json
    from array import array

    from auditor.store.fabric_codec import _CACHE_PARTS, _N, _S, _S0

    strings: dict[Any, int] = {}
    numbers: dict[Any, int] = {}
    out = {}
    for name, kinds in _CACHE_PARTS.items():
        ids = array("I")
        for i, kind in enumerate(kinds):
            index = strings if kind in (_S, _S0) else numbers
            for row in parts[name]:
                if kind in (_S, _N):
                    ids.append(index.setdefault(row[i], len(index)))
                else:
                    ids.append(0 if row[i] is None else index.setdefault(row[i], len(index)) + 1)
        if sys.byteorder == "big":
            ids.byteswap()
        out[name] = ids.tobytes()
    out["lookup"] = json.dumps([list(strings), list(numbers)], ensure_ascii=False,
                               separators=(",", ":")).encode()
    return out


def test_the_encoding_gives_each_value_its_place_where_first_seen() -> None:
    from auditor.store.fabric_codec import (
        _ALL_PARTS,
        _CACHE_PARTS,
        _FABRIC_CACHE_FORMAT,
        _as_columns,
        _decode_fabric,
        _encode_fabric,
    )

    widths = {"nodes": 7, "ports": 10, "links": 6, "peers": 4, "names": 3, "changed": 6}
    rows: dict[str, list[tuple[Any, ...]]] = {
        "nodes": [("0xb", "switch", "sw b", "sw-b", "MQM8700", None, 7),
                  ("0xa", "hca", "h a", "h-a", None, None, None)],
        # a text first seen in a later column, a number shared with nodes, all-null columns
        # (sorted by GUID and port, as fabric_ports and the ingest give them)
        "ports": [("0xa", 7, "0xa1", None, None, None, "4X", "EDR", None, None),
                  ("0xb", 1, None, 7, None, None, "4X", "HDR", None, None),
                  ("0xb", 2, "sw b", 9, None, None, None, None, None, None)],
        "links": [("0xa", 7, "0xb", 1, "4X", "HDR")],
        # sorted by GUID and port, as port_peers gives them
        "peers": [("0xb", 1, "0xa", 7), ("0xc", 3, "0xa", 7)],
        "names": [("0xc", "gone", "hca")],
        "changed": [("0xa", 7, "0xb", 1, "2X", None)],
    }
    parts = [*_CACHE_PARTS, "lookup"]
    got = _encode_fabric({k: _as_columns(v, widths[k]) for k, v in rows.items()})
    assert {k: got[k] for k in parts} == _encode_row_by_row(rows)
    empty = {k: [] for k in rows}
    assert {k: v for k, v in _encode_fabric({k: _as_columns([], widths[k]) for k in rows}
                                            ).items() if k in parts} == _encode_row_by_row(empty)
    at = T0.replace(tzinfo=None)
    decoded = _decode_fabric((at, at, _FABRIC_CACHE_FORMAT, got["lookup"],
                              *(got[k] for k in _ALL_PARTS)))
    assert [list(decoded.parts["ports"].column(i)) for i in range(10)] == _as_columns(
        rows["ports"], 10)
    assert decoded.changed == rows["changed"]
    # The indexes: the nodes' keys, then 0xc of the peers only; each one's links (in
    # `adjacent`), ports and peers as (first row, count); the link by (an HCA end, rate).
    assert _decoded(decoded)["keys"] == [["0xb", "0xa", "0xc"], [0, 1, 2], [1, 1, 0],
                                         [1, 0, 0], [2, 1, 0], [0, 0, 1], [1, 0, 1]]
    assert _decoded(decoded)["adjacent"] == [[0, 0]]
    assert _decoded(decoded)["rates"] == [[1], ["4X"], ["HDR"], [0], [1]]
    assert _decoded(decoded)["rated"] == [[0]]
