"""Outcomes (issue #15): which of the nightly runs' suspects were right, judged by what followed.

Every nightly run remembers the suspects its report showed (`remember`, in the run's own
transaction): the window, rank, verdict, both ends, score, the rules that ranked it
(`rules.RULES`), its first and last evidence and the failed jobs blamed on it. The nights a link
is a suspect with one verdict form one suspect (an episode) until something settles it:

- confirmed: a swap of the part its verdict names held for `verify_days` without a flap
  (`verified`), or the old part flapped where it went (`followed_part`, also counted apart);
- refuted: the part its verdict names was swapped and the flaps went on (`escalated`), a swap
  of another part held (the fault was elsewhere), or nobody acted and the link stayed clean for
  `[outcomes] clean_days`;
- open otherwise (no action yet, or a swap still being watched).

A swap of another part whose flaps went on says nothing about this verdict: the next swap does.
After a confirmation (or a clean spell) new evidence on the link is a new suspect; after a
refutation by a swap that did not help, the link's evidence stays with the refuted suspect
until a swap holds. Whole-switch and whole-host events have no part to swap: they are counted
(`unjudged`) but never judged.

Per rule and per verdict: suspects, confirmed, refuted, open, precision = confirmed /
(confirmed + refuted), the median days from first evidence to the fix of the confirmed ones, the
GPU-hours lost on them before the fix, and refuted suspects per nightly run. A suspect first
seen less than `clean_days` before the window's end is young: a swap can already have confirmed
it (in `verify_days`) but no clean spell can have refuted it yet, so counting it would favour
confirmations. Young suspects are listed with their verdict and counted apart (`young`); the
rates are over the others, and false positives per night over the nights before them.

Learned weights (off by default): a rule's weight is its precision, shrunk toward the pooled
precision p0 of all judged suspects as if `prior_suspects` more had been judged at p0 (a Beta
prior), so one lucky swap cannot make a rule weigh 1.0: w = (confirmed + k p0) /
(confirmed + refuted + k). A suspect's points become the sum of each rule's points times its
weight, and its evidence says so. The whole-node rules are never judged and keep weight 1.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from auditor.analyse import replacements
from auditor.analyse.flaps import Flap, flaps
from auditor.analyse.rank import Suspect
from auditor.analyse.rules import RULES
from auditor.config import OutcomesSettings
from auditor.store import Store, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import RememberedSuspectRow, ReplacementRow

CONFIRMED, REFUTED, OPEN = "confirmed", "refuted", "open"
# The parts `auditor replaced --part` records that each verdict names.
PARTS_OF = {"cable": {"cable"}, "transceiver": {"transceiver-a", "transceiver-b"},
            "switch_port": {"switch-port"}}
UNJUDGED = ("switch", "host")  # whole-node events: no part to swap
NODE_RULES = ("switch_event", "host_event")
FLAP_RULES = frozenset({"reseat", "flaps", "long_flap", "counted_down"})  # the link went down
FIXED = ("verified", "followed_part")

End = tuple[str, int | None]
Key = tuple[End, ...]


@dataclass(slots=True)
class Episode:
    """One suspect: the nights one link was a suspect with one verdict, and how it ended."""

    key: Key
    component: str
    ends: list[dict[str, Any]]  # name, guid, port of the newest night
    first_at: datetime  # its first evidence
    first_seen: datetime  # the first night that showed it
    last_seen: datetime  # the last night that showed it
    last_evidence: datetime
    nights: int = 0
    rules: set[str] = field(default_factory=set)
    jobs: dict[str, tuple[datetime | None, float]] = field(default_factory=dict)
    verdict: str = OPEN
    how: str = "no swap recorded yet and the link has not been clean long enough"
    followed: bool = False
    fix_at: datetime | None = None  # the swap that held (confirmed, or refuted by another part)
    ticket: str | None = None
    boundary: datetime | None = None  # later evidence is a new suspect (None: never)
    young: bool = False  # first seen less than clean_days before the window's end
    after: datetime | None = None  # the suspect before it on this link ended here

    def gpu_hours(self, before: datetime | None = None) -> float:
        return sum(h for at, h in self.jobs.values()
                   if before is None or at is None or at < before)

    @property
    def days_to_fix(self) -> float | None:
        if self.verdict != CONFIRMED or self.fix_at is None:
            return None
        return max(0.0, (self.fix_at - self.first_at).total_seconds() / 86400)


class GroupJSON(TypedDict):
    name: str
    suspects: int  # confirmed + refuted + open + young
    confirmed: int
    followed_part: int  # of the confirmed: the old part flapped where it went
    refuted: int
    open: int
    young: int  # first seen less than clean_days before the window's end: not in the rates
    precision: float | None  # confirmed / (confirmed + refuted); None before any is judged
    median_days_to_fix: float | None
    gpu_hours_before_fix: float  # lost on the confirmed ones between first evidence and fix
    false_positives_per_night: float  # refuted / nightly runs before the young suspects


class OutcomeEndJSON(TypedDict):
    name: str | None
    guid: str
    port: int | None


class EpisodeJSON(TypedDict):
    """One judged suspect: its link and verdict, the rules of all its nights, how it ended."""

    component: str
    ends: list[OutcomeEndJSON]
    rules: list[str]
    first_at: str | None  # its first evidence
    first_seen: str | None  # the first nightly run that showed it
    last_seen: str | None
    nights: int
    verdict: str  # confirmed, refuted, open
    young: bool  # first seen less than clean_days before the window's end: not in the rates
    followed_part: bool
    reason: str
    ticket: str | None
    fixed_at: str | None  # confirmed: the swap that held
    days_to_fix: float | None
    gpu_hours_lost: float
    gpu_hours_before_fix: float | None


class WeightJSON(TypedDict):
    rule: str
    weight: float
    confirmed: int
    refuted: int
    prior: float


@dataclass(slots=True)
class Outcomes:
    since: datetime
    until: datetime
    nights: int
    mature_nights: int  # the nights that could see a suspect that is no longer young
    episodes: list[Episode]
    unjudged: int  # whole-switch and whole-host suspects
    settings: OutcomesSettings
    verify_days: float
    first_run: datetime | None = None  # the window start of the first run remembered

    def judged(self) -> list[Episode]:
        return [e for e in self.episodes if e.verdict != OPEN and not e.young]


# -- memory ---------------------------------------------------------------------------------------


def remembered_rows(findings: Iterable[Any]) -> list[dict[str, Any]]:
    """The rows `Store.remember_run` stores for the findings of an audit (rank, suspect and
    the jobs blamed on it)."""
    rows = []
    for f in findings:
        s: Suspect = f.suspect
        ends = s.ends + [{"guid": None, "port": None, "name": None}] * (2 - len(s.ends))
        rules = s.rules
        jobs = sorted(f.jobs, key=lambda j: str(j["job_id"]))
        rows.append({
            "rank": f.rank, "component": s.component,
            "a_guid": ends[0]["guid"], "a_port": ends[0]["port"], "a_name": ends[0]["name"],
            "b_guid": ends[1]["guid"], "b_port": ends[1]["port"], "b_name": ends[1]["name"],
            "score": s.score, "points": round(s.points, 6), "rules": rules,
            "rule_points": [round(s.rule_points[r], 6) for r in rules],
            "first_at": s.first_at, "last_at": s.last_at, "flaps": s.flaps,
            "jobs_failed": s.jobs_failed, "gpu_hours_lost": s.gpu_hours_lost,
            "job_ids": [str(j["job_id"]) for j in jobs],
            "job_died_at": [j.get("died_at") for j in jobs],
            "job_gpu_hours": [float(j["gpu_hours"]) for j in jobs],
        })
    return rows


def remember(store: Store, audited: Any, run_at: datetime) -> int:
    """Remember the suspects an audit's report shows (`audit.Audit`), as one nightly run of
    its window. Call it in a transaction; a run of the same window is replaced."""
    return store.remember_run(run_at, audited.since, audited.until,
                              remembered_rows(audited.findings))


# -- judging --------------------------------------------------------------------------------------


def _key(row: RememberedSuspectRow) -> Key:
    ends: list[End] = [(row["a_guid"], row["a_port"])]
    if row["b_guid"] is not None:
        ends.append((row["b_guid"], row["b_port"]))
    return tuple(sorted(ends, key=lambda e: (e[0], -1 if e[1] is None else e[1])))


def _evidence_at(row: RememberedSuspectRow) -> datetime:
    when: datetime = row["last_at"] or row["run_until"]
    return when


def judge(store: Store, since: datetime, until: datetime, settings: OutcomesSettings,
          verify_days: float = 7.0) -> Outcomes:
    """The suspects of the nightly runs that judged a moment in (since, until] (naive UTC),
    each settled by the swaps and flaps up to `until`."""
    since, until = utc_naive(since), utc_naive(until)
    runs = store.suspect_runs(since, until)
    rows = store.remembered_suspects(since, until)
    node_rows = [r for r in rows if r["component"] in UNJUDGED]
    rows = [r for r in rows if r["component"] not in UNJUDGED]
    start = min([since, *(r["first_at"] for r in rows if r["first_at"])])
    # With no link remembered there is nothing to settle: the span's flaps are not read (90
    # days of a 65,536-GPU fabric's flaps were 4.5 s of `report`, issue #25).
    seen = flaps(store, start, until) if rows else []
    swaps = replacements.settled(store, until, verify_days, seen) if rows else []
    by_port: dict[tuple[str, int], list[Flap]] = defaultdict(list)
    for f in seen:
        if f.down_at is not None and f.down_at <= until:
            for end in f.ends:
                by_port[end].append(f)
    grouped: dict[tuple[Key, str], list[RememberedSuspectRow]] = defaultdict(list)
    for r in rows:
        grouped[(_key(r), r["component"])].append(r)
    episodes: list[Episode] = []
    for (key, component), mine in sorted(grouped.items(), key=lambda kv: (
            min(r["run_until"] for r in kv[1]), kv[0])):
        ports: set[tuple[str, int]] = {(g, p) for g, p in key if p is not None}
        link_flaps = sorted({(f.down_at, f.up_at) for p in ports for f in by_port.get(p, [])
                             if f.down_at is not None}, key=lambda d: d[0])
        link_swaps = sorted(
            (s for s in swaps if ports & {(s[0]["a_guid"], s[0]["a_port"]),
                                          (s[0]["b_guid"], s[0]["b_port"])}),
            key=lambda s: (s[0]["replaced_at"], s[0]["replacement_id"]))
        episodes += _episodes(key, component, mine, link_flaps, link_swaps, until,
                              settings.clean_days)
    nodes = {(_key(r), r["component"]) for r in node_rows}
    grown = until - timedelta(days=settings.clean_days)
    for e in episodes:
        e.young = e.first_seen > grown
    return Outcomes(since, until, len(runs), sum(r["until"] <= grown for r in runs), episodes,
                    len(nodes), settings, verify_days,
                    min((r["since"] for r in runs), default=None))


def _episodes(key: Key, component: str, rows: list[RememberedSuspectRow],
              link_flaps: list[tuple[datetime, datetime | None]],
              swaps: list[tuple[ReplacementRow, str, str]], now: datetime,
              clean_days: float) -> list[Episode]:
    out: list[Episode] = []
    current: Episode | None = None
    for row in sorted(rows, key=lambda r: (r["run_until"], r["rank"])):
        at = _evidence_at(row)
        if current is not None and current.boundary is not None and at > current.boundary:
            current = None
        if current is None:
            first = row["first_at"] or row["run_until"]
            after = out[-1].boundary if out else None
            if after is not None:
                first = max(first, after)
            current = Episode(key, component, [], first, row["run_until"], row["run_until"], at,
                              after=after)
            out.append(current)
        _add(current, row)
        _settle(current, link_flaps, swaps, now, clean_days)
    return out


def _add(ep: Episode, row: RememberedSuspectRow) -> None:
    ep.nights += 1
    ep.last_seen = max(ep.last_seen, row["run_until"])
    ep.last_evidence = max(ep.last_evidence, _evidence_at(row))
    ep.rules.update(row["rules"])
    ends = ((row["a_guid"], row["a_port"], row["a_name"]),
            (row["b_guid"], row["b_port"], row["b_name"]))
    ep.ends = [{"name": name, "guid": guid, "port": port} for guid, port, name in ends
               if guid is not None]
    for job_id, died, hours in zip(row["job_ids"], row["job_died_at"], row["job_gpu_hours"],
                                   strict=True):
        ep.jobs[job_id] = (died, hours)


def _clean_close(start: datetime, link_flaps: list[tuple[datetime, datetime | None]],
                 limit: datetime, clean_days: float) -> datetime | None:
    """The moment a link quiet since `start` has been clean `clean_days` (a flap restarts the
    count when it comes back up; a link still down is never clean), if that comes by
    `limit`. `link_flaps`: (down, up or None), by down."""
    span = timedelta(days=clean_days)
    quiet = start
    for down, up in link_flaps:
        if down >= limit or down - quiet >= span:
            break
        if up is None:
            return None
        quiet = max(quiet, up)
    return quiet + span if quiet + span <= limit else None


def _settle(ep: Episode, link_flaps: list[tuple[datetime, datetime | None]],
            swaps: list[tuple[ReplacementRow, str, str]], now: datetime,
            clean_days: float) -> None:
    """Set the episode's verdict, reason and boundary from the swaps on its link since its
    first evidence and the flaps that followed."""
    ep.verdict, ep.followed, ep.fix_at, ep.ticket, ep.boundary = OPEN, False, None, None, None
    ep.how = "no swap recorded yet and the link has not been clean long enough"
    named = PARTS_OF.get(ep.component, set())
    quiet = ep.last_evidence
    refuted_by: ReplacementRow | None = None
    for row, state, reason in swaps:
        at = row["replaced_at"]
        if at < ep.first_at or (ep.after is not None and at <= ep.after):
            continue  # before its evidence, or the swap that settled the one before it
        if refuted_by is None:
            closed = _clean_close(quiet, link_flaps, at, clean_days)
            if closed is not None:
                _clean(ep, closed, clean_days)
                return
        if state == "watching":
            if refuted_by is None:
                ep.how = f"swap {row['ticket']} ({row['part']}) is being watched: {reason}"
                ep.ticket = row["ticket"]
                return
            continue
        if state in FIXED:
            if refuted_by is not None:
                # The link was fixed by a later swap: new evidence from now on is new.
                ep.boundary = at
                return
            ep.fix_at, ep.ticket, ep.boundary = at, row["ticket"], at
            if row["part"] in named:
                ep.verdict, ep.followed = CONFIRMED, state == "followed_part"
                ep.how = f"swap {row['ticket']} ({row['part']}) {state}: {reason}"
            else:
                ep.verdict = REFUTED
                ep.how = (f"swap {row['ticket']} of the {row['part']}, not the {ep.component}, "
                          f"stopped the flaps ({state})")
            return
        # escalated: the flaps went on after this swap
        if refuted_by is None and row["part"] in named:
            refuted_by = row
            ep.verdict, ep.ticket = REFUTED, row["ticket"]
            ep.how = f"swap {row['ticket']} ({row['part']}) did not help: {reason}"
        # the flaps after a swap of another part keep the link busy: count clean time anew
        quiet = max(quiet, at)
    closed = _clean_close(quiet, link_flaps, now, clean_days)
    if refuted_by is None and closed is not None:
        _clean(ep, closed, clean_days)
    elif closed is not None:
        # Refuted by a swap that did not help, and the link went quiet on its own later: what
        # comes after the quiet spell is a new fault.
        ep.boundary = closed


def _clean(ep: Episode, closed: datetime, clean_days: float) -> None:
    ep.verdict, ep.boundary = REFUTED, closed
    ep.how = (f"no swap, and no flap for {clean_days:g} days after "
              f"{closed - timedelta(days=clean_days):%Y-%m-%d %H:%M}")


# -- tables ---------------------------------------------------------------------------------------


def _group(name: str, eps: Sequence[Episode], nights: int) -> GroupJSON:
    grown = [e for e in eps if not e.young]
    confirmed = [e for e in grown if e.verdict == CONFIRMED]
    refuted = sum(e.verdict == REFUTED for e in grown)
    days = [d for e in confirmed if (d := e.days_to_fix) is not None]
    return {
        "name": name, "suspects": len(eps), "confirmed": len(confirmed),
        "followed_part": sum(e.followed for e in confirmed), "refuted": refuted,
        "open": sum(e.verdict == OPEN for e in grown), "young": len(eps) - len(grown),
        "precision": round(len(confirmed) / (len(confirmed) + refuted), 3)
        if confirmed or refuted else None,
        "median_days_to_fix": round(statistics.median(days), 2) if days else None,
        "gpu_hours_before_fix": round(float(sum(e.gpu_hours(e.fix_at) for e in confirmed)), 1),
        "false_positives_per_night": round(refuted / nights, 3) if nights else 0.0,
    }


def by_rule(out: Outcomes) -> list[GroupJSON]:
    """One row per rule that ranked a judged-kind suspect, in RULES order."""
    order = list(RULES)
    rules = sorted({r for e in out.episodes for r in e.rules},
                   key=lambda r: (order.index(r) if r in order else len(order), r))
    return [_group(r, [e for e in out.episodes if r in e.rules], out.mature_nights)
            for r in rules]


def by_verdict(out: Outcomes) -> list[GroupJSON]:
    names = sorted({e.component for e in out.episodes})
    return [_group(c, [e for e in out.episodes if e.component == c], out.mature_nights)
            for c in names]


def overall(out: Outcomes) -> GroupJSON:
    return _group("all", out.episodes, out.mature_nights)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat(timespec="seconds") + "Z" if at else None


def episode_json(e: Episode) -> EpisodeJSON:
    days = e.days_to_fix
    return {
        "component": e.component,
        "ends": [{"name": x["name"], "guid": x["guid"], "port": x["port"]} for x in e.ends],
        "rules": sorted(e.rules, key=lambda r: (list(RULES).index(r) if r in RULES else 99, r)),
        "first_at": _iso(e.first_at), "first_seen": _iso(e.first_seen),
        "last_seen": _iso(e.last_seen), "nights": e.nights, "verdict": e.verdict,
        "young": e.young,
        "followed_part": e.followed, "reason": e.how, "ticket": e.ticket,
        "fixed_at": _iso(e.fix_at) if e.verdict == CONFIRMED else None,
        "days_to_fix": round(days, 2) if days is not None else None,
        "gpu_hours_lost": round(e.gpu_hours(), 1),
        "gpu_hours_before_fix": round(e.gpu_hours(e.fix_at), 1)
        if e.verdict == CONFIRMED else None,
    }


# -- learned weights ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Weight:
    weight: float
    confirmed: int
    refuted: int
    prior: float


def learned_weights(out: Outcomes) -> dict[str, Weight]:
    """Each rule's weight: its precision shrunk toward the pooled one (module docstring). None
    judged yet: no weights (the ranking stays as rank.py makes it)."""
    judged = out.judged()
    if not judged:
        return {}
    pooled = sum(e.verdict == CONFIRMED for e in judged) / len(judged)
    k = out.settings.prior_suspects
    weights = {}
    for rule in RULES:
        if rule in NODE_RULES:
            continue
        mine = [e for e in judged if rule in e.rules]
        c = sum(e.verdict == CONFIRMED for e in mine)
        n = len(mine)
        w = (c + k * pooled) / (n + k) if n + k > 0 else pooled
        weights[rule] = Weight(round(w, 3), c, n - c, round(pooled, 3))
    return weights


def weights_json(weights: dict[str, Weight]) -> list[WeightJSON]:
    return [{"rule": r, "weight": w.weight, "confirmed": w.confirmed, "refuted": w.refuted,
             "prior": w.prior} for r, w in weights.items()]


def apply_weights(suspects: list[Suspect], weights: dict[str, Weight],
                  window_days: float) -> list[Suspect]:
    """Reweigh each suspect's rules (in place) and re-sort, best first; the evidence says how."""
    if not weights:
        for s in suspects:
            s.evidence.append("learned weights are on, but no suspect has been judged yet: the "
                              "points are rank.py's own")
        return suspects
    for s in suspects:
        if not s.rule_points:
            continue
        parts = []
        # Points no rule claims (a later addition to the ranking that names none) stay as they
        # are: a weight is only known for a rule.
        points = s.points - sum(s.rule_points.values())
        for rule in s.rules:
            w = weights.get(rule)
            factor = w.weight if w is not None else 1.0
            points += s.rule_points[rule] * factor
            if w is not None:
                parts.append(f"{rule} x{w.weight:.2f} ({w.confirmed} of "
                             f"{w.confirmed + w.refuted} right)")
        if parts:
            s.evidence.append(
                f"learned weights from the last {window_days:g} days' outcomes (precision, "
                f"prior {next(iter(weights.values())).prior:.2f}): {', '.join(parts)}; points "
                f"{s.points:.1f} -> {points:.1f}")
        s.points = points
    suspects.sort(key=lambda s: (-s.points, s.first_at or datetime.max))  # noqa: DTZ901
    return suspects
