"""Ingest of the job side and the site's own records: scheduler records (sacct -P, jobcomp,
JSONL), job logs (NCCL, PyTorch), host address maps (/etc/hosts format), declared maintenance
windows and the location inventory (site / row / rack / U, faceplate labels); and what Slurm and
the hosts say happened to whole hosts (issue #20: sacctmgr show event -P, slurmctld.log, a host's
journalctl --list-boots or last -x with --host).

Like the other ingests: parse everything first, then store in the caller's transaction; a file
whose lines cannot all be read is kept with the lines counted per reason in `sources`. What the
cluster writes (sacct, jobcomp, JSONL, job logs) may hold a crash's NUL bytes or bytes that are
not UTF-8: such lines are counted too (a NUL line is skipped, a bad byte read as U+FFFD), so one
damaged job log never fails the others. The site's own files (hosts, maintenance, inventory,
cabling) are refused with file:line instead. The same file ingested again with the same options
(kind, --tz, and for job logs --job and --year) is a no-op; with other options it replaces what
it stored.
"""

from __future__ import annotations

import gc
import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.collect.logfile import NUL_LEAD, NUL_SKIPPED, after_nuls
from auditor.errors import AuditorError, ParseError
from auditor.ingest import kinds
from auditor.ingest.common import IngestResult, options_key, read_text
from auditor.models import (
    ELLIPSIS,
    HostAddress,
    HostEventsResult,
    JobError,
    Location,
    MaintenanceWindow,
)
from auditor.parse._hostevents import REASON_MAX
from auditor.parse._jobs import CUT, HOST_MAX, JobsResult
from auditor.portmap import PortMap
from auditor.store import JobLogMeta, SourceMeta, Store

if TYPE_CHECKING:
    from auditor.parse.cabling import Cable
    from auditor.parse.joblog import JoblogResult

JOB_KINDS = kinds.names("jobs")
_SLURMCTLD_STAMP = re.compile(kinds.SLURMCTLD_STAMP)


def detect_job_kind(head: str) -> str | None:
    """The job-side kind of a file from its first lines, or None."""
    return kinds.recognise("jobs", head)


@dataclass(slots=True)
class JobOptions:
    tz: tzinfo = UTC
    job: str | None = None  # joblog: the job the log belongs to (else matched by host and time)
    year: int | None = None
    host: str | None = None  # boots: the host whose boot records these are

    def key(self, kind: str) -> str:
        """What of these options changes what a file of this kind stores (`options_key`)."""
        return options_key(kind=kind, **kinds.kind(kind).option_values(
            {"tz": str(self.tz), "job": self.job, "year": self.year, "host": self.host}))


# Files the cluster writes: a damaged line is counted, not fatal (see the module docstring).
_CLUSTER_WRITTEN = ("sacct", "jobcomp", "jobs-jsonl", "joblog", "slurm-events", "slurmctld",
                    "boots", "auto")
NOT_UTF8 = "not UTF-8: the bad bytes were read as U+FFFD"
# A host name longer than parse._jobs.HOST_MAX is no host. A host event's reason is cut where it
# is parsed (parse/_hostevents.REASON_MAX); issue #21: every cut is counted.
HOST_TOO_LONG = f"a host name over {HOST_MAX} characters"
REASON_CUT = f"a reason over {REASON_MAX} characters: stored cut"


_READ_ANYWAY = frozenset({NOT_UTF8, NUL_LEAD, CUT, REASON_CUT})  # lines still read


def read_damaged(path: Path) -> tuple[str, str, list[tuple[int, str, str]]]:
    """A file's text, content hash and damaged lines (line number, text, reason): a line
    holding NUL bytes is blanked (numbering kept) unless the NULs only lead it, then it is read
    without them; bytes that are not UTF-8 are read as U+FFFD."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read: {exc.strerror}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if b"\x00" not in data:
        try:
            return data.decode("utf-8"), digest, []
        except UnicodeDecodeError:
            pass
    lines: list[str] = []
    damaged: list[tuple[int, str, str]] = []
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        try:
            text, bad_bytes = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, bad_bytes = raw.decode("utf-8", errors="replace"), True
        if "\x00" in text:
            rest = after_nuls(text)
            damaged.append((line_no, text[:200], NUL_SKIPPED if rest is None else NUL_LEAD))
            text = rest or ""
        elif bad_bytes:
            damaged.append((line_no, text[:200], NOT_UTF8))
        lines.append(text)
    return "\n".join(lines), digest, damaged


def _scheduler_export(entry: kinds.Kind, text: str, given: dict[str, object]) -> JobsResult:
    # A scheduler export makes a few hundred thousand objects that all live on and hold no
    # cycle: the collector cannot free any of them, and running it cost 9 % of reading sacct
    # (0.07 s of 0.79 s of CPU for 99,990 jobs), so it is paused meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        jobs: JobsResult = entry.call(text, given)
        return jobs
    finally:
        if paused:
            gc.enable()


def _issues(unparsed: Sequence[tuple[int, str, str]]
            ) -> list[tuple[str, int, int | None, str | None]]:
    if not unparsed:
        return []
    count: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    for line_no, line, why in unparsed:
        count[why] += 1
        first.setdefault(why, (line_no, line.rstrip("\n")[:200]))
    return [(why, n, *first[why]) for why, n in count.most_common()]


def _store_cables(store: Store, cables: Sequence[Cable], moment: datetime,
                  source_id: int) -> None:
    """Both ends of every planned cable become part records of their ports, under the plan's
    source (forgetting it forgets them)."""
    # The plan may be loaded before or after the first sweep: use the newest fabric.
    pm = PortMap(store.latest_fabric())
    by_device: dict[str, list[dict[str, object]]] = {}
    for c in cables:
        for name, port in ((c.a_name, c.a_port), (c.b_name, c.b_port)):
            r = pm.resolve(name, port)
            by_device.setdefault(name, []).append({
                "port_name": port, "guid": r.guid, "port": r.port, "present": True,
                "vendor": c.vendor, "part_number": c.part_number,
                "serial_number": c.serial_number, "length": c.length,
                "cable_type": c.cable_type, "revision": None, "lot": c.lot})
    for device, rows in by_device.items():
        store.add_transceivers(moment, device, rows, source_id)


@dataclass(slots=True)
class _JobFile:
    path: Path
    kind: str
    digest: str
    lines: int
    jobs: JobsResult | None = None
    addresses: list[HostAddress] | None = None
    windows: list[MaintenanceWindow] | None = None
    log: JoblogResult | None = None
    locations: list[Location] | None = None
    cables: list[Cable] | None = None
    host_events: HostEventsResult | None = None
    written_at: datetime | None = None
    damaged: list[tuple[int, str, str]] | None = None  # NUL or non-UTF-8 lines

    @property
    def records(self) -> int:
        if self.jobs is not None:
            return len(self.jobs.table)
        if self.log is not None:
            return len(self.log.errors)
        if self.host_events is not None:
            return len(self.host_events.events)
        return len(self.addresses or self.windows or self.locations or self.cables or [])

    @property
    def unparsed(self) -> list[tuple[int, str, str]]:
        damaged = self.damaged or []
        if self.jobs is not None:
            return damaged + self.jobs.unparsed + [(n, line, CUT) for n, line in self.jobs.cut]
        if self.host_events is not None:
            return damaged + self.host_events.unparsed
        return damaged + (self.log.unparsed if self.log is not None else [])


def _parse(path: Path, kind: str, opts: JobOptions) -> _JobFile:
    damaged: list[tuple[int, str, str]] = []
    if kind in _CLUSTER_WRITTEN:
        text, digest, damaged = read_damaged(path)
    else:
        text, digest = read_text(path)
    if not text.strip():
        raise AuditorError(f"{path}:1: empty file, nothing to ingest")
    if kind == "auto":
        found = detect_job_kind(text[:65536])
        if found is None:
            raise AuditorError(f"{path}:1: not a job file this auditor knows "
                               f"({', '.join(JOB_KINDS)})")
        kind = found
    if damaged and kind not in _CLUSTER_WRITTEN:
        line_no, _, why = damaged[0]  # the site's own file: refused, as a capture is
        what = "not UTF-8 text" if why == NOT_UTF8 else "binary data (NUL byte)"
        raise AuditorError(f"{path}:{line_no}: {what}, not a {kind} file")
    item = _JobFile(path, kind, digest, text.count("\n") + (not text.endswith("\n")),
                    damaged=damaged)
    entry = kinds.get(kind)
    if entry is None or entry.family != "jobs":
        raise AuditorError(f"{path}: unknown kind {kind!r}")
    given: dict[str, object] = {"tz": opts.tz, "year": opts.year, "host": opts.host}
    try:
        _refuse(path, kind, text, opts)
        reference = None
        if "reference" in entry.params:  # when the file was written: the year of bare stamps
            reference = given["reference"] = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        if entry.records == "jobs":
            item.jobs = _scheduler_export(entry, text, given)
        elif entry.reads == "lines":
            item.log = entry.call(list(enumerate(text.splitlines(keepends=True), 1)), given)
            item.written_at = reference
        else:
            setattr(item, entry.records, entry.call(text, given))
        if kind == "boots":
            _refuse_empty_boots(item.host_events, text)
        if item.host_events is not None:
            _bound_host_events(item.host_events)
    except ParseError as exc:
        raise exc.with_source(str(path)) from None
    return item


def _refuse(path: Path, kind: str, text: str, opts: JobOptions) -> None:
    """A host-event file that cannot be what --kind says is refused (ParseError, exit 2) rather
    than stored empty; boot records need the host they are of."""
    if kind == "slurmctld":
        lines = _lines(text)
        if not any(_SLURMCTLD_STAMP.match(line) for _, line in lines[:5000]):
            raise ParseError(kind, lines[0][0] if lines else 1, lines[0][1] if lines else "",
                             "not a slurmctld.log: no line starts with slurmctld's "
                             "[YYYY-MM-DDTHH:MM:SS] stamp")
    if kind == "boots" and not opts.host:
        raise AuditorError(f"{path}: --kind boots needs --host (the host whose boot records "
                           "these are)")


def _refuse_empty_boots(found: HostEventsResult | None, text: str) -> None:
    """A host's boot records hold at least its current boot (journalctl --list-boots lists
    it, `last -x` its `reboot system boot` record): a file with none is not boot records,
    whatever date a line of it holds (an ibnetdiscover capture's header has one), and is
    refused rather than stored empty (same content read as another kind would replace what that
    kind stored)."""
    lines = _lines(text)
    if found is not None and not found.events:
        first = lines[0] if lines else (1, "")
        raise ParseError("boots", first[0], first[1], "no boot, crash or shutdown record: not "
                         "journalctl --list-boots or last -x output")


def _bound_host_events(found: HostEventsResult) -> None:
    kept = []
    for e in found.events:
        if len(e.host) > HOST_MAX:
            found.unparsed.append((e.line_no, e.message[:200], HOST_TOO_LONG))
            continue
        if len(e.reason) == REASON_MAX and e.reason.endswith(ELLIPSIS):
            found.unparsed.append((e.line_no, e.message[:200], REASON_CUT))
        kept.append(e)
    found.events = kept


def _lines(text: str) -> list[tuple[int, str]]:
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _log_meta(source_id: int, job: str | None, item: _JobFile) -> JobLogMeta:
    log = item.log
    assert log is not None  # noqa: S101 - called for job logs only
    dated = log.dated
    return JobLogMeta(source_id, job, frozenset(log.hosts), dated[0] if dated else None,
                      dated[1] if dated else None, item.written_at, tuple(log.nccl_versions),
                      log.nccl_env.get("NCCL_IB_TIMEOUT"), log.nccl_env.get("NCCL_IB_RETRY_CNT"),
                      frozenset(log.using), log.ib_hca)


def ingest_job_files(store: Store, paths: Sequence[Path], kind: str, opts: JobOptions,
                     now: datetime | None = None) -> list[IngestResult]:
    """Parse all files, then store them (in the caller's transaction, or one of their own)."""
    moment = now or datetime.now(UTC)
    parsed = [_parse(path, kind, opts) for path in paths]
    results = [IngestResult(str(item.path), item.kind, "ingested") for item in parsed]
    # Thousands of job logs in one command: look their contents up, and store their sources,
    # failure lines and issues, in one statement each rather than one per file (a round trip
    # per file cost 5 s of CPU for the 6,105 logs of the scale scenario, issue #13).
    job_errors: list[tuple[int, str | None, Sequence[JobError], set[int]]] = []
    all_issues: list[tuple[int, str, int, int | None, str | None]] = []
    job_logs: list[JobLogMeta] = []
    sources: list[tuple[int, SourceMeta]] = []
    with store.transaction():
        stored = store.stored_sources([item.digest for item in parsed])
        # What becomes of each file, from what is stored and the files before it; the new
        # sources' ids are taken together, ascending in file order as one at a time.
        fresh: dict[int, str] = {}  # index into parsed -> options key: stored under a new id
        replaces: dict[int, list[int]] = {}  # index -> the sources it replaces (-1 - j: file j)
        keys = {k: opts.key(k) for k in {item.kind for item in parsed}}
        for i, item in enumerate(parsed):
            options = keys[item.kind]
            before = stored.get(item.digest, [])
            if any(o == options for _, o in before):
                results[i].status = "already ingested"
                continue
            if before:  # the same file read with other options: its records are replaced
                replaces[i] = [sid for sid, _ in before]
                results[i].status = "re-ingested"
            fresh[i] = options
            stored[item.digest] = [(-1 - i, options)]  # the same content twice: stored once
        ids = dict(zip(fresh, store.next_source_ids(len(fresh)), strict=True))
        gone: set[int] = set()  # new sources a later file of this command replaced
        for i, options in fresh.items():
            item, result, sid = parsed[i], results[i], ids[i]
            if i in replaces:
                gone.update(ids[-1 - s] for s in replaces[i] if s < 0)
                store.forget_sources([ids[-1 - s] if s < 0 else s for s in replaces[i]])
            issues = _issues(item.unparsed)
            sources.append((sid, SourceMeta(item.kind, str(item.path), item.digest, "file",
                                            moment, False, item.lines,
                                            sum(n for why, n, _, _ in issues
                                                if why not in _READ_ANYWAY),
                                            item.records, options)))
            if item.jobs is not None:
                store.add_jobs(sid, item.jobs.table)
            if item.addresses is not None:
                store.add_host_addresses(sid, item.addresses)
            if item.windows is not None:
                store.add_maintenance(sid, item.windows)
            if item.locations is not None:
                store.add_inventory(sid, item.locations)
            if item.cables is not None:
                _store_cables(store, item.cables, moment, sid)
            if item.host_events is not None:
                store.add_host_events(sid, item.host_events.events)
            if item.log is not None:
                job_errors.append((sid, opts.job, item.log.errors,
                                   {e.line_no for e in item.log.first}))
                job_logs.append(_log_meta(sid, opts.job, item))
            all_issues += [(sid, *iss) for iss in issues]
            result.records = item.records
            result.source_id = sid
            result.warnings = [f"{n} line(s): {why}" for why, n, _, _ in issues]
        store.add_sources([s for s in sources if s[0] not in gone])
        store.add_job_errors([e for e in job_errors if e[0] not in gone])
        store.add_job_logs([m for m in job_logs if m.source_id not in gone])
        store.add_issues_of_many([iss for iss in all_issues if iss[0] not in gone])
    return results
