"""Every allowlist and name pattern refuses a trailing newline (issue #21, finding 8).

`re.match` with a `$` anchor accepts "x\\n": `$` also matches before a final newline. The sysfs
root is pasted into an `sh -c` string, where that newline starts a second command; the other
names become argv words, file names or folder names. Each pattern is used with fullmatch."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.collect import commands, hostcmd, onyx
from auditor.config import load
from auditor.errors import AuditorError, CollectError, ConfigError
from auditor.ops import retention
from auditor.portmap import normalise_guid, port_number
from auditor.sql import load as load_query
from auditor.timeparse import parse_span


def test_sysfs_root_with_a_trailing_newline_is_refused() -> None:
    assert hostcmd.check_sysfs_root("/sys/class/infiniband/") == "/sys/class/infiniband"
    for bad in ("/sys/class/infiniband\n", "/tmp/x\n", "/tmp/x\nreboot"):
        with pytest.raises(ConfigError, match="sysfs_root"):
            hostcmd.check_sysfs_root(bad)
        with pytest.raises(ConfigError):
            hostcmd.sysfs_command(bad)


@pytest.mark.parametrize(("build", "name"), [
    (hostcmd.mlxlink_command, "mlx5_0"), (hostcmd.ethtool_command, "ib0")])
def test_host_device_names_with_a_trailing_newline_are_refused(build: object, name: str) -> None:
    assert callable(build)
    assert name in build(name)
    with pytest.raises(CollectError, match="not a"):
        build(name + "\n")


@pytest.mark.parametrize("argv", [
    ("mlxlink", "-d", "mlx5_0\n", "-m"),
    ("ethtool", "-m", "ib0\n"),
    ("ls", "-1", "/sys/class/infiniband/mlx5_0\n/device/net"),
    ("ls", "-1", "/sys/class/infiniband\n"),
])
def test_the_host_allowlist_refuses_names_with_a_trailing_newline(argv: tuple[str, ...]) -> None:
    good = tuple(a.replace("\n", "") for a in argv)
    assert hostcmd.check_host_command(good) == list(good)
    with pytest.raises(CollectError, match="allowlist"):
        hostcmd.check_host_command(argv)


@pytest.mark.parametrize("argv", [
    ["mlxlink", "-d", "mlx5_0\n", "-m"], ["mlxlink", "-d", "mlx5_0", "-p", "1\n", "-m"],
    ["ethtool", "-m", "ib0\n"]])
def test_the_fabric_allowlist_refuses_names_with_a_trailing_newline(argv: list[str]) -> None:
    good = [a.replace("\n", "") for a in argv]
    assert commands.check(good) == good
    with pytest.raises(ConfigError):
        commands.check(argv)


def test_onyx_commands_with_a_trailing_newline_are_refused() -> None:
    for cmd in ("show interfaces ib 1/1 transceiver", "show interfaces ib 1/1 transceiver "
                "diagnostics", "show version"):
        assert onyx.check_command(cmd) == cmd
        with pytest.raises(CollectError, match="allowlist"):
            onyx.check_command(cmd + "\n")


def test_query_names_with_a_trailing_newline_are_refused() -> None:
    assert "schema_version" in load_query("schema")
    with pytest.raises(AuditorError, match="bad query name"):
        load_query("schema\n")


def test_a_span_is_one_number_and_one_unit() -> None:
    assert parse_span(" 24h ").total_seconds() == 86400  # spaces around it are fine
    for bad in ("24h\nx", "24h\n5m", "\u0662\u0664h"):
        with pytest.raises(AuditorError):
            parse_span(bad)


def test_a_report_folder_name_with_a_trailing_newline_is_not_pruned(tmp_path: Path) -> None:
    """prune_reports deletes what its pattern calls a dated folder: only exact names."""
    old, odd, other = (tmp_path / "2020-01-01", tmp_path / "2020-01-01\n",
                       tmp_path / "\u0662\u0660\u0662\u0660-01-01")  # Arabic-Indic digits
    for folder in (old, odd, other):
        folder.mkdir()
    removed = retention.prune_reports(tmp_path, 1.0, datetime(2026, 1, 1, tzinfo=UTC))
    assert removed == [old]
    assert odd.is_dir() and other.is_dir()


def test_port_and_guid_names_with_a_trailing_newline_are_not_names() -> None:
    from auditor.portmap import _HCA_PORT, _NVOS, _ONYX  # the patterns themselves

    assert port_number("IB1/17") == 17 and port_number("sw1p2") == 2
    for pattern, text in ((_ONYX, "IB1/17"), (_NVOS, "sw1p2s1"), (_HCA_PORT, "mlx5_0/1")):
        assert pattern.fullmatch(text)
        assert not pattern.fullmatch(text + "\n")
    assert normalise_guid("0x0002c9030001a2b4") == "0x0002c9030001a2b4"
    assert normalise_guid("0x0002c90300\n01a2b4") is None
    assert port_number("¹") is None  # a digit to str.isdigit, not to int()
    assert port_number("IB1/\u0661\u0667") is None


def test_an_environment_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text('[sweep.env]\n"LD_LIBRARY_PATH\\n" = "/opt/x"\n')
    with pytest.raises(ConfigError, match="environment variable name"):
        load(cfg, tmp_path / "a.duckdb")


def test_an_export_fabric_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "a.duckdb"), "export", "--out",
                                      str(tmp_path / "out"), "--fabric", "pod1\n"])
    assert result.exit_code == 2
    assert "--fabric" in result.stderr
    assert not (tmp_path / "out").exists()
