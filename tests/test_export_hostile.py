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
from typer.testing import CliRunner, Result

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


def export(db: Path, out: Path, *args: str) -> Result:
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
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(out)], check=True)
done = subprocess.run([sys.executable, "-m", "auditor", *sys.argv[2:], "--out", str(out)],
                      capture_output=True, text=True)
files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
import pyarrow.parquet as pq
whole = [f for f in files if f.endswith(".parquet") and pq.read_table(out / f) is not None]
print(json.dumps({"rc": done.returncode, "stderr": done.stderr, "files": files,
                  "whole": whole}))
"""


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(demo: Path, tmp_path: Path) -> None:
    """A real ENOSPC: a 48 kB tmpfs mounted over the export folder in a user and mount
    namespace of its own (unshare), so nothing outside the test sees it."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    out = tmp_path / "history"
    out.mkdir()
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-c", _FULL_DISK,
         str(out), "--db", str(demo), "export", "--since", "3d", "--until", UNTIL],
        capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs in a namespace here: {done.stderr.strip()[-200:]}")
    got = json.loads(done.stdout)
    assert got["rc"] == 2, got
    lines = got["stderr"].splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: export: cannot write "), lines
    assert lines[0].endswith(": No space left on device"), lines
    parquet = [f for f in got["files"] if f.endswith(".parquet")]
    assert parquet, "some partitions fitted before the disk was full"
    assert parquet == got["whole"], "every Parquet file left is whole"
    assert not [f for f in got["files"] if f.endswith(".tmp")], got["files"]


# -- finding 2: every database has an identity, and export records it --------------------------


@pytest.fixture(scope="module")
def pods(tmp_path_factory: pytest.TempPathFactory, demo: Path) -> tuple[Path, Path]:
    """Two pods' databases, both `auditor.duckdb` (the default name) in their own folders."""
    root = tmp_path_factory.mktemp("pods")
    dbs = []
    for pod in ("pod1", "pod2"):
        db = root / pod / "auditor.duckdb"
        db.parent.mkdir()
        build_demo(db)
        dbs.append(db)
    return dbs[0], dbs[1]


def _owner(out: Path, table: str = "suspects", fabric: str = "auditor") -> str:
    record = out / table / f"fabric={fabric}" / "_auditor_export.json"
    data = json.loads(record.read_text())
    assert set(data) == {"database_id", "host", "database"}
    return str(data["database_id"])


def _identity(db: Path) -> str:
    from auditor.store import Store

    with Store(db, read_only=True) as store:
        return store.identity()


def test_two_pods_exporting_into_one_folder_do_not_overwrite_each_other(
        pods: tuple[Path, Path], tmp_path: Path) -> None:
    pod1, pod2 = pods
    assert _identity(pod1) != _identity(pod2)
    out = tmp_path / "history"
    first = export(pod1, out)
    assert first.exit_code == 0, first.output
    assert first.stderr == ""
    assert {_owner(out, t) for t in TABLES} == {_identity(pod1)}
    before = tree(out)
    second = export(pod2, out)
    assert second.exit_code == 2, second.output
    assert second.stderr.count("\n") == 1
    assert second.stderr.startswith("error: export: fabric 'auditor' in ")
    assert f"written by another database ({_identity(pod1)}, " in second.stderr
    assert str(pod1.resolve()) in second.stderr and "--takeover" in second.stderr
    assert tree(out) == before, "nothing of pod1's was touched"
    # Under a name of its own, pod2 exports beside pod1.
    own = export(pod2, out, "--fabric", "pod2")
    assert own.exit_code == 0, own.output
    assert _owner(out, fabric="pod2") == _identity(pod2)
    assert {k: v for k, v in tree(out).items() if "fabric=auditor" in k} == before


def test_a_re_export_from_the_same_database_still_works(pods: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    out = tmp_path / "history"
    for _ in range(2):
        again = export(pods[0], out)
        assert again.exit_code == 0, again.output
        assert again.stderr == ""
    assert _owner(out) == _identity(pods[0])


def test_takeover_replaces_the_other_databases_partitions(pods: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    pod1, pod2 = pods
    out = tmp_path / "history"
    assert export(pod1, out).exit_code == 0
    part = out / "nodes" / "fabric=auditor" / f"day={DAY}" / "part-0.parquet"
    inode = part.stat().st_ino
    taken = export(pod2, out, "--takeover")
    assert taken.exit_code == 0, taken.output
    assert {_owner(out, t) for t in TABLES} == {_identity(pod2)}
    assert part.stat().st_ino != inode, "the day's partition was written again"
    assert export(pod1, out).exit_code == 2, "now pod1 is the other database"


def test_foreign_or_missing_owner_records(pods: tuple[Path, Path], tmp_path: Path) -> None:
    pod1 = pods[0]
    out = tmp_path / "history"
    assert export(pod1, out).exit_code == 0
    # Partitions an auditor wrote before owner records existed: claimed, with a warning.
    for record in out.rglob("_auditor_export.json"):
        record.unlink()
    legacy = export(pod1, out)
    assert legacy.exit_code == 0, legacy.output
    assert legacy.stderr.count("warning: ") == len(TABLES)
    assert "partitions without an owner record" in legacy.stderr
    assert _owner(out) == _identity(pod1)
    # A record that is not ours (garbage, huge, not a UUID): refused unless --takeover.
    record = out / "links" / "fabric=auditor" / "_auditor_export.json"
    for junk in (b"\xff\xfe not json", b"{}" + b" " * 70000, b'{"database_id": "../x"}'):
        record.write_bytes(junk)
        refused = export(pod1, out)
        assert refused.exit_code == 2, refused.output
        assert "is not an owner record auditor wrote" in refused.stderr
    assert export(pod1, out, "--takeover").exit_code == 0
    assert _owner(out, "links") == _identity(pod1)


def test_an_older_database_gets_an_identity_when_it_is_migrated(tmp_path: Path) -> None:
    import duckdb

    from auditor import sql
    from auditor.store import Store

    ids = []
    for name in ("old1.duckdb", "old2.duckdb"):
        path = tmp_path / name
        con = duckdb.connect(str(path))
        for version, step in [(1, "schema"), *((v, n) for v, n in sql.migrations() if v <= 11)]:
            con.execute(sql.load(step))
            con.execute("insert into schema_version values (?, now())", [version])
        con.close()
        ids.append(_identity(path))  # a read-only command migrates it once
        with Store(path) as store:
            assert store.identity() == ids[-1], "given once, kept"
    assert ids[0] != ids[1]


# -- finding 3: fleet reads what export wrote, and copes with anything else --------------------


@pytest.fixture(scope="module")
def clean(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "history"
    assert export(demo, out).exit_code == 0
    return out


@pytest.fixture
def history(clean: Path, tmp_path: Path) -> Path:
    out = tmp_path / "history"
    shutil.copytree(clean, out)
    return out


def _no_nan(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} in JSON")

    return json.loads(text, parse_constant=refuse)


def fleet(*roots: Path | str, since: str = "1h") -> tuple[dict[str, object], list[str]]:
    result = runner.invoke(app, ["fleet", *map(str, roots), "--since", since, "--until", UNTIL,
                                 "--format", "json"])
    assert result.exit_code == 0, (result.output, result.exception)
    data = _no_nan(result.stdout)
    assert isinstance(data, dict)
    warnings = result.stderr.splitlines()
    assert all(w.startswith("warning: fleet: ") for w in warnings), warnings
    assert data["warnings"] == [w.removeprefix("warning: fleet: ") for w in warnings]
    return data, warnings


@pytest.fixture(scope="module")
def baseline(clean: Path) -> dict[str, object]:
    data, warnings = fleet(clean)
    assert warnings == []
    fabrics = data["fabrics"]
    assert fabrics == [{"fabric": "pod", "days": 1, "flaps": 6, "still_down": 6, "suspects": 4}]
    return data


def _parquet(target: Path, copy: str, src: Path | None = None) -> None:
    """Write a foreign Parquet file with DuckDB: `copy` is a COPY statement to $target that
    may read $src."""
    import duckdb

    target.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(copy, {"target": str(target), **({"src": str(src)} if src else {})})
    con.close()


def _part(root: Path, table: str, fabric: str, day: str = DAY) -> Path:
    return root / table / f"fabric={fabric}" / f"day={day}" / "part-0.parquet"


@pytest.mark.parametrize("content", [b"", b"PAR1" + b"\0" * 64 + b"PAR1", b"not parquet\n",
                                     "wrong schema"])
@pytest.mark.parametrize("where", ["in the window", "years before it"])
def test_an_unreadable_file_is_a_warning_and_the_rest_is_read(
        history: Path, baseline: dict[str, object], content: bytes | str, where: str) -> None:
    day = DAY if where == "in the window" else "2019-01-01"
    paths = [_part(history, "suspects", "other", day), _part(history, "flaps", "other", day)]
    for path in paths:
        if content == "wrong schema":
            _parquet(path, "copy (select 1 as x, 'y' as rank) to $target (format parquet)")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    data, warnings = fleet(history)
    if where == "years before it":
        assert warnings == [], "a day outside the window is never opened"
        assert data == baseline
        return
    assert [w.split(": ", 3)[2] for w in warnings] == [str(p) for p in paths]
    assert all(": unreadable, skipped (" in w for w in warnings)
    assert data["suspects"] == baseline["suspects"]
    assert data["fabrics"] == baseline["fabrics"]


@pytest.mark.parametrize("name", ["*", "=x", "a%2Fb", "pod?", "[p]od", "..", "-pod", "a b"])
def test_a_folder_that_is_not_a_fabric_name_is_skipped(history: Path, name: str,
                                                       baseline: dict[str, object]) -> None:
    """`fabric=*` was a glob to DuckDB (every count doubled), `fabric=a%2Fb` was URL-decoded
    to a/b (one fabric, two names), `fabric==x` stopped the read."""
    for table in ("suspects", "flaps"):
        folder = history / table / f"fabric={name}"
        if name == "..":
            folder = history / table / "fabric=.."
        shutil.copytree(history / table / "fabric=pod", folder, dirs_exist_ok=True)
    data, warnings = fleet(history)
    assert data["suspects"] == baseline["suspects"]
    assert data["fabrics"] == baseline["fabrics"]
    assert len(warnings) == 2 and all("not a fabric partition" in w for w in warnings)


@pytest.mark.parametrize("name", ["day=2026-11-31", "day=2026-1130", "day=\u0662026-11-30",
                                  "day=2026-11-30x", "part-0.parquet"])
def test_a_folder_that_is_not_a_day_is_skipped(history: Path, name: str,
                                               baseline: dict[str, object]) -> None:
    shutil.copytree(history / "suspects" / "fabric=pod" / f"day={DAY}",
                    history / "suspects" / "fabric=pod" / name)
    data, warnings = fleet(history)
    assert data["suspects"] == baseline["suspects"]
    assert len(warnings) == 1 and "not a day partition (day=YYYY-MM-DD)" in warnings[0]


def test_a_time_in_year_10000_or_a_nan_score(history: Path,
                                             baseline: dict[str, object]) -> None:
    ours = _part(history, "suspects", "pod")
    _parquet(_part(history, "suspects", "far"),
             "copy (select * replace (timestamp '10000-01-01' as first_at) from "
             "read_parquet($src)) to $target (format parquet)", ours)
    _parquet(_part(history, "suspects", "nan"),
             "copy (select * replace (cast('nan' as double) as score, cast('inf' as double) "
             "as downtime_s) from read_parquet($src)) to $target (format parquet)", ours)
    data, warnings = fleet(history)
    assert len(warnings) == 1
    assert str(_part(history, "suspects", "far")) in warnings[0]
    assert "a time outside the years auditor reads" in warnings[0]
    suspects = data["suspects"]
    assert isinstance(suspects, list)
    nan = [s for s in suspects if s["fabric"] == "nan"]
    assert len(nan) == 4 and all(s["score"] is None and s["downtime_s"] is None for s in nan)
    assert [s for s in suspects if s["fabric"] == "pod"] == baseline["suspects"]
    table = runner.invoke(app, ["fleet", str(history), "--since", "1h", "--until", UNTIL])
    assert table.exit_code == 0 and "nan" in table.stdout


def test_the_same_folder_given_twice_counts_once(history: Path, tmp_path: Path,
                                                 baseline: dict[str, object]) -> None:
    link = tmp_path / "link"
    link.symlink_to(history)
    data, warnings = fleet(history, history, f"{history}/../history", link)
    assert (data, warnings) == (baseline, [])
    # A copy of the same fabric's days in a second folder: read once, and said.
    copy = tmp_path / "copy"
    shutil.copytree(history, copy)
    data, warnings = fleet(history, copy)
    assert data["fabrics"] == baseline["fabrics"]
    assert len(warnings) == 2 and all("is also in" in w for w in warnings)


def test_paths_are_literal_never_globs(demo: Path, tmp_path: Path) -> None:
    """Export folders whose names DuckDB would take as globs: `hist[1]` matches `hist1`."""
    one, other = tmp_path / "hist[1]", tmp_path / "hist1"
    assert export(demo, one, "--fabric", "mine").exit_code == 0
    assert export(demo, other, "--fabric", "theirs").exit_code == 0
    data, warnings = fleet(one)
    assert warnings == []
    assert [f["fabric"] for f in data["fabrics"]] == ["mine"]  # type: ignore[index]
    star = tmp_path / "h*"
    assert export(demo, star, "--fabric", "star").exit_code == 0
    data, _ = fleet(star)
    assert [f["fabric"] for f in data["fabrics"]] == ["star"]  # type: ignore[index]
