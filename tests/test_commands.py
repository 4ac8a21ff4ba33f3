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
])
def test_writes_and_unknown_commands_are_refused(argv: list[str]) -> None:
    with pytest.raises(ConfigError):
        check(argv)


def test_every_planned_sweep_command_is_allowed() -> None:
    settings = Settings(sweep=SweepSettings(ibqueryerrors_args=("--skip-sl", "-r", "--data"),
                                            iblinkinfo_args=("--line",), sacct=True))
    steps = plan(settings)
    assert [name for name, _ in steps] == ["ibnetdiscover", "iblinkinfo", "ibqueryerrors",
                                           "sacct"]
    for _, argv in steps:
        assert check(argv) == argv


def test_reads_with_values_are_allowed() -> None:
    for argv in (["perfquery", "-x", "3", "7"],
                 ["ibnetdiscover", "-C", "mlx5_1", "-P", "2", "-p"]):
        assert check(argv) == argv
