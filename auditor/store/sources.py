"""The ingested files (sources), what their readers could not use (issues), and forgetting a
source with everything it stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from auditor.store.connection import utc_naive
from auditor.store.fabric_cache import FabricCache

if TYPE_CHECKING:
    from auditor.store.meta import SourceMeta
    from auditor.store.rows import IssueRow, SourceRow


class SourceQueries(FabricCache):
    """Sources and their issues (forgetting one invalidates the fabric cache)."""

    def find_source(self, sha256: str, observed_at: datetime, explicit_at: bool) -> int | None:
        rows = self.run(
            "source_find",
            sha256=sha256,
            explicit_at=explicit_at,
            observed_at=utc_naive(observed_at),
        )
        return int(rows[0][0]) if rows else None

    def sources_of(self, sha256: str, observed_at: datetime,
                   explicit_at: bool) -> list[tuple[int, str | None]]:
        """(source id, options) of every source of this content (as `find_source`)."""
        rows = self.run("source_find", sha256=sha256, explicit_at=explicit_at,
                        observed_at=utc_naive(observed_at))
        return [(int(r[0]), r[1]) for r in rows]

    def stored_sources(self, sha256: Sequence[str]) -> dict[str, list[tuple[int, str | None]]]:
        """Which of these contents are stored already (as `find_source` without --at): content
        -> (source id, options) of each source."""
        found: dict[str, list[tuple[int, str | None]]] = {}
        for digest, sid, options in (self.run("sources_known", sha256=list(sha256))
                                     if sha256 else []):
            found.setdefault(digest, []).append((int(sid), options))
        return found

    def forget_sources(self, source_ids: Sequence[int]) -> None:
        """Delete these sources and everything they stored (a file ingested again with other
        options replaces its earlier records; call it in the ingest's transaction)."""
        if not source_ids:
            return
        self._fabric_read = False
        for query in ("source_forget_job_nodes", "source_forget_jobs", "source_forget_nodes",
                      "source_forget_ports", "source_forget_links", "source_forget_counters",
                      "source_forget_port_events", "source_forget_source_issues",
                      "source_forget_job_errors", "source_forget_job_logs",
                      "source_forget_host_addresses", "source_forget_maintenance",
                      "source_forget_host_events",
                      "source_forget_inventory", "source_forget_port_labels",
                      "source_forget_optics_readings", "source_forget_optics_thresholds",
                      "source_forget_transceivers", "source_forget_port_ber",
                      "source_forget_lft_switches", "source_forget_lft_captures",
                      "source_forget_sources"):
            self.run(query, source_ids=list(source_ids))

    def add_source(self, meta: SourceMeta) -> int:
        rows = self.run(
            "source_insert",
            kind=meta.kind,
            path=meta.path,
            sha256=meta.sha256,
            origin=meta.origin,
            observed_at=utc_naive(meta.observed_at),
            explicit_at=meta.explicit_at,
            ingested_at=utc_naive(datetime.now(UTC)),
            lines_total=meta.lines_total,
            lines_unparsed=meta.lines_unparsed,
            records=meta.records,
            options=meta.options,
        )
        return int(rows[0][0])

    def next_source_ids(self, n: int) -> list[int]:
        """`n` new source ids, ascending, for `add_sources`."""
        return [int(r[0]) for r in self.run("source_ids_next", n=n)] if n > 0 else []

    def add_sources(self, rows: Sequence[tuple[int, SourceMeta]]) -> None:
        """Record several files in one statement, each under an id from `next_source_ids`
        (`add_source` costs a round trip per file: 5 s of 6,105 job logs, issue #13)."""
        if not rows:
            return
        metas = [m for _, m in rows]
        now = utc_naive(datetime.now(UTC))
        self.run("sources_insert_many", source_id=[sid for sid, _ in rows],
                 kind=[m.kind for m in metas], path=[m.path for m in metas],
                 sha256=[m.sha256 for m in metas], origin=[m.origin for m in metas],
                 observed_at=[utc_naive(m.observed_at) for m in metas],
                 explicit_at=[m.explicit_at for m in metas], ingested_at=[now for _ in metas],
                 lines_total=[m.lines_total for m in metas],
                 lines_unparsed=[m.lines_unparsed for m in metas],
                 records=[m.records for m in metas], options=[m.options for m in metas])

    def sources(self) -> list[SourceRow]:
        return cast("list[SourceRow]", self.run_dicts("sources_list"))

    def mark_source_holds(self, source_id: int, *, topology: bool, counters: bool) -> None:
        """Say whether an ibdiagnet run's source holds a topology snapshot and counter
        readings (the snapshot queries take it for one only then)."""
        self.run("source_holds", source_id=source_id, has_topology=topology,
                 has_counters=counters)

    def source_kinds(self, since: datetime, until: datetime) -> dict[str, int]:
        """Per kind, the sources observed in [since, until]."""
        return {str(k): int(n) for k, n in self.run(
            "source_kinds_window", since=utc_naive(since), until=utc_naive(until))}

    def add_issues(self, source_id: int,
                   issues: Sequence[tuple[str, int, int | None, str | None]]) -> None:
        """issues: (reason, number of lines, first line number, example line)."""
        self.add_issues_of_many([(source_id, *i) for i in issues])

    def add_issues_of_many(
            self, issues: Sequence[tuple[int, str, int, int | None, str | None]]) -> None:
        """Issues of several sources in one statement: (source id, reason, lines, first line
        number, example line)."""
        if issues:
            self.run("source_issues_insert", source_id=[i[0] for i in issues],
                     reason=[i[1] for i in issues], lines=[i[2] for i in issues],
                     first_line_no=[i[3] for i in issues], example=[i[4] for i in issues])

    def issues(self) -> list[IssueRow]:
        return cast("list[IssueRow]", self.run_dicts("source_issues_list"))
