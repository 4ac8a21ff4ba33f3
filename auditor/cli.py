"""The `auditor` command line: a thin typer layer over the library. No domain logic here."""

from __future__ import annotations

import functools
import gc
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from typer.core import TyperGroup

from auditor import __version__
from auditor.errors import AuditorError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from typer import _click

    from auditor import config as config_mod
    from auditor.store import Store

# `auditor --help` and `--version` import only typer and this module (issue #13: 0.28-0.37 s
# before, most of it networkx, duckdb, rich tables and pydantic pulled in by module-level
# imports). Every command imports what it uses; tests/test_imports.py keeps it that way.
FORMATS = ("table", "json", "csv")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def inert(text: str, limit: int | None) -> str:
    from auditor.safe_text import inert as _inert

    return _inert(text, limit)


def render_rows(rows: Any, fmt: str, **kwargs: Any) -> str:
    from auditor.report.tables import render_rows as _render

    return _render(rows, fmt, **kwargs)


def to_table(rows: Any, *args: Any, **kwargs: Any) -> str:
    from auditor.report.tables import to_table as _to_table

    return _to_table(rows, *args, **kwargs)


def to_json(data: Any) -> str:
    from auditor.report.tables import to_json as _to_json

    return _to_json(data)


def _fail(exc: AuditorError) -> NoReturn:
    """One line on stderr per message (never a traceback), and the error's exit code."""
    for line in exc.messages():
        typer.echo(inert(f"error: {line}", None), err=True)
    raise typer.Exit(exc.exit_code)


def _no_collector(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """For a command that reads a window, ranks it and exits: it makes its objects once and
    keeps them to the end, none of them in reference cycles (the same peak memory with the
    collector off, `suspects --since 30d` 345 MB). Collecting them as they were made was
    10-15 ms of `suspects --since 24h` (issue #13). On again after it (tests run commands
    in one process)."""

    @functools.wraps(command)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        was = gc.isenabled()
        gc.disable()
        try:
            return command(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return run


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


class _State:
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
    files: Annotated[list[Path], typer.Argument(help="capture or log files", show_default=False)],
    kind: Annotated[str, typer.Option("--kind", "-k", help="auto, ibnetdiscover, iblinkinfo, "
                                      "perfquery, ibqueryerrors, syslog, ufm-events, opensm, "
                                      "dmesg, sacct, jobcomp, jobs-jsonl, joblog, hosts, "
                                      "maintenance, inventory, cabling, slurm-events "
                                      "(sacctmgr show event -P), slurmctld (slurmctld.log), "
                                      "boots (journalctl --list-boots or last -x; --host), "
                                      "ethtool-module "
                                      "(ethtool -m), mlxlink-module (mlxlink -m) or onyx-optics "
                                      "(a switch's per-port transceiver diagnostics)")] = "auto",
    at: AtOpt = None,
    year: Annotated[int | None, typer.Option(
        "--year", help="year of log stamps that have none (default: from the file's date)")] = None,
    tz: Annotated[str | None, typer.Option(
        "--tz", help="zone of log stamps that have none (default UTC, or [logs] tz)")] = None,
    host: Annotated[str | None, typer.Option(
        "--host", help="dmesg, boots and transceiver diagnostics: the host (or switch) it "
        "came from")
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

    `--at` is when a topology or counter snapshot was taken; files ingested together share it.
    For transceiver diagnostics it is when the module was read (default: the file's time).
    Log lines that cannot be used (NUL bytes included) are counted per reason (see
    `auditor sources`).

    Example:

    \b
        auditor ingest --at 2026-11-30T06:00:00Z ibnetdiscover.txt iblinkinfo.txt
        auditor ingest --kind syslog /var/log/ib-switches/syslog.1.gz /var/log/ib-switches/syslog
        auditor ingest --kind sacct sacct-24h.txt
        auditor ingest --kind joblog --job 4242 rank0.log
        auditor ingest --kind ethtool-module --host gpu-node-07 --port ib0 ethtool-m.txt
    """
    from auditor.ingest.captures import ingest_files, load_node_names
    from auditor.ingest.plan import plan_ingest

    _check_format(fmt)
    settings = _settings()
    names = load_node_names(settings.node_name_map)
    moment = _at(at) if at else None
    plan = plan_ingest(files, kind)
    opts = _log_options(settings, year, tz, host)
    # Each ingester imported only when it has files (the log parsers cost `ingest --kind
    # sacct` 0.03 s, issue #13).
    with _open(settings) as store, store.transaction():
        results = ingest_files(store, plan.captures, kind=plan.capture_kind, at=moment,
                               node_names=names, aliases=settings.aliases) \
            if plan.captures else []
        if plan.logs:
            from auditor.ingest.logs import ingest_logs

            results += ingest_logs(store, plan.logs, plan.log_kind, opts)
        if plan.job_files:
            from auditor.ingest.jobs import JobOptions, ingest_job_files

            results += ingest_job_files(store, plan.job_files, plan.job_kind,
                                        JobOptions(tz=opts.tz, job=job, year=opts.year,
                                                   host=host))
        if plan.optics:
            from auditor.ingest.optics import OpticsOptions, ingest_optics_files

            results += ingest_optics_files(store, plan.optics, plan.optics_kind, OpticsOptions(
                host=host, port=port, at=moment, aliases=settings.aliases))
    rows = [{"file": r.path, "kind": r.kind, "status": r.status, "records": r.records,
             "warnings": "; ".join(r.warnings)} for r in results]
    _out(render_rows(rows, fmt, title="ingest"))
    for r in results:
        for w in r.warnings:
            typer.echo(inert(f"warning: {r.path}: {w}", None), err=True)


def _log_options(settings: config_mod.Settings, year: int | None, tz: str | None,
                 host: str | None) -> Any:
    from auditor.ingest.common import LogOptions

    return LogOptions.from_settings(settings, year=year, tz=tz, host=host)


@app.command()
def topology(at: AtOpt = None, fmt: FormatOpt = "table") -> None:
    """The fabric at a time: switches, HCAs, links, down ports, degraded links, changes.

    Example:

    \b
        auditor topology --at 2026-11-30T06:00:00Z --format json
    """
    from auditor.analyse import topology as topology_mod

    _check_format(fmt)

    with _open(_settings(), read_only=True) as store:
        data = topology_mod.topology(store, _at(at))
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


def _name(end: dict[str, Any]) -> str:
    # A name from the fabric, shown short enough that the port after it stays visible.
    from auditor.safe_text import NAME_MAX

    return inert(end["name"], NAME_MAX)


def _pair(ends: list[dict[str, Any]]) -> dict[str, Any]:
    return {"end A": f"{_name(ends[0])} port {ends[0]['port']}",
            "end B": f"{_name(ends[1])} port {ends[1]['port']}"}


def _label(ends: list[dict[str, Any]]) -> str:
    return " <-> ".join(f"{_name(e)}[{e['port']}]" for e in ends)


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

    _check_format(fmt)

    with _open(_settings(), read_only=True) as store:
        rows = topology_mod.links(store, _at(at), degraded_only=degraded, down_only=down)
    columns = None if fmt != "table" else [
        "a_name", "a_port", "b_name", "b_port", "state", "width", "speed", "note"]
    _out(render_rows(rows, fmt, columns=columns, title="links"))


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

    _check_format(fmt)
    settings = _settings()
    names = load_node_names(settings.node_name_map)
    runner = open_runner(settings.sweep)  # unreachable: its commands fail, the rest runs
    try:
        with _open(settings) as store:
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
    """What was ingested, when, from where, and how many lines were not understood or not
    mapped to a port, per reason with an example line.

    Example:

    \b
        auditor sources --format json
    """

    _check_format(fmt)
    with _open(_settings(), read_only=True) as store:
        # copies: each gets its issues below (a store row has only the query's columns)
        rows: list[dict[str, Any]] = [dict(r) for r in store.sources()]
        issues = store.issues()
    by_source: dict[int, list[dict[str, Any]]] = {}
    for i in issues:
        by_source.setdefault(i["source_id"], []).append(
            {k: i[k] for k in ("reason", "lines", "first_line_no", "example")})
    for r in rows:
        r["issues"] = by_source.get(r["source_id"], [])
    if fmt != "table":
        _out(render_rows(rows, fmt))
        return
    _out(render_rows(rows, fmt, columns=[
        "source_id", "kind", "path", "origin", "observed_at", "lines_total", "lines_unparsed",
        "records"], title="sources"))
    if issues:
        _out(to_table(issues, ["source_id", "path", "reason", "lines", "first_line_no",
                               "example"], title="lines not used, per reason"))


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
    from auditor.store import utc_naive

    _check_format(fmt)
    start, end = _window(since, until)
    with _open(_settings(), read_only=True) as store:
        found = flaps_mod.flaps(store, utc_naive(start), utc_naive(end))
        names = store.node_names()
    rows = [flaps_mod.as_dict(f, names, utc_naive(end)) for f in found]
    if fmt == "json":
        _out(to_json(rows))
        return
    flat = [{
        "end A": _end_label(r["ends"][0]),
        "end B": _end_label(r["ends"][1]) if len(r["ends"]) > 1 else "",
        "down at": r["down_at"], "up at": r["up_at"] or ("still down" if r["still_down"] else ""),
        "duration s": r["duration_s"], "sources": ",".join(r["sources"]),
    } for r in rows]
    _out(render_rows(flat, fmt, title=f"flaps {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M} UTC"))


def _end_label(end: dict[str, Any]) -> str:
    return f"{_name(end)}[{end['port']}]"


@app.command()
@_no_collector
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
    from auditor.analyse.correlate import gather
    from auditor.analyse.coverage import blind_spots
    from auditor.analyse.rank import as_json, rank
    from auditor.store import utc_naive

    _check_format(fmt)
    if limit is not None and limit < 1:
        raise AuditorError("--limit must be at least 1")
    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        cfg = settings.ranking
        evidence = gather(store, utc_naive(start), utc_naive(end), cfg, aliases=settings.aliases)
        ranked = rank(evidence, cfg)
        if settings.outcomes.learned_weights:
            from auditor.analyse.outcomes import reweigh

            ranked = reweigh(store, ranked, utc_naive(end), settings.outcomes,
                             settings.nightly.verify_days)
        coverage = blind_spots(store, evidence)
    data = as_json(evidence, ranked, limit) | {"coverage": coverage.as_json()}
    if fmt == "json":
        _out(to_json(data))
        return
    rows = [{
        "rank": s["rank"], "score": s["score"], "component": s["component"],
        "end A": _label_end(s["ends"][0]),
        "end B": _label_end(s["ends"][1]) if len(s["ends"]) > 1 else "",
        "flaps": s["flaps"], "jobs": s["jobs_failed"], "GPU-h": s["gpu_hours_lost"],
        "evidence": s["evidence"][0] if s["evidence"] else "", "action": s["action"],
    } for s in data["suspects"]]
    if fmt == "csv":
        _out(render_rows(rows, "csv"))
        return
    jobs = data["jobs"]
    _out(f"window {data['window']['since']} .. {data['window']['until']}: "
         f"{jobs['failed']} failed job(s), {jobs['network']} from the network, "
         f"{jobs['other_causes']} from other causes, {jobs['unexplained']} unexplained")
    _out(render_rows(rows, "table", title="suspects, best first"))
    for note in coverage.notes:
        _out(inert(f"could not see: {note}", None))


def _label_end(end: dict[str, Any]) -> str:
    return f"{_name(end)} {end['label']}".strip()


WATCH_COLUMNS = ["rank", "device", "port_name", "serial_number", "part_number", "lane", "rule",
                 "trend", "days_to_threshold", "threshold", "strength", "strong", "peer"]


@app.command("watch-list")
def watch_list_cmd(since: SinceOpt = "30d", until: UntilOpt = None,
                   fmt: FormatOpt = "table") -> None:
    """Transceivers whose diagnostics (temperature, Vcc, per-lane Tx bias, Tx and Rx power)
    trend toward failure, strongest first: each module and lane with the trend that says so,
    the estimated days to its own warning or alarm threshold, and a strength (0-1). `--since`
    is the history the trends are fitted on. Links whose trends are strong also show up in
    `suspects` with verdict `transceiver`.

    Example:

    \b
        auditor watch-list --since 30d
        auditor watch-list --until 2026-11-30T06:00:00Z --format json
    """
    from auditor.analyse.optics import as_json, watch_list
    from auditor.store import utc_naive

    _check_format(fmt)
    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        found = watch_list(store, utc_naive(start), utc_naive(end), settings.optics)
    data = as_json(found, settings.optics)
    if fmt == "json":
        _out(to_json(data))
        return
    rows = [{k: w[k] for k in WATCH_COLUMNS} for w in data["watch"]]
    if fmt == "csv":
        _out(render_rows(rows, "csv", columns=WATCH_COLUMNS))
        return
    _out(f"window {data['window']['since']} .. {data['window']['until']}: "
         f"{data['modules']} module(s) read, {data['watched']} watched")
    _out(render_rows(rows, "table", columns=[c for c in WATCH_COLUMNS if c != "peer"],
                     title="optics watch list, strongest first"))


@app.command()
def events(since: SinceOpt = "24h", until: UntilOpt = None, fmt: FormatOpt = "table") -> None:
    """Raw port state changes in a window, oldest first, each with its source file and line.

    Example:

    \b
        auditor events --since 2h --format csv
    """
    from auditor.store import utc_naive

    _check_format(fmt)
    start, end = _window(since, until)
    with _open(_settings(), read_only=True) as store:
        rows = store.events(utc_naive(start), utc_naive(end))
    columns = None if fmt != "table" else [
        "event_at", "state", "device", "port_name", "guid", "port", "origin", "path", "line_no"]
    _out(render_rows(rows, fmt, columns=columns, title="port events"))


@app.command()
def counters(since: SinceOpt = "24h", until: UntilOpt = None, fmt: FormatOpt = "table") -> None:
    """Error counter increases per port between snapshots; resets and saturated (4/8/16-bit)
    counters are flagged, so "at least" is visible.

    Example:

    \b
        auditor counters --since 7d --format json
    """
    from auditor.store import utc_naive

    _check_format(fmt)
    start, end = _window(since, until)
    with _open(_settings(), read_only=True) as store:
        rows: list[dict[str, Any]] = [dict(r) for r in store.counter_deltas(
            utc_naive(start), utc_naive(end)) if r["delta"]]  # copies: each gets its name
        names = store.node_names()
    for r in rows:
        r["name"] = names.get(r["guid"], (r["guid"], ""))[0]
    columns = None if fmt != "table" else [
        "name", "port", "counter", "prev_at", "seen_at", "delta", "reset", "saturated"]
    _out(render_rows(rows, fmt, columns=columns, title="counter increases"))


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

    _check_format(fmt)
    settings = _settings()
    with _open(settings) as store:
        outcomes = poll_snmp(store, settings, names=switch or None)
    rows = [{"device": o.device, "status": o.status, "events": o.events, "detail": o.detail}
            for o in outcomes]
    _out(render_rows(rows, fmt, title="snmp poll"))
    if any(o.status != "ok" for o in outcomes):
        raise typer.Exit(1)


@app.command()
def devices(fmt: FormatOpt = "table") -> None:
    """The last collection status of every switch and host (ok, timeout, auth_failed, ...).

    Example:

    \b
        auditor devices --format json
    """

    _check_format(fmt)
    with _open(_settings(), read_only=True) as store:
        rows = store.device_status()
    _out(render_rows(rows, fmt, title="devices"))


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="demo database to (re)create")] = Path(
        "auditor-demo.duckdb"),
    captures: Annotated[bool, typer.Option(
        "--captures", help="the fabric-health demo from real ibsim captures instead")] = False,
    seed: Annotated[int, typer.Option("--seed", help="scenario seed")] = 7,
) -> None:
    """Run the main job on a bundled demo: a generated fat tree with bad cables, a switch
    reboot, maintenance and failed jobs, ingested and ranked (`--captures`: the fabric-health
    demo built from real infiniband-diags captures of an ibsim fabric).

    Example:

    \b
        auditor demo
        auditor --db auditor-demo.duckdb suspects --since 24h
    """
    from auditor.demo import build_demo, build_scenario_demo

    if captures:
        _out(build_demo(out))
        return
    workdir = out.with_name(out.stem + "-scenario")
    _out(build_scenario_demo(out, workdir, seed=seed))


@app.command()
@_no_collector
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
    from auditor.report.build import build_report, write_report
    from auditor.store import utc_naive

    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        result = audit(store, utc_naive(start), utc_naive(end), aliases=settings.aliases,
                       verify_days=settings.nightly.verify_days, limit=limit,
                       cfg=settings.ranking, outcomes=settings.outcomes)
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
    serials = ", ".join(done["old_serials"]) or "unknown"
    _out(f"recorded {done['part']} swap on {done['link']} (ticket {done['ticket']}; old serial "
         f"number(s): {serials})")


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

    _check_format(fmt)
    settings = _settings()
    with _open(settings, read_only=True) as store:
        rows = status(store, _at(at), settings.nightly.verify_days)
    _out(render_rows(rows, fmt, title="replacements"))


OUTCOME_COLUMNS = ["suspects", "confirmed", "refuted", "open", "young", "precision",
                   "median_days_to_fix", "gpu_hours_before_fix", "false_positives_per_night"]
COHORT_COLUMNS = ["field", "value", "part_number", "parts", "with_incident", "incidents",
                  "mtbi_days", "share", "rest_share", "p_value", "explained_by"]


def _cells(row: Mapping[str, object], columns: list[str]) -> dict[str, object]:
    return {c: row[c] for c in columns}


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
    from auditor.report.build import outcomes_section
    from auditor.store import utc_naive

    _check_format(fmt)
    settings = _settings()
    start, end = _window(since or settings.outcomes.since, until)
    with _open(settings, read_only=True) as store:
        judged = judge(store, utc_naive(start), utc_naive(end), settings.outcomes,
                       settings.nightly.verify_days)
        section = outcomes_section(judged, cohorts(store, judged))
    if fmt == "json":
        _out(to_json(section))
        return
    rows = [{"by": by, **_cells(g, ["name", *OUTCOME_COLUMNS])}
            for by, groups in (("rule", section["rules"]), ("verdict", section["verdicts"]),
                               ("all", [section["overall"]]))
            for g in groups]
    if fmt == "csv":
        _out(render_rows(rows, "csv", columns=["by", "name", *OUTCOME_COLUMNS]))
        return
    _out(f"window {section['window']['since']} .. {section['window']['until']}: "
         f"{section['nights']} nightly run(s), {section['overall']['suspects']} suspect(s) "
         f"judged by what followed ({section['unjudged']} whole-switch or host event(s) not "
         f"judged); refuted also when a link stays clean {section['clean_days']:g} days")
    _out(render_rows([r for r in rows if r["by"] != "verdict"], "table",
                     columns=["name", *OUTCOME_COLUMNS], title="per rule"))
    _out(render_rows([r for r in rows if r["by"] == "verdict"], "table",
                     columns=["name", *OUTCOME_COLUMNS], title="per verdict"))
    if section["learned_weights"] is not None:
        _out(render_rows(section["learned_weights"], "table", title="learned weights"))
    co = section["cohorts"]
    _out(f"cohorts: {co['parts']} part(s) watched {co['days']:g} days, {co['with_incident']} "
         f"with an incident, fleet MTBI {co['mtbi_days'] if co['mtbi_days'] is not None else '-'}"
         " part-days")
    for finding in co["findings"]:
        _out(f"  finding: {finding}")
    shown = [g for g in co["groups"] if g["flagged"]] or co["groups"][:10]
    _out(render_rows([_cells(g, COHORT_COLUMNS) for g in shown], "table",
                     columns=COHORT_COLUMNS,
                     title="flagged cohorts" if any(g["flagged"] for g in shown)
                     else "cohorts (none flagged)"))


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
    import logging

    from auditor.ops.nightly import run_nightly
    from auditor.ops.runlog import secret_values, setup_logging, teardown_logging

    settings = _settings()
    interactive = sys.stdout.isatty()
    setup_logging(settings.log_file, interactive, secret_values(settings))
    log = logging.getLogger("auditor.nightly")
    try:
        end = None
        if until:
            from auditor.timeparse import parse_instant

            end = parse_instant(until, "--until")
        result = run_nightly(settings, interactive=interactive, do_sweep=not no_sweep,
                             until=end, metrics_file=metrics)
    except AuditorError as exc:
        # Cron's only record is the log file: the failure goes there, and (through the log's
        # console handler) once on stderr.
        for line in exc.messages():
            log.error("%s", line)
        raise typer.Exit(exc.exit_code) from None
    except Exception:
        log.exception("nightly run crashed")
        raise typer.Exit(1) from None
    finally:
        teardown_logging()
    if interactive:
        _out(f"report: {result.folder}  ({len(result.new)} new suspect(s), "
             f"{len(result.failed_sources)} failed source(s))")
    raise typer.Exit(result.exit_code)


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
    from auditor.ops.export import check_fabric, export
    from auditor.store import utc_naive

    _check_format(fmt)
    settings = _settings()
    name = check_fabric(fabric or settings.db.name.removesuffix(".duckdb"))
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        done = export(store, out, name, utc_naive(start), utc_naive(end), settings.ranking,
                      settings.aliases, settings.outcomes, takeover)
    for warning in done.warnings:
        typer.echo(inert(f"warning: {warning}", None), err=True)
    rows = [{"fabric": done.fabric, "first_day": done.days[0], "last_day": done.days[-1],
             "days": len(done.days), "files": done.files, "out": str(out)}]
    _out(render_rows(rows, fmt, title="export"))


def _port_label(name: str | None, port: int | None) -> str:
    return f"{name}[{port}]" if port is not None else str(name)


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

    _check_format(fmt)
    start, end = _window(since, until)
    data = fleet(exports, start, end)
    for warning in data["warnings"]:
        typer.echo(inert(f"warning: fleet: {warning}", None), err=True)
    if fmt == "json":
        _out(to_json(data))
        return
    rows = [{
        "fabric": r["fabric"], "day": r["day"], "rank": r["rank"], "component": r["component"],
        "score": r["score"], "end A": _port_label(r["a_name"], r["a_port"]),
        "end B": _port_label(r["b_name"], r["b_port"]) if r["b_guid"] else "",
        "flaps": r["flaps"], "jobs": r["jobs_failed"], "GPU-h": r["gpu_hours_lost"],
        "action": r["action"],
    } for r in data["suspects"]]
    if fmt == "csv":
        _out(render_rows(rows, "csv"))
        return
    _out(render_rows(data["fabrics"], "table", title=f"fabrics {data['days'][0]} .. "
                     f"{data['days'][1]}"))
    _out(render_rows(rows, "table", title="suspects, per fabric and day, best first"))


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
    from auditor.report.build import build_report
    from auditor.report.prometheus import render, write_textfile
    from auditor.store import utc_naive

    settings = _settings()
    start, end = _window(since, until)
    with _open(settings, read_only=True) as store:
        result = audit(store, utc_naive(start), utc_naive(end), aliases=settings.aliases,
                       verify_days=settings.nightly.verify_days, cfg=settings.ranking)
        sources = store.sources()
    write_textfile(textfile, render(build_report(result), sources))
    _out(str(textfile))


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="folder to write the scenario into")],
    seed: Annotated[int, typer.Option("--seed")] = 1,
    spines: Annotated[int, typer.Option("--spines")] = 8,
    leaves: Annotated[int, typer.Option("--leaves")] = 16,
    hosts: Annotated[int, typer.Option("--hosts", help="hosts per leaf")] = 8,
    days: Annotated[float, typer.Option("--days")] = 1.0,
    realistic: Annotated[bool, typer.Option(
        "--realistic", help="job evidence as large clusters write it (the REALISTIC preset: "
        "8 rails, mixed NCCL releases and timeouts, 30 % at NCCL_DEBUG=WARN, no NCCL stamps, "
        "launcher prefixes, sacct steps, one lost switch log); the options below still win")
    ] = False,
    rails: Annotated[int | None, typer.Option(
        "--rails", help="HCAs per host, rail-optimised (leaves must be a multiple)")] = None,
    nccl_versions: Annotated[str | None, typer.Option(
        "--nccl-versions", help="NCCL releases jobs draw from, comma-separated "
        "(default 2.28.7)")] = None,
    ib_timeouts: Annotated[str | None, typer.Option(
        "--ib-timeouts", help="NCCL_IB_TIMEOUT values jobs draw from, comma-separated; "
        "`default` = the release's own, not set (default 18)")] = None,
    info_share: Annotated[float | None, typer.Option(
        "--info-share", help="share of jobs at NCCL_DEBUG=INFO, the rest at WARN "
        "(default 1)")] = None,
    nccl_stamps: Annotated[bool | None, typer.Option(
        "--nccl-stamps/--no-nccl-stamps",
        help="NCCL >= 2.26 stamps its WARN lines (default yes)")] = None,
    channel_lines: Annotated[bool | None, typer.Option(
        "--channel-lines/--no-channel-lines",
        help="INFO logs list every GPU's Using and Channel lines (default: NCCL < 2.22 "
        "only)")] = None,
    launcher_prefixes: Annotated[bool | None, typer.Option(
        "--launcher-prefixes/--no-launcher-prefixes",
        help="each job log gets one launcher's prefixes: srun -l, torchrun --tee, ts, CRI "
        "(default no)")] = None,
    sacct_steps: Annotated[bool | None, typer.Option(
        "--sacct-steps/--no-sacct-steps",
        help="sacct without -X: step lines, a few array tasks, one het job (default no)")
    ] = None,
    lost_switch_logs: Annotated[int | None, typer.Option(
        "--lost-switch-logs", help="switches left out of logs/switches.log (default 0)")
    ] = None,
    optics: Annotated[bool, typer.Option(
        "--optics", help="a daily `ethtool -m` of every host port (optics/), and transceivers "
        "that age before they flap (needs --days 8 or more)")] = False,
    ageing_optics: Annotated[int | None, typer.Option(
        "--ageing-optics", help="how many transceivers age (with --optics; default one per "
        "32 host links, at least 3)")] = None,
    outcomes: Annotated[bool, typer.Option(
        "--outcomes", help="weeks of faults with the swaps technicians made (some right, "
        "some wrong), cable lots in cabling.csv and one bad lot; the swaps in "
        "replacements.csv, the truth in truth.json's `outcomes` (needs --days 14 or more)")
    ] = False,
    harmless_flaps: Annotated[int | None, typer.Option(
        "--harmless-flaps", help="sound links (leaf uplinks and host cables in turn) whose long "
        "flaps adaptive routing or NCCL port failover absorb: no job dies of them; listed as "
        "harmless_links in truth.json (default 0)")] = None,
    reboots: Annotated[int | None, typer.Option(
        "--reboots", help="hosts that crash and reboot undeclared while they run a job: every "
        "rail drops, the job ends NODE_FAIL (on multi-rail hosts some FAILED), its peers' NCCL "
        "errors name the host; listed as host_reboots in truth.json (default 0)")] = None,
    host_records: Annotated[str | None, typer.Option(
        "--host-records", help="what the site keeps of its hosts: none (only sacct's "
        "NODE_FAIL), slurm (slurm/events.txt: sacctmgr show event, slurm/slurmctld.log), boots "
        "(boots/<host>.txt: journalctl --list-boots) or both (default: both with --reboots, "
        "else none)")] = None,
) -> None:
    """Write a seeded fat-tree scenario with injected faults in the real formats
    (ibnetdiscover, Onyx syslog, ibqueryerrors snapshots, sacct, NCCL logs, hosts,
    maintenance; Slurm node events, slurmctld.log and boot records with --reboots) and its
    ground truth (truth.json), for tests, demos and evaluation.

    Example:

    \b
        auditor simulate --out /tmp/scenario --seed 3 --leaves 32 --hosts 16
        auditor simulate --out /tmp/real --realistic --leaves 16 --hosts 16 --info-share 0.5
        auditor simulate --out /tmp/ageing --optics --days 21
        auditor simulate --out /tmp/weeks --outcomes --days 28 --hosts 16
        auditor simulate --out /tmp/crash --realistic --reboots 3 --host-records slurm
    """
    from auditor.simulate.scenario import REALISTIC, ScenarioOptions, generate

    options: ScenarioOptions = {**REALISTIC} if realistic else {}
    try:
        if rails is not None:
            options["hcas_per_host"] = rails
        if nccl_versions is not None:
            options["nccl_versions"] = tuple(v.strip() for v in nccl_versions.split(","))
        if ib_timeouts is not None:
            words = [v.strip() for v in ib_timeouts.split(",")]
            if not all(v.lower() in ("default", "none") or v.isdigit() for v in words):
                raise ValueError(f"--ib-timeouts {ib_timeouts!r}: numbers or `default`")
            options["ib_timeouts"] = tuple(
                None if v.lower() in ("default", "none") else int(v) for v in words)
        given = {"info_share": info_share, "nccl_stamps": nccl_stamps,
                 "channel_lines": channel_lines, "launcher_prefixes": launcher_prefixes,
                 "sacct_steps": sacct_steps, "lost_switch_logs": lost_switch_logs,
                 "optics": optics or None, "ageing_optics": ageing_optics,
                 "harmless_flaps": harmless_flaps, "host_reboots": reboots,
                 "host_records": host_records}
        options.update({k: v for k, v in given.items() if v is not None})  # type: ignore[typeddict-item]
        if outcomes:
            options["outcomes"] = True
        truth = generate(out, seed=seed, spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                         days=days, **options)
    except ValueError as exc:
        raise AuditorError(f"simulate: {exc}") from None
    ageing = f", {len(truth.ageing_optics)} ageing transceiver(s)" if optics else ""
    harmless = (f", {len(truth.harmless_links)} harmless link(s)" if truth.harmless_links
                else "")
    crashed = (f", {len(truth.host_reboots)} host reboot(s) killing "
               f"{len(truth.host_failed_jobs)} job(s) (host records: {truth.host_records})"
               if truth.host_reboots else "")
    _out(f"scenario written to {out}: {len(truth.bad_cables)} bad cable(s){harmless}, "
         f"{len(truth.switch_reboots)} switch reboot(s){crashed}, {truth.jobs_total} jobs"
         f"{ageing}; ground truth in {out / 'truth.json'}")
    if outcomes:
        import json

        campaign = json.loads((out / "truth.json").read_text(encoding="utf-8"))["outcomes"]
        swaps = [s for f in campaign["faults"] for s in f["swaps"]]
        _out(f"outcomes campaign: {len(campaign['faults'])} faulty link(s) "
             f"({campaign['bad_lot_faults']} in bad lot {campaign['bad_lot']}), "
             f"{len(campaign['noise'])} one-off flap(s), {len(swaps)} swap(s) "
             f"({sum(not s['right'] for s in swaps)} of the wrong part) in "
             f"{out / 'replacements.csv'}")


# main_options' options that take a value: skipped when looking for the command's name.
_GLOBAL_WITH_VALUE = ("--db", "--config", "-c")


def _named_command(argv: list[str]) -> str | None:
    """The command a command line names after the global options, if it is plain to see."""
    i = 0
    while i < len(argv):
        if argv[i] in _GLOBAL_WITH_VALUE:
            i += 2
        elif argv[i].startswith(("--db=", "--config=")):
            i += 1
        else:
            return None if argv[i].startswith("-") else argv[i]
    return None


def _app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command the line names: typer turns every registered function
    into a click command on each run, 12 ms for 21 commands, of which one is used (issue #13).
    Anything else (no command, a name we do not have, --help or --version first) gets the
    whole app, so its listings and errors are typer's own."""
    import copy

    from typer.main import get_command_name

    name = _named_command(argv)
    commands = [c for c in app.registered_commands if name is not None and name == (
        c.name or get_command_name(c.callback.__name__ if c.callback else ""))]
    groups = [g for g in app.registered_groups if name is not None and g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def main() -> None:
    # A command makes hundreds of thousands of small objects (a 4,096-host fabric, its jobs
    # and events) and almost no reference cycles, yet CPython's default collector thresholds
    # had `suspects --since 24h` spend 0.2 s of its 0.95 s collecting. What the imports made
    # is moved out of the collector's sight, and it runs less often (measured: 24h 0.93 ->
    # 0.73 s, 30d 2.8 -> 2.15 s, the same peak memory).
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        _app_for(sys.argv[1:])()
    except AuditorError as exc:  # raised outside a command (the commands' are handled above)
        for line in exc.messages():
            typer.echo(inert(f"error: {line}", None), err=True)
        sys.exit(exc.exit_code)
