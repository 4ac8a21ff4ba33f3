"""The ranking with stored forwarding tables, end to end (issue #23): a generated scenario with
its `dump_lfts.sh` captures ingested as `--kind lfts`, ranked through the one entry point, and
the same scenario without them. With the tables the harmless leaf uplinks that jobs crossed are
cleared by those jobs, sure crossings from the routes; without, nothing speaks of routes and
everything is as before. Small fabric: the module runs in well under a minute."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.analyse.pipeline import rank_window, route_book
from auditor.simulate.evaluate import load_scenario
from auditor.simulate.scenario import generate
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_instant

OPTIONS: dict[str, Any] = {"spines": 4, "leaves": 8, "hosts_per_leaf": 8, "harmless_flaps": 4}
SEED = 3


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("routed")
    generate(root / "s", seed=SEED, **OPTIONS, lfts=True)
    truth = load_scenario(root / "s", root / "with.duckdb")
    load_scenario(root / "s", root / "without.duckdb", lfts=False)
    return root / "with.duckdb", root / "without.duckdb", truth


def _window(truth: dict[str, Any]) -> tuple[datetime, datetime]:
    return (utc_naive(parse_instant(truth["window_start"])),
            utc_naive(parse_instant(truth["window_end"])))


def _uplink_names(truth: dict[str, Any]) -> dict[frozenset[tuple[str, int]], list[list[str]]]:
    return {frozenset((e["name"], e["port"]) for e in h["ends"]): h["crossed_by"]
            for h in truth["harmless_links"] if h["kind"] == "switch"}


def test_the_book_holds_the_captures_only_with_tables(
        scenario: tuple[Path, Path, dict[str, Any]]) -> None:
    with_db, without_db, truth = scenario
    since, until = _window(truth)
    with Store(with_db, read_only=True) as store:
        book = route_book(store, since, until, adaptive=False)
        assert book is not None and book.captures
        # the first capture in effect, then only those that changed a table: fewer than taken
        assert len(book.captures) <= len(truth["lft_captures"])
        routes = book.routes(book.captures[0])
        assert routes is not None and routes.tables
    with Store(without_db, read_only=True) as store:
        assert route_book(store, since, until, adaptive=False) is None


def test_crossing_jobs_clear_harmless_uplinks_from_the_routes(
        scenario: tuple[Path, Path, dict[str, Any]]) -> None:
    with_db, without_db, truth = scenario
    since, until = _window(truth)
    uplinks = _uplink_names(truth)
    crossed = {link for link, flaps in uplinks.items() if any(flaps)}
    assert crossed, "the scenario must have a harmless uplink some job crossed"
    found: dict[bool, dict[frozenset[tuple[str, int]], str]] = {}
    for tables, db in ((True, with_db), (False, without_db)):
        with Store(db, read_only=True) as store:
            ranking = rank_window(store, since, until)
        out = ranking.as_json()
        found[tables] = {
            frozenset((e["name"], e["port"]) for e in s["ends"]): " ".join(s["evidence"])
            for s in out["suspects"] if s["component"] not in ("switch", "host")}
    for link in crossed:
        said = found[True].get(link, "")
        assert "its NCCL ring's routes cross it (forwarding tables)" in said, (link, said)
    assert not any("forwarding tables" in text for text in found[False].values())
    # the uplinks no job crossed (by truth) get no crossing from the routes either
    for link in set(uplinks) - crossed:
        assert "forwarding tables" not in found[True].get(link, "")



def test_a_reroute_names_the_subnet_manager_among_the_flaps_sources(
        scenario: tuple[Path, Path, dict[str, Any]]) -> None:
    with_db, without_db, truth = scenario
    since, until = _window(truth)
    # the reroutes a capture saw while the link was down (the first capture lists them)
    seen = {r["link"] for r in truth["reroutes"] if r["captures"]}
    assert seen
    named: dict[bool, set[str]] = {}
    for tables, db in ((True, with_db), (False, without_db)):
        with Store(db, read_only=True) as store:
            ranking = rank_window(store, since, until)
        named[tables] = {
            "=".join(sorted(f"{e['name']}:{e['port']}" for e in s["ends"]))
            for s in ranking.as_json()["suspects"]
            if any("sm reroute" in line for line in s["evidence"])}
    suspects = _suspect_links(with_db, truth)
    rerouted = {"=".join(sorted(link.split("="))) for link in seen}
    # every rerouted link the ranking lists says the SM saw it go; without tables none does
    assert rerouted & suspects and rerouted & suspects <= named[True]
    assert not named[False]


def _suspect_links(db: Path, truth: dict[str, Any]) -> set[str]:
    since, until = _window(truth)
    with Store(db, read_only=True) as store:
        out = rank_window(store, since, until).as_json()
    return {"=".join(sorted(f"{e['name']}:{e['port']}" for e in s["ends"]))
            for s in out["suspects"] if s["component"] not in ("switch", "host")}
