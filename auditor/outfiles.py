"""Files the auditor writes for people and other programs (reports, metrics): written whole or
not at all, and a path that cannot be written is one line naming it (AuditorError), never a
traceback."""

from __future__ import annotations

import contextlib
from pathlib import Path

from auditor.errors import AuditorError


def _why(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


def make_folder(folder: Path, what: str, target: Path | None = None) -> None:
    """`folder` and its parents; AuditorError naming `target` (default: the folder) when it
    cannot be made (a file in the way, a read-only or missing mount)."""
    name = target or folder
    if folder.exists() and not folder.is_dir():
        raise AuditorError(f"{name}: cannot write the {what}: {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = f"cannot create {folder}" if target else "cannot create the folder"
        raise AuditorError(f"{name}: cannot write the {what}: {where}: {_why(exc)}") from None


def write_text(path: Path, text: str, what: str, tmp: Path | None = None) -> None:
    """`text` into `path` through a temporary file beside it (`tmp`, default `path.tmp`), so a
    reader never sees half a file; AuditorError naming `path` when it cannot be written."""
    tmp = tmp or path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise AuditorError(f"{path}: cannot write the {what}: {_why(exc)}") from None
