"""A silent uplink (`silent_uplink`, off by default): one leaf-spine link that stops passing
traffic once, for a little longer than the death time of the job whose traffic it carried, and
leaves no other trace. Its port never goes down, so no switch logs it, LinkDownedCounter does
not move and no trap reaches the subnet manager (no reroute); only that job's NCCL errors tell.
It is the issue #23 case "an uplink that killed one job is found from that job's errors alone":
without the forwarding tables every uplink of the two leaves is a candidate, with them the
connection's path.

Placed once the jobs are known: a dry run of the schedule gives the running jobs whose ring
crosses a leaf uplink that no fault, flap or counter touches; the stall goes on one such link
while one such job runs (death time + 1-5 s, inside the job and the window), and a second run
keeps it only if the stall killed that job and no other (so exactly one job dies of it, unless
`host_reboots` then crash the job's host first). It draws from streams of its own; the link is a
`bad_cables` entry (fault `silent_stall`), not a flap.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from auditor.simulate.scenario.fabric import _Fabric
from auditor.simulate.scenario.faults import _Flap, _Plan, _port_keys
from auditor.simulate.scenario.jobs import _Job, _Routes
from auditor.simulate.scenario.options import FAULT_SILENT, Scenario

_TRIES = 200
_MARGIN_S = 120.0  # the stall starts this long after the job's start and ends before its end


def plan_silent(sc: Scenario, fab: _Fabric, plan: _Plan, rng: random.Random,
                schedule: Callable[[], list[_Job]], routes: _Routes | None) -> None:
    """Add the stall to `plan` (`plan.silent` and `plan.bad`); `schedule` places the jobs with
    the plan as it is. A scenario with no job to kill this way is refused."""
    total = sc.days * 86400.0
    touched = {f.link for f in plan.flaps} | {b[0] for b in plan.bad}
    touched |= {i for i in range(len(fab.links))
                if any(key in plan.ports for key in _port_keys(fab, i))}
    free = {i for i in range(len(fab.links)) if fab.links[i].hca is None and i not in touched}
    jobs = schedule()
    candidates = [j for j in jobs if len(j.hosts) > 1 and j.end is not None
                  and len({fab.host_su[h] for h in j.hosts}) > 1]
    rng.shuffle(candidates)
    for job in candidates[:_TRIES]:
        assert job.end is not None  # noqa: S101 - filtered above
        length = job.style.death_s + rng.uniform(1.0, 5.0)
        lo, hi = job.start + _MARGIN_S, min(job.end, total - 900.0) - length - _MARGIN_S
        if hi <= lo:
            continue
        at = rng.uniform(lo, hi)
        ring = (routes.ring_links(job.hosts, at) if routes is not None
                else fab.ring_links(job.hosts))
        links = sorted(set(ring) & free)
        if not links:
            continue
        link = rng.choice(links)
        stall = _Flap(link, at, at + length, FAULT_SILENT)
        plan.silent.append(stall)
        killed = [j for j in schedule() if j.culprit == link]
        if [j.job_id for j in killed] == [job.job_id]:
            plan.bad.append((link, FAULT_SILENT, "cable", [stall], (), None))
            return
        plan.silent.remove(stall)
    raise ValueError("silent_uplink: no running job crosses a free leaf uplink long enough; "
                     "ask for more days, jobs or leaves")
