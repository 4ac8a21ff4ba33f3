"""Three-tier scenarios (issue #25: the 65,536-GPU benchmark is one): the capture has the
tree's cables, a leaf links only its own pod's spines and a spine its plane's cores, jobs whose
rings cross pods die of core-link flaps, and the ranking finds the bad cables."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from auditor.models import NodeType
from auditor.parse.ibnetdiscover import parse_ibnetdiscover
from auditor.simulate.evaluate import evaluate
from auditor.simulate.scenario import Scenario, generate
from auditor.simulate.scenario.fabric import _build_fabric
from auditor.simulate.trees import FatTree3, expected_links

# 4 pods of 4 leaves and 2 spines, 4 cores (2 planes of 2), 2 rails: 32 hosts
TIERS = {"spines": 8, "leaves": 16, "hosts_per_leaf": 4, "hcas_per_host": 2, "cores": 4,
         "pods": 4, "switch_model": "MQM9700"}


def _scenario(**extra: object) -> Scenario:
    return Scenario(seed=3, **TIERS, **extra)  # type: ignore[arg-type]


def test_the_capture_has_the_three_tier_trees_cables(tmp_path: Path) -> None:
    truth = generate(tmp_path, seed=3, days=1, **TIERS)  # type: ignore[arg-type]
    topo = parse_ibnetdiscover((tmp_path / "topology" / "ibnetdiscover.txt").read_text())
    tree = FatTree3(pods=4, leaves_per_pod=4, spines_per_pod=2, cores=4, hosts_per_leaf=4,
                    rails=2)
    assert len(topo.links) == expected_links(tree) == truth.fabric["links"] == 112
    name = {n.guid: n.description.split(";")[-1].split(":")[0] if n.node_type == NodeType.SWITCH
            else n.description for n in topo.nodes}
    tiers: Counter[tuple[str, str]] = Counter()
    for lk in topo.links:
        a, b = sorted((name[lk.a_guid], name[lk.b_guid]))
        tiers[(a.rstrip("0123456789"), b.rstrip("0123456789"))] += 1
        if a.startswith("leaf") and b.startswith("spine"):
            # leaf l of pod p (4 per pod) links spines 2p+1 and 2p+2 only
            assert (int(b[5:]) - 1) // 2 == (int(a[4:]) - 1) // 4
        if a.startswith("core") and b.startswith("spine"):
            # plane 1 (cores 1, 2) links the first spine of every pod, plane 2 the second
            assert (int(a[4:]) - 1) // 2 == (int(b[5:]) - 1) % 2
    assert tiers[("leaf", "spine")] == 32 and tiers[("core", "spine")] == 16
    assert sum(v for (_, b), v in tiers.items() if b.startswith("node")) == 64  # 32 hosts x 2
    assert truth.fabric["cores"] == 4


def test_a_cross_pod_ring_crosses_the_cores_of_its_destinations_plane() -> None:
    import random

    sc = _scenario()
    fab = _build_fabric(sc, random.Random(1))  # noqa: S311 - a synthetic fabric
    # host 0 is in pod 1 (its SU's leaves 1-2), host 31 in pod 4
    links = fab.ring_links([0, 31])
    cores = {fab.switches[fab.links[i].spine].name for i in links
             if fab.links[i].spine is not None
             and fab.switches[fab.links[i].spine].name.startswith("core")}
    assert cores  # the pair's traffic goes through the core tier
    # one core per direction per rail at most (D-mod-K by destination)
    assert len(cores) <= 2 * sc.hcas_per_host
    same_pod = fab.ring_links([0, 4])  # hosts 0 and 4: SUs 0 and 1, both in pod 1
    assert not any(fab.switches[fab.links[i].spine].name.startswith("core")
                   for i in same_pod if fab.links[i].spine is not None)


def test_the_ranking_finds_the_bad_cables_of_a_three_tier_fabric(tmp_path: Path) -> None:
    generate(tmp_path / "s", seed=3, days=2, frequent_flappers=3, rare_flappers=1,
             job_sizes=((1, 5), (2, 5), (4, 3), (8, 2), (16, 1)), **TIERS)  # type: ignore[arg-type]
    score, truth = evaluate(tmp_path / "s", tmp_path / "a.duckdb")
    assert truth["network_failed_jobs"]
    assert score.recall >= 0.75 and not score.false_blames


@pytest.mark.parametrize(("field", "value"), [("cores", 3), ("pods", 3), ("lfts", True)])
def test_tier_settings_that_do_not_make_a_tree_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=r"cores|pods|three tiers|hcas_per_host"):
        Scenario(seed=1, **{**TIERS, field: value})  # type: ignore[arg-type]
