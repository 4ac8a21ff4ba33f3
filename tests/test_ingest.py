"""Format recognition, the store's schema and transactions, and the SQL files."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor import sql
from auditor.errors import AuditorError
from auditor.ingest import detect_kind, ingest_files
from auditor.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KINDS = ("ibnetdiscover", "iblinkinfo", "perfquery", "ibqueryerrors")
CASES = [p for kind in KINDS for p in sorted((FIXTURES / kind).glob("*.txt"))
         if p.read_text().strip()]


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_auto_recognises_every_real_capture(path: Path) -> None:
    assert detect_kind(path.read_text(), str(path)) == path.parent.name


def test_schema_is_created_once_and_versioned(db: Path) -> None:
    with Store(db) as store:
        assert store.schema_version() >= 1
        first = store._con.execute("select count(*) from schema_version").fetchone()
    with Store(db) as store:
        again = store._con.execute("select count(*) from schema_version").fetchone()
    assert first == again


def test_failed_ingest_leaves_nothing_behind(tmp_path: Path, db: Path) -> None:
    good = FIXTURES / "ibnetdiscover" / "ibsim_fattree_small.txt"
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text() + "[9]\tthis line is not ibnetdiscover\n")
    with Store(db) as store:
        with pytest.raises(AuditorError, match=re.escape(f"{bad}:")):
            ingest_files(store, [good, bad], kind="ibnetdiscover")
        assert store.sources() == []
        assert store._con.execute("select count(*) from nodes").fetchone() == (0,)


def test_same_content_at_a_new_time_is_a_new_observation(db: Path) -> None:
    good = FIXTURES / "iblinkinfo" / "ibsim_fattree_small.txt"
    t1, t2 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    with Store(db) as store:
        assert ingest_files(store, [good], at=t1)[0].status == "ingested"
        assert ingest_files(store, [good], at=t1)[0].status == "already ingested"
        assert ingest_files(store, [good], at=t2)[0].status == "ingested"
        assert ingest_files(store, [good])[0].status == "already ingested"
        assert len(store.snapshot_times(t2, limit=5)) == 2


def test_every_query_file_is_one_statement_and_used() -> None:
    code = "\n".join(p.read_text() for p in Path(sql.__file__).parent.rglob("*.py"))
    for name in sql.names():
        sql.load(name)
        assert f'"{name}"' in code, f"queries/{name}.sql is not used"
