"""The rules: drift, siblings, link budget, laser ageing, cohort; `Assessment` runs them a
bucket at a time and decides what needs other modules at the end."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from auditor.analyse.optics.fit import median, recent, significant, theil_sen, trend
from auditor.analyse.optics.model import (
    DIGITS,
    LABEL,
    LANE_QUANTITIES,
    MODULE_QUANTITIES,
    UNIT,
    Finding,
    History,
    Module,
    ModuleKey,
    Series,
    Watch,
    WatchList,
)
from auditor.config import OpticsSettings
from auditor.models import (
    PortKey,
    Thresholds,
)

if TYPE_CHECKING:
    from array import array




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

    def __init__(self, cfg: OpticsSettings, peers: Mapping[PortKey, PortKey],
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
           peers: Mapping[PortKey, PortKey], names: dict[str, tuple[str, str]]) -> WatchList:
    """Every rule over every module; the watch list, strongest first."""
    done = Assessment(cfg, peers, names)
    done.add(hs)
    return done.finish(since, until, hs)
