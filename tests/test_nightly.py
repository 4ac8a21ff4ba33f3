"""The nightly run's pieces, for real: the lock between two live processes, retention on real
files with old mtimes, the rotating log file with a planted secret."""

from __future__ import annotations

import logging
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from auditor.config import Secret, Settings, SnmpSettings, SweepSettings, SwitchSettings
from auditor.errors import (
    EXIT_BUSY,
    EXIT_LOCKED,
    EXIT_NEW_AND_FAILED,
    EXIT_NEW_SUSPECTS,
    EXIT_OK_NOTHING,
    EXIT_SOURCES_FAILED,
    EXIT_USAGE,
    AuditorError,
    ConfigError,
    DatabaseBusyError,
    LockedError,
    exit_code,
)
from auditor.ops.lock import RunLock
from auditor.ops.nightly import new_suspects
from auditor.ops.progress import progress
from auditor.ops.retention import dated_folder, dated_folders, prune_captures, prune_reports
from auditor.ops.runlog import RedactSecrets, secret_values, setup_logging, teardown_logging

NOW = datetime(2026, 11, 30, 2, 0, 0, tzinfo=UTC)
DAY = 86400.0

# Takes the lock, says so, and holds it until its stdin closes (or it is killed).
HOLDER = """
import sys
from pathlib import Path
from auditor.ops.lock import RunLock
with RunLock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    lock = tmp_path / "auditor.duckdb.lock"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "the child did not take the lock within 20 s"
        assert proc.stdout.readline().strip() == "locked"
        yield proc, lock
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def test_exit_codes() -> None:
    assert (EXIT_OK_NOTHING, EXIT_USAGE, EXIT_NEW_SUSPECTS, EXIT_SOURCES_FAILED, EXIT_LOCKED) \
        == (0, 2, 10, 20, 75)
    assert AuditorError.exit_code == EXIT_USAGE
    assert exit_code(0, False) == 0
    assert exit_code(3, False) == 10
    assert exit_code(0, True) == 20
    # Neither hides the other (issue 11, item 13): 30 = 10 + 20.
    assert exit_code(1, True) == EXIT_NEW_AND_FAILED == 30
    assert EXIT_BUSY == DatabaseBusyError.exit_code == 3


def test_second_process_is_refused_at_once(holder: tuple[subprocess.Popen[str], Path]) -> None:
    proc, lock = holder
    start = time.monotonic()
    with pytest.raises(LockedError) as info:
        RunLock(lock).acquire()
    assert time.monotonic() - start < 1.0  # non-blocking: fails, does not wait
    err = info.value
    assert isinstance(err, AuditorError) and err.exit_code == EXIT_LOCKED == 75
    assert str(lock) in str(err) and f"pid {proc.pid}" in str(err) and "started 20" in str(err)
    assert err.holder["pid"] == str(proc.pid)

    # The holder exits normally: the lock is free again, and we become the holder.
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    with RunLock(lock) as mine:
        assert mine.holder()["pid"] == str(os.getpid())
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", mine.holder()["started"])


def test_lock_of_a_killed_process_is_not_stale(holder: tuple[subprocess.Popen[str], Path]) -> None:
    proc, lock = holder
    proc.kill()  # SIGKILL: no cleanup at all
    proc.wait(timeout=10)
    assert RunLock(lock).holder()["pid"] == str(proc.pid)  # the file and its line stay behind
    with RunLock(lock):  # but the kernel released the flock
        pass


def test_lock_is_not_inherited_by_children(tmp_path: Path) -> None:
    lock = RunLock.for_db(tmp_path / "auditor.duckdb")
    assert lock.path == tmp_path / "auditor.duckdb.lock"
    lock.acquire()
    # close_fds=False: even a child given every inheritable descriptor must not get the lock.
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
        close_fds=False, stdout=subprocess.PIPE, text=True)
    try:
        # Wait until the child runs its own program: between fork and exec (and while the
        # kernel finishes closing its close-on-exec descriptors) it still shares our lock.
        assert child.stdout is not None
        assert select.select([child.stdout], [], [], 20)[0], "the child did not start"
        assert child.stdout.readline().strip() == "up"
        with pytest.raises(LockedError):
            RunLock(lock.path).acquire()  # another open file description: refused
        lock.release()
        with RunLock(lock.path):  # the child still runs and does not keep it held
            assert child.poll() is None
    finally:
        child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


def _age(path: Path, days: float) -> None:
    t = NOW.timestamp() - days * DAY
    os.utime(path, (t, t), follow_symlinks=False)


def _tree(folder: Path, days: float, files: tuple[str, ...] = ("ibnetdiscover.txt",)) -> Path:
    folder.mkdir(parents=True)
    for name in files:
        (folder / name).write_text("x\n")
        _age(folder / name, days)
    _age(folder, days)
    return folder


def test_prune_captures_removes_only_old_entries_inside(tmp_path: Path) -> None:
    captures = tmp_path / "captures"
    old = _tree(captures / "20261001T020000Z", 60)
    new = _tree(captures / "20261129T020000Z", 1)
    refreshed = _tree(captures / "20261002T020000Z", 59)
    (refreshed / "late.txt").write_text("written yesterday\n")
    _age(refreshed / "late.txt", 1)
    _age(refreshed, 59)  # folder's own mtime old, but something in it is new: kept
    loose_old = captures / "stray.txt"
    loose_old.write_text("old\n")
    _age(loose_old, 40)
    protected = captures / "auditor.duckdb"
    protected.write_text("db\n")
    _age(protected, 90)
    outside = _tree(tmp_path / "elsewhere", 90)
    link = captures / "link-to-elsewhere"
    link.symlink_to(outside, target_is_directory=True)
    _age(link, 90)
    sibling = tmp_path / "captures-notes.txt"
    sibling.write_text("not ours\n")
    _age(sibling, 90)

    removed = prune_captures(captures, 30, NOW, protect=[protected])

    assert sorted(p.name for p in removed) == ["20261001T020000Z", "link-to-elsewhere",
                                               "stray.txt"]
    assert not old.exists() and not loose_old.exists() and not link.is_symlink()
    assert new.is_dir() and refreshed.is_dir() and protected.exists()
    # The symlink's target and everything beside the captures folder are untouched.
    assert (outside / "ibnetdiscover.txt").read_text() == "x\n" and sibling.exists()
    assert prune_captures(captures, 30, NOW, protect=[protected]) == []  # idempotent
    assert prune_captures(tmp_path / "missing", 30, NOW) == []


def test_prune_refuses_root_home_and_bad_ages(tmp_path: Path) -> None:
    for dangerous in (Path("/"), Path.home(), Path("~"), Path.home().parent):
        with pytest.raises(ConfigError, match="refusing"):
            prune_captures(dangerous, 30, NOW)
        with pytest.raises(ConfigError, match="refusing"):
            prune_reports(dangerous, 30, NOW)
    with pytest.raises(ConfigError, match="keep_days"):
        prune_captures(tmp_path, -1, NOW)
    with pytest.raises(ConfigError, match="keep_days"):
        prune_reports(tmp_path, float("nan"), NOW)


def test_prune_reports_touches_dated_folders_only(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    names = ["2026-10-01", "2026-10-02T020000Z", "2026-11-29T020000Z", "2026-11-30"]
    for name in names:
        _tree(reports / name, 0, ("report.md", "suspects.json"))  # fresh mtimes: age by name
    for name in ("notes", "2026-13-45", "2026-10-01-old"):
        _tree(reports / name, 400)  # old, but not a dated report folder
    (reports / "2020-01-01T000000Z").write_text("a file, not a folder\n")

    removed = prune_reports(reports, 30, NOW)

    assert sorted(p.name for p in removed) == ["2026-10-01", "2026-10-02T020000Z"]
    left = sorted(p.name for p in reports.iterdir())
    assert left == ["2020-01-01T000000Z", "2026-10-01-old", "2026-11-29T020000Z", "2026-11-30",
                    "2026-13-45", "notes"]
    assert [p.name for p in dated_folders(reports)] == ["2026-11-29T020000Z", "2026-11-30"]


def test_dated_folder(tmp_path: Path) -> None:
    folder = dated_folder(tmp_path / "reports", NOW)
    assert folder == tmp_path / "reports" / "2026-11-30T020000Z" and folder.is_dir()
    # a second run within the same second does not overwrite the first one's report
    again = dated_folder(tmp_path / "reports", NOW)
    assert again == tmp_path / "reports" / "2026-11-30T020000Z-2" and again.is_dir()
    cet = NOW.astimezone(timezone(timedelta(hours=1)))
    third = dated_folder(tmp_path / "reports", cet)  # always named in UTC
    assert third == tmp_path / "reports" / "2026-11-30T020000Z-3"
    assert dated_folders(tmp_path / "reports") == [folder, again, third]


@pytest.fixture
def clean_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    teardown_logging()
    root.setLevel(level)


def test_log_file_redacts_secrets_from_settings(tmp_path: Path, clean_logging: None,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AUDITOR_TEST_SWEEP_PW", "hunter2-sweep")
    monkeypatch.setenv("AUDITOR_TEST_COMMUNITY", "s3cr3t-community")
    settings = Settings(
        sweep=SweepSettings(password=Secret("env:AUDITOR_TEST_SWEEP_PW")),
        switches=(SwitchSettings("leaf01", "10.0.0.1", snmp=SnmpSettings(
            community=Secret("env:AUDITOR_TEST_COMMUNITY"), auth_key=Secret("env:UNSET_X"))),),
    )
    secrets = secret_values(settings)
    assert sorted(secrets) == ["hunter2-sweep", "s3cr3t-community"]
    log_file = tmp_path / "log" / "nightly.log"
    handlers = setup_logging(log_file, interactive=False, secrets=secrets)
    rotating = handlers[0]
    assert isinstance(rotating, logging.handlers.RotatingFileHandler)
    assert (rotating.maxBytes, rotating.backupCount) == (5 * 1024 * 1024, 5)

    log = logging.getLogger("auditor.collect.onyx")  # a child logger: propagated records
    log.info("leaf01 said: bad community s3cr3t-community")
    log.warning("login as admin/%s refused", "hunter2-sweep")
    try:
        raise RuntimeError("ssh://admin:hunter2-sweep@leaf01 failed")
    except RuntimeError:
        log.exception("sweep failed")
    log.debug("debug is below the file's level")

    text = log_file.read_text(encoding="utf-8")
    assert "hunter2" not in text and "s3cr3t" not in text
    assert "bad community ***" in text and "admin/*** refused" in text
    assert "RuntimeError: ssh://admin:***@leaf01 failed" in text
    assert "debug is below" not in text
    first = text.splitlines()[0]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ INFO auditor\.collect\.onyx: leaf01", first)
    # Cron: nothing on stdout, only the error on stderr, redacted too.
    out, err = capsys.readouterr()
    assert out == ""
    assert "sweep failed" in err and "bad community" not in err and "hunter2" not in err


def test_interactive_logging_and_progress_keep_stdout_clean(
        tmp_path: Path, clean_logging: None, capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging(None, interactive=True)
    logging.getLogger("auditor.nightly").info("sweeping")
    for interactive in (True, False):
        with progress(interactive) as steps, steps.step("sweep", total=3) as task:
            steps.advance(task)
            steps.advance(task, 2)
        with progress(interactive) as steps, steps.step("rank"):
            pass
    out, err = capsys.readouterr()
    assert out == ""
    assert "sweeping" in err


def test_redact_filter_alone() -> None:
    redact = RedactSecrets(["abc", "abcdef", ""])  # empty values ignored, longest wins
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "k=%s and %s", ("abcdef", "abc"),
                               None)
    assert redact.filter(record)
    assert record.getMessage() == "k=*** and ***"
    assert RedactSecrets([]).redact("abc") == "abc"


def _doc(*suspects: tuple[str, Sequence[tuple[str, int | None]]]) -> dict[str, Any]:
    return {"window": {}, "jobs": {}, "suspects": [
        {"rank": i, "component": comp, "score": 0.5,
         "ends": [{"name": n, "guid": "0x1", "port": p, "label": ""} for n, p in ends]}
        for i, (comp, ends) in enumerate(suspects, 1)]}


def test_new_suspects() -> None:
    cable = ("cable", [("leaf01", 17), ("gpu-001", 1)])
    cable_reversed = ("cable", [("gpu-001", 1), ("leaf01", 17)])
    switch = ("switch", [("spine02", None)])
    before = _doc(cable, switch)
    # Same suspects, ends in another order, other ranks: nothing new.
    assert new_suspects(before, _doc(switch, cable_reversed)) == []
    other_port = ("cable", [("leaf01", 18), ("gpu-001", 1)])
    rejudged = ("transceiver", [("leaf01", 17), ("gpu-001", 1)])
    now = _doc(cable, other_port, rejudged)
    assert [(s["component"], s["ends"][0]["port"]) for s in new_suspects(before, now)] == [
        ("cable", 18), ("transceiver", 17)]
    assert len(new_suspects(None, now)) == 3  # first run: everything is new
    assert new_suspects(before, _doc()) == []
