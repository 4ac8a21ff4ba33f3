"""`auditor ingest` with several files and `--kind auto`: which ingester takes which file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor.errors import AuditorError
from auditor.ingest import kinds


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
    from auditor.collect.logfile import read_head

    every = ("auto", *kinds.names())
    if kind != "auto":
        entry = kinds.get(kind)
        if entry is None or entry.family is None:
            raise AuditorError(f"--kind {kind!r}: use one of {', '.join(every)}")
        return _plan(entry.family, list(paths), kind)
    plan = IngestPlan([], "auto", [], "auto")
    for path in paths:
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
