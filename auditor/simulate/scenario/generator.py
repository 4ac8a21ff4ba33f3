"""`generate`: the fabric, the faults and the jobs drawn from their seeded streams, every
file written and the ground truth assembled; `REALISTIC`, the options of a large cluster."""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from pathlib import Path
from typing import Unpack

from auditor.simulate.scenario.campaign import plan_campaign
from auditor.simulate.scenario.clock import _Clock, _iso
from auditor.simulate.scenario.fabric import (
    _build_fabric,
    _cabling,
    _Fabric,
    _guid,
    _ibnetdiscover,
    _inventory,
)
from auditor.simulate.scenario.faults import _Flap, _lost_switches, _NodeKey, _Plan, _plan_faults
from auditor.simulate.scenario.formats import _ibqueryerrors, _switch_log
from auditor.simulate.scenario.harmless import _harmless_truth, _plan_harmless
from auditor.simulate.scenario.jobs import _assign_sacct_ids, _Job, _sacct, _schedule_jobs
from auditor.simulate.scenario.optics import PART, ethtool_m, file_name, plan_ageing, readings
from auditor.simulate.scenario.optics import truth as optics_truth
from auditor.simulate.scenario.options import Scenario, ScenarioOptions
from auditor.simulate.scenario.reboots import (
    ATTEMPTS,
    _Planner,
    controller,
    list_boots,
    reboot_truth,
    slurm_records,
)
from auditor.simulate.scenario.truth import (
    AgeingOptic,
    BadCable,
    FlapRecord,
    GroundTruth,
    Interval,
    Maintenance,
    Snapshot,
    SwitchReboot,
)

# Job evidence as a large cluster writes it (the realistic kind of the ranking benchmark; needs
# `leaves` a multiple of 8): a mix of NCCL releases, most at their default NCCL_IB_TIMEOUT and
# some pinned to 22, 30 % of jobs at NCCL_DEBUG=WARN, no NCCL stamps (an old PyTorch wheel or
# NCCL_DEBUG_TIMESTAMP_LEVELS=none), launcher prefixes, sacct steps and one switch whose
# syslog never reached the collector.
REALISTIC: ScenarioOptions = {
    "hcas_per_host": 8,
    "nccl_versions": ("2.18.3", "2.19.4", "2.21.5", "2.23.4", "2.27.7", "2.29.2"),
    "ib_timeouts": (None, None, None, 22),
    "info_share": 0.7,
    "nccl_stamps": False,
    "channel_lines": True,
    "launcher_prefixes": True,
    "sacct_steps": True,
    "lost_switch_logs": 1,
}


def generate(out_dir: Path, *, seed: int, spines: int, leaves: int, hosts_per_leaf: int,
             days: float = 1.0, **options: Unpack[ScenarioOptions]) -> GroundTruth:
    """Write a scenario's files under `out_dir` and return (and write) its ground truth."""
    return write_scenario(out_dir, Scenario(seed=seed, spines=spines, leaves=leaves,
                                            hosts_per_leaf=hosts_per_leaf, days=days, **options))


def write_scenario(out_dir: Path, sc: Scenario) -> GroundTruth:
    """Write `sc` under `out_dir`. Files this module wrote there before (job logs, counter
    snapshots) are removed first so a re-run with other settings leaves no stale ones."""

    def rng_for(part: str) -> random.Random:
        # One stream per part: changing the job count does not move the faults.
        return random.Random(f"{sc.seed}:{part}")  # noqa: S311 - synthetic data, not secrets

    clock = _Clock(sc.start)
    total = sc.days * 86400.0
    fab = _build_fabric(sc, rng_for("fabric"))
    plan = _plan_faults(sc, fab, rng_for("faults"))
    # Ageing optics add their flaps to the plan before anything reads it; their own stream.
    optics = plan_ageing(sc, fab, plan, rng_for("optics")) if sc.optics else None
    # The outcomes campaign (#15) adds its flaps before anything reads the plan; its own stream.
    campaign = plan_campaign(sc, fab, plan, rng_for("outcomes")) if sc.outcomes else None
    _plan_harmless(sc, fab, plan, rng_for("harmless"))
    routing = None
    if sc.lfts:
        # The SM's tables over the window follow from the leaf-spine flaps, all planned now
        # (host reboots add host flaps only). Imported here: numpy only when asked for.
        from auditor.simulate.scenario.routing import _Routing

        routing = _Routing(fab, plan)
    if sc.silent_uplink:
        from auditor.simulate.scenario.silent import plan_silent

        plan_silent(sc, fab, plan, rng_for("silent"),
                    lambda: _schedule_jobs(sc, fab, plan, clock, rng_for("jobs"), None, routing),
                    routing)
    rng_log = rng_for("logs")
    skew = [round(rng_log.uniform(-1, 1) * sc.max_clock_skew_s, 3) for _ in fab.switches]

    for sub in ("topology", "logs", "counters", "jobs/logs"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    for stale in [*(out_dir / "jobs" / "logs").glob("*.log"),
                  *(out_dir / "counters").glob("ibqueryerrors-*.txt"),
                  *(out_dir / "optics").glob("*/mlx5_*.txt"),
                  *(out_dir / "boots").glob("*.txt"),
                  *(out_dir / "slurm").glob("events.txt"),
                  *(out_dir / "slurm").glob("slurmctld.log"),
                  *(out_dir / "lfts").glob("dump_lfts-*.txt")]:
        stale.unlink()
    for folder in (out_dir / "boots", out_dir / "slurm", out_dir / "lfts"):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # host_records: a folder only where the site keeps the records

    def write(rel: str, text: str) -> None:
        (out_dir / rel).write_text(text, encoding="utf-8", newline="\n")

    # Jobs first (their stream is their own): the lost switch logs depend on which jobs died.
    # Hosts crash (host_reboots) while the jobs are placed: a crash needs a job running.
    ctl = controller(fab, rng_for("slurmctld"))
    planner: _Planner | None = None
    if sc.host_reboots:
        for attempt in range(ATTEMPTS):
            planner = _Planner(sc, fab, plan, clock, ctl,
                               rng_for("reboots" if attempt == 0 else f"reboots:{attempt}"))
            jobs = _schedule_jobs(sc, fab, plan, clock, rng_for("jobs"), planner, routing)
            if planner.complete:
                break
        else:
            raise ValueError(f"no running job to crash a host under for {sc.host_reboots} "
                             "host reboot(s); ask for fewer, or more days or jobs")
        assert planner is not None  # noqa: S101 - set in the loop
        planner.apply(plan)
    else:
        jobs = _schedule_jobs(sc, fab, plan, clock, rng_for("jobs"), None, routing)
    killed = {j.culprit for j in jobs if j.culprit is not None}
    lost = _lost_switches(sc, fab, plan, killed, rng_for("lost"))
    arrays: list[str] = []
    het: int | None = None
    rng_sacct = rng_for("sacct")
    if sc.sacct_steps:
        arrays, het = _assign_sacct_ids(jobs, rng_sacct)
        for job in jobs:
            if job.sacct_id is not None:
                if job.network is not None:
                    job.network = replace(job.network, job_id=job.sacct_id)
                if job.other is not None:
                    job.other = replace(job.other, job_id=job.sacct_id)

    harmless = _harmless_truth(fab, plan, jobs, clock, rng_for("harmless-logs"), routing)

    topology_at = 120.0 + rng_log.uniform(0, 60)
    write("topology/ibnetdiscover.txt", _ibnetdiscover(fab, clock.at(topology_at)))
    write("logs/switches.log", _switch_log(sc, fab, plan, clock, skew, rng_log, set(lost),
                                           rng_for("reboot-logs") if planner else None))

    node_order: list[_NodeKey] = [("S", i) for i in range(len(fab.switches))]
    node_order += [("H", i) for i in range(len(fab.hcas))]
    snapshots: list[Snapshot] = []
    k = 0
    while k * sc.snapshot_every_h * 3600.0 < total:
        t = k * sc.snapshot_every_h * 3600.0
        at = clock.at(t)
        name = f"{at:%H%M}" if sc.days <= 1 else f"{at:%Y%m%d-%H%M}"
        rel = f"counters/ibqueryerrors-{name}.txt"
        write(rel, _ibqueryerrors(fab, plan, t, node_order))
        snapshots.append(Snapshot(rel, at))
        k += 1

    write("jobs/sacct.txt", _sacct(fab, jobs, clock, sc.sacct_steps, het, rng_sacct))
    for job in jobs:
        if job.log is not None:
            write(f"jobs/logs/{job.label}.log", job.log)

    write("hosts", "# IPoIB (ib0) addresses of the compute nodes\n127.0.0.1\tlocalhost\n" + "".join(
        f"{ip}\t{host} {host}-ib0\n" for host, ip in zip(fab.hosts, fab.ips, strict=True)))
    maint = sorted(plan.maintenance, key=lambda m: (m[1], m[0]))
    write("maintenance.csv", "target,start,end,reason\n" + "".join(
        f"{fab.hosts[h]},{_iso(clock.at(s)).replace('.000000', '')},"
        f"{_iso(clock.at(e)).replace('.000000', '')},re-image OPS-{4000 + n}\n"
        for n, (h, s, e, _) in enumerate(maint)))

    if sc.records in ("slurm", "both"):
        (out_dir / "slurm").mkdir(exist_ok=True)
        events, ctl_log = slurm_records(sc, fab, plan, jobs, planner, ctl, clock,
                                        rng_for("slurm"))
        write("slurm/events.txt", events)
        write("slurm/slurmctld.log", ctl_log)
    if sc.records in ("boots", "both"):
        (out_dir / "boots").mkdir(exist_ok=True)
        for rel, text in list_boots(sc, fab, plan, planner, clock, rng_for("boots")).items():
            write(rel, text)

    write("inventory.csv", _inventory(fab))
    if campaign is not None:
        write("cabling.csv", campaign.cabling(fab))  # the lots (optics parts are not kept then)
    else:
        write("cabling.csv", _cabling(fab, None if optics is None else {
            m.hca: (PART, m.serial) for m in optics.modules}))
    ageing: tuple[AgeingOptic, ...] = ()
    if optics is not None:
        for reading in readings(sc, fab, optics):
            rel = file_name(reading, clock)
            (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            write(rel, ethtool_m(reading))
            # A capture is written when it is read: `ingest --kind ethtool-module` takes the
            # file's modification time as the read time (its name says it too).
            stamp = clock.at(reading.at).timestamp()
            os.utime(out_dir / rel, (stamp, stamp))
        ageing = optics_truth(fab, optics, plan, clock)
    crashes, host_failed = reboot_truth(fab, planner, clock, sc.records)
    truth = replace(_truth(sc, fab, plan, jobs, clock, skew, topology_at, snapshots, maint, lost,
                           arrays, het, ageing), harmless_links=harmless,
                    host_reboots=crashes, host_failed_jobs=host_failed, host_records=sc.records)
    if routing is not None:
        # The tables the sweep would capture: beside the topology snapshot, and after each
        # change the SM made (routing.py); every flap is planned by now (host reboots too).
        from auditor.simulate.scenario.routing import capture_name

        (out_dir / "lfts").mkdir(exist_ok=True)
        routing.see_flaps(plan)
        shots = []
        for t, v in routing.captures(topology_at, total):
            rel = capture_name(clock, t, sc.days)
            text, absent, unrouted = routing.dump(v, t)
            write(rel, text)
            shots.append((t, v, rel, absent, unrouted))
        info, captures, reroutes = routing.truth(clock, shots, plan)
        truth = replace(truth, routing=info, lft_captures=captures, reroutes=reroutes)
    data = truth.to_json()
    if campaign is not None:
        write("replacements.csv", campaign.replacements_csv(fab, clock))
        data["outcomes"] = campaign.truth(fab, clock)
    else:
        (out_dir / "replacements.csv").unlink(missing_ok=True)  # from an earlier campaign
    write("truth.json", json.dumps(data, indent=1) + "\n")
    if sc.vendor_formats:
        # Written from the files above (the same evidence, skews and lost logs), then listed.
        from auditor.simulate.vendor_formats import write_scenario_formats

        data["vendor_formats"] = write_scenario_formats(out_dir)
        write("truth.json", json.dumps(data, indent=1) + "\n")
    else:
        import shutil

        shutil.rmtree(out_dir / "vendor", ignore_errors=True)  # from an earlier run
    return truth


def _truth(sc: Scenario, fab: _Fabric, plan: _Plan, jobs: list[_Job], clock: _Clock,
           skew: list[float], topology_at: float, snapshots: list[Snapshot],
           maint: list[tuple[int, float, float, list[_Flap]]], lost: list[int],
           arrays: list[str], het: int | None,
           ageing: tuple[AgeingOptic, ...] = ()) -> GroundTruth:
    def interval(f: _Flap) -> Interval:
        return Interval(clock.at(f.down), clock.at(f.up), round(f.up - f.down, 6))

    def record(f: _Flap) -> FlapRecord:
        return FlapRecord(fab.link_id(f.link), fab.ends(f.link), clock.at(f.down), clock.at(f.up),
                          round(f.up - f.down, 6), f.cause,
                          tuple(fab.switches[sw].name for sw, _ in fab.logging_ends(f.link)
                                if sw not in lost))

    bad = tuple(
        BadCable(fab.link_id(link), "host" if fab.links[link].hca is not None else "switch",
                 fault, cause, fab.ends(link), tuple(interval(f) for f in fl), sides,
                 clock.at(onset) if onset is not None else None)
        for link, fault, cause, fl, sides, onset in plan.bad)
    reboots = tuple(
        SwitchReboot(fab.switches[sw].name, _guid(fab.switches[sw].guid),
                     "leaf" if fab.switches[sw].leaf else "spine", clock.at(at),
                     clock.at(last_up), tuple(fab.link_id(i) for i in links))
        for sw, at, last_up, links in plan.reboots)
    maintenance = tuple(
        Maintenance(fab.hosts[h], clock.at(s), clock.at(e), f"re-image OPS-{4000 + n}",
                    tuple(fab.link_id(fab.hca_link[c]) for c in fab.host_hcas[h]),
                    tuple(interval(f) for f in fl))
        for n, (h, s, e, fl) in enumerate(maint))
    states: dict[str, int] = {}
    for job in jobs:
        state = job.state.split(" ")[0]
        states[state] = states.get(state, 0) + 1
    fabric = {
        "spines": sc.spines, "leaves": sc.leaves, "switches": len(fab.switches),
        "hosts": len(fab.hosts), "hcas": len(fab.hcas), "links": len(fab.links),
        "host_links": sc.host_links, "switch_links": sc.switch_links,
        "hcas_per_host": sc.hcas_per_host,
    }
    if sc.cores:
        fabric |= {"cores": sc.cores, "pods": sc.pods}
    return GroundTruth(
        seed=sc.seed, scenario=sc.params(), window_start=clock.at(0.0),
        window_end=clock.at(sc.days * 86400.0), topology_at=clock.at(topology_at), fabric=fabric,
        clock_skew_s={s.name: skew[i] for i, s in enumerate(fab.switches)},
        snapshots=tuple(snapshots), bad_cables=bad, switch_reboots=reboots,
        maintenance=maintenance, reseat_flaps=tuple(record(f) for f in plan.reseats),
        flaps=tuple(record(f) for f in plan.flaps), jobs_total=len(jobs), job_states=states,
        network_failed_jobs=tuple(j.network for j in jobs if j.network is not None),
        non_network_failed_jobs=tuple(j.other for j in jobs
                                      if j.other is not None and j.other.kind != "cancelled"),
        cancelled_jobs=tuple(j.other for j in jobs
                             if j.other is not None and j.other.kind == "cancelled"),
        survived_long_flaps=sum(1 for j in jobs if j.survived),
        lost_switch_logs=tuple(sorted(fab.switches[sw].name for sw in lost)),
        array_jobs=tuple(arrays), het_jobs=(str(het),) if het is not None else (),
        ageing_optics=ageing,
    )
