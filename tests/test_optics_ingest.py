"""`auditor ingest` of transceiver diagnostics (issue #14): the three kinds, `--kind auto`,
placement on the demo fabric (real ibsim captures), re-ingest, and the mistakes it refuses.
Everything goes through the real command line into a real DuckDB file."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.demo import build_demo
from auditor.ingest.optics import detect_optics_kind
from auditor.ingest.plan import plan_ingest
from auditor.store import Store
from tests.conftest import FIXTURES

runner = CliRunner(env={"COLUMNS": "300", "AUDITOR_DB": None, "AUDITOR_CONFIG": None})
GPU05 = "0x0c42a10300000500"  # "gpu-node-05 mlx5_0" in the demo fabric
SR4 = FIXTURES / "ethtool_module" / "qsfp28_sr4_four_lanes_mw_and_dbm_tab_indent.txt"
MLX4 = FIXTURES / "ethtool_module" / "qsfp_plus_mlx4_one_lane_lit_three_minus_inf_redacted.txt"
BF3 = FIXTURES / "mlxlink_module" / "bluefield3_two_ports_passive_dac_na_values_with_counters.txt"
NVUE = FIXTURES / "onyx_optics" / "nvue_nested_thresholds_first_channel_only.txt"
AT = "2026-11-30T03:00:00Z"  # after the demo's last sweep


def ingest(db: Path, *args: str) -> tuple[int, list[dict[str, object]], str]:
    res = runner.invoke(app, ["--db", str(db), "ingest", "--format", "json", *args])
    rows = json.loads(res.stdout) if res.exit_code == 0 else []
    return res.exit_code, rows, res.output


def readings(db: Path) -> list[dict[str, object]]:
    with Store(db) as store:
        return store.optics_readings(datetime(2026, 1, 1, tzinfo=UTC),
                                     datetime(2027, 1, 1, tzinfo=UTC))


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    db = tmp_path / "a.duckdb"
    build_demo(db)
    return db


@pytest.mark.parametrize(("path", "kind"), [
    (SR4, "ethtool-module"), (MLX4, "ethtool-module"), (BF3, "mlxlink-module"),
    (NVUE, "onyx-optics"),
    (FIXTURES / "ethtool_module" / "qsfp_dd_cmis_eight_channels_four_dark_no_indent.txt",
     "ethtool-module"),
    (FIXTURES / "onyx_optics" / "nvue_flat_four_channels_mw_and_dbm_trailing_spaces.txt",
     "onyx-optics"),
])
def test_auto_recognises_every_diagnostics_capture(path: Path, kind: str) -> None:
    assert detect_optics_kind(path.read_text()) == kind
    plan = plan_ingest([path], "auto")
    assert plan.optics == [path] and not plan.captures and not plan.logs and not plan.job_files


def test_ethtool_reading_is_placed_on_the_hosts_hca_and_reingest_is_a_no_op(demo: Path) -> None:
    args = ["--kind", "ethtool-module", "--host", "gpu-node-05", "--port", "ib0", "--at", AT,
            str(SR4)]
    code, rows, out = ingest(demo, *args)
    assert code == 0, out
    assert [(r["kind"], r["status"], r["records"], r["warnings"]) for r in rows] == [
        ("ethtool-module", "ingested", 1, "")]
    stored = readings(demo)
    # gpu-node-05 has one HCA: any netdev of the host is its port 1.
    assert [(r["device"], r["port_name"], r["guid"], r["port"], r["lane"]) for r in stored] == [
        ("gpu-node-05", "ib0", GPU05, 1, lane) for lane in (1, 2, 3, 4)]
    assert stored[0]["serial_number"] == "MT1708FT01255"
    assert stored[0]["read_at"] == datetime(2026, 11, 30, 3, 0, tzinfo=UTC).replace(tzinfo=None)
    code, rows, _ = ingest(demo, *args)
    assert rows[0]["status"] == "already ingested" and len(readings(demo)) == 4
    # Another port: the same file read as something else replaces what it stored.
    code, rows, _ = ingest(demo, *args[:4], "--port", "mlx5_0/1", *args[6:])
    assert rows[0]["status"] == "re-ingested"
    assert {(r["port_name"], r["guid"], r["port"]) for r in readings(demo)} == {
        ("mlx5_0/1", GPU05, 1)}
    with Store(demo) as store:
        limits = {t["quantity"]: t for t in store.optics_thresholds()}
    assert limits["rx_power_dbm"]["low_alarm"] == -13.307
    assert limits["temperature_c"]["low_warning"] is None  # printed as 0.00: none


def test_the_same_capture_read_at_another_time_is_another_reading(demo: Path) -> None:
    base = ["--kind", "ethtool-module", "--host", "gpu-node-05", "--port", "ib0", str(SR4)]
    assert ingest(demo, "--at", "2026-11-30T03:00:00Z", *base)[1][0]["status"] == "ingested"
    assert ingest(demo, "--at", "2026-11-30T04:00:00Z", *base)[1][0]["status"] == "ingested"
    assert len(readings(demo)) == 8


def test_without_at_the_file_time_is_the_read_time(demo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "cap.txt"
    shutil.copy(MLX4, copy)
    when = datetime(2026, 11, 30, 2, 30, tzinfo=UTC).timestamp()
    os.utime(copy, (when, when))
    code, _, out = ingest(demo, "--host", "gpu-node-07", str(copy))
    assert code == 0, out
    stored = readings(demo)
    # The port comes from the capture's own `# ethtool -m eth2` line.
    assert [(r["port_name"], r["lane"], r["read_at"]) for r in stored] == [
        ("eth2", 1, datetime(2026, 11, 30, 2, 30, tzinfo=UTC).replace(tzinfo=None))]


def test_unplaced_readings_are_stored_and_counted_per_reason(demo: Path) -> None:
    code, rows, out = ingest(demo, "--kind", "mlxlink-module", "--host", "bluefield-1", "--at",
                             AT, str(BF3))
    assert code == 0, out
    assert rows[0]["records"] == 2
    assert "2 reading(s): reading on an unmapped port: unknown device" in str(rows[0]["warnings"])
    stored = readings(demo)
    assert {(r["port_name"], r["guid"], r["lane"], r["temperature_c"]) for r in stored} == {
        ("mt41692_pciconf0/1", None, None, None), ("mt41692_pciconf0.1/1", None, None, None)}
    res = runner.invoke(app, ["--db", str(demo), "sources", "--format", "json"])
    optics = [s for s in json.loads(res.stdout) if s["kind"] == "mlxlink-module"]
    assert optics and optics[0]["records"] == 2


def test_switch_capture_with_onyx_command_line_is_placed_on_the_switch_port(
        demo: Path, tmp_path: Path) -> None:
    capture = tmp_path / "leaf01-optics.txt"
    body = NVUE.read_text().split("\n", 1)[1]  # the NVUE prompt line names an Ethernet port
    capture.write_text("leaf01 [standalone: master] # show interfaces ib 1/3 transceiver "
                       "diagnostics\n" + body)
    code, rows, out = ingest(demo, "--host", "leaf01", "--at", AT, str(capture))
    assert code == 0, out
    assert rows[0]["kind"] == "onyx-optics"
    stored = readings(demo)
    assert [(r["device"], r["port_name"], r["guid"], r["port"]) for r in stored] == [
        ("leaf01", "IB1/3", "0xb8599f0300200001", 3)]


@pytest.mark.parametrize(("args", "message"), [
    (["--kind", "ethtool-module", str(SR4)], "names no host or switch; pass --host"),
    (["--kind", "ethtool-module", "--host", "h", str(SR4)], "no port named"),
    (["--kind", "mlxlink-module", "--host", "h", "--port", "mlx5_0/1", str(SR4)],
     "no 'Module Info' section"),
    (["--kind", "onyx-optics", "--host", "h", "--port", "IB1/1", str(BF3)], "name : value"),
])
def test_mistakes_are_refused_and_nothing_is_stored(demo: Path, args: list[str],
                                                    message: str) -> None:
    code, _, out = ingest(demo, *args)
    assert code == 2
    assert message in out
    assert readings(demo) == []


def test_implausible_readings_are_counted_and_never_watched_or_blamed(
        demo: Path, tmp_path: Path) -> None:
    """Issue #21: a capture claiming 1e308 C made a strong watch-list entry and a `transceiver`
    suspect whose evidence held a 309-digit number. Now the value is left out at ingest and
    counted in `sources`; the rest of the reading is kept."""
    huge = "1" + "0" * 308
    capture = tmp_path / "hot.txt"
    capture.write_text(SR4.read_text().replace(
        "30.56 degrees C / 87.01 degrees F", f"{huge}.00 degrees C / {huge}.00 degrees F")
        .replace("8.500 mA", "-1000000.000 mA"))
    for hour in range(3, 9):  # after the demo's last sweep: placed on gpu-node-05's HCA
        code, rows, out = ingest(demo, "--kind", "ethtool-module", "--host", "gpu-node-05",
                                 "--port", "ib0", "--at", f"2026-11-30T0{hour}:00:00Z",
                                 str(capture))
        assert code == 0, out
        assert set(str(rows[0]["warnings"]).split("; ")) == {
            "1 reading(s): implausible temperature_c reading (outside -128..128 C), left out",
            "1 reading(s): implausible tx_bias_ma threshold (outside 0..524.28 mA), left out"}
    stored = readings(demo)
    assert len(stored) == 24 and {r["temperature_c"] for r in stored} == {None}
    assert {r["tx_bias_ma"] for r in stored} == {6.75} and {r["vcc_v"] for r in stored} == {3.235}
    with Store(demo) as store:
        reasons = {(i["reason"], i["lines"]) for i in store.issues()}
        limits = {t["quantity"]: t for t in store.optics_thresholds()}
    assert ("implausible temperature_c reading (outside -128..128 C), left out", 1) in reasons
    assert limits["tx_bias_ma"]["high_alarm"] is None and limits["tx_bias_ma"]["low_alarm"]
    window = ["--since", "7d", "--until", "2026-11-30T09:00:00Z", "--format", "json"]
    watch = runner.invoke(app, ["--db", str(demo), "watch-list", *window])
    assert watch.exit_code == 0, watch.output
    assert not [w for w in json.loads(watch.stdout)["watch"] if w["quantity"] == "temperature_c"]
    suspects = runner.invoke(app, ["--db", str(demo), "suspects", *window])
    assert suspects.exit_code == 0, suspects.output
    assert huge not in suspects.stdout and huge not in watch.stdout
    blamed = json.loads(suspects.stdout)["suspects"]
    assert "transceiver" not in {s["component"] for s in blamed}
    assert not [s for s in blamed if s["optics"] or "transceiver" in s["rules"]]
