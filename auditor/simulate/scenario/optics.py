"""Transceivers that age before they flap (issue #14), and the `ethtool -m` text a nightly sweep
reads from every host HCA port. Only with `Scenario.optics`: without it nothing here is drawn
and the scenario's files are what they always were.

The modules. Every HCA port holds a QSFP56 200G SR4 transceiver (`MMA1T00-HS`: Mellanox's HDR
InfiniBand SR4 part) on its own seeded stream: a temperature, a Vcc, and per lane a Tx bias, a
Tx power and an Rx power, each with its own daily scatter; Tx bias follows temperature (about
0.03 mA/C, a VCSEL's threshold current rises with it). Healthy modules are not perfect, so the
watch list can be wrong: some collect dirt slowly (every lane's Rx power sags up to 1.5 dB over
the window), some have one weak lane (1.5-3.5 dB below the others, steady), some sit where the
airflow changed one day (3-8 C warmer from then on, the bias following).

The ageing ones (`ageing_optics` of them, None: one per 32 host links, at least 3), one kind
each in turn:

- `laser_ageing`: one lane's Tx bias creeps up at flat temperature (the laser's automatic power
  control holds its Tx power) until it is past the module's high alarm;
- `rx_sag`: one lane's Rx power sinks (a fibre or connector going bad) to about the module's
  low warning;
- `hot_module`: the module heats up past its high warning (a failing fan, a blocked cage).

Ageing starts 1 day or more into the window and runs 6-12 days, accelerating (progress ^ 1.5),
to the level where the link starts to flap: 2-6 flaps of 2-40 s from then to the window's end,
on the host link (`BadCable` fault `ageing_optics`, cause `transceiver`, and an `AgeingOptic`
with the module and its first flap time in truth.json).

The text: `ethtool -m <netdev>` as ethtool 6.1 (Debian 12's) prints an SFF-8636 module with
page 03h: the layout, labels and number formats of its qsfp.c and sff-common.c (`%-41s`, bias
in 2 uA units as `%.3f mA`, powers in 0.1 uW units as `%.4f mW / %.2f dBm`, temperature in
1/256 C, Vcc in 100 uV), the alarm/warning flags from the values against the limits, then the
limits. Values are kept in those register units, so what the text says is exactly what a real
module could report. The limits are the page 03h of a real Mellanox SR4 module (a public
`ethtool -m` capture of an MMA1B00-C100D: bias warning 6.0-8.0 mA, alarm 5.492-8.5 mA; Rx
warning -10.30/2.40 dBm, alarm -13.31/5.40 dBm; ...): the HDR part's own we have not seen. The
header says what an HDR SR4 module's page 00h holds (identifier 0x11, PAM4, SFF-8024
extended compliance 0x41 "200GBASE-SR4", power class 6).

One file per host port and day, read at about 02:30 UTC (the nightly sweep):
`optics/<host>/<mlx5_N>-<YYYYMMDDTHHMMSSZ>.txt`, the read time in the name and as the file's
modification time (what `auditor ingest --kind ethtool-module --host <host> --port
<mlx5_N>/1` takes as the read time).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import date

from auditor.simulate.scenario.clock import _Clock, _iso
from auditor.simulate.scenario.fabric import _build_fabric, _Fabric, _guid
from auditor.simulate.scenario.faults import _Flap, _Plan, _plan_faults, _port_keys, _spaced_times
from auditor.simulate.scenario.options import FAULT_AGEING, Scenario
from auditor.simulate.scenario.truth import AgeingOptic

KINDS = ("laser_ageing", "rx_sag", "hot_module")
DAY = 86400.0
READ_AT = 2.5 * 3600.0  # the nightly sweep's hour (02:30 UTC) ...
READ_SPREAD = 600.0  # ... give or take the time it takes to reach every host
MIN_DAYS = 8.0  # a week of history before the first flap, at least

PART = "MMA1T00-HS"
# Register units (SFF-8636): bias 2 uA, power 0.1 uW, temperature 1/256 C, Vcc 100 uV. The limits
# of a real Mellanox SR4 module's page 03h: high alarm, low alarm, high warning, low warning.
LIMITS = {
    "bias": (4250, 2746, 4000, 3000),
    "tx": (34673, 724, 17378, 1445),
    "temp": (80 * 256, -10 * 256, 70 * 256, 0),
    "vcc": (35000, 31000, 34650, 31350),
    "rx": (34673, 467, 17378, 933),
}
BIAS_PER_C = 0.03  # mA per C of module temperature


def _mw_raw(dbm: float) -> int:
    return max(0, min(65535, round(10 ** (dbm / 10) * 10000)))


def _ma_raw(ma: float) -> int:
    return max(0, min(65535, round(ma * 500)))


@dataclass(slots=True)
class _Ageing:
    kind: str
    lane: int | None  # 1-based; None: the whole module (hot_module)
    onset: float  # seconds into the window
    first_flap: float
    level: float  # where the aged quantity is at the first flap (mA, dBm or C)


@dataclass(slots=True)
class _Module:
    hca: int
    serial: str
    date_code: str
    temp0: float
    vcc0: float
    bias0: list[float]
    tx0: list[float]
    rx0: list[float]
    rx_dirt: float = 0.0  # healthy: dB every lane loses over the whole window
    weak_lane: int | None = None
    weak_db: float = 0.0
    warm_at: float | None = None  # healthy: airflow changed at this time ...
    warm_c: float = 0.0  # ... and the module runs this much warmer since
    ageing: _Ageing | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """One module read at one moment, in register units (what `ethtool -m` prints)."""

    host: str
    device: str  # mlx5_N
    hca: int
    node_guid: str  # the HCA's, whose port 1 the module sits in
    at: float  # seconds into the window
    serial: str
    date_code: str
    temp: int  # 1/256 C
    vcc: int  # 100 uV
    bias: tuple[int, ...]  # 2 uA, lanes 1-4
    tx: tuple[int, ...]  # 0.1 uW
    rx: tuple[int, ...]


@dataclass(slots=True)
class _Optics:
    modules: list[_Module] = field(default_factory=list)


def plan_ageing(sc: Scenario, fab: _Fabric, plan: _Plan, rng: random.Random) -> _Optics:
    """Every host port's module, and the ageing ones with their flaps added to `plan` (so the
    switch log, the counters and the jobs see them)."""
    total = sc.days * DAY
    if total < MIN_DAYS * DAY:
        raise ValueError(f"optics needs days >= {MIN_DAYS:.0f} (a week of history before the "
                         "first flap)")
    out = _Optics()
    for i in range(len(fab.hcas)):
        # One stream per module: its values do not move when another module's draws change.
        rng_m = random.Random(f"{sc.seed}:optics-module:{i}")  # noqa: S311 - synthetic data
        out.modules.append(_healthy(sc, i, rng_m))
    taken = {f.link for f in plan.flaps} | {b[0] for b in plan.bad}
    taken |= {i for _, _, _, links in plan.reboots for i in links}
    free = [c for c in range(len(fab.hcas)) if fab.hca_link[c] not in taken]
    n = sc.ageing_optics if sc.ageing_optics is not None else max(3, sc.host_links // 32)
    if n > len(free):
        raise ValueError("not enough healthy host links for the ageing optics")
    kinds = list(KINDS)
    rng.shuffle(kinds)
    for k, hca in enumerate(sorted(rng.sample(free, n))):
        m = out.modules[hca]
        kind = kinds[k % len(kinds)]
        span = rng.uniform(6.0, 12.0) * DAY
        onset = rng.uniform(DAY, max(DAY, total - 0.75 * DAY - span))
        first = min(onset + span, total - 0.75 * DAY)
        lane = None if kind == "hot_module" else rng.randint(1, 4)
        # Where it flaps: the bias past the module's high alarm, the Rx power about its low
        # warning (a PAM4 receiver runs out of margin there), the module past its high warning.
        level = {"laser_ageing": LIMITS["bias"][0] / 500 + rng.uniform(0.05, 0.4),
                 "rx_sag": rng.uniform(-10.8, -9.6),
                 "hot_module": rng.uniform(71.0, 77.0)}[kind]
        m.ageing = _Ageing(kind, lane, onset, first, level)
        # Its healthy imperfections would blur what it is dying of: it has none.
        m.rx_dirt, m.weak_lane, m.weak_db, m.warm_at, m.warm_c = 0.0, None, 0.0, None, 0.0
        link = fab.hca_link[hca]
        count = rng.randint(2, 6)
        room = total - 900.0 - first
        times = [first] + (_spaced_times(rng, count - 1, first + 600.0, first + room, 600.0)
                           if room > 600.0 * count else [])
        flaps = []
        for t in times:
            f = _Flap(link, t, t + rng.uniform(2.0, 40.0), FAULT_AGEING)
            flaps.append(f)
            plan.flaps.append(f)
            for key in _port_keys(fab, link):
                plan.port(key).downs.append(t)
        plan.bad.append((link, FAULT_AGEING, "transceiver", flaps, (), None))
    plan.flaps.sort(key=lambda f: (f.down, f.link))
    return out


def _healthy(sc: Scenario, hca: int, rng: random.Random) -> _Module:
    year = sc.start.year - rng.randint(1, 3)
    week = rng.randint(1, 52)
    made = date.fromisocalendar(year, week, 3)  # Mellanox serials say year and week: MTyyww
    m = _Module(
        hca=hca, serial=f"MT{year % 100:02d}{week:02d}FT{rng.randint(0, 99999):05d}",
        date_code=f"{made:%y%m%d}",
        temp0=rng.uniform(36.0, 48.0), vcc0=rng.uniform(3.26, 3.32),
        bias0=[min(7.2, max(6.3, rng.gauss(6.75, 0.12))) for _ in range(4)],
        tx0=[rng.gauss(0.8, 0.3) for _ in range(4)], rx0=[])
    # What arrives: the far end's Tx (about the same as this one's) less 0.5-1.8 dB of fibre
    # and connectors, read through this module's own calibration (+-0.5 dB).
    calibration = rng.gauss(0.0, 0.5)
    m.rx0 = [rng.gauss(0.8, 0.3) - rng.uniform(0.5, 1.8) + calibration for _ in range(4)]
    total = sc.days * DAY
    draw = rng.random()
    if draw < 0.08:
        m.rx_dirt = rng.uniform(0.3, 1.5)
    elif draw < 0.13:
        m.weak_lane, m.weak_db = rng.randint(1, 4), rng.uniform(1.5, 3.5)
    elif draw < 0.18:
        m.warm_at, m.warm_c = rng.uniform(0.0, total), rng.uniform(3.0, 8.0)
    return m


def _progress(a: _Ageing, t: float) -> float:
    """0 before the onset, 1 at the first flap, accelerating between (and beyond)."""
    if t <= a.onset:
        return 0.0
    done: float = ((t - a.onset) / (a.first_flap - a.onset)) ** 1.5
    return done


def read(sc: Scenario, fab: _Fabric, m: _Module, t: float, rng: random.Random) -> Reading:
    """The module as read at `t` (seconds into the window): values plus the day's scatter."""
    total = sc.days * DAY
    a = m.ageing
    p = _progress(a, t) if a is not None else 0.0
    temp = m.temp0 + rng.gauss(0.0, 0.35)
    if m.warm_at is not None and t >= m.warm_at:
        temp += m.warm_c
    if a is not None and a.kind == "hot_module":
        temp += (a.level - m.temp0) * p
    vcc = m.vcc0 + rng.gauss(0.0, 0.002)
    bias, tx, rx = [], [], []
    for n in range(1, 5):
        b = m.bias0[n - 1] + BIAS_PER_C * (temp - m.temp0) + rng.gauss(0.0, 0.015)
        if a is not None and a.kind == "laser_ageing" and a.lane == n:
            b += (a.level - m.bias0[n - 1]) * p
        bias.append(_ma_raw(b))
        tx.append(_mw_raw(m.tx0[n - 1] + rng.gauss(0.0, 0.04)))
        r = m.rx0[n - 1] + rng.gauss(0.0, 0.08) - m.rx_dirt * t / total
        if m.weak_lane == n:
            r -= m.weak_db
        if a is not None and a.kind == "rx_sag" and a.lane == n:
            r += (a.level - m.rx0[n - 1]) * p
        rx.append(_mw_raw(r))
    h = fab.hcas[m.hca]
    return Reading(fab.hosts[h.host], h.device, m.hca, _guid(h.guid), t, m.serial, m.date_code,
                   round(temp * 256), max(0, round(vcc * 10000)), tuple(bias), tuple(tx),
                   tuple(rx))


def readings(sc: Scenario, fab: _Fabric, optics: _Optics) -> list[Reading]:
    """Every module once a day at the nightly sweep's time, host by host."""
    total = sc.days * DAY
    out = []
    for m in optics.modules:
        rng = random.Random(f"{sc.seed}:optics-reading:{m.hca}")  # noqa: S311 - synthetic data
        day = 0
        while (t := day * DAY + READ_AT + rng.uniform(0.0, READ_SPREAD)) < total:
            out.append(read(sc, fab, m, t, rng))
            day += 1
    return out


def history(sc: Scenario) -> list[Reading]:
    """Every reading `write_scenario(sc)` writes as `ethtool -m` text, as numbers: the same
    streams drawn again (what a test holds the parsed text to)."""
    def rng_for(part: str) -> random.Random:  # as write_scenario names its streams
        return random.Random(f"{sc.seed}:{part}")  # noqa: S311 - synthetic data

    fab = _build_fabric(sc, rng_for("fabric"))
    plan = _plan_faults(sc, fab, rng_for("faults"))
    return readings(sc, fab, plan_ageing(sc, fab, plan, rng_for("optics")))


def truth(fab: _Fabric, optics: _Optics, plan: _Plan, clock: _Clock) -> tuple[AgeingOptic, ...]:
    flaps = {b[0]: b[3] for b in plan.bad if b[1] == FAULT_AGEING}
    out = []
    for m in optics.modules:
        a = m.ageing
        if a is None:
            continue
        h = fab.hcas[m.hca]
        link = fab.hca_link[m.hca]
        out.append(AgeingOptic(
            link=fab.link_id(link), host=fab.hosts[h.host], device=h.device,
            port_name=f"{h.device}/1", serial_number=m.serial, part_number=PART, kind=a.kind,
            lane=a.lane, onset=clock.at(a.onset), first_flap=clock.at(a.first_flap),
            flaps=len(flaps[link]), ends=fab.ends(link)))
    return tuple(out)


# --------------------------------------------------------------------------- ethtool -m


def _line(name: str, value: str) -> str:
    return f"\t{name:<41} : {value}\n"


def _power(raw: int) -> str:
    mw = raw / 10000.0
    # ethtool's convert_mw_to_dbm: 10 log10(mW / 1000) + 30; 0 mW prints as -inf
    dbm = 10.0 * math.log10(mw / 1000.0) + 30.0 if raw else -math.inf
    return f"{mw:.4f} mW / {dbm:.2f} dBm"


def _bias(raw: int) -> str:
    return f"{raw / 500.0:.3f} mA"


def _temp(raw: int) -> str:
    return f"{raw / 256.0:.2f} degrees C / {raw / 256.0 * 1.8 + 32.0:.2f} degrees F"


def _vcc(raw: int) -> str:
    return f"{raw / 10000.0:.4f} V"


def _onoff(on: bool) -> str:
    return "On" if on else "Off"


_HEADER = (
    ("Identifier", "0x11 (QSFP28)"),
    ("Extended identifier", "0xce"),
    ("Extended identifier description", "3.5W max. Power consumption"),
    ("Extended identifier description", "CDR present in TX, CDR present in RX"),
    ("Extended identifier description",
     "4.5W max. Power consumption,  High Power Class (> 3.5 W) enabled"),
    ("Power set", "Off"),
    ("Power override", "On"),
    ("Connector", "0x0c (MPO Parallel Optic)"),
    ("Transceiver codes", "0x80 0x00 0x00 0x00 0x00 0x00 0x00 0x00"),
    ("Transceiver type", "50GBASE-SR, 100GBASE-SR2, or 200GBASE-SR4"),
    ("Encoding", "0x08 (PAM4)"),
    ("BR, Nominal", "25500Mbps"),
    ("Rate identifier", "0x00"),
    ("Length (SMF,km)", "0km"),
    ("Length (OM3 50um)", "70m"),
    ("Length (OM2 50um)", "0m"),
    ("Length (OM1 62.5um)", "0m"),
    ("Length (Copper or Active cable)", "50m"),
    ("Transmitter technology", "0x00 (850 nm VCSEL)"),
    ("Laser wavelength", "850.000nm"),
    ("Laser wavelength tolerance", "15.000nm"),
    ("Vendor name", "Mellanox"),
    ("Vendor OUI", "00:02:c9"),
    ("Vendor PN", PART),
    ("Vendor rev", "A2"),
)


def _flags(value: int, limits: tuple[int, int, int, int]) -> tuple[bool, bool, bool, bool]:
    """high alarm, low alarm, high warning, low warning, as the module sets them."""
    ha, la, hw, lw = limits
    return value > ha, value < la, value > hw, value < lw


def ethtool_m(r: Reading) -> str:
    """`ethtool -m` of one reading, as ethtool 6.1 prints an SFF-8636 module with page 03h."""
    out = [_line(k, v) for k, v in _HEADER]
    out += [_line("Vendor SN", r.serial), _line("Date code", r.date_code),
            _line("Revision Compliance", "SFF-8636 Rev 2.5/2.6/2.7"),
            _line("Module temperature", _temp(r.temp)), _line("Module voltage", _vcc(r.vcc)),
            _line("Alarm/warning flags implemented", "Yes")]
    out += [_line(f"Laser tx bias current (Channel {n})", _bias(v))
            for n, v in enumerate(r.bias, 1)]
    out += [_line(f"Transmit avg optical power (Channel {n})", _power(v))
            for n, v in enumerate(r.tx, 1)]
    out += [_line(f"Rcvr signal avg optical power(Channel {n})", _power(v))
            for n, v in enumerate(r.rx, 1)]
    kinds = ("high alarm   ", "low alarm    ", "high warning ", "low warning  ")
    for n, v in enumerate(r.bias, 1):
        out += [_line(f"Laser bias current {k}(Chan {n})", _onoff(on))
                for k, on in zip(kinds, _flags(v, LIMITS["bias"]), strict=True)]
    for name, v, key in (("Module temperature", r.temp, "temp"), ("Module voltage", r.vcc, "vcc")):
        out += [_line(f"{name} {k.strip()}", _onoff(on))
                for k, on in zip(kinds, _flags(v, LIMITS[key]), strict=True)]
    for word, values, key in (("tx", r.tx, "tx"), ("rx", r.rx, "rx")):
        for n, v in enumerate(values, 1):
            out += [_line(f"Laser {word} power {k}(Channel {n})", _onoff(on))
                    for k, on in zip(kinds, _flags(v, LIMITS[key]), strict=True)]
    order = ("high alarm", "low alarm", "high warning", "low warning")
    for label, key, fmt in (("Laser bias current", "bias", _bias),
                            ("Laser output power", "tx", _power),
                            ("Module temperature", "temp", _temp),
                            ("Module voltage", "vcc", _vcc),
                            ("Laser rx power", "rx", _power)):
        out += [_line(f"{label} {o} threshold", fmt(v))
                for o, v in zip(order, LIMITS[key], strict=True)]
    return "".join(out)


def file_name(r: Reading, clock: _Clock) -> str:
    stamp = _iso(clock.at(r.at)).split(".")[0].replace("-", "").replace(":", "")
    return f"optics/{r.host}/{r.device}-{stamp}Z.txt"
