"""Prometheus node_exporter textfile-collector metrics: flaps per link, suspect scores, sweep
coverage and the time of the last good sweep.

node_exporter reads every *.prom file in its textfile directory on each scrape, so the file is
written to a temporary name and renamed: a scrape never sees half a file.

Every per-link series names its ends by GUID as well as by name and port (`a_guid`, `b_guid`):
names are descriptions, and two switches can both be "Quantum Mellanox Technologies". One
metric with one label set twice fails the scrape (node_exporter hands the file to the Go
client's registry, which refuses a series "collected before with the same name and label
values"), issue #21. A series whose labels repeat one already written is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.analyse.rank import SuspectJSON
from auditor.report.document import Report
from auditor.safe_text import NAME_MAX, inert

if TYPE_CHECKING:
    from auditor.store.rows import SourceRow


def _label(value: object) -> str:
    # Names come from the fabric: made inert and bounded first (a control character becomes a
    # visible escape), then the exposition format's own escapes: backslash, quote, newline.
    text = inert(value, NAME_MAX)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kv: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in kv.items()) + "}"


def _ends(suspect: SuspectJSON) -> dict[str, object]:
    """The labels of a suspect's ends: name, port and GUID of each (b empty: one end)."""
    a = suspect["ends"][0]
    b = suspect["ends"][1] if len(suspect["ends"]) > 1 else None
    return {"a": a["name"], "a_port": a["port"] or "", "a_guid": a["guid"],
            "b": b["name"] if b else "", "b_port": (b["port"] or "") if b else "",
            "b_guid": b["guid"] if b else ""}


def render(report: Report, sources: Sequence[SourceRow]) -> str:
    """Metric text from a report document and the ingested sources (the store's, given by the
    caller)."""
    lines = [
        "# HELP auditor_link_flaps Flaps of a suspect link in the report window.",
        "# TYPE auditor_link_flaps gauge",
    ]
    seen: set[str] = set()
    for s in report["suspects"]:
        line = "auditor_link_flaps" + _labels(component=s["component"], **_ends(s))
        if line not in seen:  # the same link twice: its first (best-ranked) suspect
            seen.add(line)
            lines.append(f"{line} {s['flaps']}")
    lines += ["# HELP auditor_suspect_score Suspect score (0..1) in the report window.",
              "# TYPE auditor_suspect_score gauge"]
    for s in report["suspects"]:
        lines.append("auditor_suspect_score" + _labels(
            component=s["component"], rank=s["rank"], **_ends(s)) + f" {s['score']}")
    cov = report["coverage"]
    lines += ["# HELP auditor_sweep_devices Devices by collection result in the last sweep.",
              "# TYPE auditor_sweep_devices gauge",
              "auditor_sweep_devices" + _labels(kind="switch", result="ok")
              + f" {cov['switches_ok']}",
              "auditor_sweep_devices" + _labels(kind="switch", result="failed")
              + f" {cov['switches_total'] - cov['switches_ok']}",
              "auditor_sweep_devices" + _labels(kind="host", result="ok") + f" {cov['hosts_ok']}",
              "auditor_sweep_devices" + _labels(kind="host", result="failed")
              + f" {cov['hosts_total'] - cov['hosts_ok']}"]
    good = [s["observed_at"] for s in sources
            if s["kind"] in ("ibnetdiscover", "iblinkinfo") and s["observed_at"] is not None]
    lines += ["# HELP auditor_last_good_sweep_timestamp_seconds When the newest topology "
              "snapshot was taken (Unix time).",
              "# TYPE auditor_last_good_sweep_timestamp_seconds gauge",
              "auditor_last_good_sweep_timestamp_seconds "
              + (f"{max(good).replace(tzinfo=UTC).timestamp():.0f}" if good else "0")]
    summary = report["summary"]
    lines += ["# HELP auditor_jobs_failed Failed jobs in the report window.",
              "# TYPE auditor_jobs_failed gauge",
              "auditor_jobs_failed" + _labels(cause="network") + f" {summary['jobs_network']}",
              "auditor_jobs_failed" + _labels(cause="any") + f" {summary['jobs_failed']}",
              "# HELP auditor_report_timestamp_seconds When these metrics were written.",
              "# TYPE auditor_report_timestamp_seconds gauge",
              f"auditor_report_timestamp_seconds {datetime.now(UTC).timestamp():.0f}"]
    return "\n".join(lines) + "\n"


def write_textfile(path: Path, text: str) -> None:
    """Atomically (node_exporter must never read half a file); AuditorError naming `path` when
    it cannot be written."""
    from auditor.outfiles import make_folder, write_text

    make_folder(path.parent, "metrics", target=path)
    # A dot file: the textfile collector reads only *.prom, never a file being written.
    write_text(path, text, "metrics", tmp=path.with_name(f".{path.name}.tmp"))
