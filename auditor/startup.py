"""What keeps the command line quick to start (issue #13; out of cli.py for issue #22).

`auditor --help` and `--version` import only typer and auditor/cli/: every command imports what it
uses when it runs (tests/test_imports.py keeps it that way), and `cli.main` builds only the
command a command line names (`named_command`). A command that ranks a window runs with the
cyclic garbage collector off (`no_collector`)."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

# main_options' options that take a value: skipped when looking for the command's name.
GLOBAL_WITH_VALUE = ("--db", "--config", "-c")


def no_collector(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """For a command that reads a window, ranks it and exits: it makes its objects once and
    keeps them to the end, none of them in reference cycles (the same peak memory with the
    collector off, `suspects --since 30d` 345 MB). Collecting them as they were made was
    10-15 ms of `suspects --since 24h` (issue #13). On again after it (tests run commands
    in one process)."""

    @functools.wraps(command)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        was = gc.isenabled()
        gc.disable()
        try:
            return command(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return run


def tune_collector() -> None:
    """A command makes hundreds of thousands of small objects (a 4,096-host fabric, its jobs
    and events) and almost no reference cycles, yet CPython's default collector thresholds
    had `suspects --since 24h` spend 0.2 s of its 0.95 s collecting. What the imports made is
    moved out of the collector's sight, and it runs less often (measured: 24h 0.93 -> 0.73 s,
    30d 2.8 -> 2.15 s, the same peak memory)."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def named_command(argv: list[str]) -> str | None:
    """The command a command line names after the global options, if it is plain to see."""
    i = 0
    while i < len(argv):
        if argv[i] in GLOBAL_WITH_VALUE:
            i += 2
        elif argv[i].startswith(("--db=", "--config=")):
            i += 1
        else:
            return None if argv[i].startswith("-") else argv[i]
    return None


__all__ = ["GLOBAL_WITH_VALUE", "named_command", "no_collector", "tune_collector"]
