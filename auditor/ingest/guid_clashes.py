"""Two or more nodes printing one node GUID in one capture (cloned VMs, misflashed firmware).

Where a capture lists both nodes, the parser keeps them apart (`GUID`, `GUID~2`, ...:
`models.DuplicateGuid`); here ingest makes the keys stable from sweep to sweep and says what it
saw. The real tools (libibnetdisc) keep one node per GUID: the second node is never listed and
the switch port it hangs off shows "Port not available" in iblinkinfo (`Topology.unplaced`),
which is reported too. Nothing here touches the store.
"""

from __future__ import annotations

from dataclasses import replace

from auditor.models import DuplicateGuid, Link, Topology
from auditor.parse.nodedesc import describe

ISSUE = "node GUID printed by two or more different nodes (kept apart)"
UNPLACED_ISSUE = "port up but its peer not placed by the tool (a GUID shared by two nodes?)"
Issue = tuple[str, int, int | None, str | None]  # reason, lines, first line number, example
_SHOWN = 5  # duplicates / ports named in the warnings; `sources` counts them all


def prefer_owners(topo: Topology, owners: dict[str, str]) -> Topology:
    """The topology with each duplicated GUID kept by the node whose description the newest
    stored snapshot gave that GUID (`owners`: GUID -> description), so the node that had the
    GUID keeps it and the newcomer is the one kept apart, whatever order the tool printed them
    in. Unchanged when no duplicate's owner is known or the owner is already first."""
    rename: dict[str, str] = {}
    duplicates = []
    for dup in topo.duplicates:
        owner = owners.get(dup.guid)
        at = dup.descriptions.index(owner) if owner in dup.descriptions else 0
        if at:
            first, other = dup.keys[0], dup.keys[at]
            rename |= {first: other, other: first}
            descriptions = list(dup.descriptions)
            descriptions[0], descriptions[at] = descriptions[at], descriptions[0]
            dup = replace(dup, descriptions=tuple(descriptions))
        duplicates.append(dup)
    if not rename:
        return topo

    def key(guid: str) -> str:
        return rename.get(guid, guid)

    links = []
    for lk in topo.links:
        ends = sorted([(key(lk.a_guid), lk.a_port), (key(lk.b_guid), lk.b_port)])
        links.append(Link(ends[0][0], ends[0][1], ends[1][0], ends[1][1], lk.width, lk.speed))
    return replace(topo, nodes=[replace(n, guid=key(n.guid)) for n in topo.nodes],
                   ports=[replace(p, guid=key(p.guid)) for p in topo.ports], links=links,
                   duplicates=duplicates)


def warning(dup: DuplicateGuid) -> str:
    """One line for the ingest output: the GUID, every description, and the keys kept."""
    nodes = " and ".join(f"{d!r} (kept as {k})" for k, d in zip(dup.keys, dup.descriptions,
                                                                  strict=True))
    return f"node GUID {dup.guid} is printed by {len(dup.keys)} different nodes: {nodes}"


def findings(topo: Topology) -> tuple[list[Issue], list[str]]:
    """The per-source issues (for `auditor sources`) and the ingest warnings about duplicate
    GUIDs (`topo.duplicates`) and up ports whose peer the tool could not place
    (`topo.unplaced`, what libibnetdisc prints when two nodes share a GUID)."""
    issues: list[Issue] = []
    warnings: list[str] = []
    if topo.duplicates:
        first = min(topo.duplicates, key=lambda d: d.line_no)
        issues.append((ISSUE, sum(len(d.keys) - 1 for d in topo.duplicates), first.line_no,
                       first.line))
        warnings += [warning(d) for d in topo.duplicates[:_SHOWN]]
        if len(topo.duplicates) > _SHOWN:
            warnings.append(f"... and {len(topo.duplicates) - _SHOWN} more node GUIDs printed "
                            "by several nodes (auditor sources)")
    if topo.unplaced:
        names = {n.guid: describe(n.description).name or n.guid for n in topo.nodes}
        ports = ", ".join(f"{names.get(guid, guid)} port {port}"
                          for guid, port, _, _ in topo.unplaced[:_SHOWN])
        more = (f" and {len(topo.unplaced) - _SHOWN} more" if len(topo.unplaced) > _SHOWN
                else "")
        _, _, line_no, line = topo.unplaced[0]
        issues.append((UNPLACED_ISSUE, len(topo.unplaced), line_no, line))
        warnings.append(
            f"{len(topo.unplaced)} port(s) up but with no peer the tool could place "
            f'("Port not available"): {ports}{more}. The tools keep one node per GUID, and '
            "two nodes sharing a GUID look like this: one is not listed and the other seems "
            "to sit on its cable; check the node GUIDs of the hosts on these ports")
    return issues, warnings
