"""`auditor sweep` over SSH: a real sshd on 127.0.0.1 in front of the real infiniband-diags tools
on an ibsim fabric. Host keys are checked: an unknown host key stops the sweep, nothing added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.simulate.ibsim import FatTree, IbSim, expected_links, write_net_file
from tests.sshd import Sshd

pytestmark = [pytest.mark.ssh, pytest.mark.ibsim, pytest.mark.usefixtures("need_ibsim")]
TREE = FatTree(spines=2, leaves=3, hosts_per_leaf=2)


def write_config(path: Path, server: Sshd, known: Path, env: dict[str, str], work: Path) -> None:
    lines = [
        "[sweep]", 'host = "127.0.0.1"', f"port = {server.port}", f'user = "{server.user}"',
        f'key_file = "{server.client_key}"', f'known_hosts = "{known}"',
        f'remote_dir = "{work}"', 'ibqueryerrors_args = ["--skip-sl"]', "timeout_s = 60",
        "[sweep.env]", *(f'{k} = "{v}"' for k, v in env.items()),
    ]
    path.write_text("\n".join(lines) + "\n")


def test_sweep_over_ssh_ingests_the_fabric(tmp_path: Path, sshd: Sshd) -> None:
    work = tmp_path / "remote"
    work.mkdir()
    with IbSim(write_net_file(TREE), tmp_path / "sim") as sim:
        sim.opensm_once()
        env = {k: v for k, v in sim.client_env().items()
               if k in ("LD_PRELOAD", "IBSIM_SOCKNAME", "SIM_HOST")}
        cfg = tmp_path / "auditor.toml"
        write_config(cfg, sshd, sshd.known_hosts, env, work)
        db = tmp_path / "a.duckdb"
        res = CliRunner().invoke(app, ["--db", str(db), "--config", str(cfg), "sweep",
                                       "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["where"] == "127.0.0.1"
    assert [(c["command"], c["status"]) for c in out["commands"]] == [
        ("ibnetdiscover", "ok"), ("dump_lfts", "ok"), ("iblinkinfo", "ok"),
        ("ibqueryerrors", "ok")]
    assert Path(out["captures"], "iblinkinfo.txt").read_text().count("Active/  LinkUp") == \
        2 * expected_links(TREE)
    res = CliRunner().invoke(app, ["--db", str(db), "topology", "--format", "json"])
    topo = json.loads(res.output)
    assert (topo["switches"], topo["hcas"], topo["links"]) == (5, 6, expected_links(TREE))
    sources = json.loads(CliRunner().invoke(app, ["--db", str(db), "sources", "--format",
                                                  "json"]).output)
    assert {s["origin"] for s in sources} == {"127.0.0.1"}
    assert "lfts" in {s["kind"] for s in sources}


def test_unknown_host_key_is_refused_and_not_added(tmp_path: Path, sshd: Sshd) -> None:
    known = tmp_path / "other_known_hosts"
    known.write_text("")
    cfg = tmp_path / "auditor.toml"
    write_config(cfg, sshd, known, {}, tmp_path)
    res = CliRunner().invoke(app, ["--db", str(tmp_path / "a.duckdb"), "--config", str(cfg),
                                   "sweep", "--format", "json"])
    assert res.exit_code == 1, res.output  # the host's commands failed; the sweep went on
    commands = json.loads(res.stdout)["commands"]
    assert [c["status"] for c in commands] == ["failed"] * 4  # with dump_lfts
    assert all("127.0.0.1" in c["detail"] and "not found in known_hosts" in c["detail"]
               for c in commands)
    assert known.read_text() == ""
