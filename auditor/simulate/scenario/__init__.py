"""Seeded synthetic scenarios: a fat-tree fabric, a window of faults, and the files they leave.

For tests, the demo and the ranking benchmark; `auditor simulate` (and `auditor demo`) import
it when run, no other command does.

    truth = generate(tmp_path, seed=7, spines=4, leaves=8, hosts_per_leaf=4)

writes, in the formats the auditor's parsers read (provenance next to each writer):

    topology/ibnetdiscover.txt           default ibnetdiscover form, taken before any fault
    logs/switches.log                    Onyx port events through rsyslog's RFC 3339 file format,
                                         plus sshd/ntpd/cli/config noise (none from the
                                         `lost_switch_logs` switches)
    counters/ibqueryerrors-HHMM.txt      cumulative counter snapshots every `snapshot_every_h`
                                         (`ibqueryerrors-YYYYMMDD-HHMM.txt` when days > 1)
    jobs/sacct.txt                       `sacct -P -X` with AllocTRES, hostlist-compressed nodes
                                         (`sacct -P` with step lines when `sacct_steps`)
    jobs/logs/<jobid>.log                NCCL / PyTorch / torchelastic / CUDA lines of every
                                         FAILED job (`<jobid>` as sacct prints it); with
                                         `harmless_flaps`, NCCL's start-up lines of the
                                         COMPLETED jobs that crossed a harmless flap
    hosts                                /etc/hosts form: the IPoIB (ib0) address of each host
    maintenance.csv                      target,start,end,reason of the re-imaged hosts
    optics/<host>/<mlx5_N>-<time>.txt    `ethtool -m` of every host port once a day (`optics`
                                         only: transceivers that age before they flap)
    replacements.csv                     ticket,link,part,replaced_at of the swaps technicians
                                         made (`outcomes` only: weeks of faults, swaps right
                                         and wrong, a bad lot; cabling.csv gets a lot column)
    slurm/events.txt                     `sacctmgr -P show event` over the window, and
    slurm/slurmctld.log                  slurmctld's log (`host_records` slurm or both)
    boots/<host>.txt                     `journalctl --list-boots` of every host
                                         (`host_records` boots or both)
    lfts/dump_lfts-<time>.txt            `dump_lfts.sh` of every switch's forwarding table: beside
                                         the topology snapshot, then whenever a minute's sweep
                                         finds the subnet manager changed them (`lfts` only)
    vendor/...                           `vendor_formats` only: the fabric and switch-side
                                         flaps as ibdiagnet2.db_csv runs, NVOS event tables
                                         and UFM REST events (auditor.simulate.vendor_formats)
    truth.json                           `GroundTruth.to_json()`: everything that was injected

The parts; each module imports only modules listed above it:

    clock.py       the scenario clock and its stamps
    releases.py    NCCL release facts: versions, default NCCL_IB_TIMEOUT, time to a dead link
    options.py     `Scenario` and `ScenarioOptions`, node and switch models, fault names
    truth.py       `GroundTruth` and its records (truth.json)
    fabric.py      the fat tree or rails: names, GUIDs, LIDs, links; ibnetdiscover, site files
    faults.py      the fault plan, the counters it moves, the switches whose logs are lost
    optics.py      transceivers that age before they flap, and their `ethtool -m` text
    routing.py     `lfts`: the subnet manager's forwarding tables, its reroutes, the captures
    campaign.py    the outcomes campaign: faults over weeks, the swaps, lots and a bad one
    formats.py     switch syslog, ibqueryerrors, job logs (NCCL per release, PyTorch, launchers)
    jobs.py        placement, each job's fate, sacct
    harmless.py    `harmless_flaps`: sound links whose long flaps are absorbed, their truth, the
                   logs of the completed jobs that crossed them
    silent.py      `silent_uplink`: a leaf uplink that stalls once and kills one job, unseen
    reboots.py     `host_reboots`: hosts that crash under a running job (its end, its peers'
                   NCCL lines, slurmctld's view); the site's host records (`host_records`)
    generator.py   `generate`, `write_scenario`, the ground truth, `REALISTIC`

Everything derives from the seed and the window start: same arguments, same bytes. Formatting
options draw from streams of their own: a job's fate does not depend on `info_share`,
`nccl_stamps`, `channel_lines`, `launcher_prefixes`, `sacct_steps` or `lost_switch_logs`.
`optics` is off by default; then nothing of it is drawn and the files are what they were before.
`outcomes` is off by default; then nothing of it is drawn and the files are what they were.
`host_reboots` is off by default (and `host_records` then "none"); likewise.
`lfts` and `silent_uplink` are off by default; likewise. With `lfts` the job model reads the
footprint of a job from the forwarding tables in effect (routing.py): they give every job the
footprint it has without, until the subnet manager routes around a dead leaf-spine link, so the
fates differ only for jobs that hit a flap while the routes avoided a dead link (and the draws
of the jobs after such a one).
"""

from __future__ import annotations

from auditor.simulate.scenario.generator import REALISTIC, generate, write_scenario
from auditor.simulate.scenario.options import DEFAULT_START, Scenario, ScenarioOptions
from auditor.simulate.scenario.releases import ib_timeout_default, nccl_death_s
from auditor.simulate.scenario.truth import (
    AgeingOptic,
    BadCable,
    End,
    FlapRecord,
    GroundTruth,
    HarmlessLink,
    HostFailedJob,
    HostReboot,
    Interval,
    Maintenance,
    NetworkFailedJob,
    OtherJob,
    Reporter,
    Snapshot,
    SwitchReboot,
)

__all__ = [
    "DEFAULT_START",
    "REALISTIC",
    "AgeingOptic",
    "BadCable",
    "End",
    "FlapRecord",
    "GroundTruth",
    "HarmlessLink",
    "HostFailedJob",
    "HostReboot",
    "Interval",
    "Maintenance",
    "NetworkFailedJob",
    "OtherJob",
    "Reporter",
    "Scenario",
    "ScenarioOptions",
    "Snapshot",
    "SwitchReboot",
    "generate",
    "ib_timeout_default",
    "nccl_death_s",
    "write_scenario",
]
