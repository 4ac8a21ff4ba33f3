"""Reading the store: a bucket of whole devices at a time, its readings as numpy columns, their
daily medians, series and fits, and the watch list over them (`watch_list`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from functools import partial
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Final

from auditor.analyse.optics.fit import _fit_rows
from auditor.analyse.optics.model import (
    DARK_DBM,
    LANE_QUANTITIES,
    MODULE_QUANTITIES,
    Fit,
    History,
    Module,
    ModuleKey,
    Series,
    WatchList,
)
from auditor.analyse.optics.rules import Assessment
from auditor.config import OpticsSettings
from auditor.models import (
    OPTICS_BOUNDS,
    OPTICS_QUANTITIES,
    PortKey,
    Thresholds,
    plausible,
)
from auditor.store import Store

if TYPE_CHECKING:
    from concurrent.futures import Future

    import numpy.typing as npt

    from auditor.store.rows import OpticsDailyRow, OpticsModuleRow, OpticsThresholdRow



def _series(days: list[int], values: list[Any], quantity: str) -> Series:
    """(day, value) of the days that have a value. -inf dBm (0 mW, a dark lane) becomes
    DARK_DBM; NaN, other infinities and values no module can report (OPTICS_BOUNDS: the
    ingest leaves them out, a database written before it may hold them) are no reading."""
    out = [(x, float(v)) for x, v in zip(days, values, strict=True) if v is not None and v == v]
    if math.inf in values or -math.inf in values:  # rare; `in` compares at C speed
        dark = quantity.endswith("_dbm")
        out = [(x, DARK_DBM if dark and v == -math.inf else v) for x, v in out
               if not (math.isinf(v) and not (dark and v < 0))]
    lo, hi = OPTICS_BOUNDS[quantity]
    try:
        # At C speed on the raw values (a series of 100,000 is checked in 30 ms, not 250);
        # NaN compares false either way, and a NaN first makes min or max NaN: filtered below.
        inside = lo <= min(values) and max(values) <= hi
    except (TypeError, ValueError):  # a day without this quantity (None), or no day at all
        inside = False
    if not inside:
        out = [(x, v) for x, v in out if lo <= v <= hi]
    return out


def histories(rows: Iterable[OpticsDailyRow], limits: Iterable[OpticsThresholdRow],
              start: date) -> dict[ModuleKey, History]:
    """Histories from the store's rows (`Store.optics_daily`: one per module and lane, day
    numbers from `start`) and thresholds (`Store.optics_thresholds_at`)."""
    out: dict[ModuleKey, History] = {}
    # Every lane's row repeats its module's temperature and Vcc: one value per module and day.
    module_days: dict[ModuleKey, dict[str, dict[int, float]]] = defaultdict(
        lambda: defaultdict(dict))
    for r in rows:
        key = (r["device"], r["port_name"], r["serial_number"])
        h = out.get(key)
        module = Module(r["device"], r["port_name"], r["serial_number"], r["part_number"],
                        r["vendor"], r["firmware"], r["guid"], r["port"])
        if h is None:
            h = out[key] = History(module, start, r["last_at"])
        elif r["last_at"] >= h.last_at:
            h.last_at, h.module = r["last_at"], module  # the newest identity and placement
        days = [int(x) for x in r["days"]]
        for q in MODULE_QUANTITIES:
            for x, v in _series(days, r[q], q):
                module_days[key][q].setdefault(x, v)
        if r["lane"] is not None:
            lane = h.lanes.setdefault(int(r["lane"]), {})
            for lq in LANE_QUANTITIES:
                if ser := _series(days, r[lq], lq):
                    lane[lq] = ser
    for key, quantities in module_days.items():
        out[key].module_series = {q: sorted(d.items()) for q, d in quantities.items()}
    for t in limits:
        h = out.get((t["device"], t["port_name"], t["serial_number"]))
        if h is not None and t["quantity"] in OPTICS_QUANTITIES:
            h.thresholds[t["quantity"]] = Thresholds(
                *(_limit(t["quantity"], t[k]) for k in ("low_alarm", "low_warning",
                                                        "high_warning", "high_alarm")))
    return out


def _limit(quantity: str, value: Any) -> float | None:
    # Zero is "no limit" (SFF-8636 and CMIS leave unimplemented thresholds at 0); the store
    # already keeps those as null, a reading stored some other way is treated the same. So is
    # a limit no module can encode (OPTICS_BOUNDS; NaN included).
    if value is None or float(value) == 0.0 or not plausible(quantity, float(value)):
        return None
    return float(value)


def _median_by_group(column: Any, group: npt.NDArray[Any], starts: npt.NDArray[Any]
                     ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Each group's median of a fetched column (masked where NULL), as DuckDB's `median`
    takes it: NULL left out, NaN above every number, an even count the mean of the middle two
    (what `optics_daily` had DuckDB compute; tests/test_watch_buckets.py holds them equal); and
    whether the group had a value. `group` numbers the rows' groups, which are contiguous and
    begin at `starts`."""
    import numpy as np

    values = np.ma.getdata(column).astype(float)
    null = np.ma.getmaskarray(column)
    if len(starts) == len(values):  # one reading a day, as a daily sweep leaves
        return values, ~null
    # Within each group: values first, smallest first, NaN last (numpy sorts NaN last, as
    # DuckDB orders it), NULLs after them.
    order = np.lexsort((values, null, group))
    ranked = values[order]
    count = np.bincount(group, weights=~null, minlength=len(starts)).astype(np.int64)
    have = count > 0
    lo = starts + np.maximum(count - 1, 0) // 2
    hi = starts + count // 2
    a, b = ranked[lo], ranked[hi]
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(lo == hi, a, (a + b) / 2), have


def _usable(quantity: str, values: npt.NDArray[Any], have: npt.NDArray[Any]
            ) -> npt.NDArray[Any]:
    """Where a daily value is a reading, as `_series` decides (in place: -inf dBm becomes
    DARK_DBM)."""
    import numpy as np

    if quantity.endswith("_dbm"):
        values[values == -math.inf] = DARK_DBM
    lo, hi = OPTICS_BOUNDS[quantity]
    with np.errstate(invalid="ignore"):
        usable: npt.NDArray[Any] = have & np.isfinite(values) & (values >= lo) & (values <= hi)
    return usable


def _lay_out(owner: npt.NDArray[Any], x: npt.NDArray[Any], v: npt.NDArray[Any], least: int
             ) -> tuple[list[int], list[Series], dict[int, Fit]]:
    """Points (owner, day, value) sorted by owner and day: the owners, each one's series, and
    the Theil-Sen fits of those with at least `least` days. The fits as `fit_all` takes them
    (the series with the same days as one matrix), the matrix laid out by numpy: owners by the
    days they have (`fit_all` groups a list per series, 0.4 s of 4,096 modules)."""
    import numpy as np

    if len(owner) == 0:
        return [], [], {}
    cuts = [*np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]).tolist(), len(owner)]
    owners = owner[cuts[:-1]].tolist()
    xs, vs = x.tolist(), v.tolist()
    series = [list(zip(xs[a:b], vs[a:b], strict=True)) for a, b in pairwise(cuts)]
    fits: dict[int, Fit] = {}
    row = np.repeat(np.arange(len(owners)), np.diff(cuts))
    width = int(x.max()) + 1
    have = np.zeros((len(owners), width), dtype=bool)
    have[row, x] = True
    wide = np.zeros((len(owners), width))
    wide[row, x] = v
    fitted = np.flatnonzero(have.sum(axis=1) >= least)
    if len(fitted) == 0:
        return owners, series, fits
    patterns, which = np.unique(np.packbits(have[fitted], axis=1), axis=0, return_inverse=True)
    which = which.reshape(-1)
    for p in range(len(patterns)):
        rows = fitted[which == p]
        days = np.flatnonzero(have[rows[0]])
        first, last = int(days[0]), int(days[-1])
        slopes, intercepts, noises = _fit_rows(days.tolist(), wide[np.ix_(rows, days)])
        for r, a, b, e in zip(rows.tolist(), slopes, intercepts, noises, strict=True):
            fits[r] = Fit(a, b, e, first, last)
    return owners, series, fits


def histories_of(modules: Sequence[OpticsModuleRow], columns: dict[str, Any],
                 limits: Iterable[OpticsThresholdRow], start: date, cfg: OpticsSettings
                 ) -> dict[ModuleKey, History]:
    """`histories` from a bucket's modules (`Store.optics_modules_between`), lane readings
    (`Store.optics_lane_days`: numpy columns) and thresholds, with their fits (`fit_all`):
    the same histories, the daily medians taken and the series laid out in numpy (a list of
    every module lane's days from DuckDB was 0.7 GB at 4,096 modules x 30 days, and 2.4 s)."""
    import numpy as np

    out: dict[ModuleKey, History] = {}
    histories: list[History] = []
    for r in modules:
        h = History(Module(r["device"], r["port_name"], r["serial_number"], r["part_number"],
                           r["vendor"], r["firmware"], r["guid"], r["port"]), start, r["last_at"])
        out[h.module.key] = h
        histories.append(h)
    module = np.asarray(columns["module"], dtype=np.int64)
    if len(module) == 0:
        return out
    least = max(cfg.min_days, 2)
    lane = np.asarray(columns["lane"], dtype=np.int64)
    day = np.asarray(columns["day"], dtype=np.int64)
    new = np.ones(len(module), dtype=bool)
    new[1:] = (module[1:] != module[:-1]) | (lane[1:] != lane[:-1]) | (day[1:] != day[:-1])
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    g_module, g_lane, g_day = module[starts], lane[starts], day[starts]
    width = int(g_day.max()) + 1
    seen: list[npt.NDArray[Any]] = []  # module x width + day of every daily value kept
    # The module quantities: each day's first reading in the order of the lanes (none first),
    # as `histories` takes the first lane row's of the day.
    for q in MODULE_QUANTITIES:
        values, have = _median_by_group(columns[q], group, starts)
        usable = np.flatnonzero(_usable(q, values, have))
        pick = usable[np.lexsort((g_lane[usable], g_day[usable], g_module[usable]))]
        if len(pick):
            first = np.ones(len(pick), dtype=bool)
            first[1:] = (g_module[pick][1:] != g_module[pick][:-1]) | \
                (g_day[pick][1:] != g_day[pick][:-1])
            pick = pick[first]
        seen.append(g_module[pick] * width + g_day[pick])
        owners, series, fits = _lay_out(g_module[pick], g_day[pick], values[pick], least)
        for i, (m, ser) in enumerate(zip(owners, series, strict=True)):
            histories[m].module_series[q] = ser
            if (fit := fits.get(i)) is not None:
                histories[m].fits[(None, q)] = fit
    # The lanes: each (module, lane) a run of groups; a lane is there even with no reading.
    changed = (g_module[1:] != g_module[:-1]) | (g_lane[1:] != g_lane[:-1])
    run_starts = np.flatnonzero(np.r_[True, changed])
    for m, n in zip(g_module[run_starts].tolist(), g_lane[run_starts].tolist(), strict=True):
        if n >= 0:
            histories[m].lanes.setdefault(n, {})
    run = np.cumsum(np.r_[True, changed]) - 1
    laned = g_lane >= 0
    for lq in LANE_QUANTITIES:
        values, have = _median_by_group(columns[lq], group, starts)
        usable = np.flatnonzero(_usable(lq, values, have) & laned)
        seen.append(g_module[usable] * width + g_day[usable])
        owners, series, fits = _lay_out(run[usable], g_day[usable], values[usable], least)
        run_module = g_module[run_starts[owners]].tolist()
        run_lane = g_lane[run_starts[owners]].tolist()
        for i, (m, n, ser) in enumerate(zip(run_module, run_lane, series, strict=True)):
            h = histories[m]
            h.lanes[n][lq] = ser
            if (fit := fits.get(i)) is not None:
                h.fits[(n, lq)] = fit
    counted = np.zeros((len(histories), width), dtype=bool)
    for at in seen:
        counted.flat[at] = True
    for h, count in zip(histories, counted.sum(axis=1).tolist(), strict=True):
        h.day_count = count
    for t in limits:
        found = out.get((t["device"], t["port_name"], t["serial_number"]))
        if found is not None and t["quantity"] in OPTICS_QUANTITIES:
            found.thresholds[t["quantity"]] = Thresholds(
                *(_limit(t["quantity"], t[k]) for k in ("low_alarm", "low_warning",
                                                        "high_warning", "high_alarm")))
    return out


# Modules per bucket of the watch list (issue #25): one bucket's readings and histories are in
# memory at a time. All 65,536 modules' at once needed more than 9 GB.
BUCKET_MODULES: Final = 4096


def buckets(devices: Sequence[tuple[str, int]], size: int = BUCKET_MODULES
            ) -> list[tuple[str, str]]:
    """Runs of consecutive devices (first, last) of at least `size` modules each, the last run
    what is left. A device is never split (a module's key begins with its device)."""
    out: list[tuple[str, str]] = []
    first: str | None = None
    count = 0
    for device, modules in devices:
        first = device if first is None else first
        count += modules
        if count >= size:
            out.append((first, device))
            first, count = None, 0
    if first is not None:
        out.append((first, devices[-1][0]))
    return out


def _reads(store: Store, *, since: datetime, until: datetime, first: str, last: str
           ) -> tuple[list[OpticsModuleRow], dict[str, Any], list[OpticsThresholdRow]]:
    """What a bucket's histories are made of: its modules, lane readings and limits."""
    return (store.optics_modules_between(since, until, first, last),
            store.optics_lane_days(since, until, first, last),
            store.optics_thresholds_between(until, first, last))


def _bucket(store: Store, since: datetime, until: datetime, cfg: OpticsSettings, first: str,
            last: str) -> dict[ModuleKey, History]:
    """The fitted histories of the modules of the devices from `first` to `last`."""
    return histories_of(*_reads(store, since=since, until=until, first=first, last=last),
                        since.date(), cfg)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """No cyclic garbage collection meanwhile: a bucket's histories are a million new lists
    and tuples, and each collection walks them all (0.6 s of 4,096 modules' 1.7 s); they hold
    no cycles, and are freed by their counts when the bucket is done."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class PortReader:
    """The histories of the modules read in a port, read from the store when asked (what
    `WatchList.at_port` gives when the list's histories were not kept). `prefetch` reads the
    ports a caller will ask about in one statement each for the readings and the thresholds
    (a report's trace ports: 88 statements of a month's readings were 13 s at 65,536 GPUs)."""

    def __init__(self, store: Store, since: datetime, until: datetime) -> None:
        self.store, self.since, self.until = store, since, until
        self.known: dict[tuple[str, int], list[History]] = {}

    def prefetch(self, ports: list[tuple[str, int]]) -> None:
        asked = sorted(set(ports) - set(self.known))
        if not asked:
            return
        # The same histories `watch_list` builds (a module's history is its own readings
        # only), each kept for the port of its newest placement.
        hs = histories(self.store.optics_daily_at_ports(self.since, self.until, asked),
                       self.store.optics_thresholds_at_ports(self.since, self.until, asked),
                       self.since.date())
        fresh: dict[tuple[str, int], list[History]] = {key: [] for key in asked}
        for h in hs.values():
            guid, port = h.module.guid, h.module.port
            if guid is not None and port is not None and (guid, port) in fresh:
                fresh[(guid, port)].append(h)
        self.known |= fresh

    def __call__(self, guid: str, port: int) -> list[History]:
        self.prefetch([(guid, port)])
        return self.known[(guid, port)]


def port_reader(store: Store, since: datetime, until: datetime) -> PortReader:
    """A `PortReader` of [since, until]."""
    return PortReader(store, since, until)


def watch_list(store: Store, since: datetime, until: datetime, cfg: OpticsSettings | None = None,
               *, peers: Mapping[PortKey, PortKey] | None = None,
               names: dict[str, tuple[str, str]] | None = None,
               bucket: int = BUCKET_MODULES) -> WatchList:
    """The watch list from the readings of [since, until] (naive UTC). `peers` and `names` are
    the store's `port_peers(until)` and `node_names()` when the caller already has them.
    The modules are read and assessed in buckets of about `bucket` modules (whole devices);
    with more than one bucket the list keeps no histories (`at_port` reads a port's)."""
    cfg = cfg or OpticsSettings()
    devices = [(r["device"], r["modules"]) for r in store.optics_modules_per_device(since, until)]
    if not devices:
        return WatchList(since, until, 0, [])
    runs = buckets(devices, bucket)
    peers = store.port_peers(until) if peers is None else peers
    names = store.node_names() if names is None else names
    done = Assessment(cfg, peers, names,
                      store.optics_ports_read(since, until) if len(runs) > 1 else None)
    kept: dict[ModuleKey, History] = {}

    def read(run: tuple[str, str]) -> Future[tuple[list[OpticsModuleRow], dict[str, Any],
                                                   list[OpticsThresholdRow]]]:
        # On a second connection (DuckDB runs without the GIL): the next bucket is read while
        # this one is assessed (inside a transaction, here and now).
        return store.in_background(partial(_reads, since=since, until=until, first=run[0],
                                           last=run[1]))

    pending = read(runs[0])
    with _no_cycle_collection():
        for k in range(len(runs)):
            modules, columns, limits = pending.result()
            if k + 1 < len(runs):
                pending = read(runs[k + 1])
            hs = histories_of(modules, columns, limits, since.date(), cfg)
            del modules, columns, limits
            done.add(hs)
            if len(runs) == 1:
                kept = hs
            del hs
        wl = done.finish(since, until, kept)
    if len(runs) > 1:
        wl.port_histories = port_reader(store, since, until)
    return wl
