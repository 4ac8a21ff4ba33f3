"""Reading large log files fast: only the lines that can carry a port event reach Python.

A switch syslog holds millions of lines a day and about 1 % are port events. ripgrep (when
installed: its SIMD literal search picks the candidates of a 500 MB log four times faster than
GNU grep) or GNU grep (POSIX ERE as a DFA, or PCRE when a site pattern needs it; C locale) picks
the candidate lines with their line numbers; `wc -l` and a second pass count all lines and the
lines without a recognisable envelope in parallel. Compressed (.gz) files are streamed through
`gzip -dc`. Without either tool, a Python scan does the same, slower. All three give the same
result (tests/test_logfile.py).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from auditor.errors import AuditorError

_C_LOCALE = {**os.environ, "LC_ALL": "C"}

# A line holding a NUL byte is binary debris: rsyslog leaves runs of NULs where a crash cut the
# file (the zeros the file system allocated but never wrote), and the next line it writes
# follows the zeros on the same line. Such lines are counted, never parsed as they are; a
# candidate line whose NULs all lead it is read without them (the line rsyslog wrote next).
NUL = b"\x00"
_NUL_RE = r"\x00"  # ripgrep and PCRE; GNU grep -E gets the byte from a pattern file
# The issues (`auditor sources`) these lines and files are counted under.
NUL_SKIPPED = "binary data (NUL bytes) in the line, as a crash leaves: skipped"
NUL_LEAD = "NUL bytes before the line (a crash's debris): the line was read without them"
GZIP_BAD = "truncated or corrupt gzip"

# Python regex escapes and what they are in POSIX ERE (C locale: ASCII, like `re` on bytes).
_ERE_ESCAPES = {"d": "[0-9]", "D": "[^0-9]", "w": "[[:alnum:]_]", "W": "[^[:alnum:]_]",
                "s": "[[:space:]]", "S": "[^[:space:]]", "b": r"\b", "B": r"\B",
                "A": "^", "Z": "$"}
_ERE_CLASS_ESCAPES = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"}  # inside [...]
_ERE_SPECIAL = frozenset(".[]()*+?{}|^$\\")
_QUANTIFIER = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


class _NeedsPcreError(Exception):
    """The pattern needs PCRE (lookarounds, backreferences, flags, \\t or \\x escapes, ...)."""


def to_ere(pattern: str) -> str | None:
    """The same regex in POSIX ERE, which GNU grep runs as a DFA (twice as fast as PCRE on
    alternations of literals); None when the pattern needs PCRE (lookarounds, backrefs, inline
    flags, escapes such as \\t, \\D inside brackets). Selects the same lines as Python's `re`
    on bytes (tests/test_logfile.py holds the two equal on generated patterns)."""
    try:
        return "".join(_ere_parts(pattern))
    except _NeedsPcreError:
        return None


def _ere_parts(pattern: str) -> Iterator[str]:
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise _NeedsPcreError
            e = pattern[i + 1]
            i += 2
            if e in _ERE_ESCAPES:
                yield _ERE_ESCAPES[e]
            elif e.isalnum() or not e.isascii():
                raise _NeedsPcreError  # \t \n \x41 \1 \u00e9 ...: PCRE reads them
            else:
                yield "\\" + e if e in _ERE_SPECIAL else e
        elif c == "[":
            i, bracket = _ere_bracket(pattern, i)
            yield bracket
        elif c == "(":
            named = _NAMED_GROUP.match(pattern, i)
            if named:
                i = named.end()
            elif pattern.startswith("(?:", i):
                i += 3
            elif pattern.startswith("(?", i):
                raise _NeedsPcreError  # lookaround, flags, atomic group, named backreference
            else:
                i += 1
            yield "("
        elif c in "*+?{":
            if c == "{":
                q = _QUANTIFIER.match(pattern, i)
                if q is None or (not q.group(1) and q.group(2) is None):
                    yield "[{]"  # Python reads a brace that is no quantifier as a literal
                    i += 1
                    continue
                low, comma, high = q.group(1) or "0", q.group(2) or "", q.group(3) or ""
                if int(low) > 255 or (high and int(high) > 255):
                    raise _NeedsPcreError  # past GNU grep's repetition limit
                yield "{" + low + (comma + high if comma else "") + "}"
                i = q.end()
            else:
                yield c
                i += 1
            if i < n and pattern[i] == "?":
                i += 1  # lazy: the same lines match
            elif i < n and pattern[i] == "+":
                raise _NeedsPcreError  # possessive
        elif c == "}":
            yield "[}]"
            i += 1
        else:
            yield c  # . ^ $ | ) ] and literals (a lone ] is literal in both)
            i += 1


def _ere_bracket(pattern: str, i: int) -> tuple[int, str]:
    """Python's [...] at pattern[i] as a POSIX bracket expression: escapes become members
    (\\d -> 0-9, \\] -> ] placed first, \\- last), since a backslash is literal in POSIX."""
    n = len(pattern)
    k = i + 1
    negate = k < n and pattern[k] == "^"
    k += negate
    singles: list[str] = []
    ranges: list[str] = []
    classes: list[str] = []
    first = True
    while True:
        if k >= n:
            raise _NeedsPcreError  # unterminated (re.compile would have refused it)
        c = pattern[k]
        if c == "]" and not first:
            break
        first = False
        low, k = _bracket_char(pattern, k)
        if low is None:  # a class escape
            e = pattern[k - 1]
            if e not in _ERE_CLASS_ESCAPES:
                raise _NeedsPcreError  # \D \W \S inside brackets: no ERE form
            classes.append(_ERE_CLASS_ESCAPES[e])
            continue
        if k + 1 < n and pattern[k] == "-" and pattern[k + 1] != "]":
            high, k = _bracket_char(pattern, k + 1)
            if high is None or "]" in (low, high) or "[" in (low, high) \
                    or "-" in (low, high) or "^" in (low, high):
                raise _NeedsPcreError
            ranges.append(f"{low}-{high}")
        else:
            singles.append(low)
    special = [s for s in ("[", "^", "-") if s in singles]
    plain = [s for s in dict.fromkeys(singles) if s not in ("]", "[", "^", "-")]
    members = (["]"] if "]" in singles else []) + ranges + classes + plain + special
    if members == ["^"] and not negate:
        return k + 1, "\\^"
    if members[:1] == ["^"] and not negate:
        members = [*members[1:], "^"]  # "^-" -> "-^": a leading ^ would negate
    return k + 1, "[" + ("^" if negate else "") + "".join(members) + "]"


def _bracket_char(pattern: str, k: int) -> tuple[str | None, int]:
    """One member character of a bracket at pattern[k] (None for \\d \\w \\s \\D \\W \\S) and the
    index after it."""
    c = pattern[k]
    if not c.isascii():
        raise _NeedsPcreError  # bytes of a multi-byte character: leave them to PCRE
    if c != "\\":
        return c, k + 1
    if k + 1 >= len(pattern):
        raise _NeedsPcreError
    e = pattern[k + 1]
    if e in "dwsDWS":
        return None, k + 2
    if e.isalnum() or not e.isascii():
        raise _NeedsPcreError  # \t \x41 \b (a backspace in a class) ...
    return e, k + 2


@dataclass(slots=True)
class LogScan:
    total_lines: int
    # lines with no timestamp/host envelope and no NUL byte (garbage), -1 when not counted
    no_envelope: int
    candidates: list[tuple[int, str]]  # (line number, text) of lines matching the prefilter
    last_line_complete: bool
    first_no_envelope: tuple[int, str] | None = None  # the first garbage line, as an example
    sha256: str = ""
    nul_lines: int = 0  # lines holding a NUL byte: never parsed as they are
    nul_read: int = 0  # of those, candidates read without the NULs that led them
    first_nul: tuple[int, str] | None = None  # the first of them (cut), as an example
    first_nul_read: tuple[int, str] | None = None  # the first line read without its NULs
    last_line_nul: bool = False  # the file's last line holds a NUL byte
    gzip_error: str | None = None  # a damaged .gz: what gzip said (what preceded it was read)
    # The garbage and NUL counts (other passes over the file) and the source key (which hashes
    # the candidates and the counts) are ready only after the scan: `finish()` collects them.
    _pending: Callable[[], None] | None = None
    # The candidates while the scanner still finds them (consumed once, by `lines()`).
    _source: Iterator[tuple[int, str]] | None = None
    # (line count, last line complete, last line holds a NUL), known only after a pass over
    # the whole file
    _counts: Callable[[], tuple[int, bool, bool]] | None = None

    def _settle(self) -> None:
        if self._counts is not None:
            self.total_lines, self.last_line_complete, self.last_line_nul = self._counts()
            self._counts = None

    def lines(self) -> Iterator[tuple[int, str]]:
        """The candidate lines as (number, text with its line terminator), while they are
        found; also fills `candidates`. The file's last line keeps no terminator when it was
        half-written, so a parser can tell."""
        source = self._source if self._source is not None else iter(list(self.candidates))
        self._source = None
        self.candidates = []  # refilled from the source as it goes
        held: tuple[int, str] | None = None
        for item in source:
            self.candidates.append(item)
            if held is not None:
                yield held[0], held[1] + "\n"
            held = item
        self._settle()
        if held is not None:
            last = held[0] == self.total_lines and not self.last_line_complete
            yield held[0], held[1] + ("" if last else "\n")

    def finish(self) -> LogScan:
        for _ in self.lines() if self._source is not None else ():
            pass  # a caller that did not read the candidates still gets them
        self._settle()
        if self._pending is not None:
            self._pending()
            self._pending = None
        return self


HEAD = 65536
EXAMPLE_BYTES = 400  # of a NUL line kept as the example (a run of zeros can be megabytes)


def read_head(path: Path) -> bytes:
    """The first 64 KiB (decompressed; of a damaged .gz, what precedes the damage). Raises
    AuditorError for an unreadable file and for a .gz that yields nothing."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD)
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read: {exc.strerror}") from exc
    if path.suffix == ".gz":
        damage: list[str] = []
        chunks: list[bytes] = []
        size = 0
        for chunk in _zlib_chunks(path, damage):
            chunks.append(chunk)
            size += len(chunk)
            if size >= HEAD:
                break
        head = b"".join(chunks)[:HEAD]
        if not head and damage:
            raise AuditorError(f"{path}: not a readable gzip file ({damage[0]}); nothing stored")
    return head


def _zlib_chunks(path: Path, damage: list[str]) -> Iterator[bytes]:
    """A .gz decompressed (every member); at a truncation or corruption it stops, says why in
    `damage` and keeps every byte that came before, as `gzip -dc` does."""
    d = zlib.decompressobj(wbits=31)
    try:
        with path.open("rb") as fh:
            while block := fh.read(1 << 16):
                while block:
                    if d.eof:
                        d = zlib.decompressobj(wbits=31)  # the next member
                    before = d.copy()
                    try:
                        out = d.decompress(block, 1 << 20)
                    except zlib.error as exc:
                        # zlib drops the output of the call that met the damage: again, a
                        # byte at a time, up to it (a bad CRC comes after the last byte)
                        yield _up_to_damage(before, block)
                        damage.append(str(exc))
                        return
                    if out:
                        yield out
                    block = d.unused_data if d.eof else d.unconsumed_tail
            while not d.eof and (out := d.decompress(b"", 1 << 20)):
                yield out  # what zlib still held when the input ran out
    except OSError as exc:
        damage.append(exc.strerror or str(exc))
        return
    if not d.eof:
        damage.append("unexpected end of file")


def _up_to_damage(d: zlib._Decompress, block: bytes) -> bytes:
    out = bytearray()
    try:
        while block or not d.eof:
            got = d.decompress(block, 1)
            if not got and block == d.unconsumed_tail:
                break
            out += got
            block = d.unconsumed_tail
    except zlib.error:
        pass
    return bytes(out)


def _split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Lines (with their terminators) of a byte stream given in chunks."""
    held: list[bytes] = []
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            held.append(chunk[start:end + 1])
            yield b"".join(held)
            held = []
            start = end + 1
        if start < len(chunk):
            held.append(chunk[start:])
    if held:
        yield b"".join(held)


class _Damage:
    """What gzip said of a damaged .gz. Every pass decompresses the same bytes, so whichever
    pass that read the whole stream says it first is as good as any."""

    def __init__(self) -> None:
        self.message: str | None = None

    def record(self, path: Path, returncode: int, stderr: bytes) -> None:
        if returncode == 0 or self.message is not None:
            return
        said = [ln.strip() for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
        text = said[-1] if said else f"gzip exit status {returncode}"
        self.message = text.removeprefix("gzip: ").removeprefix(f"{path}: ")


def _gunzip(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # noqa: S603 - fixed argv, the path is an argument
        [shutil.which("gzip") or "gzip", "-dc", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def after_nuls(text: str) -> str | None:
    """A candidate line holding NULs: the text after the NULs that lead it (rsyslog writes its
    next line right after the zeros a crash left), or None when NULs sit inside the text."""
    rest = text.lstrip("\x00")
    return rest if rest.strip() and "\x00" not in rest else None


Tool = Literal["rg", "grep", "python"]


@functools.lru_cache(maxsize=64)
def _rg_accepts(pattern: str) -> bool:
    """Whether this ripgrep takes the scan's flags and the pattern (site patterns are Python
    regexes; lookarounds and backreferences are not in ripgrep's dialect, and an old ripgrep
    may lack a flag). Run on empty input: exit 1 = understood, nothing matched."""
    argv = [*_argv("rg", pattern, "match"), "-"]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL,  # noqa: S603
                          capture_output=True, check=False)
    return done.returncode == 1


@functools.lru_cache(maxsize=64)
def _grep_accepts(pattern: str) -> bool:
    """Whether GNU grep reads the pattern: in ERE when it translates, else with -P (a grep
    built without PCRE refuses -P with exit 2)."""
    if to_ere(pattern) is not None:
        return True
    argv = [*_argv("grep", pattern, "match"), "-"]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL,  # noqa: S603
                          capture_output=True, env=_C_LOCALE, check=False)
    return done.returncode == 1


def pick_tool(pattern: str, envelope: str | None = None) -> Tool:
    """The fastest scanner installed that reads these patterns."""
    if not shutil.which("wc"):
        return "python"
    patterns = [p for p in (pattern, envelope) if p]
    if shutil.which("rg") and all(_rg_accepts(p) for p in patterns):
        return "rg"
    if shutil.which("grep") and all(_grep_accepts(p) for p in patterns):
        return "grep"
    return "python"


@functools.lru_cache(maxsize=1)
def _nul_pattern_file() -> str:
    """A pattern file holding one NUL byte: GNU grep takes it with -f (argv cannot hold it)."""
    fd, name = tempfile.mkstemp(prefix="auditor-nul-", suffix=".pat")
    with os.fdopen(fd, "wb") as fh:
        fh.write(NUL + b"\n")
    atexit.register(Path(name).unlink, missing_ok=True)
    return name


# Modes: "match" prints the lines matching the pattern with their numbers; "count-other" and
# "first-other" count / print the first of the lines matching neither the pattern nor a NUL
# byte (garbage: NUL lines are counted apart); "count-nul" / "first-nul" do that for the lines
# holding a NUL byte.
def _argv(tool: Tool, pattern: str, mode: str) -> list[str]:
    nul_too = mode in ("count-other", "first-other")
    if tool == "rg":
        # --encoding none: no BOM sniffing or transcoding, the bytes are read as they are.
        # --no-mmap: a live syslog truncated by logrotate's copytruncate while ripgrep has it
        # mapped would kill ripgrep with SIGBUS (its manual says so); reading costs 15 %.
        # No --crlf: it would print an unterminated last line with a CR added, and a CR stays
        # part of the line as for grep (the parser strips it).
        rg = [shutil.which("rg") or "rg", "--no-config", "--no-filename", "--no-heading",
              "--color", "never", "--text", "--encoding", "none", "--no-mmap"]
        if mode in ("count-nul", "first-nul"):
            patterns = ["-e", _NUL_RE]
        else:
            patterns = ["-e", pattern, *(["-e", _NUL_RE] if nul_too else [])]
        flags = {"count-other": ["--count", "--invert-match"],
                 "first-other": ["--line-number", "--max-count", "1", "--invert-match"],
                 "count-nul": ["--count"], "first-nul": ["--line-number", "--max-count", "1"]}
        return [*rg, *flags.get(mode, ["--line-number"]), *patterns]
    grep = shutil.which("grep") or "grep"
    if mode in ("count-nul", "first-nul"):
        syntax = ["-F", "-f", _nul_pattern_file()]  # a fixed byte: memchr, 3x faster than -E
    elif (ere := to_ere(pattern)) is not None:
        syntax = ["-E", "-e", ere, *(["-f", _nul_pattern_file()] if nul_too else [])]
    else:
        syntax = ["-P", "-e", f"(?:{pattern})|{_NUL_RE}" if nul_too else pattern]
    flags = {"count-other": ["-c", "-v"], "first-other": ["-n", "-m", "1", "-v"],
             "count-nul": ["-c"], "first-nul": ["-n", "-m", "1"]}
    return [grep, "-a", *flags.get(mode, ["-n"]), *syntax]


def _run(argv: list[str], path: Path, damage: _Damage | None = None) -> bytes:
    """Run a filter over the file (decompressed when .gz) and return its stdout. `damage`
    hears what gzip said (give it only for filters that read the whole stream)."""
    if path.suffix == ".gz":
        gz = _gunzip(path)
        out = subprocess.run([*argv, "-"], stdin=gz.stdout, capture_output=True,  # noqa: S603
                             env=_C_LOCALE, check=False)
        if gz.stdout:
            gz.stdout.close()  # a filter that stopped early (-m 1) lets gzip end now
        err = gz.stderr.read() if gz.stderr else b""
        if gz.stderr:
            gz.stderr.close()
        status = gz.wait()
        if damage is not None:
            damage.record(path, status, err)
    else:
        out = subprocess.run([*argv, str(path)], capture_output=True,  # noqa: S603
                             env=_C_LOCALE, check=False)
    # grep and rg: 0 = lines selected, 1 = none, 2 = trouble
    if out.returncode > 1:
        raise AuditorError(f"{path}: cannot scan: {out.stderr.decode(errors='replace')[:200]}")
    return out.stdout


def _stream(argv: list[str], path: Path, damage: _Damage) -> Iterator[bytes]:
    """Like `_run`, but yields stdout lines while the filter still runs."""
    gz = None
    if path.suffix == ".gz":
        gz = _gunzip(path)
        proc = subprocess.Popen([*argv, "-"], stdin=gz.stdout,  # noqa: S603
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=_C_LOCALE)
        if gz.stdout:
            gz.stdout.close()  # the scanner holds the read end now
    else:
        proc = subprocess.Popen([*argv, str(path)], stdout=subprocess.PIPE,  # noqa: S603
                                stderr=subprocess.PIPE, env=_C_LOCALE)
    done = False
    try:
        assert proc.stdout is not None  # noqa: S101 - we asked for a pipe
        yield from proc.stdout
        err = proc.stderr.read() if proc.stderr else b""
        if proc.wait() > 1:  # grep and rg: 0 = lines selected, 1 = none, 2 = trouble
            raise AuditorError(f"{path}: cannot scan: {err.decode(errors='replace')[:200]}")
        done = True
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
        if gz is not None:
            if done:  # the scanner read the whole stream: gzip has said all it will
                gz_err = gz.stderr.read() if gz.stderr else b""
                damage.record(path, gz.wait(), gz_err)
            else:
                gz.kill()
                gz.wait()
            if gz.stderr:
                gz.stderr.close()


def _last_line(path: Path, damage: _Damage) -> tuple[bool, bool, int | None]:
    """(the file ends with a line terminator, its last line holds a NUL byte, how many lines
    hold one: counted here for a .gz, which this pass decompresses anyway, else None)."""
    if path.suffix == ".gz":
        gz = _gunzip(path)
        out = gz.stdout
        assert out is not None  # noqa: S101 - we asked for a pipe
        try:
            return _count_nul_lines(iter(functools.partial(out.read, 1 << 20), b""))
        finally:
            out.close()
            err = gz.stderr.read() if gz.stderr else b""
            if gz.stderr:
                gz.stderr.close()
            damage.record(path, gz.wait(), err)
    size = path.stat().st_size
    if size == 0:
        return True, False, None
    with path.open("rb") as fh:
        fh.seek(size - 1)
        complete = fh.read(1) == b"\n"
        end = size - complete  # the last line, without its terminator
        while end > 0:  # back to the terminator before it (a run of NULs can be megabytes)
            start = max(0, end - (1 << 20))
            fh.seek(start)
            block = fh.read(end - start)
            cut = block.rfind(b"\n")
            if NUL in block[cut + 1:]:
                return complete, True, None
            if cut >= 0:
                break
            end = start
    return complete, False, None


def _count_nul_lines(chunks: Iterator[bytes]) -> tuple[bool, bool, int]:
    """(ends with a terminator, the last line holds a NUL, lines holding a NUL) of a stream;
    chunks without a NUL cost one memchr."""
    lines = 0
    open_nul = closed_nul = False  # the line still open / the line closed last holds a NUL
    last = b""
    for chunk in chunks:
        last = chunk[-1:]
        cut = chunk.rfind(b"\n")
        if cut < 0:  # all of it continues the open line
            if not open_nul and NUL in chunk:
                lines, open_nul = lines + 1, True
            continue
        body = chunk[:cut]
        if NUL not in body:
            closed_nul = open_nul and b"\n" not in body
        else:
            pieces = body.split(b"\n")
            lines += sum(NUL in piece for piece in pieces) - (open_nul and NUL in pieces[0])
            closed_nul = NUL in pieces[-1] or (len(pieces) == 1 and open_nul)
        open_nul = NUL in chunk[cut + 1:]
        lines += open_nul
    complete = last in (b"", b"\n")
    return complete, closed_nul if complete else open_nul, lines


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


# The source key hashes what the ingest reads from the file: every candidate line as the
# scanner printed it ("number:text\n"), the line count and the garbage count (and, when there
# are any, the NUL lines and gzip's damage). Two files with the same key give exactly the same
# stored result (so the second is a no-op), and a 500 MB log is not read a third time just to
# hash it. Every scanner makes the same key.
def _key(prefilter: str) -> hashlib._Hash:
    return hashlib.sha256(b"log-scan-v1\0%s\0" % prefilter.encode())


def _key_end(key: hashlib._Hash, bad: int, lines: int, last_complete: bool, nuls: int = 0,
             damaged: bool = False) -> str:
    key.update(b"\0%d\0%d\0%d" % (bad, lines, last_complete))
    if nuls or damaged:
        key.update(b"\0nul %d\0gzip damaged %d" % (nuls, damaged))
    return key.hexdigest()


def _numbered(raw: bytes) -> tuple[int, bytes]:
    number, _, text = raw.rstrip(b"\n").partition(b":")
    return int(number), text


def _scan_with_tool(tool: Tool, path: Path, prefilter: str, envelope: str | None) -> LogScan:
    damage = _Damage()
    pool = ThreadPoolExecutor(max_workers=4)
    total = pool.submit(_run, ["wc", "-l"], path, damage)
    garbage = pool.submit(_run, _argv(tool, envelope, "count-other"), path, damage) \
        if envelope else None
    # a .gz has its NUL lines counted by the pass that finds its last byte (one gzip less)
    nuls = None if path.suffix == ".gz" else \
        pool.submit(_run, _argv(tool, "", "count-nul"), path, damage)
    ending = pool.submit(_last_line, path, damage)

    def counts() -> tuple[int, bool, bool]:
        lines = int(total.result().split()[0] or 0)
        complete, last_nul, _ = ending.result()
        # wc counts newlines; a half-written last line has none
        return (lines if complete else lines + 1), complete, last_nul

    key = _key(prefilter)
    scan = LogScan(-1, -1, [], True)

    def candidates() -> Iterator[tuple[int, str]]:
        # Streamed: the caller parses the first candidates while the scanner still reads the file.
        for raw in _stream(_argv(tool, prefilter, "match"), path, damage):
            key.update(raw)
            number, text = _numbered(raw)
            line: str | None = _decode(text)
            if NUL in text:
                line = after_nuls(line or "")
                if line is None:
                    continue
                scan.nul_read += 1
                scan.first_nul_read = scan.first_nul_read or (number, line)
            yield number, line or ""

    def late() -> None:
        try:
            bad = int(garbage.result().strip() or 0) if garbage else -1
            if envelope and bad > 0:
                number, text = _numbered(_run(_argv(tool, envelope, "first-other"), path))
                scan.first_no_envelope = (number, _decode(text))
            scan.nul_lines = int(nuls.result().strip() or 0) if nuls else \
                ending.result()[2] or 0
            if scan.nul_lines:
                number, text = _numbered(_run(_argv(tool, "", "first-nul"), path))
                scan.first_nul = (number, _decode(text[:EXAMPLE_BYTES]))
            lines, last_complete, _ = counts()
            scan.no_envelope, scan.gzip_error = bad, damage.message
            scan.sha256 = _key_end(key, bad, lines, last_complete, scan.nul_lines,
                                   damage.message is not None)
        finally:
            pool.shutdown(wait=True)

    scan._pending = late
    scan._source = candidates()
    scan._counts = counts
    return scan


def _iter_lines(path: Path, damage: _Damage) -> Iterator[bytes]:
    if path.suffix != ".gz":
        with path.open("rb") as fh:
            yield from fh
        return
    if not shutil.which("gzip"):
        errors: list[str] = []
        yield from _split_lines(_zlib_chunks(path, errors))
        if errors:
            damage.message = errors[0]
        return
    gz = _gunzip(path)  # what the other scanners read, to the byte, when the file is damaged
    assert gz.stdout is not None  # noqa: S101 - we asked for a pipe
    done = False
    try:
        yield from gz.stdout
        done = True
    finally:
        gz.stdout.close()
        if not done:
            gz.kill()
        err = gz.stderr.read() if gz.stderr else b""
        if gz.stderr:
            gz.stderr.close()
        status = gz.wait()
        if done:
            damage.record(path, status, err)


def _scan_with_python(path: Path, prefilter: str, envelope: str | None) -> LogScan:
    pick = re.compile(prefilter.encode())
    env = re.compile(envelope.encode()) if envelope else None
    damage = _Damage()
    scan = LogScan(0, -1, [], True)
    total, bad, nuls, last = 0, 0, 0, b"\n"
    key = _key(prefilter)
    for total, raw in enumerate(_iter_lines(path, damage), 1):
        last = raw
        end = len(raw) - raw.endswith(b"\n")  # grep and rg match the line without it
        has_nul = NUL in raw
        if has_nul:
            nuls += 1
            if scan.first_nul is None:
                scan.first_nul = (total, _decode(raw[:end][:EXAMPLE_BYTES]))
        elif env is not None and not env.search(raw, 0, end):
            bad += 1
            if scan.first_no_envelope is None:
                scan.first_no_envelope = (total, _decode(raw[:end]))
        if pick.search(raw, 0, end):
            key.update(b"%d:%s\n" % (total, raw[:end]))
            line: str | None = _decode(raw[:end])
            if has_nul:
                line = after_nuls(line or "")
                if line is None:
                    continue
                scan.nul_read += 1
                scan.first_nul_read = scan.first_nul_read or (total, line)
            scan.candidates.append((total, line or ""))
    complete = last.endswith(b"\n")
    scan.total_lines, scan.last_line_complete = total, complete
    scan.last_line_nul = total > 0 and NUL in last
    scan.no_envelope = bad if env else -1
    scan.nul_lines, scan.gzip_error = nuls, damage.message
    scan.sha256 = _key_end(key, scan.no_envelope, total, complete, nuls,
                           damage.message is not None)
    return scan


def scan(path: Path, prefilter: str, envelope: str | None = None,
         tool: Tool | None = None) -> LogScan:
    """Candidate lines of a (possibly .gz) log file, with counts. Raises for unreadable files
    and for a .gz that yields nothing; a damaged .gz is read up to the damage (`gzip_error`).
    Call `finish()` on the result before reading `sha256`, `no_envelope` and the NUL counts.
    `tool` forces a scanner (tests compare them); by default the fastest one installed."""
    read_head(path)
    if tool is None:
        tool = pick_tool(prefilter, envelope)
        if path.suffix == ".gz" and not shutil.which("gzip"):
            tool = "python"
    if tool == "python":
        return _scan_with_python(path, prefilter, envelope)
    return _scan_with_tool(tool, path, prefilter, envelope)
