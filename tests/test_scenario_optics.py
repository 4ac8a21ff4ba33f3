"""`auditor simulate --optics` (issue #14): same seed same bytes, off by default (the default
scenario's files do not change), the ageing modules in the truth with flaps after their drift,
the `ethtool -m` text in ethtool's own layout and read back by the project's parser as the
numbers the simulator drew, and the whole scenario ranked with its ageing transceivers."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from auditor.parse.ethtool_module import parse_ethtool_module
from auditor.simulate.evaluate import evaluate
from auditor.simulate.scenario import Scenario, generate, write_scenario
from auditor.simulate.scenario.clock import _Clock
from auditor.simulate.scenario.optics import ethtool_m, file_name, history

SMALL = {"spines": 2, "leaves": 4, "hosts_per_leaf": 4, "days": 9.0, "jobs_per_day": 20}
LINE = re.compile(r"\t(?P<label>.{41}) : (?P<value>.+)")
NUMBER = {  # ethtool's printf formats (sff-common.h)
    "mA": re.compile(r"\d+\.\d{3} mA"),
    "mW": re.compile(r"\d+\.\d{4} mW / (-?\d+\.\d{2}|-inf) dBm"),
    "C": re.compile(r"-?\d+\.\d{2} degrees C / -?\d+\.\d{2} degrees F"),
    "V": re.compile(r"\d+\.\d{4} V"),
}


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def ageing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Scenario]:
    out = tmp_path_factory.mktemp("optics")
    sc = Scenario(seed=4, **SMALL, optics=True, ageing_optics=3)  # type: ignore[arg-type]
    write_scenario(out, sc)
    return out, sc


def test_off_by_default_and_off_is_the_default(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", seed=4, **SMALL)  # type: ignore[arg-type]
    b = generate(tmp_path / "b", seed=4, **SMALL, optics=False)  # type: ignore[arg-type]
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert not (tmp_path / "a" / "optics").exists() and a.ageing_optics == ()
    data = json.loads((tmp_path / "a" / "truth.json").read_text())
    assert "ageing_optics" not in data and "optics" not in data["scenario"]
    assert b.bad_cables == a.bad_cables


def test_same_seed_same_bytes_other_seed_other_bytes(ageing: tuple[Path, Scenario],
                                                     tmp_path: Path) -> None:
    out, sc = ageing
    write_scenario(tmp_path / "again", sc)
    assert _tree(tmp_path / "again") == _tree(out)
    write_scenario(tmp_path / "other", replace(sc, seed=5))
    assert _tree(tmp_path / "other")["truth.json"] != _tree(out)["truth.json"]
    # A shorter run into the same folder leaves no reading of the days it no longer has.
    write_scenario(tmp_path / "again", replace(sc, days=8.0))
    write_scenario(tmp_path / "fresh", replace(sc, days=8.0))
    assert _tree(tmp_path / "again") == _tree(tmp_path / "fresh")


def test_ageing_adds_to_the_faults_it_does_not_move_them(ageing: tuple[Path, Scenario],
                                                         tmp_path: Path) -> None:
    out, sc = ageing
    truth = json.loads((out / "truth.json").read_text())
    plain = generate(tmp_path / "plain", seed=sc.seed, **SMALL)  # type: ignore[arg-type]
    others = [c for c in truth["bad_cables"] if c["fault"] != "ageing_optics"]
    assert others == json.loads((tmp_path / "plain" / "truth.json").read_text())["bad_cables"]
    assert len(truth["ageing_optics"]) == 3 == len(truth["bad_cables"]) - len(plain.bad_cables)
    assert {a["kind"] for a in truth["ageing_optics"]} == {"laser_ageing", "rx_sag",
                                                            "hot_module"}
    flaps = {f["link"]: f for f in truth["flaps"] if f["cause"] == "ageing_optics"}
    for a in truth["ageing_optics"]:
        assert a["onset"] < a["first_flap"] == min(
            f["down_at"] for f in truth["flaps"] if f["link"] == a["link"])
        assert a["link"] in flaps and (a["lane"] is None) == (a["kind"] == "hot_module")
        assert a["ends"][0]["name"] == a["host"] and a["ends"][0]["device"] == a["device"]


def test_ethtool_text_has_ethtools_layout(ageing: tuple[Path, Scenario]) -> None:
    out, sc = ageing
    files = sorted((out / "optics").rglob("*.txt"))
    hosts = sc.hosts * sc.hcas_per_host
    assert len(files) == hosts * 9  # one a day per host port
    text = files[0].read_text()
    lines = text.splitlines()
    assert len(lines) == 28 + 3 + 12 + 56 + 20
    labels = [m["label"].rstrip() for m in map(LINE.fullmatch, lines) if m]
    assert len(labels) == len(lines)  # every line is `\t%-41s : value`
    assert labels[:2] == ["Identifier", "Extended identifier"]
    assert labels.index("Module temperature") == labels.index("Revision Compliance") + 1
    assert "Laser bias current high alarm   (Chan 1)" in labels
    assert "Laser rx power low warning  (Channel 4)" in labels
    assert labels[-1] == "Laser rx power low warning threshold"
    values = dict(zip(labels, (m["value"] for m in map(LINE.fullmatch, lines) if m),
                      strict=False))
    assert NUMBER["mA"].fullmatch(values["Laser tx bias current (Channel 3)"])
    assert NUMBER["mW"].fullmatch(values["Rcvr signal avg optical power(Channel 2)"])
    assert NUMBER["C"].fullmatch(values["Module temperature"])
    assert NUMBER["V"].fullmatch(values["Module voltage"])
    assert values["Laser rx power low warning threshold"] == "0.0933 mW / -10.30 dBm"
    assert re.fullmatch(r"MT\d{4}FT\d{5}", values["Vendor SN"])
    assert re.fullmatch(r"optics/node-\d+/mlx5_0-\d{8}T\d{6}Z\.txt",
                        files[0].relative_to(out).as_posix())


def test_an_ageing_module_raises_its_own_flags(ageing: tuple[Path, Scenario]) -> None:
    out, _ = ageing
    truth = json.loads((out / "truth.json").read_text())
    hot = next(a for a in truth["ageing_optics"] if a["kind"] == "hot_module")
    last = sorted((out / "optics" / hot["host"]).glob(f"{hot['device']}-*.txt"))[-1].read_text()
    assert "\tModule temperature high warning           : On\n" in last
    healthy = sorted((out / "optics").rglob("*.txt"))[0].read_text()
    flags = [ln for ln in healthy.splitlines() if ("alarm" in ln or "warning" in ln)
             and "threshold" not in ln and "implemented" not in ln]
    assert len(flags) == 56 and all(ln.endswith(": Off") for ln in flags)


def test_the_text_reads_back_as_the_numbers(ageing: tuple[Path, Scenario]) -> None:
    """What the project's `ethtool -m` parser reads from each file is the module state the
    simulator drew (`history`: the same streams again), in ethtool's precision (the parser keeps
    dBm to 0.001), and each file's modification time is its read time (the ingest's default)."""
    out, sc = ageing
    readings = history(sc)
    clock = _Clock(sc.start)
    assert len(readings) == len(list((out / "optics").rglob("*.txt")))
    for r in readings[::7]:
        path = out / file_name(r, clock)
        assert path.read_text() == ethtool_m(r)
        at = clock.at(r.at)
        assert path.stat().st_mtime == pytest.approx(at.timestamp(), abs=1e-3)
        (got,) = parse_ethtool_module(path.read_text(), r.host, at, f"{r.device}/1")
        assert (got.serial_number, got.part_number) == (r.serial, "MMA1T00-HS")
        assert got.temperature_c == pytest.approx(r.temp / 256, abs=0.005)
        assert got.vcc_v == pytest.approx(r.vcc / 10000, abs=1e-9)
        for lane, bias, tx, rx in zip(got.lanes, r.bias, r.tx, r.rx, strict=True):
            assert lane.tx_bias_ma == pytest.approx(bias / 500, abs=1e-9)
            assert lane.tx_power_dbm == pytest.approx(10 * math.log10(tx / 10000), abs=6e-4)
            assert lane.rx_power_dbm == pytest.approx(10 * math.log10(rx / 10000), abs=6e-4)
        assert got.thresholds["rx_power_dbm"].low_warning == pytest.approx(-10.30, abs=0.005)
        assert got.thresholds["temperature_c"].high_alarm == 80.0


def test_too_short_a_window_is_refused() -> None:
    with pytest.raises(ValueError, match="optics needs days >= 8"):
        write_scenario(Path("/nonexistent"), Scenario(seed=1, spines=2, leaves=4,
                                                      hosts_per_leaf=4, days=3, optics=True))
    with pytest.raises(ValueError, match="ageing_optics needs optics"):
        Scenario(seed=1, spines=2, leaves=4, hosts_per_leaf=4, ageing_optics=2)


def test_suspects_name_the_ageing_transceivers(ageing: tuple[Path, Scenario],
                                               tmp_path: Path) -> None:
    """The whole scenario ingested (its module readings too) and ranked over its window: every
    ageing module's link is found, as a `transceiver`, with its lane when one lane aged."""
    out, _ = ageing
    score, truth = evaluate(out, tmp_path / "a.duckdb")
    assert score.recall == 1.0 and score.false_blames == []
    found = {frozenset(t.split(":", 1)[1].split(",")): t.split(":", 1)[0] for t in score.top}
    for a in truth["ageing_optics"]:
        ends = frozenset(f"{e['name']}[{e['port']}]" for e in a["ends"])
        assert found.get(ends) == "transceiver", (a["kind"], score.top)


def test_cli_simulate_optics(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from auditor.cli import app

    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path), "--spines", "2",
                                   "--leaves", "4", "--hosts", "2", "--days", "8", "--optics",
                                   "--ageing-optics", "2"])
    assert res.exit_code == 0, res.output
    assert "2 ageing transceiver(s)" in res.output
    params = json.loads((tmp_path / "truth.json").read_text())["scenario"]
    assert params["optics"] is True and params["ageing_optics"] == 2
    res = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path / "x"), "--optics",
                                   "--days", "2"])
    assert res.exit_code == 2 and "optics needs days >= 8" in res.output
