"""Run a piece of test code in a child process with a hard time and memory limit, for tests
of code that, when it is wrong, reads without end: the failure is a failed test, never a hung
or out-of-memory CI run. The code prints one JSON document as its last line of stdout."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _limit(memory_mb: int) -> Any:
    def apply() -> None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_child(code: str, *args: str, timeout_s: float = 60, memory_mb: int = 2048) -> Any:
    """The JSON the code printed last; the test fails if the child runs past `timeout_s` (it
    and its children are killed), dies, or prints none."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=REPO, start_new_session=True, preexec_fn=_limit(memory_mb))
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"did not finish within {timeout_s:g} s (killed); stderr: {err[-1500:]}")
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        pytest.fail(f"child exited {proc.returncode}; stderr: {err[-1500:]}")
    return json.loads(lines[-1])
