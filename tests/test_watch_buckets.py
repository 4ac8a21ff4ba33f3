"""The optics watch list in buckets of devices (issue #25): the daily medians and fits laid out
in numpy are the ones DuckDB's `median` and `fit_all` give, every device falls in exactly one
bucket, and the list is the same whatever the bucket size, also where a rule needs another
bucket's modules (the link budget against the far end, the cohort of a part number)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditor.analyse.optics.fit import fit_all
from auditor.analyse.optics.model import WatchList
from auditor.analyse.optics.read import _bucket, buckets, histories, histories_of, watch_list
from auditor.analyse.optics.rules import Assessment
from auditor.config import OpticsSettings
from auditor.models import LaneReading, OpticsReading, Thresholds
from auditor.store import SourceMeta, Store, utc_naive

START = datetime(2026, 11, 1, 2, 30, tzinfo=UTC)
DAYS = 20
CFG = OpticsSettings()
LIMITS = {  # a Mellanox SR4 module's page 03h (tests/test_optics.py)
    "rx_power_dbm": Thresholds(-13.31, -10.30, 2.40, 5.40),
    "tx_power_dbm": Thresholds(-11.40, -8.40, 2.40, 5.40),
    "tx_bias_ma": Thresholds(5.492, 6.0, 8.0, 8.5),
    "temperature_c": Thresholds(-10.0, 0.0, 70.0, 80.0),
    "vcc_v": Thresholds(3.1, 3.135, 3.465, 3.5),
}
HOSTS = 12
PEERS: dict[tuple[str, int], tuple[str, int]] = {}
for _h in range(HOSTS):
    for _p in (1, 2):
        _host, _switch = (f"0xa{_h:03x}", _p), (f"0xb{_h // 4:03x}", (_h % 4) * 2 + _p)
        PEERS[_host], PEERS[_switch] = _switch, _host
NAMES = {f"0xb{i:03x}": (f"leaf{i:02d}", "switch") for i in range(3)}


def _reading(rng: random.Random, device: str, port_name: str, serial: str | None, day: int,
             kind: str, *, extra: int = 0) -> OpticsReading:
    """One reading of a module of `kind` on `day` (`extra`: a second or third of the day)."""
    lanes = []
    for n in range(1, 5):
        bias = 6.7 + rng.gauss(0.0, 0.02) + (0.09 * day if kind == "ageing" and n == 2 else 0)
        tx: float | None = 0.8 + rng.gauss(0.0, 0.05)
        rx: float | None = -1.4 + rng.gauss(0.0, 0.1)
        if kind == "lossy":  # far below what the far end sends: the link budget
            rx = -7.5 + rng.gauss(0.0, 0.1) - 0.05 * day
        if kind == "weak" and n == 3:  # one lane far below its siblings
            rx = -6.0 + rng.gauss(0.0, 0.1)
        if kind == "odd":  # what a store may hold: no value, NaN, a dark lane, nonsense
            rx = [None, math.nan, -math.inf, 99.0, rx][(day + n) % 5]
            tx = [tx, None, math.inf, tx, -math.inf][(day + 2 * n) % 5]
        lanes.append(LaneReading(n, round(bias, 3), tx if tx is None else round(tx, 2),
                                 rx if rx is None else round(rx, 2)))
    temp = 40.0 + rng.gauss(0.0, 0.4) + (14.0 if kind == "hot" else 0.0)
    limits = dict(LIMITS)
    if kind == "odd" and day > 10:  # the module reports other limits later, one of them none
        limits["rx_power_dbm"] = Thresholds(-14.0, None, 3.0, 5.0)
    return OpticsReading(device, port_name, START + timedelta(days=day, hours=extra * 5),
                         "Mellanox", "MMA1T00-HS", serial, "46.120.0012", round(temp, 2),
                         round(3.29 + rng.gauss(0.0, 0.003), 4),
                         () if kind == "bare" else tuple(lanes), limits)


def _fill(db: Path) -> datetime:
    """Hosts' and switches' modules, both ends of each link read, some of them ailing, some
    read two or three times a day or not every day, one swapped mid-way, one without a serial
    number; the newest read time."""
    rng = random.Random(25)  # noqa: S311 - test data
    kinds = {3: "ageing", 5: "lossy", 7: "weak", 8: "hot", 10: "odd", 11: "bare"}
    newest = START
    with Store(db) as store:
        for day in range(DAYS):
            readings: list[OpticsReading] = []
            placed: list[tuple[str | None, int | None]] = []
            for h in range(HOSTS):
                for p in (1, 2):
                    kind = kinds.get(h, "healthy") if p == 1 else "healthy"
                    serial = None if (h, p) == (0, 2) else f"MT{h:02d}{p}"
                    if (h, p) == (4, 1) and day >= 12:
                        serial = "MT99SWAP"  # the module swapped in that port
                    if (h, p) == (6, 2) and day % 3 == 1:
                        continue  # a day without a reading
                    sw_guid, sw_port = PEERS[(f"0xa{h:03x}", p)]
                    for extra in range(1 + (h == 9) + (h == 9 and day % 2 == 0) + (h == 10)):
                        readings.append(_reading(rng, f"gpu{h:02d}", f"mlx5_{p - 1}/1", serial,
                                                 day, kind, extra=extra))
                        placed.append((f"0xa{h:03x}", p))
                    readings.append(_reading(rng, f"leaf{h // 4:02d}", f"IB1/{sw_port}",
                                             f"SW{h:02d}{p}", day, "healthy"))
                    placed.append((sw_guid, sw_port))
            with store.transaction():
                at = START + timedelta(days=day)
                sid = store.add_source(SourceMeta("ethtool-module", f"day{day}", f"{day:064d}",
                                                  "file", at, True, 0, 0, len(readings)))
                store.add_optics(sid, readings, placed)
            newest = max(newest, *(r.read_at for r in readings))
    return utc_naive(newest)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datetime, datetime]:
    db = tmp_path_factory.mktemp("buckets") / "o.duckdb"
    until = _fill(db)
    return db, until - CFG.history, until


def test_numpy_daily_medians_and_fits_are_duckdbs(fleet: tuple[Path, datetime, datetime]
                                                  ) -> None:
    """`histories_of` (numpy medians, series and fits) against `histories` on DuckDB's own
    daily medians and `fit_all`: every module, series, limit, fit and day count the same."""
    db, since, until = fleet
    with Store(db, read_only=True) as store:
        want = histories(store.optics_daily(since, until), store.optics_thresholds_at(until),
                         since.date())
        fit_all(want.values(), CFG)
        got = histories_of(store.optics_modules_between(since, until, "", "~"),
                           store.optics_lane_days(since, until, "", "~"),
                           store.optics_thresholds_between(until, "", "~"), since.date(), CFG)
    assert list(got) == list(want)  # the same modules in the same order
    for key, h in want.items():
        assert got[key] == h, key  # module, last read, series, lanes, limits, fits
        assert got[key].days == h.days
    # The data exercised what the numpy path must match: days of several readings, NULL,
    # NaN, dark and impossible values, a module without lanes.
    odd = want[("gpu10", "mlx5_0/1", "MT101")]
    assert any(v == -40.0 for lane in odd.lanes.values() for _, v in lane["rx_power_dbm"])
    assert odd.days == DAYS and len(odd.lanes[1]["rx_power_dbm"]) < DAYS
    assert want[("gpu11", "mlx5_0/1", "MT111")].lanes == {}
    assert want[("gpu06", "mlx5_1/1", "MT062")].days < DAYS


@pytest.mark.parametrize("size", [1, 2, 5, 9])
def test_buckets_cover_every_device_once(size: int) -> None:
    rng = random.Random(size)  # noqa: S311 - test data
    devices = [(f"dev{i:03d}", rng.randint(1, 6)) for i in range(40)]
    runs = buckets(devices, size)
    names = [d for d, _ in devices]
    covered: list[str] = []
    for first, last in runs:
        covered += names[names.index(first):names.index(last) + 1]
    assert covered == names  # each device once, in order
    counts = dict(devices)
    for first, last in runs[:-1]:
        assert sum(counts[d] for d in names[names.index(first):names.index(last) + 1]) >= size


def _same(a: WatchList, b: WatchList) -> None:
    assert a.modules == b.modules
    assert a.watches == b.watches  # every module, lane, finding, number and sentence, in order


@pytest.mark.parametrize("size", [1, 2, 3, 7, 10])
def test_the_list_is_the_same_in_buckets(fleet: tuple[Path, datetime, datetime],
                                         size: int) -> None:
    db, since, until = fleet
    with Store(db, read_only=True) as store:
        whole = watch_list(store, since, until, CFG, peers=PEERS, names=NAMES,
                           bucket=1_000_000)
        assert len(buckets([(r["device"], r["modules"]) for r in
                            store.optics_modules_per_device(since, until)], size)) > 1
        parts = watch_list(store, since, until, CFG, peers=PEERS, names=NAMES, bucket=size)
        _same(parts, whole)
        # Without its histories in memory, a port's are read when the report asks.
        assert not parts.histories and whole.histories
        for port in (("0xa004", 1), ("0xa00a", 1), ("0xb001", 4)):
            assert [(h.module, h.module_series, h.lanes) for h in parts.at_port(*port)] == \
                [(h.module, h.module_series, h.lanes) for h in whole.at_port(*port)]
    # Not a trivial list: every rule, the link budget and the cohort across buckets.
    assert whole.modules == HOSTS * 2 * 2 + 1  # the swapped-in module too
    found = {f.rule for w in whole.watches for f in w.findings}
    assert {"drift", "siblings", "link_budget", "cohort", "laser_ageing"} <= found, found
    lossy = [w for w in whole.watches if w.module.device == "gpu05" and w.lane is not None]
    assert lossy and all(w.peer_name == "leaf01 port 3" for w in lossy)


def test_a_lost_or_doubled_bucket_would_show(fleet: tuple[Path, datetime, datetime]) -> None:
    """The comparison above fails when a bucket's modules go missing or count twice."""
    db, since, until = fleet
    with Store(db, read_only=True) as store:
        whole = watch_list(store, since, until, CFG, peers=PEERS, names=NAMES)
        devices = [(r["device"], r["modules"])
                   for r in store.optics_modules_per_device(since, until)]
        runs = buckets(devices, 4)
        for changed in (runs[1:], [*runs, runs[-1]]):
            done = Assessment(CFG, PEERS, NAMES, None)
            for first, last in changed:
                done.add(_bucket(store, since, until, CFG, first, last))
            with pytest.raises(AssertionError):
                _same(done.finish(since, until), whole)
