"""Reading large log files fast: only the lines that can carry a port event reach Python.

A switch syslog holds millions of lines a day and about 1 % are port events. GNU grep (PCRE,
C locale) picks the candidate lines with their line numbers at disk speed; `wc -l` and a second
grep count all lines and the lines without a recognisable envelope in parallel. Compressed
(.gz) files are streamed through `gzip -dc`. Without grep, a Python scan does the same, slower.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import subprocess
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import AuditorError

_C_LOCALE = {**os.environ, "LC_ALL": "C"}


def to_ere(pattern: str) -> str | None:
    """The same regex in POSIX ERE, which GNU grep runs as a DFA (twice as fast as PCRE on
    alternations of literals); None when the pattern needs PCRE (lookarounds, backrefs)."""
    ere = re.sub(r"\(\?P<\w+>", "(", pattern).replace("(?:", "(").replace(r"\d", "[0-9]")
    ere = ere.replace(r"\s", "[[:space:]]").replace(r"\w", "[[:alnum:]_]")
    return None if "(?" in ere or re.search(r"\\[1-9]", ere) else ere


@dataclass(slots=True)
class LogScan:
    total_lines: int
    no_envelope: int  # lines with no timestamp/host envelope (garbage), -1 when not counted
    candidates: list[tuple[int, str]]  # (line number, text) of lines matching the prefilter
    last_line_complete: bool
    first_no_envelope: tuple[int, str] | None = None  # the first garbage line, as an example
    sha256: str = ""
    # The content hash and the garbage count take as long as the scan itself: they go on in
    # the background while the caller parses the candidates, and `finish()` collects them.
    _pending: Callable[[], tuple[int, tuple[int, str] | None, str]] | None = None

    def finish(self) -> LogScan:
        if self._pending is not None:
            self.no_envelope, self.first_no_envelope, self.sha256 = self._pending()
            self._pending = None
        return self


def read_head(path: Path) -> bytes:
    """The first 64 KiB (decompressed); raises AuditorError for unreadable or binary files."""
    try:
        with path.open("rb") as fh:
            head = fh.read(65536)
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read: {exc.strerror}") from exc
    if path.suffix == ".gz":
        try:
            with gzip.open(path, "rb") as gz:
                head = gz.read(65536)
        except (OSError, EOFError, zlib.error) as exc:
            raise AuditorError(f"{path}: not a readable gzip file: {exc}") from exc
    if b"\x00" in head:
        line_no = head[: head.index(b"\x00")].count(b"\n") + 1
        raise AuditorError(f"{path}:{line_no}: binary data (NUL byte), not a log file")
    return head


def _grep_argv(pattern: str, mode: str) -> list[str]:
    grep = shutil.which("grep") or "grep"
    ere = to_ere(pattern)
    syntax = ["-E", ere] if ere is not None else ["-P", pattern]
    if mode == "count-other":
        return [grep, "-a", "-c", "-v", *syntax]
    if mode == "first-other":
        return [grep, "-a", "-n", "-m", "1", "-v", *syntax]
    return [grep, "-a", "-n", *syntax]


def digest(path: Path) -> str:
    """sha256 of the file as stored (hashlib releases the GIL: runs beside the greps)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _run(argv: list[str], path: Path) -> bytes:
    """Run a filter over the file (decompressed when .gz) and return its stdout."""
    if path.suffix == ".gz":
        gz = subprocess.Popen(  # noqa: S603 - fixed argv, the path is an argument
            [shutil.which("gzip") or "gzip", "-dc", str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = subprocess.run(argv, stdin=gz.stdout, capture_output=True,  # noqa: S603
                             env=_C_LOCALE, check=False)
        if gz.stdout:
            gz.stdout.close()
        gz.wait()
    else:
        out = subprocess.run([*argv, str(path)], capture_output=True,  # noqa: S603  # noqa: S603
                             env=_C_LOCALE, check=False)
    # grep: 0 = lines selected, 1 = none, 2 = trouble
    if out.returncode > 1:
        raise AuditorError(f"{path}: cannot scan: {out.stderr.decode(errors='replace')[:200]}")
    return out.stdout


def _ends_with_newline(path: Path) -> bool:
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as gz:
            last = b""
            while chunk := gz.read(1 << 20):
                last = chunk[-1:]
            return last in (b"", b"\n")
    size = path.stat().st_size
    if size == 0:
        return True
    with path.open("rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def _scan_with_grep(path: Path, prefilter: str, envelope: str | None) -> LogScan:
    pool = ThreadPoolExecutor(max_workers=5)
    try:
        hits = pool.submit(_run, _grep_argv(prefilter, "match"), path)
        sha = pool.submit(digest, path)
        total = pool.submit(_run, ["wc", "-l"], path)
        garbage = pool.submit(_run, _grep_argv(envelope, "count-other"), path) if envelope \
            else None
        complete = pool.submit(_ends_with_newline, path)
        candidates = []
        for raw in hits.result().split(b"\n"):
            if not raw:
                continue
            number, _, text = raw.partition(b":")
            candidates.append((int(number), _decode(text)))
        lines = int(total.result().split()[0] or 0)
        last_complete = complete.result()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    if not last_complete:
        lines += 1  # wc counts newlines; a half-written last line has none

    def late() -> tuple[int, tuple[int, str] | None, str]:
        try:
            bad = int(garbage.result().strip() or 0) if garbage else -1
            example = None
            if envelope and bad > 0:
                number, _, text = _run(_grep_argv(envelope, "first-other"), path).partition(b":")
                example = (int(number), _decode(text.rstrip(b"\n")))
            return bad, example, sha.result()
        finally:
            pool.shutdown(wait=True)

    return LogScan(lines, -1, candidates, last_complete, None, "", late)


def _iter_lines(path: Path) -> Iterator[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        yield from fh


def _scan_with_python(path: Path, prefilter: str, envelope: str | None) -> LogScan:
    pick = re.compile(prefilter.encode())
    env = re.compile(envelope.encode()) if envelope else None
    candidates, total, bad, last = [], 0, 0, b"\n"
    example: tuple[int, str] | None = None
    for total, raw in enumerate(_iter_lines(path), 1):
        last = raw
        if pick.search(raw):
            candidates.append((total, _decode(raw.rstrip(b"\n"))))
        if env is not None and not env.search(raw):
            bad += 1
            example = example or (total, _decode(raw.rstrip(b"\n")))
    return LogScan(total, bad if env else -1, candidates, last.endswith(b"\n"), example,
                   digest(path))


def scan(path: Path, prefilter: str, envelope: str | None = None) -> LogScan:
    """Candidate lines of a (possibly .gz) log file, with counts. Raises for unreadable files.
    Call `finish()` on the result before reading `sha256` and `no_envelope`."""
    read_head(path)
    if shutil.which("grep") and shutil.which("wc") and (
        path.suffix != ".gz" or shutil.which("gzip")
    ):
        return _scan_with_grep(path, prefilter, envelope)
    return _scan_with_python(path, prefilter, envelope)
