"""The technician/operator report as ONE self-contained HTML file.

`render_html(report)` is a pure function of the report dict that `auditor/report/build.py` builds.
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
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

import jinja2
import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

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


def render_html(report: Mapping[str, Any], *, top_n: int = DEFAULT_TOP_N) -> str:
    """One self-contained HTML document for `report` (schema: auditor/report/build.py). Missing
    optional keys render as empty states; `top_n` suspects get a card with plots."""
    return _env.get_template("report.html.j2").render(**_view(report, top_n))


# --- input normalisation: the template only formats, every default is decided here ---------


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:  # the report's times are UTC even when a producer forgot the Z
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC)


def _fmt(at: datetime | None, seconds: bool = True) -> str:
    if at is None:
        return ""
    return at.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _str(value: Any) -> str:
    # Names, parts, evidence and job ids come from the fabric: jinja2 escapes HTML, this makes
    # control and bidi characters visible and bounds the length (also of the plots' labels).
    return "" if value is None else inert(value, TEXT_MAX)


def _name(value: Any) -> str:
    return "" if value is None else inert(value, NAME_MAX)


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _by_priority(table: Any, priority: int) -> Mapping[str, Any] | None:
    """JSON keys are strings; a producer in Python may still use ints."""
    table = _dict(table)
    found = table.get(str(priority), table.get(priority))
    return found if isinstance(found, Mapping) else None


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "\u2014"
    return f"{value:,.{digits}f}"


def _end(raw: Any) -> dict[str, Any] | None:
    end = _dict(raw)
    if not end:
        return None
    where = [f"{key} {end[key]}" if key in ("row", "rack") else _str(end[key])
             for key in ("site", "row", "rack") if end.get(key) not in (None, "")]
    if end.get("u") not in (None, ""):
        u = _str(end["u"])
        where.append(u if u.upper().startswith("U") else f"U{u}")
    port = _int(end.get("port"))
    label = _str(end.get("label")) or (f"port {port}" if port is not None else "")
    return {"name": _name(end.get("name")) or "?", "label": label,
            "location": " / ".join(where)}


def _part(raw: Any) -> dict[str, str]:
    part = _dict(raw)
    return {key: _str(part.get(key)) for key in ("vendor", "part_number", "serial_number",
                                                  "length")}


def _verdict_class(verdict: str) -> str:
    return verdict if verdict in VERDICTS else "other"


def _replacement(raw: Any, index: int) -> dict[str, Any]:
    r = _dict(raw)
    verdict = _str(r.get("verdict")) or "unknown"
    priority = _int(r.get("priority"))
    return {
        "priority": priority if priority is not None else index,
        "verdict": verdict.replace("_", " "),
        "verdict_class": _verdict_class(verdict),
        "score": _number(_float(r.get("score")), 2) if _float(r.get("score")) is not None else "",
        "action": _str(r.get("action")),
        "a": _end(r.get("a")) or {"name": "?", "label": "", "location": ""},
        "b": _end(r.get("b")),
        "part": _part(r.get("part")),
        "first_flap": _fmt(_when(r.get("first_flap"))),
        "last_flap": _fmt(_when(r.get("last_flap"))),
        "jobs_failed": _int(r.get("jobs_failed")) or 0,
        "gpu_hours_lost": _number(_float(r.get("gpu_hours_lost")), 1),
        "evidence": [_str(e) for e in _list(r.get("evidence"))],
        "ticket": _str(r.get("ticket")),
    }


def _coverage(raw: Any) -> dict[str, Any]:
    c = _dict(raw)
    parts = []
    for kind in ("switches", "hosts"):
        ok, total = _int(c.get(f"{kind}_ok")), _int(c.get(f"{kind}_total"))
        if total:
            parts.append(f"{ok if ok is not None else '?'}/{total} {kind}")
    failed = [{key: _str(_dict(d).get(key)) for key in ("device", "collector", "status",
                                                         "detail")}
              for d in _list(c.get("failed_devices"))]
    line = f"Audited {', '.join(parts)}" if parts else "Coverage unknown"
    complete = bool(parts) and not failed and all(
        _int(c.get(f"{k}_ok")) == _int(c.get(f"{k}_total")) for k in ("switches", "hosts")
        if _int(c.get(f"{k}_total")))
    return {"line": line, "failed": failed, "complete": complete}


def _summary(raw: Any, replacements: int) -> list[dict[str, str]]:
    s = _dict(raw)
    cards = [("Switches", "switches", 0), ("HCAs", "hcas", 0), ("Links", "links", 0),
             ("Flaps", "flaps", 0), ("Suspects", "suspects", 0),
             ("Failed jobs", "jobs_failed", 0), ("Network-caused", "jobs_network", 0),
             ("GPU-hours lost", "gpu_hours_lost", 1)]
    out = []
    for label, key, digits in cards:
        value = _float(s.get(key))
        if value is None and key == "suspects":
            value = float(replacements)
        out.append({"label": label, "value": _number(value, digits), "key": key})
    return out


def _tracking(raw: Any) -> list[dict[str, str]]:
    rows = []
    for item in _list(raw):
        t = _dict(item)
        status = _str(t.get("status"))
        rows.append({
            "ticket": _str(t.get("ticket")), "link": _str(t.get("link")),
            "part": _str(t.get("part")), "recorded_at": _fmt(_when(t.get("recorded_at"))),
            "status": STATUSES.get(status, status or "unknown"),
            "status_class": status if status in STATUSES else "other",
            "reason": _str(t.get("reason")),
        })
    return rows


def _window(report: Mapping[str, Any]) -> tuple[datetime | None, datetime | None]:
    w = _dict(report.get("window"))
    since, until = _when(w.get("since")), _when(w.get("until"))
    if since is None or until is None:  # fall back on the span of the data itself
        seen = [at for tl in _dict(report.get("timelines")).values()
                for f in _list(_dict(tl).get("flaps"))
                for at in (_when(_dict(f).get("down_at")), _when(_dict(f).get("up_at"))) if at]
        seen += [at for b in _list(_dict(report.get("heatmap")).get("bins")) if (at := _when(b))]
        since = since or (min(seen) if seen else None)
        until = until or (max(seen) if seen else None)
    if since is not None and until is not None and until <= since:
        return since, None
    return since, until


def _view(report: Mapping[str, Any], top_n: int) -> dict[str, Any]:
    since, until = _window(report)
    replacements = [_replacement(r, i) for i, r in enumerate(_list(report.get("replacements")),
                                                             1)]
    cards = []
    for n, rep in enumerate(replacements[:max(top_n, 0)]):
        timeline = _by_priority(report.get("timelines"), rep["priority"])
        hood = _by_priority(report.get("neighbourhoods"), rep["priority"])
        name = rep["a"]["name"] + (f" ↔ {rep['b']['name']}" if rep["b"] else "")
        hood_plot = _neighbourhood_svg(hood, f"nb{n}", name) if hood is not None else None
        cards.append({
            **rep,
            "timeline_svg": _timeline_svg(timeline, since, until, f"tl{n}", name)
            if timeline is not None and since and until else None,
            "hood_svg": hood_plot[0] if hood_plot else None,
            "hood_wide": bool(hood_plot and hood_plot[1]),
        })
    generated = _when(report.get("generated_at"))
    return {
        "title": _str(report.get("title")) or "Fabric audit",
        "generated_at": _fmt(generated) if generated else _str(report.get("generated_at")),
        "since": _fmt(since), "until": _fmt(until),
        "coverage": _coverage(report.get("coverage")),
        "summary": _summary(report.get("summary"), len(replacements)),
        "replacements": replacements,
        "cards": cards,
        "top_n": top_n,
        "heatmap_svg": _heatmap_svg(_dict(report.get("heatmap")), "hm"),
        "tracking": _tracking(report.get("tracking")),
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


def _timeline_svg(timeline: Mapping[str, Any], since: datetime, until: datetime, uid: str,
                  name: str) -> str | None:
    flaps: list[tuple[datetime, datetime, bool]] = []
    for raw in _list(timeline.get("flaps")):
        down, up = _when(_dict(raw).get("down_at")), _when(_dict(raw).get("up_at"))
        if down is None or down >= until or (up is not None and up <= since):
            continue
        flaps.append((max(down, since), min(up or until, until), up is None or up > until))
    jobs = sorted((at, _str(_dict(raw).get("job_id")) or "?")
                  for raw in _list(timeline.get("jobs"))
                  if (at := _when(_dict(raw).get("died_at"))) and since <= at <= until)
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
    """Given x/y when every node has them; otherwise layers: spines top, leaves, hosts bottom,
    each layer centred, the suspect's ends in the middle of theirs so its link is short."""
    if nodes and all(_float(n.get("x")) is not None and _float(n.get("y")) is not None
                     for n in nodes):
        return {n["id"]: (float(n["x"]), float(n["y"])) for n in nodes}
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


def _neighbourhood_svg(hood: Mapping[str, Any], uid: str,
                       name: str) -> tuple[str, bool] | None:
    """The plot and whether it is wide (wants a whole row of the card)."""
    nodes: list[dict[str, Any]] = []
    for raw in _list(hood.get("nodes")):
        n = _dict(raw)
        if not _str(n.get("id")):
            continue
        kind = "hca" if _str(n.get("kind")) == "hca" else "switch"
        tier = _int(n.get("tier"))
        nodes.append({"id": _str(n["id"]), "name": _name(n.get("name")) or _name(n["id"]),
                      "kind": kind, "tier": tier if tier in (0, 1, 2) else
                      (2 if kind == "hca" else 1), "x": n.get("x"), "y": n.get("y")})
    edges: list[dict[str, Any]] = [{"a": _str(_dict(e).get("a")), "b": _str(_dict(e).get("b")),
              "label": _str(_dict(e).get("label")), "suspect": _dict(e).get("suspect") is True}
             for e in _list(hood.get("edges"))]
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


def _heatmap_svg(heatmap: Mapping[str, Any], uid: str) -> str | None:
    bins = [_when(b) for b in _list(heatmap.get("bins"))]
    if not bins or any(b is None for b in bins):
        return None
    rows: list[tuple[str, list[int]]] = []
    for raw in _list(heatmap.get("rows")):
        r = _dict(raw)
        counts = [max(_int(c) or 0, 0) for c in _list(r.get("counts"))][:len(bins)]
        counts += [0] * (len(bins) - len(counts))
        if sum(counts) > 0:  # rows are the switches that flapped
            rows.append((_name(r.get("switch")) or "?", counts))
    if not rows:
        return None
    rows.sort(key=lambda r: (-sum(r[1]), r[0]))
    hidden = len(rows) - _MAX_HEATMAP_ROWS
    rows = rows[:_MAX_HEATMAP_ROWS]
    matrix = [counts for _, counts in rows]
    peak = max(max(c) for c in matrix)
    starts = [b for b in bins if b is not None]
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

