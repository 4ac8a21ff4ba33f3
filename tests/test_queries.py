"""Every statement in queries/ binds against the schema a new database gets (all migrations
applied): a renamed column or table fails here, not in the middle of a user's command."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import sql
from auditor.store import Store

# Not preparable on their own, each for a reason; both run in every ingest test.
UNPREPARABLE = {
    "port_events_stage": "a CREATE statement (DuckDB prepares only DML/queries)",
    "port_events_insert": "reads `staged_events`, a relation registered at run time",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("queries") / "q.duckdb")


@pytest.mark.parametrize("name", [n for n in sql.names() if n not in UNPREPARABLE])
def test_query_binds_against_the_schema(store: Store, name: str) -> None:
    store.check_query(name)


def test_every_query_file_is_covered() -> None:
    files = {p.stem for p in (Path(sql.queries_dir())).glob("*.sql")} - {"schema"}
    assert files == set(sql.names())
    assert set(UNPREPARABLE) <= files
