"""`auditor watch-list` and the `transceiver` verdict of `suspects` (issue #14), through the CLI
on a real topology capture (an ibsim fat tree) with two weeks of made-up module readings on two
of its host links: one lane sinking past its warning threshold, everything else healthy."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.ingest.captures import ingest_files
from auditor.models import LaneReading, OpticsReading, Thresholds
from auditor.store import SourceMeta, Store

runner = CliRunner()
FIXTURE = Path(__file__).parent / "fixtures" / "ibnetdiscover" / "ibsim_fattree_small.txt"
START = datetime(2026, 11, 15, 2, 30, tzinfo=UTC)
UNTIL = "2026-11-30T06:00:00Z"
SICK = ("gpu-node-07", "0x1070fd0300000700")  # its HCA port 1 is cabled to leaf04 port 1
WELL = ("gpu-node-08", "0x1070fd0300000800")
RX = Thresholds(-13.31, -10.30, 2.40, 5.40)


def _readings(host: str, serial: str, lane2: float, fall: float) -> list[OpticsReading]:
    return [OpticsReading(
        device=host, port_name="mlx5_0/1", read_at=START + timedelta(days=d), vendor="Mellanox",
        part_number="MMA1T00-HS", serial_number=serial, temperature_c=40.0 + (d % 3) * 0.2,
        vcc_v=3.29,
        lanes=tuple(LaneReading(n, 6.7, 0.8, (lane2 + fall * d if n == 2 else -1.0)
                                + ((d + n) % 3) * 0.05) for n in range(1, 5)),
        thresholds={"rx_power_dbm": RX}) for d in range(15)]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("watch") / "a.duckdb"
    with Store(path) as store:
        ingest_files(store, [FIXTURE], at=START - timedelta(days=1))
        sid = store.add_source(SourceMeta("ethtool-module", "m", "b" * 64, "file", START, True,
                                          1, 0, 30))
        readings = _readings(SICK[0], "MT2231FT00001", -6.0, -0.4)
        readings += _readings(WELL[0], "MT2231FT00002", -1.2, 0.0)
        store.add_optics(sid, readings, [(SICK[1], 1)] * 15 + [(WELL[1], 1)] * 15)
    return path


def _cli(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def test_watch_list_json_contract(db: Path) -> None:
    data = json.loads(_cli(db, "watch-list", "--since", "30d", "--until", UNTIL,
                           "--format", "json"))
    assert data["window"] == {"since": "2026-10-31T06:00:00Z", "until": UNTIL}
    assert data["modules"] == 2 and data["watched"] == len(data["watch"]) == 1
    w = data["watch"][0]
    assert set(w) == {"rank", "device", "port_name", "guid", "port", "serial_number",
                      "part_number", "vendor", "firmware", "lane", "rule", "quantity", "trend",
                      "days_to_threshold", "threshold", "strength", "strong", "rules",
                      "evidence", "peer", "days", "last_read_at"}
    assert (w["device"], w["lane"], w["serial_number"]) == (SICK[0], 2, "MT2231FT00001")
    assert (w["guid"], w["port"], w["peer"]) == (SICK[1], 1, "leaf04 port 1")
    assert w["strong"] and w["threshold"] == "alarm" and w["days_to_threshold"] > 0
    assert "past its low warning -10.3 dBm and still falling" in w["trend"]
    assert w["days"] == 15 and w["last_read_at"] == "2026-11-29T02:30:00Z"


def test_watch_list_table_and_csv(db: Path) -> None:
    table = _cli(db, "watch-list", "--until", UNTIL)
    assert "2 module(s) read, 1 watched" in table and "gpu-node-07" in table
    lines = _cli(db, "watch-list", "--until", UNTIL, "--format", "csv").splitlines()
    assert lines[0].startswith("rank,device,port_name,serial_number,part_number,lane,rule")
    assert len(lines) == 2 and lines[1].startswith("1,gpu-node-07,mlx5_0/1,MT2231FT00001")


def test_a_short_history_fits_no_trend(db: Path) -> None:
    data = json.loads(_cli(db, "watch-list", "--since", "3d", "--until", UNTIL,
                           "--format", "json"))
    assert data["modules"] == 2 and [w["lane"] for w in data["watch"]] == [2]
    # Three days are too few for a trend: the lane is past its warning, nothing more is said.
    assert "drift" not in data["watch"][0]["rules"]
    assert "past_warning" in data["watch"][0]["rules"]


def test_suspects_shows_the_link_as_a_transceiver_with_its_lane(db: Path) -> None:
    data = json.loads(_cli(db, "suspects", "--since", "24h", "--until", UNTIL,
                           "--format", "json"))
    assert len(data["suspects"]) == 1  # nothing flapped: the optics alone put it there
    s = data["suspects"][0]
    assert s["component"] == "transceiver"
    assert {(e["name"], e["port"]) for e in s["ends"]} == {(SICK[0], 1), ("leaf04", 1)}
    assert any("optics lane 2 of the module in gpu-node-07 mlx5_0/1" in e for e in s["evidence"])
    assert "lane 2" in s["action"] and "leaf04 port 1" in s["action"]
    assert [o["lane"] for o in s["optics"]] == [2] and s["flaps"] == 0
    assert 0 < s["score"] < 0.6  # below a link that killed a job


def test_optics_settings_come_from_the_config(db: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text("[optics]\nstrong = 1.0\nhorizon_days = 1\n")
    data = json.loads(_cli(db, "--config", str(cfg), "suspects", "--until", UNTIL,
                           "--format", "json"))
    # Still strong: past its warning and still falling, whatever the strength threshold.
    assert [s["component"] for s in data["suspects"]] == ["transceiver"]
    cfg.write_text("[optics]\nsibling_gap_db = -1\nstrong = 2\nunknown = 1\n")
    res = runner.invoke(app, ["--db", str(db), "--config", str(cfg), "watch-list"])
    assert res.exit_code == 2
    assert "optics.sibling_gap_db: must be greater than 0" in res.output
    assert "optics.strong: must be at most 1" in res.output
    assert "optics.unknown: unknown setting" in res.output
