"""The commands that generate evidence instead of reading a fabric: `demo` (a scenario ingested
and ranked) and `simulate` (a scenario's files and its ground truth). Part of the typer layer
(auditor/cli/__init__.py holds the app and the shared options)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from auditor.cli import _out, app


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="demo database to (re)create")] = Path(
        "auditor-demo.duckdb"),
    captures: Annotated[bool, typer.Option(
        "--captures", help="the fabric-health demo from real ibsim captures instead")] = False,
    seed: Annotated[int, typer.Option("--seed", help="scenario seed")] = 7,
) -> None:
    """Run the main job on a bundled demo: a generated fat tree with bad cables, a switch
    reboot, maintenance and failed jobs, ingested and ranked (`--captures`: the fabric-health
    demo built from real infiniband-diags captures of an ibsim fabric).

    Example:

    \b
        auditor demo
        auditor --db auditor-demo.duckdb suspects --since 24h
    """
    from auditor.demo import run_demo

    _out(run_demo(out, captures=captures, seed=seed))


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="folder to write the scenario into")],
    seed: Annotated[int, typer.Option("--seed")] = 1,
    spines: Annotated[int, typer.Option("--spines")] = 8,
    leaves: Annotated[int, typer.Option("--leaves")] = 16,
    hosts: Annotated[int, typer.Option("--hosts", help="hosts per leaf")] = 8,
    days: Annotated[float, typer.Option("--days")] = 1.0,
    realistic: Annotated[bool, typer.Option(
        "--realistic", help="job evidence as large clusters write it (the REALISTIC preset: "
        "8 rails, mixed NCCL releases and timeouts, 30 % at NCCL_DEBUG=WARN, no NCCL stamps, "
        "launcher prefixes, sacct steps, one lost switch log); the options below still win")
    ] = False,
    rails: Annotated[int | None, typer.Option(
        "--rails", help="HCAs per host, rail-optimised (leaves must be a multiple)")] = None,
    nccl_versions: Annotated[str | None, typer.Option(
        "--nccl-versions", help="NCCL releases jobs draw from, comma-separated "
        "(default 2.28.7)")] = None,
    ib_timeouts: Annotated[str | None, typer.Option(
        "--ib-timeouts", help="NCCL_IB_TIMEOUT values jobs draw from, comma-separated; "
        "`default` = the release's own, not set (default 18)")] = None,
    info_share: Annotated[float | None, typer.Option(
        "--info-share", help="share of jobs at NCCL_DEBUG=INFO, the rest at WARN "
        "(default 1)")] = None,
    nccl_stamps: Annotated[bool | None, typer.Option(
        "--nccl-stamps/--no-nccl-stamps",
        help="NCCL >= 2.26 stamps its WARN lines (default yes)")] = None,
    channel_lines: Annotated[bool | None, typer.Option(
        "--channel-lines/--no-channel-lines",
        help="INFO logs list every GPU's Using and Channel lines (default: NCCL < 2.22 "
        "only)")] = None,
    launcher_prefixes: Annotated[bool | None, typer.Option(
        "--launcher-prefixes/--no-launcher-prefixes",
        help="each job log gets one launcher's prefixes: srun -l, torchrun --tee, ts, CRI "
        "(default no)")] = None,
    sacct_steps: Annotated[bool | None, typer.Option(
        "--sacct-steps/--no-sacct-steps",
        help="sacct without -X: step lines, a few array tasks, one het job (default no)")
    ] = None,
    lost_switch_logs: Annotated[int | None, typer.Option(
        "--lost-switch-logs", help="switches left out of logs/switches.log (default 0)")
    ] = None,
    optics: Annotated[bool, typer.Option(
        "--optics", help="a daily `ethtool -m` of every host port (optics/), and transceivers "
        "that age before they flap (needs --days 8 or more)")] = False,
    ageing_optics: Annotated[int | None, typer.Option(
        "--ageing-optics", help="how many transceivers age (with --optics; default one per "
        "32 host links, at least 3)")] = None,
    outcomes: Annotated[bool, typer.Option(
        "--outcomes", help="weeks of faults with the swaps technicians made (some right, "
        "some wrong), cable lots in cabling.csv and one bad lot; the swaps in "
        "replacements.csv, the truth in truth.json's `outcomes` (needs --days 14 or more)")
    ] = False,
    harmless_flaps: Annotated[int | None, typer.Option(
        "--harmless-flaps", help="sound links (leaf uplinks and host cables in turn) whose long "
        "flaps adaptive routing or NCCL port failover absorb: no job dies of them; listed as "
        "harmless_links in truth.json (default 0)")] = None,
    reboots: Annotated[int | None, typer.Option(
        "--reboots", help="hosts that crash and reboot undeclared while they run a job: every "
        "rail drops, the job ends NODE_FAIL (on multi-rail hosts some FAILED), its peers' NCCL "
        "errors name the host; listed as host_reboots in truth.json (default 0)")] = None,
    host_records: Annotated[str | None, typer.Option(
        "--host-records", help="what the site keeps of its hosts: none (only sacct's "
        "NODE_FAIL), slurm (slurm/events.txt: sacctmgr show event, slurm/slurmctld.log), boots "
        "(boots/<host>.txt: journalctl --list-boots) or both (default: both with --reboots, "
        "else none)")] = None,
    lfts: Annotated[bool, typer.Option(
        "--lfts", help="the switches' forwarding tables as the subnet manager sets them, in "
        "dump_lfts.sh form (lfts/dump_lfts-<time>.txt, a capture whenever a minute's sweep "
        "finds them changed), its reroutes around leaf-spine links that stay down, and jobs' "
        "fates from the tables in effect; listed as lft_captures and reroutes in truth.json")
    ] = False,
    vendor_formats: Annotated[bool, typer.Option(
        "--vendor-formats", help="also write the fabric and its switch-side flaps as an NVIDIA "
        "site keeps them, under vendor/: an ibdiagnet2.db_csv per counter snapshot, each "
        "switch's NVOS event table (JSON), UFM REST events (JSON); listed as vendor_formats "
        "in truth.json")] = False,
) -> None:
    """Write a seeded fat-tree scenario with injected faults in the real formats
    (ibnetdiscover, Onyx syslog, ibqueryerrors snapshots, sacct, NCCL logs, hosts,
    maintenance; Slurm node events, slurmctld.log and boot records with --reboots; forwarding
    tables with --lfts; ibdiagnet, NVOS and UFM REST files with --vendor-formats) and its
    ground truth (truth.json), for tests, demos and evaluation.

    Example:

    \b
        auditor simulate --out /tmp/scenario --seed 3 --leaves 32 --hosts 16
        auditor simulate --out /tmp/real --realistic --leaves 16 --hosts 16 --info-share 0.5
        auditor simulate --out /tmp/ageing --optics --days 21
        auditor simulate --out /tmp/weeks --outcomes --days 28 --hosts 16
        auditor simulate --out /tmp/crash --realistic --reboots 3 --host-records slurm
    """
    from auditor.simulate.command import run_simulate

    for line in run_simulate(
            out, seed=seed, spines=spines, leaves=leaves, hosts=hosts, days=days,
            realistic=realistic, rails=rails, nccl_versions=nccl_versions,
            ib_timeouts=ib_timeouts, info_share=info_share, nccl_stamps=nccl_stamps,
            channel_lines=channel_lines, launcher_prefixes=launcher_prefixes,
            sacct_steps=sacct_steps, lost_switch_logs=lost_switch_logs, optics=optics,
            ageing_optics=ageing_optics, harmless_flaps=harmless_flaps, reboots=reboots,
            host_records=host_records, outcomes=outcomes, lfts=lfts,
            vendor_formats=vendor_formats):
        _out(line)
