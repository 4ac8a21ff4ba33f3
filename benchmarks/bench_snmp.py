"""Benchmark (c): SNMP-poll 500 switches' worth of IF-MIB rows on 127.0.0.1.

Real Net-SNMP snmpd processes serve the fake IB switch of tests/snmp_agent (64 ports each by
default, ifTable + ifXTable + MELLANOX-IF-VPI-MIB through pass_persist). Each agent answers
several communities and each community is polled as its own target, so 20 agents x 25
communities = 500 targets, 32,000 ports, 320,000 values.

Prints wall time, targets/s and the CPU seconds of the client (this process, plus worker
processes when --processes > 1) and of the agents (snmpd and its pass_persist backends, read
from /proc/<pid>/stat) for each run, and says which side bounds the wall time. The baseline
(one target after another, in the same run) is measured on --baseline-sample targets and scaled
to the full count; `--baseline-sample 0` measures it on every target (about twice as long).

    python benchmarks/bench_snmp.py [--agents 20 --communities 25 --ports 64]
                                    [--concurrency 32] [--processes 2] [--baseline-sample 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from auditor.collect.snmp import SnmpTarget, poll
from auditor.config import Secret, SnmpSettings
from auditor.models import SnmpResult

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the agent launcher lives with the tests
from tests.snmp_agent.launcher import Snmpd, unavailable_reason  # noqa: E402

FIELDS_PER_PORT = 10  # columns walked per port (8 IF-MIB + 2 MELLANOX-IF-VPI-MIB)


@dataclass
class Run:
    label: str
    targets: int
    wall: float
    client_cpu: float
    agent_cpu: float
    other_cpu: float  # everything else on the machine meanwhile (other users' jobs, kernel)
    statuses: Counter[str]
    ports: int

    def scaled(self, factor: float, label: str) -> Run:
        return Run(label, round(self.targets * factor), self.wall * factor,
                   self.client_cpu * factor, self.agent_cpu * factor, self.other_cpu * factor,
                   Counter({k: round(v * factor) for k, v in self.statuses.items()}),
                   round(self.ports * factor))


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of our own agent processes (fields 14 and 15 of /proc/<pid>/stat)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle since boot (first line of /proc/stat)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def measure(label: str, targets: list[SnmpTarget], agents: list[Snmpd], concurrency: int,
            processes: int = 1) -> Run:
    pids = [pid for a in agents if a.proc is not None for pid in (a.proc.pid, *a.children())]
    agent0, client0, kids0 = cpu_seconds(pids), time.process_time(), os.times()
    busy0 = machine_busy_seconds()
    t0 = time.perf_counter()
    results: list[SnmpResult] = poll(targets, concurrency=concurrency, processes=processes)
    wall = time.perf_counter() - t0
    kids = os.times()  # worker processes are reaped by now, so their CPU shows here
    workers = (kids.children_user - kids0.children_user) \
        + (kids.children_system - kids0.children_system)
    client = time.process_time() - client0 + workers
    agent = cpu_seconds(pids) - agent0
    other = max(0.0, machine_busy_seconds() - busy0 - client - agent)
    return Run(label, len(targets), wall, client, agent, other,
               Counter(r.status for r in results), sum(len(r.ports) for r in results))


def verdict(run: Run, processes: int) -> str:
    cores = os.cpu_count() or 1
    client_load = run.client_cpu / run.wall  # cores' worth kept busy by the client
    agent_load = run.agent_cpu / run.wall
    other_load = run.other_cpu / run.wall
    note = f"; other processes took {other_load:.2f} cores" if other_load > 0.1 else ""
    if client_load + agent_load + other_load > 0.85 * cores:
        side = "client" if client_load >= agent_load else "agents"
        return (f"the machine's {cores} cores are saturated, mostly by the {side} "
                f"(client {client_load:.2f}, agents {agent_load:.2f} cores{note})")
    if client_load > 0.85 * processes:
        return (f"client-bound: {client_load:.2f} of {processes} client core(s) busy "
                f"(BER decoding in pysnmp/pyasn1); agents used {agent_load:.2f} cores{note}")
    if agent_load > client_load:
        return f"agent-bound: agents {agent_load:.2f} cores, client {client_load:.2f}{note}"
    return (f"latency-bound (waiting on answers): client {client_load:.2f}, agents "
            f"{agent_load:.2f} cores{note}")


def show(run: Run) -> None:
    ok = run.statuses.get("ok", 0)
    other = ", ".join(f"{k} {v}" for k, v in sorted(run.statuses.items()) if k != "ok")
    print(f"  {run.label:<34} {run.wall:7.2f} s  {run.targets / run.wall:7.1f} targets/s  "
          f"{run.ports * FIELDS_PER_PORT / run.wall:8.0f} values/s  "
          f"CPU s: client {run.client_cpu:6.2f} agents {run.agent_cpu:6.2f} "
          f"others {run.other_cpu:5.2f}  "
          f"ok {ok}/{run.targets}{'  ' + other if other else ''}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--communities", type=int, default=25, help="targets per agent")
    ap.add_argument("--ports", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--processes", type=int, default=1,
                    help="also run with this many client processes (1: skip that run)")
    ap.add_argument("--baseline-sample", type=int, default=50,
                    help="targets for the one-by-one baseline, scaled up (0: all)")
    ap.add_argument("--timeout", type=float, default=5.0)
    args, unknown = ap.parse_known_args()
    if unknown:
        print(f"(ignoring arguments meant for other benchmarks: {' '.join(unknown)})")
    reason = unavailable_reason()
    if reason:
        sys.exit(f"bench_snmp: {reason}")

    communities = tuple(f"bench-c{c:02d}" for c in range(args.communities))
    for c, value in enumerate(communities):
        os.environ[f"BENCH_SNMP_C{c:02d}"] = value
    total = args.agents * args.communities
    print(f"SNMP poll: {args.agents} snmpd x {args.communities} communities = {total} targets, "
          f"{args.ports} ports each ({total * args.ports:,} ports, "
          f"{total * args.ports * FIELDS_PER_PORT:,} values); {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-snmp-") as tmp:
        agents: list[Snmpd] = []
        try:
            t0 = time.perf_counter()
            for a in range(args.agents):
                agents.append(Snmpd(Path(tmp) / f"agent{a:02d}", communities=communities,
                                    ports=args.ports).start())
            print(f"  {args.agents} agents started in {time.perf_counter() - t0:.2f} s")
            targets = [
                SnmpTarget(f"sw{a:02d}-{c:02d}", "127.0.0.1",
                           SnmpSettings(port=agent.port,
                                        community=Secret(f"env:BENCH_SNMP_C{c:02d}"),
                                        timeout_s=args.timeout, retries=1))
                for a, agent in enumerate(agents) for c in range(args.communities)]
            # Warm-up: snmpd starts its pass_persist backends on the first request.
            warm = poll(targets[:: args.communities], concurrency=args.concurrency)
            bad = [r for r in warm if r.status != "ok"]
            if bad:
                sys.exit(f"warm-up failed: {bad[0].target}: {bad[0].status}: {bad[0].detail}")

            runs = [measure(f"concurrent ({args.concurrency} in flight)", targets, agents,
                            args.concurrency)]
            show(runs[0])
            if args.processes > 1:
                runs.append(measure(f"{args.processes} processes x "
                                    f"{args.concurrency // args.processes} in flight",
                                    targets, agents, args.concurrency, args.processes))
                show(runs[-1])
            sample = targets if args.baseline_sample <= 0 else \
                targets[:: max(1, total // args.baseline_sample)][: args.baseline_sample]
            base = measure(f"baseline: one by one ({len(sample)} targets)", sample, agents, 1)
            show(base)
            if len(sample) < total:
                base = base.scaled(total / len(sample), f"baseline scaled to {total} targets")
                show(base)
        finally:
            for agent in agents:
                agent.stop()

    print()
    for run in runs:
        print(f"  {run.label}: {base.wall / run.wall:.2f}x faster than one by one "
              f"({run.wall:.1f} s vs {base.wall:.1f} s)")
        print(f"    bound: {verdict(run, args.processes if 'processes' in run.label else 1)}")
    print(f"  baseline bound: {verdict(base, 1)}")
    per_target = runs[0].client_cpu / runs[0].targets
    print(f"  client CPU per {args.ports}-port target: {per_target * 1000:.0f} ms "
          f"({per_target / (args.ports * FIELDS_PER_PORT) * 1e6:.0f} us per value)")


if __name__ == "__main__":
    main()
