"""The command line as users and cron see it: help, exit codes, bad input, the demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from auditor.cli import app
from auditor.demo import DATA
from auditor.store import Store

runner = CliRunner()
SNAP1 = DATA / "sweep-2026-11-29"
SNAP2 = DATA / "sweep-2026-11-30"


def auditor(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real entry point in a child process, as cron would run it."""
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_DB"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120, check=False)


def test_every_command_has_help_with_an_example() -> None:
    group = typer.main.get_group(app)
    assert group.commands
    todo = [([name], command) for name, command in group.commands.items()]
    while todo:
        path, command = todo.pop()
        assert command.help and "Example" in command.help, f"{path} lacks help with an example"
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0, path
        todo += [([*path, n], c) for n, c in getattr(command, "commands", {}).items()]


def test_ingest_then_topology_and_links(db: Path) -> None:
    res = runner.invoke(app, ["--db", str(db), "ingest", "--at", "2026-11-29T02:00:00Z",
                              str(SNAP1 / "ibnetdiscover.txt"), str(SNAP1 / "iblinkinfo.txt")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["--db", str(db), "ingest", "--at", "2026-11-30T02:00:00Z",
                              *(str(p) for p in sorted(SNAP2.iterdir()))])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["--db", str(db), "topology", "--format", "json"])
    data = json.loads(res.output)
    assert (data["switches"], data["hcas"], data["links"]) == (12, 31, 62)
    down = {(d["ends"][0]["name"], d["ends"][0]["port"]) for d in data["down"]}
    assert down == {("leaf02", 7), ("spine03", 2), ("leaf02", 2)}
    assert data["ports_down"] == 3
    (deg,) = data["degraded"]
    assert {e["name"] for e in deg["ends"]} == {"leaf05", "spine02"}
    assert (deg["width"], deg["possible_width"]) == ("1X", "4X")
    res = runner.invoke(app, ["--db", str(db), "links", "--down", "--format", "csv"])
    assert res.exit_code == 0
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("a_name,a_guid,a_port,b_name")
    assert len(lines) == 1 + 2  # the spine-leaf cable once, the host cable once
    res = runner.invoke(app, ["--db", str(db), "links", "--at", "2026-11-29T03:00:00Z",
                              "--format", "json"])
    assert len(json.loads(res.output)) == 64
    res = runner.invoke(app, ["--db", str(db), "links", "--degraded"])
    assert "leaf05" in res.output and "1X" in res.output


def test_reingest_is_a_no_op(db: Path) -> None:
    files = [str(SNAP1 / "ibnetdiscover.txt")]
    runner.invoke(app, ["--db", str(db), "ingest", *files])
    res = runner.invoke(app, ["--db", str(db), "ingest", "--format", "json", *files])
    assert json.loads(res.output)[0]["status"] == "already ingested"
    with Store(db, read_only=True) as store:
        assert len(store.sources()) == 1


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"", ":1: empty file"),
        (b"\x00\x01\x02binary\xff", ":1: binary data"),
        (b"hello world\nthis is not a capture\n", ":1: cannot tell what tool or log this is"),
        (b"# Port counters: Lid 3 port 7 (CapMask: 0x1300)\nPortSelect:......7\n"
         b"SymbolErrorCounter:......12\nLinkDownedCounter:.....", ":4:"),
    ],
    ids=["empty", "binary", "wrong-kind", "truncated"],
)
def test_bad_input_is_one_line_exit_2_and_db_unchanged(
    tmp_path: Path, db: Path, content: bytes, expect: str
) -> None:
    good = SNAP1 / "ibnetdiscover.txt"
    assert auditor("--db", str(db), "ingest", str(good)).returncode == 0
    before = db.read_bytes()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    res = auditor("--db", str(db), "ingest", str(good), str(bad))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"error: {bad}") and expect in lines[0], lines[0]
    assert "Traceback" not in res.stderr
    with Store(db, read_only=True) as store:
        assert len(store.sources()) == 1
    assert db.read_bytes() == before


def test_wrong_kind_forced_names_file_and_line(tmp_path: Path, db: Path) -> None:
    res = auditor("--db", str(db), "ingest", "--kind", "iblinkinfo",
                  str(SNAP1 / "ibqueryerrors.txt"))
    assert res.returncode == 2
    assert f"{SNAP1 / 'ibqueryerrors.txt'}:" in res.stderr


def test_usage_errors_exit_2(db: Path) -> None:
    assert auditor("--db", str(db), "topology").returncode == 2  # no DB yet
    res = auditor("--db", str(db), "ingest", "--at", "yesterday", str(SNAP1 / "iblinkinfo.txt"))
    assert res.returncode == 2 and "--at 'yesterday'" in res.stderr
    assert auditor("--db", str(db), "links", "--format", "xml").returncode == 2


def test_db_from_environment(tmp_path: Path) -> None:
    env_db = tmp_path / "env.duckdb"
    res = subprocess.run([sys.executable, "-m", "auditor", "ingest", str(SNAP1 / "iblinkinfo.txt")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                         env={**os.environ, "AUDITOR_DB": str(env_db)})
    assert res.returncode == 0, res.stderr
    assert env_db.exists() and not (tmp_path / "auditor.duckdb").exists()


def test_capture_demo_builds_and_shows_findings(tmp_path: Path) -> None:
    res = auditor("demo", "--captures", "--out", str(tmp_path / "demo.duckdb"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "12 switches, 31 HCAs, 62 links, 3 port(s) down, 1 degraded link(s)" in res.stdout
    assert "leaf05" in res.stdout and "1X" in res.stdout
    again = auditor("demo", "--captures", "--out", str(tmp_path / "demo.duckdb"), cwd=tmp_path)
    assert again.returncode == 0


def test_demo_ranks_suspects_in_seconds(tmp_path: Path) -> None:
    import time

    start = time.monotonic()
    res = auditor("demo", "--out", str(tmp_path / "demo.duckdb"), cwd=tmp_path)
    took = time.monotonic() - start
    assert res.returncode == 0, res.stderr
    assert "what to replace first" in res.stdout
    assert "switch " in res.stdout and "Replace the cable" in res.stdout
    assert "do not replace its cables" in res.stdout and "by their host going away" in res.stdout
    assert took < 30  # "within a few seconds" on a laptop; generous for a loaded CI box
    other = tmp_path / "mine.duckdb"
    assert auditor("--db", str(other), "ingest", str(SNAP1 / "iblinkinfo.txt")).returncode == 0
    refused = auditor("demo", "--out", str(other), cwd=tmp_path)
    assert refused.returncode == 2 and "holds more than demo data" in refused.stderr


@pytest.mark.parametrize("argv", [
    ["suspects", "--help"], ["--db", "x.duckdb", "report", "--help"], ["snmp", "--help"],
    ["snmp", "poll", "--help"], ["--help"], ["suspect"], ["-c", "a.toml", "watch-list", "--help"],
    ["--db=suspects", "events", "--help"], ["--db", "suspects", "report", "--help"],
    ["--version"], ["ingest"], ["--db", "x.duckdb"],
])
def test_the_app_for_the_named_command_answers_as_the_whole_app(argv: list[str]) -> None:
    """`main` builds only the command the line names (issue #13): whatever the line, what it
    prints and its exit code are the whole app's."""
    from auditor.cli import _app_for

    runner = CliRunner()
    full, one = runner.invoke(app, argv), runner.invoke(_app_for(argv), argv)
    assert (one.exit_code, one.output) == (full.exit_code, full.output)


def test_the_app_for_a_named_command_holds_that_command_only() -> None:
    from auditor.cli import _app_for

    def names(argv: list[str]) -> list[str]:
        only = _app_for(argv)
        return [c.callback.__name__ for c in only.registered_commands if c.callback] + [
            g.name or "" for g in only.registered_groups]

    assert names(["--db", "x.duckdb", "suspects", "--since", "7d"]) == ["suspects"]
    assert names(["--db", "suspects", "report"]) == ["report"]
    assert names(["--config=a.toml", "snmp", "poll"]) == ["snmp"]
    assert len(names(["--help"])) == len(app.registered_commands) + len(app.registered_groups)
    assert _app_for(["suspects"]).registered_commands is not app.registered_commands
    assert len(app.registered_commands) > 1  # the module's app is left whole


def test_suspects_runs_without_the_collector_and_turns_it_back_on(tmp_path: Path) -> None:
    """`suspects` and `report` switch the cyclic collector off while they run (issue #13) and
    on again after, so commands run in one process (as here) leave it as they found it."""
    import gc

    db = tmp_path / "d.duckdb"
    assert CliRunner().invoke(app, ["--db", str(db), "ingest", str(SNAP1 / "iblinkinfo.txt")]
                              ).exit_code == 0
    from auditor.analyse import pipeline

    seen: list[bool] = []
    real = pipeline.gather

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    pipeline.gather = spy  # type: ignore[assignment]
    try:
        assert gc.isenabled()
        res = CliRunner().invoke(app, ["--db", str(db), "suspects", "--format", "json"])
    finally:
        pipeline.gather = real
    assert res.exit_code == 0, res.output
    assert seen == [False] and gc.isenabled()
