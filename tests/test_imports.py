"""The start-up rule of issue #13: the command line imports only what a command uses.

`import auditor.cli` (what every command, `--help` and `--version` pay) must not import the
heavy libraries; each command imports its own. Checked on a fresh interpreter with
`-X importtime`, which lists every module it imports, so nothing here is timed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("networkx", "duckdb", "_duckdb", "matplotlib", "jinja2", "pysnmp", "paramiko", "netmiko",
         "numpy", "pydantic")


def _imported(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                         capture_output=True, text=True, check=True)
    names = set()
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "auditor.cli" in names or "auditor" in names  # the listing is what we think it is
    return names


def _top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def test_import_cli_pulls_in_no_heavy_library() -> None:
    heavy = _top(_imported("import auditor.cli")) & set(HEAVY)
    assert heavy == set()


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["ingest", "--help"],
                                  ["suspects", "--help"]])
def test_help_and_version_import_no_heavy_library(argv: list[str]) -> None:
    code = ("import sys\nimport auditor.cli as c\n"
            f"sys.argv = ['auditor', *{argv!r}]\n"
            "try:\n    c.main()\nexcept SystemExit:\n    pass\n")
    heavy = _top(_imported(code)) & set(HEAVY)
    assert heavy == set()


def test_a_command_still_imports_what_it_uses() -> None:
    """The rule is about start-up: the listing does show a library once a command needs it
    (otherwise the two tests above would pass on a broken listing)."""
    code = "import auditor.cli\nimport auditor.store\n"
    assert {"duckdb", "_duckdb"} & _top(_imported(code))


@pytest.mark.parametrize("kind", ["read", "ingest"])
def test_the_store_imports_the_engine_not_the_package(tmp_path: Path, kind: str) -> None:
    """duckdb >= 2.0's package (`duckdb`, 40-50 ms of dataclasses and metadata reads) is not
    imported to open, query, or register numpy columns (an ingest of counters does); a read
    does not import the numpy columns at all."""
    engine = importlib.util.find_spec("_duckdb") is not None
    capture = Path(__file__).resolve().parent / "fixtures" / "ibqueryerrors"
    files = sorted(p for p in capture.glob("*.txt") if p.read_text().strip())
    assert files
    work = ("s.sources()\n" if kind == "read" else
            "from auditor.ingest.captures import ingest_files\n"
            f"assert ingest_files(s, [Path({str(files[0])!r})], kind='ibqueryerrors')\n"
            "assert s.sources()[0]['records'] > 0\n")
    code = ("from pathlib import Path\nimport auditor.cli\nfrom auditor.store import Store\n"
            f"s = Store({str(tmp_path / 'x.duckdb')!r})\n{work}s.close()\n")
    imported = _imported(code)
    names = _top(imported)
    assert ("_duckdb" in names and "duckdb" not in names) if engine else "duckdb" in names
    # the numpy batches (auditor/store/columns.py) are imported by the writers that use them
    assert ("auditor.store.columns" in imported) == (kind == "ingest")


def test_the_report_draws_without_matplotlib() -> None:
    """The plots are written by auditor/report/svg.py: matplotlib is no dependency any more,
    though it may still be installed (so only the import listing can show a stray import)."""
    code = ("import auditor.cli\nfrom auditor.report.html import render_html\n"
            "from tests.test_report_html import sample_report\n"
            "assert render_html(sample_report()).count('<svg ') == 7\n")
    names = _top(_imported(code))
    assert "jinja2" in names and "matplotlib" not in names


def test_a_job_file_ingest_imports_no_log_or_optics_ingester(tmp_path: Path) -> None:
    """`ingest --kind sacct` plans, reads its --tz and stores without the log and optics
    ingesters (their parsers were 0.03 s of it, issue #13)."""
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("JobID|State|Start|End|NodeList\n"
                     "1|COMPLETED|2026-11-30T01:00:00|2026-11-30T02:00:00|gpu-[001-002]\n")
    code = ("import sys\nimport auditor.cli as c\n"
            f"sys.argv = ['auditor', '--db', {str(tmp_path / 'x.duckdb')!r}, 'ingest', "
            f"'--kind', 'sacct', '--format', 'json', {str(sacct)!r}]\n"
            "try:\n    c.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n")
    names = _imported(code)
    assert "auditor.ingest.jobs" in names
    assert not {"auditor.ingest.logs", "auditor.ingest.optics"} & names


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after `code` (sys.modules: `-X importtime` does not
    list what importlib.import_module imports, as the registry of kinds does)."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(*sys.modules)"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_help_imports_no_parser_and_no_ingester() -> None:
    """`--kind`'s help comes from the registry of kinds, which names its parsers as text."""
    code = ("import sys\nimport auditor.cli as c\nsys.argv = ['auditor', 'ingest', '--help']\n"
            "try:\n    c.main()\nexcept SystemExit:\n    pass")
    names = _modules_after(code)
    assert "auditor.ingest.kinds" in names
    assert {n for n in names if n.startswith(("auditor.parse", "auditor.ingest."))} == {
        "auditor.ingest.kinds"}


def test_a_sacct_ingest_imports_only_the_sacct_parser(tmp_path: Path) -> None:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("JobID|State|Start|End|NodeList\n"
                     "1|COMPLETED|2026-11-30T01:00:00|2026-11-30T02:00:00|gpu-[001-002]\n")
    code = ("import sys\nimport auditor.cli as c\n"
            f"sys.argv = ['auditor', '--db', {str(tmp_path / 'x.duckdb')!r}, 'ingest', "
            f"'--kind', 'sacct', '--format', 'json', {str(sacct)!r}]\n"
            "try:\n    c.main()\nexcept SystemExit as e:\n    assert not e.code, e.code")
    from auditor.ingest import kinds

    parsers = {k.parse.partition(":")[0] for k in kinds.KINDS if k.family is not None}
    assert parsers & _modules_after(code) == {"auditor.parse.sacct"}


def test_suspects_without_forwarding_tables_imports_no_numpy(tmp_path: Path) -> None:
    """Only a fabric with forwarding tables loads routes (analyse/routing, paths: numpy, 0.12 s
    of every `suspects`, issue #25); the ranking of a fabric without them does not import it."""
    from auditor.ingest.captures import ingest_files
    from auditor.store import Store

    capture = Path(__file__).resolve().parent / "fixtures" / "ibnetdiscover"
    db = tmp_path / "x.duckdb"
    store = Store(str(db))
    assert ingest_files(store, [sorted(capture.glob("*.txt"))[0]], kind="ibnetdiscover")
    store.close()
    code = ("import sys\nimport auditor.cli as c\n"
            f"sys.argv = ['auditor', '--db', {str(db)!r}, 'suspects', '--since', '3650d', "
            "'--format', 'json']\n"
            "try:\n    c.main()\nexcept SystemExit as e:\n    assert not e.code, e.code")
    names = _modules_after(code)
    assert "auditor.analyse.correlate" in names  # it did rank
    assert not {"numpy", "auditor.analyse.paths", "auditor.analyse.routing"} & names
