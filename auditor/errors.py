"""Errors the auditor raises on purpose; cli.py maps them to one line and an exit code."""

from __future__ import annotations


class AuditorError(Exception):
    """Base of every error that is the user's input or environment, not a bug (exit code 2)."""

    exit_code = 2


class ParseError(AuditorError):
    """A line a parser could not read. `source` is filled in by the ingest step (file name)."""

    def __init__(self, kind: str, line_no: int, line: str, reason: str, source: str = "") -> None:
        self.kind = kind
        self.line_no = line_no
        self.line = line
        self.reason = reason
        self.source = source
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"{self.source or '<input>'}:{self.line_no}"
        shown = self.line if len(self.line) <= 120 else self.line[:117] + "..."
        return f"{where}: {self.kind}: {self.reason}: {shown!r}"

    def with_source(self, source: str) -> ParseError:
        return ParseError(self.kind, self.line_no, self.line, self.reason, source)


class ConfigError(AuditorError):
    """A bad config file or option; the message names the key."""


class CollectError(AuditorError):
    """A collector could not run a command on a device; names the device, never credentials."""
