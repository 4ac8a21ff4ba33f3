"""The watch list's records: a module, its history, a finding, a watch, the list; and the
fitted line (the package's docstring says what the watch list is)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Final, Protocol

from auditor.config import OpticsSettings
from auditor.models import (
    LinkKey,
    PortKey,
    Thresholds,
)

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


class PortHistories(Protocol):
    """Reads the histories of the modules read in a port (`optics.read.PortReader`)."""

    def __call__(self, guid: str, port: int) -> list[History]: ...

    def prefetch(self, ports: list[tuple[str, int]]) -> None: ...


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
    port_histories: PortHistories | None = field(default=None, repr=False)

    def by_link(self) -> dict[LinkKey, list[Watch]]:
        out: dict[LinkKey, list[Watch]] = defaultdict(list)
        for w in self.watches:
            if (link := w.link) is not None:
                out[link].append(w)
        return dict(out)

    def prefetch_ports(self, ports: list[tuple[str, int]]) -> None:
        """Read the histories of `ports` at once, before `at_port` asks for each."""
        if self.port_histories is not None:
            self.port_histories.prefetch(ports)

    def at_port(self, guid: str, port: int | None) -> list[History]:
        """The histories of the modules read in one port (a swap leaves two), newest last."""
        if self.port_histories is not None and port is not None:
            return sorted(self.port_histories(guid, port), key=lambda h: h.last_at)
        found = [h for h in self.histories.values()
                 if h.module.guid == guid and h.module.port == port]
        return sorted(found, key=lambda h: h.last_at)




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
