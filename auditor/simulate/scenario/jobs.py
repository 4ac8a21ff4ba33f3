"""Jobs (10 min - 6 h, 2-64 nodes, about 80 % of the node-hours unless `jobs_per_day` is set; nodes
picked as a run of free neighbours or at random): a job's footprint is its hosts' HCA links plus
the leaf-spine links its NCCL ring crosses (one ring per rail over the hosts in job order; traffic
to a host goes down through spine `host index mod spines`, as D-mod-K fat-tree routing does;
with `lfts`, the links those connections cross in the forwarding tables in effect when a flap
hits the job, routing.py: the same until the subnet manager routes around a dead link).
Each job draws an NCCL release from `nccl_versions` and an NCCL_IB_TIMEOUT from `ib_timeouts`
(None: the release's default, 14 up to 2.13, 18 up to 2.22, 20 after; a number: set by
environment). Its death time is 4.096 us x 2^timeout x (NCCL_IB_RETRY_CNT 7 + 1): 8.59 s at 18,
34.4 s at 20. A footprint link down for longer than that fails the job that long (plus 0-2 s)
after the flap (after the job's start if the link was already down): completion errors from the
two hosts of a connection that crossed it, each naming the other's IPoIB address and printed by
a GPU on that rail, a port-error async event on hosts whose own port went down, PyTorch's
watchdog and torchelastic. Shorter flaps are survived (`survived_long_flaps` counts the jobs
that outlived one over 7 s). Other jobs fail from a CUDA OOM or an Xid (no IB errors in their
logs) or are cancelled; jobs still going at the end are RUNNING.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass
from typing import Protocol

from auditor.parse.hostlist import compress_hostlist
from auditor.simulate.scenario.clock import _Clock
from auditor.simulate.scenario.fabric import _Fabric
from auditor.simulate.scenario.faults import _Flap, _Plan
from auditor.simulate.scenario.formats import _LAUNCHERS, _XIDS, _JobLogs, _Style
from auditor.simulate.scenario.options import (
    ABSORBED_CAUSES,
    CPUS_PER_NODE,
    GPUS_PER_NODE,
    MEM_GB_PER_NODE,
    Scenario,
)
from auditor.simulate.scenario.releases import ib_timeout_default, nccl_death_s, parse_nccl_version
from auditor.simulate.scenario.truth import NetworkFailedJob, OtherJob, Reporter

_JOB_NAMES = ("llm-pretrain", "moe-sft", "vlm-train", "rlhf-ppo", "dpo-align", "asr-finetune",
              "diffusion-xl", "eval-harness", "nccl-tests", "embed-distill")
_JOB_SIZES = (2, 4, 8, 16, 32, 64)
_JOB_SIZE_WEIGHTS = (25, 25, 20, 15, 10, 5)
_JOB_MIN_S, _JOB_MAX_S = 600.0, 6 * 3600.0  # job lengths are log-uniform in between
_ERROR_JITTER_S = 2.0  # the completion error comes 0-2 s after the QP's last retry ran out
_LONG_FLAP_S = 7.0  # `survived_long_flaps` counts footprint flaps longer than this


def _job_style(sc: Scenario, rng: random.Random) -> _Style:
    # Always the same draws, so one option does not move the others.
    version = rng.choice(sc.nccl_versions)
    timeout = rng.choice(sc.ib_timeouts)
    info = rng.random() < sc.info_share
    launcher = rng.choice(_LAUNCHERS)
    v = parse_nccl_version(version)
    effective = ib_timeout_default(version) if timeout is None else timeout
    # NCCL_DEBUG_TIMESTAMP_LEVELS appeared in v2.26.2-1 src/debug.cc (default: WARN only).
    stamps = sc.nccl_stamps and v >= (2, 26, 0)
    channels = sc.channel_lines if sc.channel_lines is not None else v < (2, 22, 0)
    return _Style(version, v, effective, timeout is not None, nccl_death_s(effective), info,
                  stamps, channels and info, launcher if sc.launcher_prefixes else "none", rng)


@dataclass(slots=True)
class _Job:
    job_id: int
    name: str
    hosts: list[int]
    start: float
    planned_end: float
    style: _Style
    state: str = "COMPLETED"
    exit_code: str = "0:0"
    end: float | None = None  # None: still running when the window closes
    log: str | None = None
    network: NetworkFailedJob | None = None
    other: OtherJob | None = None
    culprit: int | None = None  # the link whose flap killed it
    survived: bool = False  # outlived a long flap on its footprint
    sacct_id: str | None = None  # `123_7` for an array task
    submit: float = 0.0  # when it was submitted (slurmctld.log, host_records)

    @property
    def label(self) -> str:
        return self.sacct_id or str(self.job_id)


class _Routes(Protocol):
    """What the job model asks of `routing._Routing` (`lfts`): which connection of a ring
    crosses a leaf-spine link in the forwarding tables in effect at a time."""

    def ring_pair(self, hosts: list[int], link: int, at: float) -> tuple[int, int, int] | None:
        """The first (host, peer host, rail) of the ring over `hosts` crossing `link`."""

    def ring_links(self, hosts: list[int], at: float) -> dict[int, tuple[int, int, int]]:
        """Each leaf-spine link the ring over `hosts` crosses -> its first (host, peer, rail)."""


class _Outages(Protocol):
    """What the scheduler asks of `reboots._Planner` (named here so jobs sits below it)."""

    def consider(self, job: _Job) -> tuple[int, float] | None:
        """Maybe crash one of the job's hosts while it runs: the job's fate is rewritten and
        (host, until) returned; the host takes no job before `until` (inf: not in the window)."""


def _schedule_jobs(sc: Scenario, fab: _Fabric, plan: _Plan, clock: _Clock,
                   rng: random.Random, outages: _Outages | None = None,
                   routes: _Routes | None = None) -> list[_Job]:
    """Place the jobs in arrival order and decide each one's fate. `outages` (host_reboots)
    sees each job once its fate is decided and may crash one of its hosts. `routes` (lfts):
    the leaf-spine links a job's traffic crosses come from the forwarding tables of the moment
    instead of `_Fabric.ring_links`."""
    total = sc.days * 86400.0
    n_hosts = len(fab.hosts)
    table = sc.job_sizes or tuple(zip(_JOB_SIZES, _JOB_SIZE_WEIGHTS, strict=True))
    sizes = [(s, w) for s, w in table if s <= max(2, n_hosts // 2)]
    if sc.jobs_per_day is not None:
        per_day = float(sc.jobs_per_day)
    else:  # enough jobs to keep about 80 % of the node-hours busy
        mean_size = sum(s * w for s, w in sizes) / sum(w for _, w in sizes)
        mean_h = (_JOB_MAX_S - _JOB_MIN_S) / math.log(_JOB_MAX_S / _JOB_MIN_S) / 3600.0
        per_day = max(12.0, 0.8 * n_hosts * 24.0 / (mean_size * mean_h))
    n_jobs = round(per_day * sc.days)
    drained = {h: (s - 1800.0, e) for h, s, e, _ in plan.maintenance}  # drained 30 min early
    shortest = min(nccl_death_s(ib_timeout_default(v) if t is None else t)
                   for v in sc.nccl_versions for t in sc.ib_timeouts)
    # An absorbed flap (harmless_flaps) kills nobody, however long.
    killers = sorted((f for f in [*plan.flaps, *plan.silent]
                      if f.up - f.down > min(shortest, _LONG_FLAP_S)
                      and f.cause not in ABSORBED_CAUSES), key=lambda f: (f.down, f.link))
    host_flaps: dict[int, list[_Flap]] = {}
    for f in plan.flaps:
        hca = fab.links[f.link].hca
        if hca is not None:
            host_flaps.setdefault(fab.hcas[hca].host, []).append(f)
    logs = _JobLogs(fab, clock, rng)
    free_at = [0.0] * n_hosts
    pool = [(0.0, h) for h in range(n_hosts)]  # (free from, host), sorted
    arrivals = sorted(rng.uniform(0.0, total - 600.0) for _ in range(n_jobs))
    base_id = rng.randint(100000, 900000)
    jobs: list[_Job] = []
    for a in arrivals:
        size = rng.choices([s for s, _ in sizes], [w for _, w in sizes])[0]
        dur = math.exp(rng.uniform(math.log(_JOB_MIN_S), math.log(_JOB_MAX_S)))
        start = float(math.ceil(a))
        n_free = bisect_right(pool, (start, n_hosts))
        if n_free < size:
            # Wait until enough nodes are free, as the scheduler would.
            nth = pool[size - 1][0]  # inf: held by jobs that outlive the window
            start = max(start, float(math.ceil(nth)) if nth < total else total)
            n_free = bisect_right(pool, (start, n_hosts))
        if start >= total - 60.0:
            continue

        def ok(h: int, start: float = start, dur: float = dur) -> bool:
            # A re-imaged host takes no job that would overlap its (drained) window.
            win = drained.get(h)
            return win is None or start + dur <= win[0] or start >= win[1]

        chosen: list[int] = []
        if rng.random() < 0.5:  # topology-aware placement: the next free nodes from a point
            first = rng.randrange(n_hosts)
            for k in range(n_hosts):
                h = (first + k) % n_hosts
                if free_at[h] <= start and ok(h):
                    chosen.append(h)
                    if len(chosen) == size:
                        break
        else:
            picks = rng.sample(range(n_free), min(n_free, size + len(drained)))
            chosen = [pool[i][1] for i in picks if ok(pool[i][1])][:size]
        if len(chosen) < size:
            continue
        job_id = base_id + len(jobs)
        # The job's NCCL, settings and launcher come from a stream of its own.
        style = _job_style(sc, random.Random(f"{sc.seed}:joblog:{job_id}"))  # noqa: S311
        job = _Job(job_id, f"{rng.choice(_JOB_NAMES)}-{rng.randint(1, 99):02d}",
                   sorted(chosen), start, start + round(dur), style, submit=a)
        outlived = _decide(sc, fab, job, killers, host_flaps, logs, rng, routes)
        # A crashed host is DOWN in Slurm until an admin resumes it: no job takes it before.
        crashed = outages.consider(job) if outages is not None else None
        until = job.end if job.end is not None else total
        job.survived = any(up <= until for up in outlived)
        for h in job.hosts:
            del pool[bisect_left(pool, (free_at[h], h))]
            free_at[h] = job.end if job.end is not None else math.inf
            if crashed is not None and crashed[0] == h:
                free_at[h] = max(free_at[h], crashed[1])
            insort(pool, (free_at[h], h))
        jobs.append(job)
    return jobs


def _decide(sc: Scenario, fab: _Fabric, job: _Job, killers: list[_Flap],
            host_flaps: dict[int, list[_Flap]], logs: _JobLogs,
            rng: random.Random, routes: _Routes | None = None) -> list[float]:
    """Set the job's fate: the earliest of a network death, a GPU failure, a cancel. A flap on
    the job's footprint kills it when the link stays down longer than the job's death time
    (its NCCL_IB_TIMEOUT); the completion error comes that long after the flap (after the
    job's start if the link was already down). Returns the up times of the footprint flaps
    longer than 7 s that were too short to kill it."""
    total = sc.days * 86400.0
    clock = logs.clock
    hosts = set(job.hosts)
    ring: dict[int, tuple[int, int, int]] | None = None  # computed on the first need
    death = job.style.death_s
    jitter = rng.uniform(0.0, _ERROR_JITTER_S)
    net: tuple[float, _Flap, tuple[int, int, int]] | None = None
    outlived: list[float] = []
    for f in killers:  # sorted by down: the first hit has the earliest effective start
        if f.down >= job.planned_end:
            break
        if f.up <= job.start:
            continue
        eff = max(f.down, job.start)
        kills = f.up - eff > death
        if kills and eff + death + jitter >= job.planned_end:
            continue  # the job is done before NCCL gives up
        if not kills and f.up - eff <= _LONG_FLAP_S:
            continue
        lk = fab.links[f.link]
        if lk.hca is not None:
            if fab.hcas[lk.hca].host not in hosts:
                continue
            hca = fab.hcas[lk.hca]
            i = job.hosts.index(hca.host)
            # The host behind the dead port and its ring neighbour report each other.
            pair: tuple[int, int, int] | None = (
                hca.host, job.hosts[(i + 1) % len(job.hosts)], hca.rail)
        else:
            if routes is not None:  # the tables in effect when the flap hit the job
                pair = routes.ring_pair(job.hosts, f.link, eff)
            else:
                if ring is None:
                    ring = fab.ring_links(job.hosts)
                pair = ring.get(f.link)
            if pair is None:
                continue
        assert pair is not None  # noqa: S101 - set on both branches
        if not kills:
            outlived.append(f.up)
            continue
        net = (eff + death + jitter, f, pair)
        break
    gpu_at = (job.start + rng.uniform(0.05, 0.95) * (job.planned_end - job.start)
              if rng.random() < sc.non_network_failure_rate else math.inf)
    cancel_at = (job.start + rng.uniform(0.02, 0.9) * (job.planned_end - job.start)
                 if rng.random() < sc.cancel_rate else math.inf)
    net_at = net[0] if net is not None else math.inf
    first = min(net_at, gpu_at, cancel_at, job.planned_end)
    nodes = tuple(fab.hosts[h] for h in job.hosts)
    if first >= total:
        job.state, job.end = "RUNNING", None
        return outlived
    if first == job.planned_end:
        job.end = job.planned_end
        return outlived
    if first == cancel_at:
        job.state = f"CANCELLED by {rng.randint(51000, 51999)}"
        job.end = float(math.ceil(first))
        job.other = OtherJob(str(job.job_id), nodes, clock.at(job.start), clock.at(job.end),
                             "CANCELLED", "cancelled")
        return outlived
    job.state = "FAILED"
    if first == net_at and net is not None:
        _network_failure(fab, job, net[1], net_at, net[2], host_flaps, logs, rng)
        return outlived
    # A GPU failure: CUDA OOM in one rank, or an Xid that kills the GPU; no IB errors.
    h = rng.choice(job.hosts)
    dev = rng.randrange(GPUS_PER_NODE)
    rank = job.hosts.index(h) * GPUS_PER_NODE + dev
    lines = logs.header(job)
    if rng.random() < 0.6:
        kind, xid = "oom", None
        lines += logs.oom(h, dev, rank, first)
        exit_at = first + rng.uniform(1.0, 3.0)
        lines += logs.elastic(h, rank, exit_at, 1, False)
        job.exit_code = "1:0"
    else:
        kind = "xid"
        xid = rng.choice(sorted(_XIDS))
        lines += logs.xid(h, dev, rank, first, xid)
        exit_at = first + rng.uniform(1.0, 3.0)
        lines += logs.elastic(h, rank, exit_at, -6, True)
        job.exit_code = "0:6"
    job.end = float(math.ceil(exit_at + rng.uniform(1.0, 10.0)))  # srun tears the step down
    job.log = logs.render(job, lines)
    job.other = OtherJob(str(job.job_id), nodes, clock.at(job.start), clock.at(job.end),
                         "FAILED", kind, fab.hosts[h], xid)
    return outlived


def _network_failure(fab: _Fabric, job: _Job, flap: _Flap, error_at: float,
                     pair: tuple[int, int, int], host_flaps: dict[int, list[_Flap]],
                     logs: _JobLogs, rng: random.Random) -> None:
    """Completion errors from both hosts of a connection that crossed the dead link, each
    naming the other's IPoIB address, then PyTorch's watchdog and torchelastic."""
    clock = logs.clock
    a, b, rail = pair
    t_a = error_at
    t_b = error_at + rng.uniform(0.0, 1.5)
    eff = max(flap.down, job.start)
    async_hosts: list[tuple[int, int, float]] = []
    for h in job.hosts:  # every job host whose own HCA link was down then sees a port error
        for f in host_flaps.get(h, []):
            if f.down <= eff + 2.0 and f.up > eff:
                f_hca = fab.links[f.link].hca
                assert f_hca is not None  # noqa: S101 - host_flaps holds host links only
                async_hosts.append((h, fab.hcas[f_hca].rail, max(f.down, job.start) + 0.2))
    lines = logs.header(job)
    failed, devs = logs.network(job, [(a, b, rail, t_a), (b, a, rail, t_b)], async_hosts)
    lines += failed
    exit_at = max(t_a, t_b) + rng.uniform(3.0, 10.0)
    lines += logs.elastic(a, job.hosts.index(a) * GPUS_PER_NODE, exit_at, -6, True)
    job.log = logs.render(job, lines)
    job.exit_code = rng.choice(("1:0", "0:6"))
    job.end = float(math.ceil(exit_at + rng.uniform(1.0, 10.0)))
    job.culprit = flap.link
    dev = f"mlx5_{rail}"
    st = job.style
    reporters = tuple(
        Reporter(fab.hosts[h], dev, fab.hosts[p], fab.ips[p], clock.at(t), devs[h],
                 job.hosts.index(h) * GPUS_PER_NODE + devs[h])
        for h, p, t in ((a, b, t_a), (b, a, t_b)))
    job.network = NetworkFailedJob(
        str(job.job_id), tuple(fab.hosts[h] for h in job.hosts), clock.at(job.start),
        clock.at(error_at), clock.at(job.end), fab.link_id(flap.link), flap.cause,
        clock.at(flap.down), clock.at(flap.up), reporters, st.version, st.ib_timeout,
        st.timeout_set, round(st.death_s, 6), rail, dev, st.debug, st.launcher)


def _assign_sacct_ids(jobs: list[_Job], rng: random.Random) -> tuple[list[str], int | None]:
    """A few runs of consecutive submissions become the tasks of an array job (JobID
    `<first task's JobIDRaw>_<index>`, same name) and one completed job becomes a het job.
    Returns the array task ids and the het job's id."""
    by_id = sorted(jobs, key=lambda j: j.job_id)
    arrays: list[str] = []
    n_arrays = min(3, max(1, len(by_id) // 30))
    taken: set[int] = set()
    for _ in range(n_arrays):
        size = rng.randint(2, 4)
        if len(by_id) < size + 1:
            break
        i = rng.randrange(len(by_id) - size)
        group = by_id[i:i + size]
        if any(j.job_id in taken for j in group):
            continue
        first = rng.choice((0, 1, rng.randint(2, 40)))
        for k, j in enumerate(group):
            j.sacct_id = f"{group[0].job_id}_{first + k}"
            j.name = group[0].name
            taken.add(j.job_id)
            arrays.append(j.sacct_id)
    done = [j for j in by_id if j.state == "COMPLETED" and j.job_id not in taken]
    het = rng.choice(done).job_id if done else None
    return arrays, het


def _sacct(fab: _Fabric, jobs: list[_Job], clock: _Clock, steps: bool = False,
           het: int | None = None, rng: random.Random | None = None) -> str:
    """`sacct -P -X --format=JobID,JobIDRaw,JobName,Partition,State,ExitCode,Start,End,NNodes,
    NodeList,AllocTRES` (reference/jobs/sacct-samples.txt): times in slurmctld's local time,
    here UTC, no zone; End `Unknown` while running. With `steps` (no -X) each allocation is
    followed by its `.batch` (first node), `.extern` and `.0` (the srun of torchrun) steps,
    with the states steps get: `.extern` COMPLETED, `.0` FAILED or CANCELLED when the job
    failed, CANCELLED when it was cancelled."""
    out = ["JobID|JobIDRaw|JobName|Partition|State|ExitCode|Start|End|NNodes|NodeList|AllocTRES"]
    next_raw = max((j.job_id for j in jobs), default=0) + 1

    def tres(n: int, billing: bool = True) -> str:
        bill = f"billing={n * CPUS_PER_NODE}," if billing else ""
        return (f"{bill}cpu={n * CPUS_PER_NODE},gres/gpu={n * GPUS_PER_NODE},"
                f"mem={n * MEM_GB_PER_NODE}G,node={n}")

    def stamp(t: float | None) -> str:
        return "Unknown" if t is None else f"{clock.at(t):%Y-%m-%dT%H:%M:%S}"

    for job in sorted(jobs, key=lambda j: j.job_id):
        parts: list[tuple[str, str, list[int]]] = [(job.label, str(job.job_id), job.hosts)]
        if steps and job.job_id == het:
            cut = max(1, len(job.hosts) // 4)  # a small first component (e.g. the data loaders)
            parts = [(f"{job.job_id}+0", str(job.job_id), job.hosts[:cut]),
                     (f"{job.job_id}+1", str(next_raw), job.hosts[cut:])]
            next_raw += 1
        if steps:
            assert rng is not None  # noqa: S101 - steps need the stream
            kind = job.state.split(" ")[0]  # `CANCELLED by 51234` only on the allocation line
            span = (job.end - job.start) / 2 if job.end is not None else 25.0
            launch = float(math.ceil(job.start + min(rng.randint(2, 25), span)))
            # srun's step fails with the task that failed, or is cancelled when the batch
            # script tears it down first.
            step = rng.choice(("FAILED", "FAILED", "CANCELLED")) if kind == "FAILED" else kind
            code = {"FAILED": job.exit_code, "CANCELLED": "0:15"}
            if kind == "NODE_FAIL":
                # slurmctld kills the steps of a job whose node failed (SIGKILL); a step that
                # ended on a signal is stored CANCELLED (SchedMD/slurm@slurm-25-11-7-1
                # src/plugins/accounting_storage/mysql/as_mysql_job.c:1634-1640).
                step, code = "CANCELLED", {"CANCELLED": "0:9"}
        for p, (label, raw, hosts) in enumerate(parts):
            n = len(hosts)
            nodes = compress_hostlist(fab.hosts[h] for h in hosts)
            out.append(f"{label}|{raw}|{job.name}|gpu|{job.state}|{job.exit_code}|"
                       f"{stamp(job.start)}|{stamp(job.end)}|{n}|{nodes}|{tres(n)}")
            if not steps:
                continue
            batch = step if kind == "NODE_FAIL" else kind
            rows = [(".batch", "batch", batch, code.get(batch, "0:0"), job.start, 1,
                     fab.hosts[hosts[0]], tres(1, billing=False))] if p == 0 else []
            rows.append((".extern", "extern", "RUNNING" if job.end is None else "COMPLETED",
                         "0:0", job.start, n, nodes, tres(n)))
            rows.append((".0", "torchrun", step, code.get(step, "0:0"), launch, n, nodes,
                         tres(n, billing=False)))
            for suffix, name, state, exit_code, begin, count, where, alloc in rows:
                out.append(f"{label}{suffix}|{raw}{suffix}|{name}||{state}|{exit_code}|"
                           f"{stamp(begin)}|{stamp(job.end)}|{count}|{where}|{alloc}")
    return "\n".join(out) + "\n"
