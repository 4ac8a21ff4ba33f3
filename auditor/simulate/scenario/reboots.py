"""Host reboots (`host_reboots`, off by default; issue #20): hosts that crash and reboot
undeclared while they run a job, and the records a site keeps of its hosts (`host_records`).

The crash, on a DGX-class node:
- At T the host goes away (a kernel panic, a power loss): every HCA link drops within 1 s. The
  leaf of each rail logs the DOWN as it logs any flap (a lost switch log loses it as usual).
- POST and the BMC take 150-270 s, then the kernel starts (journalctl's FIRST ENTRY, slurmd's
  boot time). mlx5_core loads 15-35 s later and restarts the HCA's port counters from 0, as a
  re-image does (faults.py): ibqueryerrors shows the restart where a port had counts, and half
  of the crashed hosts' ports carry an old LinkDownedCounter of 1-2 to show it. Each link
  trains and is UP 2-8 s after the driver loads: down 170-315 s in all. slurmd registers
  40-110 s after the kernel started.
- The job it ran dies with it; no other job is touched (only its links carry its traffic). NCCL
  on its ring neighbours (one ring per rail over the job's hosts, as jobs.py has it) waits out
  the retries of each connection to it (the job's death time, 0-2 s later) and prints a
  completion error on every rail, in the release's wording (formats.py), naming the crashed
  host's IPoIB address; then PyTorch's watchdog and torchelastic, as for a network failure. The
  crashed host's own ranks print nothing after T.
- srun runs on the batch host (the job's first) and writes the job's output: when the batch
  host is the one that crashed, the log stops at T and holds no peer's line.

Slurm, at its defaults (SchedMD/slurm@slurm-25-11-7-1: SlurmdTimeout 300 s and MessageTimeout
10 s src/common/read_config.h:147,124, ReturnToService 0 :135; a ping cycle every
SlurmdTimeout/3 src/slurmctld/controller.c:2721; the not-responding message every 300 s at the
default SlurmctldDebug=info, controller.c:2704,2838):
- a node that answers is pinged once its last response is 100 s old, so every 200 s
  (src/slurmctld/ping_nodes.c:269-273); the first ping after the crash fails (MessageTimeout
  later) and marks it NOT_RESPONDING (node_mgr.c:4030), which the message timer then prints as
  `error: Nodes X not responding` (node_mgr.c:4060);
- the ping cycle that finds its last response older than SlurmdTimeout plus one cycle (400 s)
  sets it DOWN, `error: Nodes X not responding, setting DOWN` (ping_nodes.c:195-243,323),
  event DOWN* `Not responding`;
- slurmd registers with a boot time after the node's last response: `Node X now responding`
  when it was marked (node_mgr.c:3538), then `validate_node_specs: Node X unexpectedly rebooted
  boot_time=<epoch> last response=<epoch>`, reason `Node unexpectedly rebooted`, DOWN
  (node_mgr.c:3771-3803); whichever comes first kills the job: `Killing JobId=N on failed node
  X`, NODE_FAIL, End that moment, ExitCode 0:1 (job_mgr.c:3070-3088, exit_code 1 printed by
  src/sacct/print.c:905 as signal 1; the site does not requeue, or sacct -X would show the
  requeued run instead);
- the node stays DOWN (ReturnToService 0, and 1 too: it rebooted) until an admin resumes it
  (70 %: 15 min to 4 h later): `update_node: node X state set to IDLE` (node_mgr.c:2329), then
  `Node X now responding` when it registers (node_mgr.c:1577).
On multi-rail clusters half of the jobs whose batch host lived end FAILED instead: their launch
scripts run `srun --kill-on-bad-exit`, so the batch script exits on the first rank's failure,
before slurmctld sets the node DOWN (`_job_complete: JobId=N WEXITSTATUS 1`). On single-rail
clusters every one ends NODE_FAIL. A NODE_FAIL job whose batch host lived gets srun's `srun:
error: Node failure on X` (src/api/step_launch.c:1197) and slurmstepd's `*** JOB N ON <batch
host> CANCELLED AT <time> DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***`
(src/slurmd/slurmstepd/req.c:933) at the end of its log.

Which hosts: N crash times at least 30 min apart are drawn first; the first job placed (jobs
are placed in arrival order) that runs over one of them, has run 5 min and would otherwise
complete or still run gets it, on one of its hosts that no fault, maintenance, harmless flap or
ageing optic touches and that is not in maintenance.csv; a host whose rail went down with a
rebooting leaf only when the job has no other (on a rail fabric of one scalable unit every host
has a link on each leaf). Nothing the scheduler did before that job moves; the crashed host
takes no job until it is resumed. If a time finds no such job, the draw is made again from the
next stream (at most 20 times).

The records, written only where the site keeps them (`host_records`):
- slurm/events.txt: `sacctmgr -P show event Start=<window start> End=<window end>`: the default
  columns `Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User` (src/sacctmgr/
  event_functions.c:372-374, names from src/sacctmgr/common.c:273,700,763,790,807,813,866), no
  trailing `|` with -P (sacctmgr.c:157-159, print_fields.c:66-90); cluster and node events
  (event_type ALL by default), in the table's primary key order (node name, start;
  accounting_storage_mysql.c:1532: the query has no ORDER BY); times `%FT%T` local (here UTC),
  `Unknown` while open (src/common/parse_time.c:_make_time_str_internal); State
  node_state_string_compact (slurm_protocol_defs.c:3775: DOWN, DOWN* when not responding,
  DRAIN, DRAIN* ...); User `name(uid)` (event_functions.c:503-511), empty for cluster events.
  Besides the crashed hosts: the re-imaged hosts drained by an admin (`root(0)`, the ticket as
  the reason) with what their reboots do to a drained node, a few idle hosts drained for a
  while with hardware reasons, and the cluster's open TRES event.
- slurm/slurmctld.log: `[%Y-%m-%dT%H:%M:%S.mmm] ` (LogTimeFormat's default iso8601_ms,
  src/common/read_config.c:4173, log.c:1118) and `error: ` before errors (log.c:1369), the
  lines above among each job's `_slurm_rpc_submit_batch_job: JobId=N InitPrio=P usec=U`
  (proc_req.c:3703), `sched: Allocate JobId=N NodeList=... #CPUs=C Partition=gpu`
  (job_scheduler.c:1940), `_job_complete: JobId=N WEXITSTATUS 0` / `WTERMSIG 6` and `done`
  (job_mgr.c:6106-6109,6296) or `_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=N uid U`
  (proc_req.c:5759); an array task is `JobId=<array>_<task>(<raw id>)` (log.c:787).
- boots/<host>.txt: `journalctl --list-boots` of every host (a site that collects them does it
  for all), the newer systemd layout (a table: `IDX BOOT ID FIRST ENTRY LAST ENTRY`, the index
  right-aligned, times `%a %Y-%m-%d %H:%M:%S UTC`; systemd/systemd@00f601b5
  src/journal/journalctl-misc.c action_list_boots: table_new("idx", "boot id", "first entry",
  "last entry"), TABLE_SET_ALIGN_PERCENT 100 on the index, TABLE_TIMESTAMP; the spacing as
  public captures of systemd >= 254 print it), oldest first, read at the window's end: each
  host's boots from weeks before the window; a crashed host's boot cut short at the crash and
  its new one; a re-imaged host's boots since its disk was wiped.
Everything draws from streams of its own (`reboots`, `reboot-logs`, `slurmctld`, `slurm`,
`boots`), so the faults, and every job placed before a crashed one, are those of the same seed
without the option; `host_records` changes which files are written, nothing else.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from auditor.parse.hostlist import compress_hostlist
from auditor.simulate.scenario.clock import _Clock
from auditor.simulate.scenario.fabric import _Fabric
from auditor.simulate.scenario.faults import _Flap, _Plan, _port_keys, _spaced_times
from auditor.simulate.scenario.formats import _JobLogs, _Line
from auditor.simulate.scenario.jobs import _Job
from auditor.simulate.scenario.options import (
    CAUSE_HOST_REBOOT,
    CAUSE_REBOOT,
    CPUS_PER_NODE,
    GPUS_PER_NODE,
    Scenario,
)
from auditor.simulate.scenario.truth import HostFailedJob, HostReboot, Interval, Reporter

ATTEMPTS = 20  # draws of crash times before a scenario is refused (reboots that find no job)
_GAP_S = 1800.0  # crash times at least this far apart
_WARM_S = 300.0  # a job has run this long before its host crashes (NCCL is up, logs started)
_POST_S = (150.0, 270.0)  # crash -> kernel start: POST, BMC, boot loader of a DGX-class node
_DRIVER_S = (15.0, 35.0)  # kernel start -> mlx5_core loaded (HCA counters restart)
_TRAIN_S = (2.0, 8.0)  # driver loaded -> the link is up (the leaf logs UP)
_SLURMD_S = (40.0, 110.0)  # kernel start -> slurmd registered
_FAILED_SHARE = 0.5  # multi-rail, batch host alive: srun --kill-on-bad-exit ends it FAILED
_RESUMED_SHARE = 0.7  # crashed nodes an admin resumes within the window
_RESUME_S = (900.0, 4 * 3600.0)
# slurmctld defaults, SchedMD/slurm@slurm-25-11-7-1 (see the module docstring)
SLURMD_TIMEOUT_S = 300.0
PING_S = SLURMD_TIMEOUT_S / 3
NO_RESP_MSG_S = 300.0
MSG_TIMEOUT_S = 10.0
CLUSTER = "gpucluster"
SLURM_USER = "slurm(64030)"  # SlurmUser: Debian's slurm-wlm creates user slurm with uid 64030
_NODE_FAIL_EXIT = "0:1"


@dataclass(frozen=True, slots=True)
class _Ctl:
    """slurmctld's clocks: the phase of its ping cycle and of its not-responding messages, and
    which of two cycles pings each host (a node that answers is pinged every other cycle)."""

    ping: float
    msg: float
    parity: tuple[int, ...]

    def last_ping(self, h: int, t: float, since: float | None = None) -> float:
        """Host h's last response at or before t: the pings it answered, or its registration
        at `since`, after which it is pinged once that is 100 s old (then every 200 s)."""
        if since is None:
            base = self.ping + PING_S * self.parity[h]
        else:
            base = self.ping + PING_S * (math.floor((since + PING_S - self.ping) / PING_S) + 1)
            if t < base:
                return since
        return base + 2 * PING_S * math.floor((t - base) / (2 * PING_S))

    def next_msg(self, t: float) -> float:
        return self.msg + NO_RESP_MSG_S * math.ceil((t - self.msg) / NO_RESP_MSG_S)


def controller(fab: _Fabric, rng: random.Random) -> _Ctl:
    return _Ctl(rng.uniform(0.0, PING_S), rng.uniform(0.0, NO_RESP_MSG_S),
                tuple(rng.randrange(2) for _ in fab.hosts))


@dataclass(slots=True)
class _Outage:
    """What slurmctld saw of one spell without slurmd (see the module docstring)."""

    host: int
    at: float  # the host went away
    boot: float  # its kernel started again
    slurmd: float  # slurmd registered
    last_response: float
    no_respond: bool  # marked NOT_RESPONDING before slurmd came back
    msg_at: float | None  # `Nodes X not responding`
    set_down_at: float | None  # `not responding, setting DOWN`
    rebooted_at: float | None  # `unexpectedly rebooted` (never for a drained node)

    @property
    def down_at(self) -> float | None:
        return self.set_down_at if self.set_down_at is not None else self.rebooted_at


def _outage(ctl: _Ctl, h: int, at: float, boot: float, slurmd: float, drained: bool,
            down: bool, since: float | None = None) -> _Outage:
    """`down`: the node is DOWN already (nothing sets it DOWN again, nothing is printed until
    it answers: node_mgr.c:4015, ping_nodes.c:231,277). A drained node is never `unexpectedly
    rebooted` (node_mgr.c:3769). `since`: its last registration, if it was in the window."""
    last = ctl.last_ping(h, at, since)
    failed = last + 2 * PING_S + MSG_TIMEOUT_S  # the first ping it cannot answer times out
    dead = last + 4 * PING_S  # the first cycle whose dead time is past its last response
    no_respond = slurmd > failed
    set_down = dead if no_respond and not down and slurmd >= dead else None
    msg = None
    if no_respond and not down:
        tick = ctl.next_msg(failed)
        # Setting it DOWN clears the flag the message timer prints (ping_nodes.c:244).
        if set_down is None or tick < set_down:
            msg = tick
    # After a `setting DOWN` too: a second DOWN event, with the new reason (node_mgr.c:3776).
    rebooted = None if drained or down else slurmd
    return _Outage(h, at, boot, slurmd, last, no_respond, msg, set_down, rebooted)


@dataclass(slots=True)
class _Crash:
    host: int
    job: _Job
    downs: list[float]  # per rail
    ups: list[float]
    driver: float
    outage: _Outage
    resumed: float | None
    state: str = "NODE_FAIL"
    log_cut: bool = False
    error_at: float | None = None
    # (peer host, crashed host, rail, time, cuda dev) of each completion error
    reporters: list[tuple[int, int, int, float, int]] = field(default_factory=list)

    @property
    def down_at(self) -> float:
        at = self.outage.down_at
        assert at is not None  # noqa: S101 - a crashed host that is not drained goes DOWN
        return at


class _Planner:
    """Crashes hosts while the scheduler places jobs (`jobs._Outages`)."""

    def __init__(self, sc: Scenario, fab: _Fabric, plan: _Plan, clock: _Clock, ctl: _Ctl,
                 rng: random.Random) -> None:
        self.sc, self.fab, self.clock, self.ctl, self.rng = sc, fab, clock, ctl, rng
        self.total = sc.days * 86400.0
        touched = {fab.hcas[hca].host for f in plan.flaps
                   if (hca := fab.links[f.link].hca) is not None and f.cause != CAUSE_REBOOT}
        touched |= {h for h, _, _, _ in plan.maintenance}
        by_switch = {fab.hcas[hca].host for f in plan.flaps
                     if (hca := fab.links[f.link].hca) is not None and f.cause == CAUSE_REBOOT}
        # A host whose rail went down with its rebooting leaf is a second choice: on a rail
        # fabric of one scalable unit every host has a link on that leaf.
        self.candidates = {h for h in range(len(fab.hosts)) if h not in touched}
        self.second = self.candidates & by_switch
        self.targets = _spaced_times(rng, sc.host_reboots, 1800.0, self.total - 1800.0, _GAP_S)
        self.crashes: list[_Crash | None] = [None] * len(self.targets)
        self.logs = _JobLogs(fab, clock, rng)

    @property
    def complete(self) -> bool:
        return all(c is not None for c in self.crashes)

    def consider(self, job: _Job) -> tuple[int, float] | None:
        if job.state not in ("COMPLETED", "RUNNING"):
            return None
        end = job.end if job.end is not None else self.total
        for k, at in enumerate(self.targets):
            if self.crashes[k] is not None or not job.start + _WARM_S <= at <= end - 60.0:
                continue
            hosts = ([h for h in job.hosts if h in self.candidates - self.second]
                     or [h for h in job.hosts if h in self.candidates])
            if not hosts:
                return None
            h = self.rng.choice(hosts)
            self.candidates.discard(h)
            crash = self.crashes[k] = self._crash(job, h, at)
            return h, crash.resumed if crash.resumed is not None else math.inf
        return None

    def _crash(self, job: _Job, h: int, at: float) -> _Crash:
        rng, rails = self.rng, self.sc.hcas_per_host
        downs = [at + rng.uniform(0.0, 1.0) for _ in range(rails)]
        boot = at + rng.uniform(*_POST_S)
        driver = boot + rng.uniform(*_DRIVER_S)
        ups = [driver + rng.uniform(*_TRAIN_S) for _ in range(rails)]
        slurmd = boot + rng.uniform(*_SLURMD_S)
        outage = _outage(self.ctl, h, at, boot, slurmd, drained=False, down=False)
        resumed = None
        if rng.random() < _RESUMED_SHARE:
            resumed = max(slurmd, outage.down_at or slurmd) + rng.uniform(*_RESUME_S)
            if resumed > self.total - 300.0:
                resumed = None
        crash = _Crash(h, job, downs, ups, driver, outage, resumed)
        self._fate(crash)
        return crash

    def _fate(self, crash: _Crash) -> None:
        """The job's end, state and log (the module docstring says how)."""
        job, h, rng, logs = crash.job, crash.host, self.rng, self.logs
        fab, st = self.fab, job.style
        down_at = crash.down_at
        job.network = job.other = None
        job.culprit = None
        lines = logs.header(job)
        batch = job.hosts[0]
        if h == batch:
            crash.log_cut = True  # srun died with the batch host: nothing after the crash
            job.log = logs.render(job, lines)
            self._node_fail(crash)
            return
        i = job.hosts.index(h)
        peers = list(dict.fromkeys(p for p in (job.hosts[(i + 1) % len(job.hosts)],
                                               job.hosts[i - 1]) if p != h))
        by_rail: list[tuple[int, list[tuple[int, int, int, float]]]] = []
        for rail, down in enumerate(crash.downs):
            pairs = []
            for n, p in enumerate(peers):
                t = down + st.death_s + rng.uniform(0.0, 2.0) + n * rng.uniform(0.0, 1.5)
                if t < down_at - 1.0:  # else slurmctld killed the job before NCCL gave up
                    pairs.append((p, h, rail, t))
            if pairs:
                by_rail.append((rail, pairs))
        failed: list[_Line] = []
        for rail, pairs in by_rail:
            mine, devs = logs.network(job, pairs, [])
            failed += mine
            crash.reporters += [(p, h, rail, t, devs[p]) for p, _, _, t in pairs]
        failed.sort(key=lambda line: line.t)  # stable: each block keeps its order
        lines += failed
        last = max((r[3] for r in crash.reporters), default=None)
        exit_at = last + rng.uniform(3.0, 10.0) if last is not None else None
        if last is not None and exit_at is not None and exit_at < down_at - 1.0:
            crash.error_at = min(r[3] for r in crash.reporters)
            a = crash.reporters[0][0]
            lines += logs.elastic(a, job.hosts.index(a) * GPUS_PER_NODE, exit_at, -6, True)
            if (self.sc.hcas_per_host > 1 and rng.random() < _FAILED_SHARE
                    and exit_at + 11.0 < down_at):
                crash.state = job.state = "FAILED"
                job.exit_code = rng.choice(("1:0", "0:6"))
                job.end = float(math.ceil(exit_at + rng.uniform(1.0, 10.0)))
                job.log = logs.render(job, lines)
                return
        elif crash.reporters:
            crash.error_at = min(r[3] for r in crash.reporters)
        # srun hears of the node failure from slurmctld, then slurmstepd cancels the batch step.
        stamp = f"{self.clock.at(down_at):%Y-%m-%dT%H:%M:%S}"
        lines += [
            _Line(down_at + 0.02, None, None, True, f"srun: error: Node failure on {fab.hosts[h]}"),
            _Line(down_at + 0.05, None, None, True,
                  f"slurmstepd: error: *** JOB {job.job_id} ON {fab.hosts[batch]} CANCELLED AT "
                  f"{stamp} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"),
        ]
        job.log = logs.render(job, lines)
        self._node_fail(crash)

    def _node_fail(self, crash: _Crash) -> None:
        job = crash.job
        crash.state = job.state = "NODE_FAIL"
        job.exit_code = _NODE_FAIL_EXIT
        job.end = float(math.floor(crash.down_at))  # slurmctld's time(NULL)

    def apply(self, plan: _Plan) -> None:
        """Put the crashes' flaps and counter restarts into the plan (after the jobs)."""
        fab = self.fab
        for crash in self.done():
            old = self.rng.random() < 0.5  # its ports show an old LinkDownedCounter
            for rail, hca in enumerate(fab.host_hcas[crash.host]):
                link = fab.hca_link[hca]
                f = _Flap(link, crash.downs[rail], crash.ups[rail], CAUSE_HOST_REBOOT)
                plan.flaps.append(f)
                for key in _port_keys(fab, link):
                    plan.port(key).downs.append(f.down)
                if old:
                    plan.port(("H", hca, 1)).baseline["LinkDownedCounter"] = \
                        self.rng.randint(1, 2)
                plan.resets.setdefault(("H", hca), []).append(crash.driver)
        plan.flaps.sort(key=lambda f: (f.down, f.link))

    def done(self) -> list[_Crash]:
        return sorted((c for c in self.crashes if c is not None), key=lambda c: c.outage.at)


# --------------------------------------------------------------------------- truth


def reboot_truth(fab: _Fabric, planner: _Planner | None, clock: _Clock, records: str
                 ) -> tuple[tuple[HostReboot, ...], tuple[HostFailedJob, ...]]:
    """The truth records of the crashes and of the jobs they killed (labels as sacct prints
    them, so call it after the array ids are given)."""
    if planner is None:
        return (), ()
    reboots, jobs = [], []
    for c in planner.done():
        job, o = c.job, c.outage
        links = tuple(fab.link_id(fab.hca_link[hca]) for hca in fab.host_hcas[c.host])
        flaps = tuple(Interval(clock.at(d), clock.at(u), round(u - d, 6))
                      for d, u in zip(c.downs, c.ups, strict=True))
        reboots.append(HostReboot(
            fab.hosts[c.host], clock.at(o.at), clock.at(o.boot), clock.at(max(c.ups)),
            clock.at(o.slurmd), clock.at(c.down_at),
            "not_responding" if o.set_down_at is not None else "unexpectedly_rebooted",
            clock.at(c.resumed) if c.resumed is not None else None, links, flaps,
            (job.label,), (c.state,), records))
        st = job.style
        assert job.end is not None  # noqa: S101 - a crash ends its job
        jobs.append(HostFailedJob(
            job.label, tuple(fab.hosts[h] for h in job.hosts), fab.hosts[c.host],
            clock.at(job.start), clock.at(job.end), c.state, job.exit_code,
            fab.hosts[job.hosts[0]], c.log_cut,
            clock.at(c.error_at) if c.error_at is not None else None,
            tuple(Reporter(fab.hosts[p], f"mlx5_{rail}", fab.hosts[peer], fab.ips[peer],
                           clock.at(t), dev, job.hosts.index(p) * GPUS_PER_NODE + dev)
                  for p, peer, rail, t, dev in c.reporters),
            st.version, st.ib_timeout, round(st.death_s, 6), st.debug, st.launcher))
    return tuple(reboots), tuple(jobs)


# --------------------------------------------------------------------------- records

_DRAIN_REASONS = ("GPU 3 Xid 79, RMA 4411", "ECC DBE on GPU 5", "NVMe /raid degraded",
                  "BMC firmware update", "DIMM B2 correctable errors", "fan 4 failed (ipmi sel)",
                  "burn-in after motherboard swap", "nvidia-smi shows 7 GPUs")
_ADMINS = ("root(0)", "opsadmin(1001)", "bwong(1007)")


@dataclass(slots=True)
class _Event:
    host: int | None  # None: the cluster's own event
    start: float
    end: float | None
    state: str
    reason: str
    user: str


class _Records:
    """slurmctld.log lines and sacctmgr events, gathered per host, written sorted."""

    def __init__(self, sc: Scenario, fab: _Fabric, clock: _Clock) -> None:
        self.sc, self.fab, self.clock = sc, fab, clock
        self.lines: list[tuple[float, int, str]] = []
        self.events: list[_Event] = []

    def log(self, t: float, text: str) -> None:
        self.lines.append((t, len(self.lines), text))

    def outage(self, o: _Outage, jobs: list[_Job]) -> None:
        name = self.fab.hosts[o.host]
        if o.msg_at is not None:
            self.log(o.msg_at, f"error: Nodes {name} not responding")
        if o.set_down_at is not None:
            self.log(o.set_down_at, f"error: Nodes {name} not responding, setting DOWN")
            for job in jobs:
                self.log(o.set_down_at + 0.001, f"Killing {_pj(job)} on failed node {name}")
        if o.no_respond:
            self.log(o.slurmd, f"Node {name} now responding")
        if o.rebooted_at is not None:
            self.log(o.slurmd + 0.001, f"validate_node_specs: Node {name} unexpectedly rebooted "
                                       f"boot_time={self._epoch(o.boot)} last "
                                       f"response={self._epoch(o.last_response)}")
            if o.set_down_at is None:
                for job in jobs:
                    self.log(o.slurmd + 0.002, f"Killing {_pj(job)} on failed node {name}")

    def resume(self, h: int, t: float) -> None:
        self.log(t, f"update_node: node {self.fab.hosts[h]} state set to IDLE")
        self.log(t + 0.9, f"Node {self.fab.hosts[h]} now responding")

    def drain(self, h: int, t: float, reason: str) -> None:
        name = self.fab.hosts[h]
        self.log(t, f"update_node: node {name} reason set to: {reason}")
        self.log(t + 0.001, f"update_node: node {name} state set to DRAINED")

    def _epoch(self, t: float) -> int:
        return math.floor(self.clock.at(t).timestamp())

    def slurmctld_log(self) -> str:
        total = self.sc.days * 86400.0
        out = []
        for t, _, text in sorted(self.lines):
            if 0.0 <= t <= total:
                at = self.clock.at(t)
                out.append(f"[{at:%Y-%m-%dT%H:%M:%S}.{at.microsecond // 1000:03d}] {text}\n")
        return "".join(out)

    def events_txt(self) -> str:
        total = self.sc.days * 86400.0

        def stamp(t: float | None) -> str:
            return "Unknown" if t is None else f"{self.clock.at(t):%Y-%m-%dT%H:%M:%S}"

        rows = [e for e in self.events
                if e.start < total and (e.end is None or e.end >= 0.0)]
        rows.sort(key=lambda e: ("" if e.host is None else self.fab.hosts[e.host], e.start))
        out = ["Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"]
        for e in rows:
            name = "" if e.host is None else self.fab.hosts[e.host]
            out.append(f"{CLUSTER}|{name}|{stamp(e.start)}|{stamp(e.end)}|{e.state}|{e.reason}|"
                       f"{e.user}\n")
        return "".join(out)


def _pj(job: _Job) -> str:
    """slurmctld's %pJ (src/common/log.c _jobid2fmt): an array task names its raw id too."""
    if job.sacct_id is not None and "_" in job.sacct_id:
        return f"JobId={job.sacct_id}({job.job_id})"
    return f"JobId={job.job_id}"


def slurm_records(sc: Scenario, fab: _Fabric, plan: _Plan, jobs: list[_Job],
                  planner: _Planner | None, ctl: _Ctl, clock: _Clock,
                  rng: random.Random) -> tuple[str, str]:
    """(slurm/events.txt, slurm/slurmctld.log)."""
    rec = _Records(sc, fab, clock)
    total = sc.days * 86400.0
    rec.events.append(_Event(None, -rng.uniform(3.0, 20.0) * 86400.0, None, "", "", ""))
    crashed = {c.host: c for c in planner.done()} if planner is not None else {}
    for c in crashed.values():
        o = c.outage
        rec.outage(o, [c.job])
        end = c.resumed
        if o.set_down_at is not None:
            rec.events.append(_Event(c.host, o.set_down_at, o.slurmd, "DOWN*", "Not responding",
                                     SLURM_USER))
        rec.events.append(_Event(c.host, o.slurmd, end, "DOWN", "Node unexpectedly rebooted",
                                 SLURM_USER))
        if c.resumed is not None:
            rec.resume(c.host, c.resumed)
    # Re-imaged hosts: drained by an admin 30 min before their window (jobs.py keeps them
    # free), rebooted while drained, resumed at its end.
    maintenance = sorted(plan.maintenance, key=lambda m: (m[1], m[0]))  # maintenance.csv's order
    for n, (h, start, end, flaps) in enumerate(maintenance):
        reason = f"re-image OPS-{4000 + n}"
        drained = start - 1800.0
        rec.drain(h, drained, reason)
        rails = len(fab.host_hcas[h])
        down = False
        set_down: float | None = None
        since: float | None = None
        msgs: set[float] = set()
        for k in range(0, len(flaps), rails):
            group = flaps[k:k + rails]
            at = min(f.down for f in group)
            boot = max(at + 3.0, min(f.up for f in group) - rng.uniform(15.0, 25.0))
            slurmd = max(f.up for f in group) + rng.uniform(20.0, 60.0)
            o = _outage(ctl, h, at, boot, slurmd, drained=True, down=down, since=since)
            if o.msg_at in msgs:
                o.msg_at = None  # one flag, one message: the earlier reboot's tick printed it
            elif o.msg_at is not None:
                msgs.add(o.msg_at)
            rec.outage(o, [])
            since = slurmd
            if o.set_down_at is not None:
                down, set_down = True, o.set_down_at
        if set_down is None:
            rec.events.append(_Event(h, drained, end, "DRAIN", reason, "root(0)"))
        else:
            # set_node_reason appends to the admin's reason (node_mgr.c:5336-5348).
            rec.events.append(_Event(h, drained, set_down, "DRAIN", reason, "root(0)"))
            rec.events.append(_Event(h, set_down, end, "DRAIN*", f"{reason} : Not responding",
                                     SLURM_USER))
        rec.resume(h, end)
    busy: dict[int, list[tuple[float, float]]] = {}
    for job in jobs:
        for h in job.hosts:
            busy.setdefault(h, []).append((job.start, job.end if job.end is not None else total))
        _job_lines(rec, fab, job, rng)
    skip = set(crashed) | {h for h, _, _, _ in plan.maintenance}
    _idle_drains(rec, fab, busy, skip, total, rng)
    return rec.events_txt(), rec.slurmctld_log()


def _job_lines(rec: _Records, fab: _Fabric, job: _Job, rng: random.Random) -> None:
    prio = rng.randint(4294900000, 4294901760)
    usec = rng.randint(200, 4000)
    if job.sacct_id is None or "_" not in job.sacct_id:
        rec.log(job.submit, f"_slurm_rpc_submit_batch_job: JobId={job.job_id} InitPrio={prio} "
                            f"usec={usec}")
    nodes = compress_hostlist(fab.hosts[h] for h in job.hosts)
    rec.log(job.start, f"sched: Allocate {_pj(job)} NodeList={nodes} "
                       f"#CPUs={len(job.hosts) * CPUS_PER_NODE} Partition=gpu")
    if job.end is None or job.state == "NODE_FAIL":
        return  # still running, or killed with its node (the crash's lines)
    if job.state.startswith("CANCELLED"):
        uid = job.state.split(" ")[-1]
        rec.log(job.end - 0.8, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={job.label} "
                               f"uid {uid}")
        return
    code, sig = (int(x) for x in job.exit_code.split(":"))
    status = f"WTERMSIG {sig}" if sig else f"WEXITSTATUS {code}"
    rec.log(job.end, f"_job_complete: {_pj(job)} {status}")
    rec.log(job.end + 0.001, f"_job_complete: {_pj(job)} done")


def _idle_drains(rec: _Records, fab: _Fabric, busy: dict[int, list[tuple[float, float]]],
                 skip: set[int], total: float, rng: random.Random) -> None:
    """A few idle hosts an admin drains for a while (hardware checks): never while a job runs,
    so the jobs are the same whatever the site keeps."""
    gaps: list[tuple[float, float, int]] = []
    for h in range(len(fab.hosts)):
        if h in skip:
            continue
        t = 0.0
        for s, e in sorted(busy.get(h, [])):
            if s - t >= 2700.0:
                gaps.append((t, s, h))
            t = max(t, e)
        if total - t >= 2700.0:
            gaps.append((t, total, h))
    rng.shuffle(gaps)
    used: set[int] = set()
    for lo, hi, h in gaps:
        if len(used) >= max(1, len(fab.hosts) // 32):
            break
        if h in used:
            continue
        used.add(h)
        start = lo + rng.uniform(60.0, 600.0)
        reason, user = rng.choice(_DRAIN_REASONS), rng.choice(_ADMINS)
        end: float | None = min(hi - 60.0, start + rng.uniform(1800.0, 3 * 3600.0))
        if hi >= total and rng.random() < 0.5:
            end = None  # still drained when the window closes
        rec.drain(h, start, reason)
        rec.events.append(_Event(h, start, end, "DRAIN", reason, user))
        if end is not None:
            rec.resume(h, end)


def list_boots(sc: Scenario, fab: _Fabric, plan: _Plan, planner: _Planner | None,
               clock: _Clock, rng: random.Random) -> dict[str, str]:
    """boots/<host>.txt -> `journalctl --list-boots` of every host, read at the window's end."""
    total = sc.days * 86400.0
    crashed = {c.host: c for c in planner.done()} if planner is not None else {}
    maint = {h: flaps for h, _, _, flaps in plan.maintenance}
    out = {}
    seeds = [rng.getrandbits(64) for _ in fab.hosts]  # one stream per host
    for h, name in enumerate(fab.hosts):
        rng = random.Random(seeds[h])  # noqa: S311 - synthetic data, not secrets
        n_old = rng.randint(1, 3)
        current = -rng.uniform(1.0, 40.0) * 86400.0
        starts = [current]
        for _ in range(n_old):
            starts.insert(0, starts[0] - rng.uniform(2.0, 30.0) * 86400.0)
        ends = [s - rng.uniform(25.0, 300.0) for s in starts[1:]]  # shutdown, POST, boot
        read = total - rng.uniform(1.0, 120.0)
        ids = [f"{rng.getrandbits(128):032x}" for _ in range(len(starts) + 8)]
        spans = list(zip(starts, [*ends, read], strict=True))
        if h in crashed:
            c = crashed[h]
            spans[-1] = (spans[-1][0], c.outage.at - rng.uniform(0.5, 20.0))
            spans.append((c.outage.boot, read))
        elif h in maint:
            # The re-image wiped the disk: the journal starts with its reboots.
            rails = len(fab.host_hcas[h])
            flaps = maint[h]
            boots = [min(f.up for f in flaps[k:k + rails]) - rng.uniform(15.0, 25.0)
                     for k in range(0, len(flaps), rails)]
            downs = [min(f.down for f in flaps[k:k + rails]) for k in range(rails, len(flaps),
                                                                           rails)]
            spans = [(b, d - rng.uniform(1.0, 5.0)) for b, d in zip(boots, downs, strict=False)]
            spans.append((boots[-1], read))
        out[f"boots/{name}.txt"] = _journal_boots(spans, ids, clock)
    return out


def _journal_boots(spans: list[tuple[float, float]], ids: list[str], clock: _Clock) -> str:
    n = len(spans)
    idx = [str(k - n + 1) for k in range(n)]
    width = max(3, *(len(i) for i in idx))

    def stamp(t: float) -> str:
        return f"{clock.at(t):%a %Y-%m-%d %H:%M:%S} UTC"

    rows = [f"{'IDX':<{width}} {'BOOT ID':<32} {'FIRST ENTRY':<27} LAST ENTRY"]
    rows += [f"{i:>{width}} {ids[k]} {stamp(a)} {stamp(b)}"
             for k, (i, (a, b)) in enumerate(zip(idx, spans, strict=True))]
    return "\n".join(rows) + "\n"
