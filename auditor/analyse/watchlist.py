"""The optics watch list precomputed (issue #25).

`auditor.analyse.optics.watch_list` fits every module's 30 days of diagnostics: 6-8 s of every
`suspects`, `report` and `watch-list` at 4,096 modules, and it grows with the modules. The
nightly run (after its sweep, before its report) and `auditor watch-list --refresh` compute it
once (`refresh`) and store it (migration 0017: the entries, and what they were computed on);
the commands read it (`current`).

A stored list is used only when it is the list the command would compute: the same `[optics]`
settings, the same length of history, and the same readings in the command's window as in the
stored one's (`Store.optics_fingerprint`: how many lane readings, the newest read time, the
newest source; a reading added, backfilled, aged out or forgotten changes one of them). The
day numbers of a later window shift, but every fit, level and sentence is the same (they are
relative to the days). A daily sweep reads every module at about the same hour, so the list of
the night stays the list until the next night's readings. The peers (link budget) are those of
the topology when it was computed.

Otherwise the list is computed on demand, as before, and the output says so and why: a stale
list is never shown as if current (the commands open the database read-only, so they do not
store what they computed; the next nightly run does). Every output says when its list was
computed (`age_json`).

Not incremental at optics ingest: a nightly sweep reads every module each day, so an ingest
changes every history, and the window slides for all modules at once; one full computation a
night costs what the changed modules would. It works through the modules in buckets of whole
devices (`watch_list`, `BUCKET_MODULES`): at 65,536 modules x 30 days every history at once
took more than 9 GB; a bucket at a time, about 1 GB.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from auditor.analyse.optics.model import Finding, Module, Watch, WatchList
from auditor.analyse.optics.read import port_reader, watch_list
from auditor.config import OpticsSettings
from auditor.models import PortKey
from auditor.store import Store, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import OpticsFingerprintRow, WatchEntryRow, WatchListRunRow


def settings_key(cfg: OpticsSettings) -> str:
    """The settings a list was computed with, as stored (JSON, keys sorted). Not the history:
    the window is compared on its own (`watch-list --since` asks for another)."""
    return json.dumps({k: v for k, v in asdict(cfg).items() if k != "history_days"},
                      sort_keys=True)


def _now() -> datetime:
    return utc_naive(datetime.now(UTC))


def refresh(store: Store, since: datetime, until: datetime, cfg: OpticsSettings, *,
            peers: Mapping[PortKey, PortKey] | None = None,
            names: dict[str, tuple[str, str]] | None = None) -> WatchList:
    """Compute the watch list of the readings in [since, until] (naive UTC) and store it in
    place of the one before, in a transaction (the caller's, if it holds one). Called outside
    one, the list's readings are read on a second connection while the buckets before are
    assessed (`watch_list`); nothing else writes meanwhile (DuckDB: one writing process)."""
    since, until = utc_naive(since), utc_naive(until)
    began, t = _now(), time.perf_counter()
    seen = store.optics_fingerprint(since, until)
    wl = watch_list(store, since, until, cfg, peers=peers, names=names)
    run: WatchListRunRow = {
        "computed_at": began, "took_s": round(time.perf_counter() - t, 3), "since": since,
        "until": until, "readings": seen["readings"], "newest_read_at": seen["newest_read_at"],
        "newest_source_id": seen["newest_source_id"], "settings": settings_key(cfg),
        "modules": wl.modules}
    with store.transaction():
        store.store_watch_list(run, [_entry(i, w) for i, w in enumerate(wl.watches, 1)])
    wl.computed_at, wl.precomputed = began, True
    return wl


def current(store: Store, since: datetime, until: datetime, cfg: OpticsSettings, *,
            peers: Mapping[PortKey, PortKey] | None = None,
            names: dict[str, tuple[str, str]] | None = None) -> WatchList:
    """The watch list of [since, until] (naive UTC): the stored one when it is this one,
    else computed here (`on_demand_because` says why)."""
    since, until = utc_naive(since), utc_naive(until)
    run = store.watch_list_run()
    if run is None and store.optics_fingerprint(since, until)["readings"] == 0:
        # A site that reads no diagnostics: nothing to compute, and nothing to say about it.
        return WatchList(since, until, 0, [])
    why = _unusable(store, run, since, until, cfg)
    if run is not None and why is None:
        return _stored(store, run)
    wl = watch_list(store, since, until, cfg, peers=peers, names=names)
    wl.computed_at, wl.on_demand_because = _now(), why
    return wl


def _unusable(store: Store, run: WatchListRunRow | None, since: datetime, until: datetime,
              cfg: OpticsSettings) -> str | None:
    """Why the stored computation is not the list of this window (None: it is)."""
    if run is None:
        return ("no precomputed watch list (the nightly run or `auditor watch-list --refresh` "
                "stores one)")
    if run["settings"] != settings_key(cfg):
        return "the [optics] settings changed since the watch list was precomputed"
    if run["until"] - run["since"] != until - since:
        return (f"the precomputed watch list covers {_days(run['until'] - run['since'])} of "
                f"history, this asks for {_days(until - since)}")
    now = store.optics_fingerprint(since, until)
    then: OpticsFingerprintRow = {"readings": run["readings"],
                                  "newest_read_at": run["newest_read_at"],
                                  "newest_source_id": run["newest_source_id"]}
    if now != then:
        return (f"the readings changed since the watch list was precomputed at "
                f"{_iso(run['computed_at'])} ({run['readings']:,} lane readings up to "
                f"{_iso(run['newest_read_at'])} then, {now['readings']:,} up to "
                f"{_iso(now['newest_read_at'])} in this window)")
    return None


def _days(span: Any) -> str:
    return f"{span.total_seconds() / 86400:g} days"


def _iso(at: datetime | None) -> str:
    return "-" if at is None else at.isoformat(timespec="seconds") + "Z"


# --- the stored form ----------------------------------------------------------------------------


def _entry(rank: int, w: Watch) -> WatchEntryRow:
    m = w.module
    return {
        "rank": rank, "device": m.device, "port_name": m.port_name,
        "serial_number": m.serial_number, "part_number": m.part_number, "vendor": m.vendor,
        "firmware": m.firmware, "guid": m.guid, "port": m.port, "lane": w.lane,
        "days": w.days, "last_at": w.last_at,
        "peer_guid": w.peer[0] if w.peer else None, "peer_port": w.peer[1] if w.peer else None,
        "peer_name": w.peer_name,
        # Floats go through JSON as their shortest repr: read back, they are the same floats.
        "findings": json.dumps([[f.rule, f.quantity, f.sentence, f.strength,
                                 f.days_to_threshold, f.threshold, f.trending_past_warning]
                                for f in w.findings]),
    }


def _watch(e: WatchEntryRow) -> Watch:
    module = Module(e["device"], e["port_name"], e["serial_number"], e["part_number"],
                    e["vendor"], e["firmware"], e["guid"], e["port"])
    findings = [Finding(rule, quantity, sentence, strength, days, threshold, bool(past))
                for rule, quantity, sentence, strength, days, threshold, past
                in json.loads(e["findings"])]
    peer = (e["peer_guid"], e["peer_port"]) if e["peer_guid"] is not None and \
        e["peer_port"] is not None else None
    return Watch(module, e["lane"], findings, e["days"], e["last_at"], peer, e["peer_name"])


def _stored(store: Store, run: WatchListRunRow) -> WatchList:
    since, until = run["since"], run["until"]
    return WatchList(since, until, run["modules"], [_watch(e) for e in store.watch_list_entries()],
                     computed_at=run["computed_at"], precomputed=True,
                     port_histories=port_reader(store, since, until))


__all__ = ["current", "refresh", "settings_key"]
