"""The optics watch list precomputed (issue #25): the stored list is the list the current code
computes on the same readings (also after an optics ingest and a refresh), it is used only
while it is that list, the commands say how old it is, and the report's trend plots are the
same from either."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.analyse.audit import audit
from auditor.analyse.optics.model import WatchList
from auditor.analyse.optics.outputs import age_json, as_json
from auditor.analyse.optics.read import watch_list
from auditor.analyse.pipeline import RankSettings
from auditor.analyse.watchlist import current, refresh
from auditor.cli import app
from auditor.config import OpticsSettings, RankingSettings
from auditor.ingest.captures import ingest_files
from auditor.ingest.optics import OpticsOptions, ingest_optics_files
from auditor.report.build import build_report
from auditor.report.views import watch_age
from auditor.simulate.scenario import Scenario, write_scenario
from auditor.store import Store

runner = CliRunner()
CFG = OpticsSettings()


def _files(folder: Path) -> dict[tuple[str, str], list[Path]]:
    """Each host port's `ethtool -m` files, oldest first (the read time is in the name)."""
    out: dict[tuple[str, str], list[Path]] = {}
    for host in sorted(p for p in (folder / "optics").iterdir() if p.is_dir()):
        for path in sorted(host.glob("mlx5_*.txt")):
            out.setdefault((host.name, path.name.split("-", 1)[0]), []).append(path)
    return out


def _ingest(store: Store, files: dict[tuple[str, str], list[Path]], days: slice) -> datetime:
    """The files of `days` (by index, per port); the newest read time in the store."""
    for (host, device), paths in files.items():
        for r in ingest_optics_files(store, paths[days], "ethtool-module",
                                     OpticsOptions(host=host, port=f"{device}/1")):
            assert r.status != "already ingested"
    newest = store.optics_fingerprint(datetime(2000, 1, 1, tzinfo=UTC),
                                      datetime(2100, 1, 1, tzinfo=UTC))["newest_read_at"]
    assert newest is not None
    return newest


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, datetime]:
    """A 2x4x8 fat tree's 32 host modules read daily for 14 days, 4 of them ageing; the
    database holds the topology and the first 13 days."""
    root = tmp_path_factory.mktemp("precomputed")
    sc = Scenario(seed=7, spines=2, leaves=4, hosts_per_leaf=8, days=14.0, jobs_per_day=10,
                  optics=True, ageing_optics=4)
    truth = write_scenario(root / "scenario", sc)
    db = root / "a.duckdb"
    with Store(db) as store:
        ingest_files(store, [root / "scenario" / "topology" / "ibnetdiscover.txt"],
                     at=truth.topology_at)
        until = _ingest(store, _files(root / "scenario"), slice(0, 13))
    return root, db, until


def _same(a: WatchList, b: WatchList) -> None:
    assert a.watches == b.watches  # every module, lane, finding, number and sentence
    assert (a.modules, a.since, a.until) == (b.modules, b.since, b.until)
    assert as_json(a, CFG)["watch"] == as_json(b, CFG)["watch"]


def test_the_stored_list_is_the_one_computed_on_demand(scenario: tuple[Path, Path, datetime],
                                                       tmp_path: Path) -> None:
    _, src, until = scenario
    db = tmp_path / "a.duckdb"
    db.write_bytes(src.read_bytes())
    since = until - CFG.history
    with Store(db) as store:
        assert not current(store, since, until, CFG).precomputed  # nothing stored yet
        on_demand = watch_list(store, since, until, CFG)
        with store.transaction():
            refresh(store, since, until, CFG)
        stored = current(store, since, until, CFG)
    assert stored.precomputed and stored.on_demand_because is None
    _same(stored, on_demand)
    # Not a trivial list: trends toward thresholds, and the link budget against the peer.
    rules = {f.rule for w in stored.watches for f in w.findings}
    assert {"drift", "link_budget"} <= rules or {"drift", "siblings"} <= rules, rules
    assert any(w.peer is not None for w in stored.watches)
    # Hours later, with no new reading and none aged out: the same list, read.
    with Store(db, read_only=True) as store:
        shift = timedelta(hours=20)
        later = current(store, since + shift, until + shift, CFG)
        assert later.precomputed
        assert later.watches == watch_list(store, since + shift, until + shift, CFG).watches


def test_after_an_optics_ingest_it_is_computed_until_refreshed(
        scenario: tuple[Path, Path, datetime], tmp_path: Path) -> None:
    root, src, until = scenario
    db = tmp_path / "a.duckdb"
    db.write_bytes(src.read_bytes())
    with Store(db) as store:
        with store.transaction():
            refresh(store, until - CFG.history, until, CFG)
        newest = _ingest(store, _files(root / "scenario"), slice(13, 14))
        assert newest > until
        since = newest - CFG.history
        stale = current(store, since, newest, CFG)
        assert not stale.precomputed and stale.computed_at is not None
        assert "the readings changed since the watch list was precomputed" in \
            (stale.on_demand_because or "")
        _same(stale, watch_list(store, since, newest, CFG))
        with store.transaction():
            refresh(store, since, newest, CFG)
        fresh = current(store, since, newest, CFG)
        assert fresh.precomputed
        _same(fresh, watch_list(store, since, newest, CFG))
        # An earlier window than the stored one holds fewer readings: computed, not read.
        assert not current(store, since - timedelta(days=1), newest - timedelta(days=1),
                           CFG).precomputed


def test_other_settings_or_history_or_aged_out_readings_are_not_read(
        scenario: tuple[Path, Path, datetime], tmp_path: Path) -> None:
    _, src, until = scenario
    db = tmp_path / "a.duckdb"
    db.write_bytes(src.read_bytes())
    short = replace(CFG, history_days=5.0)
    with Store(db) as store:
        with store.transaction():
            refresh(store, until - short.history, until, short)
        assert current(store, until - short.history, until, short).precomputed
        other = current(store, until - short.history, until, replace(short, sibling_gap_db=2.0))
        assert other.on_demand_because == \
            "the [optics] settings changed since the watch list was precomputed"
        assert "covers 5 days of history, this asks for 30 days" in \
            (current(store, until - CFG.history, until, CFG).on_demand_because or "")
        # A day later the oldest day's readings left the 5-day window.
        moved = current(store, until - short.history + timedelta(days=1),
                        until + timedelta(days=1), short)
        assert not moved.precomputed and "readings changed" in (moved.on_demand_because or "")


def test_the_report_and_suspects_are_the_same_from_either(
        scenario: tuple[Path, Path, datetime], tmp_path: Path) -> None:
    _, src, until = scenario
    db = tmp_path / "a.duckdb"
    db.write_bytes(src.read_bytes())
    settings = RankSettings(RankingSettings(optics=CFG))
    with Store(db, read_only=True) as store:
        before = build_report(audit(store, until - timedelta(days=14), until, settings))
    with Store(db) as store, store.transaction():
        refresh(store, until - CFG.history, until, CFG)
    with Store(db, read_only=True) as store:
        after = build_report(audit(store, until - timedelta(days=14), until, settings))
    assert before.get("watch_list_precomputed") is False
    assert after.get("watch_list_precomputed") is True
    assert after["suspects"] == before["suspects"]
    assert after.get("optics_trends") == before.get("optics_trends")
    assert before.get("optics_trends")  # the plots were drawn from the on-demand histories
    assert after.get("watch_list") == before.get("watch_list")


def test_the_commands_say_how_old_the_list_is(scenario: tuple[Path, Path, datetime],
                                              tmp_path: Path) -> None:
    _, src, until = scenario
    db = tmp_path / "a.duckdb"
    db.write_bytes(src.read_bytes())
    at = until.isoformat() + "Z"

    def cli(*args: str) -> str:
        res = runner.invoke(app, ["--db", str(db), *args])
        assert res.exit_code == 0, res.output
        return res.stdout

    first = json.loads(cli("watch-list", "--until", at, "--format", "json"))
    assert first["watch_list_precomputed"] is False
    assert first["watch_list_on_demand_because"].startswith("no precomputed watch list")
    assert "optics watch list computed on demand at" in cli("watch-list", "--until", at)
    refreshed = json.loads(cli("watch-list", "--until", at, "--refresh", "--format", "json"))
    read = json.loads(cli("watch-list", "--until", at, "--format", "json"))
    assert read["watch_list_precomputed"] is True and read["watch_list_on_demand_because"] is None
    assert read["watch_list_computed_at"] == refreshed["watch_list_computed_at"]
    assert read["watch"] == first["watch"] == refreshed["watch"]
    assert read["window"] == first["window"] and read["modules"] == first["modules"]
    assert "optics watch list precomputed at " in cli("watch-list", "--until", at)
    data = json.loads(cli("suspects", "--since", "24h", "--until", at, "--format", "json"))
    assert data["watch_list_precomputed"] is True
    assert data["watch_list_computed_at"] == read["watch_list_computed_at"]
    assert "optics watch list precomputed at" in cli("suspects", "--since", "24h", "--until", at)


def test_the_age_line() -> None:
    now = datetime.fromisoformat("2026-12-02T09:00:00+00:00")
    stored = {"watch_list_computed_at": "2026-12-02T03:00:00Z", "watch_list_precomputed": True,
              "watch_list_on_demand_because": None}
    assert watch_age(stored, now) == [
        "optics watch list precomputed at 2026-12-02T03:00:00Z (6.0 h ago), on the readings "
        "it still matches"]
    assert watch_age({**stored, "watch_list_computed_at": "2026-11-29T09:00:00Z"}, now)[0] \
        .endswith("(3.0 days ago), on the readings it still matches")
    assert watch_age({**stored, "watch_list_precomputed": False,
                      "watch_list_on_demand_because": "why"}, now) == [
        "optics watch list computed on demand at 2026-12-02T03:00:00Z: why"]
    assert watch_age({"watch_list_computed_at": None}, now) == []


def test_the_nightly_run_precomputes_it_and_its_report_reads_it(
        scenario: tuple[Path, Path, datetime], tmp_path: Path) -> None:
    _, src, until = scenario
    db = tmp_path / "a.duckdb"
    db.write_bytes(src.read_bytes())
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(f'[store]\ndb = "{db}"\ncaptures = "{tmp_path / "captures"}"\n'
                   f'[nightly]\nreports = "{tmp_path / "reports"}"\n'
                   f'log_file = "{tmp_path / "nightly.log"}"\nsince = "24h"\n')
    night = runner.invoke(app, ["--config", str(cfg), "nightly", "--no-sweep", "--until",
                                until.isoformat() + "Z"])
    assert night.exit_code in (0, 10), night.output
    with Store(db, read_only=True) as store:
        run = store.watch_list_run()
        assert run is not None and run["until"] == until
        assert (run["since"], run["modules"]) == (until - CFG.history, 32)
        stored = current(store, until - CFG.history, until, CFG)
        assert stored.precomputed
        _same(stored, watch_list(store, until - CFG.history, until, CFG))
    (folder,) = (tmp_path / "reports").iterdir()
    report = json.loads((folder / "report.json").read_text())
    assert report["watch_list_precomputed"] is True
    assert report["watch_list_computed_at"] == run["computed_at"].isoformat(
        timespec="seconds") + "Z"
    assert "optics watch list: 32 module(s)" in (tmp_path / "nightly.log").read_text()


def test_a_site_without_diagnostics_is_told_nothing(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    with Store(db) as store:
        until = datetime(2026, 12, 1, tzinfo=UTC)
        wl = current(store, until - CFG.history, until, CFG)
    assert (wl.watches, wl.computed_at, wl.precomputed, wl.on_demand_because) == \
        ([], None, False, None)
    assert watch_age(dict(age_json(wl))) == []
