"""What an ingest hands the store about a file beside its records: SourceMeta for every file,
JobLogMeta for a job log. auditor.store builds these classes the first time one is asked for
(a frozen dataclass is a millisecond of start-up; only the ingesting commands use them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class SourceMeta:
    """What the store records about one ingested file."""

    kind: str
    path: str
    sha256: str
    origin: str
    observed_at: datetime
    explicit_at: bool
    lines_total: int
    lines_unparsed: int
    records: int
    # What besides the content changes the result (kind, job, year, zone, ...: JSON text).
    options: str | None = None


@dataclass(frozen=True, slots=True)
class JobLogMeta:
    """What the store records about one job log beside its failure lines."""

    source_id: int
    job_id: str | None
    hosts: frozenset[str]
    first_at: datetime | None
    last_at: datetime | None
    written_at: datetime | None
    nccl_versions: tuple[str, ...]
    ib_timeout: int | None
    ib_retry_cnt: int | None
    # (host as printed, HCA) of the log's `NET/IB : Using` lists; NCCL_IB_HCA as printed
    using: frozenset[tuple[str, str]] = frozenset()
    ib_hca: str | None = None
