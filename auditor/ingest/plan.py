"""`auditor ingest` with several files and `--kind auto`: which ingester takes which file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor.errors import AuditorError
from auditor.ingest.captures import KINDS, detect_kind


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
    """Split the files of one `ingest` into tool captures and logs (recognised when `auto`)."""
    from auditor.collect.logfile import read_head
    from auditor.ingest.jobs import JOB_KINDS, detect_job_kind

    if kind in KINDS[1:]:
        return IngestPlan(list(paths), kind, [], "auto")
    # A job kind is known before the log and optics ingesters are imported (their parsers cost
    # `ingest --kind sacct` 0.03 s, issue #13); the kinds of each ingester are distinct.
    if kind in JOB_KINDS:
        return IngestPlan([], "auto", [], "auto", list(paths), kind)
    from auditor.ingest.logs import LOG_KINDS, detect_log_kind
    from auditor.ingest.optics import OPTICS_KINDS, detect_optics_kind

    if kind in LOG_KINDS:
        return IngestPlan([], "auto", list(paths), kind)
    if kind in OPTICS_KINDS:
        return IngestPlan([], "auto", [], "auto", optics=list(paths), optics_kind=kind)
    every = (*KINDS, *LOG_KINDS, *JOB_KINDS, *OPTICS_KINDS)
    if kind != "auto":
        raise AuditorError(f"--kind {kind!r}: use one of {', '.join(every)}")
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
        try:
            detect_kind(head, str(path))
        except AuditorError:
            # Before the job kinds: a module's `Identifier : 0x11 (QSFP28)` is no site file.
            if detect_optics_kind(head) is not None:
                plan.optics.append(path)
                continue
            if detect_job_kind(head) is not None:
                plan.job_files.append(path)
                continue
            try:
                detect_log_kind(head, path)
            except AuditorError:
                first = next(n for n, line in enumerate(head.splitlines(), 1) if line.strip())
                raise AuditorError(
                    f"{path}:{first}: cannot tell what tool or log this is; pass --kind "
                    f"({', '.join(every[1:])})") from None
            plan.logs.append(path)
        else:
            plan.captures.append(path)
    return plan
