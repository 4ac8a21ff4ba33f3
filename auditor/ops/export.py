"""History for other engines: `auditor export` and `auditor fleet` (issue #15).

`export` writes what one fabric's database holds, day by day, as Parquet in the Hive layout

    <out>/<table>/fabric=<fabric>/day=<YYYY-MM-DD>/part-0.parquet

for nodes, links, port_events, counters and jobs (rows as stored) and for flaps, suspects and
outcomes (what the analysis makes of that day: the flaps that went down in it, the ranking of
its 24 hours, and what every suspect the nightly runs remembered had turned out to be by the
day's end). Every partition of the days asked for is written whole from the database, to a temporary
name and renamed, so an export can be repeated (same database, same bytes), a reader never sees
half a file, and a nightly run re-exporting the last two days picks up late evidence.

Each `<out>/<table>/fabric=<fabric>/` folder holds an owner record, `_auditor_export.json`,
naming the database that writes its partitions (its identity, migration 0013; readers of the
Hive layout skip files whose names start with `_`). Export refuses to write into a fabric's
folders that another database owns, unless told to take them over: the default fabric name
is the database file's name, and two pods' `auditor.duckdb` would otherwise replace each
other's days without a word.

`fleet` reads the suspects (and flap counts) of several exports, of one or many fabrics, in an
in-memory DuckDB: one table for the whole site. DuckDB, Spark, Trino and pyarrow read the same
files (docs/export.md has the table DDL).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from auditor import safe_text
from auditor.analyse import flaps as flaps_mod
from auditor.analyse.outcomes import Outcomes, episode_json, judge
from auditor.analyse.pipeline import RankSettings, rank_window
from auditor.errors import AuditorError
from auditor.store import Store, utc_naive
from auditor.timeparse import EARLIEST, LATEST

STORED = ("nodes", "links", "port_events", "counters", "jobs")
ANALYSED = ("flaps", "suspects", "outcomes")
TABLES = STORED + ANALYSED
PART = "part-0.parquet"
# A fabric name is a path component of every partition: plain words only.
_FABRIC_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


OWNER = "_auditor_export.json"
_OWNER_MAX = 64 * 1024  # an owner record is ~300 bytes; a bigger file is not one of ours
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.ASCII)


@dataclass(frozen=True)
class Exported:
    fabric: str
    days: list[str]
    files: int
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Owner:
    """What a fabric folder's owner record says: the database id (None: no record, or one
    that cannot be read, `problem` says why) and where that database was."""

    database_id: str | None
    where: str = ""
    problem: str = ""


def _read_owner(record: Path) -> _Owner | None:
    """The owner record of a fabric folder; None when there is none."""
    try:
        with record.open("rb") as f:
            raw = f.read(_OWNER_MAX + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _Owner(None, problem=f"cannot read {record}: {exc.strerror or exc}")
    try:
        data = json.loads(raw.decode("utf-8")) if len(raw) <= _OWNER_MAX else None
    except (UnicodeDecodeError, ValueError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("database_id"), str) \
            or not _UUID.fullmatch(data["database_id"]):
        return _Owner(None, problem=f"{record} is not an owner record auditor wrote")
    host, path = data.get("host"), data.get("database")
    where = f"{host}:{path}" if isinstance(host, str) and isinstance(path, str) else ""
    return _Owner(data["database_id"], safe_text.inert(where, 200))


def _owner_text(database_id: str, db: Path) -> str:
    return safe_text.json_text({"database_id": database_id, "host": socket.gethostname(),
                                "database": str(db.resolve())}, indent=1) + "\n"


def _write_owner(record: Path, text: str, *, replace: bool) -> bool:
    """Write an owner record; a new one only if there is none yet (a link, which fails when
    another export claimed the folder meanwhile: False then), a replaced one in one rename."""
    tmp = record.with_name(f".{OWNER}.{os.getpid()}.tmp")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        if replace:
            tmp.replace(record)
            return True
        try:
            os.link(tmp, record)
        except FileExistsError:
            return False
        return True
    except OSError as exc:
        raise AuditorError(f"export: cannot write {record}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def claim(out: Path, fabric: str, database_id: str, db: Path, takeover: bool = False
          ) -> list[str]:
    """Make this database the owner of `fabric`'s folders in `out` (one per table), or refuse
    with one line when another database owns one of them, before anything is written.
    `takeover`: replace the other database's record (its partitions of the days exported are
    replaced, the others kept). Returns warnings (folders from before owner records)."""
    warnings: list[str] = []
    claims: list[tuple[Path, bool]] = []  # (record, replace an existing one)
    for table in TABLES:
        folder = out / table / f"fabric={fabric}"
        record = folder / OWNER
        owner = _read_owner(record)
        if owner is not None and owner.database_id == database_id:
            continue
        if owner is not None and not takeover:
            whose = owner.problem or (f"written by another database ({owner.database_id}"
                                      + (f", {owner.where}" if owner.where else "") + ")")
            raise AuditorError(
                f"export: fabric {fabric!r} in {out}: {whose}; export this database under a "
                "--fabric name of its own, or give --takeover to replace that fabric's "
                "partitions")
        if owner is None and folder.is_dir() and any(folder.glob("day=*")):
            warnings.append(f"{folder}: partitions without an owner record (written before "
                            "auditor recorded one); this database owns them from now on")
        claims.append((record, owner is not None))
    text = _owner_text(database_id, db)
    for record, replace in claims:
        if not _write_owner(record, text, replace=replace) \
                and (_read_owner(record) or _Owner(None)).database_id != database_id:
            raise AuditorError(f"export: fabric {fabric!r} in {out}: another database claimed "
                               f"{record.parent} meanwhile; nothing was exported")
    return warnings


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
           settings: RankSettings | None = None, takeover: bool = False) -> Exported:
    """Write every table's partitions of the days [since, until] touches (see the module),
    once this database owns the fabric's folders (`claim`). Each day's suspects are ranked by
    the one pipeline with the site's settings (`pipeline.rank_window`), as `suspects` ranks
    that day."""
    settings = settings or RankSettings()
    check_fabric(fabric)
    days = days_between(since, until)
    warnings = claim(out, fabric, store.identity(), store.path, takeover)
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
        suspect_cols = _suspect_columns(_day_suspects(store, day, end, settings))
        _write(_partition(out, "suspects", fabric, day),
               partial(store.export_rows, "suspects", suspect_cols))
        span = settings.outcomes.span
        judged = judge(store, end - span, end, settings.outcomes, settings.verify_days) \
            if store.suspect_runs(end - span, end) else None
        _write(_partition(out, "outcomes", fabric, day),
               partial(store.export_rows, "outcomes", _outcome_columns(judged)))
        files += 3
    return Exported(fabric, [f"{d:%Y-%m-%d}" for d in days], files, warnings)


def _day_suspects(store: Store, day: datetime, end: datetime,
                  settings: RankSettings) -> list[dict[str, Any]]:
    if not store.snapshot_times(end, limit=1):
        return []  # no topology yet on that day: nothing to rank
    return list(rank_window(store, day, end, settings).as_json()["suspects"])


_DAY_RE = re.compile(r"day=(\d{4}-\d{2}-\d{2})", re.ASCII)


@dataclass(frozen=True)
class _Partition:
    fabric: str
    day: str
    path: Path


# A day's ranking of one fabric holds hundreds of suspects (the 4,096-host scale benchmark's
# busiest day: about 600); a partition with far more is not one export wrote, and reading all of
# it would hold every row in memory (a 1 MB Parquet file can hold millions, issue #21).
MAX_SUSPECTS_A_DAY = 20_000


def _roots(exports: Sequence[Path]) -> list[Path]:
    """The export folders, each once after resolving (a folder given twice, or by two paths,
    would count every flap and suspect twice)."""
    roots: list[Path] = []
    for given in exports:
        try:
            root = given.resolve()
            folder = root.is_dir()
        except (OSError, RuntimeError):  # a symlink loop, a path that cannot be followed
            folder = False
        if not folder:
            raise AuditorError(f"{given}: not an export folder (auditor export --out ...)")
        if root not in roots:
            roots.append(root)
    return roots


def _day(name: str) -> str | None:
    m = _DAY_RE.fullmatch(name)
    if m is None:
        return None
    try:
        date.fromisoformat(m[1])
    except ValueError:  # day=2026-13-45
        return None
    return m[1]


def _listing(folder: Path, warnings: list[str]) -> list[Path]:
    """The entries of a folder, sorted; one that cannot be listed (permissions, I/O) is a
    warning and no entries."""
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        warnings.append(f"{folder}: cannot list: {exc.strerror or exc}; skipped")
        return []


def _partitions(roots: Sequence[Path], table: str, first: str, last: str,
                warnings: list[str]) -> list[_Partition]:
    """Every `<root>/<table>/fabric=<name>/day=<YYYY-MM-DD>/part-0.parquet` of the days
    [first, last], found by listing folders (never a glob): a folder whose name is not a
    fabric name as --fabric takes it, or not a day, is skipped with a warning; a day outside
    the window is not opened; a fabric's day found twice (two exports holding it, a symlink)
    is read once."""
    found: list[_Partition] = []
    seen: dict[tuple[str, str], Path] = {}
    files: set[Path] = set()
    for root in roots:
        base = root / table
        try:
            present, is_folder = base.exists() or base.is_symlink(), base.is_dir()
        except OSError:  # a symlink loop
            present, is_folder = True, False
        if not is_folder:
            if present:
                warnings.append(f"{base}: not a folder (a file, or a link that leads nowhere); "
                                f"no {table} read from {root}")
            continue
        for folder in _listing(base, warnings):
            if folder.name.startswith(("_", ".")):
                continue  # owner records, temporary files: ours, not partitions
            fabric = folder.name.removeprefix("fabric=")
            if folder.name == fabric or not _FABRIC_RE.fullmatch(fabric) \
                    or fabric in (".", "..") or not folder.is_dir():
                warnings.append(f"{folder}: not a fabric partition (fabric=<name>, the name "
                                "as --fabric takes it); skipped")
                continue
            for day_folder in _listing(folder, warnings):
                if day_folder.name.startswith(("_", ".")):
                    continue
                day = _day(day_folder.name)
                if day is None or not day_folder.is_dir():
                    warnings.append(f"{day_folder}: not a day partition (day=YYYY-MM-DD); "
                                    "skipped")
                    continue
                if not first <= day <= last:
                    continue  # never opened
                path = day_folder / PART
                if not path.is_file():
                    warnings.append(f"{path}: missing; day skipped")
                    continue
                real = path.resolve()
                if real in files:
                    continue
                files.add(real)
                if (fabric, day) in seen:
                    warnings.append(f"{path}: fabric {fabric} day {day} is also in "
                                    f"{seen[fabric, day]}; read from there only")
                    continue
                seen[fabric, day] = path
                found.append(_Partition(fabric, day, path))
    return found


def _read(query: str, parts: Sequence[_Partition], warnings: list[str], **params: Any
          ) -> list[tuple[_Partition, list[dict[str, Any]]]]:
    """Each partition's rows; an unreadable file (corrupt, empty, another shape, a time
    outside the years auditor reads) is a warning naming it, and the others are read."""
    results = Store.read_export_files(query, [
        (p.path, {"fabric": p.fabric, "day": p.day, **params}) for p in parts])
    out = []
    for part, rows in zip(parts, results, strict=True):
        if isinstance(rows, str):
            warnings.append(f"{part.path}: unreadable, skipped ({rows})")
            continue
        out.append((part, rows))
    return out


def fleet(exports: Sequence[Path], since: datetime, until: datetime) -> dict[str, Any]:
    """The suspects and flap counts of every fabric in `exports` for the days [since, until]
    touches: {"days": [...], "fabrics": [{fabric, days, flaps, suspects}], "suspects": [...],
    "warnings": [...]} (what in the folders was skipped, and why)."""
    days = days_between(since, until)
    first, last = f"{days[0]:%Y-%m-%d}", f"{days[-1]:%Y-%m-%d}"
    roots = _roots(exports)
    warnings: list[str] = []
    bounds = {"earliest": utc_naive(EARLIEST), "latest": utc_naive(LATEST)}
    suspects = _read("exports_suspects_read",
                     _partitions(roots, "suspects", first, last, warnings), warnings,
                     max_rows=MAX_SUSPECTS_A_DAY + 1, **bounds)
    for part, found in suspects:
        if len(found) > MAX_SUSPECTS_A_DAY:
            warnings.append(f"{part.path}: more than {MAX_SUSPECTS_A_DAY} suspects in one day "
                            "(export writes a day's ranking); the first by rank read")
            del found[MAX_SUSPECTS_A_DAY:]
    counts = _read("exports_summary_read", _partitions(roots, "flaps", first, last, warnings),
                   warnings)
    fabrics: dict[str, dict[str, Any]] = {}

    def of(name: str) -> dict[str, Any]:
        return fabrics.setdefault(name, {"fabric": name, "days": 0, "flaps": 0,
                                         "still_down": 0, "suspects": 0})

    # The days each fabric has exported in the window (a day without flaps is a day too).
    rows: list[dict[str, Any]] = []
    for part, found in suspects:
        of(part.fabric)["days"] += 1
        of(part.fabric)["suspects"] += len(found)
        rows += found
    for part, (count,) in counts:
        of(part.fabric)["flaps"] += count["flaps"]
        of(part.fabric)["still_down"] += count["still_down"]
    rows.sort(key=lambda r: (r["fabric"], r["day"], r["rank"] is None, r["rank"] or 0))
    for r in rows:
        for key in ("first_at", "last_at"):
            at = r[key]
            r[key] = at.isoformat() + "Z" if at else None  # as `suspects --format json` writes
    return {"days": [first, last], "fabrics": sorted(fabrics.values(), key=lambda f: f["fabric"]),
            "suspects": rows, "warnings": warnings}
