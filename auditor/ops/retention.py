"""Dated capture and report folders, and pruning the ones older than the retention."""


from __future__ import annotations

import contextlib
import logging
import logging.handlers
import math
import os
import re
import shutil
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from auditor.errors import ConfigError

log = logging.getLogger(__name__)

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


# A second run within the same second gets `-2`, `-3`: no run overwrites another's report.
# fullmatch and ASCII digits: a folder `2026-11-20\n` or in other digits is the user's, not ours.
_DATED = re.compile(r"(\d{4}-\d{2}-\d{2})(?:T(\d{6})Z)?(?:-(\d+))?", re.ASCII)


def _folder_time(name: str) -> datetime | None:
    m = _DATED.fullmatch(name)
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
    found = [(t, _sequence(p.name), p) for p in base.iterdir()
             if (t := _folder_time(p.name)) is not None and p.is_dir() and not p.is_symlink()]
    return [p for _, _, p in sorted(found)]


def _sequence(name: str) -> int:
    m = _DATED.fullmatch(name)
    return int(m.group(3)) if m and m.group(3) else 1


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
    """`base/2026-11-30T020000Z` for `now` in UTC, created (with parents); `...Z-2` when a run
    of the same second made that one already."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    from auditor.outfiles import make_folder

    name = now.astimezone(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    folder, n = base / name, 1
    while folder.exists():
        n += 1
        folder = base / f"{name}-{n}"
    make_folder(folder, "report")
    return folder


