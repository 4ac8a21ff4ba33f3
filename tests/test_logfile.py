"""The log scanners (ripgrep, GNU grep, the Python fallback) read a file the same way: the same
candidate lines and numbers, line counts, garbage counts, half-written last lines, NUL-damaged
lines, the damage of a truncated .gz and source key. The translation of Python regexes to the
POSIX ERE GNU grep runs selects the lines Python's `re` selects.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.collect import logfile
from auditor.collect.logfile import LogScan, Tool, pick_tool, scan, to_ere
from auditor.ingest import kinds
from auditor.parse import syslog
from tests.conftest import FIXTURES, need
from tests.strategies import near_miss

SYSLOG_ENVELOPE = kinds.kind("syslog").envelope
LOG_KINDS = [kinds.kind(name) for name in kinds.names("logs")
             if kinds.kind(name).reads != "document"]  # JSON documents are read whole

_PLAIN = (
    b"2026-11-30T06:28:57.478325+00:00 leaf01 mgmtd[4128]: Interface IB1/3 changed state "
    b"to DOWN\n"
    b"2026-11-30T06:28:58.000000+00:00 leaf01 sshd[17]: session closed for user admin\n"
    b"2026-11-30T06:29:03.101000+00:00 leaf01 mgmtd[4128]: Interface IB1/3 changed state "
    b"to UP\n"
)

# Each file is unusual in one way; all are scanned by every scanner.
FILES: dict[str, bytes] = {
    "plain": (
        b"2026-11-30T06:28:57.478325+00:00 leaf01 mgmtd[4128]: Interface IB1/3 changed state "
        b"to DOWN\n"
        b"2026-11-30T06:28:58.000000+00:00 leaf01 sshd[17]: session closed for user admin\n"
        b"2026-11-30T06:29:03.101000+00:00 leaf01 mgmtd[4128]: Interface IB1/3 changed state "
        b"to UP\n"
    ),
    "garbage-and-blank-lines": (
        b"!!! truncated by the collector\n"
        b"\n"
        b"   \n"
        b"Nov 30 06:28:57 leaf02 kernel: mlx5_core 0000:3b:00.0: Port module event: module 0\n"
        b"random text that says Link down but has no envelope\n"
    ),
    "half-written-event-last": (
        b"Nov 30 06:28:57 leaf02 mgmtd[1]: Interface IB1/1/2 changed state to DOWN\n"
        b"Nov 30 06:28:58 leaf02 mgmtd[1]: Interface IB1/1/2 changed state to U"
    ),
    "half-written-noise-last": (
        b"Nov 30 06:28:57 leaf02 mgmtd[1]: Interface IB1/1/2 changed state to DOWN\n"
        b"Nov 30 06:28:58 leaf02 ntpd[812]: adjusting lo"
    ),
    "crlf-line-ends": (
        b"2026-11-30T06:28:57Z spine01 mgmtd[9]: Interface IB1/7 changed state to DOWN\r\n"
        b"2026-11-30T06:28:59Z spine01 ntpd[812]: adjusting local clock\r\n"
        b"2026-11-30T06:29:01Z spine01 mgmtd[9]: Interface IB1/7 changed state to UP\r\n"
    ),
    "invalid-utf8-and-bom": (
        b"\xef\xbb\xbf2026-11-30T06:28:57Z leaf03 mgmtd[9]: Interface IB1/2 changed state to "
        b"DOWN\n"
        b"2026-11-30T06:28:58Z leaf03 snmpd[5]: \xff\xfe bad bytes \xc3\n"
        b"2026-11-30T06:28:59Z leaf03 mgmtd[9]: \xe9 Interface IB1/2 changed state to UP\n"
        b"\xff\xfe\xfd not even an envelope\n"
    ),
    "empty": b"",
    "only-garbage": b"garbage\nmore garbage\n",
    "ufm-forwarded": (
        b"<134>1 2026-11-30T06:28:57.100Z ufm01 ufm - - - 2026-11-30 06:28:57.100 [12345] "
        b"[329] WARNING [Hardware] IBPort [0x0002c90300a1b2c3_17]: Link went down\n"
    ),
    # rsyslog after a crash: a run of NULs where the file was cut, on a line of its own ...
    "nul-run-first-lines": b"\x00" * 3000 + b"\n" + b"\x00\x00\n" + _PLAIN,
    # ... or with the next line it wrote right after the zeros (read without them)
    "nul-run-glued-to-an-event": (
        b"\x00" * 500 + b"2026-11-30T06:28:57Z leaf01 mgmtd[9]: Interface IB1/3 changed state "
        b"to DOWN\n" + b"\x00" * 9 + b"2026-11-30T06:28:58Z leaf01 ntpd[812]: adjusting clock\n"
        + _PLAIN
    ),
    # NULs inside lines: the line is debris, event or not (never silently dropped)
    "nul-inside-lines": (
        _PLAIN
        + b"2026-11-30T06:30:00Z leaf01 mgmtd[9]: Interface IB1/4 changed\x00 state to DOWN\n"
        + b"2026-11-30T06:30:01Z leaf01 mgmtd[9]: Interface IB1/5 changed state to DOWN\x00\n"
        + b"2026-11-30T06:30:02Z leaf01 sshd[1]: se\x00ssion closed\n"
        + b"garbage \x00 without an envelope\n" + b"garbage without an envelope\n"
    ),
    # past the first 64 KiB, where the head check never looked
    "nul-after-64-kib": (
        b"2026-11-30T05:00:00Z leaf01 sshd[17]: session closed for user admin, padding\n" * 1000
        + b"\x00" * 4096 + b"\n" + _PLAIN
    ),
    "nul-run-unterminated-last-line": _PLAIN + b"\x00" * 700,
    "only-nuls": b"\x00" * 64,
}


def scanners() -> list[Tool]:
    return [t for t in ("rg", "grep") if shutil.which(t)] + ["python"]


def outcome(found: LogScan) -> tuple[object, ...]:
    found.finish()
    return (found.total_lines, found.no_envelope, found.candidates, found.last_line_complete,
            found.first_no_envelope, found.nul_lines, found.nul_read, found.first_nul,
            found.first_nul_read, found.last_line_nul, found.gzip_error, found.sha256)


def write(tmp_path: Path, name: str, data: bytes, compressed: bool) -> Path:
    path = tmp_path / (f"{name}.log.gz" if compressed else f"{name}.log")
    if compressed:
        with gzip.open(path, "wb") as gz:
            gz.write(data)
    else:
        path.write_bytes(data)
    return path


def test_ripgrep_and_grep_are_there() -> None:
    need(None if shutil.which("rg") else "ripgrep (rg) is not installed")
    need(None if shutil.which("grep") else "GNU grep is not installed")


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("name", list(FILES))
def test_every_scanner_reads_the_file_the_same(tmp_path: Path, name: str,
                                               compressed: bool) -> None:
    path = write(tmp_path, name, FILES[name], compressed)
    results = {tool: outcome(scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool))
               for tool in scanners()}
    python = results.pop("python")
    for tool, got in results.items():
        assert got == python, (tool, name)


def test_what_the_scan_finds(tmp_path: Path) -> None:
    """The reference result (every scanner agrees with it, above)."""
    data = FILES["garbage-and-blank-lines"] + FILES["half-written-event-last"]
    path = write(tmp_path, "mixed", data, compressed=False)
    for tool in scanners():
        total, garbage, candidates, complete, example, *_, key = outcome(
            scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool))
        assert total == 7
        assert garbage == 4  # the header, the blank, the spaces, and the envelope-less line
        assert [n for n, _ in candidates] == [4, 5, 6, 7]
        assert candidates[-1][1].endswith("changed state to U")
        assert complete is False
        assert example == (1, "!!! truncated by the collector")
        assert len(key) == 64


def test_streamed_lines_mark_the_half_written_last_line(tmp_path: Path) -> None:
    path = write(tmp_path, "half", FILES["half-written-event-last"], compressed=False)
    for tool in scanners():
        lines = list(scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool).lines())
        assert [t.endswith("\n") for _, t in lines] == [True, False], tool


def test_the_key_changes_with_what_the_ingest_reads(tmp_path: Path) -> None:
    base = FILES["plain"]
    keys = set()
    for i, data in enumerate([base, base + b"noise without envelope\n",
                              base.replace(b"IB1/3", b"IB1/4"), base + b"Nov 30 06:30:00 x y: z\n"]):
        path = write(tmp_path, f"k{i}", data, compressed=False)
        keys.add(outcome(scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE))[-1])
    assert len(keys) == 4
    # the same content compressed or not is the same source
    plain = outcome(scan(write(tmp_path, "same", base, False), syslog.PREFILTER, SYSLOG_ENVELOPE))
    packed = outcome(scan(write(tmp_path, "same", base, True), syslog.PREFILTER, SYSLOG_ENVELOPE))
    assert plain[-1] == packed[-1]


def test_a_pattern_ripgrep_cannot_read_goes_to_grep(tmp_path: Path) -> None:
    need(None if shutil.which("rg") and shutil.which("grep") else "needs rg and grep")
    lookahead = r"Interface (?!IB9/)IB\d+/\d+ changed"
    assert pick_tool(syslog.PREFILTER, SYSLOG_ENVELOPE) == "rg"
    assert pick_tool(lookahead, SYSLOG_ENVELOPE) == "grep"
    path = write(tmp_path, "la", FILES["plain"] + FILES["plain"].replace(b"IB1/3", b"IB9/3"),
                 compressed=False)
    grep = outcome(scan(path, lookahead, SYSLOG_ENVELOPE))
    python = outcome(scan(path, lookahead, SYSLOG_ENVELOPE, tool="python"))
    assert grep == python
    assert [n for n, _ in grep[2]] == [1, 3]


@pytest.mark.parametrize("kind", LOG_KINDS, ids=lambda k: k.name)
def test_ripgrep_reads_every_built_in_pattern(kind: kinds.Kind) -> None:
    need(None if shutil.which("rg") else "ripgrep (rg) is not installed")
    assert kind.envelope is not None
    assert logfile._rg_accepts(kind.prefilter_pattern())
    assert logfile._rg_accepts(kind.envelope)


def test_a_failing_scanner_is_an_error_naming_the_file(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "plain", FILES["plain"], compressed=False)
    need(None if shutil.which("grep") else "GNU grep is not installed")
    # grep exits 2 for an unreadable file: here, a directory given in its place
    monkeypatch.setattr(logfile, "read_head", lambda p: b"")
    with pytest.raises(logfile.AuditorError, match=str(tmp_path)):
        outcome(scan(tmp_path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool="grep"))
    assert path.exists()


def test_a_ripgrep_without_the_flags_we_use_is_passed_over(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An old ripgrep that rejects a flag (as rg 0.x does `--encoding none`) exits 2: grep
    scans instead, and the result is the same."""
    need(None if shutil.which("grep") else "GNU grep is not installed")
    old = tmp_path / "bin" / "rg"
    old.parent.mkdir()
    old.write_text("#!/bin/sh\necho 'error: Found argument --encoding which was not expected' >&2"
                   "\nexit 2\n")
    old.chmod(0o755)
    monkeypatch.setenv("PATH", f"{old.parent}:{Path(shutil.which('grep') or '').parent}")
    logfile._rg_accepts.cache_clear()
    try:
        assert pick_tool(syslog.PREFILTER, SYSLOG_ENVELOPE) == "grep"
        path = write(tmp_path, "plain", FILES["plain"], compressed=False)
        found = outcome(scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE))
        assert found == outcome(scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool="python"))
    finally:
        logfile._rg_accepts.cache_clear()


def test_what_the_scan_makes_of_nul_bytes(tmp_path: Path) -> None:
    """The reference result for NUL-damaged files (every scanner agrees with it, above): a line
    holding NULs is never parsed as it is nor counted as garbage; a candidate whose NULs only
    lead it is read without them."""
    for tool in scanners():
        path = write(tmp_path, "inside", FILES["nul-inside-lines"], compressed=False)
        found = scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool).finish()
        assert (found.total_lines, found.nul_lines, found.nul_read) == (8, 4, 0), tool
        assert found.no_envelope == 1  # the garbage line without a NUL
        assert [n for n, _ in found.candidates] == [1, 3]  # the NUL events are not candidates
        assert found.first_nul is not None and found.first_nul[0] == 4
        path = write(tmp_path, "glued", FILES["nul-run-glued-to-an-event"], compressed=True)
        found = scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool).finish()
        assert (found.nul_lines, found.nul_read, found.no_envelope) == (2, 1, 0), tool
        assert found.candidates[0] == (1, "2026-11-30T06:28:57Z leaf01 mgmtd[9]: Interface IB1/3 "
                                          "changed state to DOWN")
        path = write(tmp_path, "tail", FILES["nul-run-unterminated-last-line"], compressed=False)
        found = scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool).finish()
        assert (found.total_lines, found.last_line_complete, found.last_line_nul) == \
            (4, False, True), tool


def _damaged_gzip(tmp_path: Path, data: bytes, how: str) -> Path:
    packed = gzip.compress(data)
    if how == "truncated":
        packed = packed[: len(packed) * 2 // 3]
    else:  # a wrong CRC in the trailer: every byte decompresses, the check fails
        packed = packed[:-8] + bytes(b ^ 0xFF for b in packed[-8:-4]) + packed[-4:]
    path = tmp_path / f"{how}.log.gz"
    path.write_bytes(packed)
    return path


@pytest.mark.parametrize("how", ["truncated", "bad-crc"])
def test_every_scanner_reads_a_damaged_gzip_up_to_the_damage(tmp_path: Path, how: str) -> None:
    data = b"".join(
        b"2026-11-30T06:%02d:%02d.000000+00:00 leaf%02d mgmtd[4128]: Interface IB1/%d changed "
        b"state to %s\n" % (i // 60 % 60, i % 60, i % 7, i % 30 + 1, b"DOWN" if i % 2 else b"UP")
        for i in range(3000))
    path = _damaged_gzip(tmp_path, data, how)
    results = {tool: outcome(scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool=tool))
               for tool in scanners()}
    python = results.pop("python")
    for tool, got in results.items():
        assert got == python, tool
    found = scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool="python").finish()
    assert found.gzip_error, "the damage is reported"
    if how == "truncated":
        assert 0 < found.total_lines < 3000
        # the line cut by the damage may not match
        assert len(found.candidates) in (found.total_lines - 1, found.total_lines)
    else:
        assert found.total_lines == 3000 and "crc" in found.gzip_error


def test_without_gzip_a_damaged_gzip_is_read_by_zlib(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """No gzip program: Python's zlib reads what precedes the damage (within a few bytes of
    what gzip gives: the line cut by the damage may differ)."""
    data = b"2026-11-30T06:28:57Z leaf01 mgmtd[9]: Interface IB1/3 changed state to DOWN\n" * 4000
    path = _damaged_gzip(tmp_path, data, "truncated")
    with_gzip = scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE, tool="python").finish()
    tools = tmp_path / "bin"
    tools.mkdir()
    monkeypatch.setenv("PATH", str(tools))  # no gzip (and no wc: the Python scan)
    found = scan(path, syslog.PREFILTER, SYSLOG_ENVELOPE).finish()
    assert found.gzip_error == "unexpected end of file"
    assert abs(found.total_lines - with_gzip.total_lines) <= 1
    assert found.candidates[:100] == with_gzip.candidates[:100]


# ---------------------------------------------------------------------------------------------
# Python regex -> POSIX ERE (GNU grep without ripgrep): the same lines as Python's `re`

def test_escapes_inside_brackets_are_translated() -> None:
    assert to_ere(r"port [\d/]+ down") == "port [0-9/]+ down"
    assert to_ere(r"[\w.-]+ [\s\]]") == "[[:alnum:]_.-]+ [][:space:]]"
    assert to_ere(r"[\^]x[\^-]") == r"\^x[-^]"
    assert to_ere(r"(?P<state>up|down) \D") == "(up|down) [^0-9]"
    assert to_ere(r"(?i)down") is None  # flags: grep -P
    assert to_ere(r"[^\D]") is None  # a negated class inside brackets has no ERE form
    for kind in LOG_KINDS:  # the built-ins all stay in ERE
        assert kind.envelope is not None
        assert to_ere(kind.prefilter_pattern()) is not None, kind.name
        assert to_ere(kind.envelope) is not None, kind.name


def test_a_site_pattern_with_escapes_in_brackets_loses_nothing_under_grep(tmp_path: Path) -> None:
    """On a host without ripgrep a site pattern `port [\\d/]+ down` used to become
    `[[0-9]/]+` for grep: its events were silently lost."""
    need(None if shutil.which("grep") else "GNU grep is not installed")
    pattern = syslog.PREFILTER + r"|port [\d/]+ down"
    path = write(tmp_path, "site", b"Nov 30 06:00:00 sw9 portd: port 1/17 down\n"
                 b"Nov 30 06:00:01 sw9 portd: port 1/17/2 down\n" + FILES["plain"], False)
    grep = scan(path, pattern, SYSLOG_ENVELOPE, tool="grep")
    assert outcome(grep) == outcome(scan(path, pattern, SYSLOG_ENVELOPE, tool="python"))
    assert [n for n, _ in grep.candidates] == [1, 2, 3, 5]


_CORPUS_FILES = sorted(p for kind in ("syslog", "ufm_events", "opensm", "dmesg")
                       for p in (FIXTURES / kind).glob("*.txt"))
_CORPUS = [line for p in _CORPUS_FILES
           for line in p.read_text(encoding="utf-8", errors="replace").splitlines() if line]
_LINES = near_miss(_CORPUS, actions=("keep", "cut", "insert", "replace", "digits", "raw"),
                   noise=st.text(max_size=8))

_LITERALS = ["port", "IB", "Interface ", "changed state", "DOWN", "down", "Link", "mlx5_",
             "leaf", " ", "/", ":", "-", "_", ".", "1", "7", "a", "Z", r"\.", r"\[", r"\]",
             r"\/", r"\-", r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", r"\b"]
_MEMBERS = [r"\d", r"\w", r"\s", r"\]", r"\[", r"\-", r"\\", r"\^", r"\.", r"\/", "/", ":",
            "_", " ", ".", "a-z", "A-F", "0-5", "3-9", "x", "B", "#", "=", ",", "[", "^"]


@st.composite
def _bracket(draw: st.DrawFn) -> str:
    members = draw(st.lists(st.sampled_from(_MEMBERS), min_size=1, max_size=4))
    negate = draw(st.booleans())
    lead = draw(st.sampled_from(["", "]", "-"]))  # a literal ] or - first
    tail = draw(st.sampled_from(["", "-"]))  # a literal - last
    body = lead + "".join(members) + tail
    if not negate and body.startswith("^"):
        body = "\\" + body
    return "[" + ("^" if negate else "") + body + "]"


@st.composite
def _site_pattern(draw: st.DrawFn) -> str:
    def piece() -> str:
        atom = draw(st.one_of(_bracket(), st.sampled_from(_LITERALS)))
        return atom + draw(st.sampled_from(["", "", "+", "*", "?", "{1,3}", "{2}", "{,2}", "+?",
                                            "*?"]))

    branches = ["".join(piece() for _ in range(draw(st.integers(1, 4))))
                for _ in range(draw(st.integers(1, 3)))]
    group = draw(st.sampled_from(["{}", "(?:{})", "(?P<state>{})", "^{}", "{}$"]))
    return group.format("|".join(branches))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_site_pattern(), lines=st.lists(_LINES, min_size=1, max_size=30))
def test_ere_translation_selects_what_python_re_selects(tmp_path_factory: pytest.TempPathFactory,
                                                        pattern: str, lines: list[str]) -> None:
    need(None if shutil.which("grep") else "GNU grep is not installed")
    try:
        with warnings.catch_warnings():  # "possible nested set": a literal [ in brackets
            warnings.simplefilter("ignore", FutureWarning)
            python = re.compile(pattern.encode())
    except re.error:
        return  # not a pattern the config would accept
    ere = to_ere(pattern)
    assert ere is not None, pattern
    data = [line.replace("\n", " ").replace("\r", " ").encode() for line in lines]
    path = tmp_path_factory.mktemp("ere") / "lines.txt"
    path.write_bytes(b"".join(line + b"\n" for line in data))
    done = subprocess.run(["grep", "-a", "-n", "-E", "-e", ere, str(path)], capture_output=True,
                          env={**os.environ, "LC_ALL": "C"}, check=False)
    assert done.returncode in (0, 1), (pattern, ere, done.stderr)
    grep = [int(row.split(b":", 1)[0]) for row in done.stdout.splitlines()]
    expected = [n for n, line in enumerate(data, 1) if python.search(line)]
    assert grep == expected, (pattern, ere)
