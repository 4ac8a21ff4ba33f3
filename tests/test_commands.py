"""The read-only allowlist: what the collectors may run, and what they must never run."""

from __future__ import annotations

import pytest

from auditor.collect.commands import check
from auditor.config import Settings, SweepSettings
from auditor.errors import ConfigError
from auditor.ops.sweep import plan


@pytest.mark.parametrize("argv", [
    ["perfquery", "-R", "3", "7"], ["perfquery", "--Reset_after_read"], ["perfquery", "-r"],
    ["ibqueryerrors", "-k"], ["ibqueryerrors", "-K"], ["ibqueryerrors", "--clear-errors"],
    ["ibportstate", "3", "7", "disable"], ["ibclearcounters"], ["rm", "-rf", "/"],
    ["iblinkinfo", "-R"], ["sacct", "--delete"], ["ibnetdiscover", "--bogus"], [],
    # forwarding tables: the whole fabric's unicast tables only (no address, range, -M)
    ["dump_lfts", "-M"], ["dump_lfts.sh", "--Multicast"], ["dump_fts", "0,1,3"],
    ["dump_lfts", "-D", "0,1"], ["dump_lfts", "3", "0x10", "0x20"], ["ibroute", "3"],
    ["dump_lfts", "-s", "1"], ["dump_mfts"],
])
def test_writes_and_unknown_commands_are_refused(argv: list[str]) -> None:
    with pytest.raises(ConfigError):
        check(argv)


def test_every_planned_sweep_command_is_allowed() -> None:
    settings = Settings(sweep=SweepSettings(ibqueryerrors_args=("--skip-sl", "-r", "--data"),
                                            iblinkinfo_args=("--line",), sacct=True))
    steps = plan(settings)
    assert [name for name, _ in steps] == ["ibnetdiscover", "dump_lfts", "iblinkinfo",
                                           "ibqueryerrors", "sacct"]
    for _, argv in steps:
        assert check(argv) == argv


def test_reads_with_values_are_allowed() -> None:
    for argv in (["perfquery", "-x", "3", "7"],
                 ["ibnetdiscover", "-C", "mlx5_1", "-P", "2", "-p"],
                 ["dump_lfts", "-n", "-C", "mlx5_1", "-P", "1"], ["dump_lfts.sh", "-a"],
                 ["dump_fts", "--no_dests", "--node-name-map", "/etc/ib-node-name-map"]):
        assert check(argv) == argv


def test_the_sweep_reads_forwarding_tables_unless_told_not_to() -> None:
    on = plan(Settings(sweep=SweepSettings(lfts_command="dump_lfts.sh", lfts_args=("-n",))))
    assert ("dump_lfts", ["dump_lfts.sh", "-n"]) in on
    off = plan(Settings(sweep=SweepSettings(lfts=False)))
    assert "dump_lfts" not in [name for name, _ in off]


@pytest.mark.parametrize("argv", [
    ["mlxlink", "-d", "mlx5_0", "-m"], ["mlxlink", "-d", "mlx5_0", "-p", "2", "--show_module"],
    ["ethtool", "-m", "ib0"], ["ethtool", "--module-info", "enp65s0f1np1"],
])
def test_transceiver_reads_are_allowed(argv: list[str]) -> None:
    assert check(argv) == argv


@pytest.mark.parametrize("argv", [
    ["mlxlink", "-d", "mlx5_0", "-a", "TG"], ["mlxlink", "-d", "mlx5_0", "--port_state", "dn"],
    ["mlxlink", "-d", "mlx5_0", "-m", "--pc"], ["mlxlink", "-d", "mlx5_0", "--speeds", "HDR"],
    ["mlxlink", "-d", "mlx5_0", "-m", "--fec", "RS"], ["mlxlink", "-d", "mlx5_0"],
    ["mlxlink", "-m"], ["mlxlink", "-d", "-a", "-m"], ["mlxlink", "-d", "mlx5_0", "-p", "x", "-m"],
    ["mlxlink", "-d", "mlx5_0", "-m", "-c"], ["mlxlink", "-d", "mlx5_0;reboot", "-m"],
    ["ethtool", "-E", "ib0", "magic", "0x1", "offset", "0", "value", "0"],
    ["ethtool", "-s", "ib0", "speed", "100000"], ["ethtool", "-m", "ib0", "hex", "on"],
    ["ethtool", "-m"], ["ethtool", "-m", "-s"], ["ethtool", "ib0"], ["ethtool", "-r", "ib0"],
])
def test_transceiver_tools_never_write(argv: list[str]) -> None:
    with pytest.raises(ConfigError):
        check(argv)
