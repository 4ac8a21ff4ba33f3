"""Replacement tracking end to end: a swap whose flaps stop is verified after the clean days,
one whose flaps continue is escalated with the reason, and a bad part that moved to another port
(known by its serial number) is caught there. Plus the inventory file that locates ports."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.demo import build_demo
from auditor.errors import AuditorError
from auditor.store import Store

runner = CliRunner()
FIX = Path(__file__).resolve().parent / "fixtures" / "inventory"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "demo.duckdb"
    build_demo(path)  # leaf02 port 6 <-> spine02 port 2; leaf03 port 7 <-> spine03 port 3
    return path


def cli(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def syslog(tmp_path: Path, name: str, *lines: tuple[str, str, int, str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{at} {host} mgmtd[1]: Interface IB1/{port} changed state to {st}\n"
                            for at, host, port, st in lines))
    return path


def statuses(db: Path, at: str) -> dict[str, dict]:
    rows = json.loads(cli(db, "replacements", "--at", at, "--format", "json"))
    return {r["ticket"]: r for r in rows}


def test_swap_verified_after_clean_days_and_escalated_when_flaps_continue(
        tmp_path: Path, db: Path) -> None:
    before = syslog(tmp_path, "before.log",
                    ("2026-11-20T01:00:00+00:00", "leaf02", 6, "DOWN"),
                    ("2026-11-20T01:00:30+00:00", "leaf02", 6, "UP"))
    cli(db, "ingest", str(before))
    out = cli(db, "replaced", "--link", "leaf02:IB1/6", "--part", "cable", "--ticket", "T1",
              "--at", "2026-11-21T00:00:00Z")
    assert "leaf02[6] <-> spine02[2]" in out
    cli(db, "replaced", "--link", "leaf04:IB1/5<->spine01:4", "--part", "transceiver-a",
        "--ticket", "T2", "--at", "2026-11-21T00:00:00Z")
    assert statuses(db, "2026-11-24T00:00:00Z")["T1"]["status"] == "watching"
    assert statuses(db, "2026-11-29T00:00:00Z")["T1"]["status"] == "verified"

    after = syslog(tmp_path, "after.log",
                   ("2026-11-23T05:00:00+00:00", "spine01", 4, "DOWN"),
                   ("2026-11-23T05:00:40+00:00", "spine01", 4, "UP"))
    cli(db, "ingest", str(after))
    t2 = statuses(db, "2026-11-29T00:00:00Z")["T2"]
    assert t2["status"] == "escalated"
    assert "replace the transceiver at the other end (b) next" in t2["reason"]
    assert t2["flaps_since"] == 1


def test_fault_that_followed_the_old_part(tmp_path: Path, db: Path) -> None:
    with Store(db) as store, store.transaction():
        store.add_transceivers(datetime(2026, 11, 20, tzinfo=UTC), "leaf02", [
            {"port_name": "IB1/6", "guid": "0xb8599f0300200002", "port": 6, "present": True,
             "vendor": "Mellanox", "part_number": "MFS1S00-H003E", "serial_number": "MT2330FT0911",
             "length": "3m", "cable_type": "Optical module", "revision": "A2"}])
    cli(db, "replaced", "--link", "leaf02:6", "--part", "cable", "--ticket", "T3",
        "--at", "2026-11-21T00:00:00Z")
    with Store(db) as store, store.transaction():
        store.add_transceivers(datetime(2026, 11, 22, tzinfo=UTC), "leaf03", [
            {"port_name": "IB1/7", "guid": "0xb8599f0300200003", "port": 7, "present": True,
             "vendor": "Mellanox", "part_number": "MFS1S00-H003E", "serial_number": "MT2330FT0911",
             "length": "3m", "cable_type": "Optical module", "revision": "A2"}])
    cli(db, "ingest", str(syslog(tmp_path, "moved.log",
                                 ("2026-11-23T06:00:00+00:00", "leaf03", 7, "DOWN"),
                                 ("2026-11-23T06:00:20+00:00", "leaf03", 7, "UP"))))
    t3 = statuses(db, "2026-11-29T00:00:00Z")["T3"]
    assert t3["status"] == "followed_part"
    assert "MT2330FT0911" in t3["reason"] and "leaf03 IB1/7" in t3["reason"]


def test_bad_swap_requests_are_refused(db: Path) -> None:
    for args in (["--link", "leaf02:IB1/6", "--part", "fan", "--ticket", "T"],
                 ["--link", "leaf99:IB1/6", "--part", "cable", "--ticket", "T"],
                 ["--link", "leaf02", "--part", "cable", "--ticket", "T"]):
        res = runner.invoke(app, ["--db", str(db), "replaced", *args])
        assert res.exit_code == AuditorError.exit_code, args
        assert res.stderr.startswith("error: ") and "Traceback" not in res.output, args


def test_cabling_plan_puts_parts_on_ports(tmp_path: Path, db: Path) -> None:
    plan = tmp_path / "cabling.csv"
    plan.write_text("a_name,a_port,b_name,b_port,vendor,part_number,serial_number,length\n"
                    "leaf02,IB1/6,spine02,IB1/2,NVIDIA,MFS1S00-H010V,MT2330FT09118,10m\n")
    cli(db, "ingest", str(plan))
    with Store(db, read_only=True) as store:
        parts = {(t["guid"], t["port"]): t["serial_number"] for t in store.transceivers()}
    assert parts[("0xb8599f0300200002", 6)] == "MT2330FT09118"
    assert parts[("0xb8599f0300100002", 2)] == "MT2330FT09118"


def test_a_cabling_plans_parts_belong_to_its_source(tmp_path: Path, db: Path) -> None:
    """Issue #21: the plan's part records had no source, so forgetting the plan's source (what
    ingesting the same file with other options does) left them behind."""
    head = "a_name,a_port,b_name,b_port,vendor,part_number,serial_number,length\n"
    plan = tmp_path / "cabling.csv"
    plan.write_text(head + "leaf02,IB1/6,spine02,IB1/2,NVIDIA,MFS1S00-H010V,MT2330FT09118,10m\n")
    cli(db, "ingest", str(plan))
    cli(db, "ingest", "--kind", "cabling", str(plan))  # the same file again: a no-op

    def stored() -> tuple[list[tuple[int, str]], list[int]]:
        with Store(db, read_only=True) as store:
            rows = store._con.execute("select source_id, serial_number from transceivers "
                                      "order by all").fetchall()
            return rows, sorted(s["source_id"] for s in store.sources()
                                if s["kind"] == "cabling")

    rows, (first,) = stored()
    assert rows == [(first, "MT2330FT09118")] * 2  # both ends, once
    edited = tmp_path / "cabling-new.csv"  # an edited copy: what the ports hold now
    edited.write_text(head + "leaf02,IB1/6,spine02,IB1/2,NVIDIA,MFS1S00-H010V,MT2409FT00042,"
                      "10m\n")
    cli(db, "ingest", str(edited))
    with Store(db, read_only=True) as store:
        parts = {(t["guid"], t["port"]): t["serial_number"] for t in store.transceivers()}
    assert parts[("0xb8599f0300200002", 6)] == parts[("0xb8599f0300100002", 2)] == \
        "MT2409FT00042"
    with Store(db) as store, store.transaction():
        store.forget_sources([first])  # as a re-ingest with other options forgets it
    rows, (second,) = stored()
    assert second != first and rows == [(second, "MT2409FT00042")] * 2


def test_inventory_ingest(tmp_path: Path, db: Path) -> None:
    cli(db, "ingest", str(FIX / "director_labels_and_missing_columns.txt"))
    with Store(db, read_only=True) as store:
        assert store.locations()["leaf01"]["rack"] == "R12-04"
        assert store.port_labels()[("spine01", 2)] == "L01/P02"
    bad = tmp_path / "inv.csv"
    bad.write_text("name,site,shelf\nleaf01,DC1,3\n")
    res = runner.invoke(app, ["--db", str(db), "ingest", "--kind", "inventory", str(bad)])
    assert res.exit_code == AuditorError.exit_code
    assert f"{bad}:1" in res.stderr and "shelf" in res.stderr
