"""Issue #21, second look from the outside: `auditor fleet` and `auditor export` against an
export tree someone else can write to. Each test fails on the code it was written against
(redteam branch)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def _auditor(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=300, check=False, cwd=cwd)


@pytest.fixture(scope="module")
def export_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo fabric's last three days, exported as fabric `pod1`."""
    base = tmp_path_factory.mktemp("fleet")
    db = base / "pod1.duckdb"
    assert _auditor("demo", "--out", str(db)).returncode == 0
    done = _auditor("--db", str(db), "export", "--out", str(base / "history"), "--since", "3d",
                    "--fabric", "pod1")
    assert done.returncode == 0, done.stderr
    return base / "history"


@pytest.fixture
def tree(export_tree: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "history"
    shutil.copytree(export_tree, copy, symlinks=True)
    return copy


def test_fleet_folder_argument_in_a_symlink_loop_is_one_line(tree: Path, tmp_path: Path) -> None:
    """README: a folder fleet cannot read is one line (exit 2) or a warning, never a
    traceback. `auditor fleet LOOP` (LOOP -> LOOP) crashes in Path.resolve() with
    RuntimeError("Symlink loop"), and so does `auditor fleet GOOD LOOP`."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for args in ([str(loop)], [str(tree), str(loop)]):
        done = _auditor("fleet", *args, "--since", "3d")
        assert "Traceback" not in done.stderr, done.stderr[-400:]
        assert done.returncode in (0, 2)
        assert str(loop) in done.stderr


def test_fleet_table_folder_it_cannot_read_is_a_warning(tree: Path) -> None:
    """A table folder that is a symlink loop (or a plain file) is skipped without a word, so
    `flaps` reads 0 for every fabric: the wrong count, silently (issue #21: "each unreadable
    file is a warning naming it, with the rest still read")."""
    good = _auditor("fleet", str(tree), "--since", "3d", "--format", "json")
    assert good.returncode == 0 and json.loads(good.stdout)["fabrics"][0]["flaps"] > 0
    flaps = tree / "flaps"
    shutil.rmtree(flaps)
    flaps.symlink_to(flaps)
    done = _auditor("fleet", str(tree), "--since", "3d", "--format", "json")
    assert done.returncode == 0
    assert "flaps" in done.stderr, "the unreadable flaps folder is not named in a warning"


def test_fleet_memory_stays_bounded_on_a_small_parquet_of_many_rows(tree: Path) -> None:
    """Another pod's root writes to the shared history folder. A 79 kB suspects partition
    holding one day's 7 suspects 20,000 times over (140,000 rows, dictionary-encoded) makes
    `auditor fleet --format json` hold 1.1 GB (300,000 copies: 1.1 MB file, 14 GB, > 120 s).
    A fabric's day has at most a few hundred suspects: fleet should not take the memory of
    whatever row count a file claims."""
    days = sorted((tree / "suspects" / "fabric=pod1").glob("day=*/part-0.parquet"),
                  key=lambda p: pq.read_metadata(p).num_rows)
    part = days[-1]
    table = pq.read_table(part)
    assert table.num_rows > 0
    pq.write_table(pa.concat_tables([table] * (140_000 // table.num_rows)), part)
    probe = textwrap.dedent(f"""\
        import resource, subprocess, sys
        subprocess.run([sys.executable, "-m", "auditor", "fleet", {str(tree)!r}, "--since",
                        "3d", "--format", "json"], stdout=subprocess.DEVNULL, check=False)
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=600, check=True)
    max_rss_mb = int(done.stdout.split()[-1]) / 1024
    assert max_rss_mb < 512, f"fleet held {max_rss_mb:.0f} MB for a {part.stat().st_size} B file"
