"""Plain records passed between the stages: parsers return them, the store writes them.

GUIDs are always lower-case `0x` + 16 hex digits. Widths are "1X", "2X", "4X", "8X", "12X";
speeds are the IBTA names "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR".
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Literal


class NodeType(StrEnum):
    SWITCH = "switch"
    HCA = "hca"
    ROUTER = "router"


# The keys the stages share (issue #22: one of each). A port is (node GUID, port number); a link
# is its one or two ends, sorted (one end: a port whose peer no snapshot knows); an edge of the
# fabric graph is the cable as the graph keys it, (a GUID, a port, b GUID, b port), either end
# first.
PortKey = tuple[str, int]
LinkKey = tuple[PortKey, ...]
EdgeKey = tuple[str, int, str, int]


@dataclass(frozen=True, slots=True)
class Node:
    """A node as one capture printed it (switch or HCA)."""

    guid: str
    node_type: NodeType
    description: str
    num_ports: int | None = None
    lid: int | None = None  # switch LID (port 0); None for CAs (their LIDs are per port)


# Port, Link and FabricNode are not frozen: the store builds 40,000 of them for every
# `suspects` of a 12,288-link fabric, and a frozen dataclass's __init__ (object.__setattr__ per
# field) made that 60 ms instead of 25 (issue #13). unsafe_hash keeps them usable as set
# members and dict keys, hashed by value as before. Treat them as immutable.
@dataclass(slots=True, unsafe_hash=True)
class Port:
    """One port of a node as a capture printed it."""

    guid: str  # node GUID
    port: int
    port_guid: str | None = None
    lid: int | None = None
    state: str | None = None  # Active, Down, Initialize, Armed
    phys_state: str | None = None  # LinkUp, Polling, Disabled, ...
    width: str | None = None
    speed: str | None = None
    could_be_width: str | None = None  # iblinkinfo "Could be" hint
    could_be_speed: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class Link:
    """One cable between two ports, with the width and speed it runs at."""

    a_guid: str
    a_port: int
    b_guid: str
    b_port: int
    width: str | None = None
    speed: str | None = None


# A node key that is not a GUID: `lid:<N>` names a far end a capture printed only by LID and
# description (iblinkinfo -S, --switches-only, --down) that no snapshot resolved to a GUID.
LID_KEY_PREFIX = "lid:"
# `<GUID>~<n>`: the n-th different node that printed the same node GUID in one capture.
DUPLICATE_MARK = "~"


def duplicated_guid(key: str) -> str | None:
    """The GUID behind a duplicate's key (`0x..~2` -> `0x..`), None for any other key."""
    guid, mark, _ = key.partition(DUPLICATE_MARK)
    return guid if mark else None


@dataclass(frozen=True, slots=True)
class DuplicateGuid:
    """One node GUID printed by two or more different nodes in one capture (cloned VMs,
    misflashed firmware). The first keeps the GUID, the others are kept apart as `GUID~2`, ...
    `keys` and `descriptions` are parallel; line_no/line are the second record's."""

    guid: str
    keys: tuple[str, ...]
    descriptions: tuple[str, ...]
    line_no: int
    line: str


@dataclass(slots=True)
class Topology:
    """What one ibnetdiscover or iblinkinfo capture says about the fabric."""

    nodes: list[Node] = field(default_factory=list)
    ports: list[Port] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    # Node descriptions cut to parse._common.DESCRIPTION_MAX: (line number, the line, cut too).
    cut: list[tuple[int, str]] = field(default_factory=list)
    duplicates: list[DuplicateGuid] = field(default_factory=list)
    # iblinkinfo ports that are up but whose peer the tool could not place ("Port not
    # available"): (node key, port, line number, line). libibnetdisc keys nodes by GUID, so the
    # second of two nodes sharing a GUID is folded into the first and its switch port loses its
    # peer; the fabric seen through the tools then shows a cable "moved" that never moved.
    unplaced: list[tuple[str, int, int, str]] = field(default_factory=list)


# --- forwarding tables (auditor.parse.dump_lfts, opensm_lfts; auditor.analyse.paths) ---

# The out port a linear forwarding table gives for "no route" (IBTA: a port number above the
# switch's port count drops the packet; the SM and the tools use 255).
NO_ROUTE = 255


@dataclass(slots=True)
class SwitchLft:
    """One switch's unicast linear forwarding table as a tool printed it: DLID -> out port.

    `ports` holds the DLIDs that have a route; out port 0 is the switch itself (its own LID).
    DLIDs without a route (255, or a port above the switch's count) are absent, as are those
    outside `first_lid`..`last_lid`, the range the tool dumped. `stale` lists DLIDs that have
    a route but whose owner the tool could not name (no port has that LID any more: an entry
    the SM has not cleared yet); they stay in `ports`, because the switch still forwards them.
    `lid` is the switch's own LID: the DLID routed to port 0, else the one its header printed.
    """

    guid: str
    lid: int | None
    description: str
    first_lid: int
    last_lid: int
    ports: dict[int, int] = field(default_factory=dict)
    stale: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class LidOwner:
    """The port a DLID belongs to, as a forwarding-table dump named it. With LMC > 0 a port
    has `count` (2^LMC) consecutive LIDs from `base_lid`; every one of them maps here."""

    port_guid: str
    node_type: NodeType | None  # None: a type the tool printed as unknown
    description: str
    base_lid: int
    count: int = 1


@dataclass(slots=True)
class ForwardingTables:
    """What one forwarding-table capture says: each switch's table, in the order printed, and
    the owners of the DLIDs it named (a `-n` dump names none)."""

    switches: list[SwitchLft] = field(default_factory=list)
    owners: dict[int, LidOwner] = field(default_factory=dict)
    # Node descriptions cut to parse._common.DESCRIPTION_MAX: (line number, the line).
    cut: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TraceEnd:
    """The first or last port of an `ibtracert` trace: a node GUID (not a port GUID), its port
    (0 for a switch) and LID range; `simple` traces (`-n`) print only the GUID and port."""

    node_type: NodeType | None
    guid: str
    port: int
    lid: int | None = None
    last_lid: int | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class TraceHop:
    """One hop of an `ibtracert` trace: out of the previous node's `out_port`, into
    `in_port` of the port `port_guid` (a CA's port GUID, a switch's node GUID)."""

    out_port: int
    node_type: NodeType | None
    port_guid: str
    in_port: int
    lid: int | None = None
    last_lid: int | None = None
    description: str | None = None


@dataclass(slots=True)
class Trace:
    """One `ibtracert` route. `dest` is None and `error` says why when the trace stopped."""

    source: TraceEnd | None
    hops: list[TraceHop] = field(default_factory=list)
    dest: TraceEnd | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CounterSample:
    """Counters of one port (port None = the switch aggregate `ALL`) as read at one time."""

    port: int | None
    counters: dict[str, int]
    guid: str | None = None
    lid: int | None = None  # perfquery names the port by LID only
    description: str | None = None
    extended: bool = False


@dataclass(frozen=True, slots=True)
class CounterTable:
    """Counter readings in columns: port i is (guids[i], ports[i]) and its readings are the next
    counts[i] of (names, values). A full `ibqueryerrors --data` of 12,288 links is 24,576 ports
    and 98,000 readings: as a CounterSample per port, then a row tuple per reading, the records
    alone took 0.04 s of CPU to build and flatten (#13)."""

    guids: list[str]
    ports: list[int | None]  # None: the switch aggregate (`ALL`)
    counts: list[int]
    names: list[str]
    values: list[int]

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, int | None, str, int]]) -> CounterTable:
        """One port entry per (GUID, port, counter name, value) row."""
        return cls([r[0] for r in rows], [r[1] for r in rows], [1] * len(rows),
                   [r[2] for r in rows], [r[3] for r in rows])

    def rows(self) -> list[tuple[str, int | None, str, int]]:
        """(GUID, port, counter name, value) of every reading, in order."""
        out: list[tuple[str, int | None, str, int]] = []
        i = 0
        for guid, port, count in zip(self.guids, self.ports, self.counts, strict=True):
            out.extend((guid, port, self.names[k], self.values[k]) for k in range(i, i + count))
            i += count
        return out


@dataclass(slots=True, unsafe_hash=True)
class FabricNode:
    """A node as the store knows it: its description resolved into a name (and model/device)."""

    guid: str
    node_type: NodeType
    description: str
    name: str
    model: str | None = None
    device: str | None = None
    lid: int | None = None


@dataclass(slots=True, eq=False)
class Fabric:
    """The fabric as seen in one topology snapshot.

    `ports` and `links` are read-only views for everyone but their maker; the store's newest
    snapshot makes their objects only as they are asked for (issue #25: a 65,536-GPU fabric's
    393,216 ports and 196,608 links were 1.4 s of every `suspects`), and answers the questions
    below from its indexes. A Fabric built of plain dicts and lists answers them by walking
    `links` and `ports`, on every call (they may have changed since)."""

    seen_at: object  # datetime (UTC, naive); typed loosely to keep this module import-light
    nodes: dict[str, FabricNode] = field(default_factory=dict)
    ports: Mapping[tuple[str, int], Port] = field(default_factory=dict)
    links: Sequence[Link] = field(default_factory=list)

    # The same snapshot read from the cache or from the tables is the same fabric.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fabric):
            return NotImplemented
        return (self.seen_at, self.nodes, self.ports, self.links) == (
            other.seen_at, other.nodes, other.ports, other.links)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq is

    def link_rows(self) -> LinkRows:
        """Each link end's node (with a node record or not): the indexes in `links` of its
        links, ascending, a link with both ends on the node once."""
        at: dict[str, list[int]] = {}
        for i, lk in enumerate(self.links):
            at.setdefault(lk.a_guid, []).append(i)
            if lk.b_guid != lk.a_guid:
                at.setdefault(lk.b_guid, []).append(i)
        return LinkRows(at, self.links)

    def stray_ends(self) -> list[str]:
        """The link ends' nodes that have no node record, in the order the links name them
        first (a end before b end)."""
        nodes = self.nodes
        return list(dict.fromkeys(
            g for lk in self.links for g in (lk.a_guid, lk.b_guid) if g not in nodes))

    def rate_groups(self) -> dict[tuple[bool, str | None, str | None], list[int]]:
        """The indexes in `links` by (an end is an HCA, width, speed): the groups in the order
        of their first link, each one's indexes ascending."""
        hcas = {g for g, n in self.nodes.items() if n.node_type == NodeType.HCA}
        out: dict[tuple[bool, str | None, str | None], list[int]] = {}
        for i, lk in enumerate(self.links):
            out.setdefault((lk.a_guid in hcas or lk.b_guid in hcas, lk.width, lk.speed),
                           []).append(i)
        return out

    def hinted_ports(self) -> list[Port]:
        """The ports with a "Could be" width or speed, in the order of `ports`."""
        return [p for p in self.ports.values() if p.could_be_width or p.could_be_speed]


class LinkRows(Mapping[str, Sequence[int]]):
    """Fabric.link_rows: each link end's node -> the indexes of its links; and, by node, what
    the ranking asks of them without the links' objects (the store's newest snapshot answers
    from its indexes, issue #25). Iterated, the nodes come in no particular order."""

    __slots__ = ("_at", "_links")

    def __init__(self, at: dict[str, list[int]], links: Sequence[Link]) -> None:
        self._at, self._links = at, links

    def __getitem__(self, guid: str) -> Sequence[int]:
        return self._at[guid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def peers(self, guid: str) -> list[str]:
        """The node at the other end of each of the node's links, in their order (the node
        itself for a link between two of its ports)."""
        links = self._links
        return [lk.b_guid if lk.a_guid == guid else lk.a_guid
                for lk in map(links.__getitem__, self._at.get(guid, ()))]

    def peers_of(self, guids: Iterable[str]) -> list[list[str]]:
        """`peers` of each of the nodes `guids`, in their order."""
        return [self.peers(guid) for guid in guids]

    def at_port(self, guid: str, port: int) -> list[int]:
        """The indexes of the links with an end at the port, ascending."""
        links = self._links
        return [i for i in self._at.get(guid, ())
                if (guid, port) in ((links[i].a_guid, links[i].a_port),
                                    (links[i].b_guid, links[i].b_port))]

    def keys_to(self, guid: str, peers: Collection[str]) -> list[EdgeKey]:
        """The keys (a GUID, a port, b GUID, b port) of the node's links whose other end is
        in `peers`, in the links' order."""
        links = self._links
        return [(lk.a_guid, lk.a_port, lk.b_guid, lk.b_port)
                for lk in map(links.__getitem__, self._at.get(guid, ()))
                if (lk.b_guid if lk.a_guid == guid else lk.a_guid) in peers]

    def ports_of(self, guids: Iterable[str]) -> list[PortKey]:
        """The ports of the nodes `guids` that carry a link (in no particular order)."""
        out: list[PortKey] = []
        links = self._links
        for guid in guids:
            for lk in map(links.__getitem__, self._at.get(guid, ())):
                if lk.a_guid == guid:
                    out.append((guid, lk.a_port))
                if lk.b_guid == guid:
                    out.append((guid, lk.b_port))
        return out


class PortPeers(Mapping[PortKey, PortKey]):
    """Every port that ever carried a link up to a moment: its last peer (store.port_peers).
    Read-only; the store's cached answer reads a port's peer only when asked (issue #25)."""

    __slots__ = ("_peers",)

    def __init__(self, peers: dict[PortKey, PortKey] | None = None) -> None:
        self._peers = peers if peers is not None else {}

    def __getitem__(self, key: PortKey) -> PortKey:
        return self._peers[key]

    def __contains__(self, key: object) -> bool:
        return key in self._peers

    def __iter__(self) -> Iterator[PortKey]:
        return iter(self._peers)

    def __len__(self) -> int:
        return len(self._peers)

    def of_nodes(self, guids: Collection[str]) -> list[PortKey]:
        """The ports of the nodes `guids` that had a peer (in no particular order)."""
        return [k for k in self._peers if k[0] in guids]

    def covers(self, fabric: Fabric) -> bool:
        """Whether every link end of `fabric` is known to be here (else: not known)."""
        return False


# Not frozen: a 5-million-line syslog makes tens of thousands of these, and a frozen
# dataclass's __init__ (object.__setattr__ per field) costs 4x as much. Treat as immutable.
@dataclass(slots=True)
class PortEvent:
    """One port state change (or port-level alarm) read from a log line, a poll or a counter.

    `device` and `port_name` are what the source printed (a switch hostname and `IB1/17`, a
    host and `mlx5_0/1`); `guid`/`port` are filled when the source names them itself (UFM,
    opensm) and otherwise resolved against the fabric graph at ingest. Times are aware (UTC).
    """

    at: datetime
    state: str  # "down", "up", or an alarm: "unhealthy", "switch_down", "switch_up", ...
    device: str | None = None
    port_name: str | None = None
    guid: str | None = None
    port: int | None = None
    peer_device: str | None = None
    peer_port_name: str | None = None
    peer_guid: str | None = None
    peer_port: int | None = None
    cable_serial: str | None = None
    code: str | None = None  # the source's own event id (UFM 329, IB event 10, ...)
    line_no: int = 0
    message: str = ""


@dataclass(frozen=True, slots=True)
class Job:
    """One job allocation from the scheduler (Slurm sacct/jobcomp, or a generic JSONL export)."""

    job_id: str
    state: str  # upper case as Slurm prints it: COMPLETED, FAILED, NODE_FAIL, TIMEOUT, ...
    start: datetime | None  # aware UTC; None if it never started
    end: datetime | None  # None while still running ("Unknown")
    nodes: tuple[str, ...]  # expanded host names
    name: str | None = None
    partition: str | None = None
    gpus: int | None = None  # GPUs of the whole allocation (AllocTRES gres/gpu), if known
    exit_code: str | None = None
    line_no: int = 0


@dataclass(slots=True)
class JobTable:
    """Jobs as columns: entry i of every list belongs to job i (the fields of `Job`).

    A month of a 4,096-host cluster is ~100,000 jobs on 1.2 million (job, host) pairs. A frozen
    Job per job cost 0.2 s of CPU and a string per host name 0.12 s more than one string per job,
    and the store wants columns anyway: so a job's hosts are one string, the names joined by
    commas (hostlist syntax keeps commas out of names; `append` refuses one). `rows()` gives the
    Jobs back."""

    job_id: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    start: list[datetime | None] = field(default_factory=list)
    end: list[datetime | None] = field(default_factory=list)
    nodes_joined: list[str] = field(default_factory=list)  # "gpu-001,gpu-002"; "" = none
    name: list[str | None] = field(default_factory=list)
    partition: list[str | None] = field(default_factory=list)
    gpus: list[int | None] = field(default_factory=list)
    exit_code: list[str | None] = field(default_factory=list)
    line_no: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.job_id)

    def append(self, job: Job) -> None:
        if any("," in name or not name for name in job.nodes):
            raise ValueError(f"job {job.job_id}: a host name is empty or holds a comma")
        self.job_id.append(job.job_id)
        self.state.append(job.state)
        self.start.append(job.start)
        self.end.append(job.end)
        self.nodes_joined.append(",".join(job.nodes))
        self.name.append(job.name)
        self.partition.append(job.partition)
        self.gpus.append(job.gpus)
        self.exit_code.append(job.exit_code)
        self.line_no.append(job.line_no)

    def extend(self, other: JobTable) -> None:
        self.job_id += other.job_id
        self.state += other.state
        self.start += other.start
        self.end += other.end
        self.nodes_joined += other.nodes_joined
        self.name += other.name
        self.partition += other.partition
        self.gpus += other.gpus
        self.exit_code += other.exit_code
        self.line_no += other.line_no

    def rows(self) -> list[Job]:
        return [Job(job_id, state, start, end, tuple(nodes.split(",")) if nodes else (), name,
                    partition, gpus, exit_code, line_no)
                for job_id, state, start, end, nodes, name, partition, gpus, exit_code, line_no
                in zip(self.job_id, self.state, self.start, self.end, self.nodes_joined,
                       self.name, self.partition, self.gpus, self.exit_code, self.line_no,
                       strict=True)]


@dataclass(frozen=True, slots=True)
class JobError:
    """One failure line from a job's own log (NCCL, PyTorch, torchelastic, CUDA)."""

    at: datetime | None  # aware UTC; None when the line carries no time (NCCL < 2.26 INFO)
    kind: str  # completion_error, async_event, remote_error, watchdog_timeout, elastic_failed,
    #            socket_error, gpu_error, oom, ...
    network: bool  # True when the line points at the network (IB completion error, port event)
    host: str | None = None  # local host as printed (short name or pod name)
    hca: str | None = None  # mlx5_3
    hca_port: int | None = None
    peer: str | None = None  # remote IP, IPv6 or GID as printed
    status: int | None = None  # ibv_wc_status (12 = IBV_WC_RETRY_EXC_ERR)
    status_name: str | None = None
    rank: int | None = None
    line_no: int = 0
    message: str = ""
    # Where an untimed line (NCCL < 2.26 prints no stamp) lies in time, from the stamped lines
    # around it in the same log: aware UTC bounds, either None when that side has no stamp.
    not_before: datetime | None = None
    not_after: datetime | None = None
    ran_ms: int | None = None  # watchdog timeout: how long the stuck collective had run
    # NCCL port failover (>= 2.29, NCCL_IB_RESILIENCY_PORT_FAILOVER=1): the failed device's
    # index within its merged NIC, and the physical HCAs it may be when `hca` cannot say which
    # (several merged NICs, each with a device at that index).
    dev_index: int | None = None
    hca_candidates: tuple[str, ...] = ()


# What happened to a whole host (issue #20): a host that reboots, crashes or is set DOWN takes
# every rail down with it, and that is not N cable faults.
HOST_EVENT_KINDS = (
    "boot",  # the kernel started at `at` (journalctl --list-boots, last -x, dmesg, slurmctld)
    "crash",  # a boot session that ended without a clean shutdown (last -x `crash`), at its end
    "shutdown",  # a clean shutdown or reboot (last -x `shutdown system down`)
    "down",  # Slurm set the node DOWN (not responding, unexpectedly rebooted, an admin)
    "not_responding",  # slurmctld: `Nodes X not responding`
    "responding",  # slurmctld: `Node X now responding`
    "drain",  # Slurm DRAIN/DRAINED/DRAINING (an admin or a health check took it out)
    "reboot_requested",  # `scontrol reboot`, `Reboot ASAP`, state REBOOT
    "returned",  # `node X returned to service`, `reboot complete`
)


@dataclass(frozen=True, slots=True)
class HostEvent:
    """One thing that happened to a whole host, from the scheduler (sacctmgr show event,
    slurmctld.log) or from the host's own boot records (journalctl --list-boots, last -x,
    the kernel log's `Linux version` line).

    `host` is the name the source printed (a Slurm NodeName, a hostname): the correlation
    resolves it to a fabric host as it does job hosts. `end_at` is the end of a Slurm event
    (None while open, `Unknown`) or the last entry of a boot. `reason` is the source's own text
    (untrusted, cut to 200 characters)."""

    host: str
    at: datetime  # aware UTC
    kind: str  # one of HOST_EVENT_KINDS
    end_at: datetime | None = None
    reason: str = ""
    line_no: int = 0
    message: str = ""


@dataclass(slots=True)
class HostEventsResult:
    """What a host-event file gave: the events in line order, and the lines not read as
    (line_no, line, reason), counted per reason in `sources`. `ignored` counts the lines read
    and left out on purpose (cluster events, states that are not a fault, other log lines)."""

    events: list[HostEvent] = field(default_factory=list)
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)
    ignored: int = 0


@dataclass(frozen=True, slots=True)
class HostAddress:
    """An address (IPoIB, OOB, GID) that names a host, from an /etc/hosts-style file."""

    address: str
    host: str
    aliases: tuple[str, ...] = ()
    line_no: int = 0


@dataclass(frozen=True, slots=True)
class MaintenanceWindow:
    """A declared maintenance window: flaps of the target inside it are not held against it.
    target: a host, a switch, a port `switch:port`, or a link `a:port<->b:port`."""

    target: str
    start: datetime
    end: datetime
    reason: str = ""
    line_no: int = 0


# ---------------------------------------------------------------------------------------------
# IPoIB / GID -> port GUID


def _ipv6_bytes(addr: str) -> bytes | None:
    text = addr.strip().split("<", 1)[0].split("%", 1)[0].removeprefix("[").removesuffix("]")
    try:
        return ipaddress.IPv6Address(text).packed
    except ValueError:
        return None


_LINK_LOCAL_PREFIX = b"\xfe\x80" + bytes(6)


def _interface_id(addr: str) -> bytearray | None:
    packed = _ipv6_bytes(addr)
    if packed is None or packed[:8] != _LINK_LOCAL_PREFIX:
        return None
    iid = bytearray(packed[8:])
    if iid[3:5] == b"\xff\xfe":  # EUI-48 MAC stretched to 64 bits: Ethernet/RoCE, no IB GUID
        return None
    return iid


def ipoib_link_local_to_guid(addr: str) -> str | None:
    """IPoIB link-local `fe80::966d:ae03:8b:df78[%ib0]` -> port GUID `0x946dae03008bdf78`.

    RFC 4391 builds the interface ID from the port GUID as a modified EUI-64, i.e. with the
    universal/local bit (0x02 of the first byte) inverted, so it is flipped back here. None for
    anything that is not fe80::/64 or whose interface ID is MAC-derived (ff:fe in the middle)."""
    iid = _interface_id(addr)
    if iid is None:
        return None
    iid[0] ^= 0x02
    return "0x" + iid.hex()


def gid_to_guid(gid: str) -> str | None:
    """IB GID `fe80:0000:0000:0000:946d:ae03:008b:df78` -> port GUID `0x946dae03008bdf78`.

    A GID is the 64-bit subnet prefix followed by the port GUID itself (no bit flip, unlike an
    IPoIB address). Only the default subnet prefix fe80::/64 is accepted: RoCE GIDs
    (`::ffff:a.b.c.d`, an IPv6 address, or a MAC-derived fe80 one) carry no GUID."""
    iid = _interface_id(gid)
    return None if iid is None else "0x" + iid.hex()


@dataclass(frozen=True, slots=True)
class Location:
    """Where a node is (inventory CSV): site, row, rack, U and faceplate port labels."""

    name: str
    site: str | None = None
    row: str | None = None
    rack: str | None = None
    u: str | None = None
    port_labels: tuple[tuple[int, str], ...] = ()
    line_no: int = 0


ELLIPSIS = "\u2026"


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, the last one an ellipsis when anything was cut.
    Only the length: what is stored keeps its characters (see `inert` for display)."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


# --- SNMP polls (auditor.collect.snmp polls, auditor.analyse.snmp_changes compares two) ---

SnmpStatus = Literal["ok", "timeout", "auth_failed", "parse_failed", "error"]
ChangeKind = Literal["down", "up", "flap", "reboot", "gone"]
TICKS_WRAP = 2**32  # TimeTicks is 32-bit: sysUpTime wraps after ~497 days


@dataclass(frozen=True)
class SnmpPort:
    """One interface of a switch as its SNMP agent reports it."""

    if_index: int
    if_name: str
    oper_status: str  # "up", "down", "lowerLayerDown", ... ("status<N>" if not in IF-MIB)
    admin_status: str | None
    last_change_ticks: int | None  # ifLastChange: sysUpTime at the last oper change
    in_errors: int | None  # Counter32: wraps
    out_errors: int | None
    hc_in_octets: int | None
    hc_out_octets: int | None
    symbol_errors: int | None  # MELLANOX-IF-VPI-MIB; None when the agent has no such table
    phys_state: str | None  # IB PortPhysicalState name ("linkUp", "polling", ...)


@dataclass(frozen=True)
class SnmpResult:
    """One switch's SNMP poll: its interfaces, or why there are none."""

    target: str
    status: SnmpStatus
    detail: str
    polled_at: datetime  # UTC; on success the moment sysUpTime was read, else the start
    sys_uptime_ticks: int | None
    ports: list[SnmpPort] = field(default_factory=list)


@dataclass(frozen=True)
class SnmpChange:
    """A change between two polls of one switch."""

    if_name: str  # "" for kind "reboot" (the whole agent)
    kind: ChangeKind
    at_estimate: datetime | None
    detail: str


# -- transceiver diagnostics (issue #14) ------------------------------------------------------

# The quantities a module's diagnostics report, in the units every parser converts to.
OPTICS_QUANTITIES = ("temperature_c", "vcc_v", "tx_bias_ma", "tx_power_dbm", "rx_power_dbm")

# What a module's diagnostics can say at all (issue #21): each monitor and threshold is a 16-bit
# word (SFF-8636 6.2.4, SFF-8472 9.2, CMIS 8.2.5 and 8.9.4), converted as ethtool 6.10 does
# (sff-common.h:136-152; qsfp.c:708-718): temperature signed in 1/256 C (-128 .. +127.996), Vcc
# unsigned in 100 uV (0 .. 6.5535 V), Tx bias unsigned in 2 uA (0 .. 131.07 mA), which CMIS
# multiplies by 1, 2 or 4 (page 01h byte 160 bits 4-3: ethtool cmis.c:570-606,
# sonic-platform-common cmis.py:818-821) so up to 524.28 mA, and optical power unsigned in
# 0.1 uW (0 .. 6.5535 mW: at most +8.165 dBm, 8.17 as the tools round it; the least step, and
# the 0 mW the parsers store, is -40 dBm). A value outside is not a module's: a broken tool or
# a forged capture. It is left out (and counted), never stored, fitted or judged.
OPTICS_BOUNDS: dict[str, tuple[float, float]] = {
    "temperature_c": (-128.0, 128.0),
    "vcc_v": (0.0, 6.5535),
    "tx_bias_ma": (0.0, 524.28),
    "tx_power_dbm": (-40.0, 8.17),
    "rx_power_dbm": (-40.0, 8.17),
}
OPTICS_UNITS = {"temperature_c": "C", "vcc_v": "V", "tx_bias_ma": "mA", "tx_power_dbm": "dBm",
                "rx_power_dbm": "dBm"}


def plausible(quantity: str, value: float) -> bool:
    """Whether a module could report `value` of `quantity` (OPTICS_BOUNDS; NaN never)."""
    lo, hi = OPTICS_BOUNDS[quantity]
    return lo <= value <= hi


@dataclass(frozen=True, slots=True)
class LaneReading:
    """One lane of a module at one moment; None: the module does not report it."""

    lane: int  # 1-based, as the tools print it
    tx_bias_ma: float | None = None
    tx_power_dbm: float | None = None
    rx_power_dbm: float | None = None


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A module's own alarm and warning limits for one quantity. A limit the module reports as
    0 (or not at all) is None: "no limit", never a limit of 0."""

    low_alarm: float | None = None
    low_warning: float | None = None
    high_warning: float | None = None
    high_alarm: float | None = None


@dataclass(frozen=True, slots=True)
class OpticsReading:
    """What one transceiver's diagnostics (DDM/DOM) said at one moment: Onyx `show interfaces
    ib <port> transceiver diagnostics`, `mlxlink -m`, `ethtool -m` or SNMP. Powers in dBm
    (mW converted by the parser), bias in mA, temperature in Celsius, Vcc in volts."""

    device: str  # the switch or host it sits in
    port_name: str  # as the device names the port: IB1/17, mlx5_0/1, ib0
    read_at: datetime
    vendor: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    firmware: str | None = None
    temperature_c: float | None = None
    vcc_v: float | None = None
    lanes: tuple[LaneReading, ...] = ()
    thresholds: dict[str, Thresholds] = field(default_factory=dict)  # OPTICS_QUANTITIES key
    # What the parser left out or cut, one reason per value or field (OPTICS_BOUNDS, FIELD_MAX
    # in auditor/parse/_optics.py): counted per reason in `auditor sources`.
    issues: tuple[str, ...] = ()


# -- what a fabric-wide diagnostic run says per port (issue #24: ibdiagnet2.db_csv) ------------


@dataclass(frozen=True, slots=True)
class CableInfo:
    """The cable or transceiver in one port as the fabric reports it (ibdiagnet CABLE_INFO):
    keyed by the node GUID and port that read it, not by a name. Temperature in Celsius."""

    guid: str  # node GUID
    port: int
    vendor: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    length: str | None = None  # as printed ("3 m", "30m")
    revision: str | None = None
    cable_type: str | None = None
    temperature_c: float | None = None
    line_no: int = 0


@dataclass(frozen=True, slots=True)
class PortBer:
    """The bit error rates a port's PHY reports itself (not computed from counters): raw
    (before FEC), effective (after FEC) and symbol BER; None where the source gave none.
    `source` names the table and the field mapping it was read with."""

    guid: str  # node GUID
    port: int
    raw_ber: float | None
    effective_ber: float | None
    symbol_ber: float | None
    source: str
    line_no: int = 0
