"""The technician/operator report as ONE self-contained HTML file.

`render_html(report)` is a pure function of the report document (auditor/report/document.py) that
`auditor/report/build.py` builds.
The file has no external assets (no CDN, fonts or remote images) because it is mailed, attached
to tickets and opened on air-gapped jump hosts; CSS is inline and every plot is an inline SVG
written by `auditor/report/svg.py`, its text in the viewer's sans-serif (no font is shipped;
that module's docstring says why it is not matplotlib with glyph outlines any more: 1.2 s of
CPU a report).
It prints on A4 landscape: a technician takes the replacement table to the data hall.
"""

from __future__ import annotations

import itertools
import math
from datetime import date, datetime, timedelta
from typing import Any, overload

import jinja2

from auditor.analyse.optics.model import LABEL
from auditor.report import document, svg
from auditor.safe_text import NAME_MAX, TEXT_MAX, inert

DEFAULT_TOP_N = 10

# Print-friendly palette: readable in greyscale, no dark fills.
_FLAP = "#e8710a"
_STILL_DOWN = "#b3261e"
_JOB = "#1f4e9c"
_EDGE = "#9aa0a6"
_SUSPECT = "#d93025"
_PATH = "#f29900"  # the failed jobs' routes through the suspect
_SWITCH = "#5f6368"
_HCA = "#1a73e8"

_WARNING = "#a15c00"
_LANE = "#9aa0a6"

# Beyond these a plot becomes unreadable; what is cut is said on the plot.
_MAX_HEATMAP_ROWS = 40
_MAX_WATCH_ROWS = 50  # the watch list's table; report.json has every entry
_MAX_TIER_NODES = 24
_MAX_JOB_LABELS = 9


VERDICTS = ("cable", "transceiver", "switch_port", "switch", "hca", "host")
STATUSES = {
    "verified": "verified",
    "watching": "watching",
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


def render_html(report: document.Report, *, top_n: int = DEFAULT_TOP_N) -> str:
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


def _end(end: document.End) -> dict[str, str]:
    where = [f"{key} {_str(value)}" if key else _str(value)
             for key, value in (("", end["site"]), ("row", end["row"]), ("rack", end["rack"]))
             if value]
    if end["u"]:
        u = _str(end["u"])
        where.append(u if u.upper().startswith("U") else f"U{u}")
    label = _str(end["label"]) or (f"port {end['port']}" if end["port"] is not None else "")
    return {"name": _name(end["name"]) or "?", "label": label, "location": " / ".join(where)}


def _replacement(r: document.Replacement) -> dict[str, Any]:
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


def _coverage(c: document.Coverage) -> dict[str, Any]:
    counts = (("switches", c["switches_ok"], c["switches_total"]),
              ("hosts", c["hosts_ok"], c["hosts_total"]))
    parts = [f"{ok}/{total} {kind}" for kind, ok, total in counts if total]
    failed = [{"device": _str(d["device"]), "collector": _str(d["collector"]),
               "status": _str(d["status"]), "detail": _str(d["detail"])}
              for d in c["failed_devices"]]
    line = f"Audited {', '.join(parts)}" if parts else "Coverage unknown"
    complete = bool(parts) and not failed and all(ok == total for _, ok, total in counts)
    blind = [_str(n) for n in c["blind_spots"]]
    return {"line": line, "failed": failed, "complete": complete and not blind,
            "blind_spots": blind, "sources": _str(c.get("sources_note", ""))}


def _summary(s: document.Summary) -> list[dict[str, str]]:
    cards = [("Switches", "switches", s["switches"], 0), ("HCAs", "hcas", s["hcas"], 0),
             ("Links", "links", s["links"], 0), ("Flaps", "flaps", s["flaps"], 0),
             ("Suspects", "suspects", s["suspects"], 0),
             ("Failed jobs", "jobs_failed", s["jobs_failed"], 0),
             ("Network-caused", "jobs_network", s["jobs_network"], 0),
             ("Killed by their host", "jobs_killed_by_host", s.get("jobs_killed_by_host", 0), 0),
             ("GPU-hours lost", "gpu_hours_lost", s["gpu_hours_lost"], 1)]
    return [{"label": label, "value": _number(value, digits), "key": key}
            for label, key, value, digits in cards]


def _tracking(rows: list[document.Tracking]) -> list[dict[str, str]]:
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


def _watch_age(report: document.Report) -> str:
    """When the watch list was computed (#25); empty for a report.json written before."""
    at = report.get("watch_list_computed_at")
    if not at:
        return ""
    if report.get("watch_list_precomputed"):
        return f"Precomputed {_fmt(_when(at))} UTC by the nightly run."
    why = report.get("watch_list_on_demand_because")
    return f"Computed on demand {_fmt(_when(at))} UTC" + (f": {_str(why)}." if why else ".")


def _watch(rows: list[Any]) -> list[dict[str, Any]]:
    out = []
    for w in rows[:_MAX_WATCH_ROWS]:
        days = w["days_to_threshold"]
        out.append({
            "rank": str(w["rank"]), "device": _name(w["device"]), "port": _str(w["port_name"]),
            "serial": _str(w["serial_number"]), "part": _str(w["part_number"]),
            "lane": "" if w["lane"] is None else str(w["lane"]), "trend": _str(w["trend"]),
            "days": "" if days is None else
            f"{'<1' if days < 1 else f'{days:.0f}'} ({_str(w['threshold'])})",
            "strength": _number(w["strength"], 2), "strong": bool(w["strong"]),
        })
    return out


def _trend_cards(traces: list[document.OpticsTrace], uid: str) -> list[dict[str, str]]:
    out = []
    for i, t in enumerate(traces):
        what = LABEL.get(t["quantity"], _str(t["quantity"]))
        serial = f", S/N {_str(t['serial_number'])}" if t["serial_number"] else ""
        caption = f"{_name(t['device'])} {_str(t['port_name'])}{serial}: {what}"
        plot = _trend_svg(t, f"{uid}-{i}", caption)
        if plot is not None:
            out.append({"caption": caption, "svg": plot})
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


def _outcomes(o: document.Outcomes | None) -> dict[str, Any] | None:
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


def _view(report: document.Report, top_n: int) -> dict[str, Any]:
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
            "hood_paths": len(hood.get("paths", [])) if hood is not None else 0,
            "hood_wide": bool(hood_plot and hood_plot[1]),
            "trends": _trend_cards(report.get("optics_trends", {}).get(str(rep["priority"]),
                                                                       []), f"tr{n}"),
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
        "watch": _watch(list(report.get("watch_list", []))),
        "watch_total": len(report.get("watch_list", [])),
        "watch_age": _watch_age(report),
        # a report.json written before #15 has no outcomes: no section
        "outcomes": _outcomes(report.get("outcomes")),
    }


# --- plots ---------------------------------------------------------------------------------
#
# Each plot keeps the size of the matplotlib figure it replaces (the plot area of a 7 x 1.7 in
# timeline, a <= 9 x 2.7 in neighbourhood, a 12 in wide heatmap): the page's grid and its print
# rules (max-height per plot) were tuned to them. Sizes in points; y runs downwards.

_TICK = 3.5  # tick mark length and the gap between a mark and its label
_TICK_PAD = 2 * _TICK
_DASHED = "3.7 1.6"  # matplotlib's "--" at 1 pt, which the page used before
_GRID = "#e0e0e0"
_INK = "#202124"
_MUTED = "#5f6368"

_TICK_STEPS_H = (0.25, 0.5, 1, 2, 3, 6, 12, 24, 48, 168)


def _time_axis(since: datetime, until: datetime) -> tuple[float, list[tuple[float, list[str]]]]:
    """The window's length in hours and its ticks: (hours since the window start, label lines)
    on round UTC times, the date under the first tick of each day."""
    span = (until - since).total_seconds() / 3600
    step = next((s for s in _TICK_STEPS_H if span / s <= 8), _TICK_STEPS_H[-1])
    midnight = since.replace(hour=0, minute=0, second=0, microsecond=0)
    offset = (since - midnight).total_seconds() / 3600
    first = -(-offset // step) * step - offset  # the first multiple of step after midnight
    ticks: list[tuple[float, list[str]]] = []
    last_day = None
    at = first
    while at <= span + 1e-9:
        when = since + timedelta(hours=at)
        day = when.strftime("%d %b")
        if step >= 24:
            ticks.append((at, [day]))
        else:
            ticks.append((at, [when.strftime("%H:%M"), *([day] if day != last_day else [])]))
        last_day = day
        at += step
    return span, ticks


def _frame(c: svg.Canvas, x: float, y: float, w: float, h: float) -> None:
    c.rect(x, y, w, h, fill="none", stroke="#000000", stroke_width=0.8)


def _legend(c: svg.Canvas, y: float, entries: list[tuple[str, str, str]]) -> None:
    """One row of legend entries (kind "bar" or "dashed", colour, text) with its baseline at y."""
    size, x = 7.0, 3.0
    for kind, colour, text in entries:
        if kind == "bar":
            c.rect(x, y - 5.2, 14.0, 4.9, fill=colour)
        else:
            c.line(x, y - 2.75, x + 14.0, y - 2.75, stroke=colour, stroke_width=1.0,
                   stroke_dasharray=_DASHED)
        x += 14.0 + 0.8 * size
        c.text(x, y, text, size=size)
        x += svg.text_width(text, size) + 2.0 * size


def _timeline_svg(timeline: document.Timeline, since: datetime, until: datetime, uid: str,
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
    span, ticks = _time_axis(since, until)
    width, height = 390.6, 94.25
    c = svg.Canvas(uid)
    area = c.clip("area", 0.0, 0.0, width, height)

    def hours(at: datetime) -> float:
        return (at - since).total_seconds() / 3600

    def x_at(h: float) -> float:
        return width * h / span

    def y_at(v: float) -> float:  # the flaps' row is y = 1 of a 0.4 .. 2.4 axis
        return height * (2.4 - v) / 2.0

    c.segments([(x_at(h), 0.0, x_at(h), height) for h, _ in ticks], stroke=_GRID,
               stroke_width=0.6)
    # A 3 s flap is under a pixel on a 24 h axis: give every bar a visible minimum width.
    min_width = span * 0.004
    for still_down in (False, True):
        for a, b, s in flaps:
            if s == still_down:
                c.rect(x_at(hours(a)), y_at(1.3), x_at(max(hours(b) - hours(a), min_width)),
                       y_at(0.7) - y_at(1.3), clip=area,
                       fill=_STILL_DOWN if still_down else _FLAP)
    for at, _ in jobs:
        c.line(x_at(hours(at)), 0.0, x_at(hours(at)), height, stroke=_JOB, stroke_width=1.0,
               stroke_dasharray=_DASHED)
    # Jobs of one incident die within minutes of each other: one label per cluster, on
    # three heights, so the ids stay readable.
    clusters: list[list[tuple[float, str]]] = []
    for at, job_id in jobs:
        x = hours(at)
        if clusters and x - clusters[-1][-1][0] < span * 0.04:
            clusters[-1].append((x, job_id))
        else:
            clusters.append([(x, job_id)])
    for i, cluster in enumerate(clusters[:_MAX_JOB_LABELS]):
        ids = [job_id for _, job_id in cluster]
        text = ", ".join(ids[:2]) + (f" +{len(ids) - 2}" if len(ids) > 2 else "")
        right = cluster[0][0] > span * 0.8  # near the right edge: label leftwards
        # 2.2 pt: a space's width off the job's line, as the labels had.
        c.text(x_at(cluster[0][0]) + (-2.2 if right else 2.2), y_at(1.45 + 0.28 * (i % 3)),
               text, size=7.0, va="bottom", anchor="end" if right else "start", fill=_JOB,
               clip=area)
    if len(clusters) > _MAX_JOB_LABELS:
        hidden = sum(len(cl) for cl in clusters[_MAX_JOB_LABELS:])
        c.text(width, -2.0, f"{hidden} more job ids not labelled", size=7.0, anchor="end",
               fill=_JOB)
    _frame(c, 0.0, 0.0, width, height)
    c.segments([(-_TICK, y_at(1.0), 0.0, y_at(1.0))]
               + [(x_at(h), height, x_at(h), height + _TICK) for h, _ in ticks],
               stroke="#000000", stroke_width=0.8)
    c.text(-_TICK_PAD, y_at(1.0), "flaps", size=8.0, anchor="end", va="center")
    for h, lines in ticks:
        c.text(x_at(h), height + _TICK_PAD, lines, size=8.0, anchor="middle", va="top")
    _legend(c, -6.0, [("bar", _FLAP, "flap (down → up)"),
                      ("bar", _STILL_DOWN, "still down at window end"),
                      ("dashed", _JOB, "job failed")])
    return c.svg(f"Timeline of {name}")


def _nice_ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """Round values (1, 2 or 5 x a power of ten apart) across [lo, hi], at most `most`; none
    when the span is not a finite number."""
    span = max(hi - lo, 1e-9)
    if not math.isfinite(span):
        return []
    step = 10 ** math.floor(math.log10(span / most))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= most:
            step *= factor
            break
    first = math.ceil(lo / step) * step
    return [round(first + k * step, 10) for k in range(int((hi - first) / step + 1e-9) + 1)]


def _trend_svg(t: document.OpticsTrace, uid: str, name: str) -> str | None:
    """A module's daily medians: every lane thin and grey, the watched lane (or the module's
    own quantity) in front with its points, and the module's warning and alarm limits dashed,
    named at the right edge. The limits are in the y range: the distance to them is the point."""
    # A value that is not a finite number has no place on an axis (the store's readings are
    # within what a module can report; this keeps a plot drawable whatever it is given).
    series = [(lane, pts) for lane, pts in (
        (s["lane"], [(date.fromisoformat(d), float(v)) for d, v in s["points"]
                     if math.isfinite(float(v))]) for s in t["series"]) if pts]
    if not series:
        return None
    first = min(d for _, pts in series for d, _ in pts)
    span = max(max((d - first).days for _, pts in series for d, _ in pts), 1)
    limits = [(v, colour, word) for v, colour, word in ((t["warning"], _WARNING, "warning"),
                                                         (t["alarm"], _STILL_DOWN, "alarm"))
              if v is not None and math.isfinite(v)]
    values = [v for _, pts in series for _, v in pts] + [v for v, _, _ in limits]
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.08, 0.05)
    lo, hi = lo - pad, hi + pad
    width, height = 390.6, 84.0
    unit = _str(t["unit"])
    c = svg.Canvas(uid)

    def x_at(day: date) -> float:
        return width * ((day - first).days + 0.3) / (span + 0.6)

    def y_at(v: float) -> float:
        return height * ((hi - v) / (hi - lo))  # in this order: height * 1e308 overflows

    ticks = _nice_ticks(lo, hi)
    step = max(1, span // 7)
    days = [first + timedelta(days=k) for k in range(0, span + 1, step)]
    c.segments([(0.0, y_at(v), width, y_at(v)) for v in ticks]
               + [(x_at(d), 0.0, x_at(d), height) for d in days], stroke=_GRID,
               stroke_width=0.6)
    for value, colour, word in limits:
        c.line(0.0, y_at(value), width, y_at(value), stroke=colour, stroke_width=1.0,
               stroke_dasharray=_DASHED)
        c.text(width + 3.0, y_at(value), f"{word} {value:g} {unit}", size=7.0, va="center",
               fill=colour)
    watched = t["lane"]
    for lane, pts in sorted(series, key=lambda s: s[0] == watched):
        front = lane is None or lane == watched
        colour = (_SUSPECT if t["watched"] else _HCA) if front else _LANE
        c.segments([(x_at(a), y_at(u), x_at(b), y_at(v))
                    for (a, u), (b, v) in itertools.pairwise(pts)],
                   stroke=colour, stroke_width=2.0 if front else 0.9)
        if front:
            for d, v in pts:
                c.circle(x_at(d), y_at(v), 1.6, fill=colour)
    _frame(c, 0.0, 0.0, width, height)
    c.segments([(-_TICK, y_at(v), 0.0, y_at(v)) for v in ticks]
               + [(x_at(d), height, x_at(d), height + _TICK) for d in days],
               stroke="#000000", stroke_width=0.8)
    for v in ticks:
        c.text(-_TICK_PAD, y_at(v), f"{v:g}", size=8.0, anchor="end", va="center")
    c.text(-_TICK_PAD - 28.0, height / 2, unit, size=8.0, anchor="middle", va="center",
           rotate=90.0)
    for d in days:
        c.text(x_at(d), height + _TICK_PAD, d.strftime("%d %b"), size=8.0, anchor="middle",
               va="top")
    if len(series) > 1:  # which line is which
        x = 3.0
        for lane, _ in series:
            front = lane == watched
            colour = (_SUSPECT if t["watched"] else _HCA) if front else _LANE
            c.line(x, -8.75, x + 14.0, -8.75, stroke=colour, stroke_width=2.0 if front else 0.9)
            label = f"lane {lane}" + (" (watched)" if front and t["watched"] else "")
            c.text(x + 19.6, -6.0, label, size=7.0)
            x += 19.6 + svg.text_width(label, 7.0) + 14.0
    return c.svg(f"Diagnostics trend of {name}")


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
    """Rough width of a label in points (DejaVu Sans averages 0.6 em a character): what decides
    how wide a neighbourhood is and which layers' names turn (svg.text_width, finer, only
    places and boxes them)."""
    return 0.6 * size * len(text)


_MARKER = 8.37  # a node's square or circle, in points (the 70 pt² markers of before)


def _neighbourhood_svg(hood: document.Neighbourhood, uid: str,
                       name: str) -> tuple[str, bool] | None:
    """The plot and whether it is wide (wants a whole row of the card)."""
    nodes: list[dict[str, Any]] = [
        {"id": _str(n["id"]), "name": _name(n["name"]) or _name(n["id"]), "kind": n["kind"],
         "tier": n["tier"]} for n in hood["nodes"]]
    edges: list[dict[str, Any]] = [
        {"a": _str(e["a"]), "b": _str(e["b"]), "label": _str(e["label"]),
         "suspect": e["suspect"], "path": bool(e.get("jobs"))} for e in hood["edges"]]
    if not nodes:
        return None
    ends = {x for e in edges if e["suspect"] for x in (e["a"], e["b"])}
    # the failed jobs' routes through the suspect (forwarding tables, #23): kept in the plot
    on_path = {x for e in edges if e["path"] for x in (e["a"], e["b"])}
    # A leaf with 40 hosts is unreadable: keep the suspect's ends and a bounded crowd per tier.
    cut: dict[int, int] = {}
    kept: list[dict[str, Any]] = []
    for tier in sorted({n["tier"] for n in nodes}):
        members = [n for n in nodes if n["tier"] == tier]
        members.sort(key=lambda n: (n["id"] not in ends, n["id"] not in on_path, n["name"]))
        kept += members[:_MAX_TIER_NODES]
        if len(members) > _MAX_TIER_NODES:
            cut[tier] = len(members) - _MAX_TIER_NODES
    pos = _layout(kept, ends)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    span = max(xs) - min(xs) + (2.2 if cut else 1.6)
    # Make the plot as wide as the longest names need (up to a limit), then rotate the names
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
    # Inches, as the figures had: 77.5 % of that width is the drawing, the rest its margins.
    width = min(9.0, max(2.8, span * max(need.values(), default=0.0) / (72 * 0.775)))
    per_unit = width * 72 * 0.775 / span
    crowded = {y for y, pts in need.items() if pts > per_unit * 1.02}
    per_tier = 2.7 * 72 * 0.77 / (max(ys) - min(ys) + 0.7)
    left, top = min(xs) - 0.8, max(ys) + 0.35

    def at(node: str) -> tuple[float, float]:
        x, y = pos[node]
        return (x - left) * per_unit, (top - y) * per_tier

    c = svg.Canvas(uid)
    edges = sorted((e for e in edges if e["a"] in pos and e["b"] in pos),
                   key=lambda e: (e["suspect"], e["path"]))  # the suspect drawn last, on top
    for e in edges:
        (xa, ya), (xb, yb) = at(e["a"]), at(e["b"])
        c.line(xa, ya, xb, yb,
               stroke=_SUSPECT if e["suspect"] else _PATH if e["path"] else _EDGE,
               stroke_width=3.0 if e["suspect"] else 2.0 if e["path"] else 0.9,
               stroke_linecap="round" if e["suspect"] or e["path"] else None)
    for e in edges:
        # Other edges' port labels only while few: on a fan of 8 they run into each other.
        if e["label"] and (e["suspect"] or len(edges) <= 4):
            (xa, ya), (xb, yb) = at(e["a"]), at(e["b"])
            c.text((xa + xb) / 2, (ya + yb) / 2, e["label"], anchor="middle", va="center",
                   size=7.5 if e["suspect"] else 6.5, fill=_SUSPECT if e["suspect"] else _MUTED,
                   box=_SUSPECT if e["suspect"] else "none")
    for n in kept:
        x, y = at(n["id"])
        mine = n["id"] in ends
        stroke, stroke_width = (_SUSPECT, 2.0) if mine else ("#ffffff", 0.8)
        if n["kind"] == "hca":
            c.circle(x, y, _MARKER / 2, fill=_HCA, stroke=stroke, stroke_width=stroke_width)
        else:
            c.rect(x - _MARKER / 2, y - _MARKER / 2, _MARKER, _MARKER, fill=_SWITCH,
                   stroke=stroke, stroke_width=stroke_width)
    bottom_y, top_y = min(ys), max(ys)
    for n in kept:
        x, y = at(n["id"])
        tier_y = pos[n["id"]][1]
        tight = tier_y in crowded
        # Names go where no edge runs: above the top layer, below the bottom one, and to
        # the right of the nodes in between (their edges leave up and down).
        where: tuple[float, float, svg.Anchor, svg.VAlign, float]
        if tier_y == bottom_y and tier_y != top_y:
            where = (0.0, 8.0, "end" if tight else "middle", "top", 50.0)
        elif tier_y == top_y:
            where = (0.0, -8.0, "start" if tight else "middle", "bottom", 50.0)
        else:
            where = (8.0, 0.0, "start", "center", 35.0)
        dx, dy, anchor, va, turn = where
        mine = n["id"] in ends
        c.text(x + dx, y + dy, n["name"], size=6.5 if tight else 7.5, anchor=anchor, va=va,
               rotate=turn if tight else 0.0, bold=mine, fill=_SUSPECT if mine else _INK,
               halo=True)
    for tier, more in cut.items():
        tier_x = max(pos[n["id"]][0] for n in kept if n["tier"] == tier)
        c.text((tier_x + 0.6 - left) * per_unit, (top - (2 - tier)) * per_tier, f"+{more} more",
               size=7.0, fill=_MUTED, va="center")
    return c.svg(f"Fabric neighbourhood of {name}"), width > 5.0


# ColorBrewer's YlOrRd, 9 classes (the colours matplotlib's "YlOrRd" runs through): yellow to
# dark red, readable in greyscale; a count of zero prints as paper.
_YLORRD = ("#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c",
           "#bd0026", "#800026")


def _ylorrd(fraction: float) -> str:
    """The colour `fraction` (0..1) of the way along _YLORRD."""
    at = min(max(fraction, 0.0), 1.0) * (len(_YLORRD) - 1)
    i = min(int(at), len(_YLORRD) - 2)
    lo, hi = _YLORRD[i], _YLORRD[i + 1]
    mix = [round(int(lo[k:k + 2], 16) + (int(hi[k:k + 2], 16) - int(lo[k:k + 2], 16)) * (at - i))
           for k in (1, 3, 5)]
    return "#" + "".join(f"{v:02x}" for v in mix)


def _heatmap_svg(heatmap: document.Heatmap, uid: str) -> str | None:
    starts = [_when(b) for b in heatmap["bins"]]
    rows = [(_name(r["switch"]) or "?", r["counts"]) for r in heatmap["rows"]
            if sum(r["counts"]) > 0]  # rows are the switches that flapped
    if not starts or not rows:
        return None
    rows.sort(key=lambda r: (-sum(r[1]), r[0]))
    hidden = len(rows) - _MAX_HEATMAP_ROWS
    rows = rows[:_MAX_HEATMAP_ROWS]
    peak = max(max(counts) for _, counts in rows)
    # Counts from 0.5 (so 1 is already coloured) to the peak, at least 2 (a peak of 1 is not
    # the darkest red).
    low, high = 0.5, float(max(peak, 2))
    width = 864 * 0.775 * 0.96  # of a 12 in figure, less the colour bar's share
    height = 72 * 0.77 * (1.0 + 0.16 * len(rows))
    cell_w, cell_h = width / len(starts), height / len(rows)
    c = svg.Canvas(uid)
    c.rect(0.0, 0.0, width, height, fill="#ffffff")
    for y, (_, counts) in enumerate(rows):
        # One rectangle per run of equal counts: the same picture in fewer elements.
        for count, run in itertools.groupby(enumerate(counts), key=lambda ic: ic[1]):
            cells = list(run)
            if count:
                c.rect(cells[0][0] * cell_w, y * cell_h, len(cells) * cell_w, cell_h,
                       fill=_ylorrd((count - low) / (high - low)))
    if len(starts) <= 72:  # cell borders only while cells are wider than the border
        c.segments([(i * cell_w, 0.0, i * cell_w, height) for i in range(1, len(starts))]
                   + [(0.0, j * cell_h, width, j * cell_h) for j in range(1, len(rows))],
                   stroke="#eeeeee", stroke_width=0.5)
    if len(starts) <= 48 and len(rows) <= 30:
        for y, (_, counts) in enumerate(rows):
            for x, count in enumerate(counts):
                if count:
                    c.text((x + 0.5) * cell_w, (y + 0.5) * cell_h, str(count), size=6.0,
                           anchor="middle", va="center",
                           fill="#ffffff" if count > 0.6 * peak else _INK)
    _frame(c, 0.0, 0.0, width, height)
    step = max(1, len(starts) // 8)
    ticks = list(range(0, len(starts), step))
    c.segments([(-_TICK, (j + 0.5) * cell_h, 0.0, (j + 0.5) * cell_h) for j in range(len(rows))]
               + [((i + 0.5) * cell_w, height, (i + 0.5) * cell_w, height + _TICK)
                  for i in ticks], stroke="#000000", stroke_width=0.8)
    for j, (switch, _) in enumerate(rows):
        c.text(-_TICK_PAD, (j + 0.5) * cell_h, switch, size=8.0, anchor="end", va="center")
    same_day = starts[0].date() == starts[-1].date()
    for i in ticks:
        c.text((i + 0.5) * cell_w, height + _TICK_PAD,
               starts[i].strftime("%H:%M" if same_day else "%m-%d %H:%M"), size=8.0,
               anchor="middle", va="top")
    c.text(width / 2, height + _TICK_PAD + 8.0 + 4.0, "bin start (UTC)"
           + (f", {starts[0]:%Y-%m-%d}" if same_day else ""), size=8.0, anchor="middle",
           va="top")
    # The colour bar: as tall as the cells, 1/20 as wide (at most 3 % of the figure).
    bar_x, bar_w = width + 6.7, min(height / 20, 20.1)
    c.rect(bar_x, 0.0, bar_w, height, fill=c.vertical_gradient("scale", _YLORRD))
    _frame(c, bar_x, 0.0, bar_w, height)
    marks = list(range(1, peak + 1, max(1, peak // 5)))  # counts are whole numbers
    marks = marks if peak in marks else [*marks, peak]

    def bar_y(count: int) -> float:
        return height * (high - count) / (high - low)

    # A mark closer to the peak than a label's height would print over the peak's label.
    marks = [m for m in marks if m == peak or bar_y(m) - bar_y(peak) >= 9.0]
    c.segments([(bar_x + bar_w, bar_y(m), bar_x + bar_w + _TICK, bar_y(m)) for m in marks],
               stroke="#000000", stroke_width=0.8)
    for m in marks:
        c.text(bar_x + bar_w + _TICK_PAD, bar_y(m), str(m), size=8.0, va="center")
    label_x = bar_x + bar_w + _TICK_PAD + svg.text_width(str(peak), 8.0) + 4.0
    c.text(label_x, height / 2, "flaps per bin", size=8.0, anchor="middle", va="top",
           rotate=90.0)
    if hidden > 0:
        c.text(width, -6.0, f"{hidden} quieter switches not shown", size=7.0, anchor="end")
    return c.svg("Flaps per switch over the window")
