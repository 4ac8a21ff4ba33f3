"""One nightly run at a time: an flock on a lock file that dies with its holder."""


from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from auditor.errors import ConfigError, LockedError

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------
# One run at a time


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


