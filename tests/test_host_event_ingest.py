"""Issue #20's host evidence through `auditor ingest`: `--kind slurm-events|slurmctld|boots`
and `auto` recognising them from real captures, the host a boots file needs, a file of another
format refused in one line (exit 2, nothing stored), a re-ingest a no-op, and the kernel log's
boot banner stored as a boot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.store import Store

runner = CliRunner()
FIX = Path(__file__).parent / "fixtures"
EVENTS = FIX / "slurm_events" / "loopback_22_05_default_columns_cluster_row_open_events.txt"
CTLD = FIX / "slurmctld" / "loopback_22_05_iso8601_ms_kill_slurmd_drain_reboot.txt"
BOOTS = FIX / "boots" / "newer_systemd_252_utc.txt"
LAST = FIX / "boots" / "last_x_F_2_38_full_times.txt"


def _ingest(db: Path, *args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, ["--db", str(db), "ingest", "--format", "json", *args])
    return res.exit_code, res.stdout, res.stderr


def _rows(db: Path) -> list[tuple[str, str, str]]:
    with Store(db, read_only=True) as store:
        return [(r[0], r[1], r[2]) for r in store._con.execute(
            "select e.host, e.kind, s.kind from host_events e join sources s using "
            "(source_id) order by e.event_at, e.host").fetchall()]


@pytest.mark.parametrize(("path", "kind"), [(EVENTS, "slurm-events"), (CTLD, "slurmctld"),
                                            (BOOTS, "boots"), (LAST, "boots")])
def test_auto_recognises_each_kind(tmp_path: Path, path: Path, kind: str) -> None:
    db = tmp_path / "a.duckdb"
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    code, out, err = _ingest(db, "--host", "gpu-001", str(copy))
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["kind"] == kind and row["records"] > 0
    stored = _rows(db)
    assert stored and {k for _, _, k in stored} == {kind}
    # the same file again with the same options: nothing new
    code, out, _ = _ingest(db, "--host", "gpu-001", str(copy))
    assert code == 0 and json.loads(out)[0]["status"] == "already ingested"
    assert _rows(db) == stored


def test_events_carry_what_slurm_said(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    assert _ingest(db, "--kind", "slurm-events", str(EVENTS))[0] == 0
    assert _ingest(db, "--kind", "slurmctld", "--tz", "UTC", str(CTLD))[0] == 0
    kinds = {(k, src) for _, k, src in _rows(db)}
    assert {("down", "slurm-events"), ("down", "slurmctld"), ("boot", "slurmctld")} <= kinds


def test_boots_need_a_host(tmp_path: Path) -> None:
    code, _, err = _ingest(tmp_path / "a.duckdb", "--kind", "boots", str(BOOTS))
    assert code == 2 and "--kind boots needs --host" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("kind", ["slurm-events", "slurmctld", "boots"])
def test_a_file_of_another_format_is_refused_and_nothing_stored(tmp_path: Path,
                                                                kind: str) -> None:
    db = tmp_path / "a.duckdb"
    assert _ingest(db, "--kind", "boots", "--host", "h1", str(BOOTS))[0] == 0
    before = _rows(db)
    wrong = tmp_path / "sacct.txt"
    shutil.copy(FIX / "sacct" / "loopback_completion_c.txt", wrong)
    code, _, err = _ingest(db, "--kind", kind, "--host", "h1", str(wrong))
    assert code == 2, err
    assert str(wrong) in err and len(err.strip().splitlines()) == 1
    assert _rows(db) == before


def test_the_kernel_logs_boot_banner_is_a_boot(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(
        "2026-11-29T06:00:01+0000 gpu-001 kernel: Linux version 6.1.0-25-amd64 "
        "(debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP "
        "PREEMPT_DYNAMIC Debian 6.1.106-3 (2024-08-26)\n"
        "2026-11-29T06:00:40+0000 gpu-001 kernel: mlx5_core 0000:01:00.0 enp1s0f0: Link up\n")
    db = tmp_path / "a.duckdb"
    code, out, err = _ingest(db, "--kind", "dmesg", "--host", "gpu-001", str(log))
    assert code == 0, err
    assert _rows(db) == [("gpu-001", "boot", "dmesg")]
