"""Degraded links: each reason, which one wins, and the hints that are noise; and when a cable
counts as moved."""

from __future__ import annotations

from auditor.analyse.degraded import changes, degraded_links
from auditor.models import Fabric, FabricNode, Link, NodeType, Port


def fabric() -> Fabric:
    fab = Fabric(seen_at=None)
    for name, kind in (("sw1", NodeType.SWITCH), ("sw2", NodeType.SWITCH), ("h1", NodeType.HCA),
                       ("h2", NodeType.HCA), ("h3", NodeType.HCA), ("h4", NodeType.HCA)):
        fab.nodes[name] = FabricNode(name, kind, name, name)
    fab.links = [
        Link("h1", 1, "sw1", 1, "4X", "HDR"),
        Link("h2", 1, "sw1", 2, "4X", "HDR"),
        Link("h3", 1, "sw2", 1, "4X", "HDR"),
        Link("h4", 1, "sw2", 2, "1X", "HDR"),  # narrower than the other host links
        Link("sw1", 10, "sw2", 10, "4X", "HDR"),
        Link("sw1", 11, "sw2", 11, "4X", "HDR"),  # sw2 port 11 could train at NDR
        Link("sw1", 12, "sw2", 12, "4X", "HDR"),  # was NDR in the snapshot before
        Link("sw1", 13, "sw2", 13, "4X", "HDR"),  # "Could be 12X": ibsim's noise
    ]
    for lk in fab.links:
        for guid, port in ((lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)):
            fab.ports[(guid, port)] = Port(guid, port, width=lk.width, speed=lk.speed)
    fab.ports[("sw2", 11)] = Port("sw2", 11, width="4X", speed="HDR", could_be_speed="NDR")
    fab.ports[("sw1", 13)] = Port("sw1", 13, width="4X", speed="HDR", could_be_width="12X")
    return fab


def found(previous: list[Link] | None = None) -> dict[tuple[str, int], tuple[object, ...]]:
    return {(d.ends[0].guid, d.ends[0].port): (d.width, d.speed, d.possible_width,
                                               d.possible_speed, d.reason)
            for d in degraded_links(fabric(), previous)}


def test_each_reason_alone() -> None:
    assert found() == {
        ("h4", 1): ("1X", "HDR", "4X", "HDR", "below most host links"),
        ("sw1", 11): ("4X", "HDR", "4X", "NDR", "port could train faster"),
    }


def test_the_snapshot_before_and_which_reason_wins() -> None:
    before = [Link("sw1", 12, "sw2", 12, "4X", "NDR"), Link("h4", 1, "sw2", 2, "4X", "HDR"),
              Link("h1", 1, "sw1", 1, "4X", "HDR")]
    got = found(before)
    assert got[("sw1", 12)] == ("4X", "HDR", "4X", "NDR", "slower or narrower than last snapshot")
    # the snapshot before is asked before the tier's usual width
    assert got[("h4", 1)][-1] == "slower or narrower than last snapshot"
    assert ("h1", 1) not in got and ("sw1", 13) not in got
    assert len(got) == 3


def test_a_healthy_fabric_has_none() -> None:
    fab = fabric()
    fab.links = [lk for lk in fab.links if lk.a_guid != "h4" and lk.a_port not in (11, 13)]
    assert degraded_links(fab, fab.links) == []


# --- moved cables (health.changes) ------------------------------------------------------------

def _snapshot(links: list[Link], names: dict[str, str],
              ports: dict[tuple[str, int], Port] | None = None) -> Fabric:
    fab = Fabric(seen_at=None, links=links)
    for key, name in names.items():
        kind = NodeType.SWITCH if name.startswith("sw") else NodeType.HCA
        fab.nodes[key] = FabricNode(key, kind, name, name)
    for lk in links:
        for guid, port in ((lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)):
            fab.ports[(guid, port)] = Port(guid, port, state="Active", phys_state="LinkUp")
    fab.ports.update(ports or {})
    return fab


BEFORE = _snapshot([Link("0xa", 1, "0xs1", 2), Link("0xb", 1, "0xs2", 1)],
                   {"0xa": "host-a", "0xb": "host-b", "0xs1": "sw1", "0xs2": "sw2"})


def test_a_node_that_shares_its_guid_does_not_move_a_cable() -> None:
    # host-b now reports host-a's GUID; the capture lists both nodes, the second kept as 0xa~2.
    now = _snapshot([Link("0xa", 1, "0xs1", 2), Link("0xa~2", 1, "0xs2", 1)],
                    {"0xa": "host-a", "0xa~2": "host-b", "0xs1": "sw1", "0xs2": "sw2"})
    diff = changes(now, BEFORE)
    assert diff.moved == []
    assert [[e.name for e in pair] for pair in diff.appeared] == [["host-b", "sw2"]]
    assert [[e.name for e in pair] for pair in diff.disappeared] == [["host-b", "sw2"]]


def test_a_cable_still_up_in_its_old_port_did_not_move() -> None:
    # What the real tools show when host-b takes host-a's GUID: one node 0xa, cabled where
    # host-b is, and host-a's switch port up with no peer ("Port not available").
    up = {("0xs1", 2): Port("0xs1", 2, state="Active", phys_state="LinkUp")}
    now = _snapshot([Link("0xa", 1, "0xs2", 1)], {"0xa": "host-a", "0xs1": "sw1", "0xs2": "sw2"},
                    up)
    diff = changes(now, BEFORE)
    assert diff.moved == []
    assert len(diff.appeared) == 1 and len(diff.disappeared) == 2
    # The same picture with the old port down is a cable that moved.
    down = {("0xs1", 2): Port("0xs1", 2, state="Down", phys_state="Polling")}
    now = _snapshot([Link("0xa", 1, "0xs2", 1)], {"0xa": "host-a", "0xs1": "sw1", "0xs2": "sw2"},
                    down)
    (moved,) = changes(now, BEFORE).moved
    assert [(e.name, e.port) for e in moved.after] == [("host-a", 1), ("sw2", 1)]
