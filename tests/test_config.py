"""The config file: the shipped example loads, and every mistake names its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config import load
from auditor.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent


def test_example_config_loads() -> None:
    settings = load(REPO / "auditor.example.toml", None)
    assert settings.sweep.ibqueryerrors_args == ("--skip-sl",)
    assert settings.logs.tz == "UTC"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[sweep]\npassword = \"hunter2\"\n", "sweep.password"),
        ("[sweep]\nport = \"22\"\n", "sweep.port"),
        ("[sweep]\nbogus = 1\n", "sweep.bogus"),
        ("[logs]\ntz = \"Mars/Olympus\"\n", "logs.tz"),
        ("[logs]\npatterns = ['(unclosed']\n", "logs.patterns[0]"),
        ("[logs]\npatterns = ['no state group']\n", "logs.patterns[0]"),
        ("[[switches]]\nname = \"leaf01\"\nhost = \"h\"\nsnmp = { community = \"public\" }\n",
         "switches[0].snmp.community"),
        ("[[switches]]\nname = \"leaf01\"\nhost = \"h\"\nssh = { password = \"env:X\" }\n",
         "switches[0].ssh.user"),
        ("[[switches]]\nname = \"leaf01\"\nhost = \"h\"\ncolour = 1\n", "switches[0].colour"),
        ("[sweep\n", "auditor.toml"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, key: str) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(cfg, None)
    assert key in str(err.value)
    assert "hunter2" not in str(err.value) and "public" not in str(err.value)


def test_ranking_settings_are_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text("[ranking]\ncommon_mode_fraction = 1.5\n")
    with pytest.raises(ConfigError, match=r"ranking\.common_mode_fraction"):
        load(cfg, None)
    cfg.write_text("[ranking]\nbefore_minutes = 30\n")
    assert load(cfg, None).ranking.before_minutes == 30


def test_total_timeouts_reach_hosts_and_switches(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text('[hosts]\nnames = ["gpu01"]\ntotal_timeout_s = 45\n'
                   '[[switches]]\nname = "leaf01"\nhost = "h"\n'
                   'ssh = { user = "monitor", total_timeout_s = 90 }\n')
    settings = load(cfg, None)
    assert settings.hosts.total_timeout_s == 45
    ssh = settings.switches[0].ssh
    assert ssh is not None and ssh.total_timeout_s == 90
    cfg.write_text("[hosts]\ntotal_timeout_s = 0\n")
    with pytest.raises(ConfigError, match=r"hosts\.total_timeout_s"):
        load(cfg, None)
