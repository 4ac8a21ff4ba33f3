"""Parse the host's /sys/class/infiniband dump: port state, rate and error counters per HCA port.

The collector reads everything with ONE read-only command (`SYSFS_COMMAND` in
auditor/collect/hostcmd.py), whose stdout is `grep -H` output: `<path>:<first line of the file>`
per file, e.g.

    /sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE
    /sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp
    /sys/class/infiniband/mlx5_0/ports/1/rate:200 Gb/sec (4X HDR)
    /sys/class/infiniband/mlx5_0/ports/1/counters/link_downed:3
    /sys/class/infiniband/mlx5_0/node_guid:1070:fd03:0012:3456

Value formats are those of drivers/infiniband/core/sysfs.c (state_show, phys_state_show,
rate_show, show_pma_counter, node_guid_show), unchanged since the 2.6 kernels apart from new
speed names. The path is split at its
first ':' (RDMA device names and these paths never contain one; values do).

Normalisation, so sysfs compares with ibstat/iblinkinfo: state `DOWN`/`INIT`/`ARMED`/`ACTIVE`
becomes Down/Initialize/Armed/Active (auditor.models vocabulary; NOP and ACTIVE_DEFER are kept
as printed), phys_state `Phy Test` becomes `PhyTest` (ibstat's spelling). Counters get their
IBTA / perfquery names (link_downed -> LinkDownedCounter, ...). A port that is not up reports
a placeholder rate (mlx5: "10 Gb/sec (4X SDR)"), kept as printed.

Not in the dump: port GUIDs (sysfs has them only inside ports/N/gids/0) and LIDs. Counter samples
are therefore keyed by the device's NODE GUID and port number; the store's CA identity is the
node GUID, and on mlx5 (ConnectX-4 and later, one RDMA device per PCI function) port 1's GUID
equals the node GUID anyway.

Empty output gives an empty snapshot: with no RDMA device the globs stay unexpanded, grep
prints only "No such file or directory" errors to stderr and exits 2. The collector must keep
stderr apart from stdout (an error line on stdout is rejected as unreadable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from auditor.errors import ParseError
from auditor.models import CounterSample
from auditor.parse._common import SPEEDS, split_lines

_KIND = "sysfs"

# The PortCounters attributes drivers/infiniband/core/sysfs.c exposes (pma_attrs and the
# extended set), named as perfquery and ibqueryerrors name them so samples compare.
COUNTER_NAMES: dict[str, str] = {
    "symbol_error": "SymbolErrorCounter",
    "link_error_recovery": "LinkErrorRecoveryCounter",
    "link_downed": "LinkDownedCounter",
    "port_rcv_errors": "PortRcvErrors",
    "port_rcv_remote_physical_errors": "PortRcvRemotePhysicalErrors",
    "port_rcv_switch_relay_errors": "PortRcvSwitchRelayErrors",
    "port_xmit_discards": "PortXmitDiscards",
    "port_xmit_constraint_errors": "PortXmitConstraintErrors",
    "port_rcv_constraint_errors": "PortRcvConstraintErrors",
    "local_link_integrity_errors": "LocalLinkIntegrityErrors",
    "excessive_buffer_overrun_errors": "ExcessiveBufferOverrunErrors",
    "VL15_dropped": "VL15Dropped",
    "port_xmit_data": "PortXmitData",
    "port_rcv_data": "PortRcvData",
    "port_xmit_packets": "PortXmitPkts",
    "port_rcv_packets": "PortRcvPkts",
    "port_xmit_wait": "PortXmitWait",
    "unicast_xmit_packets": "PortUnicastXmitPkts",
    "unicast_rcv_packets": "PortUnicastRcvPkts",
    "multicast_xmit_packets": "PortMulticastXmitPkts",
    "multicast_rcv_packets": "PortMulticastRcvPkts",
}

_PATH_RE = re.compile(
    r"^/sys/class/infiniband/(?P<dev>[A-Za-z0-9_.-]{1,64})/"
    r"(?:ports/(?P<port>\d{1,3})/(?P<attr>state|phys_state|rate|counters/(?P<ctr>\w+))"
    r"|(?P<guid>node_guid))$",
    re.ASCII,
)
_STATE_RE = re.compile(r"^(?P<code>\d{1,3}): (?P<name>[A-Z_]+)$", re.ASCII)
_PHYS_RE = re.compile(r"^(?P<code>\d{1,3}): (?P<name>[A-Za-z <>]+)$", re.ASCII)
# rate_show(): "%d%s Gb/sec (%dX%s)" with "%s" = " SDR" ... " NDR" (" XDR" on newer kernels).
_RATE_RE = re.compile(
    r"^(?P<gbps>\d{1,5}(?:\.5)?) Gb/sec \((?P<width>\d{1,2})X(?: (?P<speed>[A-Z0-9]+))?\)$",
    re.ASCII,
)
_COUNTER_RE = re.compile(r"^\d{1,20}$", re.ASCII)
_NODE_GUID_RE = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}$", re.ASCII)

_STATES = {"DOWN": "Down", "INIT": "Initialize", "ARMED": "Armed", "ACTIVE": "Active"}


@dataclass(frozen=True, slots=True)
class SysfsPort:
    """One port of one RDMA device. `rate` is the kernel's text; width/speed are read from it."""

    device: str
    port: int
    state: str | None = None  # Down, Initialize, Armed, Active (NOP, ACTIVE_DEFER as printed)
    phys_state: str | None = None  # LinkUp, Polling, Disabled, ...
    rate: str | None = None  # "200 Gb/sec (4X HDR)"
    width: str | None = None  # "4X"
    speed: str | None = None  # "HDR"
    counters: dict[str, int] = field(default_factory=dict)  # IBTA names, raw counts


@dataclass(frozen=True, slots=True)
class SysfsSnapshot:
    """Everything one run of SYSFS_COMMAND printed; ports sorted by (device, port)."""

    node_guids: dict[str, str]  # device -> node GUID
    ports: list[SysfsPort]

    def port(self, device: str, port: int) -> SysfsPort | None:
        return next((p for p in self.ports if (p.device, p.port) == (device, port)), None)


@dataclass(slots=True)
class _PortAcc:
    state: str | None = None
    phys_state: str | None = None
    rate: str | None = None
    width: str | None = None
    speed: str | None = None
    counters: dict[str, int] = field(default_factory=dict)


def _set_port_attr(
    acc: _PortAcc, attr: str, counter: str | None, value: str, line_no: int, line: str
) -> None:
    if counter is not None:
        name = COUNTER_NAMES.get(counter)
        if name is None:
            raise ParseError(_KIND, line_no, line, f"unknown counter file {counter!r}")
        if _COUNTER_RE.match(value) is None:
            raise ParseError(_KIND, line_no, line, "expected a counter value")
        acc.counters[name] = int(value)
    elif attr == "state":
        m = _STATE_RE.match(value)
        if m is None:
            raise ParseError(_KIND, line_no, line, "expected '<n>: <STATE>'")
        acc.state = _STATES.get(m.group("name"), m.group("name"))
    elif attr == "phys_state":
        m = _PHYS_RE.match(value)
        if m is None:
            raise ParseError(_KIND, line_no, line, "expected '<n>: <PhysState>'")
        # phys_state_to_str() spells it "Phy Test"; ibstat and iblinkinfo say "PhyTest".
        acc.phys_state = m.group("name").replace("Phy Test", "PhyTest")
    else:  # rate
        m = _RATE_RE.match(value)
        if m is None:
            raise ParseError(_KIND, line_no, line, "expected '<n> Gb/sec (<w>X <SPEED>)'")
        acc.rate = value
        acc.width = m.group("width") + "X"
        speed = m.group("speed")
        acc.speed = speed if speed in SPEEDS else None


def parse_sysfs_ib(text: str) -> SysfsSnapshot:
    """The state, rate and error counters of every HCA port in SYSFS_COMMAND's stdout."""
    guids: dict[str, str] = {}
    ports: dict[tuple[str, int], _PortAcc] = {}
    seen: set[str] = set()

    for line_no, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        path, sep, value = line.partition(":")
        m = _PATH_RE.match(path)
        if not sep or m is None:
            raise ParseError(_KIND, line_no, line, "expected /sys/class/infiniband/...:<value>")
        if path in seen:
            # Every file read here is one line; a second line means a concatenated capture.
            raise ParseError(_KIND, line_no, line, "file repeated")
        seen.add(path)
        value = value.rstrip()
        device = m.group("dev")
        if m.group("guid"):
            if _NODE_GUID_RE.match(value) is None:
                raise ParseError(_KIND, line_no, line, "expected a GUID as xxxx:xxxx:xxxx:xxxx")
            guids[device] = "0x" + value.replace(":", "").lower()
            continue
        acc = ports.setdefault((device, int(m.group("port"))), _PortAcc())
        _set_port_attr(acc, m.group("attr"), m.group("ctr"), value, line_no, line)

    return SysfsSnapshot(
        node_guids=dict(sorted(guids.items())),
        ports=[
            SysfsPort(dev, port, a.state, a.phys_state, a.rate, a.width, a.speed, a.counters)
            for (dev, port), a in sorted(ports.items())
        ],
    )


def to_counter_samples(snapshot: SysfsSnapshot, *, host: str | None = None) -> list[CounterSample]:
    """One CounterSample per port that printed counters, keyed by the device's node GUID.

    `guid` is None for a device whose node_guid line is missing. With `host`, `description`
    is "<host> <device>", the NodeDescription form mlx5 hosts announce ("gpu-node-08 mlx5_0").
    """
    return [
        CounterSample(
            port=p.port,
            counters=dict(p.counters),
            guid=snapshot.node_guids.get(p.device),
            lid=None,
            description=f"{host} {p.device}" if host else None,
            extended=False,
        )
        for p in snapshot.ports
        if p.counters
    ]
