"""The report: what the technician works from and what the operator reads in the morning.

`build_report` writes the report document (auditor/report/document.py, the content of
report.json) from an audit (auditor/analyse/audit.py); `write_report` writes replacements.csv
(one row per action, best first), report.json and a self-contained report.html from it.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import overload

from auditor.analyse import outcomes
from auditor.analyse.audit import Audit, Finding, Neighbourhood, Place
from auditor.analyse.cohorts import Cohorts
from auditor.analyse.optics.model import UNIT
from auditor.analyse.optics.outputs import Trace, age_json, watch_json
from auditor.analyse.outcomes import Outcomes
from auditor.analyse.rank import SuspectJSON, suspect_json
from auditor.models import NodeType
from auditor.report import document
from auditor.report.tables import cell_limit, to_json
from auditor.safe_text import csv_cell

CSV_COLUMNS = [
    "priority", "verdict", "score", "action",
    "a_name", "a_port_label", "a_site", "a_row", "a_rack", "a_u",
    "b_name", "b_port_label", "b_site", "b_row", "b_rack", "b_u",
    "vendor", "part_number", "serial_number", "length",
    "first_flap", "last_flap", "jobs_failed", "gpu_hours_lost", "evidence", "ticket",
]


@overload
def _iso(at: datetime) -> str: ...


@overload
def _iso(at: None) -> None: ...


def _iso(at: datetime | None) -> str | None:
    return at.isoformat(timespec="seconds") + "Z" if at else None


def _end(place: Place) -> document.End:
    return {"name": place.name, "guid": place.guid, "port": place.port, "label": place.label,
            "site": place.site, "row": place.row, "rack": place.rack, "u": place.u}


def _replacement(f: Finding, s: SuspectJSON) -> document.Replacement:
    ends = [_end(p) for p in f.ends]
    return {
        "priority": s["rank"], "verdict": s["component"], "score": s["score"],
        "action": s["action"], "a": ends[0], "b": ends[1] if len(ends) > 1 else None,
        "part": {"vendor": f.part.vendor, "part_number": f.part.part_number,
                 "serial_number": f.part.serial_number, "length": f.part.length},
        "first_flap": s["first_at"], "last_flap": s["last_at"],
        "jobs_failed": s["jobs_failed"], "gpu_hours_lost": s["gpu_hours_lost"],
        "evidence": s["evidence"], "ticket": "",
    }


def _timeline(f: Finding) -> document.Timeline:
    return {
        "flaps": [{"down_at": _iso(fl.down_at), "up_at": _iso(fl.up_at)}
                  for fl in f.flaps if fl.down_at],
        "jobs": [{"job_id": j["job_id"], "died_at": _iso(j["died_at"])} for j in f.jobs],
    }


def _neighbourhood(hood: Neighbourhood) -> document.Neighbourhood:
    return {
        "nodes": [{"id": n.guid, "name": n.name, "kind": "hca" if n.tier == 2 else "switch",
                   "tier": n.tier} for n in hood.nodes],
        "edges": [{"a": e.a, "b": e.b, "label": f"{e.ports[0]}-{e.ports[1]}",
                   "suspect": e.suspect, "jobs": list(e.jobs)} for e in hood.edges],
        "paths": [{"job_id": p.job_id, "source": p.source, "dest": p.dest, "rail": p.rail,
                   "edges": [[a, b] for a, _, b, _ in p.cables]} for p in hood.paths],
    }


def _trace(t: Trace) -> document.OpticsTrace:
    return {
        "device": t.module.device, "port_name": t.module.port_name,
        "serial_number": t.module.serial_number, "quantity": t.quantity,
        "unit": UNIT[t.quantity], "warning": t.warning, "alarm": t.alarm,
        "lane": t.watched_lane, "watched": t.watched,
        "series": [{"lane": lane, "points": [(f"{day:%Y-%m-%d}", v) for day, v in points]}
                   for lane, points in t.lanes.items()],
    }


def build_report(result: Audit, *, title: str = "InfiniBand fabric audit") -> document.Report:
    """The report document of an audit (times naive UTC in, ISO out)."""
    ev, ranked, cov = result.evidence, result.suspects, result.coverage
    suspects = [suspect_json(f.rank, f.suspect) for f in result.findings]
    return {
        "title": title,
        "generated_at": _iso(datetime.now(UTC).replace(tzinfo=None)),
        "window": {"since": _iso(result.since), "until": _iso(result.until)},
        "coverage": {
            "switches_ok": cov.switches_ok, "switches_total": cov.switches_total,
            "hosts_ok": cov.hosts_ok, "hosts_total": cov.hosts_total,
            "failed_devices": [{"device": d.device, "collector": d.collector,
                                "status": d.status, "detail": d.detail} for d in cov.failed],
            "blind_spots": list(cov.blind_spots),
            "event_sources": dict(cov.event_sources),
            "fabric_sources": {k: dict(v) for k, v in cov.fabric_sources.items()},
            "sources_note": cov.sources_note,
        },
        "summary": {
            "switches": sum(n.node_type == NodeType.SWITCH for n in ev.fabric.nodes.values()),
            "hcas": sum(n.node_type == NodeType.HCA for n in ev.fabric.nodes.values()),
            "links": len(ev.fabric.links), "flaps": result.flaps, "suspects": len(ranked),
            "jobs_failed": ev.jobs_failed, "jobs_network": ev.jobs_network,
            "jobs_killed_by_host": ev.jobs_host, "vote_dust_links": ev.vote_dust_links,
            "gpu_hours_lost": round(sum(s.gpu_hours_lost for s in ranked), 1),
        },
        "replacements": [_replacement(f, s) for f, s in zip(result.findings, suspects,
                                                              strict=True)],
        "suspects": suspects,
        "timelines": {str(f.rank): _timeline(f) for f in result.findings},
        "neighbourhoods": {str(f.rank): _neighbourhood(f.neighbourhood)
                           for f in result.findings},
        "heatmap": {"bins": [_iso(b) for b in result.heatmap.bins],
                    "rows": [{"switch": name, "counts": counts}
                             for name, counts in result.heatmap.rows]},
        "tracking": [{"ticket": t["ticket"], "part": t["part"], "link": t["link"],
                      "recorded_at": t["recorded_at"], "status": t["status"],
                      "reason": t["reason"], "flaps_since": t["flaps_since"]}
                     for t in result.tracking],
        "optics_trends": {str(f.rank): [_trace(t) for t in f.optics]
                          for f in result.findings if f.optics},
        "watch_list": [watch_json(i, w, result.optics_settings)
                       for i, w in enumerate(result.watch.watches if result.watch else [], 1)],
        **age_json(result.watch),
        "outcomes": outcomes_section(result.outcomes, result.cohorts)
        if result.outcomes is not None and result.cohorts is not None else None,
    }


def outcomes_section(out: Outcomes, co: Cohorts) -> document.Outcomes:
    """The outcomes of the remembered suspects and the parts' cohorts, as `auditor outcomes
    --format json` prints them and report.json holds them."""
    weights = (outcomes.weights_json(outcomes.learned_weights(out))
               if out.settings.learned_weights else None)
    return {
        "window": {"since": _iso(out.since), "until": _iso(out.until)},
        "nights": out.nights, "clean_days": out.settings.clean_days,
        "verify_days": out.verify_days, "unjudged": out.unjudged,
        "overall": outcomes.overall(out), "rules": outcomes.by_rule(out),
        "verdicts": outcomes.by_verdict(out), "learned_weights": weights,
        "suspects": [outcomes.episode_json(e) for e in out.episodes],
        "cohorts": {"days": co.days, "parts": co.parts, "with_incident": co.with_incident,
                    "incidents": co.incidents,
                    "mtbi_days": round(co.parts * co.days / co.incidents, 1)
                    if co.incidents else None,
                    "findings": [g["finding"] or "" for g in co.findings],
                    "groups": co.groups},
    }


def replacements_csv(report: document.Report) -> str:
    """One row per action. Every cell is inert text and never a formula (safe_text.csv_cell):
    names, parts and evidence come from the fabric and end up in a technician's spreadsheet."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    limits = [cell_limit(c) for c in CSV_COLUMNS]
    for r in report["replacements"]:
        a, b, part = r["a"], r["b"], r["part"]
        b_cells = [b["name"], b["label"], b["site"], b["row"], b["rack"], b["u"]] if b else \
            [None] * 6
        row = [
            r["priority"], r["verdict"], r["score"], r["action"],
            a["name"], a["label"], a["site"], a["row"], a["rack"], a["u"], *b_cells,
            part["vendor"], part["part_number"], part["serial_number"], part["length"],
            r["first_flap"], r["last_flap"], r["jobs_failed"], r["gpu_hours_lost"],
            (r["evidence"] or [""])[0], r["ticket"],
        ]
        writer.writerow([csv_cell(v, n) for v, n in zip(row, limits, strict=True)])
    return buf.getvalue()


def write_report(out: Path, report: document.Report) -> list[Path]:
    """replacements.csv, report.json and report.html in `out` (created)."""
    from auditor.outfiles import make_folder, write_text
    from auditor.report.html import render_html

    files = {
        "replacements.csv": replacements_csv(report),
        "report.json": to_json(report) + "\n",
        "report.html": render_html(report),
    }
    make_folder(out, "report")
    written = []
    for name, text in files.items():
        write_text(out / name, text, "report")  # a reader never sees half a report
        written.append(out / name)
    return written
