"""The commands that hand the history to other systems: `export` (Parquet for DuckDB, Spark,
Trino), `fleet` (several fabrics' exports in one table) and `metrics` (Prometheus). Part of the
typer layer (auditor/cli/__init__.py holds the app and the shared options)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from auditor.cli import (
    FormatOpt,
    SinceOpt,
    UntilOpt,
    _check_format,
    _open,
    _out,
    _settings,
    _show,
    _window,
    app,
    inert,
)


@app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Option("--out", help="the export folder (Hive layout)")],
    fabric: Annotated[str | None, typer.Option(
        "--fabric", help="the fabric's name in the partitions (default: the database file's "
        "name without .duckdb)")] = None,
    since: SinceOpt = "2d",
    until: UntilOpt = None,
    takeover: Annotated[bool, typer.Option(
        "--takeover", help="write the fabric's partitions although another database wrote "
        "them: this database owns them from now on (its days replace theirs)")] = False,
    fmt: FormatOpt = "table",
) -> None:
    """Write the history as Parquet for DuckDB, Spark, Trino or pandas: nodes, links, port
    events, counters, jobs, flaps, each day's suspects and outcomes, partitioned by fabric and day
    (`<out>/<table>/fabric=<name>/day=<YYYY-MM-DD>/part-0.parquet`). The days --since touches are
    rewritten whole: repeating an export changes nothing, a nightly one picks up late evidence.
    A fabric's partitions belong to the database that first wrote them (an owner record beside
    them): another database exporting under the same name is refused unless --takeover.

    Example:

    \b
        auditor export --out /srv/fabric-history --since 30d
        auditor export --out /srv/fabric-history --fabric pod2 --since 2d
    """
    from auditor.analyse.pipeline import RankSettings
    from auditor.ops.export import check_fabric, export
    from auditor.report import views
    from auditor.store import utc_naive

    _check_format(fmt)
    settings = _settings()
    name = check_fabric(fabric or settings.db.name.removesuffix(".duckdb"))
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        done = export(store, out, name, utc_naive(start), utc_naive(end),
                      RankSettings.from_settings(settings), takeover)
    for warning in done.warnings:
        typer.echo(inert(f"warning: {warning}", None), err=True)
    _show(views.rows([{"fabric": done.fabric, "first_day": done.days[0],
                       "last_day": done.days[-1], "days": len(done.days), "files": done.files,
                       "out": str(out)}], fmt, title="export"))


@app.command("fleet")
def fleet_cmd(
    exports: Annotated[list[Path], typer.Argument(help="export folders (auditor export --out)",
                                                  show_default=False)],
    since: SinceOpt = "24h",
    until: UntilOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """The suspects of several fabrics in one table, from their exports: each fabric's flaps
    and suspects per day of the window, best first within each fabric and day. Anything in
    the folders that export did not write (a corrupt file, a folder that is not a fabric or a
    day) is a warning on stderr and skipped; the rest is read.

    Example:

    \b
        auditor fleet /srv/pod1-history /srv/pod2-history --since 7d
        auditor fleet /srv/fabric-history --format json
    """
    from auditor.ops.export import fleet
    from auditor.report import views

    _check_format(fmt)
    start, end = _window(since, until)
    data = fleet(exports, start, end)
    for warning in data["warnings"]:
        typer.echo(inert(f"warning: fleet: {warning}", None), err=True)
    _show(views.fleet(data, fmt))


@app.command("metrics")
def metrics_cmd(
    textfile: Annotated[Path, typer.Option("--textfile", help="the .prom file node_exporter's "
                                           "textfile collector reads")],
    since: SinceOpt = "24h",
    until: UntilOpt = None,
) -> None:
    """Write Prometheus textfile-collector metrics: flaps per suspect link, suspect scores,
    sweep coverage, failed jobs and the time of the last good sweep.

    Example:

    \b
        auditor metrics --textfile /var/lib/node_exporter/textfile/auditor.prom
    """
    from auditor.analyse.audit import audit
    from auditor.analyse.pipeline import RankSettings
    from auditor.report.build import build_report
    from auditor.report.prometheus import render, write_textfile
    from auditor.store import utc_naive

    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        result = audit(store, utc_naive(start), utc_naive(end),
                       RankSettings.from_settings(settings), judge=False)
        sources = store.sources()
    write_textfile(textfile, render(build_report(result), sources))
    _out(str(textfile))
