"""Cohorts (issue #15): incidents per part number, vendor, firmware and lot, so that a bad batch
shows as one finding instead of a scatter of single suspects.

The parts are the modules and cables the store knows per port (switch CLI inventory and the
cabling plan: vendor, part number, serial number, `lot` from the plan's optional column), one
part per serial number (a cable's two ends share it), and the firmware its diagnostics reported
(`optics_readings`). A part has an incident when its link flapped and became a suspect (an
episode of `auditor.analyse.outcomes` with a flap rule: a suspect on NCCL votes or counters
alone is not one) or had a swap recorded outside any such suspect's span, in the window.

For each cohort (all parts with one value of one field): the parts, those with an incident, the
incidents, and the mean time between incidents (part-days over incidents). A cohort is flagged
when its share of parts with an incident is far above the rest of the fleet's (the parts with
another known value of that field): under the rest's share p0, the number of its n parts with
an incident is Binomial(n, p0), and the chance of seeing k or more is the tail P(X >= k). A
part counts once however often it flapped, so one very bad cable cannot make a cohort. Flagged:
k >= `cohort_min_incidents`, k / n >= `cohort_min_ratio` x p0, and the tail times the number of
cohorts tested (Bonferroni) below `cohort_alpha`. A rest with no incident at all is given half
a one (p0 = 0.5 / n0), so a cohort is not flagged on a zero. A flagged part number or vendor
that is no longer flagged once a flagged lot's parts are taken out is "explained by" that lot:
the finding is the lot.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from auditor.analyse.outcomes import FLAP_RULES, Episode, Outcomes
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.store.rows import ReplacementRow

DIMENSIONS = ("part_number", "vendor", "firmware", "lot")
# A lot (or firmware) is a subset of one part number; the broader fields can be explained by it.
_FINER = {"part_number": ("lot", "firmware"), "vendor": ("lot", "firmware", "part_number")}


class _Parts(NamedTuple):
    """The parts as columns, by ident (one per serial number, else device:port): each
    dimension's value per part (None: not known) and each part's incidents."""

    idents: list[str]
    values: dict[str, list[str | None]]
    incidents: list[int]

    def members(self, dim: str, value: str) -> set[int]:
        return {i for i, v in enumerate(self.values[dim]) if v == value}


class CohortJSON(TypedDict):
    field: str
    value: str
    part_number: str | None  # the most common part number of a lot or firmware
    parts: int
    with_incident: int
    incidents: int
    mtbi_days: float | None  # part-days / incidents
    share: float
    rest_share: float | None  # the other parts with a known value of this field
    ratio: float | None
    p_value: float | None
    flagged: bool
    explained_by: str | None  # "lot LOT-2333A": the finding is that cohort
    finding: str | None


@dataclass(slots=True)
class Cohorts:
    days: float  # the span the parts were exposed
    parts: int
    with_incident: int
    incidents: int
    groups: list[CohortJSON] = field(default_factory=list)

    @property
    def findings(self) -> list[CohortJSON]:
        return [g for g in self.groups if g["flagged"] and g["explained_by"] is None]


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (n in the thousands is fine)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
             + (n - i) * lq for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def parts_of(store: Store, per_port: dict[tuple[str, int], int]) -> _Parts:
    """The parts the store knows per port, with the incidents of `per_port` (the ports that
    had any; counted in SQL: cohort_parts.sql; a Part object for each of the 196,608 parts of a
    65,536-GPU fabric was most of the cohorts' time, issue #25)."""
    rows = store.cohort_parts(per_port)
    if not rows:
        return _Parts([], {dim: [] for dim in DIMENSIONS}, [])
    idents, part_number, vendor, firmware, lot, incidents = map(list, zip(*rows, strict=True))
    return _Parts(idents, {"part_number": part_number, "vendor": vendor, "firmware": firmware,
                           "lot": lot}, incidents)


def _incidents(out: Outcomes, swaps: list[ReplacementRow]) -> dict[tuple[str, int | None], int]:
    """Incidents per port: the suspects of the window on its link, plus the swaps on it that
    fall outside every one of those suspects' spans (a swap during a suspect is that one)."""
    per_port: dict[tuple[str, int | None], int] = defaultdict(int)
    spans: dict[tuple[str, int | None], list[tuple[datetime, datetime]]] = defaultdict(list)
    for e in out.episodes:
        if e.rules & FLAP_RULES:  # a suspect on votes or counters alone is not an incident
            _count(per_port, spans, e, out.until)
    for s in swaps:
        if not out.since <= s["replaced_at"] <= out.until:
            continue
        ports = [(s["a_guid"], s["a_port"])] + (
            [(s["b_guid"], s["b_port"])] if s["b_guid"] is not None else [])
        if any(lo <= s["replaced_at"] <= hi for p in ports for lo, hi in spans.get(p, [])):
            continue
        for p in ports:
            per_port[p] += 1
    return per_port


def _count(per_port: dict[tuple[str, int | None], int],
           spans: dict[tuple[str, int | None], list[tuple[datetime, datetime]]], e: Episode,
           until: datetime) -> None:
    end = e.boundary or until
    for guid, port in e.key:
        if port is None:
            continue
        per_port[(guid, port)] += 1
        spans[(guid, port)].append((e.first_at, end))


def cohorts(store: Store, out: Outcomes) -> Cohorts:
    """Every cohort of the window's parts, flagged ones first (most significant first)."""
    cfg = out.settings
    per_port = {(g, p): n for (g, p), n in _incidents(out, store.replacements()).items()
                if p is not None and n}
    # Counted in SQL (cohort_counts.sql): the parts as Python rows only when a flagged cohort
    # is to be explained by finer ones (#25: 196,608 of them were 0.5 s of `report`).
    counts: dict[str, dict[str, tuple[int, int, int, str | None]]] = {dim: {} for dim in DIMENSIONS}
    total = (0, 0, 0)
    for dim, value, n, k, incidents, top in store.cohort_counts(per_port):
        if dim in counts and value is not None:
            counts[dim][value] = (n, k, incidents, top)
        elif dim == "":
            total = (n, k, incidents)
    # The parts were watched while nightly runs remembered suspects, not the whole window.
    watched_from = max(out.since, out.first_run) if out.first_run else out.since
    days = max((out.until - watched_from).total_seconds() / 86400, 1e-9)
    result = Cohorts(round(days, 2), *total)
    candidates: list[_Candidate] = []
    for dim in DIMENSIONS:
        of_dim = counts[dim]
        if len(of_dim) < 2:
            continue  # nothing to compare with
        known = sum(n for n, *_ in of_dim.values())
        known_hit = sum(k for _, k, *_ in of_dim.values())
        for value in sorted(of_dim):
            n, k, incidents, top = of_dim[value]
            # a lot's or firmware's most common part number (a part number's is itself)
            candidates.append(_Candidate(dim, value, n, k, incidents,
                                         top if dim != "part_number" else None,
                                         _Rest(known - n, known_hit - k)))
    tests = max(1, len(candidates))
    groups = [_cohort(c, days, tests, cfg.cohort_min_incidents, cfg.cohort_min_ratio,
                      cfg.cohort_alpha) for c in candidates]
    _explain(groups, candidates, lambda: parts_of(store, per_port), tests,
             cfg.cohort_min_incidents, cfg.cohort_min_ratio, cfg.cohort_alpha)
    groups.sort(key=lambda g: (not g["flagged"], g["explained_by"] is not None,
                               g["p_value"] if g["p_value"] is not None else 2.0,
                               DIMENSIONS.index(g["field"]), g["value"]))
    for g in groups:
        if g["flagged"] and g["explained_by"] is None:
            g["finding"] = _finding(g, days)
    result.groups = groups
    return result


class _Rest(NamedTuple):
    """The other parts with a known value of a cohort's field: how many, how many with an
    incident."""

    parts: int
    with_incident: int


def _test(k: int, n: int, rest: _Rest, tests: int, min_incidents: int, min_ratio: float,
          alpha: float) -> tuple[float | None, float | None, float | None, bool]:
    """(rest share, ratio, tail p, flagged)."""
    if not rest.parts or n == 0:
        return None, None, None, False
    k0 = rest.with_incident
    p0 = (k0 if k0 else 0.5) / rest.parts
    share = k / n
    p = binomial_tail(k, n, p0)
    flagged = k >= min_incidents and share >= min_ratio * p0 and p * tests < alpha
    return p0, share / p0, p, flagged


class _Candidate(NamedTuple):
    """One cohort to test: its field and value, its parts, those with an incident, their
    incidents, its most common part number (a lot, firmware or vendor's) and the rest."""

    dim: str
    value: str
    parts: int
    with_incident: int
    incidents: int
    part_number: str | None
    rest: _Rest


def _cohort(c: _Candidate, days: float, tests: int, min_incidents: int, min_ratio: float,
            alpha: float) -> CohortJSON:
    k, n, incidents = c.with_incident, c.parts, c.incidents
    p0, ratio, p, flagged = _test(k, n, c.rest, tests, min_incidents, min_ratio, alpha)
    return {
        "field": c.dim, "value": c.value, "part_number": c.part_number,
        "parts": n, "with_incident": k, "incidents": incidents,
        "mtbi_days": round(n * days / incidents, 1) if incidents else None,
        "share": round(k / n, 4) if n else 0.0,
        "rest_share": round(p0, 4) if p0 is not None else None,
        "ratio": round(ratio, 2) if ratio is not None else None,
        "p_value": float(f"{p:.3g}") if p is not None else None,
        "flagged": flagged, "explained_by": None, "finding": None,
    }


def _explain(groups: list[CohortJSON], candidates: list[_Candidate],
             read_parts: Callable[[], _Parts], tests: int, min_incidents: int,
             min_ratio: float, alpha: float) -> None:
    """A flagged broad cohort that is no longer flagged once the parts of the flagged finer
    cohorts inside it are taken out is explained by them (the parts are read only when a
    flagged cohort has flagged finer ones to be explained by)."""
    dims = {c.dim for g, c in zip(groups, candidates, strict=True) if g["flagged"]}
    if not any(finer in dims for dim in dims for finer in _FINER.get(dim, ())):
        return
    parts = read_parts()
    flagged = [(g, c, parts.members(c.dim, c.value))
               for g, c in zip(groups, candidates, strict=True) if g["flagged"]]
    for g, c, mine in flagged:
        for finer in _FINER.get(c.dim, ()):
            inside = [(fg, theirs) for fg, fc, theirs in flagged
                      if fc.dim == finer and theirs <= mine]
            if not inside:
                continue
            taken = {i for _, theirs in inside for i in theirs}
            left = mine - taken
            k = sum(1 for i in left if parts.incidents[i])
            *_, still = _test(k, len(left), c.rest, tests, min_incidents, min_ratio, alpha)
            if not still:
                g["explained_by"] = ", ".join(f"{finer} {fg['value']}" for fg, _ in inside)
                break


def _finding(g: CohortJSON, days: float) -> str:
    what = g["value"] if g["field"] == "part_number" else (
        f"{g['part_number']} from {g['field']} {g['value']}" if g["part_number"]
        else f"{g['field']} {g['value']}")
    rest = g["rest_share"] or 0.0
    return (f"{g['with_incident']} of {g['parts']} {what} had an incident (suspect or swap) in "
            f"the last {days:.0f} days: {100 * g['share']:.1f} % against {100 * rest:.1f} % of "
            f"the rest (binomial tail p = {g['p_value']:.2g}); suspect the batch, not the "
            "single cables")
