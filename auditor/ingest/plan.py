"""`auditor ingest` with several files and `--kind auto`: which ingester takes which file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.errors import AuditorError
from auditor.ingest import kinds

if TYPE_CHECKING:
    from auditor.config import Settings
    from auditor.ingest.common import IngestResult
    from auditor.store import Store


@dataclass(slots=True)
class IngestPlan:
    captures: list[Path]
    capture_kind: str
    logs: list[Path]
    log_kind: str
    job_files: list[Path] = field(default_factory=list)
    job_kind: str = "auto"
    optics: list[Path] = field(default_factory=list)  # transceiver diagnostics captures
    optics_kind: str = "auto"


def plan_ingest(paths: Sequence[Path], kind: str) -> IngestPlan:
    """Split the files of one `ingest` by ingester (each file recognised when `auto`, by the
    registry of kinds: no ingester, and so none of their parsers, is imported here)."""
    every = ("auto", *kinds.names())
    if kind != "auto":
        entry = kinds.get(kind)
        if entry is None or entry.family is None:
            raise AuditorError(f"--kind {kind!r}: use one of {', '.join(every)}")
        return _plan(entry.family, list(paths), kind)
    # imported for `auto` only: with its thread pool, 5-10 ms of every other ingest (#25)
    from auditor.collect.logfile import read_head

    plan = IngestPlan([], "auto", [], "auto")
    for path in paths:
        if path.is_dir():
            from auditor.ingest.ibdiagnet import is_run_folder

            # An ibdiagnet output folder is the only folder a kind reads (issue #24).
            if not is_run_folder(path):
                raise AuditorError(f"{path}: a folder, and no ibdiagnet output folder (no "
                                   "ibdiagnet2.db_csv or .net_dump in it); pass its files")
            plan.captures.append(path)
            continue
        raw = read_head(path)
        # Lines holding NUL bytes (a crash's debris in a log) are blanked for recognition.
        head = b"\n".join(b"" if b"\x00" in line else line
                          for line in raw.split(b"\n")).decode("utf-8", "replace")
        if not head.strip():
            if b"\x00" in raw:
                raise AuditorError(f"{path}:1: binary data (NUL bytes) and no line this auditor "
                                   "knows in the first 64 KiB; a log is read with --kind")
            raise AuditorError(f"{path}:1: empty file, nothing to ingest")
        found = kinds.auto(head)
        if found is None:
            first = next(n for n, line in enumerate(head.splitlines(), 1) if line.strip())
            raise AuditorError(f"{path}:{first}: cannot tell what tool or log this is; pass "
                               f"--kind ({', '.join(every[1:])})")
        _files(plan, found[0]).append(path)
    return plan


def _plan(family: kinds.Family, paths: list[Path], kind: str) -> IngestPlan:
    plan = IngestPlan([], "auto", [], "auto")
    _files(plan, family).extend(paths)
    if family == "captures":
        plan.capture_kind = kind
    elif family == "logs":
        plan.log_kind = kind
    elif family == "jobs":
        plan.job_kind = kind
    else:
        plan.optics_kind = kind
    return plan


def _files(plan: IngestPlan, family: kinds.Family) -> list[Path]:
    return {"captures": plan.captures, "logs": plan.logs, "jobs": plan.job_files,
            "optics": plan.optics}[family]


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """What `auditor ingest` was told beside the files and the kind."""

    at: datetime | None = None  # a snapshot's time (or a module reading's)
    year: int | None = None
    tz: str | None = None
    host: str | None = None
    port: str | None = None
    job: str | None = None


def ingest_paths(store: Store, paths: Sequence[Path], kind: str, settings: Settings,
                 opts: IngestOptions) -> list[IngestResult]:
    """`auditor ingest`: every file into the store, in one transaction, each by the ingester
    of its kind. Each ingester is imported only when it has files (the log parsers cost
    `ingest --kind sacct` 0.03 s, issue #13)."""
    from auditor.ingest.captures import ingest_files, load_node_names
    from auditor.ingest.common import LogOptions

    plan = plan_ingest(paths, kind)
    logs = LogOptions.from_settings(settings, year=opts.year, tz=opts.tz, host=opts.host)
    with store.transaction():
        results = ingest_files(store, plan.captures, kind=plan.capture_kind, at=opts.at,
                               node_names=load_node_names(settings.node_name_map),
                               aliases=settings.aliases) if plan.captures else []
        if plan.logs:
            from auditor.ingest.logs import ingest_logs

            results += ingest_logs(store, plan.logs, plan.log_kind, logs)
        if plan.job_files:
            from auditor.ingest.jobs import JobOptions, ingest_job_files

            results += ingest_job_files(store, plan.job_files, plan.job_kind, JobOptions(
                tz=logs.tz, job=opts.job, year=logs.year, host=opts.host))
        if plan.optics:
            from auditor.ingest.optics import OpticsOptions, ingest_optics_files

            results += ingest_optics_files(store, plan.optics, plan.optics_kind, OpticsOptions(
                host=opts.host, port=opts.port, at=opts.at, aliases=settings.aliases))
    return results
