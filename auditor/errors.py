"""Errors the auditor raises on purpose; cli.py maps them to one line and an exit code."""

from __future__ import annotations


class AuditorError(Exception):
    """Base of every error that is the user's input or environment, not a bug (exit code 2)."""

    exit_code = 2

    def messages(self) -> list[str]:
        """What the command line prints, one line each (`error: ...` on stderr)."""
        return [str(self)]


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
    """A bad config file or option; each message names its key. One error can carry every
    mistake of a file, one line each."""

    def __init__(self, message: str, *more: str) -> None:
        self.lines = [message, *more]
        super().__init__("\n".join(self.lines))

    def messages(self) -> list[str]:
        return list(self.lines)


class DatabaseBusyError(AuditorError):
    """Another process held the DuckDB file for longer than `[store] busy_timeout_s`."""

    exit_code = 3


class CollectError(AuditorError):
    """A collector could not run a command on a device; names the device, never credentials."""
