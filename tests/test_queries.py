"""Every statement in queries/ binds against the schema a new database gets (all migrations
applied): a renamed column or table fails here, not in the middle of a user's command."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import sql
from auditor.models import Job, JobTable
from auditor.store import Store

# Not preparable on their own, each for a reason; all run in every ingest test.
UNPREPARABLE = {
    "port_events_stage": "a CREATE statement (DuckDB prepares only DML/queries)",
    "port_events_insert": "reads `staged_events`, a relation registered at run time",
    "jobs_stage": "a CREATE statement (DuckDB prepares only DML/queries)",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = Store(tmp_path_factory.mktemp("queries") / "q.duckdb")
    # The job statements read `staged_jobs`, the temporary table jobs_stage makes: storing one
    # job leaves it behind, so they bind against what jobs_stage really makes.
    table = JobTable()
    table.append(Job("1", "FAILED", None, None, ("gpu-001",)))
    store.add_jobs(1, table)
    return store


@pytest.mark.parametrize("name", [n for n in sql.names() if n not in UNPREPARABLE])
def test_query_binds_against_the_schema(store: Store, name: str) -> None:
    store.check_query(name)


def test_every_query_file_is_covered() -> None:
    files = {p.stem for p in (Path(sql.queries_dir())).glob("*.sql")} - {"schema"}
    assert files == set(sql.names())
    assert set(UNPREPARABLE) <= files
