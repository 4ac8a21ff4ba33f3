"""Shared fixtures. Tests that need a real component skip only outside CI: in CI (CI=true) a
missing ibsim, snmpd or sshd is a failure, because .ci/run installs them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auditor.simulate import ibsim

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
