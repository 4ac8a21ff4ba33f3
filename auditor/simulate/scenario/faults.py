"""Fault model (counts left at None scale with the fabric; every fault sits on its own link(s)):

- frequent_flaps: a bad cable with 4-9 flaps of 2-40 s.
- rare_long_flaps: a bad cable with 1-2 flaps of 60-600 s.
- symbol_errors: SymbolErrorCounter rising (accelerating) from an onset, with 0-2 short flaps;
  on both ends (cause "cable") or on one end only (cause "transceiver").
- switch_reboot: every port of one switch goes down within 2 s and comes back 2-4 min later; the
  switch's counters restart from 0.
- maintenance: a re-imaged host (a declared window in maintenance.csv) reboots 3-6 times; every
  HCA link of it flaps and its HCA counters restart from 0 at each boot; jobs avoid it (drained).
- reseat: one flap shorter than 5 s on an otherwise healthy link (harmless).
- Background that is not a fault: constant old LinkDownedCounter / SymbolErrorCounter values and
  slowly rising PortXmitDiscards (congestion) on a few healthy ports.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from auditor.simulate.scenario.fabric import _Fabric
from auditor.simulate.scenario.options import (
    CAUSE_MAINTENANCE,
    CAUSE_REBOOT,
    CAUSE_RESEAT,
    FAULT_FREQUENT,
    FAULT_RARE,
    FAULT_SYMBOL,
    Scenario,
)

# ibqueryerrors prints counters in this order; widths per IBTA PortCounters.
_COUNTERS: tuple[tuple[str, int], ...] = (
    ("SymbolErrorCounter", 0xFFFF),
    ("LinkErrorRecoveryCounter", 0xFF),
    ("LinkDownedCounter", 0xFF),
    ("PortRcvErrors", 0xFFFF),
    ("PortXmitDiscards", 0xFFFF),
)


@dataclass(slots=True)
class _Flap:
    link: int
    down: float  # seconds after the window start, physical time
    up: float
    cause: str


@dataclass(slots=True)
class _SymbolFault:
    onset: float
    rate_h: float  # errors per hour at onset
    accel_h2: float  # errors per hour^2: a degrading optic gets worse

    def errors(self, t: float) -> float:
        if t <= self.onset:
            return 0.0
        h = (t - self.onset) / 3600.0
        return self.rate_h * h + self.accel_h2 * h * h


@dataclass(slots=True)
class _PortCounters:
    baseline: dict[str, int] = field(default_factory=dict)  # from before the window
    downs: list[float] = field(default_factory=list)
    symbol: _SymbolFault | None = None
    discards_h: float = 0.0


_PortKey = tuple[str, int, int]  # ("S", switch, port) or ("H", hca, 1)
_NodeKey = tuple[str, int]


@dataclass(slots=True)
class _Plan:
    flaps: list[_Flap] = field(default_factory=list)
    bad: list[tuple[int, str, str, list[_Flap], tuple[int, ...], float | None]] = field(
        default_factory=list)  # link, fault, cause, flaps, symbol ends, onset
    reboots: list[tuple[int, float, float, list[int]]] = field(default_factory=list)
    maintenance: list[tuple[int, float, float, list[_Flap]]] = field(default_factory=list)
    reseats: list[_Flap] = field(default_factory=list)
    ports: dict[_PortKey, _PortCounters] = field(default_factory=dict)
    resets: dict[_NodeKey, list[float]] = field(default_factory=dict)
    harmless: list[tuple[int, str, list[_Flap]]] = field(default_factory=list)  # link, cause
    # stalls of `silent_uplink`: they kill like flaps but no switch logs them, no counter
    # moves and the SM never hears of them, so they are not in `flaps`
    silent: list[_Flap] = field(default_factory=list)

    def port(self, key: _PortKey) -> _PortCounters:
        pc = self.ports.get(key)
        if pc is None:
            pc = self.ports[key] = _PortCounters()
        return pc


def _port_keys(fab: _Fabric, i: int) -> list[_PortKey]:
    lk = fab.links[i]
    keys: list[_PortKey] = [("S", lk.leaf, lk.leaf_port)]
    if lk.hca is not None:
        keys.insert(0, ("H", lk.hca, 1))
    else:
        assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
        keys.append(("S", lk.spine, lk.spine_port))
    return keys


def _spaced_times(rng: random.Random, n: int, lo: float, hi: float, gap: float) -> list[float]:
    """n sorted times in [lo, hi] at least `gap` apart (the span must allow it)."""
    span = hi - lo - gap * (n - 1)
    if span <= 0:
        raise ValueError("window too short for the requested faults")
    raw = sorted(rng.uniform(0, span) for _ in range(n))
    return [lo + t + gap * k for k, t in enumerate(raw)]


def _plan_faults(sc: Scenario, fab: _Fabric, rng: random.Random) -> _Plan:
    plan = _Plan()
    total = sc.days * 86400.0
    lo, hi = 600.0, total - 900.0  # keep every flap (and its up line) inside the window
    counts = sc.fault_counts()
    used: set[int] = set()

    def add(link: int, down: float, dur: float, cause: str) -> _Flap:
        f = _Flap(link, down, down + dur, cause)
        plan.flaps.append(f)
        for key in _port_keys(fab, link):
            plan.port(key).downs.append(down)
        return f

    # Switch reboots first: their links and hosts are then off limits for the other faults, so
    # every fault in the truth is separable.
    rebooted = rng.sample(range(len(fab.switches)), counts[CAUSE_REBOOT])
    for sw in rebooted:
        at = rng.uniform(lo + 0.15 * (hi - lo), hi - 0.15 * (hi - lo))
        boot = rng.uniform(120.0, 240.0)
        mine = sorted(fab.switch_links[sw])
        last_up = at
        for i in mine:
            used.add(i)
            down = at + rng.uniform(0.0, 2.0)
            last_up = max(last_up, add(i, down, at + boot + rng.uniform(0.0, 5.0) - down,
                                       CAUSE_REBOOT).up)
        # Counters restart when the switch's firmware comes up, before its ports train.
        plan.resets.setdefault(("S", sw), []).append(at + boot - 1.0)
        plan.reboots.append((sw, at, last_up, mine))
    blocked_hosts = {fab.hcas[hca].host for i in used if (hca := fab.links[i].hca) is not None}

    hosts = [h for h in range(len(fab.hosts)) if h not in blocked_hosts]
    for h in rng.sample(hosts, min(counts[CAUSE_MAINTENANCE], len(hosts))):
        n = rng.randint(3, 6)
        start = rng.uniform(lo, max(lo + 1, hi - 4 * 3600.0))
        times = _spaced_times(rng, n, start + rng.uniform(120, 600),
                              min(start + rng.uniform(2700, 9000), hi), 240.0)
        mine_flaps: list[_Flap] = []
        for t in times:
            dur = rng.uniform(30.0, 200.0)  # a reboot: the link is down while the host boots
            for hca in fab.host_hcas[h]:
                link = fab.hca_link[hca]
                used.add(link)
                mine_flaps.append(add(link, t + rng.uniform(0, 1.0), dur, CAUSE_MAINTENANCE))
                # The HCA's counters restart when the driver loads, just before the link is up.
                plan.resets.setdefault(("H", hca), []).append(t + dur - 1.0)
        # People declare round times a little wider than the work.
        w_start = math.floor((start - 60) / 300) * 300.0
        w_end = math.ceil((max(f.up for f in mine_flaps) + rng.uniform(180, 900)) / 300) * 300.0
        plan.maintenance.append((h, w_start, w_end, mine_flaps))

    free = [i for i in range(len(fab.links)) if i not in used]
    rng.shuffle(free)
    by_kind = {
        "host": [i for i in free if fab.links[i].hca is not None],
        "switch": [i for i in free if fab.links[i].hca is None],
    }

    def take(k: int) -> int:
        # Alternate host and leaf-spine links so both kinds carry every fault type.
        kinds = ("switch", "host") if k % 2 == 0 else ("host", "switch")
        for kind in kinds:
            if by_kind[kind]:
                return by_kind[kind].pop()
        raise ValueError("not enough healthy links for the requested faults")

    k = rng.randrange(2)
    for _ in range(counts[FAULT_FREQUENT]):
        link, k = take(k), k + 1
        n = rng.randint(4, 9)
        fl = [add(link, t, rng.uniform(2.0, 40.0), FAULT_FREQUENT)
              for t in _spaced_times(rng, n, lo, hi, 120.0)]
        plan.bad.append((link, FAULT_FREQUENT, "cable", fl, (), None))
    for _ in range(counts[FAULT_RARE]):
        link, k = take(k), k + 1
        n = rng.randint(1, 2)
        fl = [add(link, t, rng.uniform(60.0, 600.0), FAULT_RARE)
              for t in _spaced_times(rng, n, lo, hi, 1800.0)]
        plan.bad.append((link, FAULT_RARE, "cable", fl, (), None))
    for _ in range(counts[FAULT_SYMBOL]):
        link, k = take(k), k + 1
        onset = rng.uniform(0.0, 0.4 * total)
        n = rng.choice((0, 0, 1, 2))
        fl = [add(link, t, rng.uniform(2.0, 10.0), FAULT_SYMBOL)
              for t in _spaced_times(rng, n, max(lo, onset), hi, 600.0)]
        rate = math.exp(rng.uniform(math.log(30.0), math.log(600.0)))
        keys = _port_keys(fab, link)
        one_sided = rng.random() < 0.4
        sides = (rng.randrange(2),) if one_sided else (0, 1)
        for s in sides:
            # The two ends of a bad cable see different rates (each lane pair degrades alone).
            r = rate * rng.uniform(0.6, 1.4)
            plan.port(keys[s]).symbol = _SymbolFault(onset, r, r * rng.uniform(0.05, 0.3))
        plan.bad.append((link, FAULT_SYMBOL, "transceiver" if one_sided else "cable", fl, sides,
                         onset))
    for _ in range(counts[CAUSE_RESEAT]):
        link, k = take(k), k + 1
        plan.reseats.append(add(link, rng.uniform(lo, hi), rng.uniform(1.0, 4.8), CAUSE_RESEAT))

    # A cable that has flapped for weeks may already sit near the 8-bit ceiling of
    # LinkDownedCounter, so the window shows it saturate.
    frequent = [b for b in plan.bad if b[1] == FAULT_FREQUENT]
    if frequent and rng.random() < 0.5:
        key = _port_keys(fab, frequent[0][0])[-1]
        plan.port(key).baseline["LinkDownedCounter"] = 255 - rng.randint(1, 3)

    # Background that must not be blamed: old constant counts and congestion discards.
    quiet = by_kind["host"] + by_kind["switch"]
    rng.shuffle(quiet)
    n_bg = max(2, len(fab.links) // 100)
    for i in quiet[:n_bg]:
        key = rng.choice(_port_keys(fab, i))
        if rng.random() < 0.5:
            plan.port(key).baseline["LinkDownedCounter"] = rng.randint(1, 6)
        else:
            plan.port(key).baseline["SymbolErrorCounter"] = rng.randint(1, 60)
    for i in quiet[n_bg:2 * n_bg]:
        if fab.links[i].hca is None:
            plan.port(rng.choice(_port_keys(fab, i))).discards_h = rng.uniform(0.5, 40.0)
    plan.flaps.sort(key=lambda f: (f.down, f.link))
    return plan


# --------------------------------------------------------------------------- counters


def _counter_values(pc: _PortCounters, t: float, resets: list[float]) -> dict[str, int]:
    last = max((r for r in resets if r <= t), default=None)
    base = pc.baseline if last is None else {}
    since = last if last is not None else -math.inf
    downs = sum(1 for d in pc.downs if since < d <= t)
    sym = 0.0
    if pc.symbol is not None:
        sym = pc.symbol.errors(t) - (pc.symbol.errors(last) if last is not None else 0.0)
    hours = (t - (last if last is not None else 0.0)) / 3600.0
    raw = {
        "SymbolErrorCounter": base.get("SymbolErrorCounter", 0) + int(sym),
        "LinkErrorRecoveryCounter": int(sym / 1500.0),
        "LinkDownedCounter": base.get("LinkDownedCounter", 0) + downs,
        "PortRcvErrors": int(sym / 40.0),
        "PortXmitDiscards": int(pc.discards_h * max(hours, 0.0)),
    }
    return {name: min(raw[name], width) for name, width in _COUNTERS if raw[name] > 0}


# --------------------------------------------------------------------------- lost switch logs


def _lost_switches(sc: Scenario, fab: _Fabric, plan: _Plan, killed: set[int],
                   rng: random.Random) -> list[int]:
    """The switches whose syslog never reached the collector: leaves of bad cables whose flaps
    killed jobs first (host cables before leaf-spine ones: only the leaf logs a host link),
    then leaves of other bad cables, other leaves, spines, and rebooted switches last.
    `killed`: the links whose flaps killed a job (the jobs are drawn before this)."""
    if sc.lost_switch_logs == 0:
        return []
    rebooted = {sw for sw, _, _, _ in plan.reboots}
    tiers: list[set[int]] = [set() for _ in range(6)]
    for link, *_ in plan.bad:
        tier = (0 if fab.links[link].hca is not None else 1) if link in killed else 2
        tiers[tier].add(fab.links[link].leaf)
    for sw, s in enumerate(fab.switches):
        tiers[5 if sw in rebooted else 3 if s.leaf else 4].add(sw)
    order: list[int] = []
    for members in tiers:
        mine = sorted(members - set(order))
        rng.shuffle(mine)
        order += mine
    return order[:sc.lost_switch_logs]
