"""Switch-side collection in a sweep: SNMP polls and Onyx CLI reads of every configured switch
(with `[sweep] optics`, each module's diagnostics too, stored as optics readings).

One dead switch never stops the others: every device gets a status row (ok, timeout,
auth_failed, parse_failed, ...). SNMP polls become port events by comparison with the previous
poll of the same switch (a status change, or ifLastChange moving = a flap between polls).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from auditor.analyse.snmp_changes import flaps_between
from auditor.collect.nvos import collect_nvos_switches
from auditor.collect.onyx import SwitchCollection, SwitchSsh, collect_switches
from auditor.collect.snmp import SnmpTarget, poll
from auditor.config import Settings, SwitchSettings
from auditor.errors import ParseError
from auditor.ingest.common import LogOptions
from auditor.ingest.logs import store_document
from auditor.ingest.optics import parse_optics, place
from auditor.models import OpticsReading, PortEvent, SnmpPort, SnmpResult
from auditor.portmap import PortMap
from auditor.store import SourceMeta, Store

_SNMP_STATES = {"down": "down", "up": "up", "flap": "flap", "reboot": "switch_reboot"}


@dataclass(slots=True)
class DeviceOutcome:
    device: str
    collector: str
    status: str
    detail: str
    events: int = 0


def _target(sw: SwitchSettings) -> SnmpTarget:
    assert sw.snmp is not None  # noqa: S101 - callers pass only switches with SNMP settings
    return SnmpTarget(sw.name, sw.host, sw.snmp)


def _previous(store: Store, device: str, before: datetime) -> SnmpResult | None:
    rows = store.last_snmp_poll(device, before)
    if not rows:
        return None
    ports = [SnmpPort(r["if_index"], r["if_name"], r["oper_status"], r["admin_status"],
                      r["last_change_ticks"], r["in_errors"], r["out_errors"],
                      r["hc_in_octets"], r["hc_out_octets"], r["symbol_errors"],
                      r["phys_state"]) for r in rows]
    return SnmpResult(device, "ok", "", rows[0]["polled_at"].replace(tzinfo=UTC),
                      rows[0]["sys_uptime_ticks"], ports)


def _fabric_map(store: Store, settings: Settings, at: datetime) -> PortMap:
    times = store.snapshot_times(at, limit=1)
    return PortMap(store.fabric(times[0]) if times else None, settings.aliases)


def store_snmp(store: Store, settings: Settings, results: list[SnmpResult],
               pm: PortMap) -> list[DeviceOutcome]:
    """Write poll results, and the port events they imply, in the caller's transaction."""
    outcomes = []
    for res in results:
        store.add_device_status(res.polled_at, res.target, "snmp", res.status, res.detail)
        outcome = DeviceOutcome(res.target, "snmp", res.status, res.detail)
        outcomes.append(outcome)
        if res.status != "ok":
            continue
        before = _previous(store, res.target, res.polled_at.replace(tzinfo=None))
        rows = []
        for p in res.ports:
            r = pm.resolve(res.target, p.if_name)
            rows.append({"if_index": p.if_index, "if_name": p.if_name,
                         "oper_status": p.oper_status, "admin_status": p.admin_status,
                         "last_change_ticks": p.last_change_ticks, "in_errors": p.in_errors,
                         "out_errors": p.out_errors, "hc_in_octets": p.hc_in_octets,
                         "hc_out_octets": p.hc_out_octets, "symbol_errors": p.symbol_errors,
                         "phys_state": p.phys_state, "guid": r.guid, "port": r.port})
        store.add_snmp_ports(res.polled_at, res.target, res.sys_uptime_ticks, rows)
        if before is None:
            continue
        events = []
        for change in flaps_between(before, res):
            state = _SNMP_STATES.get(change.kind)
            if state is None:
                continue
            port_name = change.if_name or None
            r = pm.resolve(res.target, port_name) if port_name else pm.resolve(res.target, "0")
            events.append(PortEvent(
                at=change.at_estimate or res.polled_at, state=state, device=res.target,
                port_name=port_name, guid=r.guid, port=r.port if port_name else None,
                message=change.detail))
        if events:
            digest = hashlib.sha256(f"snmp:{res.target}:{res.polled_at.isoformat()}".encode())
            sid = store.add_source(SourceMeta("snmp", f"snmp://{res.target}", digest.hexdigest(),
                                              "snmp", res.polled_at, True, len(res.ports), 0,
                                              len(events)))
            store.add_events(sid, "snmp", events)
            outcome.events = len(events)
    return outcomes


def poll_snmp(store: Store, settings: Settings, now: datetime | None = None,
              names: list[str] | None = None) -> list[DeviceOutcome]:
    switches = [s for s in settings.switches
                if s.snmp is not None and (not names or s.name in names)]
    if not switches:
        return []
    results = poll([_target(s) for s in switches], concurrency=settings.snmp_concurrency)
    pm = _fabric_map(store, settings, now or datetime.now(UTC))
    with store.transaction():
        return store_snmp(store, settings, results, pm)


OPTICS_KIND = "onyx-optics"


def store_switch_optics(store: Store, res: SwitchCollection, moment: datetime,
                        pm: PortMap) -> str:
    """Parse and store one switch's diagnostics reads, in the caller's transaction; returns
    what to add to its status detail. A port whose answer does not parse is named there and
    skipped; the others are stored (one source per switch and sweep)."""
    readings: list[OpticsReading] = []
    notes: list[str] = [res.optics_note] if res.optics_note else []
    for port, text in res.diagnostics:
        try:
            readings += parse_optics(OPTICS_KIND, text, res.name, moment, port)
        except ParseError as exc:
            notes.append(f"optics {port}: {exc.reason}")
    summary = [f"{len(readings)} optics reading(s)"] if res.diagnostics else []
    if readings:
        # One digest over every port's answer: a replayed sweep stores nothing twice.
        body = "\n".join(f"{port}\n{text}" for port, text in res.diagnostics)
        digest = hashlib.sha256(body.encode()).hexdigest()
        if store.find_source(digest, moment, explicit_at=True) is None:
            placed, why = place(pm, readings)
            sid = store.add_source(SourceMeta(OPTICS_KIND, f"ssh://{res.name}/optics", digest,
                                              res.name, moment, True, body.count("\n") + 1,
                                              0, len(readings)))
            store.add_optics(sid, readings, placed)
            store.add_issues(sid, [(reason, n, None, None) for reason, n in why.items()])
    if len(notes) > 3:  # a firmware without the command fails every port the same way
        notes = [*notes[:3], f"... {len(notes) - 3} more"]
    return "; ".join(summary + notes)


def _ssh_target(s: SwitchSettings, optics: bool) -> SwitchSsh:
    assert s.ssh is not None  # noqa: S101 - callers pass only switches with SSH settings
    return SwitchSsh(name=s.name, host=s.host, port=s.ssh.port, user=s.ssh.user,
                     password=s.ssh.password, key_file=s.ssh.key_file,
                     known_hosts=s.ssh.known_hosts, timeout_s=s.ssh.timeout_s, optics=optics,
                     max_output_mb=s.ssh.max_output_mb,
                     command_timeout_s=s.ssh.command_timeout_s,
                     total_timeout_s=s.ssh.total_timeout_s)


def collect_cli(
    store: Store, settings: Settings, now: datetime | None = None
) -> list[DeviceOutcome]:
    """Read interface status and transceivers (vendor, PN, S/N, length) of every Onyx switch
    over SSH, with `[sweep] optics` each module's diagnostics; and every NVOS switch's event
    table (`collect_nvos`)."""
    moment = now or datetime.now(UTC)
    outcomes = collect_nvos(store, settings, moment)
    switches = [s for s in settings.switches if s.ssh is not None and s.os != "nvos"]
    if not switches:
        return outcomes
    targets = [_ssh_target(s, settings.sweep.optics) for s in switches]
    results = collect_switches(targets)
    pm = _fabric_map(store, settings, moment)
    with store.transaction():
        for res in results:
            optics = store_switch_optics(store, res, moment, pm) \
                if res.diagnostics or res.optics_note else ""
            detail = "; ".join(d for d in (res.detail, optics) if d)
            store.add_device_status(moment, res.name, "ssh", res.status, detail)
            outcomes.append(DeviceOutcome(res.name, "ssh", res.status, detail))
            rows: list[dict[str, Any]] = []
            for t in res.transceivers:
                r = pm.resolve(res.name, t.port)
                rows.append({"port_name": t.port, "guid": r.guid, "port": r.port,
                             "present": t.present, "vendor": t.vendor,
                             "part_number": t.part_number, "serial_number": t.serial_number,
                             "length": t.length, "cable_type": t.cable_type,
                             "revision": t.revision})
            store.add_transceivers(moment, res.name, rows)
    return outcomes


NVOS_KIND = "nvos-events"


def collect_nvos(store: Store, settings: Settings, moment: datetime) -> list[DeviceOutcome]:
    """Read the event table of every `os = "nvos"` switch over SSH and store its port events
    as `ingest --kind nvos-events --host <switch>` stores a file of it (the entries an earlier
    sweep stored are not stored again), in one transaction. An answer that is not an event
    table is the switch's `parse_failed`, its rows unstored."""
    switches = [s for s in settings.switches if s.ssh is not None and s.os == "nvos"]
    if not switches:
        return []
    results = collect_nvos_switches([_ssh_target(s, False) for s in switches])
    base = LogOptions.from_settings(settings)
    outcomes = []
    with store.transaction():
        for res in results:
            status, detail, events = res.status, res.detail, 0
            if status == "ok":
                opts = replace(base, host=res.name)
                try:
                    stored = store_document(store, NVOS_KIND, res.events,
                                            f"ssh://{res.name}/system/events", opts, moment,
                                            origin=res.name)
                except ParseError as exc:
                    status, detail = "parse_failed", str(exc)
                else:
                    events = stored.records
                    detail = f"{events} new port event(s) from the NVOS event table"
            store.add_device_status(moment, res.name, "ssh", status, detail)
            outcomes.append(DeviceOutcome(res.name, "ssh", status, detail, events))
    return outcomes
