"""Issue #22: one table of rules. Every point a suspect gets goes through it (no `points +=`
outside `Weights.give`/`take`), every rule given is in the table, `[ranking] weights`
overrides a weight by name (an unknown name is a config error), and the outcomes name the same
rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.analyse.rules import RULES, Weights, score
from auditor.config import RankingSettings
from auditor.errors import ConfigError

ANALYSE = Path(__file__).resolve().parent.parent / "auditor" / "analyse"
# Learned weights multiply each rule's recorded points by its measured precision: the points
# they reweigh are those the rules gave (outcomes.apply_weights).
REWEIGHED = {("outcomes.py", "apply_weights")}


def _function_of(tree: ast.Module) -> dict[ast.AST, str]:
    owner: dict[ast.AST, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                owner.setdefault(node, fn.name)
    return owner


def _is_points(target: ast.expr) -> bool:
    return (isinstance(target, ast.Name) and target.id == "points") or (
        isinstance(target, ast.Attribute) and target.attr == "points")


def _through_table(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and (
        (isinstance(value.func, ast.Attribute) and value.func.attr in ("give", "take"))
        or (isinstance(value.func, ast.Name) and value.func.id in ("give", "take")))


def test_every_point_goes_through_the_rules_table() -> None:
    bypass = []
    for path in sorted(ANALYSE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner = _function_of(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.AugAssign) and _is_points(node.target) \
                    and not _through_table(node.value) \
                    and (path.name, owner.get(node, "")) not in REWEIGHED:
                bypass.append(f"{path.name}:{node.lineno}")
    assert bypass == []


def test_every_rule_given_is_in_the_table() -> None:
    given = set()
    for path in sorted(ANALYSE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _through_table(node) and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant):
                given.add(node.args[1].value)
    assert given and given <= set(RULES), given - set(RULES)
    # switch_event and host_event are given by name in a variable; adaptive_routing only takes
    # points back from the flap rules (Weights.take), by its weight w["adaptive_routing"]
    taken = {node.slice.value for path in sorted(ANALYSE.glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
             and node.value.id == "w" and isinstance(node.slice, ast.Constant)}
    assert "adaptive_routing" in taken
    assert set(RULES) - given <= {"switch_event", "host_event", "adaptive_routing"}


def test_weights_override_by_name_and_refuse_unknown_rules() -> None:
    assert Weights()["killed_job"] == 3.0 and Weights({"killed_job": 6})["killed_job"] == 6.0
    with pytest.raises(ConfigError, match=r"ranking\.weights\.nope: no such rule"):
        Weights({"nope": 1.0})
    scored: dict[str, float] = {}
    assert Weights.give(scored, "flaps", 2.5) == 2.5 and scored == {"flaps": 2.5}
    assert Weights.give(scored, "votes", 0.0) == 0.0 and "votes" not in scored
    Weights.take(scored, ("long_flap", "flaps"), 1.0)
    assert scored == {"flaps": 1.5}
    with pytest.raises(KeyError):
        Weights.give(scored, "made_up", 1.0)


def test_a_weight_from_the_config_changes_the_ranking(tmp_path: Path) -> None:
    """A site that weighs a killed job at 6 points instead of 3."""
    from auditor.analyse.correlate import gather
    from auditor.analyse.rank import rank
    from auditor.simulate.evaluate import load_scenario
    from auditor.simulate.scenario import REALISTIC, generate
    from auditor.store import Store, utc_naive
    from auditor.timeparse import parse_instant

    generate(tmp_path / "s", seed=2, spines=8, leaves=16, hosts_per_leaf=16, **REALISTIC)
    truth = load_scenario(tmp_path / "s", tmp_path / "a.duckdb")
    since = utc_naive(parse_instant(truth["window_start"]))
    until = utc_naive(parse_instant(truth["window_end"]))
    with Store(tmp_path / "a.duckdb", read_only=True) as store:
        ev = gather(store, since, until)
    plain = {tuple(sorted(map(str, s.ends))): s for s in rank(ev)}
    heavy = {tuple(sorted(map(str, s.ends))): s
             for s in rank(ev, RankingSettings(weights={"killed_job": 6.0}))}
    killers = [k for k, s in plain.items() if s.jobs_failed]
    assert killers
    for k in killers:
        more = heavy[k].rule_points["killed_job"] - plain[k].rule_points["killed_job"]
        assert more == pytest.approx(3.0 * plain[k].jobs_failed)
        assert heavy[k].points == pytest.approx(plain[k].points + more)
    assert all(heavy[k].points == plain[k].points for k in plain if k not in killers)


def test_score_is_monotone_and_bounded() -> None:
    values = [score(p) for p in (0.0, 0.5, 4.0, 12.0, 60.0)]
    assert values == sorted(values) and 0 <= values[0] < values[-1] <= 1
    assert score(4.0) == pytest.approx(0.487, abs=1e-3)


def test_docs_show_the_table_the_code_has() -> None:
    """docs/rules.md's table is generated from the code (scripts/rules_table.py): stale docs
    fail here."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "rules_table.py"
    spec = importlib.util.spec_from_file_location("rules_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.DOC.read_text(encoding="utf-8")
    assert module.render(text) == text
    assert all(f"| `{name}` |" in text for name in RULES)
