"""`auditor simulate`: the command line's options turned into a scenario and written, and
the lines that say what was written (out of cli.py for issue #22: the CLI parses, this does)."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.errors import AuditorError
from auditor.simulate.scenario import REALISTIC, ScenarioOptions, generate


def run_simulate(out: Path, *, seed: int, spines: int, leaves: int, hosts: int, days: float,
                 realistic: bool, rails: int | None, nccl_versions: str | None,
                 ib_timeouts: str | None, info_share: float | None, nccl_stamps: bool | None,
                 channel_lines: bool | None, launcher_prefixes: bool | None,
                 sacct_steps: bool | None, lost_switch_logs: int | None, optics: bool,
                 ageing_optics: int | None, harmless_flaps: int | None, reboots: int | None,
                 host_records: str | None, outcomes: bool, lfts: bool = False,
                 vendor_formats: bool = False) -> list[str]:
    """Write the scenario the options describe under `out`; the lines to print. A value the
    scenario refuses is an AuditorError (exit 2) naming it."""
    lines: list[str] = []
    options: ScenarioOptions = {**REALISTIC} if realistic else {}
    try:
        if rails is not None:
            options["hcas_per_host"] = rails
        if nccl_versions is not None:
            options["nccl_versions"] = tuple(v.strip() for v in nccl_versions.split(","))
        if ib_timeouts is not None:
            words = [v.strip() for v in ib_timeouts.split(",")]
            if not all(v.lower() in ("default", "none") or v.isdigit() for v in words):
                raise ValueError(f"--ib-timeouts {ib_timeouts!r}: numbers or `default`")
            options["ib_timeouts"] = tuple(
                None if v.lower() in ("default", "none") else int(v) for v in words)
        given = {"info_share": info_share, "nccl_stamps": nccl_stamps,
                 "channel_lines": channel_lines, "launcher_prefixes": launcher_prefixes,
                 "sacct_steps": sacct_steps, "lost_switch_logs": lost_switch_logs,
                 "optics": optics or None, "ageing_optics": ageing_optics,
                 "harmless_flaps": harmless_flaps, "host_reboots": reboots,
                 "host_records": host_records}
        options.update({k: v for k, v in given.items() if v is not None})  # type: ignore[typeddict-item]
        if outcomes:
            options["outcomes"] = True
        if lfts:
            options["lfts"] = True
        if vendor_formats:
            options["vendor_formats"] = True
        truth = generate(out, seed=seed, spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                         days=days, **options)
    except ValueError as exc:
        raise AuditorError(f"simulate: {exc}") from None
    ageing = f", {len(truth.ageing_optics)} ageing transceiver(s)" if optics else ""
    harmless = (f", {len(truth.harmless_links)} harmless link(s)" if truth.harmless_links
                else "")
    crashed = (f", {len(truth.host_reboots)} host reboot(s) killing "
               f"{len(truth.host_failed_jobs)} job(s) (host records: {truth.host_records})"
               if truth.host_reboots else "")
    tables = (f", {len(truth.lft_captures)} forwarding-table capture(s) and "
              f"{len(truth.reroutes)} reroute(s) in {out / 'lfts'}" if lfts else "")
    lines.append(f"scenario written to {out}: {len(truth.bad_cables)} bad cable(s){harmless}, "
                 f"{len(truth.switch_reboots)} switch reboot(s){crashed}, {truth.jobs_total} "
                 f"jobs{ageing}{tables}; ground truth in {out / 'truth.json'}")
    if vendor_formats:
        files = json.loads((out / "truth.json").read_text(encoding="utf-8"))["vendor_formats"]
        lines.append(f"NVIDIA formats in {out / 'vendor'}: {len(files['ibdiagnet'])} "
                     f"ibdiagnet2.db_csv run(s), {len(files['nvos_events'])} NVOS event "
                     f"table(s), UFM REST events in {files['ufm_rest_events']}")
    if outcomes:
        campaign = json.loads((out / "truth.json").read_text(encoding="utf-8"))["outcomes"]
        swaps = [s for f in campaign["faults"] for s in f["swaps"]]
        lines.append(f"outcomes campaign: {len(campaign['faults'])} faulty link(s) "
                     f"({campaign['bad_lot_faults']} in bad lot {campaign['bad_lot']}), "
                     f"{len(campaign['noise'])} one-off flap(s), {len(swaps)} swap(s) "
                     f"({sum(not s['right'] for s in swaps)} of the wrong part) in "
                     f"{out / 'replacements.csv'}")
    return lines
