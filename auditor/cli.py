"""The `auditor` command line: a thin typer layer over the library. No domain logic here."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from auditor import config as config_mod
from auditor import fabric as fabric_mod
from auditor.errors import AuditorError
from auditor.render import FORMATS, render_rows, to_json, to_table

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals can hold passwords and SNMP communities
    add_completion=False,
    help="Find the InfiniBand cables, transceivers and switch ports that break GPU jobs.",
)


class _State:
    db: Path | None = None
    config: Path | None = None


_state = _State()

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, json or csv")]
AtOpt = Annotated[
    str | None, typer.Option("--at", help="ISO-8601 time (default: now); no zone means UTC")
]


def _settings() -> config_mod.Settings:
    return config_mod.load(_state.config, _state.db)


def _at(value: str | None) -> datetime:
    from auditor.timeparse import parse_instant

    return parse_instant(value) if value else datetime.now(UTC)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise AuditorError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")


def _out(text: str) -> None:
    typer.echo(text.rstrip("\n"))


@app.callback()
def main_options(
    db: Annotated[
        Path | None,
        typer.Option("--db", help="DuckDB file (env AUDITOR_DB; default ./auditor.duckdb)"),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="auditor.toml (env AUDITOR_CONFIG)",
                     envvar="AUDITOR_CONFIG"),
    ] = None,
) -> None:
    """Find the InfiniBand cables, transceivers and switch ports that break GPU jobs.

    Example:

        auditor --db fabric.duckdb topology
    """
    _state.db = db
    _state.config = config


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help="capture files", show_default=False)],
    kind: Annotated[str, typer.Option("--kind", "-k", help="auto, ibnetdiscover, iblinkinfo, "
                                      "perfquery or ibqueryerrors")] = "auto",
    at: AtOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """Read captured tool output into the database (one transaction; re-ingesting is a no-op).

    `--at` is when the snapshot was taken; files ingested together share it.

    Example:

        auditor ingest --at 2026-11-30T06:00:00Z ibnetdiscover.txt iblinkinfo.txt
    """
    from auditor.ingest import KINDS, ingest_files
    from auditor.parse.nodedesc import parse_node_name_map
    from auditor.store import Store

    _check_format(fmt)
    if kind not in KINDS:
        raise AuditorError(f"--kind {kind!r}: use one of {', '.join(KINDS)}")
    settings = _settings()
    names = _node_names(settings, parse_node_name_map)
    moment = _at(at) if at else None
    with Store(settings.db) as store:
        results = ingest_files(store, files, kind=kind, at=moment, node_names=names)
    rows = [{"file": r.path, "kind": r.kind, "status": r.status, "records": r.records,
             "warnings": "; ".join(r.warnings)} for r in results]
    _out(render_rows(rows, fmt, title="ingest"))
    for r in results:
        for w in r.warnings:
            typer.echo(f"warning: {r.path}: {w}", err=True)


def _node_names(settings: config_mod.Settings, parser: Any) -> dict[str, str]:
    if settings.node_name_map is None:
        return {}
    from auditor.errors import ParseError

    path = settings.node_name_map
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuditorError(f"{path}: cannot read node-name map: {exc.strerror}") from exc
    try:
        result: dict[str, str] = parser(text)
    except ParseError as exc:
        raise exc.with_source(str(path)) from None
    return result


@app.command()
def topology(at: AtOpt = None, fmt: FormatOpt = "table") -> None:
    """The fabric at a time: switches, HCAs, links, down ports, degraded links, changes.

    Example:

        auditor topology --at 2026-11-30T06:00:00Z --format json
    """
    from auditor.store import Store

    _check_format(fmt)
    with Store(_settings().db, read_only=True) as store:
        data = fabric_mod.topology(store, _at(at))
    if fmt == "json":
        _out(to_json(data))
        return
    summary = [{k: data[k] for k in ("snapshot_at", "switches", "hcas", "links", "ports_down")}
               | {"degraded": len(data["degraded"]), "moved": len(data["moved"]),
                  "appeared": len(data["appeared"]), "disappeared": len(data["disappeared"])}]
    if fmt == "csv":
        _out(render_rows(summary, "csv"))
        return
    _out(to_table(summary, title="fabric"))
    if data["down"]:
        _out(to_table([_pair(d["ends"]) | {"down_since": d["down_since"]} for d in data["down"]],
                      title="ports down (were up)"))
    if data["degraded"]:
        _out(to_table([_pair(d["ends"]) | {
            "now": f"{d['width']} {d['speed']}",
            "could be": f"{d['possible_width']} {d['possible_speed']}",
            "why": d["reason"]} for d in data["degraded"]], title="degraded links"))
    for key in ("appeared", "disappeared"):
        if data[key]:
            _out(to_table([_pair(p) for p in data[key]], title=f"links {key}"))
    if data["moved"]:
        _out(to_table([{"before": _label(m["before"]), "after": _label(m["after"])}
                       for m in data["moved"]], title="cables moved"))


def _pair(ends: list[dict[str, Any]]) -> dict[str, Any]:
    return {"end A": f"{ends[0]['name']} port {ends[0]['port']}",
            "end B": f"{ends[1]['name']} port {ends[1]['port']}"}


def _label(ends: list[dict[str, Any]]) -> str:
    return " <-> ".join(f"{e['name']}[{e['port']}]" for e in ends)


@app.command()
def links(
    degraded: Annotated[bool, typer.Option("--degraded", help="only degraded links")] = False,
    down: Annotated[bool, typer.Option("--down", help="only ports that went down")] = False,
    at: AtOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """Every link of the fabric with its width and speed; --degraded and --down filter.

    Example:

        auditor links --degraded --down --format csv
    """
    from auditor.store import Store

    _check_format(fmt)
    with Store(_settings().db, read_only=True) as store:
        rows = fabric_mod.links(store, _at(at), degraded_only=degraded, down_only=down)
    columns = None if fmt != "table" else [
        "a_name", "a_port", "b_name", "b_port", "state", "width", "speed", "note"]
    _out(render_rows(rows, fmt, columns=columns, title="links"))


@app.command()
def sweep(fmt: FormatOpt = "table") -> None:
    """Run ibnetdiscover, iblinkinfo and ibqueryerrors (read-only) and ingest their output.

    Runs locally, or over SSH on the management host named in the config ([sweep] host).
    Raw captures are kept beside the database (captures/<time>/) for replay with `ingest`.
    Exit code 1 when a command failed (the rest is still ingested).

    Example:

        auditor --config auditor.toml sweep
    """
    from auditor.collect.runner import runner_for
    from auditor.parse.nodedesc import parse_node_name_map
    from auditor.store import Store
    from auditor.sweep import sweep as run_sweep

    _check_format(fmt)
    settings = _settings()
    names = _node_names(settings, parse_node_name_map)
    runner = runner_for(settings.sweep)
    try:
        with Store(settings.db) as store:
            result = run_sweep(store, settings, runner, node_names=names)
    finally:
        runner.close()
    rows = [dict(c) for c in result.commands]
    if fmt == "json":
        _out(to_json({"at": result.at, "where": result.where, "captures": str(result.folder),
                      "commands": rows,
                      "ingested": [{"file": r.path, "kind": r.kind, "status": r.status,
                                    "records": r.records} for r in result.ingested]}))
    else:
        _out(render_rows(rows, fmt, title=f"sweep on {result.where}"))
    if result.failed:
        raise typer.Exit(1)


@app.command()
def sources(fmt: FormatOpt = "table") -> None:
    """What was ingested, when, from where, and how many lines were not understood.

    Example:

        auditor sources --format json
    """
    from auditor.store import Store

    _check_format(fmt)
    with Store(_settings().db, read_only=True) as store:
        rows = store.sources()
    columns = None if fmt != "table" else [
        "source_id", "kind", "path", "origin", "observed_at", "lines_total", "lines_unparsed",
        "records"]
    _out(render_rows(rows, fmt, columns=columns, title="sources"))


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="demo database to (re)create")] = Path(
        "auditor-demo.duckdb"),
) -> None:
    """Build a demo database from sample captures shipped with the tool and show what it finds.

    Example:

        auditor demo && auditor --db auditor-demo.duckdb links --down
    """
    from auditor.demo import build_demo

    summary = build_demo(out)
    _out(summary)


def main() -> None:
    try:
        app()
    except AuditorError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
