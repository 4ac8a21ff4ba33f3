"""The nightly run: sweep, suspects, report into a dated folder, retention, metrics.

Made for cron: one run at a time (a lock), a log file, quiet without a terminal, and an exit
code that says what happened (the table is in auditor.errors).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.analyse.audit import audit, judge_again
from auditor.analyse.outcomes import remember
from auditor.analyse.pipeline import RankSettings
from auditor.analyse.watchlist import refresh as refresh_watch_list
from auditor.collect.runner import UnreachableRunner, open_runner
from auditor.config import Settings
from auditor.errors import AuditorError, exit_code
from auditor.ingest.captures import load_node_names
from auditor.ops import retention
from auditor.ops.lock import RunLock
from auditor.ops.progress import progress
from auditor.ops.sweep import sweep
from auditor.report.build import build_report, write_report
from auditor.report.prometheus import render as render_metrics
from auditor.report.prometheus import write_textfile
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_span

log = logging.getLogger("auditor.nightly")
# In a report folder until the run has delivered everything (report, metrics).
UNDELIVERED = ".undelivered"


@dataclass(slots=True)
class NightlyResult:
    folder: Path
    exit_code: int
    new: list[dict[str, Any]] = field(default_factory=list)
    failed_sources: list[str] = field(default_factory=list)
    pruned: list[Path] = field(default_factory=list)


def _previous_report(reports: Path, current: Path) -> dict[str, Any] | None:
    """The newest earlier report that was delivered: a run that failed after writing its
    report (metrics, say) left its folder marked undelivered, and its suspects stay new."""
    import json

    older = [f for f in retention.dated_folders(reports) if f.name < current.name]
    for folder in reversed(older):
        path = folder / "report.json"
        if path.is_file() and not (folder / UNDELIVERED).exists():
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return data
    return None


def run_nightly(settings: Settings, *, interactive: bool, do_sweep: bool = True,
                until: datetime | None = None, metrics_file: Path | None = None) -> NightlyResult:
    now = datetime.now(UTC)
    end = until or now
    start = end - parse_span(settings.nightly.since, "nightly.since")
    busy = settings.busy_timeout_s
    with RunLock.for_db(settings.db) as lock, progress(interactive) as steps:
        log.info("nightly run for %s .. %s into %s", start, end, settings.reports_dir)
        failed: list[str] = []
        if do_sweep:
            with steps.step("sweep: fabric tools, switches, hosts"), \
                    Store(settings.db, busy_timeout_s=busy) as store:
                names = load_node_names(settings.node_name_map)
                # An unreachable management host fails the fabric tools only: switches,
                # hosts and log files do not go through it.
                runner = open_runner(settings.sweep)
                if isinstance(runner, UnreachableRunner):
                    log.error("management host unreachable: %s", runner.error)
                try:
                    result = sweep(store, settings, runner, at=now, node_names=names)
                finally:
                    runner.close()
                for c in result.failed:
                    failed.append(f"{c['command']}: {c['detail']}")
                    log.error("source failed: %s: %s", c["command"], c["detail"])
        # The optics watch list once, for the audit below and every `suspects`, `report` and
        # `watch-list` until the next readings (issue #25: 6-8 s of each at 4,096 modules).
        with steps.step("optics watch list"), Store(settings.db, busy_timeout_s=busy) as store:
            watch = refresh_watch_list(store, utc_naive(end - settings.optics.history),
                                       utc_naive(end), settings.optics)
            log.info("optics watch list: %d module(s), %d watched", watch.modules,
                     len(watch.watches))
        with steps.step("suspects and report"), \
                Store(settings.db, read_only=True, busy_timeout_s=busy) as store:
            audited = audit(store, utc_naive(start), utc_naive(end),
                            RankSettings.from_settings(settings), limit=settings.nightly.limit)
            sources = store.sources()
        # The suspects the report shows are remembered, so that the swaps and flaps that
        # follow can tell which were right (issue #15); the report's outcomes include them.
        with steps.step("remember suspects"), Store(settings.db, busy_timeout_s=busy) as store:
            with store.transaction():
                remember(store, audited, utc_naive(now))
            judge_again(audited, store, settings.outcomes, settings.nightly.verify_days)
        report = build_report(audited)
        folder = retention.dated_folder(settings.reports_dir, now)
        # Undelivered until everything is out (report, metrics): a run that fails before the
        # end leaves the mark, and the next run still counts these suspects as new.
        undelivered = folder / UNDELIVERED
        undelivered.write_text("this run failed before it delivered everything; see the log\n",
                               encoding="utf-8")
        write_report(folder, report)
        new = new_suspects(_previous_report(settings.reports_dir, folder), report)
        log.info("report written to %s: %d suspect(s), %d new", folder,
                 len(report["suspects"]), len(new))
        with steps.step("retention"):
            pruned = retention.prune_captures(settings.captures_dir,
                                            settings.nightly.keep_captures_days, now,
                                            protect=[settings.db, lock.path])
            pruned += retention.prune_reports(settings.reports_dir,
                                            settings.nightly.keep_reports_days, now)
        for path in pruned:
            log.info("removed old %s", path)
        if metrics_file is not None:
            write_textfile(metrics_file, render_metrics(report, sources))
        undelivered.unlink()
    return NightlyResult(folder, exit_code(len(new), bool(failed)), new, failed, pruned)




def _suspect_key(suspect: Mapping[str, Any]) -> tuple[str, frozenset[tuple[str, Any]]]:
    ends = frozenset((str(e.get("name")), e.get("port")) for e in suspect.get("ends", []))
    return str(suspect.get("component")), ends


def new_suspects(previous: Mapping[str, Any] | None,
                 current: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Suspects of `current` (a `rank.as_json` document) that `previous` did not have, in
    `current`'s order. A suspect is its component plus the set of its ends (name, port), so
    rank, score and evidence changing do not make it new; the ends' order does not matter; a
    cable re-judged as a transceiver is new (the action changed). No previous run: all new."""
    seen = {_suspect_key(s) for s in (previous or {}).get("suspects", [])}
    return [s for s in current.get("suspects", []) if _suspect_key(s) not in seen]


def nightly_logged(settings: Settings, interactive: bool, no_sweep: bool, until: str | None,
                   metrics: Path | None) -> tuple[int, str | None]:
    """`auditor nightly` as cron runs it: the run with its log file set up and torn down, every
    failure written to the log (cron's only record; the log's console handler shows it once on
    stderr), and a crash logged with its traceback. The exit code, and the line to print on a
    terminal."""
    from auditor.ops.runlog import secret_values, setup_logging, teardown_logging
    from auditor.timeparse import parse_instant

    setup_logging(settings.log_file, interactive, secret_values(settings))
    log = logging.getLogger("auditor.nightly")
    try:
        end = parse_instant(until, "--until") if until else None
        result = run_nightly(settings, interactive=interactive, do_sweep=not no_sweep,
                             until=end, metrics_file=metrics)
    except AuditorError as exc:
        for line in exc.messages():
            log.error("%s", line)
        return exc.exit_code, None
    except Exception:
        log.exception("nightly run crashed")
        return 1, None
    finally:
        teardown_logging()
    said = (f"report: {result.folder}  ({len(result.new)} new suspect(s), "
            f"{len(result.failed_sources)} failed source(s))") if interactive else None
    return result.exit_code, said
