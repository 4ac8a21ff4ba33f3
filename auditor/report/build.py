"""The report: what the technician works from and what the operator reads in the morning.

`build_report` gathers one dict (the content of report.json); `write_report` writes
replacements.csv (one row per action, best first), report.json and a self-contained
report.html from it.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auditor import graph
from auditor.analyse import replacements
from auditor.analyse.correlate import Evidence, gather
from auditor.analyse.rank import Suspect, as_json, rank
from auditor.config import RankingSettings
from auditor.models import NodeType
from auditor.report.tables import cell_limit, to_json
from auditor.safe_text import csv_cell
from auditor.store import Store

CSV_COLUMNS = [
    "priority", "verdict", "score", "action",
    "a_name", "a_port_label", "a_site", "a_row", "a_rack", "a_u",
    "b_name", "b_port_label", "b_site", "b_row", "b_rack", "b_u",
    "vendor", "part_number", "serial_number", "length",
    "first_flap", "last_flap", "jobs_failed", "gpu_hours_lost", "evidence", "ticket",
]


def _iso(at: datetime | None) -> str | None:
    return at.isoformat(timespec="seconds") + "Z" if at else None


def _where(store_locs: dict[str, dict[str, Any]], labels: dict[tuple[str, int], str],
           end: dict[str, Any]) -> dict[str, Any]:
    loc = store_locs.get(end["name"], {})
    label = labels.get((end["name"], end["port"])) if end["port"] is not None else None
    return {"name": end["name"], "guid": end["guid"], "port": end["port"],
            "label": label or end.get("label") or "", "site": loc.get("site"),
            "row": loc.get("row_name"), "rack": loc.get("rack"), "u": loc.get("u")}


def _part(modules: dict[tuple[str, int], dict[str, Any]], ends: list[dict[str, Any]]
          ) -> dict[str, Any]:
    found = [modules[(e["guid"], e["port"])] for e in ends if (e["guid"], e["port"]) in modules]
    if not found:
        return {"vendor": None, "part_number": None, "serial_number": None, "length": None}
    first = found[0]
    return {"vendor": first["vendor"], "part_number": first["part_number"],
            "serial_number": " / ".join(dict.fromkeys(
                str(m["serial_number"]) for m in found if m["serial_number"])) or None,
            "length": first["length"]}


def _neighbourhood(ev: Evidence, ends: list[dict[str, Any]]) -> dict[str, Any]:
    g = graph.build_graph(ev.fabric)
    core = [e["guid"] for e in ends if e["guid"] in g]
    nodes: dict[str, dict[str, Any]] = {}

    def add(guid: str) -> None:
        data = g.nodes[guid]
        tier = 2 if data["node_type"] == NodeType.HCA else (1 if graph.is_leaf(g, guid) else 0)
        nodes[guid] = {"id": guid, "name": data["name"],
                       "kind": "hca" if tier == 2 else "switch", "tier": tier}

    for guid in core:
        add(guid)
        for peer in sorted(g.neighbors(guid))[:12]:  # a spine has hundreds: enough to orient
            add(peer)
    suspect = {(e["guid"], e["port"]) for e in ends}
    edges = []
    for u, v, k in g.edges(list(nodes), keys=True):
        if u in nodes and v in nodes:
            edges.append({"a": u, "b": v, "label": f"{k[1]}-{k[3]}",
                          "suspect": {(k[0], k[1]), (k[2], k[3])} == suspect})
    return {"nodes": list(nodes.values()), "edges": edges}


def _heatmap(ev: Evidence, bins: int = 24) -> dict[str, Any]:
    span = (ev.until - ev.since) / bins
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * bins)
    flaps = [f for le in ev.links.values() for f in le.flaps] + [
        f for n in ev.nodes for f in n.flaps]
    for f in flaps:
        if f.down_at is None or not ev.since <= f.down_at <= ev.until:
            continue
        i = min(bins - 1, int((f.down_at - ev.since) / span))
        for guid, _ in f.ends:
            node = ev.fabric.nodes.get(guid)
            if node is not None and node.node_type == NodeType.SWITCH:
                counts[node.name][i] += 1
    return {"bins": [_iso(ev.since + span * i) for i in range(bins)],
            "rows": [{"switch": name, "counts": c} for name, c in sorted(counts.items())]}


def build_report(store: Store, since: datetime, until: datetime, *,
                 aliases: dict[str, str] | None = None, verify_days: float = 7.0,
                 limit: int = 50, title: str = "InfiniBand fabric audit",
                 cfg: RankingSettings | None = None) -> dict[str, Any]:
    """Everything the report shows, as plain JSON-able data (times naive UTC in, ISO out)."""
    ev = gather(store, since, until, cfg, aliases=aliases)
    ranked: list[Suspect] = rank(ev, cfg)
    suspects = as_json(ev, ranked, limit)["suspects"]
    locs, labels = store.locations(), store.port_labels()
    modules = {(t["guid"], t["port"]): t for t in store.transceivers() if t["guid"]}
    status = store.device_status()
    switches = [s for s in status if s["collector"] in ("snmp", "ssh")]
    hosts = [s for s in status if s["collector"] == "host"]
    rows, timelines, hoods = [], {}, {}
    by_link = {tuple(sorted((g, p) for g, p in le.link)): le for le in ev.links.values()}
    for s, raw in zip(suspects, ranked, strict=False):
        ends = [_where(locs, labels, e) for e in s["ends"]]
        rows.append({
            "priority": s["rank"], "verdict": s["component"], "score": s["score"],
            "action": s["action"], "a": ends[0], "b": ends[1] if len(ends) > 1 else None,
            "part": _part(modules, s["ends"]), "first_flap": s["first_at"],
            "last_flap": s["last_at"], "jobs_failed": s["jobs_failed"],
            "gpu_hours_lost": s["gpu_hours_lost"], "evidence": s["evidence"], "ticket": "",
        })
        le = by_link.get(tuple(sorted((e["guid"], e["port"]) for e in s["ends"])))
        flap_list = [f for n in ev.nodes if raw.component in ("switch", "host")
                     and n.guid == s["ends"][0]["guid"] for f in n.flaps]
        if le is not None:
            flap_list = le.flaps
        jobs = (le.jobs if le is not None else
                [j for n in ev.nodes if n.guid == s["ends"][0]["guid"] for j in n.jobs])
        timelines[str(s["rank"])] = {
            "flaps": [{"down_at": _iso(f.down_at), "up_at": _iso(f.up_at)}
                      for f in flap_list if f.down_at],
            "jobs": [{"job_id": j["job_id"], "died_at": _iso(j["died_at"])} for j in jobs],
        }
        hoods[str(s["rank"])] = _neighbourhood(ev, s["ends"])
    fabric_links = len(ev.fabric.links)
    all_flaps = {id(f) for le in ev.links.values() for f in le.flaps} | {
        id(f) for n in ev.nodes for f in n.flaps}
    return {
        "title": title,
        "generated_at": _iso(datetime.now(UTC).replace(tzinfo=None)),
        "window": {"since": _iso(since), "until": _iso(until)},
        "coverage": {
            "switches_ok": sum(s["status"] == "ok" for s in switches),
            "switches_total": len(switches),
            "hosts_ok": sum(s["status"] == "ok" for s in hosts), "hosts_total": len(hosts),
            "failed_devices": [{k: s[k] for k in ("device", "collector", "status", "detail")}
                               for s in status if s["status"] != "ok"],
        },
        "summary": {
            "switches": sum(n.node_type == NodeType.SWITCH for n in ev.fabric.nodes.values()),
            "hcas": sum(n.node_type == NodeType.HCA for n in ev.fabric.nodes.values()),
            "links": fabric_links, "flaps": len(all_flaps), "suspects": len(ranked),
            "jobs_failed": ev.jobs_failed, "jobs_network": ev.jobs_network,
            "gpu_hours_lost": round(sum(s.gpu_hours_lost for s in ranked), 1),
        },
        "replacements": rows,
        "suspects": suspects,
        "timelines": timelines,
        "neighbourhoods": hoods,
        "heatmap": _heatmap(ev),
        "tracking": replacements.status(store, until + timedelta(seconds=1), verify_days),
    }


def replacements_csv(report: dict[str, Any]) -> str:
    """One row per action. Every cell is inert text and never a formula (safe_text.csv_cell):
    names, parts and evidence come from the fabric and end up in a technician's spreadsheet."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    limits = [cell_limit(c) for c in CSV_COLUMNS]
    for r in report["replacements"]:
        a, b, part = r["a"], r["b"] or {}, r["part"]
        row = [
            r["priority"], r["verdict"], r["score"], r["action"],
            a["name"], a["label"], a["site"], a["row"], a["rack"], a["u"],
            b.get("name"), b.get("label"), b.get("site"), b.get("row"), b.get("rack"),
            b.get("u"), part["vendor"], part["part_number"], part["serial_number"],
            part["length"], r["first_flap"], r["last_flap"], r["jobs_failed"],
            r["gpu_hours_lost"], (r["evidence"] or [""])[0], r["ticket"],
        ]
        writer.writerow([csv_cell(v, n) for v, n in zip(row, limits, strict=True)])
    return buf.getvalue()


def write_report(out: Path, report: dict[str, Any]) -> list[Path]:
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
