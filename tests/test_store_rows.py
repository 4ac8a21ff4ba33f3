"""The rows the store returns are what auditor/store/rows.py says they are (issue #22): every
query with a row type runs on a database holding each kind of record, with NULLs where the
writers leave them, and each row has exactly its TypedDict's keys, each value of its type (a
time naive, the store's UTC). (Columns that only older databases hold NULL, those added by a
migration, are typed `| None` and not exercised here.)"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from auditor.models import (
    CounterTable,
    HostEvent,
    Job,
    JobError,
    JobTable,
    LaneReading,
    Location,
    MaintenanceWindow,
    OpticsReading,
    PortBer,
    PortEvent,
    Thresholds,
)
from auditor.store import JobLogMeta, SourceMeta, Store, rows

T0 = datetime(2026, 11, 29, tzinfo=UTC)
H = timedelta(hours=1)
END = T0 + 6 * H


def _source(store: Store, kind: str, digest: str, at: datetime = T0,
            options: str | None = None) -> int:
    return store.add_source(SourceMeta(kind, f"/in/{digest}", digest * 64, "file", at, True,
                                       10, 1, 3, options))


def _jobs(*jobs: Job) -> JobTable:
    table = JobTable()
    for job in jobs:
        table.append(job)
    return table


def _module(port_name: str, guid: str | None, port: int | None, serial: str | None,
            **more: object) -> dict[str, object]:
    return {"port_name": port_name, "guid": guid, "port": port, "present": more.get("present"),
            "vendor": more.get("vendor"), "part_number": None, "serial_number": serial,
            "length": more.get("length"), "cable_type": None, "revision": None}


def _remembered(rank: int, a_port: int | None, b_guid: str | None) -> dict[str, Any]:
    return {"rank": rank, "component": "cable", "a_guid": "0x1", "a_port": a_port,
            "a_name": "leaf01" if a_port else None, "b_guid": b_guid,
            "b_port": 3 if b_guid else None, "b_name": "gpu01" if b_guid else None,
            "score": 0.5, "points": 2.0, "rules": ["flaps", "jobs"] if b_guid else [],
            "rule_points": [1.5, 0.5] if b_guid else [], "first_at": T0 if b_guid else None,
            "last_at": T0 + H if b_guid else None, "flaps": 2, "jobs_failed": 1,
            "gpu_hours_lost": 3.5, "job_ids": ["100"] if b_guid else [],
            "job_died_at": [(T0 + H).replace(tzinfo=None)] if b_guid else [],
            "job_gpu_hours": [3.5] if b_guid else []}


def _fill(store: Store) -> None:
    """One or more records of every kind, with and without the columns that may be NULL."""
    syslog = _source(store, "syslog", "a", options='{"year": 2026}')
    store.add_issues(syslog, [("unparsed", 2, 4, "garbage"), ("unmapped", 1, None, None)])
    store.add_events(syslog, "syslog", [
        PortEvent(T0 + H, "down", device="leaf01", port_name="IB1/1", line_no=3, message="d"),
        PortEvent(T0 + 2 * H, "up", guid="0x1", port=1, peer_device="gpu01",
                  peer_port_name="mlx5_0/1", peer_guid="0x2", peer_port=3, cable_serial="MT1",
                  code="329", line_no=4)])
    # three counter snapshots: increases, a reset (5 -> 2) and a LinkDownedCounter step
    for i, (symbols, downed) in enumerate([(5, 1), (2, 3), (2, 3)]):
        sid = _source(store, "ibqueryerrors", "bcd"[i], at=T0 + i * H)
        store.add_counters(sid, T0 + i * H, CounterTable.from_rows([
            ("0x1", 1, "SymbolErrorCounter", symbols), ("0x1", 1, "LinkDownedCounter", downed),
            ("0x1", None, "PortRcvErrors", 7)]))
    store.add_jobs(_source(store, "sacct", "e"), _jobs(
        Job("100", "FAILED", T0, T0 + 2 * H, ("gpu-b", "gpu-a"), name="train", gpus=16),
        Job("101", "FAILED", None, T0 + 3 * H, ("gpu-c",)),
        Job("102", "COMPLETED", T0, T0 + 5 * H, ("gpu-a",), partition="p", exit_code="0:0"),
        Job("103", "RUNNING", T0 + H, None, ("gpu-b",)),
        Job("104", "FAILED", T0, T0 + H, ())))
    labelled, unlabelled = _source(store, "joblog", "f"), _source(store, "joblog", "g")
    store.add_job_logs([
        JobLogMeta(labelled, "100", frozenset({"gpu-a"}), T0, T0 + H, T0 + 2 * H, ("2.21.5",),
                   22, 7, frozenset({("gpu-a", "mlx5_0")}), "mlx5_0"),
        JobLogMeta(unlabelled, None, frozenset({"gpu-c"}), None, None, T0 + 3 * H, (), None,
                   None)])
    store.add_job_errors([
        (labelled, "100", [JobError(T0 + H, "completion_error", True, host="gpu-a",
                                    hca="mlx5_0", hca_port=1, peer="10.0.0.2", status=12,
                                    status_name="RETRY_EXC", rank=3, line_no=9, message="m")],
         {9}),
        (unlabelled, None, [JobError(None, "watchdog_timeout", False, line_no=2,
                                     not_before=T0, not_after=T0 + H, ran_ms=600_000,
                                     hca_candidates=("mlx5_0", "mlx5_1"))], set())])
    store.add_maintenance(None, [MaintenanceWindow("leaf01", T0, T0 + H, "swap")])
    store.add_host_events(_source(store, "boots", "h"), [
        HostEvent("gpu-a", T0 + H, "boot"),
        HostEvent("gpu-b", T0 - H, "down", end_at=None, reason="Not responding")])
    store.add_device_status(T0, "leaf01", "ssh", "ok", "")
    store.add_device_status(T0, "spine01", "snmp", "timeout", "no answer in 30 s")
    snmp = {"if_index": 1, "if_name": "IB1/1", "oper_status": "up", "admin_status": None,
            "last_change_ticks": None, "in_errors": 0, "out_errors": None,
            "hc_in_octets": 2**70, "hc_out_octets": None, "symbol_errors": None,
            "phys_state": None, "guid": None, "port": None}
    store.add_snmp_ports(T0 - H, "leaf01", 12_000, [snmp])
    store.add_snmp_ports(T0, "leaf01", None, [snmp, snmp | {
        "if_index": 2, "admin_status": "up", "last_change_ticks": 7, "in_errors": None,
        "out_errors": 1, "hc_in_octets": None, "hc_out_octets": 5, "symbol_errors": 0,
        "phys_state": "linkUp"}])
    store.add_transceivers(T0, "leaf01", [
        _module("IB1/1", "0x1", 1, "MT1", present=True, vendor="Mellanox", length="3m"),
        _module("IB1/2", None, None, None)])
    store.add_transceivers(T0 + 2 * H, "leaf02", [_module("IB1/5", "0x5", 5, "MT1"),
                                                  _module("IB1/6", None, None, "MT1")])
    store.add_optics(_source(store, "onyx-optics", "i"), [
        OpticsReading("leaf01", "IB1/1", T0, vendor="Mellanox", part_number="MFS1S00",
                      serial_number="MT1", firmware="1.2", temperature_c=40.0, vcc_v=3.3,
                      lanes=(LaneReading(1, 6.5, -1.0, -2.0), LaneReading(2)),
                      thresholds={"rx_power_dbm": Thresholds(-10.0, -8.0, 2.0, None)}),
        OpticsReading("gpu01", "mlx5_0/1", T0 + H, thresholds={"vcc_v": Thresholds()})],
        placed=[("0x1", 1), (None, None)])
    # A stored watch list (issue #25): one entry with every column, one with the NULLs.
    store.store_watch_list(
        {"computed_at": END, "took_s": 0.5, "since": T0, "until": END, "readings": 3,
         "newest_read_at": T0 + H, "newest_source_id": 9, "settings": "{}", "modules": 2},
        [{"rank": 1, "device": "leaf01", "port_name": "IB1/1", "serial_number": "MT1",
          "part_number": "MFS1S00", "vendor": "Mellanox", "firmware": "1.2", "guid": "0x1",
          "port": 1, "lane": 1, "days": 1, "last_at": T0, "peer_guid": "0x2", "peer_port": 3,
          "peer_name": "gpu01 port 3", "findings": "[]"},
         {"rank": 2, "device": "gpu01", "port_name": "mlx5_0/1", "serial_number": None,
          "part_number": None, "vendor": None, "firmware": None, "guid": None, "port": None,
          "lane": None, "days": 1, "last_at": T0 + H, "peer_guid": None, "peer_port": None,
          "peer_name": None, "findings": "[]"}])
    # a port's own BERs (ibdiagnet PHY_DB16), one with only some of them
    store.add_port_ber(_source(store, "ibdiagnet", "k"), T0 + H, [
        PortBer("0x1", 1, 1e-8, 2e-15, 3e-14, "PHY_DB16 field12-17"),
        PortBer("0x1", 2, None, None, 5e-13, "PHY_DB16 field12-17")])
    store.add_inventory(_source(store, "inventory", "j"), [
        Location("leaf01", "fra1", "B", "B07", "38", ((1, "L1-P1"),)), Location("leaf02")])
    store.add_replacement("T-1", "cable", T0, ("0x1", 1, "leaf01"), ("0x2", 3, "gpu01"), ["MT1"])
    store.add_replacement("T-2", "switch-port", T0 + H, ("0x1", 2, "leaf01"), None, [])
    store.remember_run(END, T0, END, [_remembered(1, 1, "0x2"), _remembered(2, None, None)])


ROWS: dict[str, tuple[Callable[[Store], list[Any]], object]] = {
    "sources": (lambda s: s.sources(), rows.SourceRow),
    "issues": (lambda s: s.issues(), rows.IssueRow),
    "events": (lambda s: s.events(T0, END), rows.EventRow),
    "counter_steps": (lambda s: s.counter_steps(T0, T0, END), rows.CounterStepRow),
    "counter_deltas": (lambda s: s.counter_deltas(T0, END), rows.CounterDeltaRow),
    "port_bers": (lambda s: s.port_bers(T0, END), rows.PortBerRow),
    "jobs_ended": (lambda s: s.jobs_ended(T0, END, {"FAILED"}), rows.JobEndedRow),
    # ended jobs on gpu-a, 103 still running on gpu-b
    "jobs_on_hosts_during": (lambda s: s.jobs_on_hosts_during(
        T0, END, [(7, T0 + H, T0 + 2 * H, "gpu-a"), (8, T0, END, "gpu-b")]), rows.JobAskedRow),
    "jobs_of_logs": (lambda s: s.jobs_of_logs(T0, END, [(i, T0, END, "gpu-a") for i in range(50)],
                                              {"gpu-a": "a"}, {"gpu-a": "a"}), rows.LogJobRow),
    "job_logs": (lambda s: s.job_logs(T0, END), rows.JobLogRow),
    "job_log_using": (lambda s: s.job_log_using(range(1, 50)), rows.JobLogUsingRow),
    # every source's lines: the undated line of the log without a job too
    "job_errors": (lambda s: s.job_errors(T0, END, sources=range(1, 50)), rows.JobErrorRow),
    "maintenance": (lambda s: s.maintenance(T0, END), rows.MaintenanceRow),
    "host_events": (lambda s: s.host_events(T0, END), rows.HostEventRow),
    "device_status": (lambda s: s.device_status(), rows.DeviceStatusRow),
    "last_snmp_poll": (lambda s: s.last_snmp_poll("leaf01", END), rows.SnmpPortRow),
    "transceivers": (lambda s: s.transceivers(), rows.TransceiverRow),
    "serials_seen": (lambda s: s.serials_seen(["MT1"], T0 + H), rows.SerialSeenRow),
    "optics_readings": (lambda s: s.optics_readings(T0, END), rows.OpticsReadingRow),
    "optics_thresholds": (lambda s: s.optics_thresholds(), rows.OpticsThresholdRow),
    "optics_thresholds_at": (lambda s: s.optics_thresholds_at(END), rows.OpticsThresholdRow),
    "optics_daily": (lambda s: s.optics_daily(T0, END), rows.OpticsDailyRow),
    "optics_daily_at_ports": (lambda s: s.optics_daily_at_ports(T0, END, [("0x1", 1)]),
                             rows.OpticsDailyRow),
    "optics_thresholds_at_ports": (lambda s: s.optics_thresholds_at_ports(T0, END, [("0x1", 1)]),
                                  rows.OpticsThresholdRow),
    "optics_modules_per_device": (lambda s: s.optics_modules_per_device(T0, END),
                                  rows.OpticsDeviceRow),
    "optics_modules_between": (lambda s: s.optics_modules_between(T0, END, "", "~"),
                               rows.OpticsModuleRow),
    "optics_thresholds_between": (lambda s: s.optics_thresholds_between(END, "", "~"),
                                  rows.OpticsThresholdRow),
    "optics_fingerprint": (lambda s: [s.optics_fingerprint(T0, END),
                                      s.optics_fingerprint(END, END)], rows.OpticsFingerprintRow),
    "watch_list_run": (lambda s: [s.watch_list_run()], rows.WatchListRunRow),
    "watch_list_entries": (lambda s: s.watch_list_entries(), rows.WatchEntryRow),
    "locations": (lambda s: list(s.locations().values()), rows.LocationRow),
    "replacements": (lambda s: s.replacements(), rows.ReplacementRow),
    "suspect_runs": (lambda s: s.suspect_runs(T0, END), rows.SuspectRunRow),
    "remembered_suspects": (lambda s: s.remembered_suspects(T0, END),
                            rows.RememberedSuspectRow),
}


@pytest.fixture(scope="module")
def returned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    with Store(tmp_path_factory.mktemp("rows") / "rows.duckdb") as store:
        with store.transaction():
            _fill(store)
        return {name: read(store) for name, (read, _) in ROWS.items()}


def _mismatches(value: object, tp: object, where: str) -> list[str]:
    if tp is type(None):
        return [] if value is None else [f"{where}: {value!r} is not None"]
    if get_origin(tp) in (Union, types.UnionType):
        found = [_mismatches(value, t, where) for t in get_args(tp)]
        return [] if any(not f for f in found) else [m for f in found for m in f]
    if is_typeddict(tp):
        hints = get_type_hints(tp)
        if not isinstance(value, dict) or set(value) != set(hints):
            keys = sorted(value) if isinstance(value, dict) else value
            return [f"{where}: {keys!r}, not the keys of {tp.__name__}"]
        return [m for k, t in hints.items() for m in _mismatches(value[k], t, f"{where}.{k}")]
    if get_origin(tp) is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [m for i, v in enumerate(value) for m in _mismatches(v, get_args(tp)[0],
                                                                      f"{where}[{i}]")]
    assert isinstance(tp, type), tp
    if isinstance(value, bool) and tp is not bool:
        return [f"{where}: {value!r} is a bool, not {tp.__name__}"]
    if not isinstance(value, tp):
        return [f"{where}: {value!r} is not {tp.__name__}"]
    if isinstance(value, datetime) and value.tzinfo is not None:
        return [f"{where}: {value!r} is not naive UTC"]
    return []


@pytest.mark.parametrize("query", sorted(ROWS))
def test_each_row_is_its_typed_dict(returned: dict[str, list[Any]], query: str) -> None:
    found = returned[query]
    assert found, f"{query}: no rows to check"
    tp = ROWS[query][1]
    assert [m for i, row in enumerate(found) for m in _mismatches(row, tp, f"{query}[{i}]")] == []


def _bases() -> dict[str, set[str]]:
    """Each class of rows.py -> the names of the classes it derives from: before Python 3.12 a
    TypedDict does not keep its bases at run time."""
    tree = ast.parse(Path(rows.__file__).read_text(encoding="utf-8"))
    return {c.name: {b.id for b in c.bases if isinstance(b, ast.Name)}
            for c in tree.body if isinstance(c, ast.ClassDef)}


def test_every_row_type_is_checked() -> None:
    """Every TypedDict of rows.py is some query's row type, or a base of one (its keys are
    checked in it: FinishedJobRow, what the analyses read of a FinishedJobAskedRow)."""
    declared = {v for v in vars(rows).values() if is_typeddict(v)}
    checked: set[Any] = set()
    for _, tp in ROWS.values():
        checked |= set(get_args(tp)) if get_origin(tp) in (Union, types.UnionType) else {tp}
    bases = _bases()
    while more := {b for tp in checked for name in bases.get(tp.__name__, ())
                   if is_typeddict(b := getattr(rows, name, None))} - checked:
        checked |= more
    assert declared - checked == set()
