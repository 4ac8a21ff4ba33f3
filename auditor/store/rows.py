"""The rows the store's queries return, one TypedDict per result shape: its keys are the
query's columns (queries/<name>.sql), its types what DuckDB hands back for them (a timestamp
is a naive UTC datetime, a list a list, NULL None). Import them for annotations only (under
TYPE_CHECKING): at run time a row is a plain dict.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

# -- sources ----------------------------------------------------------------------------------


class SourceRow(TypedDict):
    """An ingested source (sources_list.sql)."""

    source_id: int
    kind: str
    path: str
    origin: str
    observed_at: datetime | None
    ingested_at: datetime
    lines_total: int
    lines_unparsed: int
    records: int
    sha256: str
    options: str | None  # JSON text


class IssueRow(TypedDict):
    """Lines of a source not understood or not placed, per reason (source_issues_list.sql)."""

    source_id: int
    kind: str
    path: str
    reason: str
    lines: int
    first_line_no: int | None
    example: str | None


# -- port events and counters ---------------------------------------------------------------


class EventRow(TypedDict):
    """A port event with the path of its source (port_events_window.sql)."""

    event_at: datetime
    state: str
    device: str | None
    port_name: str | None
    guid: str | None
    port: int | None
    peer_device: str | None
    peer_port_name: str | None
    peer_guid: str | None
    peer_port: int | None
    cable_serial: str | None
    code: str | None
    origin: str
    source_id: int
    line_no: int
    path: str
    message: str | None


class CounterStepRow(TypedDict):
    """One counter's increase between two readings of a port (counter_steps.sql)."""

    guid: str
    port: int
    counter: str
    prev_at: datetime
    seen_at: datetime
    delta: int
    reset: bool  # the reading is below the one before: the increase is the reading
    saturated: bool  # the reading is at the top of the counter's width


class CounterDeltaRow(CounterStepRow):
    """counter_steps' row with the two readings (counter_deltas.sql)."""

    prev_value: int
    value: int


class PortBerRow(TypedDict):
    """A port's newest self-reported BER in a window (port_ber_window.sql)."""

    guid: str
    port: int
    raw_ber: float | None
    effective_ber: float | None
    symbol_ber: float | None
    origin: str
    seen_at: datetime


# -- jobs -------------------------------------------------------------------------------------
# The two jobs queries return the same columns, jobs_on_hosts_during.sql with the asks each
# job answers too; what differs is which times can be NULL.


class JobEndedRow(TypedDict):
    """A job that ended in the window (jobs_ended_window.sql)."""

    job_id: str
    state: str
    start_at: datetime | None
    end_at: datetime
    name: str | None
    gpus: int | None
    hosts: list[str]  # sorted; [] for none


class FinishedJobRow(TypedDict):
    """A job that started and ended: the base of FinishedJobAskedRow, and what the analyses
    read of it."""

    job_id: str
    state: str
    start_at: datetime
    end_at: datetime
    name: str | None
    gpus: int | None
    hosts: list[str]


class RunningJobRow(TypedDict):
    """A job that had started and not ended: the base of RunningJobAskedRow, and what the
    analyses read of it."""

    job_id: str
    state: str
    start_at: datetime
    end_at: None
    name: str | None
    gpus: int | None
    hosts: list[str]


# A job that had started and ran during a span, as the analyses read it (a JobAskedRow without
# its asks): a test of end_at against None tells which.
JobDuringRow = FinishedJobRow | RunningJobRow


class LogJobRow(TypedDict):
    """A job run a job log without a job may belong to (jobs_of_logs.sql)."""

    source_id: int  # the log's
    job_id: str
    start_at: datetime
    end_at: datetime | None


class FinishedJobAskedRow(FinishedJobRow):
    """A job of jobs_on_hosts_during.sql that had ended, with the asks it answers."""

    asks: list[int]


class RunningJobAskedRow(RunningJobRow):
    """A job of jobs_on_hosts_during.sql that had not ended, with the asks it answers."""

    asks: list[int]


JobAskedRow = FinishedJobAskedRow | RunningJobAskedRow


class LabelledJobLogRow(TypedDict):
    """A job log ingested for a job (job_logs_window.sql): its hosts and times are not read."""

    source_id: int
    job_id: str
    hosts: None
    first_at: None
    last_at: None
    written_at: None
    nccl_versions: list[str]
    ib_timeout: int | None
    ib_retry_cnt: int | None
    using_pairs: int  # (host, HCA) pairs in its `NET/IB : Using` lists (job_log_using.sql)
    ib_hca: str | None


class UnlabelledJobLogRow(TypedDict):
    """A job log without a job (job_logs_window.sql): its hosts and times serve to match it."""

    source_id: int
    job_id: None
    hosts: list[str]  # as printed
    first_at: datetime | None  # its first and last failure line's stamp
    last_at: datetime | None
    written_at: datetime | None  # the file's mtime when it was ingested
    nccl_versions: list[str]
    ib_timeout: int | None
    ib_retry_cnt: int | None
    using_pairs: int  # as LabelledJobLogRow's
    ib_hca: str | None


JobLogRow = LabelledJobLogRow | UnlabelledJobLogRow


class JobLogUsingRow(TypedDict):
    """A job log's `NET/IB : Using` lists' (host, HCA) pairs as two lists in step
    (job_log_using.sql)."""

    source_id: int
    hosts: list[str]
    devices: list[str]


class JobErrorRow(TypedDict):
    """A job log's failure line, the columns the correlation reads (job_errors_window.sql)."""

    source_id: int
    job_id: str | None
    event_at: datetime | None  # None: an untimed line (not_before/not_after bound it)
    kind: str
    network: bool
    host: str | None
    hca: str | None
    peer: str | None
    is_first: bool  # the first error of its (host, HCA, peer)
    not_before: datetime | None
    not_after: datetime | None
    ran_ms: int | None
    hca_candidates: list[str] | None


# -- hosts ------------------------------------------------------------------------------------


class MaintenanceRow(TypedDict):
    """A maintenance window (maintenance_window.sql)."""

    target: str
    start_at: datetime
    end_at: datetime
    reason: str | None


class HostEventRow(TypedDict):
    """A boot, crash or Slurm node state, per source kind (host_events_window.sql)."""

    host: str
    at: datetime
    kind: str
    end_at: datetime | None
    reason: str | None
    source_kind: str


# -- switches and transceivers ----------------------------------------------------------------


class DeviceStatusRow(TypedDict):
    """A device's newest collection status per collector (device_status_latest.sql)."""

    device: str
    collector: str
    status: str
    detail: str | None
    checked_at: datetime


class SnmpPortRow(TypedDict):
    """One interface of a device's newest SNMP poll (snmp_last_poll.sql)."""

    polled_at: datetime
    if_index: int
    if_name: str  # the columns allow NULL; add_snmp_ports writes a models.SnmpPort's str
    oper_status: str
    admin_status: str | None
    last_change_ticks: int | None
    sys_uptime_ticks: int | None
    in_errors: int | None
    out_errors: int | None
    hc_in_octets: int | None
    hc_out_octets: int | None
    symbol_errors: int | None
    phys_state: str | None


class TransceiverRow(TypedDict):
    """The newest module known in a switch port (transceivers_latest.sql)."""

    device: str
    port_name: str
    guid: str | None
    port: int | None
    present: bool | None
    vendor: str | None
    part_number: str | None
    serial_number: str | None
    length: str | None
    cable_type: str | None
    seen_at: datetime
    revision: str | None
    lot: str | None


class SerialSeenRow(TypedDict):
    """Where a module with a given serial number was seen (transceiver_serial_ports.sql)."""

    serial_number: str
    device: str
    port_name: str
    guid: str | None
    port: int | None
    seen_at: datetime


# -- transceiver diagnostics ------------------------------------------------------------------


class OpticsReadingRow(TypedDict):
    """One lane's reading of a module (optics_readings_window.sql)."""

    read_at: datetime
    device: str
    port_name: str
    guid: str | None
    port: int | None
    vendor: str | None
    part_number: str | None
    serial_number: str | None
    firmware: str | None
    temperature_c: float | None
    vcc_v: float | None
    lane: int | None
    tx_bias_ma: float | None
    tx_power_dbm: float | None
    rx_power_dbm: float | None


class OpticsThresholdRow(TypedDict):
    """A module's newest thresholds of one quantity (optics_thresholds_latest.sql,
    optics_thresholds_asof.sql)."""

    device: str
    port_name: str
    serial_number: str | None
    quantity: str
    low_alarm: float | None
    low_warning: float | None
    high_warning: float | None
    high_alarm: float | None


class OpticsDailyRow(TypedDict):
    """A module lane's daily medians over a window, each quantity a list by day
    (optics_daily.sql)."""

    device: str
    port_name: str
    serial_number: str | None
    lane: int | None
    last_at: datetime
    guid: str | None
    port: int | None
    vendor: str | None
    part_number: str | None
    firmware: str | None
    days: list[int]  # counted from the window's first day
    temperature_c: list[float | None]
    vcc_v: list[float | None]
    tx_bias_ma: list[float | None]
    tx_power_dbm: list[float | None]
    rx_power_dbm: list[float | None]


class OpticsDeviceRow(TypedDict):
    """How many modules a device had readings of in a window (optics_modules_per_device.sql)."""

    device: str
    modules: int


class OpticsModuleRow(TypedDict):
    """A module read in a window: its newest read time, placement and identity
    (optics_modules_between.sql)."""

    device: str
    port_name: str
    serial_number: str | None
    last_at: datetime
    guid: str | None
    port: int | None
    vendor: str | None
    part_number: str | None
    firmware: str | None


class OpticsFingerprintRow(TypedDict):
    """What a watch list computed on a window's readings depends on (optics_fingerprint.sql)."""

    readings: int
    newest_read_at: datetime | None
    newest_source_id: int | None


class WatchListRunRow(TypedDict):
    """The stored watch list computation (watch_list_run.sql, migration 0017)."""

    computed_at: datetime
    took_s: float
    since: datetime
    until: datetime
    readings: int
    newest_read_at: datetime | None
    newest_source_id: int | None
    settings: str
    modules: int


class WatchEntryRow(TypedDict):
    """One entry of the stored watch list (watch_list_entries.sql); `findings` is JSON."""

    rank: int
    device: str
    port_name: str
    serial_number: str | None
    part_number: str | None
    vendor: str | None
    firmware: str | None
    guid: str | None
    port: int | None
    lane: int | None
    days: int
    last_at: datetime
    peer_guid: str | None
    peer_port: int | None
    peer_name: str | None
    findings: str


# -- inventory and replacements ---------------------------------------------------------------


class LocationRow(TypedDict):
    """Where a node is, from the newest inventory naming it (inventory_latest.sql)."""

    name: str
    site: str | None
    row_name: str | None
    rack: str | None
    u: str | None


class ReplacementRow(TypedDict):
    """A recorded replacement (replacements_all.sql)."""

    replacement_id: int
    ticket: str
    part: str  # cable, transceiver-a, transceiver-b, switch-port
    replaced_at: datetime
    a_guid: str
    a_port: int
    b_guid: str | None
    b_port: int | None
    a_name: str | None
    b_name: str | None
    old_serials: list[str] | None
    recorded_at: datetime


# -- outcomes ---------------------------------------------------------------------------------


class SuspectRunRow(TypedDict):
    """A nightly run remembered (suspect_runs_window.sql)."""

    run_id: int
    run_at: datetime
    since: datetime
    until: datetime
    shown: int


class RememberedSuspectRow(TypedDict):
    """A suspect a nightly run showed (remembered_suspects_window.sql)."""

    run_until: datetime
    run_id: int
    rank: int
    component: str
    a_guid: str
    a_port: int | None
    a_name: str | None
    b_guid: str | None
    b_port: int | None
    b_name: str | None
    score: float
    points: float
    rules: list[str]
    rule_points: list[float]
    first_at: datetime | None
    last_at: datetime | None
    flaps: int
    jobs_failed: int
    gpu_hours_lost: float
    job_ids: list[str]
    job_died_at: list[datetime]
    job_gpu_hours: list[float]
