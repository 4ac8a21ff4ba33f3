"""Errors the auditor raises on purpose; cli.py maps them to one line and an exit code."""

from __future__ import annotations

from pathlib import Path


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


# ---------------------------------------------------------------------------------------------
# `auditor nightly` exit codes
#
# Exit codes of the nightly run. Cron mails (and most schedulers alert) on any non-zero status,
# so 0 means "nothing to do" and every other code means "somebody should look":
#
# ====  ====================  ===============================================================
# code  constant              meaning
# ====  ====================  ===============================================================
# 0     EXIT_OK_NOTHING       run complete, every source read, no new suspect since the
#                             previous nightly run (suspects already reported may still be
#                             open: they are in the report, but they alerted once already)
# 2     EXIT_USAGE            usage or configuration error (any other AuditorError), or a
#                             report or metrics file that cannot be written; the suspects of
#                             this run stay new for the next one
# 3     EXIT_BUSY             another process held the database for longer than
#                             `[store] busy_timeout_s`; nothing was done (logged)
# 10    EXIT_NEW_SUSPECTS     new suspects since the previous nightly run (on the first run:
#                             any suspect), every source read; the report lists them
# 20    EXIT_SOURCES_FAILED   no new suspect, but some sources (commands, switches, hosts)
#                             failed; the report was still written from what was read
# 30    EXIT_NEW_AND_FAILED   both: new suspects (10) and failed sources (20); 10 + 20, so
#                             neither alert hides the other
# 75    EXIT_LOCKED           EX_TEMPFAIL: another run holds the lock; nothing was done
# ====  ====================  ===============================================================
#
# There is deliberately no code for "suspects exist, none new": it would fire the cron alert every
# night for the same cable until it is replaced, which teaches people to ignore the alert.

EXIT_OK_NOTHING = 0
EXIT_USAGE = AuditorError.exit_code  # 2
EXIT_BUSY = DatabaseBusyError.exit_code  # 3
EXIT_NEW_SUSPECTS = 10
EXIT_SOURCES_FAILED = 20
EXIT_NEW_AND_FAILED = EXIT_NEW_SUSPECTS + EXIT_SOURCES_FAILED  # 30
EXIT_LOCKED = 75  # sysexits.h EX_TEMPFAIL: "try again later", which is exactly the situation


def exit_code(new_suspects: int, sources_failed: bool) -> int:
    """The exit status of a completed run (see the module docstring)."""
    if new_suspects and sources_failed:
        return EXIT_NEW_AND_FAILED
    if new_suspects:
        return EXIT_NEW_SUSPECTS
    if sources_failed:
        return EXIT_SOURCES_FAILED
    return EXIT_OK_NOTHING


class LockedError(AuditorError):
    """Another process holds the run lock. Names the lock file and what the holder wrote."""

    exit_code = EXIT_LOCKED

    def __init__(self, path: Path, holder: dict[str, str]) -> None:
        self.path = path
        self.holder = holder
        if holder.get("pid"):
            who = f"pid {holder['pid']}"
            if holder.get("host"):
                who += f" on {holder['host']}"
            if holder.get("started"):
                who += f", started {holder['started']}"
        else:
            # The holder has the lock but has not written its line yet (a few microseconds).
            who = "a process that is just starting"
        super().__init__(f"another auditor run holds {path} ({who}); not starting a second one")
