"""The `auditor` command line: a thin typer layer over the library. No domain logic here."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from auditor import __version__
from auditor.errors import AuditorError
from auditor.ingest import kinds  # data only: the parsers are imported when a kind is read
from auditor.startup import named_command, no_collector, tune_collector

if TYPE_CHECKING:
    from typer import _click

    from auditor import config as config_mod
    from auditor.store import Store

# `auditor --help` and `--version` import only typer and this module (issue #13: 0.28-0.37 s
# before, most of it networkx, duckdb, rich tables and pydantic pulled in by module-level
# imports). Every command imports what it uses; tests/test_imports.py keeps it that way.
FORMATS = ("table", "json", "csv")


def inert(text: str, limit: int | None) -> str:
    from auditor.safe_text import inert as _inert

    return _inert(text, limit)


def _fail(exc: AuditorError) -> NoReturn:
    """One line on stderr per message (never a traceback), and the error's exit code."""
    for line in exc.messages():
        typer.echo(inert(f"error: {line}", None), err=True)
    raise typer.Exit(exc.exit_code)


class _Commands(TyperGroup):
    """Every command's AuditorError becomes its message and exit code, whether the command line
    runs as `auditor` or is invoked in-process (typer's CliRunner)."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AuditorError as exc:
            _fail(exc)


app = typer.Typer(
    cls=_Commands,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals can hold passwords and SNMP communities
    add_completion=False,
    # Plain help and usage errors: typer's rich formatting imports rich and markdown-it, 43 ms
    # of a 0.12 s `auditor --help` (issue #13 asks for <= 0.12 s as a whole process).
    rich_markup_mode=None,
    help="Find the InfiniBand cables, transceivers and switch ports that break GPU jobs.",
)


class _State:  # the global options, for the command that runs
    db: Path | None = None
    config: Path | None = None


_state = _State()

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, json or csv")]
AtOpt = Annotated[
    str | None, typer.Option("--at", help="ISO-8601 time (default: now); no zone means UTC")
]


def _settings() -> config_mod.Settings:
    from auditor import config as config_mod

    return config_mod.load(_state.config, _state.db)


def _open(settings: config_mod.Settings, read_only: bool = False) -> Store:
    """The database, waiting up to `[store] busy_timeout_s` while another process holds it."""
    from auditor.store import Store

    return Store(settings.db, read_only=read_only, busy_timeout_s=settings.busy_timeout_s)


def _at(value: str | None) -> datetime:
    from auditor.timeparse import parse_instant

    return parse_instant(value) if value else datetime.now(UTC)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise AuditorError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")


def _show(blocks: list[str]) -> None:
    """Print what a report view (auditor.report.views) made of a command's data."""
    for block in blocks:
        _out(block)


def _out(text: str) -> None:
    typer.echo(text.rstrip("\n"))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"auditor {__version__}")
        raise typer.Exit()


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
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True,
                           help="Print the version and exit.")
    ] = False,
) -> None:
    """Find the InfiniBand cables, transceivers and switch ports that break GPU jobs.

    Example:

    \b
        auditor --db fabric.duckdb topology
    """
    _state.db = db
    _state.config = config


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(
        help="capture or log files (or an ibdiagnet output folder)", show_default=False)],
    kind: Annotated[str, typer.Option("--kind", "-k", help=kinds.help_text(),
                                      show_default=False)] = "auto",
    at: AtOpt = None,
    year: Annotated[int | None, typer.Option(
        "--year", help="year of log stamps that have none (default: from the file's date)")] = None,
    tz: Annotated[str | None, typer.Option(
        "--tz", help="zone of log stamps that have none (default UTC, or [logs] tz)")] = None,
    host: Annotated[str | None, typer.Option(
        "--host", help="dmesg, boots, transceiver diagnostics and NVOS event tables: the host "
        "(or switch) it came from")
    ] = None,
    port: Annotated[str | None, typer.Option(
        "--port", help="transceiver diagnostics: the port (ib0, mlx5_0/1, IB1/17) when the "
        "capture does not start with the command that names it")] = None,
    job: Annotated[str | None, typer.Option(
        "--job", help="joblog: the job the log belongs to (default: matched by host and time)")
    ] = None,
    fmt: FormatOpt = "table",
) -> None:
    """Read captured tool output and logs into the database (one transaction; re-ingesting a file
    with the same options is a no-op, with other --kind/--job/--year/--tz it replaces what the
    file stored). Logs may be plain or .gz (a damaged .gz is read up to the damage), rotated
    files in any order.

    `--at` is when a topology or counter snapshot was taken, or the forwarding tables read
    (`--kind lfts`); files ingested together share it.
    For transceiver diagnostics it is when the module was read (default: the file's time).
    Log lines that cannot be used (NUL bytes included) are counted per reason (see
    `auditor sources`).

    Example:

    \b
        auditor ingest --at 2026-11-30T06:00:00Z ibnetdiscover.txt iblinkinfo.txt
        auditor ingest --kind syslog /var/log/ib-switches/syslog.1.gz /var/log/ib-switches/syslog
        auditor ingest --kind sacct sacct-24h.txt
        auditor ingest --kind ibdiagnet /var/tmp/ibdiagnet2
        auditor ingest --kind joblog --job 4242 rank0.log
        auditor ingest --kind ethtool-module --host gpu-node-07 --port ib0 ethtool-m.txt
        auditor ingest --kind lfts --at 2026-11-30T06:00:00Z dump_lfts.txt
    """
    from auditor.ingest.plan import IngestOptions, ingest_paths
    from auditor.report import views

    _check_format(fmt)
    settings = _settings()
    with _open(settings) as store:
        results = ingest_paths(store, files, kind, settings, IngestOptions(
            at=_at(at) if at else None, year=year, tz=tz, host=host, port=port, job=job))
    rows = [{"file": r.path, "kind": r.kind, "status": r.status, "records": r.records,
             "warnings": "; ".join(r.warnings)} for r in results]
    _show(views.rows(rows, fmt, title="ingest"))
    for r in results:
        for w in r.warnings:
            typer.echo(inert(f"warning: {r.path}: {w}", None), err=True)


@app.command()
def topology(at: AtOpt = None, fmt: FormatOpt = "table") -> None:
    """The fabric at a time: switches, HCAs, links, down ports, degraded links, changes.

    Example:

    \b
        auditor topology --at 2026-11-30T06:00:00Z --format json
    """
    from auditor.analyse import topology as topology_mod
    from auditor.report import views

    _check_format(fmt)

    with _open(_settings(), read_only=True) as store:
        data = topology_mod.topology(store, _at(at))
    _show(views.topology(data, fmt))


@app.command()
def links(
    degraded: Annotated[bool, typer.Option("--degraded", help="only degraded links")] = False,
    down: Annotated[bool, typer.Option("--down", help="only ports that went down")] = False,
    at: AtOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """Every link of the fabric with its width and speed; --degraded and --down filter.

    Example:

    \b
        auditor links --degraded --down --format csv
    """
    from auditor.analyse import topology as topology_mod
    from auditor.report import views

    _check_format(fmt)

    with _open(_settings(), read_only=True) as store:
        rows = topology_mod.links(store, _at(at), degraded_only=degraded, down_only=down)
    columns = [
        "a_name", "a_port", "b_name", "b_port", "state", "width", "speed", "note"]
    _show(views.rows(rows, fmt, columns=columns, title="links"))


@app.command()
def path(
    a: Annotated[str, typer.Argument(help="a host (or HCA node name, node or port GUID)",
                                     show_default=False)],
    b: Annotated[str, typer.Argument(help="the other host", show_default=False)],
    rail: Annotated[int | None, typer.Option(
        "--rail", help="which of each host's HCA ports, 0 first (in HCA name order); "
        "default 0")] = None,
    at: AtOpt = None,
    since: Annotated[str, typer.Option(
        "--since", help="how far back from --at a cable's flaps are shown: 30m, 24h, 7d")
    ] = "24h",
    fmt: FormatOpt = "table",
) -> None:
    """The route between two hosts both ways (routes are not symmetric), hop by hop, from the
    forwarding tables stored (`ingest --kind lfts`, or a sweep's dump_lfts.sh) as they were
    at --at: each switch, its in and out port, the cable out of it and how often that cable
    flapped in the --since before. Traffic goes to the destination port's base LID, as NCCL's
    does. Exit code 1 when a route does not arrive (unreachable, a loop, a dead end).

    Example:

    \b
        auditor path gpu-node-07 gpu-node-42 --rail 3 --at 2026-11-30T03:12:00Z
    """
    from auditor.analyse.routing import PathQuery, trace
    from auditor.report import views
    from auditor.timeparse import parse_span

    _check_format(fmt)
    settings = _settings()
    query = PathQuery(a, b, rail, _at(at), parse_span(since), dict(settings.aliases))
    with _open(settings, read_only=True) as store:
        data = trace(store, query)
    _show(views.path(data, fmt))
    failed = [d for d in data["directions"] if d["status"] != "ok"]
    for d in failed:
        typer.echo(inert(f"error: {d['from']} -> {d['to']}: {d['status']}: {d['reason']}",
                         None), err=True)
    if failed:
        raise typer.Exit(1)


@app.command()
def sweep(fmt: FormatOpt = "table") -> None:
    """Run ibnetdiscover, iblinkinfo and ibqueryerrors (read-only) and ingest their output.

    Runs locally, or over SSH on the management host named in the config ([sweep] host).
    Raw captures are kept beside the database (captures/<time>/) for replay with `ingest`.
    Exit code 1 when a command failed (the rest is still ingested); an unreachable management
    host fails its commands, and the switches, hosts and log files are still read.

    Example:

    \b
        auditor --config auditor.toml sweep
    """
    from auditor.collect.runner import open_runner
    from auditor.ingest.captures import load_node_names
    from auditor.ops.sweep import sweep as run_sweep
    from auditor.report import views

    _check_format(fmt)
    settings = _settings()
    names = load_node_names(settings.node_name_map)
    runner = open_runner(settings.sweep)  # unreachable: its commands fail, the rest runs
    try:
        with _open(settings) as store:
            result = run_sweep(store, settings, runner, node_names=names)
    finally:
        runner.close()
    _show(views.sweep(result.at, result.where, str(result.folder),
                      [dict(c) for c in result.commands],
                      [{"file": r.path, "kind": r.kind, "status": r.status, "records": r.records}
                       for r in result.ingested], fmt))
    if result.failed:
        raise typer.Exit(1)


@app.command()
def sources(fmt: FormatOpt = "table") -> None:
    """What was ingested, when, from where, and how many lines were not understood or not
    mapped to a port, per reason with an example line.

    Example:

    \b
        auditor sources --format json
    """
    from auditor.report import views

    _check_format(fmt)
    with _open(_settings(), read_only=True) as store:
        rows = store.sources()
        issues = store.issues()
    _show(views.sources(rows, issues, fmt))


SinceOpt = Annotated[str, typer.Option("--since", help="window length back from --until: 30m, "
                                       "24h, 7d")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="end of the window, ISO-8601 "
                                              "(default: now)")]


def _window(since: str, until: str | None) -> tuple[datetime, datetime]:
    from auditor.timeparse import parse_window

    return parse_window(since, until)


@app.command()
def flaps(since: SinceOpt = "24h", until: UntilOpt = None, fmt: FormatOpt = "table") -> None:
    """Link flaps in a window: both ends, when the link went down and came back, how long it was
    down and which sources saw it (syslog, UFM, opensm, SNMP, sweeps, LinkDownedCounter).

    Example:

    \b
        auditor flaps --since 24h --format json
    """
    from auditor.analyse import flaps as flaps_mod
    from auditor.report import views
    from auditor.store import utc_naive

    _check_format(fmt)
    start, end = _window(since, until)
    with _open(_settings(), read_only=True) as store:
        found = flaps_mod.flaps(store, utc_naive(start), utc_naive(end))
        names = store.node_names()
    rows = [flaps_mod.as_dict(f, names, utc_naive(end)) for f in found]
    _show(views.flaps(rows, fmt, start, end))


@app.command()
@no_collector
def suspects(
    since: SinceOpt = "24h",
    until: UntilOpt = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="show the best N")] = None,
    fmt: FormatOpt = "table",
) -> None:
    """Which cables, transceivers, switch ports, switches and hosts to act on, best first: each
    with both ends, a score, the evidence (flaps, downtime, failed jobs, GPU-hours, NCCL error
    pairs, error counters) and what to do.

    Example:

    \b
        auditor suspects --since 24h --limit 10
        auditor suspects --since 7d --until 2026-11-30T06:00:00Z --format json
    """
    from auditor.analyse.coverage import blind_spots
    from auditor.analyse.optics.outputs import age_json
    from auditor.analyse.pipeline import RankSettings, rank_window
    from auditor.report import views
    from auditor.store import utc_naive

    _check_format(fmt)
    if limit is not None and limit < 1:
        raise AuditorError("--limit must be at least 1")
    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        ranking = rank_window(store, utc_naive(start), utc_naive(end),
                              RankSettings.from_settings(settings))
        coverage = blind_spots(store, ranking.evidence)
    data = ranking.as_json(limit) | {"coverage": coverage.as_json()}
    data |= age_json(ranking.evidence.watch)  # issue #25: how old the optics watch list is
    _show(views.suspects(data, coverage.notes, fmt, coverage.sources_note))


@app.command("watch-list")
def watch_list_cmd(since: SinceOpt = "30d", until: UntilOpt = None,
                   fmt: FormatOpt = "table",
                   refresh: Annotated[bool, typer.Option(
                       "--refresh", help="compute the list now and store it as the "
                       "precomputation the commands read (what the nightly run does)")] = False,
                   ) -> None:
    """Transceivers whose diagnostics (temperature, Vcc, per-lane Tx bias, Tx and Rx power)
    trend toward failure, strongest first: each module and lane with the trend that says so,
    the estimated days to its own warning or alarm threshold, and a strength (0-1). `--since`
    is the history the trends are fitted on. Links whose trends are strong also show up in
    `suspects` with verdict `transceiver`. The list is read from the nightly run's
    precomputation while that is this window's (the same readings and settings), else computed
    now; the output says when it was computed.

    Example:

    \b
        auditor watch-list --since 30d
        auditor watch-list --until 2026-11-30T06:00:00Z --format json
        auditor watch-list --refresh
    """
    from auditor.analyse.optics.outputs import as_json
    from auditor.analyse.watchlist import current
    from auditor.analyse.watchlist import refresh as store_fresh
    from auditor.report import views
    from auditor.store import utc_naive

    _check_format(fmt)
    settings = _settings()
    start, end = _window(since, until)
    if refresh:
        with _open(settings) as store:
            found = store_fresh(store, utc_naive(start), utc_naive(end), settings.optics)
    else:
        with _open(settings, read_only=True) as store:
            found = current(store, utc_naive(start), utc_naive(end), settings.optics)
    _show(views.watch_list(as_json(found, settings.optics), fmt))


@app.command()
def events(since: SinceOpt = "24h", until: UntilOpt = None, fmt: FormatOpt = "table") -> None:
    """Raw port state changes in a window, oldest first, each with its source file and line.

    Example:

    \b
        auditor events --since 2h --format csv
    """
    from auditor.report import views
    from auditor.store import utc_naive

    _check_format(fmt)
    start, end = _window(since, until)
    with _open(_settings(), read_only=True) as store:
        rows = store.events(utc_naive(start), utc_naive(end))
    columns = [
        "event_at", "state", "device", "port_name", "guid", "port", "origin", "path", "line_no"]
    _show(views.rows(rows, fmt, columns=columns, title="port events"))


@app.command()
def counters(since: SinceOpt = "24h", until: UntilOpt = None, fmt: FormatOpt = "table") -> None:
    """Error counter increases per port between snapshots; resets and saturated (4/8/16-bit)
    counters are flagged, so "at least" is visible.

    Example:

    \b
        auditor counters --since 7d --format json
    """
    from auditor.report import views
    from auditor.store import utc_naive

    _check_format(fmt)
    start, end = _window(since, until)
    with _open(_settings(), read_only=True) as store:
        rows = [r for r in store.counter_deltas(utc_naive(start), utc_naive(end)) if r["delta"]]
        names = store.node_names()
    _show(views.counters(rows, names, fmt))


snmp_app = typer.Typer(no_args_is_help=True, help=(
    "SNMP polling of the configured switches.\n\nExample:\n\n    auditor snmp poll"))
app.add_typer(snmp_app, name="snmp")


@snmp_app.command("poll")
def snmp_poll(
    switch: Annotated[
        list[str] | None, typer.Option("--switch", help="only these switches")
    ] = None,
    fmt: FormatOpt = "table",
) -> None:
    """Poll IF-MIB (and the Mellanox IB table) of every [[switches]] entry with SNMP settings;
    a port that changed since the previous poll becomes a port event. Exit 1 if a switch failed.

    Example:

    \b
        auditor --config auditor.toml snmp poll --switch leaf01
    """
    from auditor.ops.switches import poll_snmp
    from auditor.report import views

    _check_format(fmt)
    settings = _settings()
    with _open(settings) as store:
        outcomes = poll_snmp(store, settings, names=switch or None)
    _show(views.rows([{"device": o.device, "status": o.status, "events": o.events,
                       "detail": o.detail} for o in outcomes], fmt, title="snmp poll"))
    if any(o.status != "ok" for o in outcomes):
        raise typer.Exit(1)


@app.command()
def devices(fmt: FormatOpt = "table") -> None:
    """The last collection status of every switch and host (ok, timeout, auth_failed, ...).

    Example:

    \b
        auditor devices --format json
    """
    from auditor.report import views

    _check_format(fmt)
    with _open(_settings(), read_only=True) as store:
        rows = store.device_status()
    _show(views.rows(rows, fmt, title="devices"))


@app.command()
@no_collector
def report(
    out: Annotated[Path, typer.Option("--out", help="folder for replacements.csv, report.html "
                                      "and report.json")],
    since: SinceOpt = "24h",
    until: UntilOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="suspects in the report")] = 50,
) -> None:
    """Write the technician's replacement list (replacements.csv: both ends with port labels
    and rack locations, parts with serial numbers, action), a self-contained report.html with
    plots, and report.json for automation.

    Example:

    \b
        auditor report --since 24h --out reports/today
    """
    from auditor.analyse.audit import audit
    from auditor.analyse.pipeline import RankSettings
    from auditor.report.build import build_report, write_report
    from auditor.store import utc_naive

    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        result = audit(store, utc_naive(start), utc_naive(end),
                       RankSettings.from_settings(settings), limit=limit)
    for path in write_report(out, build_report(result)):
        _out(str(path))


@app.command()
def replaced(
    link: Annotated[str, typer.Option("--link", help='one end as switch:port ("leaf04:IB1/7"), '
                                      'or both as "a:port<->b:port"')],
    part: Annotated[str, typer.Option("--part", help="cable, transceiver-a, transceiver-b or "
                                      "switch-port")],
    ticket: Annotated[str, typer.Option("--ticket", help="your ticket id")],
    at: AtOpt = None,
) -> None:
    """Record a swap a technician made, so later runs can tell whether the flaps stopped,
    continued on the same port, or followed the old part (by its serial number) elsewhere.

    Example:

    \b
        auditor replaced --link "leaf04:IB1/7" --part cable --ticket T123
    """
    from auditor.analyse.replacements import record

    settings = _settings()
    with _open(settings) as store:
        done = record(store, link, part, ticket, _at(at), aliases=settings.aliases)
    _out(f"recorded {done['part']} swap on {done['link']} (ticket {done['ticket']}; old serial "
         f"number(s): {', '.join(done['old_serials']) or 'unknown'})")


@app.command("replacements")
def replacements_cmd(at: AtOpt = None, fmt: FormatOpt = "table") -> None:
    """Every recorded swap with its status: verified (no flap for the configured clean days),
    watching, escalated (flaps continued on the same port, with what to suspect next) or
    followed_part (the old part flaps in its new place).

    Example:

    \b
        auditor replacements --format json
    """
    from auditor.analyse.replacements import status
    from auditor.report import views

    _check_format(fmt)
    settings = _settings()
    with _open(settings, read_only=True) as store:
        rows = status(store, _at(at), settings.nightly.verify_days)
    _show(views.rows(rows, fmt, title="replacements"))


@app.command("outcomes")
def outcomes_cmd(
    since: Annotated[str | None, typer.Option(
        "--since", help="window back from --until (default [outcomes] since, 90d)")] = None,
    until: UntilOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """What the nightly runs' suspects turned out to be, per rule and per verdict: suspects,
    confirmed (the part named was swapped and the flaps stopped), refuted (the swap did not
    help, another part's did, or nobody acted and the link stayed clean [outcomes]
    clean_days), open, young (first seen less than clean_days ago: not in the rates),
    precision, median days from first evidence to the fix, GPU-hours lost before it and false
    positives per night; then the parts' cohorts (part number, vendor, firmware, lot) whose
    incident rate stands out. CSV holds the rule and verdict rows.

    Example:

    \b
        auditor outcomes --since 90d
        auditor outcomes --format json > outcomes.json
    """
    from auditor.analyse.cohorts import cohorts
    from auditor.analyse.outcomes import judge
    from auditor.report import views
    from auditor.report.build import outcomes_section
    from auditor.store import utc_naive

    _check_format(fmt)
    settings = _settings()
    start, end = _window(since or settings.outcomes.since, until)
    with _open(settings, read_only=True) as store:
        judged = judge(store, utc_naive(start), utc_naive(end), settings.outcomes,
                       settings.nightly.verify_days)
        section = outcomes_section(judged, cohorts(store, judged))
    _show(views.outcomes(section, fmt))


@app.command("nightly")
def nightly_cmd(
    no_sweep: Annotated[bool, typer.Option(
        "--no-sweep", help="only rank and report what is already ingested")] = False,
    until: UntilOpt = None,
    metrics: Annotated[Path | None, typer.Option(
        "--metrics", help="also write node_exporter textfile metrics here")] = None,
) -> None:
    """The cron job: sweep, suspects and report into a dated folder under reports/, prune old
    captures and reports, log to a file. Quiet without a terminal, progress bars with one.

    Exit codes: 0 nothing new to replace; 10 new suspects since the last run; 20 some sources
    failed (the report is still written); 30 both 10 and 20; 2 usage or config error, or the
    report or metrics could not be written (the suspects stay new for the next run); 3 another
    process held the database too long; 75 another run holds the lock (this one exits at
    once). Every failure is also in the log file.

    Example:

    \b
        30 2 * * * cd /srv/auditor && .venv/bin/auditor --config auditor.toml nightly
    """
    from auditor.ops.nightly import nightly_logged

    code, said = nightly_logged(_settings(), sys.stdout.isatty(), no_sweep, until, metrics)
    if said:
        _out(said)
    raise typer.Exit(code)


# The commands of the other cli modules register themselves on `app` when imported.
from auditor.cli import fleet as _fleet  # noqa: E402, F401
from auditor.cli import generate as _generate  # noqa: E402, F401


def _app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command the line names: typer turns every registered function
    into a click command on each run, 12 ms for 21 commands, of which one is used (issue #13).
    Anything else (no command, a name we do not have, --help or --version first) gets the
    whole app, so its listings and errors are typer's own."""
    import copy

    from typer.main import get_command_name

    name = named_command(argv)
    commands = [c for c in app.registered_commands if name is not None and name == (
        c.name or get_command_name(c.callback.__name__ if c.callback else ""))]
    groups = [g for g in app.registered_groups if name is not None and g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def main() -> None:
    tune_collector()
    try:
        _app_for(sys.argv[1:])()
    except AuditorError as exc:  # raised outside a command (the commands' are handled above)
        for line in exc.messages():
            typer.echo(inert(f"error: {line}", None), err=True)
        sys.exit(exc.exit_code)
