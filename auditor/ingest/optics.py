"""Ingest of transceiver diagnostics captures (issue #14): `ethtool -m` (kind ethtool-module),
`mlxlink -d <dev> -m` (mlxlink-module) and a switch's per-port diagnostics (onyx-optics).

A capture names no device, so `--host` says which host or switch it was read on; the port comes
from the command line kept in the capture (`# ethtool -m eth2`) or from `--port`. The read time
is `--at`, else the file's modification time (a capture is written when it is read). Each
reading is placed on the fabric graph as of that time when the topology allows: a switch name
and its port label (`IB1/17`) through PortMap like port events, a host and `mlx5_0/1` (or its
only HCA, for a netdev name) to the HCA's GUID and port; the rest stay unplaced, counted per
reason in `auditor sources`.

One source per file, all files in one transaction. Readings are history: the same content read
at another time is another reading, so the re-ingest key is the content, the read time and the
options (kind, host, port, aliases): the same file with the same time and options is a no-op,
with other options it replaces what it stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from auditor.errors import AuditorError, ParseError
from auditor.ingest import kinds
from auditor.ingest.common import (
    NOT_UTF8_ESCAPED,
    IngestResult,
    claim_source,
    digest_of,
    options_key,
    read_capture,
)
from auditor.models import OpticsReading
from auditor.portmap import PortMap
from auditor.store import SourceMeta, Store

OPTICS_KINDS = kinds.names("optics")
UNPLACED = "reading on an unmapped port"


def detect_optics_kind(head: str) -> str | None:
    """The diagnostics format of a capture from its first lines, or None."""
    return kinds.recognise("optics", head)


@dataclass(slots=True)
class OpticsOptions:
    host: str | None = None  # the host or switch the capture was read on
    port: str | None = None  # the port, when the capture has no command line naming it
    at: datetime | None = None  # when it was read (default: the file's modification time)
    aliases: dict[str, str] = field(default_factory=dict)


def parse_optics(kind: str, text: str, device: str, read_at: datetime,
                 port: str | None = None) -> list[OpticsReading]:
    """The readings of one capture of a diagnostics kind (ParseError as the parser raises)."""
    readings: list[OpticsReading] = kinds.kind(kind).call(
        text, {"device": device, "read_at": read_at, "port": port})
    return readings


def place(pm: PortMap, readings: Sequence[OpticsReading],
          known: dict[str, tuple[str, int]] | None = None
          ) -> tuple[list[tuple[str | None, int | None]], Counter[str]]:
    """(GUID, port) of each reading where the fabric graph (or `known`: port name -> (GUID,
    port), what a host's own sysfs said) places it, and the counts per reason `sources` keeps:
    why the others are not placed, and what the parser left out or cut of each (its
    `issues`: implausible values, long text fields)."""
    placed: list[tuple[str | None, int | None]] = []
    why: Counter[str] = Counter()
    for r in readings:
        why.update(r.issues)
        if known and r.port_name in known:
            placed.append(known[r.port_name])
            continue
        found = pm.resolve(r.device, r.port_name)
        if found.guid is None or found.port is None:
            why[f"{UNPLACED}: {found.reason or 'no port number'}"] += 1
            placed.append((None, None))
        else:
            placed.append((found.guid, found.port))
    return placed, why


def fabric_at(store: Store, at: datetime, aliases: dict[str, str]) -> PortMap:
    times = store.snapshot_times(at, limit=1)
    return PortMap(store.fabric(times[0]) if times else None, aliases)


@dataclass(slots=True)
class _Parsed:
    path: Path
    kind: str
    digest: str
    lines: int
    read_at: datetime
    readings: list[OpticsReading]
    not_utf8: list[tuple[int, str]]  # (line number, line as read)


def _parse(path: Path, kind: str, opts: OpticsOptions) -> _Parsed:
    text, digest, not_utf8 = read_capture(path)
    if not text.strip():
        raise AuditorError(f"{path}:1: empty file, nothing to ingest")
    if kind == "auto":
        found = detect_optics_kind(text[:65536])
        if found is None:
            raise AuditorError(f"{path}:1: not transceiver diagnostics this auditor knows "
                               f"({', '.join(OPTICS_KINDS)})")
        kind = found
    entry = kinds.get(kind)
    if entry is None or entry.family != "optics":
        raise AuditorError(f"{path}: unknown kind {kind!r}; use one of {', '.join(OPTICS_KINDS)}")
    if not opts.host:
        raise AuditorError(f"{path}: {kind} output names no host or switch; pass --host")
    read_at = opts.at or datetime.fromtimestamp(path.stat().st_mtime, UTC)
    try:
        readings = parse_optics(kind, text, opts.host, read_at, opts.port)
    except ParseError as exc:
        raise exc.with_source(str(path)) from None
    return _Parsed(path, kind, digest, text.count("\n") + (not text.endswith("\n")), read_at,
                   readings, not_utf8)


def ingest_optics_files(store: Store, paths: Sequence[Path], kind: str,
                        opts: OpticsOptions) -> list[IngestResult]:
    """Parse every file, then store them all in one transaction (the caller's, if any)."""
    parsed = [_parse(path, kind, opts) for path in paths]
    results: list[IngestResult] = []
    maps: dict[datetime | None, PortMap] = {}
    with store.transaction():
        for item in parsed:
            options = options_key(kind=item.kind, **kinds.kind(item.kind).option_values(
                {"host": opts.host, "port": opts.port, "aliases": digest_of(opts.aliases)}))
            result = IngestResult(str(item.path), item.kind, claim_source(
                store, item.digest, options, item.read_at, explicit=True))
            results.append(result)
            if result.status == "already ingested":
                continue
            snapshot = next(iter(store.snapshot_times(item.read_at, limit=1)), None)
            if snapshot not in maps:
                maps[snapshot] = PortMap(store.fabric(snapshot) if snapshot else None,
                                         opts.aliases)
            placed, why = place(maps[snapshot], item.readings)
            sid = store.add_source(SourceMeta(item.kind, str(item.path), item.digest, "file",
                                              item.read_at, True, item.lines, 0,
                                              len(item.readings), options))
            store.add_optics(sid, item.readings, placed)
            store.add_issues(sid, [(reason, n, None, None) for reason, n in why.items()])
            result.records = len(item.readings)
            result.source_id = sid
            result.warnings = [f"{n} reading(s): {reason}" for reason, n in why.most_common()]
            if item.not_utf8:
                store.add_issues(sid, [(NOT_UTF8_ESCAPED, len(item.not_utf8),
                                        *item.not_utf8[0])])
                result.warnings.append(f"{len(item.not_utf8)} line(s): {NOT_UTF8_ESCAPED}")
    return results


__all__ = ["OPTICS_KINDS", "OpticsOptions", "detect_optics_kind", "fabric_at",
           "ingest_optics_files", "parse_optics", "place"]
