"""Slurm jobs with their hosts, and the job logs' NCCL facts and failure lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from auditor.models import JobError, JobTable
from auditor.store.connection import Connection, naive_or_none, utc_naive

if TYPE_CHECKING:
    from auditor.store.meta import JobLogMeta
    from auditor.store.rows import (
        JobAskedRow,
        JobEndedRow,
        JobErrorRow,
        JobLogRow,
        JobLogUsingRow,
        LogJobRow,
    )

# Job logs a `job_logs_insert` statement stores (add_job_logs).
_LOGS_A_STATEMENT = 200


def _split_hosts(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs queries' `hosts`, one sorted comma-joined string (NULL: none), as a list: a
    month's 155,000 names cost DuckDB ~13 ms of CPU more as lists than as 13,000 strings split
    here (issue #13). A stored host name never holds a comma (JobTable.append)."""
    for job in jobs:
        joined = job["hosts"]
        job["hosts"] = joined.split(",") if joined is not None else []
    return jobs


class JobQueries(Connection):
    """Jobs, job logs and their failure lines."""

    def add_jobs(self, source_id: int, jobs: JobTable) -> None:
        """Store jobs; an earlier record of the same job id and start is replaced."""
        if not jobs:
            return
        from auditor.store.columns import jobs_columns

        self._con.register("job_batch", jobs_columns(jobs))
        try:
            self.run("jobs_stage")
        finally:
            self._con.unregister("job_batch")
        self.run("jobs_forget")
        self.run("job_nodes_forget")
        self.run("jobs_insert", source_id=source_id)
        self.run("job_nodes_insert")

    def jobs_ended(self, since: datetime, until: datetime, states: Iterable[str]
                   ) -> list[JobEndedRow]:
        """Jobs that ended in the window in one of `states`, with their hosts, by end time."""
        return cast("list[JobEndedRow]", _split_hosts(self.run_dicts(
            "jobs_ended_window", since=utc_naive(since), until=utc_naive(until),
            states=sorted(states))))

    def jobs_of_logs(self, since: datetime, until: datetime,
                     asks: Sequence[tuple[int, datetime, datetime, str]],
                     log_hosts: Mapping[str, str], job_hosts: Mapping[str, str]
                     ) -> list[LogJobRow]:
        """For each ask (log source id, lo, hi, host as job_nodes names it), the job runs of
        the window that had started and were running during [lo, hi] on that host and ran on
        every fabric host the log names: `log_hosts` maps the names logs print, `job_hosts`
        the names job_nodes holds, to fabric hosts (a name in neither is no host). By log,
        then end time."""
        if not asks:
            return []
        return cast("list[LogJobRow]", self.run_dicts(
            "jobs_of_logs", since=utc_naive(since), until=utc_naive(until),
            ask_source=[a[0] for a in asks], ask_lo=[utc_naive(a[1]) for a in asks],
            ask_hi=[utc_naive(a[2]) for a in asks], ask_host=[a[3] for a in asks],
            log_name=list(log_hosts), log_host=list(log_hosts.values()),
            job_name=list(job_hosts), job_host=list(job_hosts.values())))

    def jobs_on_hosts_during(self, since: datetime, until: datetime,
                             asks: Sequence[tuple[int, datetime, datetime, str]]
                             ) -> list[JobAskedRow]:
        """Jobs of the window that had started and were running during one of the asks'
        spans on its host: (ask id, lo, hi, host as job_nodes names it). Each job once, with
        all its hosts and the ids of the asks it answers, by end time."""
        if not asks:
            return []
        return cast("list[JobAskedRow]", _split_hosts(self.run_dicts(
            "jobs_on_hosts_during", since=utc_naive(since), until=utc_naive(until),
            ask_id=[a[0] for a in asks], ask_lo=[utc_naive(a[1]) for a in asks],
            ask_hi=[utc_naive(a[2]) for a in asks], ask_host=[a[3] for a in asks])))

    def jobs_extent(self) -> tuple[datetime | None, datetime | None]:
        """The first start and the last start or end of any job record (None, None: none)."""
        rows = self.run("jobs_extent")
        return (rows[0][0], rows[0][1]) if rows else (None, None)

    def job_host_names(self) -> list[str]:
        """Every host name a job was given (as sacct gave it), once each, sorted."""
        return [r[0] for r in self.run("job_host_names")]

    def add_job_errors(self, logs: Sequence[tuple[int, str | None, Sequence[JobError], set[int]]]
                       ) -> None:
        """The failure lines of job logs, all in one statement: (source id, job id or None,
        errors, the line numbers of the errors that are the first of their host/HCA/peer)."""
        rows = [(sid, job, e, e.line_no in first) for sid, job, errors, first in logs
                for e in errors]
        if not rows:
            return
        self.run("job_errors_insert", source_id=[r[0] for r in rows], job_id=[r[1] for r in rows],
                 line_no=[r[2].line_no for r in rows],
                 event_at=[utc_naive(r[2].at) if r[2].at else None for r in rows],
                 kind=[r[2].kind for r in rows], network=[r[2].network for r in rows],
                 host=[r[2].host for r in rows], hca=[r[2].hca for r in rows],
                 hca_port=[r[2].hca_port for r in rows], peer=[r[2].peer for r in rows],
                 status=[r[2].status for r in rows],
                 status_name=[r[2].status_name for r in rows],
                 rank=[r[2].rank for r in rows], is_first=[r[3] for r in rows],
                 message=[r[2].message for r in rows],
                 not_before=[naive_or_none(r[2].not_before) for r in rows],
                 not_after=[naive_or_none(r[2].not_after) for r in rows],
                 ran_ms=[r[2].ran_ms for r in rows],
                 dev_index=[r[2].dev_index for r in rows],
                 hca_candidates=[list(r[2].hca_candidates) for r in rows])

    def add_job_logs(self, logs: Sequence[JobLogMeta]) -> None:
        """What each job log says about its NCCL and its time span, in one statement."""
        # In statements of _LOGS_A_STATEMENT logs: DuckDB converts a statement's parameters
        # at once, and the Using lists' structs of 6,600 logs of the 65,536-GPU scenario (2.2
        # million (host, HCA) pairs) in one statement took the ingest to 4.4 GB.
        for at in range(0, len(logs), _LOGS_A_STATEMENT):
            part = logs[at:at + _LOGS_A_STATEMENT]
            self.run("job_logs_insert", source_id=[m.source_id for m in part],
                     job_id=[m.job_id for m in part], hosts=[sorted(m.hosts) for m in part],
                     first_at=[naive_or_none(m.first_at) for m in part],
                     last_at=[naive_or_none(m.last_at) for m in part],
                     written_at=[naive_or_none(m.written_at) for m in part],
                     nccl_versions=[list(m.nccl_versions) for m in part],
                     ib_timeout=[m.ib_timeout for m in part],
                     ib_retry_cnt=[m.ib_retry_cnt for m in part],
                     using=[[{"host": h, "hca": c} for h, c in sorted(m.using)] for m in part],
                     ib_hca=[m.ib_hca for m in part])

    def job_logs(self, since: datetime, until: datetime,
                 jobs_since: datetime | None = None) -> list[JobLogRow]:
        """The logs dated near [since, until], and those labelled with a job that had not
        ended before `jobs_since` (default: `since`). `hosts`, `first_at`, `last_at` and
        `written_at` only of the logs without a job (None for the others): they serve to
        match such a log to its job."""
        return cast("list[JobLogRow]", self.run_dicts(
            "job_logs_window", since=utc_naive(since), until=utc_naive(until),
            jobs_since=utc_naive(jobs_since or since)))

    def job_log_using(self, sources: Sequence[int]) -> list[JobLogUsingRow]:
        """The `NET/IB : Using` lists of the logs `sources` that have one, by source."""
        if not sources:
            return []
        return cast("list[JobLogUsingRow]", self.run_dicts(
            "job_log_using", sources=sorted(set(sources))))

    def job_log_settings(self, since: datetime, until: datetime
                         ) -> tuple[list[str], list[tuple[int, int | None]]]:
        """(NCCL versions, distinct (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT) set by environment) of
        every log labelled with a job or dated near [since, until]."""
        versions: list[str] = []
        waits: list[tuple[int, int | None]] = []
        for what, version, timeout, retry in self.run(
                "job_log_settings", since=utc_naive(since), until=utc_naive(until)):
            if what == "version":
                versions.append(version)
            else:
                waits.append((timeout, retry))
        return sorted(versions), sorted(waits, key=lambda w: (w[0], w[1] is None, w[1] or 0))

    def job_errors(self, since: datetime, until: datetime, sources: Sequence[int] = (),
                   jobs_since: datetime | None = None) -> list[JobErrorRow]:
        """Failure lines in the window, the undated lines of jobs that had not ended before
        `jobs_since` (default: `since`), and every line of the job logs `sources`: the
        columns the correlation reads (source_id, job_id, event_at, kind, network, host, hca,
        peer, is_first, not_before, not_after, ran_ms, hca_candidates), not the message."""
        return cast("list[JobErrorRow]", self.run_dicts(
            "job_errors_window", since=utc_naive(since), until=utc_naive(until),
            sources=list(sources), jobs_since=utc_naive(jobs_since or since)))
