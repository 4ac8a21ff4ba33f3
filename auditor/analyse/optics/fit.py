"""The fit: Theil-Sen lines through daily medians, and when one is a trend."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from auditor.analyse.optics.model import RECENT_DAYS, Fit, History, Series
from auditor.config import OpticsSettings

if TYPE_CHECKING:

    import numpy.typing as npt



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
