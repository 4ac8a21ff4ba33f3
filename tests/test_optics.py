"""The optics watch list (issue #14): each trend rule on synthetic histories written through the
store (daily readings of made-up modules), healthy modules beside them that must stay off the
list, zero thresholds as no limit, and the robust fit itself."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditor.analyse.optics.fit import fit_all, theil_sen
from auditor.analyse.optics.model import History, Module, WatchList
from auditor.analyse.optics.read import watch_list
from auditor.config import OpticsSettings
from auditor.models import LaneReading, OpticsReading, Thresholds
from auditor.store import SourceMeta, Store, utc_naive

START = datetime(2026, 11, 1, 2, 30, tzinfo=UTC)
DAYS = 14
# A Mellanox SR4 module's own page 03h limits (a public `ethtool -m` capture of an
# MMA1B00-C100D): low alarm, low warning, high warning, high alarm.
LIMITS = {
    "rx_power_dbm": Thresholds(-13.31, -10.30, 2.40, 5.40),
    "tx_power_dbm": Thresholds(-11.40, -8.40, 2.40, 5.40),
    "tx_bias_ma": Thresholds(5.492, 6.0, 8.0, 8.5),
    "temperature_c": Thresholds(-10.0, 0.0, 70.0, 80.0),
    "vcc_v": Thresholds(3.1, 3.135, 3.465, 3.5),
}
Value = Callable[[int, int], float]  # (day, lane) -> value


def _wobble(day: int, lane: int, size: float) -> float:
    """A deterministic scatter of +-size (no trend), different for each lane and day."""
    return size * (((day * 7 + lane * 3) % 5) - 2) / 2


def module(serial: str, *, device: str = "gpu01", port_name: str = "mlx5_0/1",
           rx: Value | None = None, tx: Value | None = None, bias: Value | None = None,
           temp: Callable[[int], float] | None = None, vcc: Callable[[int], float] | None = None,
           limits: dict[str, Thresholds] | None = None, part: str = "MMA1T00-HS",
           days: int = DAYS) -> list[OpticsReading]:
    """One reading a day of a 4-lane module; healthy values with a small scatter unless told."""
    out = []
    for d in range(days):
        lanes = tuple(LaneReading(
            n,
            tx_bias_ma=bias(d, n) if bias else 6.75 + _wobble(d, n, 0.02),
            tx_power_dbm=tx(d, n) if tx else 0.8 + _wobble(d, n, 0.05),
            rx_power_dbm=rx(d, n) if rx else -1.5 + 0.2 * n + _wobble(d, n, 0.1))
            for n in range(1, 5))
        out.append(OpticsReading(
            device=device, port_name=port_name, read_at=START + timedelta(days=d),
            vendor="Mellanox", part_number=part, serial_number=serial, firmware=None,
            temperature_c=temp(d) if temp else 41.0 + _wobble(d, 0, 0.3),
            vcc_v=vcc(d) if vcc else 3.29 + _wobble(d, 0, 0.002), lanes=lanes,
            thresholds=LIMITS if limits is None else limits))
    return out


def run(tmp_path: Path, readings: list[OpticsReading],
        placed: list[tuple[str | None, int | None]] | None = None,
        peers: dict[tuple[str, int], tuple[str, int]] | None = None,
        cfg: OpticsSettings | None = None, days: int = DAYS) -> WatchList:
    tmp_path.mkdir(parents=True, exist_ok=True)
    with Store(tmp_path / "o.duckdb") as store:
        sid = store.add_source(SourceMeta("ethtool-module", "x", "a" * 64, "file", START, True,
                                          1, 0, len(readings)))
        store.add_optics(sid, readings, placed)
        until = utc_naive(START + timedelta(days=days - 1, hours=1))
        return watch_list(store, until - timedelta(days=30), until, cfg, peers=peers or {},
                          names={"0xb": ("leaf01", "switch")})


def rules(wl: WatchList, serial: str) -> dict[int | None, set[str]]:
    out: dict[int | None, set[str]] = {}
    for w in wl.watches:
        if w.module.serial_number == serial:
            out[w.lane] = {f.rule for f in w.findings}
    return out


def test_healthy_modules_with_scatter_are_not_watched(tmp_path: Path) -> None:
    wl = run(tmp_path, [r for i in range(10) for r in module(f"OK{i}", port_name=f"mlx5_{i}/1")])
    assert wl.modules == 10
    assert wl.watches == []


def test_rx_power_falling_toward_its_low_warning(tmp_path: Path) -> None:
    slope = -0.35  # dB a day on lane 2, from -2 dBm

    def rx(d: int, n: int) -> float:
        return (-2.0 + slope * d if n == 2 else -1.5) + _wobble(d, n, 0.1)

    wl = run(tmp_path, module("SAG", rx=rx) + module("OK", port_name="mlx5_1/1"))
    found = rules(wl, "SAG")
    assert found.keys() == {2} and "drift" in found[2]  # (its siblings say so too by now)
    assert "OK" not in {w.module.serial_number for w in wl.watches}
    w = wl.watches[0]
    assert w.top.rule == "drift"
    level_now = -2.0 + slope * (DAYS - 1)
    expected = (level_now - LIMITS["rx_power_dbm"].low_warning) / -slope  # type: ignore[operator]
    assert w.days_to_threshold == pytest.approx(expected, abs=1.0)
    assert w.threshold == "warning"
    assert "lane 2 Rx power" in w.top.sentence and "low warning -10.3 dBm" in w.top.sentence
    assert 0.4 <= w.strength < 0.9 and not w.trending_past_warning


def test_a_trend_that_reaches_no_threshold_within_the_horizon_is_not_watched(
        tmp_path: Path) -> None:
    def rx(d: int, n: int) -> float:  # 1.3 dB in two weeks: 60 days from the warning
        return -1.5 - 0.1 * d + _wobble(d, n, 0.02)

    assert run(tmp_path, module("SLOW", rx=rx)).watches == []


def test_past_warning_and_still_falling_is_strong(tmp_path: Path) -> None:
    def rx(d: int, n: int) -> float:
        return (-8.0 - 0.3 * d if n == 1 else -1.5) + _wobble(d, n, 0.1)

    wl = run(tmp_path, module("DEEP", rx=rx))
    w = wl.watches[0]
    assert w.lane == 1 and w.trending_past_warning and w.strong(OpticsSettings())
    assert w.threshold == "alarm" and w.days_to_threshold is not None
    assert "past its low warning -10.3 dBm and still falling" in w.top.sentence


def test_past_warning_but_steady_is_watched_not_strong(tmp_path: Path) -> None:
    def rx(d: int, n: int) -> float:  # every lane alike: no sibling stands out
        return -11.0 + _wobble(d, n, 0.05)

    wl = run(tmp_path, module("LOW", rx=rx))
    assert rules(wl, "LOW") == {n: {"past_warning"} for n in range(1, 5)}
    assert not any(w.strong(OpticsSettings()) for w in wl.watches)
    assert "(not moving over 14 days)" in wl.watches[0].top.sentence


def test_zero_thresholds_are_no_limit(tmp_path: Path) -> None:
    """A module that reports 0 for every limit: its falling lanes are watched for nothing but
    what needs no threshold (here: nothing, every lane falls alike)."""
    zero = {q: Thresholds(0.0, 0.0, 0.0, 0.0) for q in LIMITS}

    def rx(d: int, n: int) -> float:
        return -2.0 - 0.6 * d + _wobble(d, n, 0.05)

    assert run(tmp_path, module("ZERO", rx=rx, limits=zero)).watches == []
    # The same readings under real limits are watched: the zeros made the difference.
    assert run(tmp_path / "b", module("REAL", rx=rx)).watches


def test_one_lane_below_its_siblings(tmp_path: Path) -> None:
    def rx(d: int, n: int) -> float:
        return (-5.8 if n == 4 else -1.5) + _wobble(d, n, 0.1)

    def rx_close(d: int, n: int) -> float:
        return (-3.3 if n == 4 else -1.5) + _wobble(d, n, 0.1)

    wl = run(tmp_path, module("GAP", rx=rx) + module("NEAR", port_name="mlx5_1/1", rx=rx_close))
    assert rules(wl, "GAP") == {4: {"siblings"}}
    assert "NEAR" not in {w.module.serial_number for w in wl.watches}
    assert "dB below the module's other lanes (median -1.5 dBm)" in wl.watches[0].top.sentence


def test_a_growing_gap_is_said_and_weighs_more(tmp_path: Path) -> None:
    def rx(d: int, n: int) -> float:
        return (-3.0 - 0.25 * d if n == 4 else -1.5) + _wobble(d, n, 0.05)

    wl = run(tmp_path, module("GROW", rx=rx), cfg=OpticsSettings(horizon_days=1))
    sib = next(f for w in wl.watches for f in w.findings if f.rule == "siblings")
    assert "the gap grew" in sib.sentence


def test_rx_far_below_what_the_peer_sends(tmp_path: Path) -> None:
    """Both ends read: the host's lane 2 gets 7 dB less than the switch end sends on lane 2."""
    def host_rx(d: int, n: int) -> float:
        return (-6.2 if n == 2 else 0.3) + _wobble(d, n, 0.05)

    host = module("HOST", rx=host_rx)
    switch = module("SW", device="leaf01", port_name="IB1/7")
    placed = [("0xa", 1)] * DAYS + [("0xb", 7)] * DAYS
    peers = {("0xa", 1): ("0xb", 7), ("0xb", 7): ("0xa", 1)}
    wl = run(tmp_path, host + switch, placed, peers)
    found = rules(wl, "HOST")
    assert "link_budget" in found[2]
    w = next(w for w in wl.watches if w.module.serial_number == "HOST" and w.lane == 2)
    assert w.link == (("0xa", 1), ("0xb", 7)) and w.peer_name == "leaf01 port 7"
    assert "leaf01 port 7 sends" in next(f.sentence for f in w.findings
                                          if f.rule == "link_budget")
    # Without the peer's readings the same host module gives no link-budget finding.
    alone = run(tmp_path / "b", host, [("0xa", 1)] * DAYS, peers)
    assert all("link_budget" not in r for r in rules(alone, "HOST").values())


def test_hot_module_against_its_cohort(tmp_path: Path) -> None:
    readings = [r for i in range(9) for r in module(f"C{i}", port_name=f"mlx5_{i}/1",
                                                    temp=lambda d, i=i: 38.0 + i * 0.5)]
    readings += module("HOT", port_name="mlx5_9/1", temp=lambda d: 58.0 + 0.05 * d)
    wl = run(tmp_path, readings)
    assert rules(wl, "HOT") == {None: {"cohort"}}
    assert "10 MMA1T00-HS modules" in wl.watches[0].top.sentence
    # Below cohort_min modules, nobody is compared.
    few = run(tmp_path / "b", readings[: 4 * DAYS] + module("HOT", port_name="mlx5_9/1",
                                                            temp=lambda d: 58.0))
    assert few.watches == []


def test_bias_rising_at_flat_temperature_is_laser_ageing(tmp_path: Path) -> None:
    def bias(d: int, n: int) -> float:
        return (6.5 + 0.09 * d if n == 3 else 6.75) + _wobble(d, n, 0.01)

    wl = run(tmp_path, module("AGE", bias=bias))
    found = rules(wl, "AGE")
    assert found.keys() == {3} and "laser_ageing" in found[3]
    ageing = next(f for f in wl.watches[0].findings if f.rule == "laser_ageing")
    assert "the laser is ageing" in ageing.sentence and ageing.days_to_threshold is not None


def test_bias_rising_with_temperature_is_not_laser_ageing(tmp_path: Path) -> None:
    def bias(d: int, n: int) -> float:
        return (6.5 + 0.09 * d if n == 3 else 6.75) + _wobble(d, n, 0.01)

    wl = run(tmp_path, module("WARM", bias=bias, temp=lambda d: 38.0 + 0.7 * d))
    assert all("laser_ageing" not in r for r in rules(wl, "WARM").values())


def test_theil_sen_ignores_a_dark_day_least_squares_would_follow() -> None:
    points = [(d, -2.0 - 0.2 * d) for d in range(12)]
    points[8] = (8, -40.0)  # read while the peer host rebooted
    fit = theil_sen(points)
    assert fit is not None and fit.slope == pytest.approx(-0.2, abs=1e-9)
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    ls = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    assert abs(ls - -0.2) > 0.5  # what a least-squares line would have said


def test_too_few_days_is_no_trend(tmp_path: Path) -> None:
    def rx(d: int, n: int) -> float:  # 0.9 dB a day: the warning within a week
        return -2.0 - 0.9 * d if n == 2 else -1.5

    readings = module("NEW", rx=rx, days=4)
    assert run(tmp_path, readings, days=4).watches == []  # min_days 5
    assert run(tmp_path / "b", readings, days=4, cfg=OpticsSettings(min_days=3)).watches


def test_a_modules_own_quantities_count_days_not_lanes(tmp_path: Path) -> None:
    """Temperature and Vcc come once per reading however many lanes it has: three days of a
    heating module are three points, not twelve."""
    def temp(d: int) -> float:
        return 40.0 + 10.0 * d

    readings = module("HEAT", temp=temp, days=3)
    assert run(tmp_path, readings, days=3, cfg=OpticsSettings(min_days=4)).watches == []
    hot = run(tmp_path / "b", readings, days=3, cfg=OpticsSettings(min_days=3))
    assert rules(hot, "HEAT") == {None: {"drift"}}


def test_the_batch_fit_is_theil_sen() -> None:
    """`fit_all` (numpy, many series at once) draws the line `theil_sen` draws, also for
    series with missing days and different lengths."""
    rng = random.Random(3)  # noqa: S311 - test data
    h = History(Module("d", "p", "s", None, None, None, None, None), START.date(), START)
    for lane in range(1, 30):
        days = sorted(rng.sample(range(30), rng.randint(5, 30)))
        h.lanes[lane] = {"rx_power_dbm": [(x, rng.gauss(-2, 1) - 0.1 * lane * x) for x in days]}
    fit_all([h], OpticsSettings())
    for lane, q in h.lanes.items():
        one = theil_sen(q["rx_power_dbm"])
        batch = h.fits[(lane, "rx_power_dbm")]
        assert one is not None
        assert (batch.first_x, batch.last_x) == (one.first_x, one.last_x)
        for a, b in ((batch.slope, one.slope), (batch.intercept, one.intercept),
                     (batch.noise, one.noise)):
            assert a == pytest.approx(b, abs=1e-9)


def test_a_dark_lane_is_past_its_alarm_not_a_missing_reading(tmp_path: Path) -> None:
    """0 mW (ethtool prints -inf dBm) on the last days: the darkest a module can say, kept as
    -40 dBm, so the lane is past its low alarm; an unknown value (NaN) is no reading."""
    def rx(d: int, n: int) -> float:
        if n == 2 and d >= DAYS - 3:
            return float("-inf")
        return float("nan") if n == 3 and d == 5 else -1.5 + _wobble(d, n, 0.05)

    wl = run(tmp_path, module("DARK", rx=rx))
    lane2 = next(w for w in wl.watches if w.lane == 2)
    assert "Rx power -40.0 dBm is past its low alarm -13.3 dBm" in lane2.top.sentence
    assert 3 not in rules(wl, "DARK")


def test_values_no_module_can_report_are_no_reading_even_when_stored(tmp_path: Path) -> None:
    """Issue #21: the ingest leaves them out; a database written before it (or any other
    writer) may hold them, and the watch list still neither fits nor judges them."""
    broken = dict(LIMITS, tx_bias_ma=Thresholds(5.492, 6.0, 8.0, -1_000_000.0),
                  temperature_c=Thresholds(-10.0, 0.0, 70.0, 1e308))
    hot = module("HOT", temp=lambda d: 1e308 if d % 2 else -273_000.0,
                 vcc=lambda d: -3.3, bias=lambda d, n: -1_000_000.0 if n == 1 else 6.75,
                 rx=lambda d, n: 1e308 if n == 2 else -1.5, limits=broken)
    wl = run(tmp_path, hot)
    assert wl.modules == 1 and wl.watches == []
    (h,) = wl.histories.values()
    assert "temperature_c" not in h.module_series and "vcc_v" not in h.module_series
    assert "rx_power_dbm" not in h.lanes[2] and h.lanes[1]["rx_power_dbm"]
    assert "tx_bias_ma" not in h.lanes[1] and h.lanes[2]["tx_bias_ma"]
    assert h.thresholds["tx_bias_ma"].high_alarm is None
    assert h.thresholds["temperature_c"].high_alarm is None
