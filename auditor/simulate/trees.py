"""The fabrics the ibsim harness simulates: two-level (`FatTree`) and three-tier (`FatTree3`)
fat trees, rail-optimised when asked, and the ibsim net file of each (`write_net_file`). Names,
GUIDs and LIDs are deterministic, so tests can say which port of which switch a host is on.
(Out of ibsim.py for issue #22: no module over 900 lines; ibsim.py re-exports these.)"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

SWITCH_MODEL = "MQM8700"
HCA_NAME = "mlx5_0"
HCA_PREFIX = "mlx5_"
MAX_SWITCH_PORTS = 254  # ibsim's (and IBTA's) limit for one switch
MAX_UNICAST_LID = 0xBFFF

# PortInfo "enabled" bitmasks as ibsim reads them (w=, s=, e= and width=/speed=/extspeed=).
_W_1X, _W_4X, _W_2X = 1, 2, 16
_S_SDR_DDR_QDR = 1 | 2 | 4
_E_NONE, _E_FDR, _E_EDR, _E_HDR = 0, 1, 2, 4
# (width, speed, extspeed) of a healthy link: both ends enable 4x HDR, so it trains to 4x HDR
_HEALTHY = (_W_4X, _S_SDR_DDR_QDR, _E_FDR | _E_EDR | _E_HDR)

DEGRADE_MODES: Mapping[str, tuple[int, int, int]] = {
    "1x": (_W_1X, _S_SDR_DDR_QDR, _HEALTHY[2]),
    "2x": (_W_2X, _S_SDR_DDR_QDR, _HEALTHY[2]),
    # with no extended speed enabled the link falls back to the best classic speed, QDR
    "QDR": (_W_4X, _S_SDR_DDR_QDR, _E_NONE),
    "FDR": (_W_4X, _S_SDR_DDR_QDR, _E_FDR),
    "EDR": (_W_4X, _S_SDR_DDR_QDR, _E_FDR | _E_EDR),
}
"""Link modes for ``write_net_file(degrade=...)``: (width, speed, extspeed) enable masks."""

# Deterministic GUIDs. A CA's port N GUID is node GUID + N in ibsim, so CA node GUIDs are
# spaced 0x100 apart to keep every node and port GUID unique.
_SPINE_GUID_BASE = 0xB8599F0300100000
_LEAF_GUID_BASE = 0xB8599F0300200000
_CORE_GUID_BASE = 0xB8599F0300300000
_HOST_GUID_BASE = 0x0C42A10300000000
_HOST_GUID_STEP = 0x100
_RAIL_GUID_STEP = 0x10  # a CA's port GUIDs are its node GUID + port: 8 rails fit in a step
_VENDOR_ID = 0x02C9
_SWITCH_DEVICE_ID = 0xD2F0  # Quantum (MQM8700)
_HCA_DEVICE_ID = 0x101B  # ConnectX-6




# ---------------------------------------------------------------------------------- topology


def _digits(count: int) -> int:
    return max(2, len(str(count)))


class _Shape(Protocol):
    """What `_Tree`'s shared methods read: a field in one tree, a property in the other."""

    @property
    def spines(self) -> int: ...
    @property
    def leaves(self) -> int: ...
    @property
    def hosts_per_leaf(self) -> int: ...
    @property
    def rails(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def switches(self) -> int: ...
    @property
    def hosts(self) -> int: ...
    def host_name(self, index: int) -> str: ...
    def spine_name(self, index: int) -> str: ...
    def leaf_name(self, index: int) -> str: ...


class _Tree:
    """What both tree shapes share: names, the host side (leaf groups per rail, HCAs, host
    LIDs after the switches') and GUIDs."""

    @property
    def hosts(self: _Shape) -> int:
        return self.leaves // self.rails * self.hosts_per_leaf

    def spine_name(self: _Shape, index: int) -> str:
        """Name of spine ``index`` (1-based), e.g. ``spine01``."""
        return f"spine{index:0{_digits(self.spines)}d}"

    def leaf_name(self: _Shape, index: int) -> str:
        return f"leaf{index:0{_digits(self.leaves)}d}"

    def host_name(self: _Shape, index: int) -> str:
        return f"gpu-node-{index:0{_digits(self.hosts)}d}"

    def spine_names(self: _Shape) -> list[str]:
        return [self.spine_name(s) for s in range(1, self.spines + 1)]

    def leaf_names(self: _Shape) -> list[str]:
        return [self.leaf_name(leaf) for leaf in range(1, self.leaves + 1)]

    def host_names(self: _Shape) -> list[str]:
        return [self.host_name(h) for h in range(1, self.hosts + 1)]

    def host_attachment(self: _Shape, host: int, rail: int = 0) -> tuple[int, int]:
        """(leaf number, leaf port) of host number ``host``'s HCA on ``rail`` (0-based)."""
        group, port = divmod(host - 1, self.hosts_per_leaf)
        return group * self.rails + rail + 1, port + 1

    def hca_node(self: _Shape, host: int, rail: int = 0) -> str:
        """ibsim's node id of a host's HCA on ``rail``: the host name on a single rail."""
        name = self.host_name(host)
        return name if self.rails == 1 else f"{name}-{HCA_PREFIX}{rail}"

    def switch_description(self: _Shape, name: str) -> str:
        return f"MF0;{name}:{self.model}/U1"

    @staticmethod
    def host_description(name: str, rail: int = 0) -> str:
        return f"{name} {HCA_PREFIX}{rail}"

    def host_lid(self: _Shape, host: int, rail: int = 0) -> int:
        return self.switches + (host - 1) * self.rails + rail + 1

    @staticmethod
    def spine_guid(spine: int) -> int:
        return _SPINE_GUID_BASE + spine

    @staticmethod
    def leaf_guid(leaf: int) -> int:
        return _LEAF_GUID_BASE + leaf

    @staticmethod
    def host_guid(host: int, rail: int = 0) -> int:
        """Node GUID of host ``host``'s HCA on ``rail``; its port 1 GUID is this + 1."""
        return _HOST_GUID_BASE + host * _HOST_GUID_STEP + rail * _RAIL_GUID_STEP


@dataclass(frozen=True)
class FatTree(_Tree):
    """A two-level fat tree: every leaf has one uplink to every spine.

    Leaf ports 1..H go to the leaf's hosts and leaf port H+s to spine s; spine port l goes to
    leaf l. ``leaf_ports``/``spine_ports`` left at 0 become just enough (H+S and L); a larger
    value leaves the extra ports unconnected (``Down/ Polling``). LIDs are static: spines
    1..S, leaves S+1..S+L, then the hosts' HCAs in order.

    ``rails`` > 1 makes it rail-optimised, as GPU clusters are built: every host has one HCA
    (its own node, ``<host> mlx5_<r>``) per rail, and the leaves come in groups of ``rails``,
    leaf r of a group taking HCA r of the group's hosts (issue #20: a host is several nodes).
    """

    spines: int
    leaves: int
    hosts_per_leaf: int
    leaf_ports: int = 0
    spine_ports: int = 0
    model: str = SWITCH_MODEL
    rails: int = 1

    def __post_init__(self) -> None:
        for attr in ("spines", "leaves", "hosts_per_leaf", "rails"):
            if getattr(self, attr) < 1:
                raise ValueError(f"FatTree.{attr} must be >= 1")
        if self.leaves % self.rails or self.rails > 8:
            raise ValueError("leaves must be a multiple of rails (one leaf per rail), rails <= 8")
        need_leaf, need_spine = self.hosts_per_leaf + self.spines, self.leaves
        # frozen: resolve the "0 = just enough" defaults through object.__setattr__
        object.__setattr__(self, "leaf_ports", self.leaf_ports or need_leaf)
        object.__setattr__(self, "spine_ports", self.spine_ports or need_spine)
        if self.leaf_ports < need_leaf:
            raise ValueError(f"a leaf needs {need_leaf} ports (hosts + spines)")
        if self.spine_ports < need_spine:
            raise ValueError(f"a spine needs {need_spine} ports (one per leaf)")
        if max(self.leaf_ports, self.spine_ports) > MAX_SWITCH_PORTS:
            raise ValueError(f"switches have at most {MAX_SWITCH_PORTS} ports")
        if self.switches + self.hosts * self.rails > MAX_UNICAST_LID:
            raise ValueError(f"more than {MAX_UNICAST_LID} LIDs needed")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.model):
            raise ValueError(f"bad switch model {self.model!r}")

    @property
    def switches(self) -> int:
        return self.spines + self.leaves

    def uplink_port(self, spine: int) -> int:
        """Leaf port that goes to spine number ``spine``."""
        return self.hosts_per_leaf + spine

    def spine_lid(self, spine: int) -> int:
        return spine

    def leaf_lid(self, leaf: int) -> int:
        return self.spines + leaf

    def lids(self) -> dict[str, int]:
        """Static LID of every node by name (a switch's LID is its port 0's)."""
        out = {self.spine_name(s): self.spine_lid(s) for s in range(1, self.spines + 1)}
        out |= {self.leaf_name(i): self.leaf_lid(i) for i in range(1, self.leaves + 1)}
        out |= {self.hca_node(h, r): self.host_lid(h, r) for h in range(1, self.hosts + 1)
                for r in range(self.rails)}
        return out


@dataclass(frozen=True)
class FatTree3(_Tree):
    """A three-tier fat tree: leaves and spines grouped in pods, cores above the pods.

    Each of the ``pods`` has ``leaves_per_pod`` leaves and ``spines_per_pod`` spines, every leaf
    with one uplink to every spine of its pod. The cores form one plane per spine position:
    plane s holds ``cores // spines_per_pod`` cores, and each of them has one link to the s-th
    spine of every pod (the usual three-tier layout: a pod's spine s reaches the other pods only
    through plane s). Names are global, as in `FatTree`: pod 1 has leaf01..leafL and
    spine01..spineS, pod 2 the next ones; cores are core01..

    Ports: leaf 1..H hosts, H+s the pod's spine s; spine 1..L the pod's leaf l, L+c the plane's
    core c; core port p goes to pod p. LIDs are static: cores 1..C, then spines, leaves, and the
    hosts' HCAs. ``rails`` works as in `FatTree`, within each pod: the pod's leaves come in
    groups of ``rails``, leaf r of a group taking HCA r of the group's hosts.
    """

    pods: int
    leaves_per_pod: int
    spines_per_pod: int
    cores: int
    hosts_per_leaf: int
    model: str = SWITCH_MODEL
    rails: int = 1

    def __post_init__(self) -> None:
        for attr in ("pods", "leaves_per_pod", "spines_per_pod", "cores", "hosts_per_leaf",
                     "rails"):
            if getattr(self, attr) < 1:
                raise ValueError(f"FatTree3.{attr} must be >= 1")
        if self.cores % self.spines_per_pod:
            raise ValueError("cores must be a multiple of spines_per_pod (one plane per spine)")
        if self.leaves_per_pod % self.rails or self.rails > 8:
            raise ValueError("leaves_per_pod must be a multiple of rails, rails <= 8")
        if max(self.leaf_ports, self.spine_ports, self.core_ports) > MAX_SWITCH_PORTS:
            raise ValueError(f"switches have at most {MAX_SWITCH_PORTS} ports")
        if self.switches + self.hosts * self.rails > MAX_UNICAST_LID:
            raise ValueError(f"more than {MAX_UNICAST_LID} LIDs needed")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.model):
            raise ValueError(f"bad switch model {self.model!r}")

    @property
    def leaves(self) -> int:
        return self.pods * self.leaves_per_pod

    @property
    def spines(self) -> int:
        return self.pods * self.spines_per_pod

    @property
    def cores_per_plane(self) -> int:
        return self.cores // self.spines_per_pod

    @property
    def leaf_ports(self) -> int:
        return self.hosts_per_leaf + self.spines_per_pod

    @property
    def spine_ports(self) -> int:
        return self.leaves_per_pod + self.cores_per_plane

    @property
    def core_ports(self) -> int:
        return self.pods

    @property
    def switches(self) -> int:
        return self.cores + self.spines + self.leaves

    def core_name(self, index: int) -> str:
        return f"core{index:0{_digits(self.cores)}d}"

    def core_names(self) -> list[str]:
        return [self.core_name(c) for c in range(1, self.cores + 1)]

    def leaf_pod(self, leaf: int) -> int:
        """Pod number (1-based) of leaf ``leaf``."""
        return (leaf - 1) // self.leaves_per_pod + 1

    def spine_pod(self, spine: int) -> int:
        return (spine - 1) // self.spines_per_pod + 1

    def pod_spine(self, pod: int, position: int) -> int:
        """Global number of the ``position``-th (1-based) spine of ``pod``."""
        return (pod - 1) * self.spines_per_pod + position

    def pod_leaf(self, pod: int, position: int) -> int:
        return (pod - 1) * self.leaves_per_pod + position

    def core_plane(self, core: int) -> int:
        """The spine position (1-based) whose spines core ``core`` links."""
        return (core - 1) // self.cores_per_plane + 1

    def uplink_port(self, position: int) -> int:
        """Leaf port that goes to its pod's spine number ``position``."""
        return self.hosts_per_leaf + position

    def spine_uplink_port(self, core: int) -> int:
        """Spine port that goes to core ``core`` (of the spine's plane)."""
        return self.leaves_per_pod + (core - 1) % self.cores_per_plane + 1

    def core_lid(self, core: int) -> int:
        return core

    def spine_lid(self, spine: int) -> int:
        return self.cores + spine

    def leaf_lid(self, leaf: int) -> int:
        return self.cores + self.spines + leaf

    def lids(self) -> dict[str, int]:
        """Static LID of every node by name (a switch's LID is its port 0's)."""
        out = {self.core_name(c): self.core_lid(c) for c in range(1, self.cores + 1)}
        out |= {self.spine_name(s): self.spine_lid(s) for s in range(1, self.spines + 1)}
        out |= {self.leaf_name(i): self.leaf_lid(i) for i in range(1, self.leaves + 1)}
        out |= {self.hca_node(h, r): self.host_lid(h, r) for h in range(1, self.hosts + 1)
                for r in range(self.rails)}
        return out

    def core_guid(self, core: int) -> int:
        return _CORE_GUID_BASE + core


def expected_links(tree: FatTree | FatTree3) -> int:
    """Cables in the tree: one per host and rail plus one per leaf-spine pair (and, in three
    tiers, one per spine-core pair)."""
    if isinstance(tree, FatTree3):
        return (tree.hosts * tree.rails + tree.leaves * tree.spines_per_pod
                + tree.spines * tree.cores_per_plane)
    return tree.hosts * tree.rails + tree.leaves * tree.spines


def _degrade_masks(degrade: Mapping[tuple[str, str], str] | None,
                   links: set[tuple[str, str]]) -> dict[frozenset[str], str]:
    """`degrade`'s links as w=/s=/e= suffixes, keyed by the pair of switch names."""
    slow: dict[frozenset[str], str] = {}
    for (lower, upper), mode in (degrade or {}).items():
        if (lower, upper) not in links:
            raise ValueError(f"degrade: no link {lower}-{upper} in this tree")
        if mode not in DEGRADE_MODES:
            raise ValueError(f"degrade: mode {mode!r} not one of {', '.join(DEGRADE_MODES)}")
        width, speed, ext = DEGRADE_MODES[mode]
        slow[frozenset((lower, upper))] = f" w={width} s={speed} e={ext}"
    return slow


def _switch_block(tree: FatTree | FatTree3, name: str, guid: int, nports: int, lid: int,
                  ports: Iterable[str]) -> list[str]:
    """One switch of a net file: vendid/devid/switchguid apply to the next node only, so they
    repeat per switch; a blank line ends the node."""
    return [f"vendid=0x{_VENDOR_ID:04x}", f"devid=0x{_SWITCH_DEVICE_ID:04x}",
            f"switchguid=0x{guid:016x}",
            f'Switch {nports} "{name}" # "{tree.switch_description(name)}" enhanced port 0 '
            f"lid {lid}", *ports, ""]


def _hca_blocks(tree: FatTree | FatTree3) -> list[str]:
    """Every host's HCAs, one node per rail; "# lid N" on a CA port line is how ibsim takes a
    CA port's LID."""
    lines: list[str] = []
    for host in range(1, tree.hosts + 1):
        name = tree.host_name(host)
        for rail in range(tree.rails):
            leaf, port = tree.host_attachment(host, rail)
            lines.extend([f"vendid=0x{_VENDOR_ID:04x}", f"devid=0x{_HCA_DEVICE_ID:04x}"])
            lines.append(f"caguid=0x{tree.host_guid(host, rail):016x}")
            lines.append(f'Hca 1 "{tree.hca_node(host, rail)}" # '
                         f'"{tree.host_description(name, rail)}"')
            lines.append(f'[1] "{tree.leaf_name(leaf)}"[{port}] # lid '
                         f'{tree.host_lid(host, rail)}')
            lines.append("")
    return lines


def _write_three_tier(tree: FatTree3, degrade: Mapping[tuple[str, str], str] | None) -> str:
    links = {(tree.leaf_name(leaf), tree.spine_name(tree.pod_spine(tree.leaf_pod(leaf), s)))
             for leaf in range(1, tree.leaves + 1) for s in range(1, tree.spines_per_pod + 1)}
    links |= {(tree.spine_name(tree.pod_spine(pod, tree.core_plane(c))), tree.core_name(c))
              for c in range(1, tree.cores + 1) for pod in range(1, tree.pods + 1)}
    slow = _degrade_masks(degrade, links)

    def suffix(a: str, b: str) -> str:
        return slow.get(frozenset((a, b)), "")

    lines = [
        "# fabric-auditor ibsim net file: three-tier fat tree",
        f"# {tree.pods} pods x ({tree.leaves_per_pod} leaves + {tree.spines_per_pod} spines),"
        f" {tree.cores} cores, {tree.hosts_per_leaf} hosts per leaf = {tree.hosts} hosts",
    ]
    lines += [f"# degraded: {a}-{b} {mode}" for (a, b), mode in (degrade or {}).items()]
    width, speed, ext = _HEALTHY
    lines += [f"width={width}", f"speed={speed}", f"extspeed={ext}", ""]

    def switch(name: str, guid: int, nports: int, lid: int, ports: Iterable[str]) -> None:
        lines.extend(_switch_block(tree, name, guid, nports, lid, ports))

    for c in range(1, tree.cores + 1):
        plane, name = tree.core_plane(c), tree.core_name(c)
        ports = []
        for pod in range(1, tree.pods + 1):
            spine = tree.spine_name(tree.pod_spine(pod, plane))
            ports.append(f'[{pod}] "{spine}"[{tree.spine_uplink_port(c)}]{suffix(spine, name)}')
        switch(name, tree.core_guid(c), tree.core_ports, tree.core_lid(c), ports)

    for s in range(1, tree.spines + 1):
        pod, name = tree.spine_pod(s), tree.spine_name(s)
        position = (s - 1) % tree.spines_per_pod + 1
        ports = []
        for p in range(1, tree.leaves_per_pod + 1):
            leaf_id = tree.leaf_name(tree.pod_leaf(pod, p))
            ports.append(f'[{p}] "{leaf_id}"[{tree.uplink_port(position)}]'
                         f'{suffix(leaf_id, name)}')
        for k in range(1, tree.cores_per_plane + 1):
            c = (position - 1) * tree.cores_per_plane + k
            core = tree.core_name(c)
            ports.append(f'[{tree.spine_uplink_port(c)}] "{core}"[{pod}]{suffix(name, core)}')
        switch(name, tree.spine_guid(s), tree.spine_ports, tree.spine_lid(s), ports)

    for leaf in range(1, tree.leaves + 1):
        pod, name = tree.leaf_pod(leaf), tree.leaf_name(leaf)
        group, rail = divmod(leaf - 1, tree.rails)
        first_host = group * tree.hosts_per_leaf
        ports = [f'[{p}] "{tree.hca_node(first_host + p, rail)}"[1]'
                 for p in range(1, tree.hosts_per_leaf + 1)]
        position_in_pod = (leaf - 1) % tree.leaves_per_pod + 1
        for s in range(1, tree.spines_per_pod + 1):
            spine = tree.spine_name(tree.pod_spine(pod, s))
            ports.append(f'[{tree.uplink_port(s)}] "{spine}"[{position_in_pod}]'
                         f'{suffix(name, spine)}')
        switch(name, tree.leaf_guid(leaf), tree.leaf_ports, tree.leaf_lid(leaf), ports)

    lines += _hca_blocks(tree)
    return "\n".join(lines)


def write_net_file(tree: FatTree | FatTree3,
                   degrade: Mapping[tuple[str, str], str] | None = None) -> str:
    """ibsim net-file text for ``tree``.

    ``degrade`` maps (leaf name, spine name) to a key of ``DEGRADE_MODES`` (in three tiers also
    (spine name, core name)); that link gets the same w=/s=/e= masks on both ends, because ibsim
    aborts when two ends share no enabled bit.
    """
    if isinstance(tree, FatTree3):
        return _write_three_tier(tree, degrade)
    leaf_index = {name: i for i, name in enumerate(tree.leaf_names(), 1)}
    spine_index = {name: i for i, name in enumerate(tree.spine_names(), 1)}
    slow: dict[tuple[int, int], str] = {}
    for (leaf_id, spine_id), mode in (degrade or {}).items():
        if leaf_id not in leaf_index or spine_id not in spine_index:
            raise ValueError(f"degrade: no link {leaf_id}-{spine_id} in this tree")
        if mode not in DEGRADE_MODES:
            raise ValueError(f"degrade: mode {mode!r} not one of {', '.join(DEGRADE_MODES)}")
        width, speed, ext = DEGRADE_MODES[mode]
        slow[leaf_index[leaf_id], spine_index[spine_id]] = f" w={width} s={speed} e={ext}"

    lines = [
        "# fabric-auditor ibsim net file: two-level fat tree",
        f"# {tree.spines} spines x {tree.leaves} leaves x {tree.hosts_per_leaf} hosts per leaf"
        f" = {tree.hosts} hosts; {tree.leaf_ports}-port leaves, {tree.spine_ports}-port spines",
    ]
    lines += [f"# degraded: {lf}-{sp} {mode}" for (lf, sp), mode in (degrade or {}).items()]
    # enable masks for every port below; per-port w=/s=/e= override them
    width, speed, ext = _HEALTHY
    lines += [f"width={width}", f"speed={speed}", f"extspeed={ext}", ""]

    def switch(name: str, guid: int, nports: int, lid: int, ports: Iterable[str]) -> None:
        lines.extend(_switch_block(tree, name, guid, nports, lid, ports))

    for s in range(1, tree.spines + 1):
        ports = [
            f'[{leaf}] "{tree.leaf_name(leaf)}"[{tree.uplink_port(s)}]{slow.get((leaf, s), "")}'
            for leaf in range(1, tree.leaves + 1)
        ]
        switch(tree.spine_name(s), tree.spine_guid(s), tree.spine_ports, tree.spine_lid(s), ports)

    for leaf in range(1, tree.leaves + 1):
        group, rail = divmod(leaf - 1, tree.rails)
        first_host = group * tree.hosts_per_leaf
        ports = [
            f'[{p}] "{tree.hca_node(first_host + p, rail)}"[1]'
            for p in range(1, tree.hosts_per_leaf + 1)
        ]
        ports += [
            f'[{tree.uplink_port(s)}] "{tree.spine_name(s)}"[{leaf}]{slow.get((leaf, s), "")}'
            for s in range(1, tree.spines + 1)
        ]
        name = tree.leaf_name(leaf)
        switch(name, tree.leaf_guid(leaf), tree.leaf_ports, tree.leaf_lid(leaf), ports)

    lines += _hca_blocks(tree)
    return "\n".join(lines)


