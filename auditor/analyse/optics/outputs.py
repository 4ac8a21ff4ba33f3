"""What the ranking, the outputs and the report take from the watch list: the evidence sentence,
the action, the JSON, and the traces the report plots."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypedDict

from auditor.analyse.optics.model import LABEL, MODULE_QUANTITIES, History, Module, Watch, WatchList
from auditor.analyse.optics.rules import _due, _limits
from auditor.config import OpticsSettings


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
