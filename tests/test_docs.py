"""The docs hold to the code: every command and option is in the README's commands table (one row
per command, as automation reads it), and every link between the Markdown files resolves, anchors
included (as sqlite-utils' tests/test_docs.py holds its docs to its CLI)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main

from auditor.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
         *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _commands() -> dict[str, Any]:
    """Every command by its path ("suspects", "snmp poll"), groups opened. (typer >= 0.26 brings
    its own click as typer._click: the objects are handled by what they have, not their class.)"""
    out: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, cmd in group.commands.items():
            if hasattr(cmd, "commands"):
                walk(cmd, f"{prefix}{name} ")
            else:
                out[f"{prefix}{name}"] = cmd

    walk(typer.main.get_command(app), "")
    return out


def _options(command: Any) -> list[str]:
    return [o for p in command.params if p.param_type_name == "option"
            for o in (*p.opts, *p.secondary_opts) if o != "--help"]


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def _rows() -> list[str]:
    section = _section(README.read_text(encoding="utf-8"), "Commands")
    return [line for line in section.splitlines() if line.startswith("| `auditor ")]


def _row_of(path: str, rows: list[str]) -> list[str]:
    return [r for r in rows if re.match(rf"\| `auditor {re.escape(path)}[ `]", r)]


def _has(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


COMMANDS = _commands()


def test_the_cli_has_the_commands_this_test_expects() -> None:
    assert {"ingest", "suspects", "report", "nightly", "snmp poll"} <= set(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_one_row_with_every_option(path: str) -> None:
    rows = _row_of(path, _rows())
    assert len(rows) == 1, f"`auditor {path}`: {len(rows)} rows in the README's commands table"
    missing = [o for o in _options(COMMANDS[path]) if not _has(rows[0], o)]
    assert not missing, f"`auditor {path}` row lacks {missing}"


def test_every_row_is_a_command() -> None:
    rows = _rows()
    assert rows
    for row in rows:
        assert any(_row_of(path, [row]) for path in COMMANDS), f"no such command: {row[:60]}"


def test_the_global_options_are_documented() -> None:
    section = _section(README.read_text(encoding="utf-8"), "Commands")
    options = _options(typer.main.get_command(app))
    assert "--db" in options
    assert all(_has(section, o) for o in options), options


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    links = [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    for target in links:
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        assert dest.is_file(), f"{page.name}: {target}: no such file"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{page.name}: {target}: no such heading"


def test_the_docs_pages_are_linked_from_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f"](docs/{page.name})" in readme, f"docs/{page.name} is not linked from the README"
