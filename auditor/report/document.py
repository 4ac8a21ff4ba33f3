"""The report document: the content of report.json, which report.html and replacements.csv are
drawn from. `auditor.report.build` is its only producer. Times are ISO 8601 UTC strings ending
in Z; the keys are in the order the file writes them."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from auditor.analyse.cohorts import CohortJSON
from auditor.analyse.optics.outputs import WatchJSON
from auditor.analyse.outcomes import EpisodeJSON, GroupJSON, WeightJSON
from auditor.analyse.rank import SuspectJSON


class Window(TypedDict):
    since: str
    until: str


class FailedDevice(TypedDict):
    device: str
    collector: str
    status: str
    detail: str | None


class Coverage(TypedDict):
    switches_ok: int
    switches_total: int
    hosts_ok: int
    hosts_total: int
    failed_devices: list[FailedDevice]
    blind_spots: list[str]  # what the evidence could not see (analyse/coverage.py)
    # port events in the window per switch-side source: syslog, nvos-events, ufm-events,
    # ufm-rest-events (added for #24)
    event_sources: NotRequired[dict[str, int]]
    # what the fabric was read through: tool or log -> {"snapshots": n, "port_events": n}
    fabric_sources: dict[str, dict[str, int]]
    sources_note: str


class Summary(TypedDict):
    switches: int
    hcas: int
    links: int
    flaps: int
    suspects: int  # every suspect ranked, also those past the report's limit
    jobs_failed: int
    jobs_network: int
    gpu_hours_lost: float
    jobs_killed_by_host: NotRequired[int]  # added for #20: killed by their host going away
    # added for #25: links only NCCL pair votes below VOTE_DUST point at, not listed
    vote_dust_links: NotRequired[int]


class End(TypedDict):
    """One end of a suspect, where a technician finds it."""

    name: str
    guid: str
    port: int | None
    label: str
    site: str | None
    row: str | None
    rack: str | None
    u: str | None


class Part(TypedDict):
    vendor: str | None
    part_number: str | None
    serial_number: str | None
    length: str | None


class Replacement(TypedDict):
    """One row of replacements.csv: one action."""

    priority: int
    verdict: str
    score: float
    action: str
    a: End
    b: End | None  # a switch or host event has one end
    part: Part
    first_flap: str | None
    last_flap: str | None
    jobs_failed: int
    gpu_hours_lost: float
    evidence: list[str]
    ticket: str  # empty: the technician's column


class TimelineFlap(TypedDict):
    down_at: str
    up_at: str | None  # still down


class TimelineJob(TypedDict):
    job_id: str
    died_at: str | None


class Timeline(TypedDict):
    flaps: list[TimelineFlap]
    jobs: list[TimelineJob]


class HoodNode(TypedDict):
    id: str
    name: str
    kind: Literal["switch", "hca"]
    tier: int  # 0 spine, 1 leaf, 2 HCA


class HoodEdge(TypedDict):
    a: str
    b: str
    label: str  # "<a's port>-<b's port>"
    suspect: bool
    jobs: list[str]  # failed jobs whose routes (`paths`) cross it; [] without tables


class HoodPath(TypedDict):
    """A failed job's route through the suspect link, from the forwarding tables (#23)."""

    job_id: str
    source: str  # host names
    dest: str
    rail: int
    edges: list[list[str]]  # the cables it crosses in order: [from node id, to node id]


class Neighbourhood(TypedDict):
    nodes: list[HoodNode]
    edges: list[HoodEdge]
    paths: list[HoodPath]  # [] when no forwarding tables are stored


class HeatmapRow(TypedDict):
    switch: str
    counts: list[int]  # flaps per bin


class Heatmap(TypedDict):
    bins: list[str]  # the start of each bin
    rows: list[HeatmapRow]


class Tracking(TypedDict):
    """A recorded swap and how it is doing (auditor.analyse.replacements.status)."""

    ticket: str
    part: str
    link: str
    recorded_at: str
    status: str  # verified, watching, escalated, followed_part
    reason: str
    flaps_since: int


class TraceSeries(TypedDict):
    lane: int | None  # None: the module's own quantity (temperature, Vcc)
    points: list[tuple[str, float]]  # (UTC day "YYYY-MM-DD", that day's median)


class OpticsTrace(TypedDict):
    """One module's diagnostics history in a suspect's port (issue #14)."""

    device: str
    port_name: str
    serial_number: str | None
    quantity: str  # temperature_c, vcc_v, tx_bias_ma, tx_power_dbm, rx_power_dbm
    unit: str
    warning: float | None  # the module's own limit on the side the quantity fails on
    alarm: float | None
    lane: int | None  # the lane a watch is about
    watched: bool
    series: list[TraceSeries]
class CohortsSection(TypedDict):
    """Incidents per part number, vendor, firmware and lot (auditor/analyse/cohorts.py)."""

    days: float  # how long the parts were watched
    parts: int
    with_incident: int
    incidents: int
    mtbi_days: float | None  # the fleet's: part-days / incidents
    findings: list[str]  # one sentence per flagged cohort not explained by a finer one
    groups: list[CohortJSON]


class Outcomes(TypedDict):
    """What the nightly runs' suspects turned out to be (auditor/analyse/outcomes.py)."""

    window: Window
    nights: int  # nightly runs remembered in the window
    clean_days: float
    verify_days: float
    unjudged: int  # whole-switch and whole-host suspects: no part to swap
    overall: GroupJSON
    rules: list[GroupJSON]
    verdicts: list[GroupJSON]
    learned_weights: list[WeightJSON] | None  # None: [outcomes] learned_weights is off
    suspects: list[EpisodeJSON]
    cohorts: CohortsSection


class Report(TypedDict):
    title: str
    generated_at: str
    window: Window
    coverage: Coverage
    summary: Summary
    replacements: list[Replacement]
    suspects: list[SuspectJSON]
    timelines: dict[str, Timeline]  # by priority (JSON keys are strings)
    neighbourhoods: dict[str, Neighbourhood]
    heatmap: Heatmap
    tracking: list[Tracking]
    # Added for #14 (build_report always writes them; a document made before may lack them):
    optics_trends: NotRequired[dict[str, list[OpticsTrace]]]  # by priority, with diagnostics
    watch_list: NotRequired[list[WatchJSON]]  # the optics watch list, strongest first
    # Added for #25: when the watch list was computed, from the nightly precomputation or not.
    watch_list_computed_at: NotRequired[str | None]
    watch_list_precomputed: NotRequired[bool]
    watch_list_on_demand_because: NotRequired[str | None]
    outcomes: Outcomes | None  # added for #15; None when the audit did not judge outcomes
