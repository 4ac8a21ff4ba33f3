"""The outcomes campaign of the simulator (`auditor simulate --outcomes`, issue #15): the same
seed gives the same bytes, the default scenario is untouched, the swaps it writes are what
`auditor replaced` takes and follow the report's order, and a replay of its nights judges the
suspects as the truth says."""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.analyse.audit import audit
from auditor.analyse.outcomes import remember
from auditor.analyse.pipeline import RankSettings
from auditor.analyse.rules import RULES
from auditor.cli import app
from auditor.config import OutcomesSettings, Settings
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_instant

runner = CliRunner()
SIZE: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 8, "days": 14.0}


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("campaign") / "scenario"
    generate(folder, seed=4, outcomes=True, **SIZE)
    return folder


def test_same_seed_same_bytes(campaign: Path, tmp_path: Path) -> None:
    generate(tmp_path / "again", seed=4, outcomes=True, **SIZE)
    assert files(tmp_path / "again") == files(campaign)
    generate(tmp_path / "other", seed=5, outcomes=True, **SIZE)
    assert files(tmp_path / "other")["replacements.csv"] != files(campaign)["replacements.csv"]


def test_off_by_default_and_leaves_nothing_behind(campaign: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    generate(plain, seed=4, **SIZE)
    truth = json.loads((plain / "truth.json").read_text())
    assert "outcomes" not in truth and "outcomes" not in truth["scenario"]
    assert not (plain / "replacements.csv").exists()
    assert (plain / "cabling.csv").read_text().splitlines()[0].endswith(",type")
    # The campaign keeps the rest of the scenario's streams: the same fabric and its cables.
    with_lots = (campaign / "cabling.csv").read_text().splitlines()
    assert [line.rsplit(",", 1)[0] for line in with_lots] == \
        (plain / "cabling.csv").read_text().splitlines()
    # Written over a campaign's folder, the plain scenario leaves no stale swaps.
    again = tmp_path / "over"
    generate(again, seed=4, outcomes=True, **SIZE)
    generate(again, seed=4, **SIZE)
    assert files(again) == files(plain)


def test_swaps_follow_the_report_and_stop_the_flaps_only_when_right(campaign: Path) -> None:
    truth = json.loads((campaign / "truth.json").read_text())["outcomes"]
    with (campaign / "replacements.csv").open() as f:
        rows = list(csv.DictReader(f))
    swaps = [(f, s) for f in truth["faults"] for s in f["swaps"]]
    assert sorted(r["ticket"] for r in rows) == sorted(s["ticket"] for _, s in swaps)
    assert any(not s["right"] for _, s in swaps) and any(s["right"] for _, s in swaps)
    order = ["cable", "transceiver-a", "transceiver-b", "switch-port"]
    for fault in truth["faults"]:
        parts = [s["part"] for s in fault["swaps"]]
        host = fault["ends"][0]["name"].startswith("node")
        assert parts == [p for p in order if not host or "transceiver" not in p][:len(parts)]
        # every swap came after two flaps since the one before it, as the report asks
        times = [parse_instant(s["at"]) for s in fault["swaps"]]
        downs = [parse_instant(x["down_at"]) for x in fault["flaps"]]
        for before, swap in zip([None, *times], times, strict=False):
            assert sum(1 for d in downs if (before is None or d > before) and d < swap) >= 2
        if fault["fixed_at"] is not None:
            assert fault["swaps"][-1]["right"] and parts[-1] in {
                "cable": ["cable"], "switch_port": ["switch-port"],
                "transceiver": ["transceiver-a", "transceiver-b"]}[fault["part"]]
            assert all(d < parse_instant(fault["fixed_at"]) for d in downs)
        assert all(not s["right"] for s in fault["swaps"][:-1])
    lots = {}
    with (campaign / "cabling.csv").open() as f:
        for row in csv.DictReader(f):
            lots.setdefault(row["lot"], []).append(row["part_number"])
    assert {k: len(v) for k, v in lots.items()} == {
        k: v["cables"] for k, v in truth["lots"].items()}
    assert all(f["lot"] == truth["bad_lot"] for f in truth["faults"] if f["bad_lot"])
    assert set(lots[truth["bad_lot"]]) == {truth["bad_lot_part_number"]}


@pytest.fixture(scope="module")
def replayed(campaign: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The campaign's nights: the day's swaps through `auditor replaced`, then what the nightly
    run does (rank the last 24 h, remember what the report shows)."""
    db = tmp_path_factory.mktemp("replay") / "a.duckdb"
    truth = load_scenario(campaign, db)
    with (campaign / "replacements.csv").open() as f:
        swaps = sorted(csv.DictReader(f), key=lambda r: r["replaced_at"])
    start = parse_instant(truth["window_start"])
    settings = Settings(db=db)
    for day in range(1, round(SIZE["days"]) + 1):
        until = start + timedelta(days=day)
        for s in [s for s in swaps if until - timedelta(days=1) < parse_instant(
                s["replaced_at"]) <= until]:
            res = runner.invoke(app, ["--db", str(db), "replaced", "--link", s["link"], "--part",
                                      s["part"], "--ticket", s["ticket"], "--at",
                                      s["replaced_at"]])
            assert res.exit_code == 0, res.output
        with Store(db, read_only=True) as store:
            audited = audit(store, utc_naive(until - timedelta(days=1)), utc_naive(until),
                            RankSettings.from_settings(settings), limit=settings.nightly.limit)
        with Store(db) as store, store.transaction():
            remember(store, audited, utc_naive(until))
    return db


def test_rules_add_up_to_the_points(replayed: Path) -> None:
    with Store(replayed, read_only=True) as store:
        rows = store.remembered_suspects(utc_naive(parse_instant("2026-01-01T00:00:00Z")),
                                         utc_naive(parse_instant("2027-01-01T00:00:00Z")))
    assert rows
    for r in rows:
        assert set(r["rules"]) <= set(RULES)
        assert sum(r["rule_points"]) == pytest.approx(r["points"], abs=1e-5)
    # the campaign's switch reboot is one whole-switch suspect
    assert any(r["component"] == "switch" and "switch_event" in r["rules"] for r in rows)


def test_replay_judges_as_the_truth_says(campaign: Path, replayed: Path, tmp_path: Path) -> None:
    truth = json.loads((campaign / "truth.json").read_text())
    end = truth["window_end"]
    # Two weeks of campaign: judge links clean for 4 days, so that some suspects are not young.
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(f'[store]\ndb = "{replayed}"\n[outcomes]\nclean_days = 4\n')
    res = runner.invoke(app, ["--config", str(cfg), "outcomes", "--until", end, "--format",
                              "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    faults = {frozenset((e["name"], e["port"]) for e in f["ends"]): f
              for f in truth["outcomes"]["faults"]}
    fixed = {k: f for k, f in faults.items() if f["fixed_at"]}
    judged = [s for s in data["suspects"] if not s["young"] and s["verdict"] != "open"]
    assert judged and data["unjudged"] == 1  # the switch reboot
    for s in judged:
        key = frozenset((e["name"], e["port"]) for e in s["ends"])
        if s["verdict"] == "confirmed":  # a swap that held: that fault's right part
            assert key in fixed and fixed[key]["part"] == s["component"], s
            assert s["gpu_hours_before_fix"] <= s["gpu_hours_lost"]
    for row in data["rules"] + data["verdicts"] + [data["overall"]]:
        assert row["suspects"] == row["confirmed"] + row["refuted"] + row["open"] + row["young"]
    # every fault whose right part was swapped early enough to be verified is confirmed
    settings = OutcomesSettings(clean_days=4)
    ready = [k for k, f in fixed.items() if parse_instant(f["fixed_at"]) + timedelta(days=7)
             <= parse_instant(end) and parse_instant(f["onset"]) < parse_instant(end)
             - timedelta(days=settings.clean_days)]
    confirmed = {frozenset((e["name"], e["port"]) for e in s["ends"]) for s in data["suspects"]
                 if s["verdict"] == "confirmed"}
    assert ready and set(ready) <= confirmed


def test_the_command_line_writes_the_same_campaign(campaign: Path, tmp_path: Path) -> None:
    args = ["simulate", "--seed", "4", "--spines", "4", "--leaves", "8", "--hosts", "8",
            "--outcomes"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "short"), "--days", "7"])
    assert res.exit_code == 2 and "outcomes needs days >= 14" in res.stderr
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "cli"), "--days", "14"])
    assert res.exit_code == 0, res.output
    truth = json.loads((campaign / "truth.json").read_text())["outcomes"]
    assert f"in bad lot {truth['bad_lot']}" in res.stdout
    assert files(tmp_path / "cli") == files(campaign)
