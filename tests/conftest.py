"""Shared fixtures. Tests that need a real component skip only outside CI: in CI (CI=true) a
missing ibsim, snmpd or sshd is a failure, because .ci/run installs them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.simulate import ibsim
from tests.sshd import Sshd, sshd_missing, start_sshd

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def need(reason: str | None) -> None:
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "auditor.duckdb"


@pytest.fixture
def need_ibsim() -> None:
    need(ibsim.unavailable_reason())


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    """A real OpenSSH sshd on 127.0.0.1 (tests/sshd.py), stopped after the test."""
    need(sshd_missing())
    server = start_sshd(tmp_path / "sshd")
    yield server
    server.stop()
