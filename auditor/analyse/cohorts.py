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
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from auditor.analyse.outcomes import FLAP_RULES, Episode, Outcomes
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.store.rows import ReplacementRow, TransceiverRow

DIMENSIONS = ("part_number", "vendor", "firmware", "lot")
# A lot (or firmware) is a subset of one part number; the broader fields can be explained by it.
_FINER = {"part_number": ("lot", "firmware"), "vendor": ("lot", "firmware", "part_number")}


@dataclass(slots=True)
class Part:
    ident: str  # the serial number, else device:port
    ports: set[tuple[str, int]]
    fields: dict[str, str]  # dimension -> value, only those known
    incidents: int = 0


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


def parts_of(store: Store, transceivers: list[TransceiverRow] | None = None) -> list[Part]:
    """The parts the store knows per port, one per serial number (`transceivers`: the
    store's, when the caller has read them already)."""
    firmware = store.optics_firmware()
    parts: dict[str, Part] = {}
    # (393,216 modules at 65,536 GPUs: one Part made per serial, not one per row to throw away)
    for t in store.transceivers() if transceivers is None else transceivers:
        if t["guid"] is None or t["port"] is None or t["present"] is False:
            continue
        serial = t["serial_number"]
        ident = serial or f"{t['device']}:{t['port_name']}"
        part = parts.get(ident)
        if part is None:
            part = parts[ident] = Part(ident, set(), {})
        part.ports.add((t["guid"], t["port"]))
        fields = part.fields
        for name, value in (("part_number", t["part_number"]), ("vendor", t["vendor"]),
                            ("lot", t.get("lot")), ("firmware", firmware.get(serial or ""))):
            if value and name not in fields:
                fields[name] = str(value)
    return sorted(parts.values(), key=lambda p: p.ident)


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


def cohorts(store: Store, out: Outcomes, transceivers: list[TransceiverRow] | None = None
            ) -> Cohorts:
    """Every cohort of the window's parts, flagged ones first (most significant first);
    `transceivers` as `parts_of` takes them."""
    cfg = out.settings
    parts = parts_of(store, transceivers)
    per_port = _incidents(out, store.replacements())
    if per_port:  # (a part starts with none)
        incidents_at = per_port.get
        for part in parts:
            part.incidents = max(map(incidents_at, part.ports, repeat(0)), default=0)
    # The parts were watched while nightly runs remembered suspects, not the whole window.
    watched_from = max(out.since, out.first_run) if out.first_run else out.since
    days = max((out.until - watched_from).total_seconds() / 86400, 1e-9)
    hit = [p for p in parts if p.incidents]
    result = Cohorts(round(days, 2), len(parts), len(hit), sum(p.incidents for p in parts))
    candidates: list[tuple[str, str, list[Part], _Rest]] = []
    for dim in DIMENSIONS:
        # Each value's parts in one pass, and the rest as counts: a list of the rest per value
        # was most of `report` at 65,536 GPUs (393,216 modules, issue #25).
        by_value: dict[str, list[Part]] = defaultdict(list)
        for p in parts:
            if dim in p.fields:
                by_value[p.fields[dim]].append(p)
        if len(by_value) < 2:
            continue  # nothing to compare with
        known = sum(map(len, by_value.values()))
        known_hit = sum(1 for mine in by_value.values() for p in mine if p.incidents)
        for value in sorted(by_value):
            mine = by_value[value]
            mine_hit = sum(1 for p in mine if p.incidents)
            candidates.append((dim, value, mine, _Rest(known - len(mine), known_hit - mine_hit)))
    tests = max(1, len(candidates))
    groups = [_cohort(dim, value, mine, rest, days, tests, cfg.cohort_min_incidents,
                      cfg.cohort_min_ratio, cfg.cohort_alpha)
              for dim, value, mine, rest in candidates]
    _explain(groups, candidates, tests, cfg.cohort_min_incidents, cfg.cohort_min_ratio,
             cfg.cohort_alpha)
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


def _cohort(dim: str, value: str, mine: list[Part], rest: _Rest, days: float, tests: int,
            min_incidents: int, min_ratio: float, alpha: float) -> CohortJSON:
    k = sum(1 for p in mine if p.incidents)
    incidents = sum(p.incidents for p in mine)
    p0, ratio, p, flagged = _test(k, len(mine), rest, tests, min_incidents, min_ratio, alpha)
    numbers = Counter(p.fields.get("part_number") for p in mine if p.fields.get("part_number"))
    return {
        "field": dim, "value": value,
        "part_number": numbers.most_common(1)[0][0] if numbers and dim != "part_number"
        else None,
        "parts": len(mine), "with_incident": k, "incidents": incidents,
        "mtbi_days": round(len(mine) * days / incidents, 1) if incidents else None,
        "share": round(k / len(mine), 4) if mine else 0.0,
        "rest_share": round(p0, 4) if p0 is not None else None,
        "ratio": round(ratio, 2) if ratio is not None else None,
        "p_value": float(f"{p:.3g}") if p is not None else None,
        "flagged": flagged, "explained_by": None, "finding": None,
    }


def _explain(groups: list[CohortJSON], candidates: list[tuple[str, str, list[Part], _Rest]],
             tests: int, min_incidents: int, min_ratio: float, alpha: float) -> None:
    """A flagged broad cohort that is no longer flagged once the parts of the flagged finer
    cohorts inside it are taken out is explained by them."""
    flagged = [(g, c) for g, c in zip(groups, candidates, strict=True) if g["flagged"]]
    for g, (dim, _, mine, rest) in flagged:
        for finer in _FINER.get(dim, ()):
            idents = {p.ident for p in mine}
            inside = [(fg, theirs) for fg, (fdim, _, theirs, _) in flagged
                      if fdim == finer and {p.ident for p in theirs} <= idents]
            if not inside:
                continue
            taken = {p.ident for _, theirs in inside for p in theirs}
            left = [p for p in mine if p.ident not in taken]
            k = sum(1 for p in left if p.incidents)
            *_, still = _test(k, len(left), rest, tests, min_incidents, min_ratio, alpha)
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
