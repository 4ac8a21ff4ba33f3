"""Ingest of logs that carry port events: switch syslog, UFM events.log, opensm.log, host dmesg.

Each file is scanned fast (auditor.collect.logfile), its candidate lines parsed, every event
mapped onto the fabric graph's (GUID, port), and everything stored in one transaction per
command. Lines that are garbage, half-written, dated in the future or name an unknown device
are kept out and counted per reason in `source_issues` (`auditor sources`); they never fail the
ingest. So are lines holding NUL bytes (a crash's debris, wherever they are in the file) and the
damage of a truncated or corrupt .gz (what precedes it is read). An unreadable file, or a .gz
that yields nothing, does fail it (exit 2), and then nothing of the command is stored. A file
ingested again with the same options (kind, --year, --tz, --host, aliases) is a no-op; with
other options it replaces what it stored.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.collect.logfile import (
    GZIP_BAD,
    NUL_LEAD,
    NUL_SKIPPED,
    LogScan,
    Tool,
    pick_tool,
    read_head,
    scan,
)
from auditor.errors import AuditorError
from auditor.ingest import kinds
from auditor.ingest.common import (
    IngestResult,
    LogOptions,
    claim_source,
    digest_of,
    options_key,
    read_document,
)
from auditor.models import PortEvent, clip
from auditor.parse import _logline
from auditor.portmap import PortMap, Resolved
from auditor.store import Placement, SourceMeta, Store

LOG_KINDS = kinds.names("logs")

# A stamp this far ahead of the ingest is a skewed switch clock, not an event to rank.
FUTURE_SLACK = timedelta(minutes=10)

# A log line is written by whoever has root on the switch or host: what an event keeps of it is
# bounded (a 10 MB line must not be stored whole). Counted per source as an issue.
FIELD_MAX = 256  # a device, port, cable serial or code named in the line
MESSAGE_MAX = 1024  # the message stored with the event
CUT = f"text over {FIELD_MAX} characters (name) or {MESSAGE_MAX} (message): stored cut"
_EVENT_TEXT = ("device", "port_name", "peer_device", "peer_port_name", "cable_serial", "code")


def bound_event(e: PortEvent) -> bool:
    """Cut the event's text fields to FIELD_MAX and its message to MESSAGE_MAX characters (in
    place); True when anything was cut."""
    cut = False
    if len(e.message) > MESSAGE_MAX:
        e.message = clip(e.message, MESSAGE_MAX)
        cut = True
    for name in _EVENT_TEXT:
        value = getattr(e, name)
        if value is not None and len(value) > FIELD_MAX:
            setattr(e, name, clip(value, FIELD_MAX))
            cut = True
    return cut


def log_scanner(kind: str) -> Tool:
    """The scanner a log of this kind is read with here (rg, grep or python)."""
    entry = kinds.kind(kind)
    return pick_tool(entry.prefilter_pattern(), entry.envelope)


def detect_log_kind(head: str, path: Path) -> str:
    found = kinds.recognise("logs", head)
    if found is None:
        raise AuditorError(f"{path}:1: cannot tell what kind of log this is; pass --kind "
                           f"({', '.join(LOG_KINDS)})")
    return found


def _parse(kind: str, found: LogScan, path: Path, opts: LogOptions) -> _logline.SyslogResult:
    entry = kinds.kind(kind)
    reference = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    lines = found.lines()  # streamed while grep still reads the file
    given = {"year": opts.year, "reference": reference, "tz": opts.tz, "extra": opts.extra,
             "host": opts.host}
    if entry.reads == "lines":
        result: _logline.SyslogResult = entry.call(lines, given)
        return result
    if "host" in entry.params and not opts.host:
        raise AuditorError(f"{path}: {kind} lines name no host; pass --host")
    # A parser of whole text (dmesg) reads the candidate lines joined: its line numbers are
    # numbered back to the file's.
    listed = list(lines)
    res = entry.call("".join(t for _, t in listed), given)
    numbers = [n for n, _ in listed]
    return _logline.SyslogResult(
        [replace(e, line_no=numbers[e.line_no - 1]) for e in res.events],
        [(numbers[n - 1], text, why) for n, text, why in res.unparsed], res.ignored,
        [replace(b, line_no=numbers[b.line_no - 1]) for b in res.boots])


def _map(events: list[PortEvent], pm: PortMap,
         issues: Counter[str], first: dict[str, tuple[int, str]]) -> list[Placement]:
    """Where each event sits in the fabric graph: (GUID, port, peer GUID, peer port)."""
    out: list[Placement] = []
    # A day of switch logs names a few thousand ports many times over: resolve each once.
    cache: dict[tuple[str | None, str | None, str | None, int | None], Resolved] = {}

    def resolve(device: str | None, name: str | None, guid: str | None,
                port: int | None) -> Resolved:
        key = (device, name, guid, port)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = pm.resolve(device, name, guid, port)
        return hit

    for e in events:
        r = resolve(e.device, e.port_name, e.guid, e.port)
        peer_guid, peer_port = e.peer_guid, e.peer_port
        if e.peer_guid or e.peer_device:
            p = resolve(e.peer_device, e.peer_port_name, e.peer_guid, e.peer_port)
            peer_guid, peer_port = p.guid, p.port
        if r.reason and not (r.guid and e.state.startswith("switch_")):
            why = f"event on an unmapped port: {r.reason}"
            issues[why] += 1
            first.setdefault(why, (e.line_no, e.message[:200]))
        out.append((r.guid, r.port, peer_guid, peer_port))
    return out


def ingest_logs(store: Store, paths: Sequence[Path], kind: str, opts: LogOptions,
                now: datetime | None = None) -> list[IngestResult]:
    """Scan, parse, map and store log files; one transaction for all of them."""
    moment = now or datetime.now(UTC)
    times = store.snapshot_times(moment, limit=1)
    pm = PortMap(store.fabric(times[0]) if times else None, opts.aliases)
    prepared: list[tuple[Path, str, LogScan | None, _logline.SyslogResult, str, int]] = []
    for path in paths:
        # scan() checks that the file is readable text; the head is read here only to tell
        # the kind.
        file_kind = kind if kind != "auto" else \
            detect_log_kind(read_head(path).decode("utf-8", "replace"), path)
        entry = kinds.kind(file_kind)
        if entry.reads == "document":
            text, digest = read_document(path)
            prepared.append((path, file_kind, None, _parse_document(file_kind, text, path, opts),
                             digest, text.count("\n") + (not text.endswith("\n"))))
            continue
        prefilter = "|".join([entry.prefilter_pattern(), *(p.pattern for p in opts.extra)])
        found = scan(path, prefilter, entry.envelope)
        try:
            parsed = _parse(file_kind, found, path, opts)  # while the hash and counts finish
        finally:
            found.finish()
        prepared.append((path, file_kind, found, parsed, found.sha256, found.total_lines))
    with store.transaction():
        return [_store(store, pm, str(path), file_kind, found, parsed, digest, total_lines,
                       opts, moment)
                for path, file_kind, found, parsed, digest, total_lines in prepared]


def store_document(store: Store, kind: str, text: str, where: str, opts: LogOptions,
                   moment: datetime, origin: str = "file") -> IngestResult:
    """One JSON document of port events (an NVOS table a sweep read over SSH) parsed and stored
    in the caller's transaction as `ingest --kind <kind>` stores a file of it; `where` names
    it (`ssh://leaf07/...`). Raises ParseError (naming `where`) when it is not one."""
    times = store.snapshot_times(moment, limit=1)
    pm = PortMap(store.fabric(times[0]) if times else None, opts.aliases)
    parsed = _parse_document(kind, text, where, opts)
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    return _store(store, pm, where, kind, None, parsed, digest,
                  text.count("\n") + (not text.endswith("\n")), opts, moment, origin)


def _store(store: Store, pm: PortMap, path: str, file_kind: str, found: LogScan | None,
           parsed: _logline.SyslogResult, digest: str, total_lines: int, opts: LogOptions,
           moment: datetime, origin: str = "file") -> IngestResult:
    """One file's parse into the store (the caller's transaction); a no-op when the same
    content was stored with the same options."""
    entry = kinds.kind(file_kind)
    options = options_key(kind=file_kind, **entry.option_values(
        {"year": opts.year, "tz": str(opts.tz), "host": opts.host,
         "aliases": digest_of(opts.aliases)}))
    if entry.reads == "document" and "host" in entry.params:
        # An NVOS table does not name its switch, and two switches may hold the same one (a
        # spine's reboot downs every leaf's uplink to it in the same second): the source is
        # the switch's table, so the switch is part of its key. Given again under another
        # --host, a table is another switch's, not the same one re-read with other options.
        digest = hashlib.sha256(f"{opts.host}\n{digest}".encode()).hexdigest()
    result = IngestResult(path, file_kind, claim_source(store, digest, options, moment))
    if result.status == "already ingested":
        return result
    issues: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    for line_no, line, why in parsed.unparsed:
        issues[why] += 1
        first.setdefault(why, (line_no, line.rstrip("\n")[:200]))
    if found is not None:
        _scan_issues(found, issues, first)
    events = []
    for e in parsed.events:
        if e.at > moment + FUTURE_SLACK:
            issues["time in the future (switch clock skewed?)"] += 1
            first.setdefault("time in the future (switch clock skewed?)",
                             (e.line_no, e.message[:200]))
            continue
        if bound_event(e):
            issues[CUT] += 1
            first.setdefault(CUT, (e.line_no, e.message[:200]))
        events.append(e)
    if found is None:  # a table read again (a ring): what an earlier read stored is not new
        events = _unseen(store, file_kind, events, issues, first)
    placed = _map(events, pm, issues, first)
    result.records = len(events)
    bad = sum(v for k, v in issues.items()
              if not k.startswith(("event on an unmapped", GZIP_BAD, STORED))
              and k not in _READ_ANYWAY)
    sid = store.add_source(SourceMeta(file_kind, path, digest, origin, moment, False,
                                      total_lines, bad, len(events), options))
    store.add_events(sid, file_kind, events, placed)
    store.add_host_events(sid, parsed.boots)
    store.add_issues(sid, [(why, n, *first.get(why, (None, None)))
                           for why, n in issues.items()])
    result.source_id = sid
    result.warnings = [why if why.startswith(GZIP_BAD) else f"{n} line(s): {why}"
                       for why, n in issues.most_common()]
    return result


# Events of a table read again that an earlier read stored (NVOS keeps its last 1000 events,
# UFM its event history): counted, not stored twice, not unparsed.
STORED = "event stored already by an earlier read of the table"


def _unseen(store: Store, kind: str, events: list[PortEvent], issues: Counter[str],
            first: dict[str, tuple[int, str]]) -> list[PortEvent]:
    """`events` less those an earlier source of `kind` stored (same time, state, device, port,
    code and message)."""
    if not events:
        return events
    known = store.stored_events(kind, min(e.at for e in events), max(e.at for e in events))
    fresh = []
    for e in events:
        key = (e.at.astimezone(UTC).replace(tzinfo=None), e.state, e.device, e.port_name,
               e.code, e.message)
        if key in known:
            issues[STORED] += 1
            first.setdefault(STORED, (e.line_no, e.message[:200]))
        else:
            fresh.append(e)
    return fresh


def _parse_document(kind: str, text: str, where: object,
                    opts: LogOptions) -> _logline.SyslogResult:
    """A whole JSON document's parse; ParseError names the file (or source) and line."""
    from auditor.errors import ParseError

    entry = kinds.kind(kind)
    if "host" in entry.params and not opts.host:
        raise AuditorError(f"{where}: {kind} names no switch; pass --host")
    try:
        result: _logline.SyslogResult = entry.call(text, {"host": opts.host, "tz": opts.tz})
    except ParseError as exc:
        raise exc.with_source(str(where)) from None
    return result


def _scan_issues(found: LogScan, issues: Counter[str],
                 first: dict[str, tuple[int, str]]) -> None:
    """What a line scan saw besides the events: garbage lines, a half-written last line, NUL
    debris and a damaged .gz."""
    if found.no_envelope > 0:
        garbage = "no recognised envelope (garbage line)"
        issues[garbage] += found.no_envelope
        if found.first_no_envelope:
            no, line = found.first_no_envelope
            first.setdefault(garbage, (no, line[:200]))
    last_is_candidate = bool(found.candidates) and \
        found.candidates[-1][0] == found.total_lines
    if not found.last_line_complete and not last_is_candidate \
            and not found.last_line_nul:
        issues[_logline.HALF_WRITTEN] += 1
        first.setdefault(_logline.HALF_WRITTEN, (found.total_lines, ""))
    _binary_issues(found, issues, first)


# Issues of lines (or a file) that were still read: not counted as unparsed lines.
_READ_ANYWAY = frozenset({CUT, NUL_LEAD})


def _binary_issues(found: LogScan, issues: Counter[str],
                   first: dict[str, tuple[int, str]]) -> None:
    """NUL-damaged lines (skipped, or read without the NULs that led them) and a damaged .gz,
    as issues of the source."""
    if found.nul_lines > found.nul_read:
        issues[NUL_SKIPPED] += found.nul_lines - found.nul_read
        if found.first_nul:
            first.setdefault(NUL_SKIPPED, (found.first_nul[0], found.first_nul[1][:200]))
    if found.nul_read:
        issues[NUL_LEAD] += found.nul_read
        if found.first_nul_read:
            first.setdefault(NUL_LEAD, (found.first_nul_read[0], found.first_nul_read[1][:200]))
    if found.gzip_error is not None:
        why = f"{GZIP_BAD} ({found.gzip_error}): the lines before the damage were read"
        issues[why] += 1
        first.setdefault(why, (found.total_lines, f"gzip: {found.gzip_error}"))
