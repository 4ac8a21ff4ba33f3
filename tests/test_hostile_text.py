"""Fabric text is untrusted (issue 11, security 1-5): node descriptions, host names and log lines
are written by whoever has root on a host or a switch. A capture and a log full of rich markup,
terminal escapes, bidi overrides, spreadsheet formulas and 200 kB of padding go through the real
command line into a real DuckDB file; every output must stay literal, inert and bounded."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from auditor.cli import app
from auditor.collect.runner import remote_command
from auditor.config import load
from auditor.demo import DATA
from auditor.errors import ConfigError
from auditor.ingest.logs import CUT, MESSAGE_MAX
from auditor.ops.progress import progress as nightly_progress
from auditor.ops.runlog import setup_logging, teardown_logging
from auditor.parse._common import DESCRIPTION_MAX
from auditor.parse.iblinkinfo import parse_iblinkinfo
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.report import prometheus as metrics
from auditor.report.tables import to_csv, to_table
from auditor.safe_text import NAME_MAX, TEXT_MAX, csv_cell, inert, is_csv_safe
from auditor.store import Store
from tests.conftest import FIXTURES

# Wide enough that the short hostile names are never folded over two lines of a table.
runner = CliRunner(env={"COLUMNS": "400", "AUDITOR_DB": None, "AUDITOR_CONFIG": None})

ESC = "\x1b"
HUGE = "MF0;spine01" + "A" * 200_000 + ":MQM8700/U1"  # IB caps a NodeDescription at 64 bytes
# The demo fabric's real captures (two sweeps, counters) with descriptions an attacker chose.
SWAP = {
    "gpu-node-06 mlx5_0": "[/x] mlx5_0",  # rich: a closing tag with no opening one raises
    "MF0;leaf02:MQM8700/U1": "MF0;[bold red]x[/]:MQM8700/U1",  # rich: would restyle
    "MF0;spine03:MQM8700/U1": '=HYPERLINK("http://x","y") mlx5_0',  # a spreadsheet formula
    "MF0;leaf05:MQM8700/U1": "MF0;leaf\x1b[2J05\u202e:MQM8700/U1",  # clear screen, RTL override
    "MF0;spine01:MQM8700/U1": HUGE,
    "MF0;leaf03:MQM8700/U1": "MF0;[/x]leaf03:MQM8700/U1",  # its counters rose
}
SYSLOG = [
    # Onyx's own tag must survive as text in `sources` (an unknown device: one issue).
    "2026-11-30T01:00:00+00:00 leaf99 mgmtd[123]: [mgmtd.NOTICE]: Interface IB1/17 changed "
    "state to DOWN",
    # A real event with an escape, markup and 300 kB after it: stored, but cut.
    "2026-11-30T01:00:01+00:00 leaf04 mgmtd[123]: [mgmtd.NOTICE]: Interface IB1/5 changed state "
    "to DOWN \x1b[2J [bold red]boom[/] " + "B" * 300_000,
    "2026-11-30T01:00:05+00:00 leaf04 mgmtd[123]: [mgmtd.NOTICE]: Interface IB1/5 changed state "
    "to UP",
    "garbage \x1b]0;pwned\x07 [/x] =1+1 " + "C" * 300_000,  # no envelope: an issue example
]
WINDOW = ["--since", "3d", "--until", "2026-11-30T03:00:00Z"]


def cli(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exit_code == 0, (args, res.output[-2000:], res.exception)
    return res.stdout


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile fabric ingested through the CLI; returns the database path."""
    root = tmp_path_factory.mktemp("hostile")
    for snap, at in (("sweep-2026-11-29", "2026-11-29T02:00:00Z"),
                     ("sweep-2026-11-30", "2026-11-30T02:00:00Z")):
        (root / snap).mkdir()
        for capture in sorted((DATA / snap).iterdir()):
            text = capture.read_text(encoding="utf-8")
            for before, after in SWAP.items():
                text = text.replace(before, after)
            (root / snap / capture.name).write_text(text, encoding="utf-8")
        cli(root / "db.duckdb", "ingest", "--at", at, *map(str, sorted((root / snap).iterdir())))
    (root / "syslog").write_text("\n".join(SYSLOG) + "\n", encoding="utf-8")
    cli(root / "db.duckdb", "ingest", "--kind", "syslog", str(root / "syslog"))
    return root / "db.duckdb"


def test_the_database_keeps_raw_text_but_bounded(hostile: Path) -> None:
    with Store(hostile, read_only=True) as store:
        nodes = [n for at in store.snapshot_times(datetime(2027, 1, 1, tzinfo=UTC))
                 for n in store.fabric(at).nodes.values()]
        events = store.events(datetime(2026, 11, 1, tzinfo=UTC),
                              datetime(2026, 12, 1, tzinfo=UTC))
        issues = store.issues()
    descriptions = [n.description for n in nodes]
    assert max(map(len, descriptions)) <= DESCRIPTION_MAX
    assert any("\x1b[2J" in d and "\u202e" in d for d in descriptions)  # raw, not escaped
    assert any(d.startswith("MF0;spine01AAAA") and d.endswith("\u2026") for d in descriptions)
    assert "[/x]" in {n.name for n in nodes}
    messages = [e["message"] for e in events if e["message"]]
    assert max(map(len, messages)) <= MESSAGE_MAX
    assert any("\x1b[2J [bold red]boom[/]" in m for m in messages)
    assert max(len(i["example"] or "") for i in issues) <= 200


def test_cuts_are_counted_per_source(hostile: Path) -> None:
    sources = json.loads(cli(hostile, "sources", "--format", "json"))
    reasons = {(s["kind"], i["reason"]): i["lines"] for s in sources for i in s["issues"]}
    cut = f"node description over {DESCRIPTION_MAX} characters (cut)"
    assert reasons[("ibnetdiscover", cut)] == 1 and reasons[("iblinkinfo", cut)] == 1
    assert reasons[("syslog", CUT)] == 1
    # A cut event is still an event, not an unparsed line.
    (syslog,) = [s for s in sources if s["kind"] == "syslog"]
    assert (syslog["records"], syslog["lines_unparsed"]) == (3, 1)


def test_long_descriptions_still_resolve_links(hostile: Path) -> None:
    # iblinkinfo names a peer by its description: the cut one must still match its node.
    links = json.loads(cli(hostile, "links", "--at", "2026-11-29T03:00:00Z", "--format", "json"))
    assert len(links) == 64  # as the demo fabric without the hostile names (test_cli.py)


CAPTURES = sorted((FIXTURES / "ibnetdiscover").glob("*.txt")) + sorted(
    p for p in (FIXTURES / "iblinkinfo").glob("*.txt") if "leaf03:" in p.read_text())


@pytest.mark.parametrize("path", CAPTURES, ids=[f"{p.parent.name}/{p.stem}" for p in CAPTURES])
def test_parsers_cut_long_descriptions_and_count_them(path: Path) -> None:
    parse = parse_ibnetdiscover if path.parent.name == "ibnetdiscover" else parse_iblinkinfo
    text = path.read_text(encoding="utf-8")
    before = parse(text)
    after = parse(text.replace("MF0;leaf03:MQM8700/U1", "MF0;leaf03" + "\x1b" * 100_000)
                  .replace("gpu-node-06 mlx5_0", "gpu-node-06" + " [/x]" * 50_000 + " mlx5_0"))
    assert after.cut and all(len(line) <= 200 for _, line in after.cut)
    assert max(len(n.description) for n in after.nodes) == DESCRIPTION_MAX
    # Only the descriptions changed: the same nodes, ports and links (iblinkinfo matches a
    # peer by its description when its LID is not enough, so the cut must match too).
    assert [(n.guid, n.node_type) for n in after.nodes] == [
        (n.guid, n.node_type) for n in before.nodes]
    assert (after.ports, after.links) == (before.ports, before.links)
    assert not before.cut


# command, and what its table must show literally (markup not interpreted, escapes visible)
COMMANDS: list[tuple[list[str], list[str]]] = [
    (["topology"], ["[/x] port 1", "[bold red]x[/] port", "leaf\\x1b[2J05\\u202e"]),
    (["links"], ["[/x]", "[bold red]x[/]", '=HYPERLINK("http://x","y")', "leaf\\x1b[2J05"]),
    (["flaps", *WINDOW], ["[/x][1]", "[bold red]x[/][2]"]),
    (["counters", *WINDOW], ['=HYPERLINK("http://x","y")', "MF0;spine01AAAA", "[/x]leaf03"]),
    (["suspects", *WINDOW], ["[/x] HCA port 1", "[bold red]x[/] IB1/2", "leaf\\x1b[2J05"]),
    (["sources"], ["[mgmtd.NOTICE]", "\\x1b[2J [bold red]boom[/]", "\\x1b]0;pwned\\x07 [/x]"]),
    (["events", *WINDOW], ["[/x]", "[bold red]x[/]"]),
]


@pytest.mark.parametrize(("args", "literal"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_tables_show_hostile_text_literally(hostile: Path, args: list[str],
                                            literal: list[str]) -> None:
    out = cli(hostile, *args)
    assert ESC not in out and "\u202e" not in out
    assert all(line.isprintable() for line in out.splitlines())
    for text in literal:
        assert text in out, text
    assert len(out) < 100_000  # the 200 kB name is shown cut, as any cell is
    assert "A" * (TEXT_MAX + 1) not in out.replace("│", "").replace("\n", "")


def _csv_rows(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows and all(len(r) == len(rows[0]) for r in rows)
    for row in rows:
        for cell in row:
            assert is_csv_safe(cell), cell
    return rows


@pytest.mark.parametrize("args", [c[0] for c in COMMANDS], ids=[c[0][0] for c in COMMANDS])
def test_csv_cells_are_inert(hostile: Path, args: list[str]) -> None:
    out = cli(hostile, *args, "--format", "csv")
    assert ESC not in out and len(out) < 100_000
    rows = _csv_rows(out)
    cells = {c for r in rows for c in r}
    if args[0] == "links":
        assert "'=HYPERLINK(\"http://x\",\"y\")" in cells
        assert "[/x]" in cells and "[bold red]x[/]" in cells


@pytest.mark.parametrize("args", [c[0] for c in COMMANDS], ids=[c[0][0] for c in COMMANDS])
def test_json_keeps_the_raw_text_escaped(hostile: Path, args: list[str]) -> None:
    out = cli(hostile, *args, "--format", "json")
    assert ESC not in out and "\u202e" not in out  # json.dumps writes \u001b, \u202e
    data = json.loads(out)
    if args[0] == "links":
        assert any(r["b_name"] == "leaf\x1b[2J05\u202e" for r in data)


def test_report_files_are_inert_and_bounded(hostile: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    cli(hostile, "report", *WINDOW, "--out", str(out))
    for name in ("replacements.csv", "report.html", "report.json"):
        data = (out / name).read_bytes()
        assert b"\x1b" not in data, name
    assert (out / "report.html").stat().st_size < 2_000_000
    assert (out / "report.json").stat().st_size < 200_000
    rows = _csv_rows((out / "replacements.csv").read_text(encoding="utf-8"))
    header, body = rows[0], rows[1:]
    names = [r[header.index(col)] for r in body for col in ("a_name", "b_name")]
    assert "'=HYPERLINK(\"http://x\",\"y\")" in names and "[/x]" in names
    assert "leaf\\x1b[2J05\\u202e" in names
    assert all(len(n) <= NAME_MAX for n in names)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert all(c.isprintable() or c in "\n\t" for c in html)
    for text in ("[/x]", "[bold red]x[/]", "=HYPERLINK(&#34;http://x&#34;,&#34;y&#34;)",
                 "leaf\\x1b[2J05\\u202e"):
        assert text in html, text
    assert "A" * (TEXT_MAX + 1) not in html
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert any(e["name"] == "leaf\x1b[2J05\u202e" for s in report["suspects"]
               for e in s["ends"])


# One sample line of the exposition format: name{label="value",...} number
_SAMPLE = re.compile(r'^[a-z_]+(\{([a-z_]+="(?:[^"\\\n]|\\[\\"n])*",?)*\})? [0-9.e+-]+$')


def test_metrics_labels_are_escaped(hostile: Path, tmp_path: Path) -> None:
    prom = tmp_path / "auditor.prom"
    cli(hostile, "metrics", *WINDOW, "--textfile", str(prom))
    text = prom.read_text(encoding="utf-8")
    assert ESC not in text
    for line in text.splitlines():
        assert line.isprintable()
        assert line.startswith("#") or _SAMPLE.match(line), line
    assert 'a="=HYPERLINK(\\"http://x\\",\\"y\\")"' in text
    assert 'b="leaf\\\\x1b[2J05\\\\u202e"' in text
    assert len(text) < 20_000


@pytest.mark.parametrize("interactive", [False, True], ids=["cron", "rich-console"])
def test_log_records_are_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               interactive: bool) -> None:
    log_file = tmp_path / "nightly.log"
    root = logging.getLogger()
    level = root.level
    setup_logging(log_file, interactive=interactive)
    try:
        logging.getLogger("auditor.test").error("failed: %s", "[bold]x[/] \x1b[2J\nfake")
        with nightly_progress(interactive) as steps, steps.step("[/x] step"):
            pass
    finally:
        teardown_logging()
        root.setLevel(level)
    logged = log_file.read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert "failed: [bold]x[/] \\x1b[2J\\nfake" in logged
    assert len(logged.splitlines()) == 1  # a newline in a message cannot forge a second record
    assert ESC not in logged + err
    assert "[bold]x[/]" in err
    if interactive:
        assert "[/x] step" in err  # the progress step is shown as written, not as markup


# ---------------------------------------------------------------------------------------------
# Any text at all through the display helpers


def _printable(text: str) -> bool:
    return all(line.isprintable() for line in text.split("\n"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(desc=st.text(), host=st.text(), message=st.text(),
       limit=st.integers(min_value=1, max_value=500))
def test_any_text_is_displayed_inert(desc: str, host: str, message: str, limit: int) -> None:
    for text in (desc, host, message):
        shown = inert(text, limit)
        assert shown.isprintable() and len(shown) <= limit
        if text.isprintable() and len(text) <= limit:
            assert shown == text  # plain text is left alone
        cell = csv_cell(text)
        assert is_csv_safe(cell) and len(cell) <= TEXT_MAX + 1
    row = {"name": desc, "host": host, "message": message, "port": -3}
    table = to_table([row], title=message, width=120)
    assert _printable(table) and ESC not in table
    rows = list(csv.reader(io.StringIO(to_csv([row]))))
    assert rows[0] == list(row) and rows[1][3] == "-3"  # our own number is not quoted
    assert all(is_csv_safe(c) for c in rows[1][:3])
    report = {"suspects": [{"component": "cable", "rank": 1, "score": 0.5, "flaps": 1,
                            "ends": [{"name": desc, "port": 1, "guid": message},
                                     {"name": host, "port": 2, "guid": desc}]}],
              "coverage": {"switches_ok": 0, "switches_total": 0, "hosts_ok": 0,
                           "hosts_total": 0},
              "summary": {"jobs_network": 0, "jobs_failed": 0}}
    for line in metrics.render(report, []).splitlines():
        assert line.isprintable() and (line.startswith("#") or _SAMPLE.match(line)), line


@pytest.mark.parametrize(("text", "cell"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "\\t=1"), ("\r=1", "\\r=1"), ("  =1", "'  =1"), ("a=1", "a=1"), ("", ""),
    (None, ""), (-3, "-3"), (0.5, "0.5"),
])
def test_csv_cell_rule(text: object, cell: str) -> None:
    assert csv_cell(text) == cell


# ---------------------------------------------------------------------------------------------
# [sweep.env]: the config is trusted, but its names still never reach a shell unquoted


def test_env_names_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "auditor.toml"
    config.write_text('[sweep.env]\n"A;touch x;B" = "1"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^sweep\.env: 'A;touch x;B' is not an environment"):
        load(config, None)
    config.write_text('[sweep.env]\nIBSIM_SOCKNAME = "lab; rm -rf /"\n', encoding="utf-8")
    assert load(config, None).sweep.env == {"IBSIM_SOCKNAME": "lab; rm -rf /"}


def test_remote_command_quotes_every_word(tmp_path: Path) -> None:
    command = remote_command(["ibnetdiscover", "-p"], {"IBSIM_SOCKNAME": "lab; $(touch x)"},
                             "/var/tmp/a b")
    assert command == ("cd '/var/tmp/a b' && env 'IBSIM_SOCKNAME=lab; $(touch x)' "
                       "ibnetdiscover -p")
    # Even a name the config would refuse stays one word for the shell.
    words = shlex.split(remote_command(["ibnetdiscover"], {"A;touch x;B": "1"}, None))
    assert words == ["env", "A;touch x;B=1", "ibnetdiscover"]
    assert remote_command(["iblinkinfo"], {}, None) == "iblinkinfo"


# Any text at all as a switch's and a host's node description and as a log message, through the
# real ingest and every output format (the issue's end-to-end property).
# Any character a UTF-8 file can hold (no lone surrogates), on one line.
_ONE_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
                    max_size=80)


@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture],
          deadline=None)
@given(switch=_ONE_LINE, host=_ONE_LINE, message=_ONE_LINE)
@example(switch="MF0;[/x]\x1b[2J\u202e:MQM8700/U1", host="=cmd|' /C calc'!A0 mlx5_0",
         message="[bold]x[/] \x1b]0;t\x07 \x00")
def test_any_fabric_text_goes_through_ingest_and_every_output_inert(
        tmp_path_factory: pytest.TempPathFactory, switch: str, host: str, message: str) -> None:
    root = tmp_path_factory.mktemp("anytext")
    db = root / "db.duckdb"
    snap = root / "sweep"
    snap.mkdir()
    for capture in sorted((DATA / "sweep-2026-11-30").iterdir()):
        text = capture.read_text(encoding="utf-8")
        text = text.replace("MF0;leaf02:MQM8700/U1", switch).replace("gpu-node-06 mlx5_0", host)
        (snap / capture.name).write_text(text, encoding="utf-8")
    log = root / "syslog"
    log.write_text("2026-11-30T01:00:00+00:00 leaf04 mgmtd[1]: [mgmtd.NOTICE]: Interface IB1/5 "
                   f"changed state to DOWN {message}\n{message}\n", encoding="utf-8")
    codes = []
    for args in (["ingest", "--at", "2026-11-30T02:00:00Z", *map(str, sorted(snap.iterdir()))],
                 ["ingest", "--kind", "syslog", str(log)]):
        res = runner.invoke(app, ["--db", str(db), *args])
        # A description that breaks the capture's own syntax (a NUL, a quote) is refused
        # cleanly, with one line naming the file, never a crash.
        assert res.exit_code in (0, 2), res.output
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        if res.exit_code == 2:
            (line,) = res.stderr.strip().splitlines()
            assert line.startswith(f"error: {root}"), line
        codes.append(res.exit_code)
    if codes[0] != 0:  # no topology: the outputs have nothing to show
        return
    for args, _ in COMMANDS:
        for fmt in ("table", "csv", "json"):
            res = runner.invoke(app, ["--db", str(db), *args, "--format", fmt])
            assert res.exception is None or isinstance(res.exception, SystemExit), (
                args, fmt, res.exception)
            assert res.exit_code == 0, (args, fmt, res.output[-2000:])
            out = res.stdout
            assert ESC not in out
            if fmt == "table":
                assert all(line.isprintable() for line in out.splitlines())
            elif fmt == "csv":
                _csv_rows(out)
            else:
                json.loads(out)
    out = root / "report"
    res = runner.invoke(app, ["--db", str(db), "report", *WINDOW, "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("replacements.csv", "report.html", "report.json"):
        assert b"\x1b" not in (out / name).read_bytes(), name
    _csv_rows((out / "replacements.csv").read_text(encoding="utf-8"))
    prom = root / "auditor.prom"
    res = runner.invoke(app, ["--db", str(db), "metrics", *WINDOW, "--textfile", str(prom)])
    assert res.exit_code == 0, res.output
    assert all(line.startswith("#") or _SAMPLE.match(line)
               for line in prom.read_text(encoding="utf-8").splitlines())
