"""Flaps: port state changes from every source turned into down-to-up intervals per link.

Several sources report the same flap (both switch ends in syslog, UFM, SNMP, the HCA, a missing
link in a sweep, a LinkDownedCounter step): they are merged, not counted again. A link whose
ends both logged a down within a few seconds is one link event with two ends.
"""

from __future__ import annotations

from collections import ChainMap, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.models import PortKey
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.store.rows import CounterStepRow, EventRow

# Both ends of a cable, and UFM, log the same transition within a second or two; switch clocks
# drift a little more (NTP-less management networks), so allow a few seconds.
SAME_EVENT = timedelta(seconds=10)
# Look this far back before the window for the "down" that an in-window "up" closes.
LOOKBACK = timedelta(days=1)
# Times here are the store's naive UTC timestamps, so the bounds are naive too.
_EARLIEST = datetime.min  # noqa: DTZ901
_LATEST = datetime.max  # noqa: DTZ901


@dataclass(slots=True)
class Flap:
    """One link going down (and back up), from the events of both its ends."""

    ends: list[PortKey]
    down_at: datetime | None
    up_at: datetime | None
    sources: set[str] = field(default_factory=set)
    approximate: bool = False  # known only from a counter step or two sweeps
    counted_from: datetime | None = None  # counter flaps: the earlier reading
    # Two ends' clocks differ by a second or two, so the span from one end's down to the other
    # end's up overstates a short flap; each end measures its own flap on one clock.
    measured_s: float | None = None

    @property
    def duration_s(self) -> float | None:
        if self.down_at is None or self.up_at is None:
            return None
        if self.measured_s is not None:
            return self.measured_s
        return (self.up_at - self.down_at).total_seconds()


def _port_flaps(events: list[EventRow]) -> dict[PortKey, list[Flap]]:
    """Down/up pairs per port, sources merged."""
    by_port: dict[PortKey, list[EventRow]] = defaultdict(list)
    for e in events:
        if e["guid"] is None or e["port"] is None:
            continue
        if e["state"] in ("down", "up", "flap"):
            by_port[(e["guid"], e["port"])].append(e)
    out: dict[PortKey, list[Flap]] = {}
    for key, evs in by_port.items():
        flaps: list[Flap] = []
        open_flap: Flap | None = None
        for e in evs:
            at, origin = e["event_at"], e["origin"]
            approx = origin == "topology"
            if e["state"] == "flap":  # seen only as "changed since the last poll"
                flaps.append(Flap([key], at, at, {origin}, approximate=True))
                continue
            if e["state"] == "down":
                if open_flap is not None:
                    open_flap.sources.add(origin)  # another source, or a repeated down
                    continue
                last = flaps[-1] if flaps else None
                if last is not None and last.down_at is not None \
                        and abs(at - last.down_at) <= SAME_EVENT:
                    last.sources.add(origin)  # a late report of a flap already closed
                    continue
                open_flap = Flap([key], at, None, {origin}, approximate=approx)
                flaps.append(open_flap)
            else:  # up
                if open_flap is not None:
                    open_flap.up_at = at
                    open_flap.sources.add(origin)
                    open_flap.approximate = open_flap.approximate or approx
                    open_flap = None
                elif flaps and flaps[-1].up_at and abs(at - flaps[-1].up_at) <= SAME_EVENT:
                    flaps[-1].sources.add(origin)
        out[key] = flaps
    return out


def _link_of(key: PortKey, peers: Mapping[PortKey, PortKey]) -> tuple[PortKey, ...]:
    peer = peers.get(key)
    return tuple(sorted((key, peer))) if peer else (key,)


def _overlap(a: Flap, b: Flap) -> bool:
    if a.down_at is None or b.down_at is None:
        return False
    if abs(a.down_at - b.down_at) <= SAME_EVENT:
        return True
    a_end = a.up_at or _LATEST
    b_end = b.up_at or _LATEST
    return a.down_at <= b_end and b.down_at <= a_end and (a.approximate or b.approximate)


def merge_links(port_flaps: dict[PortKey, list[Flap]],
                peers: Mapping[PortKey, PortKey]) -> list[Flap]:
    """Flaps of both ends of one cable (and of several sources) become one link flap."""
    by_link: dict[tuple[PortKey, ...], list[Flap]] = defaultdict(list)
    for key, flaps in port_flaps.items():
        by_link[_link_of(key, peers)].extend(flaps)
    merged: list[Flap] = []
    for link, flaps in by_link.items():
        flaps.sort(key=lambda f: (f.down_at or _EARLIEST))
        group: list[Flap] = []
        for f in flaps:
            if group and _overlap(group[-1], f):
                g = group[-1]
                own = [d for d in (g.duration_s, f.duration_s) if d is not None]
                both_logged = not (g.approximate or f.approximate)
                g.sources |= f.sources
                # The later up of two ends is when the link carried traffic again, but a
                # snapshot-only "up" is a bound, not a time: prefer a logged one.
                later = f.up_at is None or (g.up_at is not None and f.up_at > g.up_at)
                if later and not (f.approximate and not g.approximate):
                    g.up_at = f.up_at
                if g.approximate and not f.approximate:
                    g.down_at, g.approximate = f.down_at, False
                    g.up_at = f.up_at if f.up_at else g.up_at
                    g.measured_s = f.duration_s
                elif both_logged and own and g.up_at is not None:
                    g.measured_s = max(own)
                continue
            group.append(Flap(list(link), f.down_at, f.up_at, set(f.sources), f.approximate))
        merged.extend(group)
    return merged


def add_counter_flaps(flaps: list[Flap], deltas: Sequence[CounterStepRow],
                      peers: Mapping[PortKey, PortKey]) -> list[Flap]:
    """LinkDownedCounter steps that no log explains become flaps of their own (approximate)."""
    steps: dict[tuple[PortKey, ...], CounterStepRow] = {}
    for d in deltas:
        if d["counter"] != "LinkDownedCounter" or d["delta"] <= 0:
            continue
        link = _link_of((d["guid"], d["port"]), peers)
        # Both ends count the same flap: take the larger step of the two, not the sum.
        if link not in steps or d["delta"] > steps[link]["delta"]:
            steps[link] = d
    # each link's flaps in their order, once: a scan of every flap per step was quadratic
    # (3,600 flaps x 4,000 steps in 3 days at 65,536 GPUs, issue #25)
    by_link: dict[tuple[PortKey, ...], list[Flap]] = defaultdict(list)
    for f in flaps:
        if f.down_at is not None:
            by_link[tuple(f.ends)].append(f)
    extra = []
    for link, d in steps.items():
        known = [f for f in by_link.get(link, ()) if f.down_at is not None
                 and d["prev_at"] < f.down_at <= d["seen_at"]]
        for f in known:
            f.sources.add("counters")
        for _ in range(max(0, d["delta"] - len(known))):
            extra.append(Flap(list(link), d["seen_at"], None, {"counters"}, approximate=True,
                              counted_from=d["prev_at"]))
    return flaps + extra


def flaps(store: Store, since: datetime, until: datetime,
          peers: Mapping[PortKey, PortKey] | None = None,
          events: list[EventRow] | None = None,
          link_downs: Sequence[CounterStepRow] | None = None) -> list[Flap]:
    """Every link flap that went down in [since, until], or was still down at `since`.
    `peers` (store.port_peers(until)), `events` (store.events(since - LOOKBACK, until)) and
    `link_downs` (the LinkDownedCounter rows of store.counter_steps(since, until, until), in
    its order) may be passed in when the caller has them already."""
    if events is None:
        events = store.events(since - LOOKBACK, until)
    # What the events teach goes in front of the store's answer, which stays as it is (a
    # 65,536-GPU fabric's 393,216 peers are read one at a time when asked about, issue #25).
    taught: dict[PortKey, PortKey] = {}
    known: Mapping[PortKey, PortKey] = peers if peers is not None else store.port_peers(until)
    for e in events:
        # Sources that name both ends (UFM) teach us the peer even without a topology snapshot.
        if e["guid"] and e["port"] is not None and e["peer_guid"] and e["peer_port"] is not None:
            for key, peer in (((e["guid"], e["port"]), (e["peer_guid"], e["peer_port"])),
                              ((e["peer_guid"], e["peer_port"]), (e["guid"], e["port"]))):
                if key not in taught and key not in known:
                    taught[key] = peer
    # (ChainMap only reads the maps after the first)
    peers = ChainMap(taught, known) if taught else known  # type: ignore[arg-type]
    merged = merge_links(_port_flaps(events), peers)
    if link_downs is None:
        # Only LinkDownedCounter's steps, not every counter's deltas over the span (the
        # outcomes ask for 90 days: a 65,536-GPU fabric's month of counter snapshots was most
        # of `report`'s 4.5 s of outcomes, issue #25).
        link_downs = [d for d in store.counter_steps(since, until, until)
                      if d["counter"] == "LinkDownedCounter"]
    merged = add_counter_flaps(merged, link_downs, peers)
    in_window = [
        f for f in merged
        if f.down_at is not None and (
            since <= f.down_at <= until or (f.down_at < since and (f.up_at is None
                                                                    or f.up_at >= since)))
    ]
    in_window.sort(key=lambda f: (f.down_at or _EARLIEST, f.ends))
    return in_window


def as_dict(flap: Flap, names: dict[str, tuple[str, str]], until: datetime) -> dict[str, Any]:
    return {
        "ends": [{"name": names.get(g, (g, ""))[0], "guid": g, "port": p} for g, p in flap.ends],
        "down_at": flap.down_at.isoformat() + "Z" if flap.down_at else None,
        "up_at": flap.up_at.isoformat() + "Z" if flap.up_at else None,
        "duration_s": flap.duration_s,
        "still_down": flap.up_at is None and not flap.counted_from,
        "down_for_s": (until - flap.down_at).total_seconds()
        if flap.up_at is None and flap.down_at and not flap.counted_from else None,
        "approximate": flap.approximate,
        "counted_between": [flap.counted_from.isoformat() + "Z",
                            flap.down_at.isoformat() + "Z"]
        if flap.counted_from and flap.down_at else None,
        "sources": sorted(flap.sources),
    }
