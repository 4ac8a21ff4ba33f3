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
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
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
    from auditor.store.rows import OpticsDailyRow, OpticsThresholdRow

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

    @property
    def days(self) -> int:
        """Days with a reading."""
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
        x = np.asarray(xs, dtype=float)
        i, j = np.triu_indices(len(xs), 1)
        dx = x[j] - x[i]
        for start in range(0, len(members), 4096):  # bounded memory: 4,096 x 435 slopes
            part = members[start:start + 4096]
            y = np.asarray([m[3] for m in part], dtype=float)
            slope = np.median((y[:, j] - y[:, i]) / dx, axis=1)
            intercept = np.median(y - slope[:, None] * x, axis=1)
            resid = y - (intercept[:, None] + slope[:, None] * x)
            centre = np.median(resid, axis=1)
            noise = 1.4826 * np.median(np.abs(resid - centre[:, None]), axis=1)
            for (h, lane_no, q, _), a, b, e in zip(part, slope.tolist(), intercept.tolist(),
                                                  noise.tolist(), strict=True):
                h.fits[(lane_no, q)] = Fit(a, b, e, xs[0], xs[-1])


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


def watch_list(store: Store, since: datetime, until: datetime, cfg: OpticsSettings | None = None,
               *, peers: dict[PortKey, PortKey] | None = None,
               names: dict[str, tuple[str, str]] | None = None) -> WatchList:
    """The watch list from the readings of [since, until] (naive UTC). `peers` and `names` are
    the store's `port_peers(until)` and `node_names()` when the caller already has them."""
    cfg = cfg or OpticsSettings()
    # The limits are read meanwhile on a second connection (DuckDB runs without the GIL).
    pending = store.in_background(lambda s: s.optics_thresholds_at(until))
    rows = store.optics_daily(since, until)
    limits = pending.result()
    if not rows:
        return WatchList(since, until, 0, [])
    peers = store.port_peers(until) if peers is None else peers
    names = store.node_names() if names is None else names
    hs = histories(rows, limits, since.date())
    del rows  # the histories hold what the rules need: the rows' lists are most of the peak
    fit_all(hs.values(), cfg)
    return assess(hs, cfg, since, until, peers, names)


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


def drift(h: History, lane: int | None, quantity: str, cfg: OpticsSettings) -> list[Finding]:
    """Toward the module's own thresholds; past the warning with or without a trend."""
    series = h.series(lane, quantity)
    level = recent(series)
    if level is None:
        return []
    t = h.thresholds.get(quantity)
    fit = significant(h.fit(lane, quantity), quantity, cfg)
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


def siblings(h: History, lane: int, cfg: OpticsSettings) -> list[Finding]:
    """This lane's Rx power several dB below the median of the module's other lanes."""
    levels = {n: lv for n, q in h.lanes.items()
              if (lv := recent(q.get("rx_power_dbm", []))) is not None}
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


def peer_outliers(hs: Sequence[History], cfg: OpticsSettings
                  ) -> dict[tuple[ModuleKey, int | None], list[Finding]]:
    """Each module against its peers, the modules of its part number and firmware:
    temperature hotter, Rx power lower and Tx bias higher than theirs by a robust z-score and a
    floor. (Not analyse/cohorts.py, which counts incidents per part number, vendor or lot.)"""
    groups: dict[tuple[str | None, str | None], list[History]] = defaultdict(list)
    for h in hs:
        if h.module.part_number:
            groups[(h.module.part_number, h.module.firmware)].append(h)
    out: dict[tuple[ModuleKey, int | None], list[Finding]] = defaultdict(list)
    for (part, firmware), members in groups.items():
        if len(members) < cfg.cohort_min:
            continue
        who = f"{len(members)} {part} modules" + (f" (firmware {firmware})" if firmware else "")
        temps = {h.module.key: lv for h in members
                 if (lv := recent(h.series(None, "temperature_c"))) is not None}
        centre, spread = _centre(list(temps.values())) if temps else (0.0, 0.0)
        for key, value in temps.items():
            z = _z(value, centre, spread)
            if z >= cfg.cohort_z and value - centre >= cfg.cohort_c:
                out[(key, None)].append(_cohort_finding(
                    "temperature_c", f"temperature {value:.1f} C against {centre:.1f} C for the "
                    f"{who}", z, cfg))
        for q, sign in (("rx_power_dbm", -1), ("tx_bias_ma", 1)):
            levels = {(h.module.key, n): lv for h in members for n in h.lanes
                      if (lv := recent(h.series(n, q))) is not None}
            if len(levels) < cfg.cohort_min:
                continue
            centre, spread = _centre(list(levels.values()))
            for (key, n), value in levels.items():
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


def assess(hs: dict[ModuleKey, History], cfg: OpticsSettings, since: datetime, until: datetime,
           peers: dict[PortKey, PortKey], names: dict[str, tuple[str, str]]) -> WatchList:
    """Every rule over every module; the watch list, strongest first."""
    at_port = {(h.module.guid, h.module.port): h for h in
               sorted(hs.values(), key=lambda h: h.last_at)
               if h.module.guid is not None and h.module.port is not None}
    by_cohort = peer_outliers(list(hs.values()), cfg)
    watches: list[Watch] = []
    for key, h in sorted(hs.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        mine = (h.module.guid, h.module.port) if h.module.guid is not None and \
            h.module.port is not None else None
        peer = peers.get(mine) if mine is not None else None
        peer_h = at_port.get(peer) if peer is not None else None
        peer_name = (f"{names.get(peer[0], (peer[0], ''))[0]} port {peer[1]}"
                     if peer is not None else "")
        found: dict[int | None, list[Finding]] = defaultdict(list)
        for q in MODULE_QUANTITIES:
            found[None] += drift(h, None, q, cfg)
        found[None] += by_cohort.get((key, None), [])
        for lane in sorted(h.lanes):
            for q in LANE_QUANTITIES:
                found[lane] += drift(h, lane, q, cfg)
            found[lane] += siblings(h, lane, cfg)
            found[lane] += link_budget(h, lane, peer_h, peer_name, cfg)
            found[lane] += laser_ageing(h, lane, cfg)
            found[lane] += by_cohort.get((key, lane), [])
        for lane_key, findings in found.items():
            if findings:
                watches.append(Watch(h.module, lane_key, findings, h.days, h.last_at, peer,
                                     peer_name or None))
    watches.sort(key=lambda w: (-w.strength, w.days_to_threshold if w.days_to_threshold
                                is not None else math.inf, w.module.device,
                                w.module.port_name, w.lane if w.lane is not None else -1))
    return WatchList(since, until, len(hs), watches, hs)


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
