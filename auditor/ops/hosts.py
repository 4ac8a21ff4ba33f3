"""Host-side collection: the HCA end of every link, read on the compute nodes over SSH.

Each host in `[hosts] names` gets its sysfs counters read (SYSFS_COMMAND), `ibstat`, and its
kernel log (dmesg -T or journalctl -k). Counters are stored as a "sysfs" counters source keyed
by the HCA's node GUID, the key ibnetdiscover gives the CA, so a LinkDownedCounter step on the
HCA end becomes a counter flap of its link (auditor.analyse.flaps) with no further mapping.
Kernel-log port events (origin "dmesg") are placed on the fabric graph through PortMap and the
config's aliases. Port states read from sysfs are reported in the device status only: a Down
port there has no time, and the sweeps already record topology changes.

With `[sweep] optics` each host also runs `mlxlink -d <dev> -m` per RDMA device (`ethtool -m`
per netdev where mlxlink is not installed); the module readings are stored as optics history
(kinds mlxlink-module / ethtool-module, one source per host and kind and sweep), each placed on
the HCA whose module it is: the node GUID sysfs gave for that device in the same read, else the
fabric graph's, port 1 (mlx5 has one port per RDMA device).

One dead host never stops the others: every host gets a device_status row (collector "host")
with ok, partial (a secondary read failed, e.g. dmesg in a container), no_hca, timeout,
auth_failed, host_key_mismatch, parse_failed or error, and everything is stored in one
transaction. Raw outputs are kept under captures/<UTC stamp>/hosts/ for replay.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from auditor.collect.hostcmd import (
    DEFAULT_SYSFS_ROOT,
    NOT_INSTALLED,
    OPTICS_LIST,
    HostCollection,
    HostStatus,
    check_sysfs_root,
    collect_host_outputs,
)
from auditor.collect.runner import CommandResult, save_capture
from auditor.config import Settings
from auditor.errors import ParseError
from auditor.ingest.logs import CUT, FUTURE_SLACK, bound_event
from auditor.ingest.optics import parse_optics, place
from auditor.models import CounterTable, OpticsReading, PortEvent
from auditor.ops.switches import DeviceOutcome
from auditor.parse.dmesg import parse_dmesg
from auditor.parse.ibstat import parse_ibstat
from auditor.parse.sysfs_ib import SysfsSnapshot, parse_sysfs_ib, to_counter_samples
from auditor.portmap import PortMap
from auditor.store import Placement, SourceMeta, Store

COLLECTOR = "host"
EVENT_ORIGIN = "dmesg"  # the same origin as an ingested dmesg file, so repeats are skipped
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_NOT_INSTALLED = NOT_INSTALLED


def capture_folder(settings: Settings, moment: datetime) -> Path:
    return settings.captures_dir / _aware(moment).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ") \
        / "hosts"


def capture_name(host: str, command: str) -> str:
    """`<host>.<command>`; a host name is a file name only after its odd characters go."""
    return f"{_SAFE.sub('_', host)}.{command}"


def _aware(moment: datetime) -> datetime:
    # The store's convention: a naive time is already UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else "no output"


def _rebase(text: str, root: str) -> str:
    """grep -H prints paths under the configured root; the parser knows only the real one."""
    if root == DEFAULT_SYSFS_ROOT:
        return text
    prefix = root + "/"
    return "\n".join(
        DEFAULT_SYSFS_ROOT + "/" + line[len(prefix):] if line.startswith(prefix) else line
        for line in text.split("\n")
    )


def _drop_continuations(text: str) -> str:
    """Blank the indented continuation lines of multi-line kernel messages (dmesg and journalctl
    both indent them): they belong to the line above and carry no stamp of their own, so the
    parser would count each as unreadable on every run. Blank, not removed: line numbers stay."""
    return "\n".join("" if line[:1] in (" ", "\t") else line for line in text.split("\n"))


class _Host:
    """Turns one HostCollection into store rows and a status; one instance per host."""

    def __init__(self, store: Store, coll: HostCollection, moment: datetime, pm: PortMap,
                 root: str, folder: Path | None) -> None:
        self.store, self.coll, self.moment, self.pm = store, coll, moment, pm
        self.root, self.folder = root, folder
        self.status: HostStatus = "ok"
        self.partial = False
        self.summary: list[str] = []
        self.notes: list[str] = []
        self.events = 0
        self.guids: dict[str, str] = {}  # RDMA device -> node GUID, from this read's sysfs

    def path(self, command: str) -> str:
        name = capture_name(self.coll.host, command)
        if self.folder is not None:
            return str(self.folder / f"{name}.txt")
        return f"ssh://{self.coll.host}/{command}"

    def _missing(self, command: str) -> tuple[HostStatus, str]:
        return self.coll.failed.get(command, ("error", f"{command}: not run"))

    def ibstat(self) -> dict[str, str]:
        """Node GUIDs by RDMA device from ibstat, to stand in for a missing sysfs node_guid."""
        res = self.coll.results.get("ibstat")
        if res is None:
            self.partial = True
            self.notes.append(f"ibstat: {self._missing('ibstat')[1]}")
            return {}
        if res.exit_code == _NOT_INSTALLED:
            # infiniband-diags is often absent on compute nodes; sysfs has what we need.
            self.notes.append("ibstat: not installed")
            return {}
        if res.exit_code != 0:
            self.partial = True
            self.notes.append(f"ibstat: exit {res.exit_code}: {_first_line(res.stderr)}")
            return {}
        try:
            ports = parse_ibstat(res.stdout)
        except ParseError as exc:
            self.partial = True
            self.notes.append(str(exc.with_source(f"{self.coll.host}:ibstat")))
            return {}
        return {p.device: p.node_guid for p in ports}

    def sysfs(self, ibstat_guids: dict[str, str]) -> None:
        res = self.coll.results.get("sysfs")
        if res is None:
            self.status, why = self._missing("sysfs")
            self.summary.append(why)
            return
        has_output = bool(res.stdout.strip())
        # grep: 2 = some file missing or unreadable. With output that is a partial read of a
        # host that has HCAs (a VF whose PMA counters fail); without, the globs matched nothing.
        if not has_output and res.exit_code in (1, 2):
            self.status = "no_hca"
            self.summary.append(f"no InfiniBand device under {self.root}")
            return
        if res.exit_code not in (0, 2):
            self.status = "error"
            self.summary.append(f"sysfs read: exit {res.exit_code}: {_first_line(res.stderr)}")
            return
        try:
            snap = parse_sysfs_ib(_rebase(res.stdout, self.root))
        except ParseError as exc:
            self.status = "parse_failed"
            self.summary.append(str(exc.with_source(f"{self.coll.host}:sysfs")))
            return
        if res.exit_code == 2:
            self.notes.append("some sysfs files unreadable")
        self._store_counters(snap, ibstat_guids, res)

    def _store_counters(self, snap: SysfsSnapshot, ibstat_guids: dict[str, str],
                        res: CommandResult) -> None:
        devices = sorted({p.device for p in snap.ports})
        guids = {d: g for d in devices
                 if (g := snap.node_guids.get(d) or ibstat_guids.get(d)) is not None}
        self.guids = guids
        samples = to_counter_samples(SysfsSnapshot(guids, snap.ports), host=self.coll.host)
        rows = [(s.guid, s.port, name, value) for s in samples if s.guid is not None
                for name, value in sorted(s.counters.items())]
        not_active = [f"{p.device}/{p.port} {p.state}/{p.phys_state}" for p in snap.ports
                      if p.state != "Active"]
        self.summary.append(f"{len(snap.ports)} HCA port(s) on {len(devices)} device(s), "
                            f"{len(rows)} counter(s)"
                            + (f", not Active: {', '.join(not_active)}" if not_active else ""))
        if nameless := [d for d in devices if d not in guids]:
            self.notes.append(f"no node GUID for {', '.join(nameless)}: counters not stored")
        if self.pm.known_guids and (
            unknown := [f"{d} {g}" for d, g in guids.items() if g not in self.pm.known_guids]
        ):
            self.notes.append(f"not in the fabric graph: {', '.join(unknown)}")
        if not rows:
            return
        digest = hashlib.sha256(res.stdout.encode()).hexdigest()
        # The same reading at the same time (a replayed run) is stored once.
        if self.store.find_source(digest, self.moment, explicit_at=True) is not None:
            return
        lines = sum(1 for line in res.stdout.splitlines() if line.strip())
        sid = self.store.add_source(SourceMeta("sysfs", self.path("sysfs"), digest,
                                               self.coll.host, self.moment, True, lines, 0,
                                               len(rows)))
        self.store.add_counters(sid, self.moment, CounterTable.from_rows(rows))

    def kernel_log(self, kind: str) -> None:
        res = self.coll.results.get(kind)
        if res is None:
            self.partial = True
            self.notes.append(f"{kind}: {self._missing(kind)[1]}")
            return
        if res.exit_code != 0:
            # dmesg in a container or with kernel.dmesg_restrict=1: "Operation not permitted".
            self.partial = True
            self.notes.append(f"{kind}: exit {res.exit_code}: {_first_line(res.stderr)}")
            return
        # Both commands print UTC or an explicit offset (dmesg runs with TZ=UTC).
        parsed = parse_dmesg(_drop_continuations(res.stdout), host=self.coll.host, tz=UTC)
        issues: Counter[str] = Counter()
        first: dict[str, tuple[int, str]] = {}
        for line_no, line, why in parsed.unparsed:
            issues[why] += 1
            first.setdefault(why, (line_no, line[:200]))
        future = "time in the future (host clock skewed?)"
        events: list[PortEvent] = []
        for e in parsed.events:
            if e.at > self.moment + FUTURE_SLACK:
                issues[future] += 1
                first.setdefault(future, (e.line_no, e.message[:200]))
                continue
            if bound_event(e):  # kept, but not a 10 MB kernel line
                issues[CUT] += 1
                first.setdefault(CUT, (e.line_no, e.message[:200]))
            events.append(e)
        bad = sum(n for why, n in issues.items() if why != CUT)
        placed: list[Placement] = []
        for e in events:
            r = self.pm.resolve(e.device, e.port_name)
            if r.reason:
                why = f"event on an unmapped port: {r.reason}"
                issues[why] += 1
                first.setdefault(why, (e.line_no, e.message[:200]))
            placed.append((r.guid, r.port, None, None))
        self.events = len(events)
        self.summary.append(f"{kind}: {len(events)} port event(s)"
                            + (f", {bad} line(s) unreadable" if bad else ""))
        if not events and not issues and not parsed.boots:
            return  # a quiet kernel log is recorded by the status row, not a source per run
        digest = hashlib.sha256(res.stdout.encode()).hexdigest()
        if self.store.find_source(digest, self.moment, explicit_at=False) is not None:
            return  # nothing new since the last read
        sid = self.store.add_source(SourceMeta(
            "dmesg", self.path(kind), digest, self.coll.host, self.moment, False,
            len(res.stdout.splitlines()), bad, len(events)))
        self.store.add_events(sid, EVENT_ORIGIN, events, placed)
        self.store.add_host_events(sid, parsed.boots)  # the kernel's boot banner (#20)
        self.store.add_issues(sid, [(why, n, *first.get(why, (None, None)))
                                    for why, n in issues.items()])

    def optics(self) -> None:
        """Parse and store the module diagnostics this host gave (mlxlink or ethtool)."""
        coll = self.coll
        if OPTICS_LIST in coll.failed:
            self.partial = True
            self.notes.append(f"optics: {coll.failed[OPTICS_LIST][1]}")
            return
        found: dict[str, list[OpticsReading]] = {}
        bodies: dict[str, list[str]] = {}
        known: dict[str, tuple[str, int]] = {}
        # mlxlink's 127 is why ethtool was run instead: say so beside what ethtool gave.
        missing = {"mlxlink" for name, res in coll.results.items()
                   if name.startswith("mlxlink.") and res.exit_code == _NOT_INSTALLED}
        for name, target in coll.optics.items():
            tool = target.kind.split("-")[0]
            res = coll.results.get(name)
            if res is None:
                self.partial = True
                self.notes.append(f"{tool} {target.port_name}: {self._missing(name)[1]}")
                continue
            if res.exit_code == _NOT_INSTALLED:
                missing.add(tool)
                continue
            if res.exit_code != 0:
                # mlxlink without root ("-E- Failed to open device"), a port with no module.
                self.partial = True
                self.notes.append(f"{tool} {target.rdma_device}: exit {res.exit_code}: "
                                  f"{_first_line(res.stderr or res.stdout)}")
                continue
            try:
                readings = parse_optics(target.kind, res.stdout, coll.host, self.moment,
                                        target.port_name)
            except ParseError as exc:
                self.partial = True
                self.notes.append(str(exc.with_source(f"{coll.host}:{name}")))
                continue
            where = self._hca(target.rdma_device)
            if where is not None:
                known[target.port_name] = where
            found.setdefault(target.kind, []).extend(readings)
            bodies.setdefault(target.kind, []).append(f"{name}\n{res.stdout}")
        self.notes += [f"{tool}: not installed" for tool in sorted(missing)]
        total = sum(len(r) for r in found.values())
        if coll.optics or missing:
            self.summary.append(f"{total} optics reading(s)")
        for kind, readings in found.items():
            body = "\n".join(bodies[kind])
            digest = hashlib.sha256(body.encode()).hexdigest()
            if self.store.find_source(digest, self.moment, explicit_at=True) is not None:
                continue  # a replayed run: stored already
            placed, why = place(self.pm, readings, known)
            sid = self.store.add_source(SourceMeta(
                kind, f"ssh://{coll.host}/{kind}", digest, coll.host, self.moment, True,
                body.count("\n") + 1, 0, len(readings)))
            self.store.add_optics(sid, readings, placed)
            self.store.add_issues(sid, [(reason, n, None, None) for reason, n in why.items()])

    def _hca(self, device: str) -> tuple[str, int] | None:
        """(node GUID, port 1) of this host's RDMA device: from this read's sysfs, else the
        fabric graph (its node description names the device)."""
        if device in self.guids:
            return self.guids[device], 1
        r = self.pm.resolve(self.coll.host, f"{device}/1")
        return (r.guid, r.port) if r.guid is not None and r.port is not None else None

    def outcome(self) -> DeviceOutcome:
        if self.status == "ok" and self.partial:
            self.status = "partial"
        detail = "; ".join(self.summary + self.notes)
        self.store.add_device_status(self.moment, self.coll.host, COLLECTOR, self.status, detail)
        return DeviceOutcome(self.coll.host, COLLECTOR, self.status, detail, self.events)


def store_hosts(store: Store, settings: Settings, collections: list[HostCollection],
                moment: datetime, pm: PortMap, folder: Path | None = None) -> list[DeviceOutcome]:
    """Write what the hosts gave, in the caller's transaction; one outcome per host.

    `folder` is where collect_hosts kept the captures (the sources point there)."""
    moment = _aware(moment)
    root = check_sysfs_root(settings.hosts.sysfs_root)
    outcomes = []
    for coll in collections:
        host = _Host(store, coll, moment, pm, root, folder)
        if coll.status != "ok":
            host.status = coll.status
            host.summary.append(coll.detail)
            outcomes.append(host.outcome())
            continue
        host.sysfs(host.ibstat())
        if settings.hosts.kernel_log != "none":
            host.kernel_log(settings.hosts.kernel_log)
        if coll.optics or OPTICS_LIST in coll.results or OPTICS_LIST in coll.failed:
            host.optics()
        outcomes.append(host.outcome())
    return outcomes


def collect_hosts(store: Store, settings: Settings,
                  now: datetime | None = None) -> list[DeviceOutcome]:
    """Read every configured host over SSH (in parallel) and store it all in one transaction."""
    if not settings.hosts.names:
        return []
    moment = _aware(now or datetime.now(UTC))
    collections = collect_host_outputs(settings.hosts, optics=settings.sweep.optics)
    folder = capture_folder(settings, moment)
    for coll in collections:
        for command, result in coll.results.items():
            save_capture(folder, capture_name(coll.host, command), result)
    times = store.snapshot_times(moment, limit=1)
    pm = PortMap(store.fabric(times[0]) if times else None, settings.aliases)
    with store.transaction():
        return store_hosts(store, settings, collections, moment, pm, folder)
