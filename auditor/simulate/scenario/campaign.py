"""The outcomes campaign (`Scenario.outcomes`, issue #15): weeks of link faults, the swaps the
technicians made, and one bad lot of cables, for `auditor outcomes` and
benchmarks/bench_outcomes.py. Off by default; then nothing here is drawn.

- Lots: the cabling plan gets a `lot` column. Each kind of cable came in lots of about
  `LOT_SIZE` consecutive cables (one delivery per row of racks), named by the week they were
  made. One lot of the leaf-spine optics is bad: each of its cables develops a cable fault with
  probability `BAD_LOT_RATE`.
- Faults: `FAULT_SHARE` of the other links develop a fault at an onset anywhere in the window
  (faults come at a steady rate, so the late ones are still open at its end): in the cable
  (most), in a transceiver (leaf-spine links only: the optic at one end) or in the switch
  port. A faulty link flaps as a Poisson process of 0.1-3 flaps a day (log-uniform: some
  faults are quiet for a week or more), 60 % of them short (2-40 s) and the rest long
  (60-600 s), until the part at fault is swapped.
- Technicians do what the report says: once a faulty link has flapped twice since its last
  swap, 0.5-3 days later they swap the next part in the action's order (the cable, the
  transceiver at end a (the leaf's), at end b, then the switch port; host links: the cable, then
  the switch port). The right part stops the flaps; any other leaves them going (escalated).
- Noise: `NOISE_SHARE` of the healthy links flap once: two thirds a reseat-length blip (1-4.8 s),
  a third 20-300 s (a cable bumped during nearby work). Nobody acts on a single flap.

The swaps are written as `replacements.csv` (ticket, link, part, replaced_at: what `auditor
replaced` takes), the lots as the plan's column, and the truth as truth.json's `outcomes`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from auditor.simulate.scenario.clock import _Clock, _iso
from auditor.simulate.scenario.fabric import _cabling, _Fabric
from auditor.simulate.scenario.faults import _Flap, _Plan, _port_keys
from auditor.simulate.scenario.options import Scenario

LOT_SIZE = 32
BAD_LOT_RATE = 0.4
FAULT_SHARE = 0.03
NOISE_SHARE = 0.06
RATE_PER_DAY = (0.1, 3.0)
DELAY_DAYS = (0.5, 3.0)
# Share of each fault's part: (cable, transceiver, switch port); host links have no separate
# transceiver (copper DAC), so their share goes to the cable.
SWITCH_LINK_PARTS = (0.5, 0.3, 0.2)
HOST_LINK_PARTS = (0.75, 0.0, 0.25)
CAUSE_FAULT = "campaign_fault"
CAUSE_NOISE = "campaign_noise"
_GAP_S = 1800.0  # between one flap's up and the next flap of the same link


@dataclass(slots=True)
class _Swap:
    at: float
    part: str  # as `auditor replaced --part`: cable, transceiver-a, transceiver-b, switch-port
    ticket: str
    right: bool


@dataclass(slots=True)
class _Fault:
    link: int
    part: str  # cable, transceiver, switch_port (a verdict's words)
    end: str | None  # transceiver: "a" (the leaf's) or "b"
    onset: float
    bad_lot: bool
    flaps: list[_Flap] = field(default_factory=list)
    swaps: list[_Swap] = field(default_factory=list)
    fixed_at: float | None = None


@dataclass(slots=True)
class Campaign:
    lots: list[str]  # per link
    bad_lot: str
    faults: list[_Fault]
    noise: list[_Flap]

    def cabling(self, fab: _Fabric) -> str:
        """The cabling plan with its `lot` column (one row per link, in link order)."""
        lines = _cabling(fab).splitlines()
        return "\n".join([lines[0] + ",lot", *(f"{line},{self.lots[i]}"
                                               for i, line in enumerate(lines[1:]))]) + "\n"

    def replacements_csv(self, fab: _Fabric, clock: _Clock) -> str:
        swaps = sorted(((s.at, s.ticket, f, s) for f in self.faults for s in f.swaps),
                       key=lambda x: (x[0], x[1]))
        rows = ["ticket,link,part,replaced_at"]
        rows += [f"{ticket},{_link_arg(fab, f.link)},{s.part},{_iso(clock.at(at))}"
                 for at, ticket, f, s in swaps]
        return "\n".join(rows) + "\n"

    def truth(self, fab: _Fabric, clock: _Clock) -> dict[str, Any]:
        """truth.json's `outcomes`: every fault with its flaps and swaps, the noise, the lots."""
        def flaps(fl: list[_Flap]) -> list[dict[str, Any]]:
            return [{"down_at": _iso(clock.at(f.down)), "up_at": _iso(clock.at(f.up)),
                     "duration_s": round(f.up - f.down, 6)} for f in fl]

        def ends(i: int) -> list[dict[str, Any]]:
            return [{"name": e.name, "guid": e.guid, "port": e.port} for e in fab.ends(i)]

        lots: dict[str, dict[str, Any]] = {}
        for i, lot in enumerate(self.lots):
            entry = lots.setdefault(lot, {"part_number": _part_number(fab, i), "cables": 0})
            entry["cables"] += 1
        bad = [f for f in self.faults if f.bad_lot]
        return {
            "bad_lot": self.bad_lot,
            "bad_lot_part_number": lots[self.bad_lot]["part_number"],
            "bad_lot_cables": lots[self.bad_lot]["cables"],
            "bad_lot_faults": len(bad),
            "lots": lots,
            "faults": [{
                "link": fab.link_id(f.link), "ends": ends(f.link), "part": f.part,
                "end": f.end, "lot": self.lots[f.link], "bad_lot": f.bad_lot,
                "onset": _iso(clock.at(f.onset)), "flaps": flaps(f.flaps),
                "swaps": [{"ticket": s.ticket, "at": _iso(clock.at(s.at)), "part": s.part,
                           "right": s.right} for s in f.swaps],
                "fixed_at": _iso(clock.at(f.fixed_at)) if f.fixed_at is not None else None,
            } for f in self.faults],
            "noise": [{"link": fab.link_id(f.link), "ends": ends(f.link),
                       "flaps": flaps([f])} for f in self.noise],
            "replacements": "replacements.csv",
        }


def _part_number(fab: _Fabric, i: int) -> str:
    # As fabric._cabling writes them: copper to the hosts, optics between switches.
    return "MCP1650-H002E30" if fab.links[i].hca is not None else "MFS1S00-H010V"


def _link_arg(fab: _Fabric, i: int) -> str:
    """The link as `auditor replaced --link` takes it: the leaf end first (end a)."""
    lk = fab.links[i]
    leaf = f"{fab.switches[lk.leaf].name}:IB1/{lk.leaf_port}"
    if lk.spine is None:
        return leaf  # the HCA end is the leaf port's peer
    return f"{leaf}<->{fab.switches[lk.spine].name}:IB1/{lk.spine_port}"


def _lots(fab: _Fabric, rng: random.Random) -> list[str]:
    """Consecutive cables of one kind share a lot; lot names are a made-week and a letter."""
    lots = [""] * len(fab.links)
    week = rng.randint(2301, 2352)
    for kind in (True, False):  # host cables, then leaf-spine optics
        mine = [i for i, lk in enumerate(fab.links) if (lk.hca is not None) == kind]
        count = max(2, round(len(mine) / LOT_SIZE))
        for n, i in enumerate(mine):
            k = n * count // len(mine)
            lots[i] = f"LOT-{week + k // 26:04d}{chr(ord('A') + k % 26)}"
        week += count // 26 + 1
    return lots


def plan_campaign(sc: Scenario, fab: _Fabric, plan: _Plan, rng: random.Random) -> Campaign:
    """Add the campaign's flaps to `plan` (and its counters) and return what it did."""
    total = sc.days * 86400.0
    lo, hi = 600.0, total - 900.0
    lots = _lots(fab, rng)
    used = {i for _, _, _, links in plan.reboots for i in links}
    used |= {fab.hca_link[c] for h, _, _, _ in plan.maintenance for c in fab.host_hcas[h]}
    optic_lots = sorted({lots[i] for i, lk in enumerate(fab.links) if lk.spine is not None})
    bad_lot = rng.choice(optic_lots)
    faults: list[_Fault] = []
    for i in range(len(fab.links)):
        if lots[i] == bad_lot and i not in used and rng.random() < BAD_LOT_RATE:
            faults.append(_Fault(i, "cable", None, rng.uniform(lo, hi), True))
    taken = used | {f.link for f in faults}
    free = [i for i in range(len(fab.links)) if i not in taken and lots[i] != bad_lot]
    rng.shuffle(free)
    n_faults = max(4, round(FAULT_SHARE * len(fab.links)))
    for i in sorted(free[:n_faults]):
        shares = HOST_LINK_PARTS if fab.links[i].hca is not None else SWITCH_LINK_PARTS
        part = rng.choices(("cable", "transceiver", "switch_port"), shares)[0]
        end = rng.choice(("a", "b")) if part == "transceiver" else None
        faults.append(_Fault(i, part, end, rng.uniform(lo, hi), False))
    faults.sort(key=lambda f: f.link)
    tickets = iter(range(10001, 1 << 30))
    for fault in faults:
        _run_fault(fab, fault, rng, hi, total, tickets)
    quiet = [i for i in range(len(fab.links)) if i not in taken and i not in free[:n_faults]]
    noise: list[_Flap] = []
    for i in sorted(rng.sample(quiet, min(len(quiet), round(NOISE_SHARE * len(fab.links))))):
        dur = rng.uniform(1.0, 4.8) if rng.random() < 2 / 3 else rng.uniform(20.0, 300.0)
        down = rng.uniform(lo, hi - dur)
        noise.append(_Flap(i, down, down + dur, CAUSE_NOISE))
    for flap in [x for fault in faults for x in fault.flaps] + noise:
        plan.flaps.append(flap)
        for key in _port_keys(fab, flap.link):
            plan.port(key).downs.append(flap.down)
    plan.flaps.sort(key=lambda f: (f.down, f.link))
    return Campaign(lots, bad_lot, faults, noise)


def _run_fault(fab: _Fabric, f: _Fault, rng: random.Random, hi: float, total: float,
               tickets: Any) -> None:
    """The fault's flaps and the technicians' swaps, in time order, until the right part is
    swapped or the window ends."""
    host = fab.links[f.link].hca is not None
    order = ["cable", "switch-port"] if host else [
        "cable", "transceiver-a", "transceiver-b", "switch-port"]
    right = {"cable": "cable", "switch_port": "switch-port",
             "transceiver": f"transceiver-{f.end}"}[f.part]
    rate = math.exp(rng.uniform(*(math.log(r) for r in RATE_PER_DAY))) / 86400.0
    t = f.onset
    since_swap = 0
    pending: float | None = None
    while True:
        nxt = t + rng.expovariate(rate)
        if pending is not None and pending <= nxt:
            part = order[len(f.swaps)]
            f.swaps.append(_Swap(pending, part, f"CHG-{next(tickets)}", part == right))
            since_swap, t, pending = 0, pending, None
            if part == right:
                f.fixed_at = f.swaps[-1].at
                return
            continue
        dur = rng.uniform(2.0, 40.0) if rng.random() < 0.6 else rng.uniform(60.0, 600.0)
        if nxt + dur > hi:
            if pending is not None and pending < total:  # the last swap, after the last flap
                part = order[len(f.swaps)]
                f.swaps.append(_Swap(pending, part, f"CHG-{next(tickets)}", part == right))
                if part == right:
                    f.fixed_at = pending
            return
        f.flaps.append(_Flap(f.link, nxt, nxt + dur, CAUSE_FAULT))
        t = nxt + dur + _GAP_S
        since_swap += 1
        if since_swap >= 2 and pending is None and len(f.swaps) < len(order):
            at = nxt + dur + rng.uniform(*DELAY_DAYS) * 86400.0
            if at < total:
                pending = at
