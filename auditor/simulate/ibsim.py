"""Run the real infiniband-diags tools against an ibsim-simulated two-level fat tree.

For tests and benchmark scripts only; no command of the auditor imports this module.

    tree = FatTree(spines=2, leaves=4, hosts_per_leaf=2)
    with IbSim(write_net_file(tree), tmp_path) as sim:
        sim.opensm_once()                      # LIDs kept, LFTs set, ports Active
        text = sim.run("iblinkinfo").stdout

How it works: ``ibsim`` simulates the fabric and listens on abstract unix sockets named after
``IBSIM_SOCKNAME``; a tool started with ``LD_PRELOAD=libumad2sim.so`` talks to it instead of
``/dev/infiniband``, sitting on node ``SIM_HOST``. No kernel module or IB hardware is needed.

Limits worth knowing:
- At most 10 clients may be attached to one simulator at a time (an opensm daemon is one).
- Without ``opensm_once()`` ports stay ``Initialize`` and only directed-route tools work
  (ibnetdiscover, iblinkinfo); perfquery and ``ibqueryerrors --skip-sl`` need the LFTs.
- The auditor must never write to a fabric, so ``IbSim.run`` refuses counter resets and
  port-state changes even here (``FabricWriteError``, a ``ValueError``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import TracebackType

__all__ = [
    "DEGRADE_MODES",
    "FabricWriteError",
    "FatTree",
    "FatTree3",
    "IbSim",
    "IbSimError",
    "available",
    "check_read_only",
    "expected_links",
    "ibsim_limit_args",
    "umad2sim_library",
    "unavailable_reason",
    "write_net_file",
]

logger = logging.getLogger(__name__)

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

# ibsim's compiled-in table sizes; beyond them it aborts with "no more nodes/switches/ports".
_IBSIM_DEFAULT_NODES = 2048
_IBSIM_DEFAULT_SWITCHES = 256
_IBSIM_DEFAULT_PORTS = _IBSIM_DEFAULT_SWITCHES * 36 + _IBSIM_DEFAULT_NODES * 2

_PROC_NET_UNIX = Path("/proc/net/unix")  # lists the abstract sockets ibsim listens on
_TOOL_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")  # the diags live in sbin, often off PATH
_REQUIRED_TOOLS = ("ibsim", "opensm", "ibnetdiscover", "iblinkinfo", "perfquery", "ibqueryerrors")


class IbSimError(RuntimeError):
    """The simulator could not be started, died, or refused a console command."""


class FabricWriteError(ValueError):
    """A tool invocation that would write to the fabric (counter reset, port state change)."""


# ---------------------------------------------------------------------------------- topology


def _digits(count: int) -> int:
    return max(2, len(str(count)))


@dataclass(frozen=True)
class FatTree:
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
    def hosts(self) -> int:
        return self.leaves // self.rails * self.hosts_per_leaf

    @property
    def switches(self) -> int:
        return self.spines + self.leaves

    def spine_name(self, index: int) -> str:
        """Name of spine ``index`` (1-based), e.g. ``spine01``."""
        return f"spine{index:0{_digits(self.spines)}d}"

    def leaf_name(self, index: int) -> str:
        return f"leaf{index:0{_digits(self.leaves)}d}"

    def host_name(self, index: int) -> str:
        return f"gpu-node-{index:0{_digits(self.hosts)}d}"

    def spine_names(self) -> list[str]:
        return [self.spine_name(s) for s in range(1, self.spines + 1)]

    def leaf_names(self) -> list[str]:
        return [self.leaf_name(leaf) for leaf in range(1, self.leaves + 1)]

    def host_names(self) -> list[str]:
        return [self.host_name(h) for h in range(1, self.hosts + 1)]

    def uplink_port(self, spine: int) -> int:
        """Leaf port that goes to spine number ``spine``."""
        return self.hosts_per_leaf + spine

    def host_attachment(self, host: int, rail: int = 0) -> tuple[int, int]:
        """(leaf number, leaf port) of host number ``host``'s HCA on ``rail`` (0-based)."""
        group, port = divmod(host - 1, self.hosts_per_leaf)
        return group * self.rails + rail + 1, port + 1

    def hca_node(self, host: int, rail: int = 0) -> str:
        """ibsim's node id of a host's HCA on ``rail``: the host name on a single rail."""
        name = self.host_name(host)
        return name if self.rails == 1 else f"{name}-{HCA_PREFIX}{rail}"

    def switch_description(self, name: str) -> str:
        return f"MF0;{name}:{self.model}/U1"

    @staticmethod
    def host_description(name: str, rail: int = 0) -> str:
        return f"{name} {HCA_PREFIX}{rail}"

    def spine_lid(self, spine: int) -> int:
        return spine

    def leaf_lid(self, leaf: int) -> int:
        return self.spines + leaf

    def host_lid(self, host: int, rail: int = 0) -> int:
        return self.switches + (host - 1) * self.rails + rail + 1

    def lids(self) -> dict[str, int]:
        """Static LID of every node by name (a switch's LID is its port 0's)."""
        out = {self.spine_name(s): self.spine_lid(s) for s in range(1, self.spines + 1)}
        out |= {self.leaf_name(i): self.leaf_lid(i) for i in range(1, self.leaves + 1)}
        out |= {self.hca_node(h, r): self.host_lid(h, r) for h in range(1, self.hosts + 1)
                for r in range(self.rails)}
        return out

    def spine_guid(self, spine: int) -> int:
        return _SPINE_GUID_BASE + spine

    def leaf_guid(self, leaf: int) -> int:
        return _LEAF_GUID_BASE + leaf

    def host_guid(self, host: int, rail: int = 0) -> int:
        """Node GUID of host ``host``'s HCA on ``rail``; its port 1 GUID is this + 1."""
        return _HOST_GUID_BASE + host * _HOST_GUID_STEP + rail * _RAIL_GUID_STEP


@dataclass(frozen=True)
class FatTree3:
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
    def hosts(self) -> int:
        return self.leaves // self.rails * self.hosts_per_leaf

    @property
    def switches(self) -> int:
        return self.cores + self.spines + self.leaves

    def core_name(self, index: int) -> str:
        return f"core{index:0{_digits(self.cores)}d}"

    def spine_name(self, index: int) -> str:
        return f"spine{index:0{_digits(self.spines)}d}"

    def leaf_name(self, index: int) -> str:
        return f"leaf{index:0{_digits(self.leaves)}d}"

    def host_name(self, index: int) -> str:
        return f"gpu-node-{index:0{_digits(self.hosts)}d}"

    def core_names(self) -> list[str]:
        return [self.core_name(c) for c in range(1, self.cores + 1)]

    def spine_names(self) -> list[str]:
        return [self.spine_name(s) for s in range(1, self.spines + 1)]

    def leaf_names(self) -> list[str]:
        return [self.leaf_name(leaf) for leaf in range(1, self.leaves + 1)]

    def host_names(self) -> list[str]:
        return [self.host_name(h) for h in range(1, self.hosts + 1)]

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

    def host_attachment(self, host: int, rail: int = 0) -> tuple[int, int]:
        """(leaf number, leaf port) of host number ``host``'s HCA on ``rail`` (0-based)."""
        group, port = divmod(host - 1, self.hosts_per_leaf)
        return group * self.rails + rail + 1, port + 1

    def hca_node(self, host: int, rail: int = 0) -> str:
        name = self.host_name(host)
        return name if self.rails == 1 else f"{name}-{HCA_PREFIX}{rail}"

    def switch_description(self, name: str) -> str:
        return f"MF0;{name}:{self.model}/U1"

    @staticmethod
    def host_description(name: str, rail: int = 0) -> str:
        return f"{name} {HCA_PREFIX}{rail}"

    def core_lid(self, core: int) -> int:
        return core

    def spine_lid(self, spine: int) -> int:
        return self.cores + spine

    def leaf_lid(self, leaf: int) -> int:
        return self.cores + self.spines + leaf

    def host_lid(self, host: int, rail: int = 0) -> int:
        return self.switches + (host - 1) * self.rails + rail + 1

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

    def spine_guid(self, spine: int) -> int:
        return _SPINE_GUID_BASE + spine

    def leaf_guid(self, leaf: int) -> int:
        return _LEAF_GUID_BASE + leaf

    def host_guid(self, host: int, rail: int = 0) -> int:
        return _HOST_GUID_BASE + host * _HOST_GUID_STEP + rail * _RAIL_GUID_STEP


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
        lines.extend([f"vendid=0x{_VENDOR_ID:04x}", f"devid=0x{_SWITCH_DEVICE_ID:04x}"])
        lines.append(f"switchguid=0x{guid:016x}")
        desc = tree.switch_description(name)
        lines.append(f'Switch {nports} "{name}" # "{desc}" enhanced port 0 lid {lid}')
        lines.extend(ports)
        lines.append("")

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
        # vendid/devid/switchguid apply to the next node only, so they repeat per switch
        lines.extend([f"vendid=0x{_VENDOR_ID:04x}", f"devid=0x{_SWITCH_DEVICE_ID:04x}"])
        lines.append(f"switchguid=0x{guid:016x}")
        desc = tree.switch_description(name)
        lines.append(f'Switch {nports} "{name}" # "{desc}" enhanced port 0 lid {lid}')
        lines.extend(ports)
        lines.append("")  # a blank line ends the node

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

    for host in range(1, tree.hosts + 1):
        name = tree.host_name(host)
        for rail in range(tree.rails):
            leaf, port = tree.host_attachment(host, rail)
            lines.extend([f"vendid=0x{_VENDOR_ID:04x}", f"devid=0x{_HCA_DEVICE_ID:04x}"])
            lines.append(f"caguid=0x{tree.host_guid(host, rail):016x}")
            lines.append(f'Hca 1 "{tree.hca_node(host, rail)}" # '
                         f'"{tree.host_description(name, rail)}"')
            # "# lid N" on a CA port line is how ibsim takes a CA port's LID
            lines.append(f'[1] "{tree.leaf_name(leaf)}"[{port}] # lid '
                         f'{tree.host_lid(host, rail)}')
            lines.append("")
    return "\n".join(lines)


_NODE_LINE = re.compile(r'^(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]+)"', re.MULTILINE)


def _net_nodes(net_text: str) -> list[tuple[str, int, str]]:
    return [(kind, int(n), nodeid) for kind, n, nodeid in _NODE_LINE.findall(net_text)]


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def ibsim_limit_args(net_text: str) -> list[str]:
    """ibsim ``-N/-S/-P`` options the net file needs; empty when the defaults suffice.

    ibsim counts a switch as ports+1 table entries (port 0) and a CA as its ports.
    """
    nodes = _net_nodes(net_text)
    switches = sum(1 for kind, _, _ in nodes if kind == "Switch")
    ports = sum(n + 1 if kind == "Switch" else n for kind, n, _ in nodes)
    args: list[str] = []
    for flag, need, default in (
        ("-N", len(nodes), _IBSIM_DEFAULT_NODES),
        ("-S", switches, _IBSIM_DEFAULT_SWITCHES),
        ("-P", ports, _IBSIM_DEFAULT_PORTS),
    ):
        if need > default:
            args += [flag, str(_pow2_at_least(need))]
    return args


# ---------------------------------------------------------------------------------- environment


def _which(tool: str) -> str | None:
    path = os.environ.get("PATH", "")
    return shutil.which(tool, path=os.pathsep.join([path, *_TOOL_DIRS]))


@cache
def umad2sim_library() -> str | None:
    """Path of libumad2sim.so (Debian package libumad2sim0), or None."""
    for pattern in ("lib/*/umad2sim/libumad2sim.so", "lib*/umad2sim/libumad2sim.so"):
        found = sorted(Path("/usr").glob(pattern))
        if found:
            return str(found[0])
    dpkg = _which("dpkg")
    if dpkg is None:
        return None
    try:
        listing = subprocess.run(
            [dpkg, "-L", "libumad2sim0"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in listing.splitlines():
        if line.endswith("/libumad2sim.so") and Path(line).is_file():
            return line
    return None


def unavailable_reason() -> str | None:
    """Why the simulator can't run here (for ``pytest.mark.skipif``), or None if it can."""
    missing = [tool for tool in _REQUIRED_TOOLS if _which(tool) is None]
    if umad2sim_library() is None:
        missing.append("libumad2sim.so")
    if not _PROC_NET_UNIX.exists():
        missing.append("/proc/net/unix")
    if missing:
        return (
            f"ibsim harness needs {', '.join(missing)} "
            "(apt-get install ibsim-utils infiniband-diags opensm)"
        )
    return None


def available() -> bool:
    """True when ibsim, opensm, the diag tools and libumad2sim.so are all installed."""
    return unavailable_reason() is None


# ---------------------------------------------------------------------------------- read-only guard

# tool -> (forbidden short flags, short flags that take a value, forbidden long options)
_RESET_OPTIONS: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "perfquery": ("rR", "zCPtsy", ("reset_after_read", "Reset_only")),
    "ibqueryerrors": ("kK", "sGSDozCPty", ("clear-errors", "clear-counts")),
}
_WRITING_TOOLS = frozenset({"ibclearerrors", "ibclearcounters", "ibccconfig"})
_PORTSTATE_WRITE_OPS = frozenset(
    {"enable", "disable", "on", "off", "reset", "speed", "espeed", "fdr10", "width", "down"}
    | {"arm", "active", "vls", "mtu", "lid", "smlid", "lmc", "mkey", "mkeylease", "mkeyprot"}
)


def check_read_only(args: Iterable[str]) -> None:
    """Raise ``FabricWriteError`` for a command line that resets counters or sets port state.

    Conservative on purpose: a long option counts if it is any prefix of a forbidden one
    (getopt_long accepts unique prefixes) and short-flag clusters such as ``-xR`` are split.
    """
    argv = list(args)
    if not argv:
        raise ValueError("no command given")
    tool = Path(argv[0]).name
    if tool in _WRITING_TOOLS:
        raise FabricWriteError(f"{tool} writes to the fabric; refused")
    if tool == "ibportstate":
        ops = [a for a in argv[1:] if a.lower() in _PORTSTATE_WRITE_OPS]
        if ops:
            raise FabricWriteError(f"ibportstate {ops[0]} changes port state; refused")
        return
    if tool in _RESET_OPTIONS:
        _check_reset_options(tool, argv[1:])


def _check_reset_options(tool: str, args: list[str]) -> None:
    bad_short, value_short, bad_long = _RESET_OPTIONS[tool]
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            name = arg[2:].split("=", 1)[0]
            if name and any(opt.startswith(name) for opt in bad_long):
                raise FabricWriteError(f"{tool} {arg} resets counters; refused")
        elif arg.startswith("-"):
            for flag in arg[1:]:
                if flag in bad_short:
                    raise FabricWriteError(f"{tool} -{flag} resets counters; refused")
                if flag in value_short:
                    break  # the rest of the cluster is that option's value


# ---------------------------------------------------------------------------------- simulator

_NAME_OK = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PROMPT = re.compile(r"sim(?: \(inactive\))?> ")
_CONSOLE_ERROR = re.compile(r"^# |unknown - skipped|bad param", re.MULTILINE)
_SET_REPLY = re.compile(r"has been set to (\d+)")
# client variables that would point a tool at another simulator (UDP mode) or preload twice
_CLIENT_ENV_DROP = ("LD_PRELOAD", "IBSIM_SERVER_NAME", "IBSIM_SERVER_PORT", "SIM_HOST")


def _die_with_parent_prefix() -> list[str]:
    """Command prefix making ibsim get SIGKILL if we die without stopping it.

    Otherwise a killed test run would leave ibsim behind, spinning at 100% CPU once its
    console FIFO hits EOF. setpriv (util-linux, always on Debian) sets PR_SET_PDEATHSIG and
    execs; that survives the exec, and avoids a thread-unsafe preexec_fn.
    """
    setpriv = _which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def _quote_node(node: str) -> str:
    if not node or any(c in node for c in '"\n['):
        raise ValueError(f"bad node id {node!r}")
    return f'"{node}"'


class IbSim:
    """One running ibsim instance with a console, as a context manager.

    ``sim_host`` is the node the tools sit on (default: the first CA in the net file).
    ``name`` becomes ``IBSIM_SOCKNAME`` (default: unique per instance), so several
    simulators can run side by side. Everything goes into ``workdir``: the net file, the
    console FIFO, the console log and the clients' fake ``sys-<pid>/`` trees.

    ibsim runs under ``setpriv --pdeathsig KILL``, so it dies with the *thread* that started
    it: start it from a thread that outlives its use. One instance is not thread-safe.
    """

    def __init__(
        self,
        net_text: str,
        workdir: Path,
        sim_host: str | None = None,
        name: str | None = None,
        *,
        start_timeout: float = 120.0,
    ) -> None:
        self.name = name or f"fa{os.getpid()}x{secrets.token_hex(4)}"
        if not _NAME_OK.fullmatch(self.name):
            raise ValueError(f"bad simulator name {self.name!r}")
        self.net_text = net_text
        self.workdir = Path(workdir)
        if sim_host is None:
            cas = (nodeid for kind, _, nodeid in _net_nodes(net_text) if kind != "Switch")
            sim_host = next(cas, None)
        self.sim_host = sim_host
        self.start_timeout = start_timeout
        self.net_path = self.workdir / f"{self.name}.net"
        self.fifo_path = self.workdir / f"{self.name}.console"
        self.log_path = self.workdir / f"{self.name}.log"
        self.opensm_dir = self.workdir / f"{self.name}-opensm"
        self._proc: subprocess.Popen[bytes] | None = None
        self._console_fd: int | None = None
        self._log_offset = 0
        self._markers = itertools.count(1)
        self._client_pids: set[int] = set()

    # -- lifecycle

    def __enter__(self) -> IbSim:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        """Start ibsim and wait until its control socket exists (the net file is parsed)."""
        if self._proc is not None:
            raise IbSimError("simulator already started")
        ibsim = _which("ibsim")
        if ibsim is None:
            raise IbSimError(unavailable_reason() or "ibsim not found")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.net_path.write_text(self.net_text)
        try:
            os.mkfifo(self.fifo_path)
            # Open the read end non-blocking first so opening the write end doesn't block,
            # then hand ibsim a blocking read end. We keep the write end open for ibsim's
            # lifetime: at EOF on its console ibsim busy-loops at 100% CPU.
            read_fd = os.open(self.fifo_path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                self._console_fd = os.open(self.fifo_path, os.O_WRONLY)
                os.set_blocking(read_fd, True)
                env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV_DROP}
                env["IBSIM_SOCKNAME"] = self.name
                cmd = [
                    *_die_with_parent_prefix(),
                    ibsim,
                    "-s",
                    *ibsim_limit_args(self.net_text),
                    self.net_path.name,
                ]
                logger.debug("starting %s in %s", cmd, self.workdir)
                with self.log_path.open("wb") as log:
                    self._proc = subprocess.Popen(
                        cmd,
                        stdin=read_fd,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=self.workdir,
                        env=env,
                    )
            finally:
                os.close(read_fd)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        if self._proc is None:
            raise IbSimError("simulator not started")
        needle = f"@{self.name}:ctl@"
        deadline = time.monotonic() + self.start_timeout
        while True:
            rc = self._proc.poll()
            if rc is not None:
                raise IbSimError(f"ibsim exited ({rc}) while starting:\n{self.log_tail()}")
            if needle in _PROC_NET_UNIX.read_text(encoding="utf-8", errors="replace"):
                break
            if time.monotonic() > deadline:
                raise IbSimError(
                    f"ibsim not ready after {self.start_timeout:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.02)
        # the console replies of later commands are searched from here on; the parse noise
        # before it ("cannot parse remote lid ...") can be megabytes on large fabrics
        self._log_offset = self.log_path.stat().st_size

    def stop(self) -> None:
        """Quit ibsim (killing it if it doesn't go) and clean up; safe to call twice."""
        proc, fd = self._proc, self._console_fd
        self._console_fd = None
        try:
            if fd is not None:
                if proc is not None and proc.poll() is None:
                    # if ibsim is gone or its pipe is full, the kill below handles it
                    with contextlib.suppress(OSError):
                        os.write(fd, b"Quit\n")
                os.close(fd)
            if proc is not None:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    logger.warning("ibsim %s did not quit; killing it", proc.pid)
                    proc.kill()
                    proc.wait(timeout=10)
        finally:
            self.fifo_path.unlink(missing_ok=True)
            for pid in list(self._client_pids):
                self._remove_client_tree(pid)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the console/stderr log, for error messages."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 64 * 1024))
                text = log.read().decode(errors="replace")
        except OSError:
            return "(no ibsim log)"
        return "\n".join(text.splitlines()[-lines:])

    def _require_running(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise IbSimError("simulator not started")
        rc = self._proc.poll()
        if rc is not None:
            raise IbSimError(f"ibsim exited with status {rc}:\n{self.log_tail()}")
        return self._proc

    # -- clients

    def client_env(self) -> dict[str, str]:
        """Environment for a diag tool attached to this simulator."""
        so = umad2sim_library()
        if so is None:
            raise IbSimError(unavailable_reason() or "libumad2sim.so not found")
        env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV_DROP}
        env |= {"LD_PRELOAD": so, "IBSIM_SOCKNAME": self.name}
        if self.sim_host is not None:
            env["SIM_HOST"] = self.sim_host
        return env

    def run(
        self, *args: str, timeout: float = 60.0, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one diag tool against the simulator and return its output (never raises on rc).

        Raises ``FabricWriteError`` for counter resets, ``subprocess.TimeoutExpired`` after
        ``timeout`` seconds (a client whose simulator is gone retries forever).
        """
        check_read_only(args)
        self._require_running()
        exe = _which(args[0])
        if exe is None:
            raise IbSimError(f"{args[0]} not found")
        full_env = self.client_env() | dict(env or {})
        # cwd matters: umad2sim builds its fake /sys and /dev in ./sys-<pid>/
        with subprocess.Popen(
            [exe, *args[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            cwd=self.workdir,
            env=full_env,
        ) as proc:
            self._client_pids.add(proc.pid)
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                self._remove_client_tree(proc.pid)
                raise
        self._remove_client_tree(proc.pid)
        return subprocess.CompletedProcess(list(args), proc.returncode, out, err)

    def _remove_client_tree(self, pid: int) -> None:
        shutil.rmtree(self.workdir / f"sys-{pid}", ignore_errors=True)
        self._client_pids.discard(pid)

    def opensm_once(
        self,
        timeout: float = 300.0,
        *,
        routing_engine: str | None = None,
        lmc: int = 0,
        dump_dir: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """One opensm sweep: keeps the static LIDs, programs LFTs, ports become Active.

        The cache/tmp dirs are per simulator, so the LID assignment is not taken from
        another fabric's guid2lid file. ``routing_engine`` is opensm's ``-R`` (minhop, updn,
        ftree, ...; opensm falls back to minhop when an engine fails: its log says which ran),
        ``lmc`` its ``-l`` (LMC > 0 gives each CA port 2^LMC LIDs: opensm then moves LIDs that
        are not aligned). ``dump_dir`` makes opensm write its routing dumps (opensm-lfts.dump,
        opensm.fdbs, ...) there: log flags 0x43 switch on OSM_LOG_ROUTING.
        """
        self.opensm_dir.mkdir(parents=True, exist_ok=True)
        osm_env = {"OSM_CACHE_DIR": str(self.opensm_dir), "OSM_TMP_DIR": str(self.opensm_dir)}
        log = self.opensm_dir / "opensm.log"
        args = ["opensm", "--once", "-f", str(log)]
        if routing_engine is not None:
            if not re.fullmatch(r"[a-z_0-9,]+", routing_engine):
                raise ValueError(f"bad routing engine {routing_engine!r}")
            args += ["-R", routing_engine]
        if not 0 <= lmc <= 7:
            raise ValueError("LMC is 0..7")
        if lmc:
            args += ["-l", str(lmc)]
        if dump_dir is not None:
            Path(dump_dir).mkdir(parents=True, exist_ok=True)
            args += ["-D", "0x43", "--dump_files_dir", str(dump_dir)]
        result = self.run(*args, timeout=timeout, env=osm_env)
        if result.returncode != 0:
            raise IbSimError(
                f"opensm --once failed with status {result.returncode}: "
                f"{(result.stderr or result.stdout).strip()[-2000:]} (log: {log})"
            )
        return result

    # -- console

    def console(self, *commands: str, timeout: float = 30.0) -> str:
        """Send console commands and return ibsim's replies once it has handled them all.

        The console is asynchronous, so a comment ``#<name>-mark-N`` goes last and we wait
        until ibsim echoes it back into the log.
        """
        proc = self._require_running()
        if self._console_fd is None:
            raise IbSimError("simulator console closed")
        for command in commands:
            if "\n" in command or "\r" in command:
                raise ValueError(f"one console command per argument, got {command!r}")
        marker = f"#{self.name}-mark-{next(self._markers)}"
        # a trailing non-digit keeps mark-1 from matching a half-written mark-10
        found = re.compile(re.escape(marker).encode() + rb"\D")
        payload = "".join(f"{c}\n" for c in commands) + marker + "\n"
        start = self._log_offset
        data = payload.encode()
        while data:
            data = data[os.write(self._console_fd, data) :]
        deadline = time.monotonic() + timeout
        buf = b""
        with self.log_path.open("rb") as log:
            while True:
                log.seek(start + len(buf))
                buf += log.read()
                hit = found.search(buf)
                if hit:
                    self._log_offset = start + hit.start() + len(marker)
                    return _PROMPT.sub("", buf[: hit.start()].decode(errors="replace"))
                if proc.poll() is not None:
                    raise IbSimError(f"ibsim exited during {commands!r}:\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise IbSimError(f"no console reply to {commands!r} within {timeout} s")
                time.sleep(0.01)

    def _checked(self, command: str) -> str:
        reply = self.console(command)
        if _CONSOLE_ERROR.search(reply):
            raise IbSimError(f"ibsim refused {command!r}: {reply.strip()}")
        return reply

    def unlink(self, node: str, port: int | None = None) -> str:
        """Pull a cable: both ends go Down/Polling. ``port=None`` unlinks the whole node."""
        where = _quote_node(node) + ("" if port is None else f"[{port}]")
        return self._checked(f"Unlink {where}")

    def relink(self, node: str, port: int | None = None) -> str:
        """Put a cable back: both ends go Initialize/LinkUp (Active after ``opensm_once``)."""
        where = _quote_node(node) + ("" if port is None else f"[{port}]")
        return self._checked(f"ReLink {where}")

    def set_counter(self, node: str, port: int, field: str, value: int) -> int:
        """Set a PMA counter; returns the value ibsim stored (it clamps to the field width).

        ``field`` is ``PortCounters.SymbolErrorCounter`` or just ``SymbolErrorCounter``
        (meaning PortCounters); other attributes such as ``PortCountersExtended.*`` work too.
        """
        if not re.fullmatch(r"[A-Za-z]+(\.[A-Za-z0-9]+)?", field) or value < 0:
            raise ValueError(f"bad counter {field}={value}")
        if "." not in field:
            field = f"PortCounters.{field}"
        reply = self._checked(f"PerformanceSet {_quote_node(node)}[{port}] {field}={value}")
        stored = _SET_REPLY.search(reply)
        if stored is None:
            raise IbSimError(f"unexpected reply to PerformanceSet: {reply.strip()}")
        return int(stored.group(1))
