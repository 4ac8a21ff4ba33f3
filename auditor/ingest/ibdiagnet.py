"""An ibdiagnet run into the store (issue #24): its output folder, its `ibdiagnet2.db_csv` or,
alone, its `ibdiagnet2.net_dump`.

`auditor.ingest.captures` stores the run's topology and counters as it stores ibnetdiscover's
and ibqueryerrors' (one source, the same tables, so the same fabric gives the same graph and
counter deltas work across tools); this module reads the run and stores the rest under that
source: CABLE_INFO as the ports' transceivers (and their temperature as a module reading),
PORT_HIERARCHY_INFO as front-panel labels, PHY_DB16 BER as the ports' own BER, the
`ibdiagnet2.log` port findings as port events and the run's warnings and errors (and what the
parser saw but did not read) as the source's issues, shown by `auditor sources`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from auditor.errors import AuditorError, ParseError
from auditor.ingest.common import read_capture
from auditor.models import OpticsReading
from auditor.parse._common import EXAMPLE_MAX, split_lines
from auditor.parse.ibdiagnet import (
    IbdiagnetResult,
    parse_ibdiagnet,
    parse_ibdiagnet_log,
    parse_ibdiagnet_net_dump,
    run_header,
)
from auditor.store import Store

# The files of an output folder that are read (ibdiagnet names them `ibdiagnet2.<what>`; a
# folder also holds .pm, .fdbs, .sharp, ... of hundreds of MB on a large fabric: not opened).
DB_CSV, NET_DUMP, LOG = ".db_csv", ".net_dump", ".log"
FOLDER_FILES = (DB_CSV, NET_DUMP, LOG)
ORIGIN = "ibdiagnet"  # the origin of its port events
MISSING = "table {} missing (ibdiagnet --disable_output, or a version without it)"


@dataclass(slots=True)
class Run:
    """One ibdiagnet run as read: the parse, the content key of what was read, and the files."""

    result: IbdiagnetResult
    sha256: str
    lines: int
    files: list[str] = field(default_factory=list)
    not_utf8: list[tuple[int, str]] = field(default_factory=list)


def folder_files(path: Path) -> dict[str, Path]:
    """The files of an output folder this ingest reads, by suffix (the first by name when a
    folder holds two runs' files: ibdiagnet --output_path makes one folder per run)."""
    found: dict[str, Path] = {}
    try:
        entries = sorted(path.iterdir())
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read the folder: {exc.strerror}") from exc
    for entry in entries:
        suffix = next((s for s in FOLDER_FILES if entry.name.endswith(s)), None)
        if suffix is not None and entry.name.startswith("ibdiagnet") and entry.is_file():
            found.setdefault(suffix, entry)
    return found


def is_run_folder(path: Path) -> bool:
    """Whether `path` is a folder holding an ibdiagnet db_csv or net_dump."""
    if not path.is_dir():
        return False
    found = folder_files(path)
    return DB_CSV in found or NET_DUMP in found


def _is_db_csv(text: str) -> bool:
    for line in split_lines(text[:65536]):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped.startswith("START_")
    return False


def _net_dump_run(text: str, path: Path) -> IbdiagnetResult:
    try:
        topology = parse_ibdiagnet_net_dump(text)
    except ParseError as exc:
        raise exc.with_source(str(path)) from None
    run_at, version = run_header(text)  # its `# Running timestamp` dates the run
    return IbdiagnetResult(topology=topology, run_at=run_at, version=version)


def read_run(path: Path) -> Run:
    """Read an ibdiagnet output folder or one of its files (db_csv or net_dump). A parse error
    names the file and line; a folder with neither file is refused."""
    if path.is_dir():
        files = folder_files(path)
        if DB_CSV not in files and NET_DUMP not in files:
            raise AuditorError(f"{path}: no ibdiagnet2.db_csv or ibdiagnet2.net_dump in the "
                               "folder (not an ibdiagnet output folder)")
    else:
        files = {}
        text, _, _ = read_capture(path)
        files[DB_CSV if _is_db_csv(text) else NET_DUMP] = path
    texts: dict[str, str] = {}
    digest = hashlib.sha256()
    not_utf8: list[tuple[int, str]] = []
    for suffix in FOLDER_FILES:
        if suffix not in files:
            continue
        text, sha, bad = read_capture(files[suffix])
        texts[suffix] = text
        # the content key: which file is which, and each file's content
        digest.update(f"{suffix}:{sha}\n".encode())
        not_utf8 += bad
    for suffix in (DB_CSV, NET_DUMP):
        if suffix in texts and not texts[suffix].strip() and (
                suffix == DB_CSV or DB_CSV not in texts):
            raise AuditorError(f"{files[suffix]}:1: empty file, nothing to ingest")
    result: IbdiagnetResult | None = None
    if DB_CSV in texts:
        try:
            result = parse_ibdiagnet(texts[DB_CSV])
        except ParseError as exc:
            raise exc.with_source(str(files[DB_CSV])) from None
    if (result is None or result.topology is None) and NET_DUMP in texts:
        fallback = _net_dump_run(texts[NET_DUMP], files[NET_DUMP])
        if result is None:
            result = fallback
        else:
            result.topology = fallback.topology
            result.run_at = result.run_at or fallback.run_at
    if result is None:  # a folder holding neither was refused above
        raise AuditorError(f"{path}: nothing to ingest")
    if LOG in texts:
        try:
            log = parse_ibdiagnet_log(texts[LOG], at=result.run_at)
        except ParseError as exc:
            raise exc.with_source(str(files[LOG])) from None
        result.events = log.events
        result.notes += [(n, line, f"ibdiagnet2.log: {why}") for n, line, why in log.unparsed]
    lines = sum(t.count("\n") + (not t.endswith("\n")) for t in texts.values() if t)
    return Run(result, digest.hexdigest(), lines, [str(files[s]) for s in FOLDER_FILES
                                                   if s in files], not_utf8)


def records_of(result: IbdiagnetResult) -> int:
    """What a run stores besides its topology and counters."""
    return len(result.cables) + len(result.labels) + len(result.ber) + len(result.events)


def issues_of(result: IbdiagnetResult) -> list[tuple[str, int, int | None, str | None]]:
    """The run's warnings and errors (one reason per table and event name, as `auditor
    sources` counts them), what the parser saw and did not read, and the tables missing."""
    count: Counter[str] = Counter()
    first: dict[str, tuple[int | None, str | None]] = {}
    for issue in result.issues:
        why = f"ibdiagnet {issue.level}: {issue.check}" + (f" {issue.event}" if issue.event
                                                          else "")
        count[why] += 1
        first.setdefault(why, (issue.line_no, issue.summary[:EXAMPLE_MAX]))
    for line_no, line, why in result.notes:
        count[why] += 1
        first.setdefault(why, (line_no, line[:EXAMPLE_MAX]))
    out = [(why, n, *first[why]) for why, n in count.most_common()]
    out += [(MISSING.format(name), 0, None, None) for name in result.missing]
    return out


def store_run(store: Store, source_id: int, at: datetime, result: IbdiagnetResult,
              names: dict[str, str]) -> list[str]:
    """Store what a run says besides its topology and counters under its source; `names`:
    node GUID -> the name the fabric gives it. Returns warnings for the ingest's result."""
    warnings: list[str] = []
    labels: dict[tuple[str, int], str] = {}
    for lb in result.labels:
        text = lb.extended_label or lb.label
        if text:
            labels[(lb.guid, lb.port)] = text
    unnamed = {g for g in (*(c.guid for c in result.cables), *(g for g, _ in labels))
               if g not in names}
    if unnamed:
        # CABLE_INFO or labels of nodes this run's NODES does not list (--disable_output
        # csv:nodes): the newest snapshot names them, else the GUID does.
        times = store.snapshot_times(at, limit=1)
        known = store.fabric(times[0]).nodes if times else {}
        names = {**names, **{g: known[g].name if g in known else g for g in unnamed}}
    label_rows = sorted({(names[g], p, text) for (g, p), text in labels.items()})
    if label_rows:
        store.add_port_labels(source_id, label_rows)
    by_device: dict[str, list[dict[str, object]]] = {}
    readings: list[OpticsReading] = []
    placed: list[tuple[str | None, int | None]] = []
    for c in result.cables:
        device = names[c.guid]
        port_name = labels.get((c.guid, c.port), str(c.port))
        by_device.setdefault(device, []).append({
            "port_name": port_name, "guid": c.guid, "port": c.port, "present": True,
            "vendor": c.vendor, "part_number": c.part_number, "serial_number": c.serial_number,
            "length": c.length, "cable_type": c.cable_type, "revision": c.revision})
        if c.temperature_c is not None:
            readings.append(OpticsReading(device, port_name, at, c.vendor, c.part_number,
                                          c.serial_number, temperature_c=c.temperature_c))
            placed.append((c.guid, c.port))
    for device, rows in by_device.items():
        store.add_transceivers(at, device, rows, source_id)
    store.add_optics(source_id, readings, placed)
    if result.ber:
        store.add_port_ber(source_id, at, result.ber)
    store.add_events(source_id, ORIGIN, result.events)
    issues = issues_of(result)
    store.add_issues(source_id, issues)
    problems = [i for i in result.issues if i.level == "error"]
    if problems:
        warnings.append(f"ibdiagnet reported {len(problems)} error(s) and "
                        f"{len(result.issues) - len(problems)} warning(s) (auditor sources)")
    if result.missing:
        warnings.append(f"tables missing: {', '.join(result.missing)}")
    return warnings
