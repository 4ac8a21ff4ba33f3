"""The nightly runs' remembered suspects (issue #15), for `auditor outcomes`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import RememberedSuspectRow, SuspectRunRow

# the columns of one remembered suspect (queries/remembered_suspects_insert.sql), issue #15
_REMEMBERED = ("rank", "component", "a_guid", "a_port", "a_name", "b_guid", "b_port", "b_name",
               "score", "points", "rules", "rule_points", "first_at", "last_at", "flaps",
               "jobs_failed", "gpu_hours_lost", "job_ids", "job_died_at", "job_gpu_hours")


class OutcomeQueries(Connection):
    """The nightly runs' remembered suspects."""

    def remember_run(self, run_at: datetime, since: datetime, until: datetime,
                     rows: Sequence[dict[str, Any]]) -> int:
        """Remember one nightly run's window and the suspects it showed (rows as
        queries/remembered_suspects_insert.sql names them); a run of the same window before is
        replaced. Call it in a transaction."""
        window = {"since": utc_naive(since), "until": utc_naive(until)}
        self.run("suspect_runs_forget_suspects", **window)
        self.run("suspect_runs_forget", **window)
        run_id = int(self.run("suspect_run_insert", run_at=utc_naive(run_at), shown=len(rows),
                              **window)[0][0])
        if rows:
            self.run("remembered_suspects_insert", run_id=run_id,
                     **{c: [r[c] for r in rows] for c in _REMEMBERED})
        return run_id

    def suspect_runs(self, since: datetime, until: datetime) -> list[SuspectRunRow]:
        return cast("list[SuspectRunRow]", self.run_dicts(
            "suspect_runs_window", since=utc_naive(since), until=utc_naive(until)))

    def remembered_suspects(self, since: datetime, until: datetime
                            ) -> list[RememberedSuspectRow]:
        return cast("list[RememberedSuspectRow]", self.run_dicts(
            "remembered_suspects_window", since=utc_naive(since), until=utc_naive(until)))
