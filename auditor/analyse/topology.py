"""Questions about the fabric answered from the store: the topology at a time, its links, what
is down and what is degraded. Returns plain dicts ready for rendering."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from auditor.analyse.degraded import End, changes, degraded_links, ends_of
from auditor.errors import AuditorError
from auditor.models import Fabric, NodeType
from auditor.store import Store


def snapshots(store: Store, at: datetime) -> tuple[Fabric, Fabric | None]:
    """The snapshot in force at `at` and the one before it."""
    times = store.snapshot_times(at, limit=2)
    if not times:
        raise AuditorError(
            f"no topology snapshot at or before {at.isoformat(timespec='seconds')}; "
            "ingest ibnetdiscover or iblinkinfo output first"
        )
    current = store.fabric(times[0])
    previous = store.fabric(times[1]) if len(times) > 1 else None
    return current, previous


def _end(end: End) -> dict[str, Any]:
    return end.as_dict()


def down_ports(store: Store, fabric: Fabric) -> list[dict[str, Any]]:
    out = []
    for guid, port, peer_guid, peer_port, last_up, down_since, peer_name in store.run(
        "ports_down", seen_at=fabric.seen_at
    ):
        node = fabric.nodes.get(guid)
        out.append({
            "ends": [
                {"name": node.name if node else guid, "guid": guid, "port": port},
                {"name": peer_name or peer_guid, "guid": peer_guid, "port": peer_port},
            ],
            "last_seen_up": last_up.isoformat() if last_up else None,
            "down_since": down_since.isoformat() if down_since else None,
        })
    return out


def topology(store: Store, at: datetime) -> dict[str, Any]:
    """Summary of the fabric at `at`: counts, down ports, degraded links and changes."""
    fabric, previous = snapshots(store, at)
    degraded = degraded_links(fabric, previous.links if previous else None)
    down = down_ports(store, fabric)
    diff = changes(fabric, previous)
    return {
        "snapshot_at": fabric.seen_at.isoformat() if isinstance(fabric.seen_at, datetime) else None,
        "previous_snapshot_at": (
            previous.seen_at.isoformat()
            if previous and isinstance(previous.seen_at, datetime) else None
        ),
        "switches": sum(n.node_type == NodeType.SWITCH for n in fabric.nodes.values()),
        "hcas": sum(n.node_type == NodeType.HCA for n in fabric.nodes.values()),
        "links": len(fabric.links),
        "ports_down": len(down),
        "degraded": [
            {
                "ends": [_end(e) for e in d.ends],
                "width": d.width,
                "speed": d.speed,
                "possible_width": d.possible_width,
                "possible_speed": d.possible_speed,
                "reason": d.reason,
            }
            for d in degraded
        ],
        "down": down,
        "appeared": [[_end(e) for e in pair] for pair in diff.appeared],
        "disappeared": [[_end(e) for e in pair] for pair in diff.disappeared],
        "moved": [
            {"before": [_end(e) for e in m.before], "after": [_end(e) for e in m.after]}
            for m in diff.moved
        ],
    }


def links(store: Store, at: datetime, degraded_only: bool = False,
          down_only: bool = False) -> list[dict[str, Any]]:
    """One row per link (or per down port), flat enough for a table or CSV."""
    fabric, previous = snapshots(store, at)
    rows: list[dict[str, Any]] = []
    if degraded_only or not down_only:
        bad = {(d.ends[0].guid, d.ends[0].port, d.ends[1].guid, d.ends[1].port): d
               for d in degraded_links(fabric, previous.links if previous else None)}
        for lk in fabric.links:
            a, b = ends_of(fabric, lk)
            d = bad.get((a.guid, a.port, b.guid, b.port))
            if degraded_only and d is None:
                continue
            rows.append({
                "a_name": a.name, "a_guid": a.guid, "a_port": a.port,
                "b_name": b.name, "b_guid": b.guid, "b_port": b.port,
                "state": "degraded" if d else "up",
                "width": lk.width, "speed": lk.speed,
                "possible_width": d.possible_width if d else lk.width,
                "possible_speed": d.possible_speed if d else lk.speed,
                "note": d.reason if d else "",
            })
    if not degraded_only or down_only:
        shown: set[tuple[str, int]] = set()
        for item in down_ports(store, fabric):
            a, b = item["ends"]
            # A cable whose both ends are still in the fabric is down at both: one row.
            if (b["guid"], b["port"]) in shown:
                continue
            shown.add((a["guid"], a["port"]))
            rows.append({
                "a_name": a["name"], "a_guid": a["guid"], "a_port": a["port"],
                "b_name": b["name"], "b_guid": b["guid"], "b_port": b["port"],
                "state": "down", "width": None, "speed": None,
                "possible_width": None, "possible_speed": None,
                "note": f"down since {item['down_since']}" if item["down_since"] else "down",
            })
    return rows
