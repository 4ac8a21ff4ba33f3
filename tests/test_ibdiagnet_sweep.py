"""`[sweep] tool = "ibdiagnet"` (issue #24): the command it builds, the allowlist's refusals,
and the run's output folder ingested as kind ibdiagnet the way the sweep hands it over.

ibdiagnet (MFT/DOCA) is not installed on the machines that run these tests, so the sweep runs a
stand-in: a script named `ibdiagnet` on PATH that takes `-o <folder>` as ibdiagnet does and
writes there the db_csv, net_dump and log that `auditor.simulate.vendor_formats` writes for a
simulated fabric. What is tested is the auditor's side: the argv it runs, where it looks for
the folder, and what it stores from it.
"""

from __future__ import annotations

import os
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.collect.commands import check
from auditor.collect.runner import CommandResult, LocalRunner
from auditor.config import Settings, SweepSettings
from auditor.errors import ConfigError
from auditor.models import CableInfo
from auditor.ops.sweep import plan, sweep
from auditor.simulate.ibsim import FatTree
from auditor.simulate.vendor_formats import db_csv, net_dump, topology_of_tree
from auditor.store import Store

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
TREE = FatTree(spines=2, leaves=2, hosts_per_leaf=2, leaf_ports=6, spine_ports=4)


# ---------------------------------------------------------------------------------------------
# the allowlist


@pytest.mark.parametrize("argv", [
    ["ibdiagnet", "-o", "/var/tmp/auditor/ibdiagnet2"],
    ["ibdiagnet", "--get_cable_info", "--get_phy_info", "--pm_per_lane", "-o", "out"],
    ["ibdiagnet", "-i", "mlx5_0", "-p", "1", "--pm_pause_time", "5", "--output_path", "x/y"],
    ["ibdiagnet", "--skip", "dup_guids,dup_node_desc", "--disable_output", "csv:pm_delta"],
    ["ibdiagnet", "--extended_speeds", "all", "--back_compat_db", "2.0", "--discovery_only"],
])
def test_read_forms_pass(argv: list[str]) -> None:
    assert check(argv) == argv


@pytest.mark.parametrize("flag", ["--pc", "--scr", "--reset_phy_info", "--reset_p_info",
                                  "--clear_congestion_counters", "--ber_test"])
def test_writes_are_refused_saying_why(flag: str) -> None:
    with pytest.raises(ConfigError, match=f"ibdiagnet {flag}: would write to the fabric"):
        check(["ibdiagnet", "--get_cable_info", flag, "-o", "out"])


@pytest.mark.parametrize(("args", "message"), [
    (["--routing"], "flag not on the read-only allowlist"),
    (["--sharp", "-o", "x"], "flag not on the read-only allowlist"),
    (["--config_file", "/etc/x"], "flag not on the read-only allowlist"),
    (["-o"], "not a value the allowlist takes"),
    (["-o", "--pc"], "not a value the allowlist takes"),
    (["-o", "../../etc"], "not a value the allowlist takes"),
    (["-o", "out;rm -rf /"], "not a value the allowlist takes"),
    (["-p", "one"], "not a value the allowlist takes"),
    (["--extended_speeds", "ca"], "not a value the allowlist takes"),
    (["--skip", "$(reboot)"], "not a value the allowlist takes"),
])
def test_other_flags_and_values_are_refused(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check(["ibdiagnet", *args])


def test_the_plan_is_one_ibdiagnet_run_into_the_capture_folder(tmp_path: Path) -> None:
    settings = Settings(captures=tmp_path, sweep=SweepSettings(
        tool="ibdiagnet", ibdiagnet_args=("--get_cable_info", "--get_phy_info")))
    folder = tmp_path / "20261130T060000Z"
    assert plan(settings, folder) == [("ibdiagnet", [
        "ibdiagnet", "--get_cable_info", "--get_phy_info", "-o", str(folder / "ibdiagnet2")])]
    for _, argv in plan(settings, folder):
        check(argv)
    # the default stays the infiniband-diags tools (with dump_lfts, issue #23)
    default = [name for name, _ in plan(Settings(captures=tmp_path), folder)]
    assert default == ["ibnetdiscover", "dump_lfts", "iblinkinfo", "ibqueryerrors"]
    with pytest.raises(ConfigError, match="no -o/--output_path"):
        plan(Settings(sweep=SweepSettings(tool="ibdiagnet", ibdiagnet_args=("-o", "x"))))


def test_the_config_takes_the_tool_and_refuses_others(tmp_path: Path) -> None:
    from auditor.config import load

    cfg = tmp_path / "auditor.toml"
    cfg.write_text('[sweep]\ntool = "ibdiagnet"\nibdiagnet_args = ["--get_cable_info"]\n')
    settings = load(cfg, tmp_path / "db.duckdb")
    assert (settings.sweep.tool, settings.sweep.ibdiagnet_args) == ("ibdiagnet",
                                                                   ("--get_cable_info",))
    cfg.write_text('[sweep]\ntool = "ibdiag"\n')
    with pytest.raises(ConfigError, match=r"sweep\.tool"):
        load(cfg, tmp_path / "db.duckdb")


# ---------------------------------------------------------------------------------------------
# the sweep, with a stand-in ibdiagnet

STAND_IN = """#!{python}
# A stand-in for ibdiagnet (not installed here): takes -o <folder> as ibdiagnet does, copies
# the files of $FAKE_IBDIAG_RUN there, prints a line, exits $FAKE_IBDIAG_EXIT.
import os, shutil, sys
args = sys.argv[1:]
out = args[args.index("-o") + 1]
os.makedirs(out, exist_ok=True)
src = os.environ.get("FAKE_IBDIAG_RUN", "")
for name in (os.listdir(src) if src else []):
    shutil.copy(os.path.join(src, name), os.path.join(out, name))
print("-I- Done. Run time was 1.5 seconds.")
print("ARGS " + " ".join(args), file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_IBDIAG_EXIT", "0")))
"""


def _stand_in(tmp_path: Path, run_files: dict[str, str] | None, code: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "ibdiagnet"
    script.write_text(STAND_IN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "FAKE_IBDIAG_EXIT": str(code)}
    if run_files is not None:
        src = tmp_path / "run"
        src.mkdir()
        for name, text in run_files.items():
            (src / name).write_text(text)
        env["FAKE_IBDIAG_RUN"] = str(src)
    return env


def _run_files() -> dict[str, str]:
    topo = topology_of_tree(TREE)
    lk = topo.links[0]
    cable = CableInfo(lk.a_guid, lk.a_port, "Nvidia", "MCP1650-H001E30", "MT2312VS01234", "1 m")
    return {"ibdiagnet2.db_csv": db_csv(topo, cables=[cable], run_at=T0),
            "ibdiagnet2.net_dump": net_dump(topo, run_at=T0)}


@pytest.mark.parametrize("code", [0, 1])
def test_sweep_runs_ibdiagnet_and_ingests_its_folder(tmp_path: Path, db: Path,
                                                     code: int) -> None:
    env = _stand_in(tmp_path, _run_files(), code)
    settings = Settings(db=db, captures=tmp_path / "captures", sweep=SweepSettings(
        tool="ibdiagnet", ibdiagnet_args=("--get_cable_info",), env=env))
    with Store(db) as store:
        result = sweep(store, settings, LocalRunner(env), at=T0)
        sources = store.sources()
        fabric = store.fabric(T0)
        modules = store.transceivers()
    run_dir = result.folder / "ibdiagnet2"
    assert [(c["command"], c["status"]) for c in result.commands] == [("ibdiagnet", "ok")]
    assert (result.folder / "ibdiagnet.stderr.txt").read_text().strip() == (
        f"ARGS --get_cable_info -o {run_dir}")
    [ingested] = result.ingested
    assert (ingested.path, ingested.kind, ingested.status) == (str(run_dir), "ibdiagnet",
                                                               "ingested")
    assert [(s["kind"], s["path"]) for s in sources] == [("ibdiagnet", str(run_dir))]
    topo = topology_of_tree(TREE)
    assert set(fabric.nodes) == {n.guid for n in topo.nodes}
    assert len(fabric.links) == len(topo.links)
    assert [m["serial_number"] for m in modules] == ["MT2312VS01234"]


def test_a_run_that_left_no_folder_is_a_failed_command(tmp_path: Path, db: Path) -> None:
    env = _stand_in(tmp_path, None, 2)
    settings = Settings(db=db, captures=tmp_path / "captures", sweep=SweepSettings(
        tool="ibdiagnet", env=env))
    with Store(db) as store:
        result = sweep(store, settings, LocalRunner(env), at=T0)
        assert store.sources() == []
    [command] = result.commands
    assert command["status"] == "failed"
    assert "exit 2, no ibdiagnet2.db_csv" in str(command["detail"])


class _Remote:
    where = "mgmt01"

    def run(self, argv: list[str]) -> CommandResult:
        raise AssertionError(f"nothing may run: {argv}")

    def close(self) -> None:
        return None


def test_over_ssh_it_is_refused_before_anything_runs(tmp_path: Path, db: Path) -> None:
    settings = Settings(db=db, captures=tmp_path / "captures", sweep=SweepSettings(
        tool="ibdiagnet", host="mgmt01"))
    with Store(db) as store, pytest.raises(ConfigError, match="runs only on this machine"):
        sweep(store, settings, _Remote(), at=T0)
