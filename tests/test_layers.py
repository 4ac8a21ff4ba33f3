"""The layer rules of CONTRIBUTING.md, checked on the import statements of every module (ast, so
an import inside a function counts too). A rule broken on purpose is an entry of ALLOWED with
its reason; anything else new fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "auditor"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _imports() -> dict[str, set[str]]:
    """Module -> every module it imports (ours and third-party), absolute names."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        mod = _module(path)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}
        out[mod] = found
    return out


def _typing_only() -> dict[str, set[str]]:
    """Module -> the modules it imports only for annotations (inside `if TYPE_CHECKING:`)."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                    and node.test.id == "TYPE_CHECKING":
                for sub in (n for stmt in node.body for n in ast.walk(stmt)):
                    if isinstance(sub, ast.ImportFrom) and sub.module:
                        found.add(sub.module)
                        found |= {f"{sub.module}.{a.name}" for a in sub.names}
                    elif isinstance(sub, ast.Import):
                        found |= {a.name for a in sub.names}
        out[_module(path)] = found
    return out


IMPORTS = _imports()
OURS = set(IMPORTS)
TYPING_ONLY = _typing_only()


def _ours(mod: str) -> set[str]:
    # `from auditor import graph` names the package itself, which holds nothing: skip it
    return {m for m in IMPORTS[mod] if m in OURS and m not in (mod, "auditor")}


def _in(mod: str, room: str) -> bool:
    return mod == room or mod.startswith(room + ".")


# (importer, imported): why the rule is broken there.
ALLOWED = {
    # Handing the parsers in from ops/switches.py would only hide the import: the session still
    # has to read each reply before it sends the next command, and stops at the first reply it
    # cannot read (parse_failed, nothing more sent). A second SSH login per switch after
    # parsing would cost each switch another login (~2 s) and change what a bad reply stops.
    ("auditor.collect.onyx", "auditor.parse.onyx"):
        "an interactive CLI session: the port list of `show interfaces ib status` says which "
        "ports' transceivers to ask about",
}


def _violations(rule: str, importer_room: str, allowed_rooms: tuple[str, ...]) -> list[str]:
    bad = []
    for mod in sorted(OURS):
        if not _in(mod, importer_room):
            continue
        for dep in sorted(_ours(mod)):
            if any(_in(dep, r) for r in allowed_rooms) or (mod, dep) in ALLOWED:
                continue
            bad.append(f"{mod} imports {dep} ({rule})")
    return bad


def test_parse_imports_nothing_of_ours_but_models_and_errors() -> None:
    assert _violations("parse is pure", "auditor.parse",
                       ("auditor.parse", "auditor.models", "auditor.errors")) == []


def test_collect_does_no_parsing_or_storing() -> None:
    assert _violations("collect is I/O only", "auditor.collect",
                       ("auditor.collect", "auditor.models", "auditor.errors",
                        "auditor.config")) == []


def test_analyse_reads_through_the_store_and_writes_nothing() -> None:
    # No collect, ops, ingest, report or cli; no file or process I/O of its own.
    assert _violations("analyse does no I/O", "auditor.analyse",
                       ("auditor.analyse", "auditor.models", "auditor.errors", "auditor.store",
                        "auditor.graph", "auditor.portmap", "auditor.nccl", "auditor.config")) == []
    for mod in (m for m in OURS if _in(m, "auditor.analyse")):
        assert not IMPORTS[mod] & {"subprocess", "socket", "shutil", "paramiko", "duckdb"}, mod


def test_report_renders_what_analyse_returns() -> None:
    # No store (and no graph): what a report shows is read and worked out in analyse (audit).
    # The store's row types (auditor.store.rows) only name the rows a caller hands over, for
    # annotations: imported at run time they would import the store, and duckdb with it.
    assert _violations("report renders", "auditor.report",
                       ("auditor.report", "auditor.analyse", "auditor.models", "auditor.errors",
                        "auditor.safe_text", "auditor.outfiles", "auditor.config",
                        "auditor.store.rows")) == []
    for mod in (m for m in OURS if _in(m, "auditor.report")):
        rows = {d for d in IMPORTS[mod] if _in(d, "auditor.store")}
        assert rows <= {d for d in TYPING_ONLY[mod] if _in(d, "auditor.store.rows")}, mod


@pytest.mark.parametrize(("lib", "only"), [
    # the package auditor/store/, every module of it
    ("duckdb", ("auditor.store",)),
    ("_duckdb", ("auditor.store",)),
    ("typer", ("auditor.cli",)),
    ("paramiko", ("auditor.collect",)),
    ("netmiko", ("auditor.collect",)),
    ("pysnmp", ("auditor.collect",)),
    # the ranking's graph is graph.FabricGraph; networkx (80-110 ms to import) only for export
    ("networkx", ("auditor.graph",)),
])
def test_third_party_libraries_stay_in_their_room(lib: str, only: tuple[str, ...]) -> None:
    users = {m for m, deps in IMPORTS.items() if any(d == lib or d.startswith(lib + ".")
                                                     for d in deps)}
    assert all(any(_in(m, r) for r in only) for m in users), sorted(users)


def test_no_import_circle() -> None:
    graph = {m: {d for d in _ours(m) if not _in(m, d)} for m in OURS}
    circles = []
    for start in sorted(graph):
        stack, seen = list(graph[start]), set()
        while stack:
            mod = stack.pop()
            if mod == start:
                circles.append(start)
                break
            if mod not in seen:
                seen.add(mod)
                stack.extend(graph[mod])
    assert circles == []


def test_only_cli_and_ops_sit_above_ingest() -> None:
    # ingest is used by the CLI, the sweep/nightly, the demo and the simulator's evaluation
    users = {m for m in OURS for d in _ours(m) if _in(d, "auditor.ingest")
             and not _in(m, "auditor.ingest")}
    assert users <= {"auditor.cli", "auditor.demo", "auditor.simulate.evaluate",
                     *(m for m in OURS if _in(m, "auditor.ops"))}, sorted(users)


# The shared core at the package root (CONTRIBUTING.md): it imports nothing of the rooms above
# it. `demo` and `__main__` sit on top (the demo ingests and ranks a scenario) and are not core.
CORE = ("auditor.models", "auditor.errors", "auditor.config", "auditor.config_schema",
        "auditor.sql", "auditor.graph", "auditor.portmap", "auditor.timeparse", "auditor.nccl",
        "auditor.safe_text", "auditor.outfiles", "auditor.startup", "auditor.store")


def test_the_core_imports_only_the_core() -> None:
    for mod in CORE:
        if mod == "auditor.store":
            continue  # a room of its own (its rule is below)
        bad = [d for d in _ours(mod) if not any(_in(d, c) for c in CORE) or _in(d, "auditor.store")]
        assert bad == [], (mod, bad)


def test_the_store_imports_only_the_core_below_it() -> None:
    # config for its one default (the busy timeout), never a room above it
    assert _violations("the store is below the analysis", "auditor.store",
                       ("auditor.store", "auditor.models", "auditor.errors", "auditor.sql",
                        "auditor.config")) == []


def test_the_analysis_reads_as_it_flows() -> None:
    """issue #22: the rules table and the evidence records sit below the logic that fills and
    scores them; only the pipeline gathers (and only correlate calls the blame)."""
    below = {"auditor.analyse.rules": (), "auditor.analyse.evidence": (
        "auditor.analyse.correlate", "auditor.analyse.blame", "auditor.analyse.rank",
        "auditor.analyse.pipeline", "auditor.analyse.survivors")}
    for mod, never in below.items():
        assert not {d for d in _ours(mod) if d in never}, mod
    assert not {d for d in _ours("auditor.analyse.rules") if _in(d, "auditor.analyse")}
    gatherers = {m for m in OURS if "auditor.analyse.correlate.gather" in IMPORTS[m]}
    assert gatherers == {"auditor.analyse.pipeline"}, gatherers
    assert {m for m in OURS if any(_in(d, "auditor.analyse.blame") for d in _ours(m))} == {
        "auditor.analyse.correlate"}
