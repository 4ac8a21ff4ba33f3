"""Link health from topology snapshots: degraded links and what changed since the previous one.

Pure functions over `Fabric` values; the store supplies the snapshots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from auditor.graph import link_key
from auditor.models import EdgeKey, Fabric, Link, NodeType, duplicated_guid

WIDTHS = ["1X", "2X", "4X", "8X", "12X"]
SPEEDS = ["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]


def _rank(value: str | None, order: list[str]) -> int:
    return order.index(value) if value in order else -1


@dataclass(frozen=True, slots=True)
class End:
    """One end of a link, named."""

    name: str
    guid: str
    port: int

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "guid": self.guid, "port": self.port}


@dataclass(frozen=True, slots=True)
class Degraded:
    """A link running narrower or slower than both ends could."""

    ends: tuple[End, End]
    width: str | None
    speed: str | None
    possible_width: str | None
    possible_speed: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class Moved:
    """One end of a cable now sits in another port (or on another node)."""

    before: tuple[End, End]
    after: tuple[End, End]


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed between two topology snapshots."""

    appeared: list[tuple[End, End]]
    disappeared: list[tuple[End, End]]
    moved: list[Moved]


def ends_of(fabric: Fabric, link: Link) -> tuple[End, End]:
    def end(guid: str, port: int) -> End:
        node = fabric.nodes.get(guid)
        return End(node.name if node else guid, guid, port)

    return end(link.a_guid, link.a_port), end(link.b_guid, link.b_port)


def degraded_links(fabric: Fabric, previous: Sequence[Link] | None = None) -> list[Degraded]:
    """Links running narrower or slower than they could: than the port's "Could be" hint, than
    the same link in the previous snapshot (its links), or than most links of their tier (host
    or switch). Asked on every `suspects`, so it looks only at the links that can have a
    candidate: those of a rate other than their tier's usual one, at a hinted port, or in
    `previous` (issue #25: at 65,536 GPUs, the other 196,000 links were 0.2 s)."""
    # A link's tier: "host" when either end is an HCA. The fabric's links by tier and rate, in
    # the order of each group's first link: the usual width and speed of a tier are its most
    # common ones, a tie to the one seen first (Counter.most_common(1) over the links in order).
    groups = fabric.rate_groups()
    usual: dict[bool, tuple[str | None, str | None]] = {}
    for host in (True, False):
        widths: Counter[str] = Counter()
        speeds: Counter[str] = Counter()
        for (tier, width, speed), rows in groups.items():
            if tier == host:
                if width:
                    widths[width] += len(rows)
                if speed:
                    speeds[speed] += len(rows)
        usual[host] = (widths.most_common(1)[0][0] if widths else None,
                       speeds.most_common(1)[0][0] if speeds else None)
    candidates: set[int] = set()
    for (tier, width, speed), rows in groups.items():
        if (width, speed) != usual[tier]:
            candidates.update(rows)
    before = {link_key(lk): lk for lk in previous} if previous else {}
    at = fabric.link_rows()
    links = fabric.links
    if len(before) * 8 > len(links):  # a whole snapshot before (`auditor topology`): walk all
        candidates.update(i for i, lk in enumerate(links) if link_key(lk) in before)
    else:  # the links that ran otherwise (`suspects`): those at their a ends' nodes
        for guid in {key[0] for key in before}:
            candidates.update(i for i in at.get(guid, ()) if link_key(links[i]) in before)
    # Only ports with a "Could be" hint add a candidate of their own.
    hints: dict[tuple[str, int], list[tuple[str | None, str | None, str]]] = {}
    for p in fabric.hinted_ports():
        # ibsim advertises 12X on every port, so every 4X link there says "Could be 12X";
        # no HDR/NDR/XDR switch or HCA has 12X ports, so that hint is noise, not capability.
        port = (p.guid, p.port)
        if p.could_be_width and p.could_be_width != "12X":
            hints.setdefault(port, []).append((p.could_be_width, None, "port could train wider"))
        if p.could_be_speed:
            hints.setdefault(port, []).append((None, p.could_be_speed, "port could train faster"))
    for guid, number in hints:
        candidates.update(i for i in at.get(guid, ())
                          if (guid, number) in ((links[i].a_guid, links[i].a_port),
                                                (links[i].b_guid, links[i].b_port)))
    hcas = {g for g, n in fabric.nodes.items() if n.node_type == NodeType.HCA}
    found = []
    for i in sorted(candidates):
        lk = links[i]
        tier = lk.a_guid in hcas or lk.b_guid in hcas
        candidates_here = [*hints.get((lk.a_guid, lk.a_port), ()),
                           *hints.get((lk.b_guid, lk.b_port), ())]
        old = before.get(link_key(lk))
        if old is not None and (old.width, old.speed) != (lk.width, lk.speed):
            candidates_here.append((old.width, old.speed, "slower or narrower than last snapshot"))
        width, speed = usual[tier]
        if (width, speed) != (lk.width, lk.speed):
            candidates_here.append(
                (width, speed, f"below most {'host' if tier else 'switch'} links"))
        if not candidates_here:
            continue
        own_width, own_speed = _rank(lk.width, WIDTHS), _rank(lk.speed, SPEEDS)
        for cand_width, cand_speed, why in candidates_here:
            narrower = _rank(cand_width, WIDTHS) > own_width >= 0
            slower = _rank(cand_speed, SPEEDS) > own_speed >= 0
            if narrower or slower:
                found.append(Degraded(
                    ends_of(fabric, lk), lk.width, lk.speed,
                    cand_width if narrower else lk.width,
                    cand_speed if slower else lk.speed,
                    why,
                ))
                break
    return found


def _shared_guids(fabric: Fabric) -> set[str]:
    """Keys of the nodes that share a GUID with another node of the snapshot (`GUID~2`, ...)
    and the GUID they share."""
    dups = {key: guid for key in fabric.nodes if (guid := duplicated_guid(key))}
    return set(dups) | set(dups.values())


def changes(fabric: Fabric, previous: Fabric | None) -> Changes:
    """Links that appeared or disappeared since `previous`; a cable whose one end stayed while
    the other moved to another port is reported once, as moved. Not as moved: a cable of a node
    that shares its GUID with another (either snapshot), and a cable whose old port is still up
    with no peer now (iblinkinfo's "Port not available": it did not leave that port; two
    nodes sharing a GUID look like this through the tools); those are appeared/disappeared."""
    if previous is None:
        return Changes([], [], [])
    now = {link_key(lk): lk for lk in fabric.links}
    then = {link_key(lk): lk for lk in previous.links}
    new = [now[k] for k in sorted(now.keys() - then.keys())]
    gone = [then[k] for k in sorted(then.keys() - now.keys())]
    moved = []
    matched_new: set[EdgeKey] = set()
    matched_gone: set[EdgeKey] = set()
    held: set[EdgeKey] = set()  # appeared, but not a moved cable
    shared = _shared_guids(fabric) | _shared_guids(previous)
    linked = {(lk.a_guid, lk.a_port) for lk in fabric.links}
    linked |= {(lk.b_guid, lk.b_port) for lk in fabric.links}
    still_up = {key for key, p in fabric.ports.items()
                if p.phys_state == "LinkUp" and key not in linked}
    for old in gone:
        if old.a_guid in shared or old.b_guid in shared:
            continue
        old_ends = {(old.a_guid, old.a_port), (old.b_guid, old.b_port)}
        old_nodes = {old.a_guid, old.b_guid}
        for lk in new:
            key = link_key(lk)
            if key in matched_new or key in held or lk.a_guid in shared or lk.b_guid in shared:
                continue
            ends = {(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)}
            if ends & old_ends or {lk.a_guid, lk.b_guid} == old_nodes:
                if (old_ends - ends) & still_up:
                    # The cable is still in the port it would have left: whatever appeared
                    # elsewhere is not this cable, nor any other moved one.
                    held.add(key)
                    break
                moved.append(Moved(ends_of(previous, old), ends_of(fabric, lk)))
                matched_new.add(link_key(lk))
                matched_gone.add(link_key(old))
                break
    return Changes(
        [ends_of(fabric, lk) for lk in new if link_key(lk) not in matched_new],
        [ends_of(previous, lk) for lk in gone if link_key(lk) not in matched_gone],
        moved,
    )
