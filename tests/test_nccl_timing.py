"""NCCL death times per version and the time placement of untimed job-log lines."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.nccl import death_s, default_ib_timeout, job_death
from auditor.parse.joblog import parse_joblog

# ---------------------------------------------------------------------------------------------
# Death times (NVIDIA/nccl NCCL_PARAM(IbTimeout) at v2.13.4-1, v2.14.3-1, v2.22.3-1, v2.23.4-1)


@pytest.mark.parametrize(("version", "timeout"), [
    ("2.12.12", 14), ("2.13.4", 14), ("2.14.3", 18), ("2.18.3", 18), ("2.22.3", 18),
    ("2.23.4", 20), ("2.28.3", 20), ("2.30.7", 20), ("nonsense", None),
])
def test_default_ib_timeout_by_version(version: str, timeout: int | None) -> None:
    assert default_ib_timeout(version) == timeout


def test_death_time_formula() -> None:
    assert death_s(18) == pytest.approx(8.59, abs=0.01)
    assert death_s(20) == pytest.approx(34.36, abs=0.01)
    assert death_s(14) == pytest.approx(0.537, abs=0.001)
    assert death_s(22, retry_cnt=3) == pytest.approx(4 * 4.096e-6 * 2**22)
    assert math.isinf(death_s(0))  # IBTA: timeout 0 waits forever


def test_job_death_prefers_the_log_then_the_site_then_the_versions_in_use() -> None:
    env = job_death(["2.28.3"], {"NCCL_IB_TIMEOUT": 18})
    assert env.exact and env.lo == pytest.approx(8.59, abs=0.01)
    assert "NCCL_IB_TIMEOUT=18" in env.rule
    own = job_death(["2.21.5"], {}, site_version="2.28.3")
    assert own.exact and own.lo == pytest.approx(8.59, abs=0.01) and "2.21.5" in own.rule
    site = job_death([], {}, site_version="2.23.4")
    assert site.lo == pytest.approx(34.36, abs=0.01) and "site" in site.rule
    site_t = job_death([], {}, site_timeout=19)
    assert site_t.lo == pytest.approx(death_s(19))
    in_use = job_death([], {}, versions_in_use=["2.29.2", "2.18.3"])
    assert (in_use.lo, in_use.hi) == (pytest.approx(8.59, abs=0.01), pytest.approx(34.36, abs=0.01))
    assert not in_use.exact and "2.18.3 - 2.29.2" in in_use.rule
    nothing = job_death([], {})
    assert nothing.lo < nothing.hi and "unknown" in nothing.rule
    retry = job_death(["2.18.3"], {"NCCL_IB_RETRY_CNT": 3})
    assert retry.lo == pytest.approx(4 * 4.096e-6 * 2**18)


# ---------------------------------------------------------------------------------------------
# What a log says about its NCCL


def test_version_and_environment_lines() -> None:
    lines = [
        "gpu-1:11:11 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "gpu-1:11:11 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
        "gpu-1:11:11 [0] NCCL INFO NCCL_IB_RETRY_CNT set by environment to 5.",
        "gpu-2:12:12 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 16.",  # first one wins
        "[rank0]:[E1122 05:43:54.766013 ProcessGroupNCCL.cpp:1895] Process group watchdog "
        "thread terminated with exception: NCCL error: remote process exited or there was a "
        "network error, NCCL version 2.20.5",
    ]
    got = parse_joblog(list(enumerate(lines, 1)), year=2026)
    assert got.nccl_versions == ["2.21.5", "2.20.5"]
    assert got.nccl_env == {"NCCL_IB_TIMEOUT": 22, "NCCL_IB_RETRY_CNT": 5}
    assert [e.kind for e in got.errors] == ["remote_error"]


# ---------------------------------------------------------------------------------------------
# Untimed lines between stamped ones

_WARN = ("gpu-1:11:12 [3] transport/net_ib.cc:1034 NCCL WARN NET/IB : Got completion from peer "
         "10.0.0.2<43213> with status=12 opcode=0 len=0 vendor err 129 (Recv)")
_WATCHDOG = ("[rank3]:[E{md} {t} ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
             "Timeout(ms)=600000) ran for {ms} milliseconds before timing out.")


def test_untimed_errors_take_the_bounds_of_their_stamped_neighbours() -> None:
    lines = [
        _WATCHDOG.format(md="1122", t="05:30:00.000000", ms=600100),
        _WARN,
        _WARN.replace("10.0.0.2", "10.0.0.3"),
        _WATCHDOG.format(md="1122", t="05:34:20.500000", ms=600020),
    ]
    got = parse_joblog(list(enumerate(lines, 1)), year=2026)
    first, a, b, last = got.errors
    assert first.at == datetime(2026, 11, 22, 5, 30, tzinfo=UTC) and first.ran_ms == 600100
    for e in (a, b):
        assert e.at is None
        assert e.not_before == datetime(2026, 11, 22, 5, 29, 58, tzinfo=UTC)  # 2 s slack
        assert e.not_after == datetime(2026, 11, 22, 5, 34, 22, 500000, tzinfo=UTC)
    assert last.ran_ms == 600020 and first.not_before is None and last.not_after is None
    assert got.dated == (first.at, last.at)


def test_a_log_without_any_stamp_keeps_no_bounds() -> None:
    got = parse_joblog([(1, _WARN)])
    (e,) = got.errors
    assert (e.at, e.not_before, e.not_after) == (None, None, None)
    assert got.dated is None


def test_ts_wrapper_stamp_dates_nccl_lines() -> None:
    got = parse_joblog([(1, "Nov 22 05:43:54 " + _WARN)], year=2026)
    (e,) = got.errors
    assert e.at == datetime(2026, 11, 22, 5, 43, 54, tzinfo=UTC)
    assert (e.host, e.status, e.peer) == ("gpu-1", 12, "10.0.0.2")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 86_000)), min_size=1, max_size=30))
def test_time_placement_never_contradicts_the_stamps(offsets: list[int | None]) -> None:
    """Every untimed line's interval holds every instant the stamped lines around it allow,
    and is no wider than its nearest stamped neighbours (plus the slack)."""
    base = datetime(2026, 11, 22, tzinfo=UTC)
    lines = []
    for off in offsets:
        if off is None:
            lines.append(_WARN)
        else:
            at = base + timedelta(seconds=off)
            lines.append(f"[{at:%Y-%m-%d %H:%M:%S}] " + _WARN)
    got = parse_joblog(list(enumerate(lines, 1)))
    assert len(got.errors) == len(lines)
    slack = timedelta(seconds=2)
    for i, e in enumerate(got.errors):
        before = [base + timedelta(seconds=o) for o in offsets[:i] if o is not None]
        after = [base + timedelta(seconds=o) for o in offsets[i + 1:] if o is not None]
        if offsets[i] is not None:
            assert e.at == base + timedelta(seconds=offsets[i])
            assert e.not_before is None and e.not_after is None
            continue
        assert e.at is None
        assert e.not_before == (max(before) - slack if before else None)
        assert e.not_after == (min(after) + slack if after else None)
