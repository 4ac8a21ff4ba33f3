"""Loads the SQL statements in queries/<name>.sql by name, once, and checks them on load."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from auditor.errors import AuditorError

_PACKAGE_DIR = Path(__file__).resolve().parent
# A checkout (editable install) reads queries/ beside pyproject.toml; a wheel ships its own copy
# under auditor/queries (hatch force-include), because force-included folders are not exposed by
# editable installs.
_CHECKOUT_DIR = _PACKAGE_DIR.parent / "queries"
_WHEEL_DIR = _PACKAGE_DIR / "queries"
_NAME = re.compile(r"[a-z0-9_/]+", re.ASCII)  # fullmatch: `$` lets "x\n" through


def queries_dir() -> Path:
    if (_PACKAGE_DIR.parent / "pyproject.toml").is_file() and _CHECKOUT_DIR.is_dir():
        return _CHECKOUT_DIR
    return _WHEEL_DIR


@cache
def load(name: str) -> str:
    """Return the text of queries/<name>.sql; a statement file must hold exactly one statement."""
    if not _NAME.fullmatch(name):
        raise AuditorError(f"bad query name {name!r}")
    path = queries_dir() / f"{name}.sql"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read query: {exc.strerror}") from exc
    if name != "schema" and not name.startswith("migrations/"):
        body = "\n".join(
            line for line in text.splitlines() if not line.lstrip().startswith("--")
        ).strip()
        if body.rstrip(";").count(";"):
            raise AuditorError(f"{path}: holds more than one statement")
    return text


def names() -> list[str]:
    """Every statement file's name (schema and migrations excluded)."""
    return sorted(p.stem for p in queries_dir().glob("*.sql") if p.stem != "schema")


def migrations() -> list[tuple[int, str]]:
    """(version, name) of every forward migration, in order; schema.sql is version 1."""
    found = []
    for path in sorted((queries_dir() / "migrations").glob("*.sql")):
        number = path.stem.split("_", 1)[0]
        if number.isdigit():
            found.append((int(number), f"migrations/{path.stem}"))
    return found
