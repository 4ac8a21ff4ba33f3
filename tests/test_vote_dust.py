"""Vote dust (issue #25): a link whose only evidence is NCCL pair votes below VOTE_DUST (the pair's
paths spread over more than 100 links) is not listed as a suspect; the votes stay in the
evidence and the JSON says how many links were left out."""

from __future__ import annotations

import pytest

from auditor.analyse import rank as rank_mod
from auditor.analyse.evidence import VOTE_DUST, LinkEvidence
from auditor.analyse.pipeline import Ranking, rank_window
from auditor.analyse.rank import Suspect
from auditor.report import views
from auditor.simulate.evaluate import evaluate
from auditor.simulate.scenario import generate
from auditor.store import Store, utc_naive
from auditor.timeparse import parse_instant

# Two pods of 2 leaves and 16 spines, 128 cores in 16 planes of 8, no forwarding tables: a
# failing pair between the pods spreads its vote over 16 + 128 + 128 + 16 leaf-spine and
# spine-core links and the two host cables, 290 links (a 65,536-GPU fabric: ~2,100).
WIDE = {"spines": 32, "leaves": 4, "hosts_per_leaf": 8, "cores": 128, "pods": 2,
        "switch_model": "MQM9700", "frequent_flappers": 6, "rare_flappers": 2,
        "job_sizes": ((2, 5), (4, 3), (8, 2), (16, 1))}


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Ranking:
    tmp = tmp_path_factory.mktemp("dust")
    # seed 2: a job killed by a spine-core flap whose two failing pairs (one each way) vote
    generate(tmp / "s", seed=2, days=2, **WIDE)  # type: ignore[arg-type]
    score, truth = evaluate(tmp / "s", tmp / "a.duckdb")
    assert score.recall == 1.0 and not score.false_blames
    with Store(tmp / "a.duckdb", read_only=True) as store:
        return rank_window(store, utc_naive(parse_instant(truth["window_start"])),
                           utc_naive(parse_instant(truth["window_end"])))


def _only_votes(le: LinkEvidence) -> bool:
    """Nothing but votes gathered against the link (every field that gives points or says
    something in the ranking is empty)."""
    return not (le.flaps or le.maintenance_flaps or le.common_mode_flaps or le.counters
                or le.saturated or le.jobs or le.degraded or le.port_errors or le.survived
                or le.failovers or le.healthy or le.host_note or le.idle_flaps)


def _key(s: Suspect) -> tuple[tuple[str, int | None], ...]:
    return tuple(sorted((e["guid"], e["port"]) for e in s.ends))


def test_links_only_vote_dust_points_at_are_not_listed(wide: Ranking) -> None:
    ev = wide.evidence
    dust = {lk for lk, le in ev.links.items() if 0 < le.votes < VOTE_DUST and _only_votes(le)}
    assert dust  # the scenario has them: 2 pairs x 1/290 of a vote each
    listed = {_key(s) for s in wide.suspects}
    assert not listed & dust
    assert ev.vote_dust_links == len(dust)
    # the votes stay in the evidence; a link with more than a vote's dust, or with other
    # evidence beside its dust (the flapped spine-core link the job died of), is listed
    assert all(ev.links[lk].votes > 0 for lk in dust)
    assert {lk for lk, le in ev.links.items() if le.votes >= VOTE_DUST} <= listed
    flapped = {lk for lk, le in ev.links.items() if 0 < le.votes < VOTE_DUST and le.flaps}
    assert flapped and flapped <= listed

def test_leaving_dust_out_does_not_change_the_listed_ranking(
        wide: Ranking, monkeypatch: pytest.MonkeyPatch) -> None:
    ev = wide.evidence
    left_out = ev.vote_dust_links
    monkeypatch.setattr(rank_mod, "VOTE_DUST", 0.0)  # the ranking as it was: every link listed
    everything = rank_mod.rank(ev)
    assert ev.vote_dust_links == 0
    ev.vote_dust_links = left_out  # (the module's evidence, shared)
    dust = {lk for lk, le in ev.links.items() if 0 < le.votes < VOTE_DUST and _only_votes(le)}
    assert len(everything) == len(wide.suspects) + len(dust)
    kept = [(_key(s), s.points, s.component) for s in everything if _key(s) not in dust]
    assert kept == [(_key(s), s.points, s.component) for s in wide.suspects]


def test_the_json_and_the_table_say_how_many_were_left_out(wide: Ranking) -> None:
    data = wide.as_json()
    assert data["vote_dust_links"] == wide.evidence.vote_dust_links > 0
    assert set(data["window"]) == {"since", "until"}  # the window's fields as they were
    lines = views.suspects(data | {"coverage": {}}, [], "table")
    assert f"{data['vote_dust_links']} link(s) not listed: only NCCL pair votes below 0.01" \
        in lines[1]
