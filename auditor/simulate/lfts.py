"""Forwarding tables for the harness's fat trees without running opensm (issue #23): D-mod-K
routing of the kind opensm's minhop and ftree engines give a fat tree, and the tables written
out as `dump_lfts.sh` prints them.

For tests and benchmarks at sizes ibsim cannot run quickly (4,096 hosts: opensm alone takes
9 s there). The rules, for a destination LID d:

- a leaf sends d to the host port d sits on; a spine's LID (and a core's, through the spine of
  the core's plane) up to that spine; anything else up to spine position d mod S (S spines a
  leaf reaches), which spreads destinations evenly over the uplinks, as D-mod-K does;
- a spine sends d down to the leaf d sits under when d is in its pod; in three tiers, to
  another pod up to core (d div S) mod C' + 1 of its plane (C' cores a plane), a spine of its
  own pod at another position down to leaf d mod L + 1 (which sends it up again);
- a core sends d down to the spine of its plane in d's pod.

Routes between switches are min-hop ones (minhop keeps them; ftree and updn drop some).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from auditor.analyse.paths import EndPort
from auditor.models import LidOwner, Link, NodeType, SwitchLft
from auditor.simulate.ibsim import FatTree, FatTree3

__all__ = ["dmodk_tables", "fabric_links", "fabric_owners", "hca_ends", "write_dump_lfts"]


def _g(guid: int) -> str:
    return f"0x{guid:016x}"


def fabric_links(tree: FatTree | FatTree3) -> list[Link]:
    """Every cable of `tree`, ends keyed by node GUID (an HCA by its node GUID, port 1)."""
    links = []
    for host in range(1, tree.hosts + 1):
        for rail in range(tree.rails):
            leaf, port = tree.host_attachment(host, rail)
            links.append(Link(_g(tree.host_guid(host, rail)), 1, _g(tree.leaf_guid(leaf)), port,
                              "4X", "HDR"))
    if isinstance(tree, FatTree3):
        for leaf in range(1, tree.leaves + 1):
            pod, position = tree.leaf_pod(leaf), (leaf - 1) % tree.leaves_per_pod + 1
            for s in range(1, tree.spines_per_pod + 1):
                spine = tree.pod_spine(pod, s)
                links.append(Link(_g(tree.leaf_guid(leaf)), tree.uplink_port(s),
                                  _g(tree.spine_guid(spine)), position, "4X", "HDR"))
        for core in range(1, tree.cores + 1):
            for pod in range(1, tree.pods + 1):
                spine = tree.pod_spine(pod, tree.core_plane(core))
                links.append(Link(_g(tree.spine_guid(spine)), tree.spine_uplink_port(core),
                                  _g(tree.core_guid(core)), pod, "4X", "HDR"))
        return links
    for leaf in range(1, tree.leaves + 1):
        for s in range(1, tree.spines + 1):
            links.append(Link(_g(tree.leaf_guid(leaf)), tree.uplink_port(s),
                              _g(tree.spine_guid(s)), leaf, "4X", "HDR"))
    return links


def hca_ends(tree: FatTree | FatTree3) -> list[EndPort]:
    """Every HCA port of `tree` with its (static) LID."""
    return [EndPort(_g(tree.host_guid(h, r)), 1, tree.host_lid(h, r))
            for h in range(1, tree.hosts + 1) for r in range(tree.rails)]


def fabric_owners(tree: FatTree | FatTree3) -> dict[int, LidOwner]:
    """Who owns each LID of `tree`, as a `dump_lfts.sh` dump names them."""
    owners: dict[int, LidOwner] = {}

    def switch(guid: int, name: str, lid: int) -> None:
        owners[lid] = LidOwner(_g(guid), NodeType.SWITCH, tree.switch_description(name), lid)

    if isinstance(tree, FatTree3):
        for c in range(1, tree.cores + 1):
            switch(tree.core_guid(c), tree.core_name(c), tree.core_lid(c))
    for s in range(1, tree.spines + 1):
        switch(tree.spine_guid(s), tree.spine_name(s), tree.spine_lid(s))
    for leaf in range(1, tree.leaves + 1):
        switch(tree.leaf_guid(leaf), tree.leaf_name(leaf), tree.leaf_lid(leaf))
    for h in range(1, tree.hosts + 1):
        for r in range(tree.rails):
            lid = tree.host_lid(h, r)
            owners[lid] = LidOwner(_g(tree.host_guid(h, r) + 1), NodeType.HCA,
                                   tree.host_description(tree.host_name(h), r), lid)
    return owners


def dmodk_tables(tree: FatTree | FatTree3) -> list[SwitchLft]:
    """Every switch's LFT under D-mod-K routing (see the module docstring)."""
    if isinstance(tree, FatTree3):
        return _three_tier(tree)
    top = tree.switches + tree.hosts * tree.rails
    hca_leaf: dict[int, tuple[int, int]] = {}  # LID -> (leaf, port)
    for h in range(1, tree.hosts + 1):
        for r in range(tree.rails):
            hca_leaf[tree.host_lid(h, r)] = tree.host_attachment(h, r)
    leaf_of_lid = {tree.leaf_lid(i): i for i in range(1, tree.leaves + 1)}
    spine_of_lid = {tree.spine_lid(s): s for s in range(1, tree.spines + 1)}
    tables = []
    for s in range(1, tree.spines + 1):
        ports = {}
        for d in range(1, top + 1):
            if d in spine_of_lid:
                ports[d] = 0 if spine_of_lid[d] == s else d % tree.leaves + 1
            elif d in leaf_of_lid:
                ports[d] = leaf_of_lid[d]
            else:
                ports[d] = hca_leaf[d][0]
        tables.append(SwitchLft(_g(tree.spine_guid(s)), tree.spine_lid(s),
                                tree.switch_description(tree.spine_name(s)), 0, top, ports))
    for leaf in range(1, tree.leaves + 1):
        ports = {}
        for d in range(1, top + 1):
            if d == tree.leaf_lid(leaf):
                ports[d] = 0
            elif d in spine_of_lid:
                ports[d] = tree.uplink_port(spine_of_lid[d])
            elif d in hca_leaf and hca_leaf[d][0] == leaf:
                ports[d] = hca_leaf[d][1]
            else:
                ports[d] = tree.uplink_port(d % tree.spines + 1)
        tables.append(SwitchLft(_g(tree.leaf_guid(leaf)), tree.leaf_lid(leaf),
                                tree.switch_description(tree.leaf_name(leaf)), 0, top, ports))
    return tables


def _three_tier(tree: FatTree3) -> list[SwitchLft]:
    top = tree.switches + tree.hosts * tree.rails
    sp, lp, cpp = tree.spines_per_pod, tree.leaves_per_pod, tree.cores_per_plane
    # each LID: (kind, pod, position) with position in pod (leaf/spine), plane (core) or the
    # leaf number and port (hca)
    where: dict[int, tuple[str, int, int, int]] = {}
    for c in range(1, tree.cores + 1):
        where[tree.core_lid(c)] = ("core", 0, tree.core_plane(c), c)
    for s in range(1, tree.spines + 1):
        where[tree.spine_lid(s)] = ("spine", tree.spine_pod(s), (s - 1) % sp + 1, s)
    for leaf in range(1, tree.leaves + 1):
        where[tree.leaf_lid(leaf)] = ("leaf", tree.leaf_pod(leaf), (leaf - 1) % lp + 1, leaf)
    for h in range(1, tree.hosts + 1):
        for r in range(tree.rails):
            leaf, port = tree.host_attachment(h, r)
            where[tree.host_lid(h, r)] = ("hca", tree.leaf_pod(leaf), leaf, port)

    def leaf_port(leaf: int, d: int) -> int:
        kind, _, position, number = where[d]
        if d == tree.leaf_lid(leaf):
            return 0
        if kind == "hca" and position == leaf:
            return number
        if kind == "spine":
            return tree.uplink_port(position)
        if kind == "core":
            return tree.uplink_port(position)  # the spine of the core's plane
        return tree.uplink_port(d % sp + 1)

    def spine_port(spine: int, d: int) -> int:
        kind, pod, position, number = where[d]
        my_pod, my_position = tree.spine_pod(spine), (spine - 1) % sp + 1
        if d == tree.spine_lid(spine):
            return 0
        down_leaf = (d % lp) + 1  # a leaf of this pod, to go up again from
        if kind == "core":
            if position == my_position:
                return tree.spine_uplink_port(number)
            return down_leaf
        if kind == "spine" and position != my_position:
            return down_leaf
        if pod == my_pod:
            if kind == "hca":
                return (position - 1) % lp + 1  # the leaf d sits under
            return position  # a leaf of this pod
        core = (my_position - 1) * cpp + (d // sp) % cpp + 1
        return tree.spine_uplink_port(core)

    def core_port(core: int, d: int) -> int:
        kind, pod, _, _ = where[d]
        if d == tree.core_lid(core):
            return 0
        if kind == "core":
            return d % tree.pods + 1
        return pod

    tables = []
    for c in range(1, tree.cores + 1):
        tables.append(SwitchLft(_g(tree.core_guid(c)), tree.core_lid(c),
                                tree.switch_description(tree.core_name(c)), 0, top,
                                {d: core_port(c, d) for d in range(1, top + 1)}))
    for s in range(1, tree.spines + 1):
        tables.append(SwitchLft(_g(tree.spine_guid(s)), tree.spine_lid(s),
                                tree.switch_description(tree.spine_name(s)), 0, top,
                                {d: spine_port(s, d) for d in range(1, top + 1)}))
    for leaf in range(1, tree.leaves + 1):
        tables.append(SwitchLft(_g(tree.leaf_guid(leaf)), tree.leaf_lid(leaf),
                                tree.switch_description(tree.leaf_name(leaf)), 0, top,
                                {d: leaf_port(leaf, d) for d in range(1, top + 1)}))
    return tables


_TYPE_NAMES = {NodeType.SWITCH: "Switch", NodeType.HCA: "Channel Adapter",
               NodeType.ROUTER: "Router"}


def write_dump_lfts(tables: Iterable[SwitchLft], owners: Mapping[int, LidOwner]) -> str:
    """`tables` as `dump_lfts.sh` prints them (infiniband-diags dump_fts.c:331-373), each
    switch addressed by its LID (as `ibroute <lid>` does), then the script's trailer."""
    out: list[str] = []
    for t in tables:
        out.append(f"Unicast lids [0x{t.first_lid:x}-0x{t.last_lid:x}] of switch Lid {t.lid} "
                   f"guid {t.guid} ({t.description}):")
        out += ["  Lid  Out   Destination", "       Port     Info "]
        last_base, last_count = 0, 0
        for lid in sorted(t.ports):
            owner = owners.get(lid)
            if owner is None:
                info = ": (node info not available fabric scan)"
            elif owner.base_lid != lid and owner.base_lid == last_base:
                info = (f": (path #{lid - owner.base_lid + 1} out of {last_count}: portguid "
                        f"{owner.port_guid})")
            else:
                last_base, last_count = owner.base_lid, owner.count
                kind = _TYPE_NAMES.get(owner.node_type, "?(0)?") if owner.node_type else "?(0)?"
                info = f": ({kind} portguid {owner.port_guid}: '{owner.description}')"
            out.append(f"0x{lid:04x} {t.ports[lid]:03d} {info}")
        out.append(f"{len(t.ports)} valid lids dumped ")
    out += ["", "*** WARNING ***: this command has been replaced by dump_fts", "", ""]
    return "\n".join(out)
