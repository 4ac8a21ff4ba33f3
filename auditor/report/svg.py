"""Plots as inline SVG, written as text.

A plot is drawn on a `Canvas` in points (1/72 in): each method adds one element, and
`Canvas.svg()` returns the `<svg>` element whose viewBox is what was drawn plus a margin (the
tight bounding box the matplotlib figures had). The plots themselves (what is drawn where) are
in `auditor/report/html.py`; this module only writes elements.

Fabric text is untrusted and an inline SVG is parsed as markup with the page: every attribute
value goes through `html.escape` (quotes included), every text through `inert` (controls made
visible, at most TEXT_MAX characters) and then `html.escape`, so a name can neither close an
element nor add one, and the element parses as XML (tests/test_report_html.py parses each one).
Attribute names are ours, and checked. Ids (clip paths, gradients) get the plot's prefix: all
plots share one HTML document. No coordinate is ever NaN or infinite (`inf` is not a number in
SVG, and a viewer drops the whole plot): a shape with one is not drawn, and counts for nothing in
the viewBox; a number that reaches an attribute anyway is an error (issue #21: a reading of
1e308 C once put `inf` into a trend plot).

Why not matplotlib, which drew these plots before (issue #13): on the 4,096-host benchmark it
took 1.2-1.3 s of the 2.3 s of CPU of `auditor report --since 24h`: 0.3 s to import it and
0.9 s to lay out and write the 15 figures (7 timelines, 7 neighbourhoods, the heatmap) with
their text as glyph outlines. Written here, the whole page renders in 27 ms and is 105 KB
instead of 567 KB. Text is `<text>` in the viewer's generic sans-serif: the file still needs
no font of its own, but the text's width is the viewer's font's, so the layout estimates it
(`text_width`) with room to spare, and a page looks slightly different with DejaVu Sans than
with Arial. The text stays text: it can be searched and copied, in the browser and in the
printed PDF.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

from auditor.safe_text import TEXT_MAX, inert

SVG_NS = "http://www.w3.org/2000/svg"

# Font metrics as fractions of the font size, for placing and measuring text whose font the
# viewer picks. Widths by kind of character, close to DejaVu Sans (the common Linux sans-serif:
# digits 0.64 em, "I" 0.3, "/" 0.34, capitals about 0.7); Arial and Helvetica are a little
# narrower, so the estimate errs on the side of room. Its capitals stand 0.73 em high.
_NARROW_EM, _WIDE_EM, _CAPITAL_EM, _OTHER_EM, _FULL_EM = 0.35, 0.9, 0.7, 0.62, 1.0
_NARROW = frozenset(" !\"'(),-./:;I[]`fijlrt{|}")
_WIDE = frozenset("%@MWmw")
CAP_EM = 0.73
DESCENT_EM = 0.24
LINE_EM = 1.2

_ATTR_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9-]*\Z")

Attr = str | float | None
Anchor = Literal["start", "middle", "end"]
VAlign = Literal["top", "center", "bottom", "baseline"]


def text_width(text: str, size: float) -> float:
    """Estimated width in points of `text` at `size` points."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += _NARROW_EM
        elif ch in _WIDE:
            em += _WIDE_EM
        elif ch.isupper():
            em += _CAPITAL_EM
        elif ord(ch) >= 0x1100 and unicodedata.east_asian_width(ch) in "WF":
            em += _FULL_EM
        else:
            em += _OTHER_EM
    return em * size


def num(value: float) -> str:
    """A coordinate: two decimals of a point are below any screen's or printer's resolution,
    and a fixed format makes the same plot the same bytes. Never NaN or infinite."""
    if not math.isfinite(value):
        raise ValueError(f"not a finite coordinate: {value!r}")
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _attrs(attrs: dict[str, Attr]) -> str:
    out = []
    for key, value in attrs.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        if not _ATTR_NAME.match(name):
            raise ValueError(f"not an SVG attribute name: {name!r}")
        text = num(value) if isinstance(value, float | int) else value
        out.append(f' {name}="{html.escape(text, quote=True)}"')
    return "".join(out)


def _text(value: str) -> str:
    return html.escape(inert(value, TEXT_MAX), quote=True)


def _finite(*values: float) -> bool:
    return all(map(math.isfinite, values))


class Canvas:
    """One plot being drawn; coordinates in points, y downwards."""

    def __init__(self, uid: str) -> None:
        self.uid = uid
        self._defs: list[str] = []
        self._body: list[str] = []
        self._clips: dict[str, tuple[float, float, float, float]] = {}
        self._box = [math.inf, math.inf, -math.inf, -math.inf]

    # --- extent: what svg() fits its viewBox around

    def _extend(self, x0: float, y0: float, x1: float, y1: float, clip: str | None) -> None:
        if clip is not None:  # a clipped element shows only inside its clip rectangle
            cx0, cy0, cx1, cy1 = self._clips[clip]
            x0, y0, x1, y1 = max(x0, cx0), max(y0, cy0), min(x1, cx1), min(y1, cy1)
            if x0 > x1 or y0 > y1:
                return
        box = self._box
        box[0], box[1] = min(box[0], x0), min(box[1], y0)
        box[2], box[3] = max(box[2], x1), max(box[3], y1)

    def _add(self, tag: str, attrs: dict[str, Attr], clip: str | None,
             content: str | None = None) -> None:
        if clip is not None:
            attrs["clip-path"] = f"url(#{self.uid}-{clip})"
        opening = f"<{tag}{_attrs(attrs)}"
        self._body.append(f"{opening}/>" if content is None else f"{opening}>{content}</{tag}>")

    # --- definitions

    def clip(self, name: str, x: float, y: float, w: float, h: float) -> str:
        """A clip rectangle; pass `name` as `clip=` to the elements it clips. One with a
        non-finite edge clips everything away."""
        if not _finite(x, y, w, h):
            x = y = w = h = 0.0
        self._clips[name] = (x, y, x + w, y + h)
        rect = f"<rect{_attrs({'x': x, 'y': y, 'width': w, 'height': h})}/>"
        self._defs.append(f'<clipPath id="{_text(f"{self.uid}-{name}")}">{rect}</clipPath>')
        return name

    def vertical_gradient(self, name: str, colours: Sequence[str]) -> str:
        """A gradient from the first colour at the bottom to the last at the top, evenly
        spaced; returns the paint to use as a fill."""
        stops = "".join(
            f"<stop{_attrs({'offset': f'{i / (len(colours) - 1):.4g}', 'stop-color': c})}/>"
            for i, c in enumerate(colours))
        ident = f"{self.uid}-{name}"
        self._defs.append(f'<linearGradient id="{_text(ident)}" x1="0" y1="1" x2="0" y2="0">'
                          f"{stops}</linearGradient>")
        return f"url(#{ident})"

    # --- shapes

    def rect(self, x: float, y: float, w: float, h: float, *, clip: str | None = None,
             **style: Attr) -> None:
        if not _finite(x, y, w, h):
            return
        self._extend(x, y, x + w, y + h, clip)
        self._add("rect", {"x": x, "y": y, "width": w, "height": h, **style}, clip)

    def line(self, x1: float, y1: float, x2: float, y2: float, *, clip: str | None = None,
             **style: Attr) -> None:
        if not _finite(x1, y1, x2, y2):
            return
        self._extend(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2), clip)
        self._add("line", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, **style}, clip)

    def segments(self, segs: Sequence[tuple[float, float, float, float]], **style: Attr) -> None:
        """Many straight lines of one style as one path (grid lines, tick marks); a line with
        a non-finite end is left out."""
        segs = [s for s in segs if _finite(*s)]
        if not segs:
            return
        for x1, y1, x2, y2 in segs:
            self._extend(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2), None)
        d = "".join(f"M{num(x1)} {num(y1)}L{num(x2)} {num(y2)}" for x1, y1, x2, y2 in segs)
        self._add("path", {"d": d, "fill": "none", **style}, None)

    def circle(self, x: float, y: float, r: float, **style: Attr) -> None:
        if not _finite(x, y, r):
            return
        self._extend(x - r, y - r, x + r, y + r, None)
        self._add("circle", {"cx": x, "cy": y, "r": r, **style}, None)

    def text(self, x: float, y: float, lines: str | Sequence[str], *, size: float,
             anchor: Anchor = "start", va: VAlign = "baseline", rotate: float = 0.0,
             bold: bool = False, fill: str = "#000000", halo: bool = False,
             box: str | None = None, clip: str | None = None) -> None:
        """Text at (x, y): `anchor` start/middle/end, `va` top/center/bottom/baseline (center
        on the capitals), turned `rotate` degrees counter-clockwise about (x, y) as a whole
        (alignment first, then the turn). `halo`: a white outline so lines under it do not cross
        the letters. `box`: a white rounded box behind it with this edge colour ("none")."""
        if not _finite(x, y, size, rotate):
            return
        rows = [inert(s, TEXT_MAX) for s in ([lines] if isinstance(lines, str) else lines)]
        step = LINE_EM * size
        block = (len(rows) - 1) * step
        first = {"top": y + CAP_EM * size, "center": y + CAP_EM * size / 2 - block / 2,
                 "bottom": y - DESCENT_EM * size - block}.get(va, y)
        width = max(text_width(r, size * (1.1 if bold else 1.0)) for r in rows)
        left = {"middle": x - width / 2, "end": x - width}.get(anchor, x)
        top, bottom = first - CAP_EM * size, first + block + DESCENT_EM * size
        pad = 0.2 * size
        corners = [(left - pad, top - pad), (left + width + pad, top - pad),
                   (left - pad, bottom + pad), (left + width + pad, bottom + pad)]
        turn = f"rotate({num(-rotate)} {num(x)} {num(y)})" if rotate else None
        if rotate:
            a = math.radians(-rotate)
            cos, sin = math.cos(a), math.sin(a)
            corners = [(x + (cx - x) * cos - (cy - y) * sin, y + (cx - x) * sin + (cy - y) * cos)
                       for cx, cy in corners]
        self._extend(min(c[0] for c in corners), min(c[1] for c in corners),
                     max(c[0] for c in corners), max(c[1] for c in corners), clip)
        if box is not None:
            self._add("rect", {"x": left - pad, "y": top - pad, "width": width + 2 * pad,
                               "height": bottom - top + 2 * pad, "rx": pad, "fill": "#ffffff",
                               "stroke": box, "stroke-width": 0.8, "transform": turn}, clip)
        attrs: dict[str, Attr] = {
            "x": x, "y": first, "font-size": size, "text-anchor": None if anchor == "start"
            else anchor, "font-weight": "bold" if bold else None, "fill": fill,
            "transform": turn}
        if halo:
            attrs.update({"stroke": "#ffffff", "stroke-width": 2.4, "stroke-linejoin": "round",
                          "paint-order": "stroke"})
        if len(rows) == 1:
            content = html.escape(rows[0], quote=True)
        else:
            content = "".join(
                f'<tspan{_attrs({"x": x, "dy": 0.0 if i == 0 else step})}>'
                f"{html.escape(r, quote=True)}</tspan>" for i, r in enumerate(rows))
        self._add("text", attrs, clip, content)

    # --- the element

    def svg(self, label: str, *, margin: float = 3.6) -> str:
        """The inline <svg>: as wide as its container, but at most 1.2 times its drawn size
        (past that the labels of a small graph become headline-sized); the height follows the
        viewBox."""
        x0, y0, x1, y1 = self._box
        if x0 > x1:
            x0 = y0 = x1 = y1 = 0.0
        x0, y0, x1, y1 = x0 - margin, y0 - margin, x1 + margin, y1 + margin
        width, height = x1 - x0, y1 - y0
        head = (f'<svg xmlns="{SVG_NS}"'
                + _attrs({"viewBox": f"{num(x0)} {num(y0)} {num(width)} {num(height)}",
                          "width": "100%", "style": f"max-width: {width * 1.2:.0f}pt",
                          "class": "plot", "role": "img", "aria-label": inert(label, TEXT_MAX),
                          "font-family": "sans-serif"}) + ">")
        defs = f"<defs>{''.join(self._defs)}</defs>" if self._defs else ""
        return "\n".join([head + defs, *self._body, "</svg>\n"])
