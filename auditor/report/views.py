"""What each command prints: the rows, columns, titles and notes of its table, CSV or JSON
(issue #22: out of cli.py, which parses options, calls the library and prints these). Every
function takes the data a command got and returns the text blocks to print, in order. Every cell
goes through auditor.report.tables (and so auditor.safe_text): fabric text is untrusted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from auditor.report.tables import render_rows, to_json, to_table
from auditor.safe_text import NAME_MAX, inert

NOTE_MAX = 1000  # a coverage note under the suspects table

if TYPE_CHECKING:
    from auditor.store.rows import CounterDeltaRow, IssueRow, SourceRow

WATCH_COLUMNS = ["rank", "device", "port_name", "serial_number", "part_number", "lane", "rule",
                 "trend", "days_to_threshold", "threshold", "strength", "strong", "peer"]
OUTCOME_COLUMNS = ["suspects", "confirmed", "refuted", "open", "young", "precision",
                   "median_days_to_fix", "gpu_hours_before_fix", "false_positives_per_night"]
COHORT_COLUMNS = ["field", "value", "part_number", "parts", "with_incident", "incidents",
                  "mtbi_days", "share", "rest_share", "p_value", "explained_by"]


def _name(end: Mapping[str, Any]) -> str:
    # A name from the fabric, shown short enough that the port after it stays visible.
    return inert(end["name"], NAME_MAX)


def _pair(ends: list[dict[str, Any]]) -> dict[str, Any]:
    return {"end A": f"{_name(ends[0])} port {ends[0]['port']}",
            "end B": f"{_name(ends[1])} port {ends[1]['port']}"}


def _label(ends: list[dict[str, Any]]) -> str:
    return " <-> ".join(f"{_name(e)}[{e['port']}]" for e in ends)


def _end_label(end: Mapping[str, Any]) -> str:
    return f"{_name(end)}[{end['port']}]"


def _label_end(end: Mapping[str, Any]) -> str:
    return f"{_name(end)} {end['label']}".strip()


def _port_label(name: str | None, port: int | None) -> str:
    return f"{name}[{port}]" if port is not None else str(name)


def _cells(row: Mapping[str, object], columns: list[str]) -> dict[str, object]:
    return {c: row[c] for c in columns}


def rows(found: Sequence[Mapping[str, Any]], fmt: str, *, title: str,
         columns: list[str] | None = None) -> list[str]:
    """A command's rows as they are: a table (of `columns`, when given), CSV or JSON."""
    return [render_rows(found, fmt, columns=columns if fmt == "table" else None, title=title)]


def sweep(at: Any, where: str, folder: str, commands: list[dict[str, Any]],
          ingested: list[dict[str, Any]], fmt: str) -> list[str]:
    if fmt == "json":
        return [to_json({"at": at, "where": where, "captures": folder, "commands": commands,
                         "ingested": ingested})]
    return [render_rows(commands, fmt, title=f"sweep on {where}")]


def topology(data: dict[str, Any], fmt: str) -> list[str]:
    if fmt == "json":
        return [to_json(data)]
    summary = [{k: data[k] for k in ("snapshot_at", "switches", "hcas", "links", "ports_down")}
               | {"degraded": len(data["degraded"]), "moved": len(data["moved"]),
                  "appeared": len(data["appeared"]), "disappeared": len(data["disappeared"])}]
    if fmt == "csv":
        return [render_rows(summary, "csv")]
    out = [to_table(summary, title="fabric")]
    if data["down"]:
        out.append(to_table([_pair(d["ends"]) | {"down_since": d["down_since"]}
                             for d in data["down"]], title="ports down (were up)"))
    if data["degraded"]:
        out.append(to_table([_pair(d["ends"]) | {
            "now": f"{d['width']} {d['speed']}",
            "could be": f"{d['possible_width']} {d['possible_speed']}",
            "why": d["reason"]} for d in data["degraded"]], title="degraded links"))
    for key in ("appeared", "disappeared"):
        if data[key]:
            out.append(to_table([_pair(p) for p in data[key]], title=f"links {key}"))
    if data["moved"]:
        out.append(to_table([{"before": _label(m["before"]), "after": _label(m["after"])}
                             for m in data["moved"]], title="cables moved"))
    return out


def sources(found: Sequence[SourceRow], issues: Sequence[IssueRow], fmt: str) -> list[str]:
    by_source: dict[int, list[dict[str, Any]]] = {}
    for i in issues:
        by_source.setdefault(i["source_id"], []).append(
            {"reason": i["reason"], "lines": i["lines"], "first_line_no": i["first_line_no"],
             "example": i["example"]})
    rows = [{**r, "issues": by_source.get(r["source_id"], [])} for r in found]
    if fmt != "table":
        return [render_rows(rows, fmt)]
    out = [render_rows(rows, fmt, columns=[
        "source_id", "kind", "path", "origin", "observed_at", "lines_total", "lines_unparsed",
        "records"], title="sources")]
    if issues:
        out.append(to_table(issues, ["source_id", "path", "reason", "lines", "first_line_no",
                                     "example"], title="lines not used, per reason"))
    return out


def flaps(rows: list[dict[str, Any]], fmt: str, start: datetime, end: datetime) -> list[str]:
    if fmt == "json":
        return [to_json(rows)]
    flat = [{
        "end A": _end_label(r["ends"][0]),
        "end B": _end_label(r["ends"][1]) if len(r["ends"]) > 1 else "",
        "down at": r["down_at"], "up at": r["up_at"] or ("still down" if r["still_down"] else ""),
        "duration s": r["duration_s"], "sources": ",".join(r["sources"]),
    } for r in rows]
    return [render_rows(flat, fmt,
                        title=f"flaps {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M} UTC")]


def suspects(data: dict[str, Any], notes: list[str], fmt: str, sources: str = "") -> list[str]:
    """The suspects table (or JSON/CSV); under the table, what the fabric was read through
    (`sources`) and what the evidence could not see (`notes`)."""
    if fmt == "json":
        return [to_json(data)]
    rows = [{
        "rank": s["rank"], "score": s["score"], "component": s["component"],
        "end A": _label_end(s["ends"][0]),
        "end B": _label_end(s["ends"][1]) if len(s["ends"]) > 1 else "",
        "flaps": s["flaps"], "jobs": s["jobs_failed"], "GPU-h": s["gpu_hours_lost"],
        "evidence": s["evidence"][0] if s["evidence"] else "", "action": s["action"],
    } for s in data["suspects"]]
    if fmt == "csv":
        return [render_rows(rows, "csv")]
    jobs = data["jobs"]
    return [f"window {data['window']['since']} .. {data['window']['until']}: "
            f"{jobs['failed']} failed job(s), {jobs['network']} from the network, "
            f"{jobs['other_causes']} from other causes, {jobs['unexplained']} unexplained",
            *_dust_note(data),
            render_rows(rows, "table", title="suspects, best first"),
            *([inert(sources, NOTE_MAX)] if sources else []),
            # a note names hosts, switches and jobs: bounded like any cell of fabric text
            *(inert(f"could not see: {note}", NOTE_MAX) for note in notes),
            *watch_age(data)]


def _dust_note(data: Mapping[str, Any]) -> list[str]:
    """The line that says how many vote-dust links were not listed (issue #25); none when
    none were."""
    left_out = data.get("vote_dust_links") or 0
    if not left_out:
        return []
    from auditor.analyse.evidence import VOTE_DUST  # only here: the evidence's imports weigh

    return [f"{left_out} link(s) not listed: only NCCL pair votes below {VOTE_DUST} point at "
            "them (each lies on paths spread over more than 100 links: equal-cost paths of "
            "failing pairs, not suspects)"]


def watch_list(data: dict[str, Any], fmt: str) -> list[str]:
    if fmt == "json":
        return [to_json(data)]
    rows = [{k: w[k] for k in WATCH_COLUMNS} for w in data["watch"]]
    if fmt == "csv":
        return [render_rows(rows, "csv", columns=WATCH_COLUMNS)]
    return [f"window {data['window']['since']} .. {data['window']['until']}: "
            f"{data['modules']} module(s) read, {data['watched']} watched",
            render_rows(rows, "table", columns=[c for c in WATCH_COLUMNS if c != "peer"],
                        title="optics watch list, strongest first"),
            *watch_age(data)]


def watch_age(data: Mapping[str, Any], now: datetime | None = None) -> list[str]:
    """The line that says how old the optics watch list is (issue #25); none without one."""
    at = data.get("watch_list_computed_at")
    if not at:
        return []
    if not data.get("watch_list_precomputed"):
        why = data.get("watch_list_on_demand_because")
        return [f"optics watch list computed on demand at {at}" + (f": {why}" if why else "")]
    seconds = ((now or datetime.now(UTC)) - datetime.fromisoformat(at)).total_seconds()
    age = (f"{seconds / 86400:.1f} days" if seconds >= 86400 else
           f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{max(seconds, 0) / 60:.0f} min")
    return [f"optics watch list precomputed at {at} ({age} ago), on the readings it still matches"]


def counters(steps: Sequence[CounterDeltaRow], names: dict[str, tuple[str, str]],
             fmt: str) -> list[str]:
    rows = [{**r, "name": names.get(r["guid"], (r["guid"], ""))[0]} for r in steps]
    columns = None if fmt != "table" else [
        "name", "port", "counter", "prev_at", "seen_at", "delta", "reset", "saturated"]
    return [render_rows(rows, fmt, columns=columns, title="counter increases")]


def outcomes(section: Mapping[str, Any], fmt: str) -> list[str]:
    if fmt == "json":
        return [to_json(section)]
    rows = [{"by": by, **_cells(g, ["name", *OUTCOME_COLUMNS])}
            for by, groups in (("rule", section["rules"]), ("verdict", section["verdicts"]),
                               ("all", [section["overall"]]))
            for g in groups]
    if fmt == "csv":
        return [render_rows(rows, "csv", columns=["by", "name", *OUTCOME_COLUMNS])]
    out = [f"window {section['window']['since']} .. {section['window']['until']}: "
           f"{section['nights']} nightly run(s), {section['overall']['suspects']} suspect(s) "
           f"judged by what followed ({section['unjudged']} whole-switch or host event(s) not "
           f"judged); refuted also when a link stays clean {section['clean_days']:g} days",
           render_rows([r for r in rows if r["by"] != "verdict"], "table",
                       columns=["name", *OUTCOME_COLUMNS], title="per rule"),
           render_rows([r for r in rows if r["by"] == "verdict"], "table",
                       columns=["name", *OUTCOME_COLUMNS], title="per verdict")]
    if section["learned_weights"] is not None:
        out.append(render_rows(section["learned_weights"], "table", title="learned weights"))
    co = section["cohorts"]
    out.append(f"cohorts: {co['parts']} part(s) watched {co['days']:g} days, "
               f"{co['with_incident']} with an incident, fleet MTBI "
               f"{co['mtbi_days'] if co['mtbi_days'] is not None else '-'} part-days")
    out += [f"  finding: {finding}" for finding in co["findings"]]
    shown = [g for g in co["groups"] if g["flagged"]] or co["groups"][:10]
    out.append(render_rows([_cells(g, COHORT_COLUMNS) for g in shown], "table",
                           columns=COHORT_COLUMNS,
                           title="flagged cohorts" if any(g["flagged"] for g in shown)
                           else "cohorts (none flagged)"))
    return out


def fleet(data: dict[str, Any], fmt: str) -> list[str]:
    if fmt == "json":
        return [to_json(data)]
    rows = [{
        "fabric": r["fabric"], "day": r["day"], "rank": r["rank"], "component": r["component"],
        "score": r["score"], "end A": _port_label(r["a_name"], r["a_port"]),
        "end B": _port_label(r["b_name"], r["b_port"]) if r["b_guid"] else "",
        "flaps": r["flaps"], "jobs": r["jobs_failed"], "GPU-h": r["gpu_hours_lost"],
        "action": r["action"],
    } for r in data["suspects"]]
    if fmt == "csv":
        return [render_rows(rows, "csv")]
    return [render_rows(data["fabrics"], "table",
                        title=f"fabrics {data['days'][0]} .. {data['days'][1]}"),
            render_rows(rows, "table", title="suspects, per fabric and day, best first")]


__all__ = ["COHORT_COLUMNS", "OUTCOME_COLUMNS", "WATCH_COLUMNS", "counters", "flaps", "fleet",
           "outcomes", "path", "rows", "sources", "suspects", "sweep", "topology", "watch_age",
           "watch_list"]


def path(data: dict[str, Any], fmt: str) -> list[str]:
    """`auditor path`: each direction's hops (switch, in and out port, the cable out of it and
    its flaps in the window), one table a direction; JSON as it came."""
    if fmt == "json":
        return [to_json(data)]
    out: list[str] = []
    for d in data["directions"]:
        rows = [{
            "from": d["from"], "to": d["to"], "hop": i, "switch": h["switch"],
            "in port": "" if h["in_port"] is None else h["in_port"],
            "out port": h["out_port"],
            "link": "" if h["link"] is None else " <-> ".join(
                _label_end(e) for e in h["link"]["ends"]),
            "flaps": "" if h["link"] is None else h["link"]["flaps"],
            "last down": "" if h["link"] is None else h["link"]["last_down"] or "",
        } for i, h in enumerate(d["hops"])]
        if fmt == "csv":
            out.append(render_rows(rows, "csv"))
            continue
        status = "" if d["status"] == "ok" else f": {d['status'].upper()}, {d['reason']}"
        title = (f"{inert(d['from'], NAME_MAX)} -> {inert(d['to'], NAME_MAX)} (DLID "
                 f"{d['dlid']}){inert(status, NOTE_MAX)}")
        out.append(render_rows(rows, "table", title=title,
                               columns=["hop", "switch", "in port", "out port", "link",
                                        "flaps", "last down"]))
    if fmt == "table":
        stamp = "%Y-%m-%d %H:%M:%S"
        out.append(f"tables captured {data['tables_at']:{stamp}}, topology "
                   f"{data['topology_at']:{stamp}} UTC; flaps {data['since']:{stamp}} .. "
                   f"{data['until']:{stamp}} UTC")
    return out
