"""Transceiver diagnostics trends (issue #14): the watch list.

A laser ages by raising its Tx bias to hold its Tx power, a dirty or cracked fibre takes one
lane's light away, a module runs hot: the diagnostics every module reports (SFF-8636 / CMIS
DDM, read by `ethtool -m`, `mlxlink -m`, the Onyx CLI or SNMP and kept as history in the store)
show it days before the link flaps. From that history and each module's own alarm and warning
thresholds, per module and lane:

- **drift**: a quantity moving toward the module's warning (or, once past it, alarm) threshold,
  with the days until it gets there; a lane already past its warning threshold is watched even
  when it holds still (`past_warning`);
- **siblings**: one lane's Rx power several dB below the module's other lanes;
- **link budget**: the Rx power far below what the peer end sends (its Tx power on the same
  lane), or that loss growing: the peer comes from the topology (the reading's port -> the
  link's other end), so both ends must be read;
- **cohort**: far off the modules of the same part number and firmware (robust z-score);
- **laser ageing**: Tx bias rising while temperature and Vcc hold still.

A threshold a module reports as 0 (stored as null) is no limit. Each rule gives a finding with
one sentence and its numbers, and a strength in 0..1; a lane's findings combine as independent
evidence (1 - product of (1 - s)). The watch list is one entry per module and lane (None: the
module as a whole), strongest first. `auditor.analyse.rank` makes a link a `transceiver`
suspect once the evidence is strong (`Watch.strong`, or a trend on a link that also flapped).

Fits are on daily medians: a sweep may read a module several times a day or skip a day, and
the median keeps one reading taken while the link retrained from steering the day. The line
through them is Theil-Sen (the median of the slopes between every pair of days, the intercept
the median of y - slope x): it ignores up to ~29 % of wild days (a reading of a dark lane while
the peer host rebooted) where least squares follows them; over 30 daily points it is 435
slopes, fitted for every series at once (`fit_all`). The fitted change over the history counts
as a trend when it is `noise_ratio` times the residuals' own scatter (1.4826 x their MAD, a
robust standard deviation) and above a floor per quantity (quantisation and calibration
wobble). "Any trend on a link that flapped" is a watch of at least FLAPPED_MIN (not a lone
cohort outlier).

The list is computed a bucket of whole devices at a time (issue #25: every module's history at
once took more than 9 GB at 65,536 modules x 30 days): a bucket's readings come from the store
as numpy columns, their daily medians, series and fits are laid out in numpy (`histories_of`,
the same histories `histories` and `fit_all` make of DuckDB's own daily medians), and the rules
of one module's own history run there (`Assessment.add`). What needs other modules waits for
the end (`Assessment.finish`): the cohort (a few levels a module) and the link budget (the Rx
and Tx series of the modules whose far end was read).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Final, TypedDict

from auditor.config import OpticsSettings
from auditor.models import (
    OPTICS_BOUNDS,
    OPTICS_QUANTITIES,
    LinkKey,
    PortKey,
    Thresholds,
    plausible,
)
from auditor.store import Store

if TYPE_CHECKING:
    from array import array
    from concurrent.futures import Future

    import numpy.typing as npt

    from auditor.store.rows import OpticsDailyRow, OpticsModuleRow, OpticsThresholdRow

ModuleKey = tuple[str, str, str | None]  # device, port name, serial number

LANE_QUANTITIES: Final = ("tx_bias_ma", "tx_power_dbm", "rx_power_dbm")
MODULE_QUANTITIES: Final = ("temperature_c", "vcc_v")
LABEL = {"temperature_c": "temperature", "vcc_v": "Vcc", "tx_bias_ma": "Tx bias",
         "tx_power_dbm": "Tx power", "rx_power_dbm": "Rx power"}
UNIT = {"temperature_c": "C", "vcc_v": "V", "tx_bias_ma": "mA", "tx_power_dbm": "dBm",
        "rx_power_dbm": "dBm"}
DIGITS = {"temperature_c": 1, "vcc_v": 3, "tx_bias_ma": 2, "tx_power_dbm": 1, "rx_power_dbm": 1}
# 0 mW prints as "-inf dBm"; DDM powers are kept in 0.1 uW steps, so -40 dBm is the darkest
# a module can say and a dark lane is kept at that (far past any alarm), not dropped.
DARK_DBM = -40.0
# The level a lane is at now: the median of its last days, so one reading of a dark lane while
# the peer rebooted does not put it "past its alarm".
RECENT_DAYS = 3
# On a link that flapped, a watch at least this strong (a trend, not a lone cohort outlier)
# is enough for the `transceiver` verdict.
FLAPPED_MIN = 0.4

Series = list[tuple[int, float]]  # (day number from the first day of the window, median)


@dataclass(frozen=True, slots=True)
class Module:
    """One transceiver and its readings over the window."""

    device: str
    port_name: str
    serial_number: str | None
    part_number: str | None
    vendor: str | None
    firmware: str | None
    guid: str | None  # the port the module sits in, when the topology placed the reading
    port: int | None

    @property
    def key(self) -> ModuleKey:
        return (self.device, self.port_name, self.serial_number)


@dataclass(slots=True)
class History:
    """One module's daily medians over the window."""

    module: Module
    start: date  # day 0
    last_at: datetime
    module_series: dict[str, Series] = field(default_factory=dict)
    lanes: dict[int, dict[str, Series]] = field(default_factory=dict)
    thresholds: dict[str, Thresholds] = field(default_factory=dict)
    # Theil-Sen fits of the series above with at least `min_days` days: (lane, quantity), the
    # lane None for temperature and Vcc (`fit_all`).
    fits: dict[tuple[int | None, str], Fit] = field(default_factory=dict)

    # Days with a reading, when whoever built the history counted them (`histories_of`).
    day_count: int | None = field(default=None, compare=False, repr=False)

    @property
    def days(self) -> int:
        """Days with a reading."""
        if self.day_count is not None:
            return self.day_count
        seen = {x for s in self.module_series.values() for x, _ in s}
        seen |= {x for lane in self.lanes.values() for s in lane.values() for x, _ in s}
        return len(seen)

    def series(self, lane: int | None, quantity: str) -> Series:
        if lane is None or quantity in MODULE_QUANTITIES:
            return self.module_series.get(quantity, [])
        return self.lanes.get(lane, {}).get(quantity, [])

    def day(self, x: int) -> date:
        return self.start + timedelta(days=x)

    def fit(self, lane: int | None, quantity: str) -> Fit | None:
        """The stored series' fit (`fit_all`); None for fewer than `min_days` days."""
        return self.fits.get((None if quantity in MODULE_QUANTITIES else lane, quantity))


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule's reason to watch a module."""

    rule: str  # drift, past_warning, siblings, link_budget, cohort, laser_ageing
    quantity: str
    sentence: str
    strength: float
    days_to_threshold: float | None = None
    threshold: str | None = None  # "warning" or "alarm": what days_to_threshold counts to
    trending_past_warning: bool = False  # past its warning and still moving toward the alarm


@dataclass(slots=True)
class Watch:
    """One module and lane on the watch list."""

    module: Module
    lane: int | None
    findings: list[Finding]
    days: int  # days of history behind it
    last_at: datetime
    peer: PortKey | None = None
    peer_name: str | None = None

    @property
    def strength(self) -> float:
        rest = 1.0
        for f in self.findings:
            rest *= 1.0 - f.strength
        return round(1.0 - rest, 2)

    @property
    def top(self) -> Finding:
        return max(self.findings, key=lambda f: (f.strength, f.rule == "drift"))

    @property
    def days_to_threshold(self) -> float | None:
        due = [f.days_to_threshold for f in self.findings if f.days_to_threshold is not None]
        return min(due) if due else None

    @property
    def threshold(self) -> str | None:
        due = [f for f in self.findings if f.days_to_threshold is not None]
        return min(due, key=lambda f: f.days_to_threshold or 0.0).threshold if due else None

    @property
    def trending_past_warning(self) -> bool:
        return any(f.trending_past_warning for f in self.findings)

    def strong(self, cfg: OpticsSettings) -> bool:
        return self.strength >= cfg.strong or self.trending_past_warning

    @property
    def link(self) -> LinkKey | None:
        if self.module.guid is None or self.module.port is None:
            return None
        mine = (self.module.guid, self.module.port)
        return tuple(sorted([mine, self.peer])) if self.peer else (mine,)


@dataclass(slots=True)
class WatchList:
    """The modules to watch, strongest first."""

    since: datetime
    until: datetime
    modules: int  # modules with readings in the window
    watches: list[Watch]  # strongest first
    histories: dict[ModuleKey, History] = field(default_factory=dict)
    # Issue #25: when it was computed (naive UTC; None: just now, by the caller), whether it was
    # read from the stored precomputation (`auditor.analyse.watchlist`), and if not, why not.
    computed_at: datetime | None = None
    precomputed: bool = False
    on_demand_because: str | None = None
    # A precomputed list holds no histories: the report's trend plots read a port's on demand.
    port_histories: Callable[[str, int], list[History]] | None = field(default=None,
                                                                       repr=False)

    def by_link(self) -> dict[LinkKey, list[Watch]]:
        out: dict[LinkKey, list[Watch]] = defaultdict(list)
        for w in self.watches:
            if (link := w.link) is not None:
                out[link].append(w)
        return dict(out)

    def at_port(self, guid: str, port: int | None) -> list[History]:
        """The histories of the modules read in one port (a swap leaves two), newest last."""
        if self.port_histories is not None and port is not None:
            return sorted(self.port_histories(guid, port), key=lambda h: h.last_at)
        found = [h for h in self.histories.values()
                 if h.module.guid == guid and h.module.port == port]
        return sorted(found, key=lambda h: h.last_at)


# --- the fit ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fit:
    """A robust line through daily values."""

    slope: float  # per day
    intercept: float
    noise: float  # robust standard deviation of the residuals
    first_x: int
    last_x: int

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    @property
    def change(self) -> float:
        """The fitted change from the first day to the last."""
        return self.slope * (self.last_x - self.first_x)

    @property
    def span(self) -> int:
        return self.last_x - self.first_x


def median(values: Iterable[float]) -> float:
    """statistics.median's own arithmetic (CPython 3.11-3.13 Lib/statistics.py `median`: the
    middle value, or the mean of the two middle ones), written out: importing statistics costs
    8 ms of every `suspects` (it imports random; issue #13), and calling it 185,000 times over
    4,096 modules' lanes was a fifth of the watch list (issue #25)."""
    data = sorted(values)
    n = len(data)
    if n == 0:
        raise ValueError("no median of no data")
    half = n // 2
    if n % 2 == 1:
        return data[half]
    return (data[half - 1] + data[half]) / 2


def theil_sen(points: Sequence[tuple[int, float]]) -> Fit | None:
    """Theil-Sen line through (day, value) points; None for fewer than two days."""
    if len(points) < 2:
        return None
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points)
              for x2, y2 in points[i + 1:] if x2 != x1]
    if not slopes:
        return None
    slope = median(slopes)
    intercept = median(y - slope * x for x, y in points)
    residuals = [y - (intercept + slope * x) for x, y in points]
    centre = median(residuals)
    noise = 1.4826 * median(abs(r - centre) for r in residuals)
    return Fit(slope, intercept, noise, points[0][0], points[-1][0])


def recent(series: Series, days: int = RECENT_DAYS) -> float | None:
    """The level now: the median of the last `days` daily values."""
    if len(series) >= 3 and days == 3:  # `median` of three, inline: 160,000 calls a bucket
        return sorted((series[-3][1], series[-2][1], series[-1][1]))[1]
    return median(v for _, v in series[-days:]) if series else None


def _floor(quantity: str, cfg: OpticsSettings, base: float) -> float:
    if quantity in ("rx_power_dbm", "tx_power_dbm"):
        return cfg.min_drift_db
    if quantity == "temperature_c":
        return cfg.min_drift_c
    if quantity == "vcc_v":
        return cfg.min_drift_v
    return abs(base) * cfg.min_drift_bias_pct / 100


def significant(fit: Fit | None, quantity: str, cfg: OpticsSettings) -> Fit | None:
    """The fit when it is a trend: a change well above the scatter and above the quantity's
    floor; else None."""
    if fit is None or fit.span <= 0:
        return None
    change = abs(fit.change)
    if change < cfg.noise_ratio * fit.noise or change < _floor(quantity, cfg, fit.at(fit.first_x)):
        return None
    return fit


def trend(series: Series, quantity: str, cfg: OpticsSettings) -> Fit | None:
    """A derived series' trend (a gap, a loss): enough days and `significant`."""
    return significant(theil_sen(series), quantity, cfg) if len(series) >= cfg.min_days else None


def fit_all(hs: Iterable[History], cfg: OpticsSettings) -> None:
    """Every stored series' Theil-Sen fit at once (numpy), into `History.fits`: the same line
    as `theil_sen`, series with the same days as one matrix (a fabric's 100,000 series cost
    1-2 s one by one in Python, a fraction of a second here)."""
    import numpy as np  # only when there are readings: `suspects` does not pay its import

    groups: dict[tuple[int, ...], list[tuple[History, int | None, str, tuple[float, ...]]]] = \
        defaultdict(list)
    least = max(cfg.min_days, 2)
    for h in hs:
        items: list[tuple[int | None, str, Series]] = [
            (None, q, ser) for q, ser in h.module_series.items()]
        items += [(n, q, ser) for n, lane in h.lanes.items() for q, ser in lane.items()]
        for lane_no, q, ser in items:
            if len(ser) >= least:
                xs, ys = zip(*ser, strict=True)  # days and values apart, at C speed
                groups[xs].append((h, lane_no, q, ys))
    for xs, members in groups.items():
        y = np.asarray([m[3] for m in members], dtype=float)
        slopes, intercepts, noises = _fit_rows(xs, y)
        for (h, lane_no, q, _), a, b, e in zip(members, slopes, intercepts, noises, strict=True):
            h.fits[(lane_no, q)] = Fit(a, b, e, xs[0], xs[-1])


def _fit_rows(xs: Sequence[int], y: npt.NDArray[Any]
              ) -> tuple[list[float], list[float], list[float]]:
    """The Theil-Sen line (slope, intercept, noise) through each row of `y`, every row's days
    `xs` (what `fit_all` and `histories_of` share: the same numbers from either)."""
    import numpy as np

    x = np.asarray(xs, dtype=float)
    m = len(xs)
    half = m * (m - 1) // 4  # the middle of the m (m - 1) / 2 pairs' slopes
    slopes: list[float] = []
    intercepts: list[float] = []
    noises: list[float] = []
    for start in range(0, len(y), 4096):  # bounded memory: 4,096 x 435 slopes
        part = y[start:start + 4096]
        # Every pair's slope, the pairs k days of the series apart at a time (slices, not
        # indexing by pair: half the time), then the middle one in place (an odd count, as
        # 30 days' 435 pairs; an even one takes np.median's mean of the middle two, as
        # `median` does).
        pairs = np.empty((len(part), m * (m - 1) // 2))
        at = 0
        for k in range(1, m):
            into = pairs[:, at:at + m - k]
            np.subtract(part[:, k:], part[:, :-k], out=into)
            into /= x[k:] - x[:-k]
            at += m - k
        if pairs.shape[1] % 2:
            pairs.partition(half, axis=1)
            slope = pairs[:, half]
        else:
            slope = np.median(pairs, axis=1)
        intercept = np.median(part - slope[:, None] * x, axis=1)
        resid = part - (intercept[:, None] + slope[:, None] * x)
        centre = np.median(resid, axis=1)
        noise = 1.4826 * np.median(np.abs(resid - centre[:, None]), axis=1)
        slopes += slope.tolist()
        intercepts += intercept.tolist()
        noises += noise.tolist()
    return slopes, intercepts, noises


# --- reading the store ------------------------------------------------------------------------


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


def port_reader(store: Store, since: datetime, until: datetime
                ) -> Callable[[str, int], list[History]]:
    """The histories of the modules read in one port, read from the store when asked (what
    `WatchList.at_port` gives when the list's histories were not kept)."""

    def port_histories(guid: str, port: int) -> list[History]:
        # The same histories `watch_list` builds (a module's history is its own readings
        # only), for the modules whose newest placement is this port.
        hs = histories(store.optics_daily_at_port(since, until, guid, port),
                       store.optics_thresholds_at_port(since, until, guid, port), since.date())
        return [h for h in hs.values() if h.module.guid == guid and h.module.port == port]

    return port_histories


def watch_list(store: Store, since: datetime, until: datetime, cfg: OpticsSettings | None = None,
               *, peers: dict[PortKey, PortKey] | None = None,
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


# --- the rules --------------------------------------------------------------------------------


def _fmt(quantity: str, value: float) -> str:
    return f"{value:.{DIGITS[quantity]}f} {UNIT[quantity]}"


def _what(lane: int | None, quantity: str) -> str:
    return (f"lane {lane} " if lane is not None and quantity in LANE_QUANTITIES else "") + \
        LABEL[quantity]


def _rate(quantity: str, slope: float) -> str:
    word = "rising" if slope > 0 else "falling"
    unit = "dB" if quantity.endswith("_dbm") else UNIT[quantity]
    return f"{word} {abs(slope):.{DIGITS[quantity] + 1}f} {unit}/day"


def _limits(t: Thresholds | None, low: bool) -> list[tuple[str, float]]:
    if t is None:
        return []
    pairs = (("warning", t.low_warning), ("alarm", t.low_alarm)) if low else \
        (("warning", t.high_warning), ("alarm", t.high_alarm))
    return [(name, v) for name, v in pairs if v is not None]


def _past(value: float, limit: float, low: bool) -> bool:
    return value < limit if low else value > limit


def _due(days: float) -> str:
    return "within a day" if days < 1 else f"in about {days:.0f} days"


def _outside(level: float, t: Thresholds) -> bool:
    """Whether a level is past any of the limits (`_past` of each of `_limits`)."""
    return ((t.low_warning is not None and level < t.low_warning)
            or (t.low_alarm is not None and level < t.low_alarm)
            or (t.high_warning is not None and level > t.high_warning)
            or (t.high_alarm is not None and level > t.high_alarm))


def drift(h: History, lane: int | None, quantity: str, cfg: OpticsSettings) -> list[Finding]:
    """Toward the module's own thresholds; past the warning with or without a trend."""
    series = h.series(lane, quantity)
    level = recent(series)
    if level is None:
        return []
    t = h.thresholds.get(quantity)
    fit = significant(h.fit(lane, quantity), quantity, cfg)
    if t is None or (fit is None and not _outside(level, t)):
        return []  # no limits, or no trend and inside them: most series, said quickly
    what = _what(lane, quantity)
    out: list[Finding] = []
    for low in (True, False):
        limits = _limits(t, low)
        if not limits:
            continue
        crossed = [(n, v) for n, v in limits if _past(level, v, low)]
        side = "low" if low else "high"
        moving = fit is not None and (fit.slope < 0 if low else fit.slope > 0)
        if fit is not None and moving:
            now = fit.at(fit.last_x)
            ahead = [(n, v) for n, v in limits if not _past(level, v, low)]
            if not ahead:
                name, v = limits[-1]
                out.append(Finding(
                    "drift", quantity,
                    f"{what} {_fmt(quantity, level)} is past its {side} {name} "
                    f"{_fmt(quantity, v)} and still {_rate(quantity, fit.slope)}",
                    1.0, 0.0, name, trending_past_warning=True))
                continue
            name, v = ahead[0]
            days = max(0.0, (v - now) / fit.slope)
            past_warning = bool(crossed)
            # Past its warning and still going: watched however far the alarm is.
            if days > cfg.horizon_days and not past_warning:
                continue
            strength = 0.9 if past_warning else 0.4 + 0.5 * (1 - days / cfg.horizon_days)
            lead = (f"{what} {_fmt(quantity, level)} is past its {side} warning "
                    f"{_fmt(quantity, crossed[0][1])} and still " if past_warning
                    else f"{what} {_fmt(quantity, level)}, ")
            out.append(Finding(
                "drift", quantity,
                f"{lead}{_rate(quantity, fit.slope)} over {fit.span + 1} days: its {side} "
                f"{name} {_fmt(quantity, v)} {_due(days)}",
                round(strength, 2), round(days, 1), name, trending_past_warning=past_warning))
        elif crossed:
            name, v = crossed[-1]
            out.append(Finding(
                "past_warning", quantity,
                f"{what} {_fmt(quantity, level)} is past its {side} {name} "
                f"{_fmt(quantity, v)} (not moving over {len(series)} days)",
                0.7 if name == "alarm" else 0.5))
    return out


def rx_levels(h: History) -> dict[int, float]:
    """Each lane's Rx power now (`recent`), the lanes that have one."""
    return {n: lv for n, q in h.lanes.items()
            if (lv := recent(q.get("rx_power_dbm", []))) is not None}


def siblings(h: History, lane: int, cfg: OpticsSettings,
             levels: dict[int, float] | None = None) -> list[Finding]:
    """This lane's Rx power several dB below the median of the module's other lanes
    (`levels`: `rx_levels(h)`, when the caller has them)."""
    levels = rx_levels(h) if levels is None else levels
    if lane not in levels or len(levels) < 3:
        return []
    others = median(v for n, v in levels.items() if n != lane)
    gap = others - levels[lane]
    if gap < cfg.sibling_gap_db:
        return []
    strength = min(0.7, 0.3 + 0.1 * (gap - cfg.sibling_gap_db))
    sentence = (f"lane {lane} Rx power {levels[lane]:.1f} dBm is {gap:.1f} dB below the "
                f"module's other lanes (median {others:.1f} dBm)")
    # How the gap moved: day by day against the other lanes of that day.
    by_day: dict[int, dict[int, float]] = defaultdict(dict)
    for n, q in h.lanes.items():
        for x, v in q.get("rx_power_dbm", []):
            by_day[x][n] = v
    gaps = [(x, median(v for n, v in day.items() if n != lane) - day[lane])
            for x, day in sorted(by_day.items()) if lane in day and len(day) >= 3]
    fit = trend(gaps, "rx_power_dbm", cfg)
    if fit is not None and fit.slope > 0:
        sentence += f"; the gap grew {fit.change:.1f} dB in {fit.span + 1} days"
        strength = min(0.8, strength + 0.1)
    return [Finding("siblings", "rx_power_dbm", sentence, round(strength, 2))]


def link_budget(h: History, lane: int, peer: History | None, peer_name: str,
                cfg: OpticsSettings) -> list[Finding]:
    """Rx power against what the far end's module sends on the same lane."""
    if peer is None:
        return []
    rx = dict(h.series(lane, "rx_power_dbm"))
    tx = dict(peer.series(lane, "tx_power_dbm"))
    loss = [(x, tx[x] - rx[x]) for x in sorted(rx) if x in tx]
    now = recent(loss)
    if now is None:
        return []
    sends = recent([(x, tx[x]) for x, _ in loss]) or 0.0
    gets = recent([(x, rx[x]) for x, _ in loss]) or 0.0
    head = (f"lane {lane} receives {gets:.1f} dBm of the {sends:.1f} dBm {peer_name} sends: "
            f"{now:.1f} dB lost on the way")
    if now >= cfg.link_loss_db:
        strength = min(0.7, 0.3 + 0.1 * (now - cfg.link_loss_db))
        return [Finding("link_budget", "rx_power_dbm",
                        f"{head} (more than {cfg.link_loss_db:.1f} dB)", round(strength, 2))]
    fit = trend(loss, "rx_power_dbm", cfg)
    if fit is not None and fit.change >= cfg.link_loss_rise_db:
        return [Finding("link_budget", "rx_power_dbm",
                        f"{head}, up {fit.change:.1f} dB in {fit.span + 1} days", 0.4)]
    return []


def laser_ageing(h: History, lane: int, cfg: OpticsSettings) -> list[Finding]:
    """Tx bias rising while temperature and Vcc hold still: the laser itself."""
    bias = h.series(lane, "tx_bias_ma")
    fit = significant(h.fit(lane, "tx_bias_ma"), "tx_bias_ma", cfg)
    if fit is None or fit.slope <= 0:
        return []
    first = fit.at(fit.first_x)
    rise = 100 * fit.change / first if first > 0 else 0.0
    if rise < cfg.bias_rise_pct:
        return []
    moved: dict[str, float] = {}
    for q in MODULE_QUANTITIES:
        s = [(x, v) for x, v in h.series(None, q) if fit.first_x <= x <= fit.last_x]
        f = theil_sen(s)
        if f is None:
            return []  # without temperature and Vcc the rise cannot be told from warming up
        moved[q] = abs(f.slope * (fit.last_x - fit.first_x))
    if moved["temperature_c"] > cfg.flat_c or moved["vcc_v"] > cfg.flat_v:
        return []
    sentence = (f"lane {lane} Tx bias up {rise:.0f} % ({first:.2f} -> "
                f"{fit.at(fit.last_x):.2f} mA) in {fit.span + 1} days while temperature moved "
                f"{moved['temperature_c']:.1f} C and Vcc {moved['vcc_v']:.3f} V: the laser is "
                "ageing")
    days: float | None = None
    name: str | None = None
    level = recent(bias)
    limits = _limits(h.thresholds.get("tx_bias_ma"), low=False)
    ahead = [(n, v) for n, v in limits if level is not None and not _past(level, v, False)]
    if ahead:
        name, v = ahead[0]
        days = round(max(0.0, (v - fit.at(fit.last_x)) / fit.slope), 1)
        sentence += f"; its high {name} {v:.2f} mA {_due(days)}"
    elif limits:
        name, days = limits[-1][0], 0.0
        sentence += f"; already past its high {name} {limits[-1][1]:.2f} mA"
    strength = min(0.8, 0.4 + rise / 100)
    return [Finding("laser_ageing", "tx_bias_ma", sentence, round(strength, 2), days, name)]


def _centre(population: list[float]) -> tuple[float, float]:
    """Median and robust spread (1.4826 x MAD) of a cohort's values."""
    centre = median(population)
    return centre, 1.4826 * median(abs(v - centre) for v in population)


def _z(value: float, centre: float, spread: float) -> float:
    # A cohort of identical readings has no spread: any difference is "far", the floors of
    # the caller decide.
    if spread > 0:
        return (value - centre) / spread
    return math.copysign(math.inf, value - centre) if value != centre else 0.0


@dataclass(frozen=True, slots=True)
class Levels:
    """What the cohort rule takes from one module: its part, firmware and levels now
    (`recent`): temperature, and each lane's Rx power and Tx bias (None: no reading). A few
    numbers a module, kept while the watch list works through its buckets (issue #25)."""

    key: ModuleKey
    part_number: str | None
    firmware: str | None
    temperature_c: float | None
    lanes: tuple[tuple[int, float | None, float | None], ...]  # lane, Rx power, Tx bias


def levels(h: History) -> Levels:
    return Levels(h.module.key, h.module.part_number, h.module.firmware,
                  recent(h.series(None, "temperature_c")),
                  tuple((n, recent(h.series(n, "rx_power_dbm")),
                         recent(h.series(n, "tx_bias_ma"))) for n in h.lanes))


def peer_outliers(hs: Sequence[History] | Sequence[Levels], cfg: OpticsSettings
                  ) -> dict[tuple[ModuleKey, int | None], list[Finding]]:
    """Each module against its peers, the modules of its part number and firmware:
    temperature hotter, Rx power lower and Tx bias higher than theirs by a robust z-score and a
    floor. (Not analyse/cohorts.py, which counts incidents per part number, vendor or lot.)"""
    groups: dict[tuple[str | None, str | None], list[Levels]] = defaultdict(list)
    for item in hs:
        lv = levels(item) if isinstance(item, History) else item
        if lv.part_number:
            groups[(lv.part_number, lv.firmware)].append(lv)
    out: dict[tuple[ModuleKey, int | None], list[Finding]] = defaultdict(list)
    for (part, firmware), members in groups.items():
        if len(members) < cfg.cohort_min:
            continue
        who = f"{len(members)} {part} modules" + (f" (firmware {firmware})" if firmware else "")
        temps = {m.key: m.temperature_c for m in members if m.temperature_c is not None}
        centre, spread = _centre(list(temps.values())) if temps else (0.0, 0.0)
        for key, value in temps.items():
            z = _z(value, centre, spread)
            if z >= cfg.cohort_z and value - centre >= cfg.cohort_c:
                out[(key, None)].append(_cohort_finding(
                    "temperature_c", f"temperature {value:.1f} C against {centre:.1f} C for the "
                    f"{who}", z, cfg))
        for q, sign, at in (("rx_power_dbm", -1, 1), ("tx_bias_ma", 1, 2)):
            now: dict[tuple[ModuleKey, int], float] = {}
            for m in members:
                for lane in m.lanes:
                    if (level := lane[at]) is not None:
                        now[(m.key, int(lane[0]))] = float(level)
            if len(now) < cfg.cohort_min:
                continue
            centre, spread = _centre(list(now.values()))
            for (key, n), value in now.items():
                z = _z(value, centre, spread)
                far = (centre - value >= cfg.cohort_db if q == "rx_power_dbm" else
                       centre > 0 and 100 * (value - centre) / centre >= cfg.cohort_bias_pct)
                if sign * z >= cfg.cohort_z and far:
                    out[(key, n)].append(_cohort_finding(
                        q, f"lane {n} {LABEL[q]} {_fmt(q, value)} against {_fmt(q, centre)} "
                        f"for the lanes of the {who}", sign * z, cfg))
    return out


def _cohort_finding(quantity: str, text: str, z: float, cfg: OpticsSettings) -> Finding:
    shown = "far" if math.isinf(z) else f"{z:.1f}"
    strength = 0.5 if math.isinf(z) else min(0.5, 0.2 + 0.05 * (z - cfg.cohort_z))
    return Finding("cohort", quantity, f"{text}: {shown} robust sigmas off", round(strength, 2))


@dataclass(slots=True)
class _Pending:
    """One module's findings while the other buckets are assessed: those of its own history
    (before and after the link budget's place, to keep the order of the findings), the link
    budget and the cohort come at the end."""

    module: Module
    days: int
    last_at: datetime
    peer: PortKey | None
    peer_name: str
    own: list[Finding]  # temperature and Vcc
    lanes: list[tuple[int, list[Finding], list[Finding]]]  # lane, drift + siblings, ageing


def _compact(h: History, quantity: str) -> dict[int, tuple[array[int], array[float]]]:
    """One lane quantity of a module's lanes, as days and values (what the link budget
    compares; 300 bytes a series where a list of (day, value) takes 1 kB)."""
    from array import array

    return {n: (array("h", [x for x, _ in ser]), array("d", [v for _, v in ser]))
            for n, lane in h.lanes.items() if (ser := lane.get(quantity))}


def _expand(compact: dict[int, tuple[array[int], array[float]]], quantity: str
            ) -> dict[int, dict[str, Series]]:
    return {n: {quantity: list(zip(xs, vs, strict=True))} for n, (xs, vs) in compact.items()}


class Assessment:
    """The rules over the modules, a bucket of histories at a time (`add`), the watch list at
    the end (`finish`): the drift, siblings and laser ageing of a module need its own history
    only; the cohort needs every module's levels (`Levels`) and the link budget the history of
    the module at the other end of the link, which may be in another bucket (kept as its Rx or
    Tx series when the other end was read: `linked`; None: keep every module's)."""

    def __init__(self, cfg: OpticsSettings, peers: dict[PortKey, PortKey],
                 names: dict[str, tuple[str, str]], linked: set[PortKey] | None = None
                 ) -> None:
        self.cfg, self.peers, self.names, self.linked = cfg, peers, names, linked
        self.modules = 0
        self.pending: dict[ModuleKey, _Pending] = {}
        self.levels: list[Levels] = []
        # The link budget's two sides: a module's Rx series, and the Tx series of the newest
        # module in each port (what `at_port` gives).
        self.rx: dict[ModuleKey, dict[int, tuple[array[int], array[float]]]] = {}
        self.tx_at: dict[PortKey, tuple[datetime, Module, dict[int, tuple[array[int],
                                                                          array[float]]]]] = {}

    def add(self, hs: dict[ModuleKey, History]) -> None:
        """A bucket's histories (fitted: `fit_all`), in the store's order of modules."""
        cfg = self.cfg
        self.modules += len(hs)
        for h in hs.values():
            mine = (h.module.guid, h.module.port) if h.module.guid is not None and \
                h.module.port is not None else None
            peer = self.peers.get(mine) if mine is not None else None
            if mine is not None and peer is not None and (self.linked is None
                                                          or peer in self.linked):
                self.rx[h.module.key] = _compact(h, "rx_power_dbm")
                got = self.tx_at.get(mine)
                if got is None or h.last_at >= got[0]:
                    self.tx_at[mine] = (h.last_at, h.module, _compact(h, "tx_power_dbm"))
            peer_name = (f"{self.names.get(peer[0], (peer[0], ''))[0]} port {peer[1]}"
                         if peer is not None else "")
            own: list[Finding] = []
            for q in MODULE_QUANTITIES:
                own += drift(h, None, q, cfg)
            lanes: list[tuple[int, list[Finding], list[Finding]]] = []
            rx_now = rx_levels(h)
            for lane in sorted(h.lanes):
                before: list[Finding] = []
                for q in LANE_QUANTITIES:
                    before += drift(h, lane, q, cfg)
                before += siblings(h, lane, cfg, rx_now)
                lanes.append((lane, before, laser_ageing(h, lane, cfg)))
            self.pending[h.module.key] = _Pending(h.module, h.days, h.last_at, peer, peer_name,
                                                  own, lanes)
            self.levels.append(levels(h))

    def finish(self, since: datetime, until: datetime,
               hs: dict[ModuleKey, History] | None = None) -> WatchList:
        """The watch list, strongest first (`hs`: the histories it keeps, when it keeps
        them)."""
        cfg = self.cfg
        by_cohort = peer_outliers(self.levels, cfg)
        watches: list[Watch] = []
        for key, p in sorted(self.pending.items(),
                             key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
            found: dict[int | None, list[Finding]] = {None: p.own + by_cohort.get((key, None), [])}
            side = self.tx_at.get(p.peer) if p.peer is not None else None
            mine = theirs = None
            if side is not None:  # else the link budget has nothing to compare
                mine = History(p.module, since.date(), p.last_at,
                               lanes=_expand(self.rx.get(key, {}), "rx_power_dbm"))
                theirs = History(side[1], since.date(), side[0],
                                 lanes=_expand(side[2], "tx_power_dbm"))
            for lane, before, after in p.lanes:
                budget = [] if mine is None else link_budget(mine, lane, theirs, p.peer_name,
                                                             cfg)
                found[lane] = before + budget + after + by_cohort.get((key, lane), [])
            for lane_key, findings in found.items():
                if findings:
                    watches.append(Watch(p.module, lane_key, findings, p.days, p.last_at, p.peer,
                                         p.peer_name or None))
        watches.sort(key=lambda w: (-w.strength, w.days_to_threshold if w.days_to_threshold
                                    is not None else math.inf, w.module.device,
                                    w.module.port_name, w.lane if w.lane is not None else -1))
        return WatchList(since, until, self.modules, watches, hs or {})


def assess(hs: dict[ModuleKey, History], cfg: OpticsSettings, since: datetime, until: datetime,
           peers: dict[PortKey, PortKey], names: dict[str, tuple[str, str]]) -> WatchList:
    """Every rule over every module; the watch list, strongest first."""
    done = Assessment(cfg, peers, names)
    done.add(hs)
    return done.finish(since, until, hs)


# --- what the ranking and the outputs take from it ---------------------------------------------


def where(w: Watch) -> str:
    serial = f", S/N {w.module.serial_number}" if w.module.serial_number else ""
    return f"{w.module.device} {w.module.port_name}{serial}"


def evidence_line(w: Watch) -> str:
    """One evidence sentence of a suspect: where, the lane and the strongest trend."""
    lane = f" lane {w.lane}" if w.lane is not None else ""
    due = (f"; its {w.threshold} threshold {_due(w.days_to_threshold)}"
           if w.days_to_threshold is not None and w.top.days_to_threshold is None else "")
    return (f"optics{lane} of the module in {where(w)}: {w.top.sentence}{due} "
            f"(watch strength {w.strength:.2f}, {w.days} days of diagnostics)")


def action(w: Watch) -> str:
    """What to do about the strongest watch of a link."""
    at = where(w)
    lane = f"lane {w.lane}" if w.lane is not None else "the module"
    rule = w.top.rule
    if rule == "laser_ageing" or w.top.quantity == "tx_bias_ma":
        return (f"Replace the transceiver in {at}: its {lane} laser is ageing (Tx bias "
                "rising); swap it in the next maintenance window, before it flaps.")
    if w.top.quantity in ("temperature_c", "vcc_v"):
        return (f"Check the airflow and the cage at {at}, then replace the transceiver: it "
                f"runs {LABEL[w.top.quantity]} out of line with its part.")
    if w.top.quantity == "rx_power_dbm":
        far = f" at {w.peer_name}" if w.peer_name else " at the far end"
        return (f"Clean both fibre ends of {lane} at {at} and reseat; if its Rx power stays "
                f"low, replace the transceiver{far} (it sends into {lane}), then this one.")
    return f"Replace the transceiver in {at} ({lane}: {w.top.sentence})."


class WatchJSON(TypedDict):
    """One entry of `auditor watch-list --format json` (docs/ranking.md: "Optics watch list")."""

    rank: int
    device: str
    port_name: str
    guid: str | None
    port: int | None
    serial_number: str | None
    part_number: str | None
    vendor: str | None
    firmware: str | None
    lane: int | None
    rule: str
    quantity: str
    trend: str
    days_to_threshold: float | None
    threshold: str | None
    strength: float
    strong: bool
    rules: list[str]
    evidence: list[str]
    peer: str | None
    days: int
    last_read_at: str


def watch_json(rank: int, w: Watch, cfg: OpticsSettings) -> WatchJSON:
    top = w.top
    return {
        "rank": rank, "device": w.module.device, "port_name": w.module.port_name,
        "guid": w.module.guid, "port": w.module.port, "serial_number": w.module.serial_number,
        "part_number": w.module.part_number, "vendor": w.module.vendor,
        "firmware": w.module.firmware, "lane": w.lane, "rule": top.rule,
        "quantity": top.quantity, "trend": top.sentence,
        "days_to_threshold": w.days_to_threshold, "threshold": w.threshold,
        "strength": w.strength, "strong": w.strong(cfg),
        "rules": sorted({f.rule for f in w.findings}),
        "evidence": [f.sentence for f in sorted(w.findings, key=lambda f: -f.strength)],
        "peer": w.peer_name, "days": w.days,
        "last_read_at": w.last_at.isoformat(timespec="seconds") + "Z",
    }


class AgeJSON(TypedDict):
    """How old a watch list is (issue #25): in `watch-list`, `suspects` and report.json."""

    # None: nothing was computed (no readings in the window and none stored, or no correlation)
    watch_list_computed_at: str | None
    watch_list_precomputed: bool
    watch_list_on_demand_because: str | None


def age_json(wl: WatchList | None) -> AgeJSON:
    at = None if wl is None or wl.computed_at is None else wl.computed_at
    return {"watch_list_computed_at": at.isoformat(timespec="seconds") + "Z" if at else None,
            "watch_list_precomputed": bool(wl and wl.precomputed),
            "watch_list_on_demand_because": wl.on_demand_because if wl else None}


def as_json(wl: WatchList, cfg: OpticsSettings) -> dict[str, Any]:
    return {
        "window": {"since": wl.since.isoformat(timespec="seconds") + "Z",
                   "until": wl.until.isoformat(timespec="seconds") + "Z"},
        "modules": wl.modules,
        "watched": len(wl.watches),
        "watch": [watch_json(i, w, cfg) for i, w in enumerate(wl.watches, 1)],
        **age_json(wl),
    }


# --- what the report plots ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Trace:
    """One quantity of one module over its days: every lane (None: the module itself) and the
    module's own limits on the side the quantity fails on."""

    module: Module
    quantity: str
    lanes: dict[int | None, list[tuple[date, float]]]
    warning: float | None
    alarm: float | None
    watched_lane: int | None  # the lane a watch is about, drawn in front
    watched: bool


# Powers fail low, bias and temperature high; Vcc is drawn against its low limits (a sagging
# supply is what fails modules; a high one trips the host's own protection first).
_FAILS_LOW = {"rx_power_dbm": True, "tx_power_dbm": True, "vcc_v": True, "tx_bias_ma": False,
              "temperature_c": False}


def trace(h: History, watches: Sequence[Watch]) -> Trace | None:
    """The quantity to show for a module: what its strongest watch is about, else Rx power."""
    mine = [w for w in watches if w.module.key == h.module.key]
    best = max(mine, key=lambda w: w.strength) if mine else None
    order = [best.top.quantity] if best is not None else []
    order += ["rx_power_dbm", "tx_bias_ma", "temperature_c"]
    for q in order:
        lanes: dict[int | None, list[tuple[date, float]]] = {}
        if q in MODULE_QUANTITIES:
            if h.module_series.get(q):
                lanes[None] = [(h.day(x), v) for x, v in h.module_series[q]]
        else:
            lanes = {n: [(h.day(x), v) for x, v in s[q]]
                     for n, s in sorted(h.lanes.items()) if s.get(q)}
        if not lanes:
            continue
        limits = dict(_limits(h.thresholds.get(q), _FAILS_LOW[q]))
        return Trace(h.module, q, lanes, limits.get("warning"), limits.get("alarm"),
                     best.lane if best is not None and q == best.top.quantity else None,
                     best is not None)
    return None
