"""Ranking: one explainable score per link (and per switch or host for common-mode events),
a verdict (cable, transceiver, switch_port, switch, hca, host) and an action in words.

Every point comes from a rule of `auditor/analyse/rules.py` (name, meaning, weight, unit,
source; `[ranking] weights` overrides a weight) and is given through `Weights.give`, written
into the evidence here: flaps and their downtime, long flaps, link-downs only a counter saw,
failed jobs and their GPU-hours, NCCL error pairs' votes, an HCA's port-error event, an NCCL
port failover, a symbol BER over its limit (NVIDIA's field table, `auditor/analyse/ber.py`;
`[ranking] ber_limits`) or link-error recoveries / receive errors over their hourly thresholds,
a growing or climbing error rate, saturated counters, a degraded width or speed, whole-switch
and whole-host events, transceiver trends. Jobs that crossed a link through a long flap and
completed take points off its flaps (`_healthy_cut`), unless a failed job or a port-error
event points at it; NCCL error pairs' votes keep their share of those points. The score is
`rules.score(points)`. Each suspect names the rules that gave it points (`rules`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict

from auditor.analyse import ber
from auditor.analyse.evidence import (
    COMMON_MODE_WINDOW,
    NCCL_DEATH_S,
    VOTE_DUST,
    Evidence,
    LinkEvidence,
    NodeEvent,
)
from auditor.analyse.optics.model import FLAPPED_MIN
from auditor.analyse.optics.outputs import WatchJSON, watch_json
from auditor.analyse.optics.outputs import action as optics_action
from auditor.analyse.optics.outputs import evidence_line as optics_evidence
from auditor.analyse.rules import Weights
from auditor.analyse.rules import score as rule_score
from auditor.analyse.survivors import HealthyJob
from auditor.config import RankingSettings
from auditor.models import LinkKey, NodeType

COMPONENTS = ("cable", "transceiver", "switch_port", "switch", "hca", "host")


@dataclass(slots=True)
class Suspect:
    """One component to act on, with its score, evidence and action."""

    component: str
    ends: list[dict[str, Any]]
    points: float
    flaps: int = 0
    downtime_s: float = 0.0
    jobs_failed: int = 0
    gpu_hours_lost: float = 0.0
    evidence: list[str] = field(default_factory=list)
    action: str = ""
    first_at: datetime | None = None
    last_at: datetime | None = None
    optics: list[WatchJSON] = field(default_factory=list)  # the watches behind a verdict
    rule_points: dict[str, float] = field(default_factory=dict)  # RULES below: what ranked it
    survived_jobs: list[str] = field(default_factory=list)  # crossed its flaps and completed
    survived_points_off: float = 0.0  # what that took off (0 when killing evidence wins)

    @property
    def score(self) -> float:
        return rule_score(self.points)

    @property
    def rules(self) -> list[str]:
        """The rules that gave it points, the weightiest first (issue #15)."""
        return sorted(self.rule_points, key=lambda r: (-self.rule_points[r], r))


def port_label(node_type: NodeType, port: int | None, device: str | None) -> str:
    """What is printed on the faceplate: IB1/<n> on a 1U switch, the HCA and port on a host."""
    if port is None:
        return ""
    if node_type == NodeType.SWITCH:
        return f"IB1/{port}"
    return f"{device or 'HCA'} port {port}"


def _end(ev: Evidence, guid: str, port: int | None) -> dict[str, Any]:
    node = ev.fabric.nodes.get(guid)
    if node is not None:
        name, kind, device = node.name, node.node_type, node.device
    else:  # gone from the newest snapshot (unplugged, powered off): as last seen
        name, last_type = ev.names.get(guid, (guid, "switch"))
        kind, device = NodeType(last_type), None
    return {"name": name, "guid": guid, "port": port,
            "label": port_label(kind, port, device)}


def _fmt(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at else "?"


@dataclass(slots=True)
class _Dust:
    """The vote-dust links of a ranking (`VOTE_DUST`): `watched`, the links whose strong optics
    watches make them suspects anyway (`_optics_verdicts`); `left_out`, how many were not
    listed."""

    watched: set[LinkKey]
    left_out: int = 0


def _link_suspect(ev: Evidence, le: LinkEvidence, cfg: RankingSettings,
                  w: Weights, dust: _Dust | None = None) -> Suspect | None:
    give = w.give
    points = 0.0
    evidence: list[str] = []
    real = [f for f in le.flaps if f.counted_from is None]
    counted = [f for f in le.flaps if f.counted_from is not None]
    durations = [f.duration_s for f in real if f.duration_s is not None]
    still_down = [f for f in real if f.up_at is None]
    downtime = sum(durations) + sum((ev.until - f.down_at).total_seconds()
                                    for f in still_down if f.down_at)
    long_flaps = sum(1 for d in durations if d >= NCCL_DEATH_S) + len(still_down)
    # A host cable's long flaps while its host ran no job harmed nothing by their length: they
    # weigh as flaps, neither as long flaps nor in the downtime term (issue #23).
    idle = {id(f) for f in le.idle_flaps}
    idle_s = sum(f.duration_s or 0.0 for f in real if id(f) in idle)
    long_at_risk = long_flaps - sum(1 for f in real if id(f) in idle
                                    and (f.duration_s or 0.0) >= NCCL_DEATH_S)
    scored: dict[str, float] = {}  # the points of each rule (RULES), for `rules`
    before = points
    if len(real) == 1 and not long_flaps and not le.jobs:
        # One flap shorter than NCCL's death time that no job died of: a reseat, absorbed. It
        # weighs less than a link-down of unknown length that only a counter saw.
        points += give(scored, "reseat", w["reseat"])
    elif real:
        points += give(scored, "flaps", w["flaps"] * len(real) + w.param("flaps", "downtime")
                       * math.log2(1 + (downtime - idle_s) / NCCL_DEATH_S))
        points += give(scored, "long_flap", w["long_flap"] * long_at_risk)
    cut, healthy_said = (_healthy_cut(le, ev.until, points - before) if le.healthy
                         else (0.0, ""))
    # the rules that gave the flaps their points give back what crossing jobs took
    points -= w.take(scored, ("long_flap", "flaps"), cut)
    ar_said = ""
    if le.ar_alternatives and real and not (le.jobs or le.port_errors or le.votes >= 1):
        # AR decides whether a long flap kills the traffic; a short one kills none either way
        # (NCCL's retries ride it out), so the share comes off the long flaps' part of what the
        # flaps still weigh. The issue asks that a flap AR absorbs weigh less than a host
        # cable's flap that jobs lived through (ABSORBED_FLAP): down to (1 - share) of one
        # each, never to nothing (an unstable link stays listed).
        flap_points = scored.get("flaps", 0.0) + scored.get("long_flap", 0.0)
        share = w["adaptive_routing"]
        off = min(share * flap_points * long_flaps / len(real),
                  max(0.0, flap_points - (1 - share) * ABSORBED_FLAP * len(real)))
        off *= 1.0 - le.votes  # as in _healthy_cut: the pair's vote keeps its share
        if off > 0:
            points -= w.take(scored, ("long_flap", "flaps"), off)
            ar_said = (f"adaptive routing can send its flows out of {le.ar_alternatives} other "
                       f"up port(s) of that switch and no job died of it: {off:.1f} points "
                       "off its flaps")
    if real:
        sources = sorted({s for f in real for s in f.sources})
        evidence.append(
            f"{len(real)} flap(s), {long_flaps} longer than {NCCL_DEATH_S:.1f} s, "
            f"{downtime:.0f} s down in all (first {_fmt(real[0].down_at)}, "
            f"seen by {', '.join(sources)})")
    if idle:
        evidence.append(f"{len(idle)} of its long flap(s) came while its host ran no job (the "
                        "scheduler's records): their length harmed nothing, weighed as flaps only")
    if still_down:
        evidence.append(f"still down since {_fmt(still_down[0].down_at)}")
    if counted:
        points += give(scored, "counted_down", w["counted_down"] * len(counted))
        evidence.append(f"{len(counted)} more link-down(s) counted by LinkDownedCounter that no "
                        "log shows")
    if le.jobs:
        gpu_hours = sum(j["gpu_hours"] for j in le.jobs)
        points += give(scored, "killed_job", _job_points(w, len(le.jobs), gpu_hours))
        ids = ", ".join(sorted({j["job_id"] for j in le.jobs})[:5])
        evidence.append(f"{len(le.jobs)} failed job(s) ({ids}), {gpu_hours:.0f} GPU-hours lost")
        evidence += [_job_timing(j) for j in sorted(le.jobs, key=lambda j: j["job_id"])[:3]
                     if "fault_between" in j]
    if healthy_said:
        evidence.append(healthy_said)
    if ar_said:
        evidence.append(ar_said)
    if le.host_note:
        evidence.append(le.host_note)
    # Jobs counted as crossing the cable are not "not on this cable"; the others still are.
    unused = le.survived - {h.job_id for h in le.healthy}
    if unused:
        ids = ", ".join(sorted(unused)[:5])
        evidence.append(f"{len(unused)} job(s) on this host ran through its flap(s) longer "
                        f"than any NCCL waits and lived ({ids}): their traffic was not on this "
                        "cable (rail unused, NCCL_IB_HCA, a long NCCL_IB_TIMEOUT)")
    if le.port_errors:
        points += give(scored, "port_error", w["port_error"])
        ids = ", ".join(sorted(le.port_errors)[:5])
        evidence.append(f"the HCA reported this port down (NCCL port-error event) in "
                        f"{len(le.port_errors)} job(s) ({ids})")
    if le.failovers:
        # Issue #14, degraded but not dead: NCCL moved a job off this port and the job lived
        # on. Shown, but below any link that killed a job.
        points += give(scored, "failover", w["failover"])
        for f in sorted(le.failovers, key=lambda f: f["at"])[:3]:
            job = f"job {f['job_id']}" if f["job_id"] else "its job"
            # With several merged NICs the log names a device index only: say so.
            evidence.append(f"NCCL failed over from this port at {_fmt(f['at'])} ({job} lived "
                            "on)" + (f"; the log says only that it was one of "
                                     f"{', '.join(f['one_of'])} on {f['host']}"
                                     if f["one_of"] else ""))
    if le.votes:
        points += give(scored, "votes", w["votes"] * le.votes)
        evidence.append(f"NCCL error pairs of {len(le.voters)} job(s) point here "
                        f"({le.votes:.2f} votes)")
    one_sided: str | None = None
    hours = max(le.hours, 1e-9)
    erroring = []
    worst = 0.0
    for port_key, counters in le.counters.items():
        symbols = counters.get("SymbolErrorCounter", 0)
        recov = counters.get("LinkErrorRecoveryCounter", 0)
        rcv = counters.get("PortRcvErrors", 0)
        measured = le.symbol_ber.get(port_key)
        limit = _symbol_limit(measured, cfg) if measured is not None else None
        # Times the limit, counted from the table's warning level (half the limit) on.
        over = (measured.worst_ber / limit.ber if measured is not None and limit is not None
                and measured.worst_ber > limit.warning else 0.0)
        if recov / hours > cfg.link_error_recovery_per_hour \
                or rcv / hours > cfg.port_rcv_errors_per_hour:
            over = max(over, 1.0)
        if over:
            erroring.append(port_key)
            name = _end(ev, *port_key)["name"]
            said = (_ber_sentence(measured, limit) if measured is not None and limit is not None
                    else "symbol BER not known (no link speed and no data counters)"
                    if symbols else "")
            # The counts cover the port's readings in the window: the BER's span when known.
            span = measured.seconds / 3600 if measured is not None and measured.seconds \
                else hours
            counts = (f"{symbols} symbol errors, {recov} link-error recoveries, {rcv} receive "
                      f"errors in {span:.1f} h") if counters else ""
            evidence.append(f"{name} port {port_key[1]}: {said}"
                            f"{'; ' if said and counts else ''}{counts}")
            worst = max(worst, over)
    if erroring:
        # How far over the BER limit matters: 30x over is a cable about to fail; between the
        # warning level and the limit it is 1-2 points.
        points += give(scored, "error_rate", w["error_rate"] + w.param(
            "error_rate", "per_doubling") * min(w.param("error_rate", "cap"), math.log2(worst)))
        if max(le.rising.get(k, 0) for k in erroring) >= 2:
            points += give(scored, "counter_rise", w["counter_rise"])
            evidence.append("symbol errors grew in several successive snapshots")
        # A climbing error rate is a link degrading (issue #14: on PAM4 links some errors mean
        # little, a rising rate a lot): the BER rose in each of the last three intervals.
        climbing = [m for k in erroring if (m := le.symbol_ber.get(k)) and m.climbing >= 2]
        if climbing:
            points += give(scored, "ber_climbing", w["ber_climbing"])
            steps = max(climbing, key=lambda m: m.climbing).trend
            evidence.append("the symbol BER rose in each of the last "
                            f"{max(m.climbing for m in climbing) + 1} intervals ("
                            + ", ".join(f"{b:.1e}" for b in steps[-4:]) + ")")
        if len(le.link) == 2 and len(erroring) == 1:
            one_sided = erroring[0]  # type: ignore[assignment]
    if le.saturated:
        points += give(scored, "saturated", w["saturated"])
        evidence.append(f"saturated counters (true count is higher): "
                        f"{', '.join(sorted(le.saturated))}")
    if le.degraded:
        points += give(scored, "degraded", w["degraded"])
        evidence.append(le.degraded)
    if le.maintenance_flaps:
        evidence.append(f"{le.maintenance_flaps} flap(s) inside declared maintenance "
                        "(not counted)")
    if le.common_mode_flaps:
        evidence.append(f"{le.common_mode_flaps} flap(s) during a whole-switch/host event "
                        "(not counted)")
    if points <= 0:
        return None
    if (dust is not None and le.votes < VOTE_DUST and len(evidence) == 1
            and scored.keys() == {"votes"} and le.link not in dust.watched):
        dust.left_out += 1  # one of a failing pair's equal-cost paths, not a suspect
        return None
    ends = [_end(ev, g, p) for g, p in le.link]
    types = {ev.fabric.nodes[g].node_type for g, _ in le.link if g in ev.fabric.nodes}
    component, action = _verdict(ends, types, real, one_sided, ev, le)
    dates = [f.down_at for f in le.flaps if f.down_at] + [j["died_at"] for j in le.jobs]
    return Suspect(component, ends, points, flaps=len(le.flaps), downtime_s=round(downtime, 1),
                   jobs_failed=len(le.jobs),
                   gpu_hours_lost=round(sum(j["gpu_hours"] for j in le.jobs), 1),
                   evidence=evidence, action=action,
                   first_at=min(dates) if dates else None, last_at=max(dates) if dates else None,
                   rule_points=scored, survived_jobs=sorted({h.job_id for h in le.healthy}),
                   survived_points_off=round(cut, 2))


def _symbol_limit(measured: ber.PortBer, cfg: RankingSettings) -> ber.Limit:
    speed = (measured.speed or "").upper()
    return ber.symbol_limit(speed, model=measured.model, media=measured.media,
                            fec=cfg.ber_fec.get(speed), overrides=cfg.ber_limits)


def _ber_sentence(measured: ber.PortBer, limit: ber.Limit) -> str:
    """ "symbol BER 3.1e-13 over 4.0 h at 4X HDR (bits: ...), above the field limit 1e-13
    (where it comes from)"; with several intervals, the worst is judged and the whole window's
    BER shown beside it."""
    worst_h, all_h = measured.worst_seconds / 3600, measured.seconds / 3600
    span = f"over {worst_h:.1f} h"
    if measured.reported:
        span = f"as the port reported it ({measured.reported})"
    elif measured.intervals > 1:
        span = (f"in the worst of {measured.intervals} intervals ({worst_h:.1f} h; "
                f"{measured.ber:.1e} over all {all_h:.1f} h)")
    if measured.worst_ber > limit.ber:
        side = f"above the {limit.kind} limit {limit.ber:.0e}"
    elif measured.worst_ber > limit.warning:
        side = (f"above the warning level {limit.warning:.0e}, within the {limit.kind} limit "
                f"{limit.ber:.0e}")
    else:
        side = f"within the {limit.kind} limit {limit.ber:.0e}"
    bits = "" if measured.reported else f" (bits: {' / '.join(measured.bits_from)})"
    return (f"symbol BER {measured.worst_ber:.1e} {span} at {measured.width} {measured.speed}"
            f"{bits}, {side} ({limit.source})")


# What a flap that crossing jobs lived through still weighs: its chance of killing traffic is
# near nothing, so it stands only for an unstable link. Three of them weigh less than one long
# flap of a host cable whose host ran no job (1 point, its harm unknown: 9 in 10 a job on it
# would have died, DEADLY_PRIOR), and a little less than a lone reseat (0.5).
ABSORBED_FLAP = 0.3
# Before any job is seen crossing it, how likely a link's flaps longer than NCCL waits are to
# kill the traffic that crosses them: nothing absorbs them by default (NCCL's port failover is
# opt-in from 2.29, adaptive routing is a subnet manager mode), so 9 in 10.
DEADLY_PRIOR = 0.9


def _healthy_cut(le: LinkEvidence, until: datetime, flap_points: float) -> tuple[float, str]:
    """Points the link's flaps lose because jobs crossed them and completed (#15), and the
    evidence sentence.

    A flap longer than a job can wait kills the job if its traffic crosses the link, unless
    something carries that traffic (NCCL's port failover, adaptive routing). Each completed job
    that crossed a flap is a trial the flap failed: if the link's flaps were deadly, the chance
    of seeing it is (1 - w), w being how sure the crossing is (`survivors.py`: the rail known
    from the job's log 1, not known 0.5, a leaf uplink only the share of flows routing puts on
    that spine). What absorbs a flap (the rail's failover, the switches' routing) is the
    link's, not the flap's, so the trials of all its flaps multiply into one likelihood L; a job
    that crossed several of them counts once, at its surest (its traffic takes the same rail and
    routes each time, so its second flap is no new trial). The chance that the link's flaps
    kill traffic then goes from DEADLY_PRIOR to
    p = prior L / (prior L + 1 - prior). Every flap of the link then keeps the share p / prior
    of its weight (1 point, 2 more if long, its part of the downtime term) and weighs
    ABSORBED_FLAP for the rest. One sure crossing makes the flaps absorbed; uncertain ones take
    several (three jobs each 41 % sure to have crossed a leaf uplink take off about a quarter).

    Limits: the weights are estimates (NCCL's defaults and destination routing, not the job's
    real NCCL_IB_HCA or the switches' tables); a job idle on the network for the whole flap (a
    checkpoint, an evaluation) survives it without any failover; a link no job crossed keeps
    its points; the flaps never weigh less than ABSORBED_FLAP each (an unstable link stays
    listed); and killing evidence wins: a failed job blamed on the link or an HCA port-error
    event leave its points as they are (jobs without failover still die on it), and NCCL error
    pairs' votes keep their share v of the cut (v: the chance the link was the one that failed
    its pair; a whole vote or more keeps all of it)."""
    ids = sorted({h.job_id for h in le.healthy})
    shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
    head = f"survived by {len(ids)} job(s) that crossed it ({shown})"
    if le.jobs or le.port_errors or le.votes >= 1:
        why = (f"it killed {len(le.jobs)} job(s)" if le.jobs else
               f"the NCCL errors of {len(le.voters | le.port_errors)} failed job(s) point here")
        return 0.0, f"{head}, but {why}: killing evidence wins, no points taken off"
    surest: dict[str, HealthyJob] = {}
    for h in le.healthy:
        if h.job_id not in surest or h.weight > surest[h.job_id].weight:
            surest[h.job_id] = h
    likelihood = math.prod(1.0 - h.weight for h in surest.values())
    deadly = DEADLY_PRIOR * likelihood / (DEADLY_PRIOR * likelihood + 1 - DEADLY_PRIOR)
    keep = deadly / DEADLY_PRIOR
    real = [f for f in le.flaps if f.counted_from is None]
    idle = {id(f) for f in le.idle_flaps}  # weighed as flaps only (_link_suspect)
    full = kept = 0.0
    down = 0.0
    for f in real:
        lasted = f.duration_s if f.duration_s is not None else (
            (until - f.down_at).total_seconds() if f.down_at else 0.0)
        if id(f) in idle:
            lasted = 0.0
        weight = 1 + (2 if f.up_at is None or lasted >= NCCL_DEATH_S else 0)
        full += weight
        kept += keep * weight + (1 - keep) * ABSORBED_FLAP
        down += lasted
    cut = (full + 0.5 * math.log2(1 + down / NCCL_DEATH_S)) - (
        kept + 0.5 * math.log2(1 + keep * down / NCCL_DEATH_S))
    # Never below what the flaps weigh absorbed (a lone short flap already weighs that).
    cut = min(max(0.0, cut), max(0.0, flap_points - ABSORBED_FLAP * len(real)))
    # A failing pair spreads one vote over the links its routes may cross: a link's share is
    # the chance it was the one that failed that pair. Only that share of the cut stands back
    # for the killing evidence (one of 100 equal-cost links: 0.01; a sole path: all of it).
    voted = ""
    if le.votes:
        cut *= 1.0 - le.votes
        voted = (f"; the NCCL errors of {len(le.voters)} failed job(s) give it {le.votes:.2f} "
                 f"of a vote, so {1 - le.votes:.0%} of the cut stands")
    how: dict[tuple[str, float], int] = {}
    for h in surest.values():
        how[(h.how, h.weight)] = how.get((h.how, h.weight), 0) + 1
    sure = "; ".join(f"{n} x {text} ({w:.2f})" for (text, w), n in sorted(how.items()))
    crossed = len({h.flap for h in le.healthy})
    return cut, (f"{head}: its flaps did not kill traffic (a failover, adaptive routing or an "
                 f"unused port, not a deadly cable); {crossed} of its {len(real)} flap(s) "
                 f"crossed; how sure each crossing is: {sure}; the chance its flaps kill what "
                 f"crosses them falls from {DEADLY_PRIOR:.0%} to {deadly:.0%}{voted}: "
                 f"{cut:.1f} points off")


def _job_timing(job: dict[str, Any]) -> str:
    """How a job's death was placed in time, and which NCCL rule applied."""
    lo, hi = job["fault_between"]
    when = (f"at {lo:%H:%M:%S}" if lo == hi
            else f"between {lo:%H:%M:%S} and {hi:%H:%M:%S}")
    counted = "; the link-down is known only from LinkDownedCounter" if job.get(
        "counted_flap") else ""
    note = f"; {job['state_note']}" if job.get("state_note") else ""
    return (f"job {job['job_id']}: the fault began {when} (from {job['timed_by']}); "
            f"{job['nccl_rule']}{counted}{note}")


def _where(end: dict[str, Any]) -> str:
    return f"{end['name']} {end['label'] or end['port']}".strip()


def _verdict(ends: list[dict[str, Any]], types: set[NodeType], flaps: list[Any],
             one_sided: Any, ev: Evidence, le: LinkEvidence) -> tuple[str, str]:
    span = " <-> ".join(_where(e) for e in ends)
    if one_sided is not None and not le.flaps:
        receiver = next(e for e in ends if (e["guid"], e["port"]) == tuple(one_sided))
        sender = next(e for e in ends if e is not receiver)
        return ("transceiver",
                f"Errors are received only at {_where(receiver)}: clean the fibre ends and "
                f"reseat, then replace the transceiver at {_where(sender)} (the sending side), "
                f"then the one at {_where(receiver)}; replace the cable if errors stay.")
    if len(ends) == 1:
        return ("switch_port" if NodeType.SWITCH in types else "hca",
                f"Check {span}: its peer is unknown (no topology snapshot shows this port "
                "cabled); inspect the port and its cable.")
    if len(flaps) == 1 and (flaps[0].duration_s or 0) < NCCL_DEATH_S and not le.jobs:
        return ("cable", f"Reseat the cable {span} and watch it; replace it if it flaps again.")
    return ("cable", f"Replace the cable {span} (both ends: {ends[0]['label']} on "
                     f"{ends[0]['name']}, {ends[1]['label']} on {ends[1]['name']}); if it "
                     "flaps again after the swap, replace the transceivers, then suspect the "
                     "switch port.")


def _job_points(w: Weights, jobs: int, gpu_hours: float) -> float:
    """The `killed_job` rule: per failed job, plus the GPU-hours lost (capped)."""
    return w["killed_job"] * jobs + min(w.param("killed_job", "gpu_cap"),
                                        w.param("killed_job", "gpu_hour") * gpu_hours)


def _event_points(w: Weights, rule: str, nev: NodeEvent) -> tuple[float, dict[str, float]]:
    """A switch or host event: the event itself, and the jobs that died with it."""
    scored: dict[str, float] = {}
    points = w.give(scored, rule, w[rule])
    points += w.give(scored, "killed_job", _job_points(
        w, len(nev.jobs), sum(j["gpu_hours"] for j in nev.jobs)))
    return points, scored


def _host_suspect(ev: Evidence, nev: NodeEvent, w: Weights) -> Suspect:
    """A host that went away (issue #20): its rails' flaps fold under it, its jobs died with
    it, and the action says to check the host, not its cables."""
    name = nev.host or nev.guid
    down = ((nev.up_at - nev.at).total_seconds() if nev.up_at else
            (ev.until - nev.at).total_seconds())
    gpu_hours = sum(j["gpu_hours"] for j in nev.jobs)
    points, scored = _event_points(w, "host_event", nev)
    evidence = []
    if nev.flaps:
        back = f" and came back at {_fmt(nev.up_at)}" if nev.up_at else ", still down"
        if nev.rails_down >= 2:
            evidence.append(f"{nev.rails_down} of its {nev.rails} rails went down within "
                            f"{COMMON_MODE_WINDOW.total_seconds():.0f} s "
                            f"at {_fmt(nev.at)}{back} ({down:.0f} s): one host event, not "
                            f"{nev.rails_down} cable faults")
        else:
            evidence.append(f"its {'only rail' if nev.rails == 1 else 'rail'} went down at "
                            f"{_fmt(nev.at)}{back} ({down:.0f} s), as the host went away")
    evidence += nev.said
    if nev.jobs:
        ids = ", ".join(sorted({j["job_id"] for j in nev.jobs})[:5])
        states = sorted({j["state"] for j in nev.jobs})
        evidence.append(f"{len(nev.jobs)} job(s) died with it ({ids}; {', '.join(states)}), "
                        f"{gpu_hours:.0f} GPU-hours lost")
        evidence += [f"job {j['job_id']}: {j['host_rule']}"
                     for j in sorted(nev.jobs, key=lambda j: j["job_id"])[:3]]
    what = (f"rebooted at {_fmt(nev.boot_at)}" if nev.boot_at is not None
            else f"went away at {_fmt(nev.at)}")
    died = f"{len(nev.jobs)} job(s) died with it; " if nev.jobs else ""
    action = (f"{name} {what}; {died}check the host (kernel log, BMC/SEL, GPU Xid, power, "
              "HCA firmware); do not replace its cables.")
    return Suspect("host", [{"name": name, "guid": nev.guid, "port": None, "label": ""}],
                   points, flaps=len(nev.flaps), downtime_s=round(down, 1),
                   jobs_failed=len(nev.jobs), gpu_hours_lost=round(gpu_hours, 1),
                   evidence=evidence, action=action, first_at=nev.at,
                   last_at=nev.up_at, rule_points=scored)


def _node_suspect(ev: Evidence, nev: NodeEvent, w: Weights) -> Suspect:
    """A whole-switch event (many of its ports down together), or a host that went away."""
    if nev.host is not None:
        return _host_suspect(ev, nev, w)
    node = ev.fabric.nodes.get(nev.guid)
    name = node.name if node else nev.guid
    down = ((nev.up_at - nev.at).total_seconds() if nev.up_at else
            (ev.until - nev.at).total_seconds())
    points, scored = _event_points(w, "switch_event", nev)
    evidence = [f"{len(nev.ports)} ports went down within "
                f"{COMMON_MODE_WINDOW.total_seconds():.0f} s at {_fmt(nev.at)}"
                f"{' and came back at ' + _fmt(nev.up_at) if nev.up_at else ', still down'}"
                f" ({down:.0f} s): one switch event, not {len(nev.ports)} cable faults"]
    if nev.jobs:
        evidence.append(f"{len(nev.jobs)} failed job(s) "
                        f"({', '.join(sorted({j['job_id'] for j in nev.jobs})[:5])})")
    action = (f"Switch {name} went down as a whole at {_fmt(nev.at)} (reboot or power): "
              "check its uptime, logs and power supplies; do not replace its cables.")
    return Suspect("switch", [{"name": name, "guid": nev.guid, "port": None, "label": ""}],
                   points, flaps=len(nev.flaps), downtime_s=round(down, 1),
                   jobs_failed=len(nev.jobs),
                   gpu_hours_lost=round(sum(j["gpu_hours"] for j in nev.jobs), 1),
                   evidence=evidence, action=action, first_at=nev.at, last_at=nev.up_at,
                   rule_points=scored)


def rank(ev: Evidence, cfg: RankingSettings | None = None) -> list[Suspect]:
    """Every suspect of the evidence, best first. The weights are the rules table's with the
    site's `[ranking] weights` (auditor/analyse/rules.py)."""
    cfg = cfg or RankingSettings()
    w = Weights(cfg.weights)
    # A link of a failing pair's many equal-cost paths whose only evidence is its sliver of the
    # pair's vote is not listed (VOTE_DUST), unless strong optics watches make it a transceiver
    # suspect: the evidence says how many were left out.
    watched = {link for link, watches in ev.watch.by_link().items()
               if any(wt.strong(cfg.optics) for wt in watches)} if ev.watch else set()
    dust = _Dust(watched)
    out = [s for le in ev.links.values()
           if (s := _link_suspect(ev, le, cfg, w, dust)) is not None]
    ev.vote_dust_links = dust.left_out
    out += [_node_suspect(ev, n, w) for n in ev.nodes]
    _optics_verdicts(ev, out, cfg, w)
    out.sort(key=lambda s: (-s.points, s.first_at or ev.until))
    return out


# -- transceiver verdicts from diagnostics trends (issue #14) -----------------------------------
# Kept apart from the rules above: auditor/analyse/optics.py finds the trends, correlate.gather
# puts them on the Evidence, and this turns the strong ones into `transceiver` verdicts.


def _optics_verdicts(ev: Evidence, out: list[Suspect], cfg: RankingSettings,
                     w: Weights) -> None:
    """A link whose module trends are strong (or that flapped and has a trend) becomes a
    `transceiver` suspect, with the lane in its evidence; a link with strong trends and no other
    evidence becomes one on its own (2 points plus 2 x the watch's strength: about a flapping
    link's weight, below any link that killed a job)."""
    if ev.watch is None or not ev.watch.watches:
        return
    links = {tuple(sorted((e["guid"], e["port"]) for e in s.ends)): s for s in out
             if s.component not in ("switch", "host")}
    for link, watches in sorted(ev.watch.by_link().items()):
        suspect = links.get(link)
        flapped = suspect is not None and suspect.flaps > 0
        strong = [w for w in watches if w.strong(cfg.optics)
                  or (flapped and w.strength >= FLAPPED_MIN)]
        if not strong:
            continue
        best = max(strong, key=lambda w: w.strength)
        if suspect is None:
            suspect = Suspect("transceiver", [_end(ev, g, p) for g, p in link], 0.0)
            suspect.points += w.give(suspect.rule_points, "optics", w.param("optics", "alone"))
            out.append(suspect)
        suspect.points += w.give(suspect.rule_points, "optics", w["optics"] * best.strength)
        suspect.component = "transceiver"
        # A hot module's every lane trends with it: the two strongest say it, the rest count.
        strong.sort(key=lambda w: -w.strength)
        suspect.evidence += [optics_evidence(w) for w in strong[:2]]
        if len(strong) > 2:
            suspect.evidence.append(f"{len(strong) - 2} more optics watch(es) on this link")
        suspect.action = optics_action(best)
        suspect.optics = [watch_json(i, w, cfg.optics) for i, w in enumerate(strong, 1)]


class EndJSON(TypedDict):
    name: str
    guid: str
    port: int | None
    label: str


class SuspectJSON(TypedDict):
    rank: int
    component: str
    score: float
    ends: list[EndJSON]
    flaps: int
    downtime_s: float
    jobs_failed: int
    gpu_hours_lost: float
    evidence: list[str]
    action: str
    first_at: str | None
    last_at: str | None
    optics: list[WatchJSON]  # added for #14: the watches behind a transceiver verdict
    rules: list[str]  # added for #15: the rules that ranked it (RULES), weightiest first
    survived_jobs: list[str]
    survived_points_off: float


def suspect_json(rank_no: int, s: Suspect) -> SuspectJSON:
    return {
        "rank": rank_no,
        "component": s.component,
        "score": s.score,
        "ends": [{"name": e["name"], "guid": e["guid"], "port": e["port"], "label": e["label"]}
                 for e in s.ends],
        "flaps": s.flaps,
        "downtime_s": s.downtime_s,
        "jobs_failed": s.jobs_failed,
        "gpu_hours_lost": s.gpu_hours_lost,
        "evidence": s.evidence,
        "action": s.action,
        "first_at": s.first_at.isoformat() + "Z" if s.first_at else None,
        "last_at": s.last_at.isoformat() + "Z" if s.last_at else None,
        "optics": s.optics,
        "rules": s.rules,
        "survived_jobs": s.survived_jobs,
        "survived_points_off": s.survived_points_off,
    }


def as_json(ev: Evidence, suspects: list[Suspect], limit: int | None = None) -> dict[str, Any]:
    shown = suspects[:limit] if limit else suspects
    return {
        "window": {"since": ev.since.isoformat() + "Z", "until": ev.until.isoformat() + "Z"},
        "jobs": {"failed": ev.jobs_failed, "network": ev.jobs_network,
                 "other_causes": ev.jobs_other, "unexplained": ev.jobs_unexplained,
                 "killed_by_host": ev.jobs_host},
        "suspects": [suspect_json(i, s) for i, s in enumerate(shown, 1)],
        # links only NCCL pair votes below VOTE_DUST point at: not listed (issue #25)
        "vote_dust_links": ev.vote_dust_links,
    }
