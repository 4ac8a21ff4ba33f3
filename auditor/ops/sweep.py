"""A sweep: run the read-only fabric commands, keep the raw captures for replay, ingest them."""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from auditor.collect.runner import CommandResult, Runner, save_capture
from auditor.config import Settings
from auditor.errors import AuditorError, CollectError, ConfigError
from auditor.ingest.captures import IngestResult, ingest_files
from auditor.ops.hosts import collect_hosts
from auditor.ops.switches import collect_cli, poll_snmp
from auditor.store import Store


@dataclass(slots=True)
class SweepResult:
    at: datetime
    folder: Path
    where: str
    commands: list[dict[str, object]] = field(default_factory=list)
    ingested: list[IngestResult] = field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, object]]:
        return [c for c in self.commands if c["status"] != "ok"]


def _ok(name: str, result: CommandResult) -> bool:
    # ibqueryerrors exits 1 when it found errors; that is a successful read. Without an SA to
    # ask (no --skip-sl and no SM daemon) it prints nothing and still exits 0: a failure.
    codes = (0, 1) if name == "ibqueryerrors" else (0,)
    if name == "dump_lfts":
        # dump_lfts.sh exits with its trailer's `echo`, 0 even when dump_fts failed
        # (rdma-core@v44.0 infiniband-diags/scripts/dump_lfts.sh.in:8-12): a table or nothing.
        return result.exit_code == 0 and "Unicast lids [" in result.stdout
    return result.exit_code in codes and bool(result.stdout.strip())


def _ibdiagnet_step(out_dir: Path, out: CommandResult, files: list[Path],
                    result: SweepResult) -> None:
    """An ibdiagnet run is read when it left its db_csv (or net_dump), whatever its exit code:
    the manual pages cited in auditor/collect/commands.py do not document its codes, and a
    run whose checks found errors is the one to read (as ibqueryerrors' exit 1 is)."""
    from auditor.ingest.ibdiagnet import is_run_folder

    if is_run_folder(out_dir):
        files.append(out_dir)
        result.commands.append({"command": "ibdiagnet", "status": "ok",
                                "detail": f"{out_dir} (exit {out.exit_code})"})
        return
    first = (out.stderr.strip().splitlines() or out.stdout.strip().splitlines()[-1:]
             or ["no output"])[0][:200]
    result.commands.append({"command": "ibdiagnet", "status": "failed",
                            "detail": f"exit {out.exit_code}, no ibdiagnet2.db_csv in "
                            f"{out_dir}: {first}"})


SACCT_FORMAT = ("--format=JobID,JobIDRaw,JobName,Partition,State,ExitCode,Start,End,NNodes,"
                "NodeList,AllocTRES")


IBDIAGNET_FOLDER = "ibdiagnet2"  # the run's output folder, in the sweep's capture folder


def plan(settings: Settings, folder: Path | None = None) -> list[tuple[str, list[str]]]:
    """The commands of one sweep; `folder`: where its captures go (ibdiagnet writes its output
    folder there, `-o <folder>/ibdiagnet2`)."""
    s = settings.sweep
    if s.tool == "ibdiagnet":
        if {"-o", "--output_path"} & set(s.ibdiagnet_args):
            raise ConfigError("sweep.ibdiagnet_args: no -o/--output_path; the sweep writes the "
                              "run into its capture folder")
        out = (folder or settings.captures_dir) / IBDIAGNET_FOLDER
        steps = [("ibdiagnet", ["ibdiagnet", *s.ibdiagnet_args, "-o", str(out)])]
    else:
        steps = [("ibnetdiscover", ["ibnetdiscover", *s.ibnetdiscover_args])]
        if s.lfts:
            # right after the topology it is read against: the SM may reroute at any moment
            steps.append(("dump_lfts", [s.lfts_command, *s.lfts_args]))
        steps += [
            ("iblinkinfo", ["iblinkinfo", *s.iblinkinfo_args]),
            ("ibqueryerrors", ["ibqueryerrors", *s.ibqueryerrors_args]),
        ]
    if s.sacct:
        steps.append(("sacct", ["sacct", "-P", "--allusers", "--allocations", "--duplicates",
                                f"--starttime={s.sacct_since}", "--endtime=now", SACCT_FORMAT]))
    return steps


def sweep(store: Store, settings: Settings, runner: Runner,
          at: datetime | None = None, node_names: dict[str, str] | None = None) -> SweepResult:
    """Run every command of the plan, then poll and read the configured switches; a failing
    command or an unreachable switch is recorded and the rest go on."""
    moment = at or datetime.now(UTC)
    folder = settings.captures_dir / moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    result = SweepResult(moment, folder, runner.where)
    steps = plan(settings, folder)
    if settings.sweep.tool == "ibdiagnet" and runner.where != "local":
        # Its output is a folder of files on the host that ran it, not its stdout: the runner
        # brings back stdout only (fetching the folder over SSH is not built).
        raise ConfigError(f"sweep.tool = \"ibdiagnet\" runs only on this machine; unset "
                          f"sweep.host ({runner.where}) or run the auditor where ibdiagnet runs")
    files: list[Path] = []
    for name, argv in steps:
        try:
            out = runner.run(argv)
        except CollectError as exc:
            result.commands.append({"command": name, "status": "failed", "detail": str(exc)})
            continue
        path = save_capture(folder, name, out)
        if name == "ibdiagnet":
            _ibdiagnet_step(folder / IBDIAGNET_FOLDER, out, files, result)
            continue
        if _ok(name, out):
            files.append(path)
            result.commands.append({"command": name, "status": "ok", "detail": str(path)})
        else:
            first = (out.stderr.strip().splitlines() or ["no output"])[0][:200]
            result.commands.append({"command": name, "status": "failed",
                                    "detail": f"exit {out.exit_code}: {first}"})
    fabric_files = [f for f in files if f.stem not in ("sacct", "dump_lfts")]
    if fabric_files:
        kind = "ibdiagnet" if settings.sweep.tool == "ibdiagnet" else "auto"
        result.ingested = ingest_files(store, fabric_files, kind=kind, at=moment,
                                       origin=runner.where, node_names=node_names,
                                       aliases=settings.aliases)
    # The forwarding tables on their own: a table the parser refuses must not cost the sweep
    # its topology and counters.
    for lfts in (f for f in files if f.stem == "dump_lfts"):
        try:
            result.ingested += ingest_files(store, [lfts], kind="lfts", at=moment,
                                            origin=runner.where)
        except AuditorError as exc:
            result.commands.append({"command": "ingest dump_lfts", "status": "failed",
                                    "detail": str(exc)[:200]})
    if any(f.stem == "sacct" for f in files):
        from zoneinfo import ZoneInfo

        from auditor.ingest.jobs import JobOptions, ingest_job_files

        # slurmctld prints local time without a zone: the same zone as the site's logs.
        result.ingested += ingest_job_files(
            store, [f for f in files if f.stem == "sacct"], "sacct",
            JobOptions(tz=ZoneInfo(settings.logs.tz)), now=moment)
    # The site's log files (switch syslog, UFM events, opensm): re-reading a grown file stores
    # only its new events.
    # The patterns are absolute (resolved against the config file), which Path.glob refuses.
    logs = sorted({Path(m) for pattern in settings.logs.paths
                   for m in glob.glob(pattern)})  # noqa: PTH207
    if logs:
        from auditor.ingest.common import LogOptions
        from auditor.ingest.logs import ingest_logs

        opts = LogOptions.from_settings(settings)
        for log in logs:
            try:
                result.ingested += ingest_logs(store, [log], "auto", opts, now=moment)
            except AuditorError as exc:  # one unreadable log must not stop the sweep
                result.commands.append({"command": f"log {log}", "status": "failed",
                                        "detail": str(exc)})
    # Switch-side evidence after the topology, so its port names map onto this sweep's graph.
    outcomes = [*poll_snmp(store, settings, moment), *collect_cli(store, settings, moment),
                *collect_hosts(store, settings, moment)]
    for outcome in outcomes:
        result.commands.append({
            "command": f"{outcome.collector} {outcome.device}",
            "status": "ok" if outcome.status == "ok" else "failed",
            "detail": f"{outcome.status}: {outcome.detail}" if outcome.status != "ok" else
            f"{outcome.events} port event(s)" if outcome.collector in ("snmp", "host")
            else "read",
        })
    return result
