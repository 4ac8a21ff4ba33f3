"""The technician/operator report as ONE self-contained HTML file.

`render_html(report)` is a pure function of the report document (auditor/report/schema.py) that
`auditor/report/build.py` builds.
The file has no external assets (no CDN, fonts or remote images) because it is mailed, attached
to tickets and opened on air-gapped jump hosts; CSS is inline and every plot is an inline SVG
drawn by matplotlib with text as glyph paths, so it looks the same without any installed font.
It prints on A4 landscape: a technician takes the replacement table to the data hall.

Plots use `matplotlib.figure.Figure` with the SVG canvas directly, never pyplot: pyplot keeps
global figure state and `matplotlib.use()` would change the backend of the whole process.
"""

from __future__ import annotations

import html
import io
import itertools
import re
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, overload

import jinja2
import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from auditor.report import schema
from auditor.safe_text import NAME_MAX, TEXT_MAX, inert

DEFAULT_TOP_N = 10

# Print-friendly palette: readable in greyscale, no dark fills.
_FLAP = "#e8710a"
_STILL_DOWN = "#b3261e"
_JOB = "#1f4e9c"
_EDGE = "#9aa0a6"
_SUSPECT = "#d93025"
_SWITCH = "#5f6368"
_HCA = "#1a73e8"

# Beyond these a plot becomes unreadable; what is cut is said on the plot.
_MAX_HEATMAP_ROWS = 40
_MAX_TIER_NODES = 24
_MAX_JOB_LABELS = 9


VERDICTS = ("cable", "transceiver", "switch_port", "switch", "hca", "host")
STATUSES = {
    "verified": "verified",
    "watching": "watching",
    "continued_same_port": "continued on same port",
    "followed_part": "followed the part",
    "escalated": "escalated",
}

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("auditor", "templates"),
    # select_autoescape() keys on ".html" and the template ends in ".j2": force it on.
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_html(report: schema.Report, *, top_n: int = DEFAULT_TOP_N) -> str:
    """One self-contained HTML document for `report`; `top_n` suspects get a card with plots."""
    return _env.get_template("report.html.j2").render(**_view(report, top_n))


# --- from the document to the page: the template only formats, every default is decided here


@overload
def _when(value: str) -> datetime: ...


@overload
def _when(value: None) -> None: ...


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def _fmt(at: datetime | None, seconds: bool = True) -> str:
    if at is None:
        return ""
    return at.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def _str(value: object) -> str:
    # Names, parts, evidence and job ids come from the fabric: jinja2 escapes HTML, this makes
    # control and bidi characters visible and bounds the length (also of the plots' labels).
    return "" if value is None else inert(value, TEXT_MAX)


def _name(value: object) -> str:
    return "" if value is None else inert(value, NAME_MAX)


def _number(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _end(end: schema.End) -> dict[str, str]:
    where = [f"{key} {_str(value)}" if key else _str(value)
             for key, value in (("", end["site"]), ("row", end["row"]), ("rack", end["rack"]))
             if value]
    if end["u"]:
        u = _str(end["u"])
        where.append(u if u.upper().startswith("U") else f"U{u}")
    label = _str(end["label"]) or (f"port {end['port']}" if end["port"] is not None else "")
    return {"name": _name(end["name"]) or "?", "label": label, "location": " / ".join(where)}


def _replacement(r: schema.Replacement) -> dict[str, Any]:
    verdict = _str(r["verdict"])
    part = r["part"]
    return {
        "priority": r["priority"],
        "verdict": verdict.replace("_", " "),
        "verdict_class": verdict if verdict in VERDICTS else "other",
        "score": _number(r["score"], 2),
        "action": _str(r["action"]),
        "a": _end(r["a"]),
        "b": _end(r["b"]) if r["b"] is not None else None,
        "part": {"vendor": _str(part["vendor"]), "part_number": _str(part["part_number"]),
                 "serial_number": _str(part["serial_number"]), "length": _str(part["length"])},
        "first_flap": _fmt(_when(r["first_flap"])),
        "last_flap": _fmt(_when(r["last_flap"])),
        "jobs_failed": r["jobs_failed"],
        "gpu_hours_lost": _number(r["gpu_hours_lost"], 1),
        "evidence": [_str(e) for e in r["evidence"]],
        "ticket": _str(r["ticket"]),
    }


def _coverage(c: schema.Coverage) -> dict[str, Any]:
    counts = (("switches", c["switches_ok"], c["switches_total"]),
              ("hosts", c["hosts_ok"], c["hosts_total"]))
    parts = [f"{ok}/{total} {kind}" for kind, ok, total in counts if total]
    failed = [{"device": _str(d["device"]), "collector": _str(d["collector"]),
               "status": _str(d["status"]), "detail": _str(d["detail"])}
              for d in c["failed_devices"]]
    line = f"Audited {', '.join(parts)}" if parts else "Coverage unknown"
    complete = bool(parts) and not failed and all(ok == total for _, ok, total in counts)
    return {"line": line, "failed": failed, "complete": complete}


def _summary(s: schema.Summary) -> list[dict[str, str]]:
    cards = [("Switches", "switches", s["switches"], 0), ("HCAs", "hcas", s["hcas"], 0),
             ("Links", "links", s["links"], 0), ("Flaps", "flaps", s["flaps"], 0),
             ("Suspects", "suspects", s["suspects"], 0),
             ("Failed jobs", "jobs_failed", s["jobs_failed"], 0),
             ("Network-caused", "jobs_network", s["jobs_network"], 0),
             ("GPU-hours lost", "gpu_hours_lost", s["gpu_hours_lost"], 1)]
    return [{"label": label, "value": _number(value, digits), "key": key}
            for label, key, value, digits in cards]


def _tracking(rows: list[schema.Tracking]) -> list[dict[str, str]]:
    out = []
    for t in rows:
        status = _str(t["status"])
        out.append({
            "ticket": _str(t["ticket"]), "link": _str(t["link"]), "part": _str(t["part"]),
            "recorded_at": _fmt(_when(t["recorded_at"])),
            "status": STATUSES.get(status, status),
            "status_class": status if status in STATUSES else "other",
            "reason": _str(t["reason"]),
        })
    return out


def _share(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.0f} %"


def _groups(rows: list[Any]) -> list[dict[str, str]]:
    return [{
        "name": _str(g["name"]).replace("_", " "), "suspects": str(g["suspects"]),
        "confirmed": str(g["confirmed"]), "refuted": str(g["refuted"]), "open": str(g["open"]),
        "young": str(g["young"]),
        "precision": _share(g["precision"]),
        "days": "" if g["median_days_to_fix"] is None else _number(g["median_days_to_fix"], 1),
        "gpu_hours": _number(g["gpu_hours_before_fix"], 1),
        "fp_per_night": _number(g["false_positives_per_night"], 2),
    } for g in rows]


def _outcomes(o: schema.Outcomes | None) -> dict[str, Any] | None:
    """The outcomes section (issue #15): per rule and verdict, and the flagged cohorts."""
    if o is None:
        return None
    cohorts = o["cohorts"]
    flagged = [{
        "field": _str(g["field"]).replace("_", " "), "value": _str(g["value"]),
        "part_number": _str(g["part_number"]), "parts": str(g["parts"]),
        "with_incident": str(g["with_incident"]), "share": _share(g["share"]),
        "rest_share": _share(g["rest_share"]),
        "p_value": "" if g["p_value"] is None else f"{g['p_value']:.2g}",
        "explained_by": _str(g["explained_by"]),
    } for g in cohorts["groups"] if g["flagged"]]
    return {
        "nights": o["nights"], "clean_days": _number(o["clean_days"], 0),
        "since": _fmt(_when(o["window"]["since"]), seconds=False),
        "overall": _groups([o["overall"]])[0], "rules": _groups(o["rules"]),
        "verdicts": _groups(o["verdicts"]), "unjudged": o["unjudged"],
        "weights": [{"rule": _str(w["rule"]).replace("_", " "),
                     "weight": _number(w["weight"], 2),
                     "judged": f"{w['confirmed']} of {w['confirmed'] + w['refuted']}"}
                    for w in o["learned_weights"] or []],
        "findings": [_str(f) for f in cohorts["findings"]],
        "flagged": flagged,
        "parts": cohorts["parts"],
    }


def _view(report: schema.Report, top_n: int) -> dict[str, Any]:
    since, until = _when(report["window"]["since"]), _when(report["window"]["until"])
    replacements = [_replacement(r) for r in report["replacements"]]
    cards = []
    for n, rep in enumerate(replacements[:max(top_n, 0)]):
        timeline = report["timelines"].get(str(rep["priority"]))
        hood = report["neighbourhoods"].get(str(rep["priority"]))
        name = rep["a"]["name"] + (f" ↔ {rep['b']['name']}" if rep["b"] else "")
        hood_plot = _neighbourhood_svg(hood, f"nb{n}", name) if hood is not None else None
        cards.append({
            **rep,
            # An empty window (--since 0h) has no time axis to draw on.
            "timeline_svg": _timeline_svg(timeline, since, until, f"tl{n}", name)
            if timeline is not None and until > since else None,
            "hood_svg": hood_plot[0] if hood_plot else None,
            "hood_wide": bool(hood_plot and hood_plot[1]),
        })
    return {
        "title": _str(report["title"]),
        "generated_at": _fmt(_when(report["generated_at"])),
        "since": _fmt(since), "until": _fmt(until) if until > since else "",
        "coverage": _coverage(report["coverage"]),
        "summary": _summary(report["summary"]),
        "replacements": replacements,
        "cards": cards,
        "top_n": top_n,
        "heatmap_svg": _heatmap_svg(report["heatmap"], "hm"),
        "tracking": _tracking(report["tracking"]),
        # a report.json written before #15 has no outcomes: no section
        "outcomes": _outcomes(report.get("outcomes")),
    }


# --- plots ---------------------------------------------------------------------------------

_SVG_OPEN = re.compile(r"<svg\b[^>]*>")
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(href="#|url\(#)([^")]+)')
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def _svg(fig: Figure, uid: str, label: str) -> str:
    """The figure as an inline <svg> element that scales to its container."""
    buf = io.StringIO()
    FigureCanvasSVG(fig)  # attaches itself to the figure: savefig then needs no pyplot
    fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.05)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML declaration and DOCTYPE: invalid in HTML
    text = _METADATA.sub("", text)  # creator URL and RDF: noise for a reader of the page
    # Every SVG's ids (glyphs, clip paths, markers) share the one HTML document: give each
    # plot its own prefix so no plot picks up another's clip path or glyph.
    text = _ID.sub(lambda m: f'id="{uid}-{m[1]}"', text)
    text = _REF.sub(lambda m: f"{m[1]}{uid}-{m[2]}", text)
    opening = _SVG_OPEN.search(text)
    if opening is None:
        raise ValueError("matplotlib wrote no <svg> element")
    natural = re.search(r'\swidth="([0-9.]+)pt"', opening[0])
    tag = re.sub(r'\s(width|height)="[^"]*"', "", opening[0])
    # Fill the container, but never more than 1.2x the drawn size: past that the labels of a
    # small graph become headline-sized. The height follows the viewBox.
    cap = f' style="max-width: {float(natural[1]) * 1.2:.0f}pt"' if natural else ""
    tag = tag.replace(
        "<svg", f'<svg width="100%"{cap} class="plot" role="img" '
        f'aria-label="{html.escape(label)}"', 1)
    return text[:opening.start()] + tag + text[opening.end():]


def _style() -> AbstractContextManager[None]:
    return mpl.rc_context({
        "svg.fonttype": "path",  # glyphs as paths: no font needed where the file is opened
        "svg.hashsalt": "fabric-auditor",  # stable ids: the same report renders the same bytes
        "text.parse_math": False,  # a '$' in a switch name must not start mathtext
        "font.size": 8,
        "axes.titlesize": 9,
    })


_TICK_STEPS_H = (0.25, 0.5, 1, 2, 3, 6, 12, 24, 48, 168)


def _time_axis(ax: Axes, since: datetime, until: datetime) -> None:
    """x is hours since the window start; ticks on round UTC times, the date under the first
    tick of each day. (Our own ticks: matplotlib.dates has no type hints for mypy --strict.)"""
    span = (until - since).total_seconds() / 3600
    step = next((s for s in _TICK_STEPS_H if span / s <= 8), _TICK_STEPS_H[-1])
    midnight = since.replace(hour=0, minute=0, second=0, microsecond=0)
    offset = (since - midnight).total_seconds() / 3600
    first = -(-offset // step) * step - offset  # the first multiple of step after midnight
    ticks, labels, last_day = [], [], None
    at = first
    while at <= span + 1e-9:
        when = since + timedelta(hours=at)
        day = when.strftime("%d %b")
        if step >= 24:
            labels.append(day)
        else:
            labels.append(when.strftime("%H:%M") + (f"\n{day}" if day != last_day else ""))
        last_day = day
        ticks.append(at)
        at += step
    ax.set_xticks(ticks, labels)
    ax.set_xlim(0, span)


def _timeline_svg(timeline: schema.Timeline, since: datetime, until: datetime, uid: str,
                  name: str) -> str | None:
    flaps: list[tuple[datetime, datetime, bool]] = []
    for flap in timeline["flaps"]:
        down, up = _when(flap["down_at"]), _when(flap["up_at"])
        if down >= until or (up is not None and up <= since):
            continue
        flaps.append((max(down, since), min(up or until, until), up is None or up > until))
    jobs = sorted((at, _str(job["job_id"]) or "?") for job in timeline["jobs"]
                  if (at := _when(job["died_at"])) and since <= at <= until)
    if not flaps and not jobs:
        return None
    with _style():
        fig = Figure(figsize=(7.0, 1.7))
        ax = fig.add_subplot()
        # A 3 s flap is under a pixel on a 24 h axis: give every bar a visible minimum width.
        def hours(at: datetime) -> float:
            return (at - since).total_seconds() / 3600

        min_width = hours(until) * 0.004
        for still_down in (False, True):
            bars = [(hours(a), max(hours(b) - hours(a), min_width))
                    for a, b, s in flaps if s == still_down]
            if bars:
                ax.broken_barh(bars, (0.7, 0.6), facecolors=_STILL_DOWN if still_down else _FLAP,
                               edgecolors="none")
        for at, _ in jobs:
            ax.axvline(hours(at), color=_JOB, linestyle="--", linewidth=1)
        # Jobs of one incident die within minutes of each other: one label per cluster, on
        # three heights, so the ids stay readable.
        clusters: list[list[tuple[float, str]]] = []
        for at, job_id in jobs:
            x = hours(at)
            if clusters and x - clusters[-1][-1][0] < hours(until) * 0.04:
                clusters[-1].append((x, job_id))
            else:
                clusters.append([(x, job_id)])
        for i, cluster in enumerate(clusters[:_MAX_JOB_LABELS]):
            ids = [job_id for _, job_id in cluster]
            text = ", ".join(ids[:2]) + (f" +{len(ids) - 2}" if len(ids) > 2 else "")
            right = cluster[0][0] > hours(until) * 0.8  # near the right edge: label leftwards
            ax.text(cluster[0][0], 1.45 + 0.28 * (i % 3), f"{text} " if right else f" {text}",
                    color=_JOB, fontsize=7, va="bottom", ha="right" if right else "left",
                    clip_on=True)
        if len(clusters) > _MAX_JOB_LABELS:
            hidden = sum(len(c) for c in clusters[_MAX_JOB_LABELS:])
            ax.text(1.0, 1.02, f"{hidden} more job ids not labelled",
                    transform=ax.transAxes, ha="right", fontsize=7, color=_JOB)
        ax.set_ylim(0.4, 2.4)
        ax.set_yticks([1.0], ["flaps"])
        ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
        _time_axis(ax, since, until)
        handles = [Patch(color=_FLAP, label="flap (down → up)"),
                   Patch(color=_STILL_DOWN, label="still down at window end"),
                   Line2D([], [], color=_JOB, linestyle="--", label="job failed")]
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3,
                  frameon=False, fontsize=7)
        return _svg(fig, uid, f"Timeline of {name}")


def _layout(nodes: list[dict[str, Any]], ends: set[str]) -> dict[str, tuple[float, float]]:
    """Layers: spines top, leaves, hosts bottom, each layer centred, the suspect's ends in the
    middle of theirs so its link is short."""
    tiers: dict[int, list[dict[str, Any]]] = {}
    for n in nodes:
        tiers.setdefault(n["tier"], []).append(n)
    pos: dict[str, tuple[float, float]] = {}
    for tier, members in tiers.items():
        others = sorted((m for m in members if m["id"] not in ends), key=lambda m: m["name"])
        mine = [m for m in members if m["id"] in ends]
        half = len(others) // 2
        ordered = others[:half] + mine + others[half:]
        for i, m in enumerate(ordered):
            pos[m["id"]] = (i - (len(ordered) - 1) / 2, float(2 - tier))
    return pos


def _label_pt(text: str, size: float) -> float:
    """Rough width of a label in points (DejaVu Sans averages 0.6 em a character)."""
    return 0.6 * size * len(text)


def _neighbourhood_svg(hood: schema.Neighbourhood, uid: str,
                       name: str) -> tuple[str, bool] | None:
    """The plot and whether it is wide (wants a whole row of the card)."""
    nodes: list[dict[str, Any]] = [
        {"id": _str(n["id"]), "name": _name(n["name"]) or _name(n["id"]), "kind": n["kind"],
         "tier": n["tier"]} for n in hood["nodes"]]
    edges: list[dict[str, Any]] = [
        {"a": _str(e["a"]), "b": _str(e["b"]), "label": _str(e["label"]),
         "suspect": e["suspect"]} for e in hood["edges"]]
    if not nodes:
        return None
    ends = {x for e in edges if e["suspect"] for x in (e["a"], e["b"])}
    # A leaf with 40 hosts is unreadable: keep the suspect's ends and a bounded crowd per tier.
    cut: dict[int, int] = {}
    kept: list[dict[str, Any]] = []
    for tier in sorted({n["tier"] for n in nodes}):
        members = [n for n in nodes if n["tier"] == tier]
        members.sort(key=lambda n: (n["id"] not in ends, n["name"]))
        kept += members[:_MAX_TIER_NODES]
        if len(members) > _MAX_TIER_NODES:
            cut[tier] = len(members) - _MAX_TIER_NODES
    pos = _layout(kept, ends)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    span = max(xs) - min(xs) + (2.2 if cut else 1.6)
    # Make the figure as wide as the longest names need (up to a limit), then rotate the names
    # of the layers that still do not fit between their nodes.
    rows: dict[float, list[tuple[float, str]]] = {}
    for n in kept:
        rows.setdefault(pos[n["id"]][1], []).append((pos[n["id"]][0], n["name"]))
    need: dict[float, float] = {}  # points per x unit each layer needs
    for y, layer in rows.items():
        layer.sort()
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(layer) if b[0] > a[0]]
        if gaps:
            need[y] = (max(_label_pt(m[1], 7.5) for m in layer) + 6) / min(gaps)
    width = min(9.0, max(2.8, span * max(need.values(), default=0.0) / (72 * 0.775)))
    per_unit = width * 72 * 0.775 / span  # the axes take 77.5 % of a figure's width
    crowded = {y for y, pts in need.items() if pts > per_unit * 1.02}
    with _style():
        fig = Figure(figsize=(width, 2.7))
        ax = fig.add_subplot()
        edges = [e for e in edges if e["a"] in pos and e["b"] in pos]
        for e in sorted(edges, key=lambda e: e["suspect"]):  # the suspect drawn last, on top
            (xa, ya), (xb, yb) = pos[e["a"]], pos[e["b"]]
            ax.plot([xa, xb], [ya, yb], color=_SUSPECT if e["suspect"] else _EDGE,
                    linewidth=3.0 if e["suspect"] else 0.9, zorder=3 if e["suspect"] else 1,
                    solid_capstyle="round")
            # Other edges' port labels only while few: on a fan of 8 they run into each other.
            if e["label"] and (e["suspect"] or len(edges) <= 4):
                ax.text((xa + xb) / 2, (ya + yb) / 2, e["label"], fontsize=7.5 if e["suspect"]
                        else 6.5, color=_SUSPECT if e["suspect"] else "#5f6368", ha="center",
                        va="center", zorder=4,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white",
                              "edgecolor": _SUSPECT if e["suspect"] else "none",
                              "linewidth": 0.8})
        for kind, marker, colour in (("switch", "s", _SWITCH), ("hca", "o", _HCA)):
            group = [n for n in kept if n["kind"] == kind]
            if not group:
                continue
            ax.scatter([pos[n["id"]][0] for n in group], [pos[n["id"]][1] for n in group],
                       marker=marker, s=70, zorder=5, c=colour,
                       edgecolors=[_SUSPECT if n["id"] in ends else "white" for n in group],
                       linewidths=[2.0 if n["id"] in ends else 0.8 for n in group])
        top, bottom = max(ys), min(ys)
        for n in kept:
            x, y = pos[n["id"]]
            tight = y in crowded
            # Names go where no edge runs: above the top layer, below the bottom one, and to
            # the right of the nodes in between (their edges leave up and down).
            if y == bottom and y != top:
                offset, ha, va, turn = (0.0, -8.0), "right" if tight else "center", "top", 50
            elif y == top:
                offset, ha, va, turn = (0.0, 8.0), "left" if tight else "center", "bottom", 50
            else:
                offset, ha, va, turn = (8.0, 0.0), "left", "center", 35
            ax.annotate(n["name"], (x, y), xytext=offset, textcoords="offset points", ha=ha,
                        va=va, zorder=6, fontsize=6.5 if tight else 7.5,
                        rotation=turn if tight else 0,
                        rotation_mode="anchor", fontweight="bold" if n["id"] in ends
                        else "normal", color=_SUSPECT if n["id"] in ends else "#202124",
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                              "edgecolor": "none", "alpha": 0.8})
        for tier, more in cut.items():
            xs = [pos[n["id"]][0] for n in kept if n["tier"] == tier]
            ax.text(max(xs) + 0.6, float(2 - tier), f"+{more} more", fontsize=7,
                    color="#5f6368", va="center")
        ax.set_xlim(min(xs) - 0.8, max(xs) + (1.4 if cut else 0.8))
        ax.set_ylim(min(ys) - 0.35, max(ys) + 0.35)
        ax.set_axis_off()
        return _svg(fig, uid, f"Fabric neighbourhood of {name}"), width > 5.0


def _heatmap_svg(heatmap: schema.Heatmap, uid: str) -> str | None:
    starts = [_when(b) for b in heatmap["bins"]]
    rows = [(_name(r["switch"]) or "?", r["counts"]) for r in heatmap["rows"]
            if sum(r["counts"]) > 0]  # rows are the switches that flapped
    if not starts or not rows:
        return None
    rows.sort(key=lambda r: (-sum(r[1]), r[0]))
    hidden = len(rows) - _MAX_HEATMAP_ROWS
    rows = rows[:_MAX_HEATMAP_ROWS]
    matrix = [counts for _, counts in rows]
    peak = max(max(c) for c in matrix)
    with _style():
        fig = Figure(figsize=(12.0, 1.0 + 0.16 * len(rows)))
        ax = fig.add_subplot()
        cmap = mpl.colormaps["YlOrRd"].with_extremes(under="white")  # zero prints as paper
        # interpolation "none" embeds one pixel per cell, scaled crisply by the browser (CSS
        # image-rendering: pixelated) instead of a resampled, blurred raster.
        image = ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=0.5, vmax=max(peak, 2),
                          interpolation="none")
        ax.set_yticks(range(len(rows)), [name for name, _ in rows])
        step = max(1, len(starts) // 8)
        ticks = list(range(0, len(starts), step))
        same_day = starts[0].date() == starts[-1].date()
        ax.set_xticks(ticks, [starts[i].strftime("%H:%M" if same_day else "%m-%d %H:%M")
                              for i in ticks], rotation=0)
        ax.set_xlabel("bin start (UTC)" + (f", {starts[0]:%Y-%m-%d}" if same_day else ""))
        if len(starts) <= 48 and len(rows) <= 30:
            for y, counts in enumerate(matrix):
                for x, count in enumerate(counts):
                    if count:
                        ax.text(x, y, str(count), ha="center", va="center", fontsize=6,
                                color="white" if count > 0.6 * peak else "#202124")
        if len(starts) <= 72:  # cell borders only while cells are wider than the border
            ax.set_xticks([i - 0.5 for i in range(len(starts) + 1)], minor=True)
            ax.set_yticks([i - 0.5 for i in range(len(rows) + 1)], minor=True)
            ax.grid(which="minor", color="#eeeeee", linewidth=0.5)
            ax.tick_params(which="minor", length=0)
        ticks = list(range(1, peak + 1, max(1, peak // 5)))  # counts are whole numbers
        fig.colorbar(image, ax=ax, label="flaps per bin", fraction=0.03, pad=0.01,
                     ticks=ticks if peak in ticks else [*ticks, peak])
        if hidden > 0:
            ax.set_title(f"{hidden} quieter switches not shown", loc="right", fontsize=7)
        return _svg(fig, uid, "Flaps per switch over the window")

