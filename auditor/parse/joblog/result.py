"""What `parse_joblog` returns, and the "first error" rule (also applied to the errors of
several logs of one job)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from auditor.models import JobError

MESSAGE_LIMIT = 512


@dataclass(slots=True)
class JoblogResult:
    errors: list[JobError] = field(default_factory=list)
    first: list[JobError] = field(default_factory=list)
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)  # line_no, line, reason
    ignored: int = 0
    hosts: set[str] = field(default_factory=set)
    hca_ports: dict[tuple[str, str], int] = field(default_factory=dict)
    addresses: dict[str, str] = field(default_factory=dict)  # OOB / bootstrap address -> host
    nccl_versions: list[str] = field(default_factory=list)  # "2.21.5", in order of appearance
    # NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT as NCCL reports them "set by environment" (INFO only)
    nccl_env: dict[str, int] = field(default_factory=dict)
    # (host, HCA) of every `NET/IB : Using` list: the HCAs NCCL opened on that host
    using: set[tuple[str, str]] = field(default_factory=set)
    # NCCL_IB_HCA as NCCL reports it ("NCCL_IB_HCA set to ^=mlx5_0:1,mlx5_1"), INFO only
    ib_hca: str | None = None

    @property
    def dated(self) -> tuple[datetime, datetime] | None:
        """The earliest and latest stamp of the log's failure lines, if any has one."""
        ats = [e.at for e in self.errors if e.at is not None]
        return (min(ats), max(ats)) if ats else None


def first_errors(errors: Iterable[JobError]) -> list[JobError]:
    """The first network error per (host, hca, peer) and the first other error per (host, rank,
    kind), in input order. "First" is the earlier `at` when both are known, else the earlier
    input. Rank is in the second key because every rank reports its own watchdog timeout."""
    best: dict[tuple[object, ...], tuple[int, JobError]] = {}
    for i, e in enumerate(errors):
        key: tuple[object, ...] = (
            (True, e.host, e.hca, e.peer) if e.network else (False, e.host, e.rank, e.kind)
        )
        seen = best.get(key)
        if seen is None or (seen[1].at is not None and e.at is not None and e.at < seen[1].at):
            best[key] = (i, e)
    return [e for _, e in sorted(best.values(), key=lambda pair: pair[0])]
