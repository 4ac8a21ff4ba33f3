"""Issue 11, item 14: the whole config file is checked when it is loaded, against one schema;
every mistake is one line naming its key, and the command exits 2 before it does anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.analyse import correlate
from auditor.cli import app
from auditor.config import OutcomesSettings, RankingSettings, load
from auditor.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()

SWITCH = '[[switches]]\nname = "leaf01"\nhost = "10.0.0.1"\n'


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[sweep]\nport = true\n", "sweep.port: expected an integer, got true"),
        ("[sweep]\nport = 70000\n", "sweep.port: must be at most 65535"),
        ("[sweep]\ntimeout_s = 0\n", "sweep.timeout_s: must be greater than 0"),
        ("[sweep]\ntimeout_s = -5\n", "sweep.timeout_s: must be greater than 0"),
        ("[sweep]\nsacct = 1\n", "sweep.sacct: expected true or false, got 1"),
        ("[hosts]\nconcurrency = -4\n", "hosts.concurrency: must be at least 1"),
        ("[hosts]\ntimeout_s = 0\n", "hosts.timeout_s: must be greater than 0"),
        ("[hosts]\nport = 0\n", "hosts.port: must be at least 1"),
        ("[hosts]\nkernel_log = \"syslog\"\n", "hosts.kernel_log: one of 'dmesg', 'journal' or 'none'"),
        ("[snmp]\nconcurrency = 0\n", "snmp.concurrency: must be at least 1"),
        ("[nightly]\nlimit = 0\n", "nightly.limit: must be at least 1"),
        ("[nightly]\nlimit = 2.5\n", "nightly.limit: expected an integer, got 2.5"),
        ("[logs]\nyear = \"2026\"\n", "logs.year: expected an integer, got a string"),
        ("[store]\nbusy_timeout_s = -1\n", "store.busy_timeout_s: must be at least 0"),
        (SWITCH + 'snmp = { version = 7, community = "env:C" }\n',
         "switches[0].snmp.version: SNMP version \"2c\" or \"3\""),
        (SWITCH + 'snmp = { version = "1", community = "env:C" }\n',
         "switches[0].snmp.version: SNMP version \"2c\" or \"3\""),
        (SWITCH + 'snmp = { version = "2c" }\n', "switches[0].snmp.community: required"),
        (SWITCH + 'snmp = { version = "3" }\n', "switches[0].snmp.user: required"),
        (SWITCH + 'snmp = { version = "3", user = "u", priv_key = "env:P" }\n',
         "switches[0].snmp.auth_key: required with priv_key"),
        (SWITCH + 'snmp = { version = "3", user = "u", auth_key = "env:A", auth_proto = "SHA1" }\n',
         "switches[0].snmp.auth_proto: one of MD5, SHA,"),
        (SWITCH + 'snmp = { community = "env:C", timeout_s = 0 }\n',
         "switches[0].snmp.timeout_s: must be greater than 0"),
        (SWITCH + 'snmp = { community = "env:C", retries = -1 }\n',
         "switches[0].snmp.retries: must be at least 0"),
        (SWITCH + 'ssh = { user = "m", port = true }\n',
         "switches[0].ssh.port: expected an integer, got true"),
        ('[[switches]]\nname = ""\nhost = "h"\n', "switches[0].name: must not be empty"),
        ("switches = 3\n", "switches: expected a list of [[switches]] tables, got 3"),
        ("[ranking]\ngpus_per_node = 0\n", "ranking.gpus_per_node: must be at least 1"),
        ("[ranking]\nnccl_ib_timeout = 32\n", "ranking.nccl_ib_timeout: must be at most 31"),
        ("[ranking]\nber_limits = { QDRX = 1e-12 }\n",
         "ranking.ber_limits: 'QDRX' is not an InfiniBand link speed"),
        ("[ranking]\nber_limits = { HDR = 2 }\n", "ranking.ber_limits.HDR: must be less than 1"),
        ("[ranking]\nber_fec = { NDR = 5 }\n", "ranking.ber_fec.NDR: one of 0, 2, 3, 7, 12"),
        ("[ranking]\nsymbol_errors_per_hour = 120\n",
         "ranking.symbol_errors_per_hour: replaced by ber_limits"),
        ("[outcomes]\nclean_days = 0\n", "outcomes.clean_days: must be greater than 0"),
        ("[outcomes]\nlearned_weights = 1\n",
         "outcomes.learned_weights: expected true or false, got 1"),
        ("[outcomes]\ncohort_alpha = 1\n", "outcomes.cohort_alpha: must be less than 1"),
        ("[outcomes]\ncohort_min_ratio = 0.5\n", "outcomes.cohort_min_ratio: must be at least 1"),
        ("[outcomes]\nsince = \"forever\"\n", "outcomes.since:"),
    ],
)
def test_bad_value_is_one_line_naming_the_key(tmp_path: Path, text: str, line: str) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(cfg, None)
    assert line in str(err.value)
    res = runner.invoke(app, ["--config", str(cfg), "--db", str(tmp_path / "x.duckdb"),
                              "devices"])
    assert res.exit_code == 2, res.output
    (shown,) = res.stderr.strip().splitlines()
    assert shown.startswith("error: ") and line in shown, shown


def test_every_mistake_is_reported_at_once(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text("[sweep]\nport = true\ntimeout_s = 0\npassword = \"hunter2\"\n"
                   "[hosts]\nconcurrency = -1\n"
                   "[nightly]\nsince = \"yesterday\"\n"
                   "[colour]\nred = 1\n"
                   + SWITCH + 'snmp = { version = 7, community = "public" }\n')
    res = runner.invoke(app, ["--config", str(cfg), "devices"])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    keys = ["colour", "sweep.port", "sweep.password", "sweep.timeout_s", "hosts.concurrency",
            "nightly.since", "switches[0].snmp.version", "switches[0].snmp.community"]
    assert len(lines) == len(keys), res.stderr
    for key in keys:
        assert any(ln.startswith(f"error: {key}: ") for ln in lines), (key, lines)
    assert "hunter2" not in res.output and "public" not in res.output


def test_whole_numbers_are_accepted_where_numbers_are_expected(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text("[sweep]\ntimeout_s = 60\n[store]\nbusy_timeout_s = 0\n"
                   + SWITCH + 'snmp = { version = 3, user = "u", auth_key = "env:A" }\n')
    settings = load(cfg, None)
    assert settings.sweep.timeout_s == 60.0 and isinstance(settings.sweep.timeout_s, float)
    assert settings.busy_timeout_s == 0
    snmp = settings.switches[0].snmp
    assert snmp is not None and snmp.version == "3"


def test_defaults_are_defined_once(tmp_path: Path) -> None:
    empty = tmp_path / "auditor.toml"
    empty.write_text("")
    settings = load(empty, None)
    assert settings.ranking == RankingSettings()
    # The correlation has no settings of its own: it takes [ranking] itself.
    assert not hasattr(correlate, "Settings") and not hasattr(correlate, "settings_from")
    assert load(None, None).sweep.timeout_s == settings.sweep.timeout_s == 300.0


def test_example_config_keeps_every_documented_key() -> None:
    settings = load(REPO / "auditor.example.toml", None)
    assert settings.nightly.limit == 50 and settings.snmp_concurrency == 32
    assert settings.ranking == RankingSettings()  # the example shows the defaults
    assert settings.outcomes == OutcomesSettings()


def test_snmp_protocol_names_match_the_poller() -> None:
    from auditor.collect import snmp
    from auditor.config_schema import SNMP_AUTH_PROTOCOLS, SNMP_PRIV_PROTOCOLS

    assert set(SNMP_AUTH_PROTOCOLS) == set(snmp._AUTH)
    assert set(SNMP_PRIV_PROTOCOLS) == set(snmp._PRIV)


def test_help_does_not_import_the_schema_library() -> None:
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom auditor.cli import app\n"
            "res = CliRunner().invoke(app, ['--help'])\nassert res.exit_code == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))")
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_CONFIG"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
