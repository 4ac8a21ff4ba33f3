"""What every ingest shares: the per-file result, reading a file as text, the source key
(content hash plus the options that change the result) and claiming a source."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from auditor.errors import AuditorError
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.config import Settings


@dataclass(slots=True)
class IngestResult:
    path: str
    kind: str
    status: str  # "ingested" or "already ingested"
    records: int = 0
    source_id: int | None = None
    warnings: list[str] = field(default_factory=list)


def _read(path: Path) -> tuple[bytes, str]:
    """The file's bytes and content hash; AuditorError when it cannot be read or holds a NUL
    byte (binary data, not a text capture)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read: {exc.strerror}") from exc
    if (nul := data.find(b"\x00")) >= 0:
        line_no = data[:nul].count(b"\n") + 1
        raise AuditorError(f"{path}:{line_no}: binary data (NUL byte), not a text capture")
    return data, hashlib.sha256(data).hexdigest()


def read_text(path: Path) -> tuple[str, str]:
    """The file's text and content hash; binary (a NUL byte anywhere) or unreadable files are
    an AuditorError naming the line."""
    data, digest = _read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise AuditorError(f"{path}:{line_no}: not UTF-8 text (byte {exc.start})") from exc
    return text, digest


# A JSON document of events (an NVOS table of 10,000 entries is ~2 MB, a UFM REST answer of a
# year of events tens of MB) is parsed whole: past this it is refused, not read into memory.
DOCUMENT_MAX_MB = 256


def read_document(path: Path) -> tuple[str, str]:
    """A whole (possibly .gz) JSON document's text and content hash, at most DOCUMENT_MAX_MB;
    AuditorError naming the file (and line) when it cannot be read, is larger, binary or not
    UTF-8."""
    import gzip
    import zlib

    limit = DOCUMENT_MAX_MB * 1024 * 1024
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                data = fh.read(limit + 1)
        else:
            with path.open("rb") as fh:
                data = fh.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise AuditorError(f"{path}: cannot read: {why}") from None
    if len(data) > limit:
        raise AuditorError(f"{path}: over {DOCUMENT_MAX_MB} MB: too large to read as one "
                           "JSON document (split it, or ask for a shorter time range)")
    if (nul := data.find(b"\x00")) >= 0:
        line_no = data[:nul].count(b"\n") + 1
        raise AuditorError(f"{path}:{line_no}: binary data (NUL byte), not a JSON document")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise AuditorError(f"{path}:{line_no}: not UTF-8 text (byte {exc.start})") from None
    return text, hashlib.sha256(data).hexdigest()


# A capture's line holding bytes that are not UTF-8 (a node description a firmware wrote in
# Latin-1, a flipped bit): the line is read with each bad byte as a visible `\xNN` escape and
# counted under this reason; the rest of the capture is unaffected (issue #21).
NOT_UTF8_ESCAPED = "not UTF-8: the bad bytes kept as \\xNN escapes"
_EXAMPLE_MAX = 200


def read_capture(path: Path) -> tuple[str, str, list[tuple[int, str]]]:
    """`read_text` for a capture: bytes that are not UTF-8 do not refuse the file but are
    kept as `\\xNN` escapes; also returns (line number, line as read) of each line that held
    any. A NUL byte still refuses it (binary data is not a capture)."""
    data, digest = _read(path)
    try:
        return data.decode("utf-8"), digest, []
    except UnicodeDecodeError:
        pass
    bad: list[tuple[int, str]] = []
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            bad.append((line_no, raw.decode("utf-8", "backslashreplace")[:_EXAMPLE_MAX]))
    # UTF-8 never splits a character across a newline byte: line by line or whole, the same.
    return data.decode("utf-8", "backslashreplace"), digest, bad


def options_key(**options: object) -> str:
    """What besides a file's content changes what its ingest stores (the kind it is read as,
    the job a log is given to, the year and zone of zoneless stamps, ...), as the text stored
    beside the content key. None values are left out."""
    return json.dumps({k: v for k, v in options.items() if v is not None}, sort_keys=True,
                      default=str)


def digest_of(mapping: dict[str, str] | None) -> str | None:
    """A short digest of a name map or alias table for `options_key` (None when empty)."""
    if not mapping:
        return None
    return hashlib.sha256(json.dumps(mapping, sort_keys=True).encode()).hexdigest()[:16]


def claim_source(store: Store, sha256: str, options: str, moment: datetime,
                 explicit: bool = False) -> str:
    """Whether a file of this content, ingested with these options, is to be stored:
    "already ingested" (the same content with the same options: a no-op), "re-ingested" (the
    same content stored with other options: what it stored is deleted now, in the caller's
    transaction, to be stored again) or "ingested"."""
    found = store.sources_of(sha256, moment, explicit)
    if any(stored == options for _, stored in found):
        return "already ingested"
    store.forget_sources([sid for sid, _ in found])
    return "re-ingested" if found else "ingested"


# Here, not in ingest/logs.py: every `ingest` reads its --tz and --year through it, and the log
# parsers that module imports cost `ingest --kind sacct` 0.03 s (issue #13).
@dataclass(slots=True)
class LogOptions:
    year: int | None = None
    tz: tzinfo = UTC
    extra: list[re.Pattern[str]] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    host: str | None = None  # dmesg: the host the file came from

    @classmethod
    def from_settings(cls, settings: Settings, *, year: int | None = None,
                      tz: str | None = None, host: str | None = None) -> LogOptions:
        """The options of `[logs]` and `[aliases]`, with the command line's over them."""
        zone = tz or settings.logs.tz
        try:
            zoneinfo = ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise AuditorError(f"--tz {zone!r}: unknown time zone (e.g. UTC, Europe/Paris)"
                               ) from None
        return cls(year=year or settings.logs.year, tz=zoneinfo,
                   extra=[re.compile(p) for p in settings.logs.patterns],
                   aliases=settings.aliases, host=host)
