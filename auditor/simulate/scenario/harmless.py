"""Harmless flaps (`harmless_flaps`, off by default): sound links whose long flaps something
absorbs, so every job whose traffic crosses them runs on to its end. They take turns: a leaf
uplink (cause `adaptive_routing`: the leaf sends the traffic over its other uplinks as soon as
the port goes down) and a host's HCA cable (cause `port_failover`: NCCL's port failover, 2.29+
when enabled, moves the rail's connections to another port). Each gets 2-3 flaps longer than
any job of the scenario can wait (1.5 x the longest death time its releases and timeouts give,
at least 3 min, up to 12 min more), at least 30 min apart, on a link no fault, reboot,
maintenance, reseat or background counter touches. LinkDownedCounter counts them; the switch
log shows them; truth.json lists them under `harmless_links` (not `bad_cables`) with, per flap,
the jobs whose traffic crossed it: on a host cable the job on that host, on a leaf uplink the
jobs with hosts under the leaf and outside it (adaptive routing spreads the flows leaving a
leaf over all its uplinks). The leaf uplinks imply that the site runs adaptive routing. With
`lfts` a leaf uplink's `crossed_by` is route-exact: the jobs whose connections' routes in the
forwarding tables of the moment crossed it (the flows AR then moved to the leaf's other
uplinks), and `ar_crossed_by` holds the jobs AR could have put on it (the set above).

The COMPLETED jobs that crossed one of these flaps also leave a log, as a site that keeps every
job's output has: NCCL's start-up lines in the job's own style (at INFO the `NET/IB : Using`
lists that name its rails; at WARN only the version banner). They draw from streams of their
own, so the faults, the jobs and their fates are those of the same seed without the option.
"""

from __future__ import annotations

import random

from auditor.simulate.scenario.clock import _Clock
from auditor.simulate.scenario.fabric import _Fabric
from auditor.simulate.scenario.faults import _Flap, _Plan, _port_keys, _spaced_times
from auditor.simulate.scenario.formats import _JobLogs
from auditor.simulate.scenario.jobs import _Job, _Routes
from auditor.simulate.scenario.options import (
    CAUSE_ADAPTIVE_ROUTING,
    CAUSE_PORT_FAILOVER,
    Scenario,
)
from auditor.simulate.scenario.releases import ib_timeout_default, nccl_death_s
from auditor.simulate.scenario.truth import HarmlessLink, Interval

_GAP_S = 1800.0
_MIN_S = 180.0
_SPREAD_S = 720.0


def _plan_harmless(sc: Scenario, fab: _Fabric, plan: _Plan, rng: random.Random) -> None:
    """Add `sc.harmless_flaps` absorbed links and their flaps to `plan`."""
    if not sc.harmless_flaps:
        return
    total = sc.days * 86400.0
    longest = max(nccl_death_s(ib_timeout_default(v) if t is None else t)
                  for v in sc.nccl_versions for t in sc.ib_timeouts)
    lo = max(_MIN_S, 1.5 * longest)
    touched = {f.link for f in plan.flaps} | {b[0] for b in plan.bad}
    touched |= {i for i in range(len(fab.links))
                if any(key in plan.ports for key in _port_keys(fab, i))}
    free = {
        "switch": [i for i in range(len(fab.links))
                   if i not in touched and fab.links[i].hca is None],
        "host": [i for i in range(len(fab.links))
                 if i not in touched and fab.links[i].hca is not None],
    }
    for candidates in free.values():
        rng.shuffle(candidates)
    for k in range(sc.harmless_flaps):
        kinds = ("switch", "host") if k % 2 == 0 else ("host", "switch")
        kind = next((x for x in kinds if free[x]), None)
        if kind is None:
            raise ValueError("not enough healthy links for harmless_flaps")
        link = free[kind].pop()
        cause = CAUSE_ADAPTIVE_ROUTING if kind == "switch" else CAUSE_PORT_FAILOVER
        n = rng.randint(2, 3)
        mine = []
        for t in _spaced_times(rng, n, 600.0, total - 900.0 - lo - _SPREAD_S, _GAP_S):
            f = _Flap(link, t, t + rng.uniform(lo, lo + _SPREAD_S), cause)
            mine.append(f)
            plan.flaps.append(f)
            for key in _port_keys(fab, link):
                plan.port(key).downs.append(t)
        plan.harmless.append((link, cause, mine))
    plan.flaps.sort(key=lambda f: (f.down, f.link))


def _crossed(fab: _Fabric, link: int, f: _Flap, jobs: list[_Job]) -> list[_Job]:
    """The jobs running through the whole flap whose traffic crossed the link (on a leaf
    uplink: could have, adaptive routing spreading the flows that leave the leaf)."""
    lk = fab.links[link]
    out = []
    for job in jobs:
        if len(job.hosts) < 2 or job.start > f.down or (job.end is not None and job.end < f.up):
            continue
        if lk.hca is not None:
            if fab.hcas[lk.hca].host in job.hosts:
                out.append(job)
            continue
        under = [h for h in job.hosts
                 if any(fab.links[fab.hca_link[c]].leaf == lk.leaf for c in fab.host_hcas[h])]
        if under and len(under) < len(job.hosts):
            out.append(job)
    return out


def _harmless_truth(fab: _Fabric, plan: _Plan, jobs: list[_Job], clock: _Clock,
                    rng: random.Random, routes: _Routes | None = None
                    ) -> tuple[HarmlessLink, ...]:
    """The truth records, and a log for each COMPLETED job that crossed a harmless flap (the
    same jobs with or without `routes`: the route-exact ones are among them)."""
    logs = _JobLogs(fab, clock, rng)
    out = []
    for link, cause, flaps in plan.harmless:
        crossed = [_crossed(fab, link, f, jobs) for f in flaps]
        for job in sorted({j.job_id: j for c in crossed for j in c}.values(),
                          key=lambda j: j.job_id):
            if job.state == "COMPLETED" and job.log is None:
                job.log = logs.render(job, logs.header(job))
        spread: tuple[tuple[str, ...], ...] | None = None
        if routes is not None and fab.links[link].hca is None:
            spread = tuple(tuple(j.label for j in c) for c in crossed)
            crossed = [[j for j in c if routes.ring_pair(j.hosts, link, f.down) is not None]
                       for c, f in zip(crossed, flaps, strict=True)]
        out.append(HarmlessLink(
            fab.link_id(link), "host" if fab.links[link].hca is not None else "switch", cause,
            fab.ends(link),
            tuple(Interval(clock.at(f.down), clock.at(f.up), round(f.up - f.down, 6))
                  for f in flaps),
            tuple(tuple(j.label for j in c) for c in crossed), spread))
    return tuple(out)
