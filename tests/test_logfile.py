"""The log scanners (ripgrep, GNU grep, the Python fallback) read a file the same way: the same
candidate lines and numbers, line counts, garbage counts, half-written last lines and source key.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from auditor.collect import logfile
from auditor.collect.logfile import LogScan, Tool, pick_tool, scan
from auditor.events import _ENVELOPES, _PREFILTERS
from auditor.parse import syslog
from tests.conftest import need

SYSLOG_ENVELOPE = _ENVELOPES["syslog"]

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
}


def scanners() -> list[Tool]:
    return [t for t in ("rg", "grep") if shutil.which(t)] + ["python"]


def outcome(found: LogScan) -> tuple[object, ...]:
    found.finish()
    return (found.total_lines, found.no_envelope, found.candidates, found.last_line_complete,
            found.first_no_envelope, found.sha256)


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
        total, garbage, candidates, complete, example, key = outcome(
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


@pytest.mark.parametrize("kind", sorted(_PREFILTERS))
def test_ripgrep_reads_every_built_in_pattern(kind: str) -> None:
    need(None if shutil.which("rg") else "ripgrep (rg) is not installed")
    assert logfile._rg_accepts(_PREFILTERS[kind])
    assert logfile._rg_accepts(_ENVELOPES[kind])


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
