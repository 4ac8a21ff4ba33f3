"""Naming ports the way the fabric graph does: (device, port name as printed) -> (GUID, port).

Switch logs say `leaf04` and `IB1/17`, UFM says `1/17/1` or gives GUID:port, hosts say `mlx5_0`
port 1 or `ib0`. This module resolves all of them against one topology snapshot, and says why
when it cannot (the reason is counted per source and shown by `auditor sources`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from auditor.models import Fabric, NodeType

# Onyx 1U switches: IB1/17 is port 17. Split ports (IB1/1/2, Quantum HDR200 -> 2 x HDR100) are
# numbered per half: physical port N gives logical ports 2N-1 and 2N on Quantum firmware 27.x.
# On Quantum-2 the same three numbers are ASIC/Cage/Port, two ports per OSFP cage (MLNX-OS
# "InfiniBand Interface": `interface ib 1/3/1` and `1/3/2` are ports 1 and 2 of cage 3), and
# the formula gives the same IB port: 2*(Cage-1)+Port. Checked on a real ibdiagnet net_dump row,
# `1/16/1:31:INI:LINK UP:5:4x:100:...` (label 1/16/1 is IB port 31, at NDR: Mellanox/
# ufm_sdk_3.0@8028db2 plugins/UFM_NDT_Plugin/ndt_file_creator.py:203-204).
_ONYX = re.compile(r"(?:IB)?(\d+)/(\d+)(?:/(\d+))?", re.IGNORECASE | re.ASCII)
# Quantum-2 split: ASIC/Cage/Port/Split (ibdiagnet's label legend, ndt_file_creator.py@8028db2
# :150-153); the split number follows Quantum's rule (unverified on Quantum-2).
_Q2_SPLIT = re.compile(r"(?:IB)?(\d+)/(\d+)/(\d+)/(\d+)", re.IGNORECASE | re.ASCII)
# NVOS (Quantum-2) names ports swXpY[sZ]: cage X, port Y of the twin-port OSFP cage, split Z
# (the names NVIDIA's NVOS tests use on 64-port QM9700s: sw1p1..sw32p2, split children
# sw10p1s1; echuawu/sonic-mgmt@f7d3019 ngts/nvos_tools/Devices/IbDevice.py:196,252-270), i.e.
# the same cage/port as MLNX-OS's 1/X/Y: IB port 2*(X-1)+Y. A split child's number follows
# Quantum's split rule (2*(base-1)+Z), which no NVOS capture we found confirms; where an
# ibdiagnet db_csv of the fabric exists, its PORT_HIERARCHY_INFO (label -> PortNum) is the
# authority. Multi-plane names (sw32p1pl1, XDR) are not IB ports here.
_NVOS = re.compile(r"sw(\d+)p(\d+)(?:s(\d+))?", re.IGNORECASE | re.ASCII)
_HCA_PORT = re.compile(r"((?:mlx\d|hfi\d|qib|ibp)\S*)/(\d+)", re.ASCII)
_GUID = re.compile(r"(?:0x)?([0-9a-fA-F]{1,16})")
# Every pattern above is used with fullmatch: `$` with match() accepts a trailing newline.


def normalise_guid(text: str) -> str | None:
    m = _GUID.fullmatch(text.strip())
    return f"0x{int(m.group(1), 16):016x}" if m else None


def port_number(port_name: str) -> int | None:
    """The IB port number a switch's port label stands for, or None if it is not an IB port."""
    name = port_name.strip()
    if name.isascii() and name.isdigit():  # "¹" is a digit to isdigit(), not to int()
        return int(name)
    m = _ONYX.fullmatch(name)
    if m:
        slot, port, split = int(m.group(1)), int(m.group(2)), m.group(3)
        if slot != 1:
            return None  # modular (director) chassis need a port-label map
        return port if split is None else 2 * (port - 1) + int(split)
    m = _Q2_SPLIT.fullmatch(name)
    if m:
        asic, cage, half, split = (int(g) for g in m.groups())
        if asic != 1 or not (1 <= half <= 2 and 1 <= split <= 2):
            return None
        return 2 * (2 * (cage - 1) + half - 1) + split
    m = _NVOS.fullmatch(name)
    if m:
        cage, half, split = int(m.group(1)), int(m.group(2)), m.group(3)
        base = 2 * (cage - 1) + half
        return base if split is None else 2 * (base - 1) + int(split)
    return None


def nvos_port_name(port: int) -> str:
    """The NVOS name of IB port `port` of an unsplit Quantum-2 switch (31 -> `sw16p1`): the
    inverse of `port_number` for NVOS names."""
    if port < 1:
        raise ValueError(f"no NVOS name for port {port}")
    return f"sw{(port + 1) // 2}p{2 - port % 2}"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A port name resolved to a node GUID and port, or why not."""

    guid: str | None
    port: int | None
    reason: str | None = None  # why it could not be resolved


class PortMap:
    """Resolves names against one fabric snapshot (plus aliases from the config)."""

    def __init__(self, fabric: Fabric | None, aliases: dict[str, str] | None = None) -> None:
        self.aliases = {k.lower(): v for k, v in (aliases or {}).items()}
        self.switches: dict[str, str] = {}
        self.hcas: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        self.known_guids: set[str] = set()
        self.port_guids: dict[str, tuple[str, int]] = {}
        if fabric is None:
            return
        for node in fabric.nodes.values():
            self.known_guids.add(node.guid)
            key = node.name.lower()
            if node.node_type == NodeType.SWITCH:
                self.switches[key] = node.guid
            else:
                self.hcas[key].append((node.guid, node.device))
        for (guid, port), p in fabric.ports.items():
            if p.port_guid and p.port_guid != guid:
                self.port_guids[p.port_guid] = (guid, port)

    def _name(self, device: str) -> str:
        key = device.strip().lower()
        key = self.aliases.get(key, key)
        if key not in self.switches and key not in self.hcas:
            short = key.split(".", 1)[0]
            key = self.aliases.get(short, short)
        return key.lower()

    def node(self, device: str) -> str | None:
        key = self._name(device)
        if key in self.switches:
            return self.switches[key]
        hcas = self.hcas.get(key)
        return hcas[0][0] if hcas and len(hcas) == 1 else None

    def resolve(self, device: str | None, port_name: str | None, guid: str | None = None,
                port: int | None = None) -> Resolved:
        if guid:
            g = normalise_guid(guid)
            if g in self.port_guids:
                g, port = self.port_guids[g][0], port or self.port_guids[g][1]
            if g is None:
                return Resolved(None, None, "bad GUID")
            if port is None and port_name:
                port = port_number(port_name)
            return Resolved(g, port, None if port is not None else "no port number")
        if not device:
            return Resolved(None, None, "no device named")
        key = self._name(device)
        if key in self.switches:
            number = port_number(port_name) if port_name else None
            if number is None:
                return Resolved(self.switches[key], None,
                                f"port {port_name!r} is not an InfiniBand port label")
            return Resolved(self.switches[key], number)
        if key in self.hcas:
            return self._resolve_host(key, port_name)
        return Resolved(None, None, "unknown device (not in the fabric graph)")

    def _resolve_host(self, key: str, port_name: str | None) -> Resolved:
        hcas = self.hcas[key]
        m = _HCA_PORT.fullmatch(port_name or "")
        if m:
            for guid, device in hcas:
                if device == m.group(1):
                    return Resolved(guid, int(m.group(2)))
            return Resolved(None, None, f"host has no HCA {m.group(1)}")
        if len(hcas) == 1:
            # One HCA on the fabric: any IB netdev or module event of the host is its port 1.
            return Resolved(hcas[0][0], 1)
        return Resolved(None, None, "host has several HCAs and the line names none")
