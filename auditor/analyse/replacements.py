"""Replacement tracking: what a technician swapped, and whether the flaps stopped.

A swap is judged on the flaps seen after it:
- none for `verify_days` clean days: verified (the part was the fault);
- none yet: watching;
- flaps again on the same port(s): escalated, with what to suspect next for the part swapped;
- flaps on another port where the old part (known by its serial number) now sits: the fault
  followed the part, so the part was bad; take it out of circulation.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.analyse.flaps import Flap, flaps
from auditor.errors import AuditorError
from auditor.portmap import PortMap
from auditor.store import Store, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import ReplacementRow

PARTS = ("cable", "transceiver-a", "transceiver-b", "switch-port")
NEXT_SUSPECT = {
    "cable": "replace the transceivers at both ends next, then suspect the switch port",
    "transceiver-a": "replace the transceiver at the other end (b) next, then the cable, then "
                     "suspect the switch port",
    "transceiver-b": "replace the transceiver at the other end (a) next, then the cable, then "
                     "suspect the switch port",
    "switch-port": "move the cable to a spare port of another switch ASIC or replace the HCA/"
                   "far-end port: the fault did not stay with the port",
}


def _resolve_end(pm: PortMap, text: str) -> tuple[str, int, str]:
    name, sep, port = text.strip().partition(":")
    if not sep or not port:
        raise AuditorError(f"--link {text!r}: write switch:port, e.g. leaf04:IB1/7")
    r = pm.resolve(name, port)
    if r.guid is None or r.port is None:
        raise AuditorError(f"--link {text!r}: {r.reason or 'not in the fabric graph'}")
    return r.guid, r.port, name


def record(store: Store, link: str, part: str, ticket: str, at: datetime,
           aliases: dict[str, str] | None = None) -> dict[str, Any]:
    """Store a replacement of `part` on `link` ("leaf04:IB1/7" or "a:port<->b:port")."""
    if part not in PARTS:
        raise AuditorError(f"--part {part!r}: use one of {', '.join(PARTS)}")
    if not ticket.strip():
        raise AuditorError("--ticket must not be empty")
    fabric = store.latest_fabric()
    if fabric is None:
        raise AuditorError("no topology snapshot: ingest the fabric before recording swaps")
    pm = PortMap(fabric, aliases)
    ends = re.split(r"<->", link)
    a = _resolve_end(pm, ends[0])
    if len(ends) == 2:
        b: tuple[str, int, str] | None = _resolve_end(pm, ends[1])
    else:
        peer = store.port_peers(datetime(9999, 1, 1, tzinfo=UTC)).get((a[0], a[1]))
        names = store.node_names()
        b = (peer[0], peer[1], names.get(peer[0], (peer[0], ""))[0]) if peer else None
    ports = {(a[0], a[1])} | ({(b[0], b[1])} if b else set())
    serials = sorted({t["serial_number"] for t in store.transceivers_at(sorted(ports))
                      if t["serial_number"]})
    with store.transaction():
        rid = store.add_replacement(ticket, part, at, a, b, serials)
    return {"replacement_id": rid, "ticket": ticket, "part": part,
            "link": _label(a, b), "old_serials": serials}


def _label(a: tuple[str, int | None, str | None],
           b: tuple[str, int | None, str | None] | None) -> str:
    text = f"{a[2]}[{a[1]}]"
    return text + (f" <-> {b[2]}[{b[1]}]" if b else "")


def status(store: Store, now: datetime, verify_days: float = 7.0) -> list[dict[str, Any]]:
    """Every recorded replacement with its status and the reason."""
    rows = store.replacements()
    if not rows:
        return []
    until = utc_naive(now)
    seen = flaps(store, min(r["replaced_at"] for r in rows), until)
    out = []
    for r in rows:
        state, reason, after = _judge(store, r, seen, until, verify_days)
        out.append({
            "ticket": r["ticket"], "part": r["part"],
            "link": _label((r["a_guid"], r["a_port"], r["a_name"]),
                           (r["b_guid"], r["b_port"], r["b_name"]) if r["b_guid"] else None),
            "recorded_at": r["replaced_at"].isoformat() + "Z", "status": state,
            "reason": reason, "flaps_since": len(after),
        })
    return out


def settled(store: Store, now: datetime, verify_days: float = 7.0,
            seen: list[Flap] | None = None) -> list[tuple[ReplacementRow, str, str]]:
    """Every recorded swap (its store row) with its status and reason as they stood
    `verify_days` after it (or at `now`, when that is sooner). The outcomes (issue #15) judge a
    swap by its own verification period: a flap months after a verified swap is a new incident,
    not this swap's failure. `seen`: the flaps from the first swap to `now`, when the caller
    has them."""
    rows = store.replacements()
    if not rows:
        return []
    until = utc_naive(now)
    if seen is None:
        seen = flaps(store, min(r["replaced_at"] for r in rows), until)
    out = []
    for r in rows:
        horizon = min(until, r["replaced_at"] + timedelta(days=verify_days))
        state, reason, _ = _judge(store, r, seen, horizon, verify_days)
        out.append((r, state, reason))
    return out


def _judge(store: Store, r: ReplacementRow, seen: list[Flap], until: datetime,
           verify_days: float) -> tuple[str, str, list[Flap]]:
    """The status of swap `r` at `until` (naive UTC), the reason, and the flaps since it."""
    ports: set[tuple[str, int | None]] = {(r["a_guid"], r["a_port"])}
    if r["b_guid"]:
        ports.add((r["b_guid"], r["b_port"]))
    after = [f for f in seen if f.down_at and r["replaced_at"] < f.down_at <= until
             and ports & set(f.ends)]
    moved: list[str] = []
    for hit in store.serials_seen(r["old_serials"] or [], r["replaced_at"]):
        key = (hit["guid"], hit["port"])
        if key in ports or hit["guid"] is None:
            continue
        if any(key in f.ends and f.down_at and r["replaced_at"] < f.down_at <= until
               for f in seen):
            moved.append(f"serial {hit['serial_number']} now in {hit['device']} "
                         f"{hit['port_name']}, which flaps")
    clean_days = (until - r["replaced_at"]).total_seconds() / 86400
    if moved:
        return "followed_part", "; ".join(moved) + ": the old part is bad, take it out of " \
            "circulation", after
    if after:
        return "escalated", (
            f"{len(after)} flap(s) on the same port(s) since the swap (last "
            f"{max(f.down_at for f in after if f.down_at):%Y-%m-%d %H:%M}): "
            f"{NEXT_SUSPECT[r['part']]}"), after
    if clean_days >= verify_days:
        return "verified", f"no flap in the {clean_days:.1f} days since the swap", after
    return "watching", (f"no flap yet; verified after {verify_days:g} clean days "
                        f"({verify_days - clean_days:.1f} to go)"), after
