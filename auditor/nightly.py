"""Pieces of the nightly cron run: one run at a time, exit codes, retention, logging, progress.

The CLI wires these together (`auditor nightly`); nothing here decides what the report says.

Exit codes of the nightly run. Cron mails (and most schedulers alert) on any non-zero status,
so 0 means "nothing to do" and every other code means "somebody should look":

====  ====================  ===============================================================
code  constant              meaning
====  ====================  ===============================================================
0     EXIT_OK_NOTHING       run complete, every source read, no new suspect since the
                            previous nightly run (suspects already reported may still be
                            open: they are in the report, but they alerted once already)
2     EXIT_USAGE            usage or configuration error (any other AuditorError), or a
                            report or metrics file that cannot be written; the suspects of
                            this run stay new for the next one
3     EXIT_BUSY             another process held the database for longer than
                            `[store] busy_timeout_s`; nothing was done (logged)
10    EXIT_NEW_SUSPECTS     new suspects since the previous nightly run (on the first run:
                            any suspect), every source read; the report lists them
20    EXIT_SOURCES_FAILED   no new suspect, but some sources (commands, switches, hosts)
                            failed; the report was still written from what was read
30    EXIT_NEW_AND_FAILED   both: new suspects (10) and failed sources (20); 10 + 20, so
                            neither alert hides the other
75    EXIT_LOCKED           EX_TEMPFAIL: another run holds the lock; nothing was done
====  ====================  ===============================================================

There is deliberately no code for "suspects exist, none new": it would fire the cron alert every
night for the same cable until it is replaced, which teaches people to ignore the alert.

"New" is measured against the previous *delivered* run: a run's report folder carries the
`UNDELIVERED` mark until the report and the metrics are all written, so a run that fails half
way does not swallow the alert of the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import logging.handlers
import math
import os
import re
import shutil
import socket
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from auditor.config import Secret
from auditor.errors import AuditorError, ConfigError, DatabaseBusyError
from auditor.safe_text import inert

EXIT_OK_NOTHING = 0
EXIT_USAGE = AuditorError.exit_code  # 2
EXIT_BUSY = DatabaseBusyError.exit_code  # 3
EXIT_NEW_SUSPECTS = 10
EXIT_SOURCES_FAILED = 20
EXIT_NEW_AND_FAILED = EXIT_NEW_SUSPECTS + EXIT_SOURCES_FAILED  # 30
EXIT_LOCKED = 75  # sysexits.h EX_TEMPFAIL: "try again later", which is exactly the situation
# In a report folder until the run has delivered everything (report, metrics).
UNDELIVERED = ".undelivered"

log = logging.getLogger(__name__)


def exit_code(new_suspects: int, sources_failed: bool) -> int:
    """The exit status of a completed run (see the module docstring)."""
    if new_suspects and sources_failed:
        return EXIT_NEW_AND_FAILED
    if new_suspects:
        return EXIT_NEW_SUSPECTS
    if sources_failed:
        return EXIT_SOURCES_FAILED
    return EXIT_OK_NOTHING


# ---------------------------------------------------------------------------------------------
# One run at a time


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


def _parse_holder(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out


class RunLock:
    """Exclusive, non-blocking `flock` on a lock file; a second run fails at once.

    The lock belongs to the open file, not to the file's existence: when the holder exits for
    any reason (even SIGKILL or a crash), the kernel closes its descriptor and releases the lock.
    A lock file left behind by a dead process is therefore harmless and is never "stale": the
    next run simply takes it. For the same reason the file is never deleted on release: a run
    that unlinked it could race a newcomer who had already opened the old inode, and two runs
    would then each hold a lock on a different file.

    flock is local to one machine; do not share a DB on NFS between hosts that run nightly.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @classmethod
    def for_db(cls, db: Path) -> RunLock:
        """The default lock: `<db>.lock` next to the DB, so two configs on one DB still
        exclude each other while runs on different DBs do not."""
        return cls(db.with_name(db.name + ".lock"))

    def holder(self) -> dict[str, str]:
        """What the current (or last) holder wrote: pid, host, started."""
        try:
            return _parse_holder(self.path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return {}

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: already held by this RunLock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # os.open descriptors are not inherited by child processes (PEP 446), so an ssh or
        # ibnetdiscover child that outlives us cannot keep the lock held.
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot open lock file: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockedError(self.path, self.holder()) from None
        except OSError as exc:
            os.close(fd)
            raise ConfigError(f"{self.path}: cannot lock: {exc.strerror}") from exc
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} host={socket.gethostname()} started={started}\n"
                 .encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Closing drops the flock; the file (with the last holder's line) stays, see above.
        os.close(fd)

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


# ---------------------------------------------------------------------------------------------
# Retention


def _check_prune_args(base: Path, keep_days: float, now: datetime, what: str) -> Path:
    if math.isnan(keep_days) or keep_days < 0:
        raise ConfigError(f"{what}: keep_days must be a number >= 0, got {keep_days}")
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    root = base.expanduser().resolve()
    home = Path.home().resolve()
    # A typo such as `captures = "~"` or "/" must not turn retention into `rm -rf`.
    if root == Path(root.anchor) or root == home or root in home.parents:
        raise ConfigError(f"{what}: refusing to prune {root} (the root or a home directory)")
    return root


def _newest_mtime(path: Path) -> float:
    """The latest mtime of `path` and everything under it, never following symlinks: a
    folder written to recently is not old, whatever its own mtime says."""
    newest = path.lstat().st_mtime
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            for name in (*dirnames, *filenames):
                with contextlib.suppress(FileNotFoundError):
                    newest = max(newest, (Path(dirpath) / name).lstat().st_mtime)
    return newest


def _remove(path: Path) -> None:
    # A symlink is unlinked itself, never followed: its target is outside our folder's care.
    if path.is_dir() and not path.is_symlink():
        # rmtree does not follow symlinks inside the tree (fd-based on Linux).
        shutil.rmtree(path)
    else:
        path.unlink()


def _inside(root: Path, path: Path) -> bool:
    # `path` itself may be a symlink; only its parent is resolved, so a link pointing outside
    # still counts as inside (and only the link is removed).
    return path.parent.resolve() == root


def prune_captures(captures_dir: Path, keep_days: float, now: datetime,
                   protect: Iterable[Path] = ()) -> list[Path]:
    """Remove the raw sweep captures (the `<UTC time>/` folders, and loose files) directly in
    `captures_dir` whose newest mtime is older than `keep_days`. Returns what was removed.

    Nothing outside `captures_dir` is touched; `protect` (say the DB and its lock file, in case
    captures were configured as the DB's own folder) is never removed, nor anything holding it.
    """
    root = _check_prune_args(captures_dir, keep_days, now, "captures")
    if not root.is_dir():
        return []
    cutoff = now.timestamp() - keep_days * 86400
    kept = [p.expanduser().resolve() for p in protect]
    removed: list[Path] = []
    for entry in sorted(root.iterdir()):
        if not _inside(root, entry):
            continue
        real = entry if entry.is_symlink() else entry.resolve()
        if any(real == p or real in p.parents for p in kept):
            continue
        try:
            if _newest_mtime(entry) >= cutoff:
                continue
            _remove(entry)
        except OSError as exc:
            # One undeletable folder (permissions, NFS) must not stop the nightly run.
            log.warning("captures: cannot remove %s: %s", entry, exc.strerror or exc)
            continue
        removed.append(entry)
    if removed:
        log.info("captures: removed %d older than %g days", len(removed), keep_days)
    return removed


_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:T(\d{6})Z)?$")


def _folder_time(name: str) -> datetime | None:
    m = _DATED.match(name)
    if not m:
        return None
    try:
        if m.group(2):
            return datetime.strptime(f"{m.group(1)}T{m.group(2)}", "%Y-%m-%dT%H%M%S") \
                .replace(tzinfo=UTC)
        return datetime.strptime(m.group(1), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:  # 2026-13-45: looks dated, is not; leave it alone
        return None


def dated_folders(base: Path) -> list[Path]:
    """The report folders `YYYY-MM-DD[THHMMSSZ]` directly in `base` (real directories, not
    symlinks), oldest first."""
    if not base.is_dir():
        return []
    found = [(t, p) for p in base.iterdir()
             if (t := _folder_time(p.name)) is not None and p.is_dir() and not p.is_symlink()]
    return [p for _, p in sorted(found)]


def prune_reports(reports_dir: Path, keep_days: float, now: datetime) -> list[Path]:
    """Remove dated report folders (`YYYY-MM-DD` or `YYYY-MM-DDTHHMMSSZ`) older than
    `keep_days`, and nothing else: other files and folders in `reports_dir` are the user's.

    Age comes from the folder's name (the run's UTC time), not its mtime, which a backup
    restore or an `rsync` without `-t` would reset.
    """
    root = _check_prune_args(reports_dir, keep_days, now, "reports")
    cutoff = now.timestamp() - keep_days * 86400
    removed: list[Path] = []
    for folder in dated_folders(root):
        stamp = _folder_time(folder.name)
        if stamp is None or stamp.timestamp() >= cutoff or not _inside(root, folder):
            continue
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            log.warning("reports: cannot remove %s: %s", folder, exc.strerror or exc)
            continue
        removed.append(folder)
    if removed:
        log.info("reports: removed %d older than %g days", len(removed), keep_days)
    return removed


def dated_folder(base: Path, now: datetime) -> Path:
    """`base/2026-11-30T020000Z` for `now` in UTC, created (with parents) if missing."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    from auditor.outfiles import make_folder

    folder = base / now.astimezone(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    make_folder(folder, "report")
    return folder


# ---------------------------------------------------------------------------------------------
# Logging

LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 5
REDACTED = "***"

# One console on stderr for log lines and the progress display: stdout stays for the report,
# and rich prints log lines above a live progress bar only when both share a console.
_console = Console(stderr=True)


class RedactSecrets(logging.Filter):
    """Replaces every occurrence of the given secret values in a record by `***`.

    We never log config values on purpose; this catches the accidents (a password echoed in a
    device's error message, an exception that carries a connection string).
    """

    def __init__(self, values: Sequence[str]) -> None:
        super().__init__()
        # Longest first, so a secret that contains another is hidden whole.
        unique = sorted({v for v in values if v}, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, unique))) if unique else None

    def redact(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern else text

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is None:
            return True
        # Merge the arguments first: a secret can arrive as a %s argument.
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when set, so the redacted traceback is what they print.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


LOG_MESSAGE_MAX = 2000  # a log record's message; a device's error text can be anything


class InertText(logging.Filter):
    """Makes a record's message (and traceback) inert: a device's error message or a log line
    quoted in one comes from the fabric, and its escape sequences must not reach the terminal
    that shows the rich console or tails the log file. One record stays one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = inert(record.getMessage(), LOG_MESSAGE_MAX)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = "\n".join(inert(line, None)
                                        for line in record.exc_text.split("\n"))
        return True


def _secrets_in(obj: Any) -> Iterator[Secret]:
    if isinstance(obj, Secret):
        yield obj
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            yield from _secrets_in(getattr(obj, f.name))
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from _secrets_in(item)


def secret_values(settings: Any) -> list[str]:
    """The current values of every `env:NAME` secret anywhere in `settings` (unset ones are
    skipped: there is nothing to hide). Walks the dataclasses, so new secret fields count."""
    values = []
    for secret in _secrets_in(settings):
        value = os.environ.get(secret.ref.removeprefix("env:"))
        if value:
            values.append(value)
    return values


_OURS = "_auditor_nightly"


def setup_logging(log_file: Path | None, interactive: bool,
                  secrets: Sequence[str] = ()) -> list[logging.Handler]:
    """Configure the root logger for a run and return the handlers installed.

    * `log_file`: rotating file (5 MB x 5) with UTC timestamps, INFO and up, everything.
    * interactive (stdout is a TTY): rich output of INFO and up on stderr.
    * not interactive (cron): only ERROR and up, plain, on stderr; nothing on stdout, so cron
      mails nothing on a good night except what the exit code asks for.

    `secrets` are redacted from every handler. Calling it again replaces our handlers (and
    leaves anyone else's, such as pytest's, alone).
    """
    root = logging.getLogger()
    teardown_logging()
    handlers: list[logging.Handler] = []
    if log_file is not None:
        from auditor.outfiles import make_folder

        make_folder(log_file.parent, "log")
        try:
            file_handler = logging.handlers.RotatingFileHandler(
                log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{log_file}: cannot write the log: "
                              f"{(exc.strerror or str(exc)).lower()}") from None
        stamped = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                    datefmt="%Y-%m-%dT%H:%M:%SZ")
        stamped.converter = time.gmtime  # UTC with a Z, like every other time we print
        file_handler.setFormatter(stamped)
        file_handler.setLevel(logging.INFO)
        handlers.append(file_handler)
    console: logging.Handler
    if interactive:
        console = RichHandler(console=_console, show_path=False, rich_tracebacks=False)
        console.setLevel(logging.INFO)
    else:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter("auditor: %(levelname)s: %(message)s"))
        console.setLevel(logging.ERROR)
    handlers.append(console)
    redact, plain = RedactSecrets(secrets), InertText()
    for handler in handlers:
        # On the handlers, not the logger: a logger's filters do not see records propagated
        # from child loggers (auditor.collect.onyx, paramiko), a handler's do. Secrets are
        # redacted before the text is made inert (escaping could hide a secret from the match).
        handler.addFilter(redact)
        handler.addFilter(plain)
        setattr(handler, _OURS, True)
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    return handlers


def teardown_logging() -> None:
    """Remove and close the handlers `setup_logging` installed."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _OURS, False):
            root.removeHandler(handler)
            handler.close()


# ---------------------------------------------------------------------------------------------
# Progress


class Steps:
    """The small progress API of a run: one task per step. This base class does nothing (cron);
    `RichSteps` draws it."""

    def add(self, description: str, total: float | None = None) -> int:
        return 0

    def advance(self, step: int, amount: float = 1.0) -> None:
        return None

    def finish(self, step: int) -> None:
        return None

    @contextlib.contextmanager
    def step(self, description: str, total: float | None = None) -> Iterator[int]:
        """A step that shows as running inside the block and finished after it."""
        task = self.add(description, total)
        try:
            yield task
        finally:
            self.finish(task)


class RichSteps(Steps):
    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def add(self, description: str, total: float | None = None) -> int:
        # total None shows a spinner (a sweep does not know its length), a number a count.
        return int(self.progress.add_task(description, total=total))

    def advance(self, step: int, amount: float = 1.0) -> None:
        self.progress.advance(TaskID(step), amount)

    def finish(self, step: int) -> None:
        task = TaskID(step)
        total = next((t.total for t in self.progress.tasks if t.id == task), None)
        # A spinner step (no total) gets one of one, so rich shows it as finished.
        self.progress.update(task, total=total or 1, completed=total or 1)


@contextlib.contextmanager
def progress(interactive: bool) -> Iterator[Steps]:
    """Steps drawn with rich when interactive, a silent `Steps` otherwise (same API)."""
    if not interactive:
        yield Steps()
        return
    # Step descriptions are shown as written (no markup), like every other text we print.
    with Progress(SpinnerColumn(finished_text="[green]✓"),
                  TextColumn("{task.description}", markup=False),
                  TimeElapsedColumn(), console=_console) as bar:
        yield RichSteps(bar)


# ---------------------------------------------------------------------------------------------
# What is new since the previous run


def _suspect_key(suspect: dict[str, Any]) -> tuple[str, frozenset[tuple[str, Any]]]:
    ends = frozenset((str(e.get("name")), e.get("port")) for e in suspect.get("ends", []))
    return str(suspect.get("component")), ends


def new_suspects(previous: dict[str, Any] | None,
                 current: dict[str, Any]) -> list[dict[str, Any]]:
    """Suspects of `current` (a `rank.as_json` document) that `previous` did not have, in
    `current`'s order. A suspect is its component plus the set of its ends (name, port), so
    rank, score and evidence changing do not make it new; the ends' order does not matter; a
    cable re-judged as a transceiver is new (the action changed). No previous run: all new."""
    seen = {_suspect_key(s) for s in (previous or {}).get("suspects", [])}
    return [s for s in current.get("suspects", []) if _suspect_key(s) not in seen]
