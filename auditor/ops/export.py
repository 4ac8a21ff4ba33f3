"""History for other engines: `auditor export` and `auditor fleet` (issue #15).

`export` writes what one fabric's database holds, day by day, as Parquet in the Hive layout

    <out>/<table>/fabric=<fabric>/day=<YYYY-MM-DD>/part-0.parquet

for nodes, links, port_events, counters and jobs (rows as stored) and for flaps, suspects and
outcomes (what the analysis makes of that day: the flaps that went down in it, the ranking of
its 24 hours, and what every suspect the nightly runs remembered had turned out to be by the
day's end). Every partition of the days asked for is written whole from the database, to a temporary
name and renamed, so an export can be repeated (same database, same bytes), a reader never sees
half a file, and a nightly run re-exporting the last two days picks up late evidence.

`fleet` reads the suspects (and flap counts) of several exports, of one or many fabrics, in an
in-memory DuckDB: one table for the whole site. DuckDB, Spark, Trino and pyarrow read the same
files (the README has the table DDL).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from auditor.analyse import flaps as flaps_mod
from auditor.analyse.correlate import gather
from auditor.analyse.outcomes import Outcomes, episode_json, judge
from auditor.analyse.rank import as_json, rank
from auditor.config import OutcomesSettings, RankingSettings
from auditor.errors import AuditorError
from auditor.store import Store, utc_naive

STORED = ("nodes", "links", "port_events", "counters", "jobs")
ANALYSED = ("flaps", "suspects", "outcomes")
TABLES = STORED + ANALYSED
PART = "part-0.parquet"
# A fabric name is a path component of every partition: plain words only.
_FABRIC_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Exported:
    fabric: str
    days: list[str]
    files: int


def check_fabric(name: str) -> str:
    if not _FABRIC_RE.fullmatch(name) or name in (".", ".."):
        raise AuditorError(f"--fabric {name!r}: use letters, digits, '.', '_' or '-' "
                           "(at most 64, not starting with a dot or dash)")
    return name


def days_between(since: datetime, until: datetime) -> list[datetime]:
    """The UTC days (midnights, naive) that [since, until] touches, oldest first."""
    first = utc_naive(since).replace(hour=0, minute=0, second=0, microsecond=0)
    last = utc_naive(until)
    out = []
    day = first
    while day <= last:
        out.append(day)
        day += timedelta(days=1)
    return out


def _partition(out: Path, table: str, fabric: str, day: datetime) -> Path:
    return out / table / f"fabric={fabric}" / f"day={day:%Y-%m-%d}" / PART


def _flap_columns(found: list[flaps_mod.Flap], names: dict[str, tuple[str, str]]
                  ) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "a_name", "a_guid", "a_port", "b_name", "b_guid", "b_port", "down_at", "up_at",
        "duration_s", "approximate", "sources")}
    for f in found:  # flaps() returns them in a fixed order
        ends = sorted(f.ends)
        a = ends[0]
        b = ends[1] if len(ends) > 1 else (None, None)
        cols["a_name"].append(names.get(a[0], (a[0], ""))[0])
        cols["a_guid"].append(a[0])
        cols["a_port"].append(a[1])
        cols["b_name"].append(names.get(b[0], (b[0], ""))[0] if b[0] else None)
        cols["b_guid"].append(b[0])
        cols["b_port"].append(b[1])
        cols["down_at"].append(f.down_at)
        cols["up_at"].append(f.up_at)
        cols["duration_s"].append(f.duration_s)
        cols["approximate"].append(f.approximate)
        cols["sources"].append(sorted(f.sources))
    return cols


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.removesuffix("Z")) if text else None


def _suspect_columns(suspects: list[dict[str, Any]]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "rank", "component", "score", "a_name", "a_guid", "a_port", "a_label", "b_name",
        "b_guid", "b_port", "b_label", "flaps", "downtime_s", "jobs_failed", "gpu_hours_lost",
        "first_at", "last_at", "action", "evidence")}
    for s in suspects:
        ends = s["ends"]
        b = ends[1] if len(ends) > 1 else {}
        for key in ("rank", "component", "score", "flaps", "downtime_s", "jobs_failed",
                    "gpu_hours_lost", "action", "evidence"):
            cols[key].append(s[key])
        for side, end in (("a", ends[0]), ("b", b)):
            for key in ("name", "guid", "port", "label"):
                cols[f"{side}_{key}"].append(end.get(key))
        cols["first_at"].append(_instant(s["first_at"]))
        cols["last_at"].append(_instant(s["last_at"]))
    return cols


def _outcome_columns(judged: Outcomes | None) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "component", "a_name", "a_guid", "a_port", "b_name", "b_guid", "b_port", "rules",
        "first_at", "first_seen", "last_seen", "nights", "verdict", "young", "followed_part",
        "reason", "ticket", "fixed_at", "days_to_fix", "gpu_hours_lost")}
    for e in (episode_json(x) for x in (judged.episodes if judged else [])):
        ends = e["ends"]
        b = ends[1] if len(ends) > 1 else {"name": None, "guid": None, "port": None}
        for side, end in (("a", ends[0]), ("b", b)):
            for key in ("name", "guid", "port"):
                cols[f"{side}_{key}"].append(end[key])
        for key in ("component", "rules", "nights", "verdict", "young", "followed_part",
                    "reason", "ticket", "days_to_fix", "gpu_hours_lost"):
            cols[key].append(e[key])  # type: ignore[literal-required]
        for key in ("first_at", "first_seen", "last_seen", "fixed_at"):
            cols[key].append(_instant(e[key]))  # type: ignore[literal-required]
    return cols


def _write(final: Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp_path)`, then move the file into its partition in one rename. A folder
    that cannot be written (read-only, immutable, full) is one line of error, and the
    temporary file is removed: the partition keeps its old file whole, or has none."""
    tmp = final.with_name(f".{PART}.{os.getpid()}.tmp")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        tmp.replace(final)
    except OSError as exc:
        with contextlib.suppress(OSError):  # nothing there, or the folder refuses that too
            tmp.unlink(missing_ok=True)
        raise AuditorError(f"export: cannot write {final}: {exc.strerror or exc}") from None


def export(store: Store, out: Path, fabric: str, since: datetime, until: datetime,
           cfg: RankingSettings | None = None, aliases: dict[str, str] | None = None,
           outcomes: OutcomesSettings | None = None) -> Exported:
    """Write every table's partitions of the days [since, until] touches (see the module)."""
    check_fabric(fabric)
    days = days_between(since, until)
    names = store.node_names()
    files = 0
    for day in days:
        end = day + timedelta(days=1)
        for table in STORED:
            _write(_partition(out, table, fabric, day), partial(store.export_day, table, day))
            files += 1
        found = flaps_mod.flaps(store, day, end - timedelta(microseconds=1))
        found = [f for f in found if f.down_at is not None and day <= f.down_at < end]
        flap_cols = _flap_columns(found, names)
        _write(_partition(out, "flaps", fabric, day),
               partial(store.export_rows, "flaps", flap_cols))
        suspect_cols = _suspect_columns(_day_suspects(store, day, end, cfg, aliases))
        _write(_partition(out, "suspects", fabric, day),
               partial(store.export_rows, "suspects", suspect_cols))
        settings = outcomes or OutcomesSettings()
        judged = judge(store, end - settings.span, end, settings) \
            if store.suspect_runs(end - settings.span, end) else None
        _write(_partition(out, "outcomes", fabric, day),
               partial(store.export_rows, "outcomes", _outcome_columns(judged)))
        files += 3
    return Exported(fabric, [f"{d:%Y-%m-%d}" for d in days], files)


def _day_suspects(store: Store, day: datetime, end: datetime, cfg: RankingSettings | None,
                  aliases: dict[str, str] | None) -> list[dict[str, Any]]:
    if not store.snapshot_times(end, limit=1):
        return []  # no topology yet on that day: nothing to rank
    ev = gather(store, day, end, cfg, aliases=aliases)
    return list(as_json(ev, rank(ev, cfg), None)["suspects"])


def _files(exports: Sequence[Path], table: str) -> list[Path]:
    found: list[Path] = []
    for root in exports:
        if not root.is_dir():
            raise AuditorError(f"{root}: not an export folder (auditor export --out ...)")
        found += sorted(root.glob(f"{table}/fabric=*/day=*/{PART}"))
    return found


def fleet(exports: Sequence[Path], since: datetime, until: datetime) -> dict[str, Any]:
    """The suspects and flap counts of every fabric in `exports` for the days [since, until]
    touches: {"days": [...], "fabrics": [{fabric, days, flaps, suspects}], "suspects": [...]}."""
    days = days_between(since, until)
    first, last = f"{days[0]:%Y-%m-%d}", f"{days[-1]:%Y-%m-%d}"
    suspect_files = _files(exports, "suspects")
    flap_files = _files(exports, "flaps")
    rows = (Store.read_exports("exports_suspects_read", suspect_files, first_day=first,
                               last_day=last) if suspect_files else [])
    counts = (Store.read_exports("exports_summary_read", flap_files, first_day=first,
                                 last_day=last) if flap_files else [])
    fabrics: dict[str, dict[str, Any]] = {}

    def of(name: str) -> dict[str, Any]:
        return fabrics.setdefault(name, {"fabric": name, "days": 0, "flaps": 0,
                                         "still_down": 0, "suspects": 0})

    # The days each fabric has exported in the window (a day without flaps is a day too).
    for path in suspect_files:
        name = path.parent.parent.name.removeprefix("fabric=")
        if first <= path.parent.name.removeprefix("day=") <= last:
            of(name)["days"] += 1
    for c in counts:
        of(c["fabric"])["flaps"] += c["flaps"]
        of(c["fabric"])["still_down"] += c["still_down"]
    for r in rows:
        of(r["fabric"])["suspects"] += 1
        for key in ("first_at", "last_at"):
            at = r[key]
            r[key] = at.isoformat() + "Z" if at else None  # as `suspects --format json` writes
    return {"days": [first, last], "fabrics": sorted(fabrics.values(), key=lambda f: f["fabric"]),
            "suspects": rows}
