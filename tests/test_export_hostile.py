"""`auditor export` and `auditor fleet` against a hostile or broken export tree (issue #21,
findings 2, 3 and 6): a partition folder that cannot be written, two databases exporting into
one folder, and anything foreign a reader may find there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.demo import build_demo

runner = CliRunner()
UNTIL = "2026-11-30T02:30:00Z"  # the demo's last sweep is at 02:00
DAY = "2026-11-30"
TABLES = ("nodes", "links", "port_events", "counters", "jobs", "flaps", "suspects", "outcomes")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "pod.duckdb"
    build_demo(db)
    return db


def export(db: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str] | object:
    return runner.invoke(app, ["--db", str(db), "export", "--out", str(out), "--since", "1h",
                               "--until", UNTIL, *args])


def tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


# -- finding 6: a partition folder that cannot be written --------------------------------------


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Folders made immutable with chattr +i (root ignores mode bits, not this), made mutable
    again after the test so that its folder can be removed."""
    made: list[Path] = []
    yield made
    for folder in made:
        subprocess.run(["chattr", "-i", str(folder)], check=False)


def _chattr_works(folder: Path) -> str | None:
    if shutil.which("chattr") is None:
        return "chattr is not installed"
    probe = folder / "probe"
    probe.mkdir()
    done = subprocess.run(["chattr", "+i", str(probe)], capture_output=True, text=True,
                          check=False)
    subprocess.run(["chattr", "-i", str(probe)], capture_output=True, check=False)
    probe.rmdir()
    return None if done.returncode == 0 else f"chattr +i refused here: {done.stderr.strip()}"


def test_an_unwritable_partition_is_one_line_and_nothing_half_written(
        demo: Path, tmp_path: Path, immutable: list[Path]) -> None:
    if (why := _chattr_works(tmp_path)) is not None:
        pytest.skip(why)
    out = tmp_path / "history"
    assert export(demo, out).exit_code == 0
    before = tree(out)
    folder = out / "nodes" / "fabric=pod" / f"day={DAY}"
    subprocess.run(["chattr", "+i", str(folder)], check=True)
    immutable.append(folder)
    result = export(demo, out)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"error: export: cannot write {folder / 'part-0.parquet'}: "
                             "Operation not permitted\n")
    assert tree(out) == before  # the old partition whole, no temporary file anywhere


_FULL_DISK = """
import json, subprocess, sys
from pathlib import Path
out = Path(sys.argv[1])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", str(out)], check=True)
done = subprocess.run([sys.executable, "-m", "auditor", *sys.argv[2:], "--out", str(out)],
                      capture_output=True, text=True)
files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
import pyarrow.parquet as pq
whole = [f for f in files if f.endswith(".parquet") and pq.read_table(out / f) is not None]
print(json.dumps({"rc": done.returncode, "stderr": done.stderr, "files": files,
                  "whole": whole}))
"""


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(demo: Path, tmp_path: Path) -> None:
    """A real ENOSPC: a 24 kB tmpfs mounted over the export folder in a user and mount
    namespace of its own (unshare), so nothing outside the test sees it."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    out = tmp_path / "history"
    out.mkdir()
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-c", _FULL_DISK,
         str(out), "--db", str(demo), "export", "--since", "1h", "--until", UNTIL],
        capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs in a namespace here: {done.stderr.strip()[-200:]}")
    got = json.loads(done.stdout)
    assert got["rc"] == 2, got
    lines = got["stderr"].splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: export: cannot write "), lines
    assert lines[0].endswith(": No space left on device"), lines
    assert got["files"], "some partitions fitted before the disk was full"
    assert got["files"] == got["whole"], "every file left is a whole Parquet file, no .tmp"
