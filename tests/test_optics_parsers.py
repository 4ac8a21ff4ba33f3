"""Transceiver diagnostics parsers (issue #14): `ethtool -m`, `mlxlink -m` and the switch CLI's
per-port diagnostics: the rules they share and what they refuse.

Every `tests/fixtures/{ethtool_module,mlxlink_module,onyx_optics}/<case>.txt` is a real capture;
its `<case>.json` says where it came from (`about`), what the parser is given (`params`) and the
readings it must return (run by tests/test_fixtures.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.errors import ParseError
from auditor.models import OPTICS_QUANTITIES, OpticsReading, plausible
from auditor.parse import ethtool_module, mlxlink_module, onyx_optics
from auditor.parse._optics import CUT, FIELD_MAX, NO_LIGHT_DBM, mw_to_dbm
from auditor.parse.ethtool_module import parse_ethtool_module
from auditor.parse.mlxlink_module import parse_mlxlink_module
from auditor.parse.onyx_optics import parse_onyx_optics
from tests.conftest import FIXTURES
from tests.strategies import near_miss

Parser = Callable[..., list[OpticsReading]]
PARSERS: dict[str, Parser] = {
    "ethtool_module": parse_ethtool_module,
    "mlxlink_module": parse_mlxlink_module,
    "onyx_optics": parse_onyx_optics,
}
KINDS = {"ethtool_module": "ethtool-module", "mlxlink_module": "mlxlink-module",
         "onyx_optics": "onyx-optics"}
CASES = sorted(p for folder in PARSERS for p in (FIXTURES / folder).glob("*.txt"))
AT = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def _one(parse: Parser, text: str, port: str | None = "p1") -> OpticsReading:
    found = parse(text, "host1", AT, port)
    assert len(found) == 1
    return found[0]


# --- the shared rules ------------------------------------------------------------------------


@pytest.mark.parametrize(("mw", "dbm"), [(1.0, 0.0), (0.5, -3.01), (2.0, 3.01), (0.0001, -40.0),
                                         (0.0, -40.0), (0.00001, -40.0), (10.0, 10.0)])
def test_mw_to_dbm(mw: float, dbm: float) -> None:
    assert mw_to_dbm(mw) == pytest.approx(dbm, abs=0.001)
    assert mw_to_dbm(mw) >= NO_LIGHT_DBM


ETHTOOL_LANE = (
    "\tIdentifier                                : 0x11 (QSFP28)\n"
    "\tModule temperature                        : 30.00 degrees C / 86.00 degrees F\n"
    "\tModule voltage                            : 3.3000 V\n"
    "\tLaser tx bias current (Channel 1)         : 0.000 mA\n"
    "\tTransmit avg optical power (Channel 1)    : 0.0000 mW / -inf dBm\n"
    "\tRcvr signal avg optical power(Channel 1)  : 0.5000 mW / -3.01 dBm\n"
    "\tLaser output power high alarm threshold   : 1.0000 mW / 0.00 dBm\n"
    "\tLaser output power low alarm threshold    : 0.0000 mW / -inf dBm\n"
)


def test_a_lane_with_light_from_the_peer_is_kept_and_a_0_dbm_limit_is_a_limit() -> None:
    r = _one(parse_ethtool_module, ETHTOOL_LANE)
    assert [(ln.lane, ln.tx_bias_ma, ln.tx_power_dbm, ln.rx_power_dbm) for ln in r.lanes] == [
        (1, 0.0, NO_LIGHT_DBM, -3.01)]
    # 1 mW is 0 dBm: a real limit; 0 mW is "none".
    assert r.thresholds["tx_power_dbm"].high_alarm == 0.0
    assert r.thresholds["tx_power_dbm"].low_alarm is None


def test_sfp_single_lane_labels_without_channel_numbers() -> None:
    text = ("Identifier                                : 0x03 (SFP)\n"
            "Vendor name                               : FINISAR CORP.\n"
            "Laser bias current                        : 7.934 mA\n"
            "Laser output power                        : 0.5734 mW / -2.42 dBm\n"
            "Receiver signal average optical power     : 0.0004 mW / -33.98 dBm\n"
            "Module temperature                        : 30.14 degrees C / 86.25 degrees F\n"
            "Module voltage                            : 3.3440 V\n"
            "Laser bias current high alarm threshold   : 11.800 mA\n")
    r = _one(parse_ethtool_module, text)
    assert [(ln.lane, ln.tx_bias_ma, ln.tx_power_dbm, ln.rx_power_dbm) for ln in r.lanes] == [
        (1, 7.934, -2.415, -33.979)]
    assert r.thresholds["tx_bias_ma"].high_alarm == 11.8


def test_copper_transmitter_means_lane_bytes_are_not_readings() -> None:
    # The shape of an Edgecore DAC on Cumulus: "bias" in the lane bytes of a cable with no laser.
    text = ("Identifier                                : 0x0d (QSFP+)\n"
            "Transmitter technology                    : 0xa0 (Copper cable unequalized)\n"
            "Laser bias current (Channel 1)            : 33.410 mA\n"
            "Receiver signal OMA(Channel 1)            : 1.7229 mW / 2.36 dBm\n"
            "Module temperature                        : 0.00 degrees C / 32.00 degrees F\n"
            "Module voltage                            : 0.0000 V\n")
    r = _one(parse_ethtool_module, text)
    assert (r.lanes, r.temperature_c, r.vcc_v, r.thresholds) == ((), None, None, {})


def test_cmis_active_firmware_wins_over_the_vendor_revision() -> None:
    text = ("Identifier                                : 0x18 (QSFP-DD)\n"
            "Vendor rev                                : 41\n"
            "Active firmware version                   : 2.6\n"
            "Inactive firmware version                 : 2.7\n")
    assert _one(parse_ethtool_module, text).firmware == "2.6"


MLXLINK = """Module Info
-----------
Temperature [C]                    : 49 [-10..80]
Voltage [mV]                       : 3189.4 [3100..3500]
Bias Current [mA]                  : 9.210,0,9.054,9.142 [7..11]
Rx Power Current [dBm]             : 1.945,-40,2.167,0 [-5.003..3.998]
Tx Power Current [dBm]             : 0.867,-40,1.011,1.069 [-40..3.998]
Vendor Name                        : NVIDIA
Vendor Part Number                 : MMA4Z00-NS
Vendor Serial Number               : MT2231FT01234
Rev                                : A6
FW Version                         : 46.120.500
"""


def test_mlxlink_lanes_alarm_ranges_and_units() -> None:
    r = _one(parse_mlxlink_module, MLXLINK, "mlx5_0/1")
    assert (r.temperature_c, r.vcc_v, r.firmware) == (49.0, 3.1894, "46.120.500")
    # Lane 2 is dark (0 mA, -40 dBm both ways); lane 4's 0 dBm Rx is 1 mW of light.
    assert [(ln.lane, ln.rx_power_dbm) for ln in r.lanes] == [(1, 1.945), (3, 2.167), (4, 0.0)]
    assert r.thresholds["vcc_v"].low_alarm == 3.1 and r.thresholds["vcc_v"].high_alarm == 3.5
    assert r.thresholds["tx_power_dbm"].low_alarm is None  # -40 dBm: a limit of 0 mW
    assert r.thresholds["temperature_c"].low_warning is None  # mlxlink prints alarms only


def test_mlxlink_passive_dac_zero_monitors_are_not_readings() -> None:
    text = ("Module Info\n-----------\n"
            "Temperature [C]                    : 0 [0..0]\n"
            "Voltage [mV]                       : 0 [0..0]\n"
            "Bias Current [mA]                  : 0,0,0,0 [0..0]\n"
            "Rx Power Current [dBm]             : 0,0,0,0 [0..0]\n"
            "Tx Power Current [dBm]             : 0,0,0,0 [0..0]\n"
            "Cable Type                         : Passive copper cable\n"
            "Vendor Name                        : FS\n")
    r = _one(parse_mlxlink_module, text, "mlx5_0/1")
    assert (r.lanes, r.temperature_c, r.vcc_v, r.thresholds, r.vendor) == ((), None, None, {},
                                                                            "FS")


def test_mlxlink_reads_module_info_only() -> None:
    text = ("Tool Information\n----------------\nFirmware Version                   : 28.46.3048\n"
            "\n" + MLXLINK)
    assert _one(parse_mlxlink_module, text, "mlx5_0/1").firmware == "46.120.500"


def test_nvue_unplugged_port_gives_no_reading() -> None:
    text = "identifier             : N/A\nstatus                 : unplugged\n"
    assert parse_onyx_optics(text, "leaf01", AT, "swp9") == []


def test_text_fields_are_bounded() -> None:
    text = ("Identifier                                : 0x11 (QSFP28)\n"
            "Vendor name                               : " + "A" * 100_000 + "\n"
            "Vendor SN                                 : \x1b[2J[bold]x[/]\n")
    r = _one(parse_ethtool_module, text, "x" * 1000)
    assert len(r.vendor or "") == FIELD_MAX and len(r.port_name) == FIELD_MAX
    assert r.serial_number == "\x1b[2J[bold]x[/]"  # kept as text; display makes it inert


# --- command lines name the port -------------------------------------------------------------


@pytest.mark.parametrize(("module", "line", "port"), [
    (ethtool_module, "# ethtool -m eth2", "eth2"),
    (ethtool_module, "root@cumulus:~# ethtool -m swp49 |less", "swp49"),
    (ethtool_module, "admin@sw:~$ sudo ethtool --module-info sfp1", "sfp1"),
    (ethtool_module, "ethtool -S eth0", None),
    (ethtool_module, "ethtool -m eth0 hex on", None),
    (mlxlink_module, "ubuntu@bf:~$ sudo mlxlink -d /dev/mst/mt41692_pciconf0 -p 1 -m -c",
     "mt41692_pciconf0/1"),
    (mlxlink_module, "mlxlink -d mlx5_3 -m", "mlx5_3/1"),
    (mlxlink_module, "mlxlink -d mlx5_3 --show_module -p 2", "mlx5_3/2"),
    (mlxlink_module, "mlxlink -d mlx5_3 -c", None),
    (onyx_optics, "cumulus@switch:~$ nv show interface swp1 transceiver", "swp1"),
    (onyx_optics, "nv show platform transceiver sw1p1", "sw1p1"),
    (onyx_optics, "leaf01 [standalone: master] # show interfaces ib 1/17 transceiver diagnostics",
     "IB1/17"),
    (onyx_optics, "show interfaces ib 1/17 transceiver", None),
    (onyx_optics, "temperature            : 42.56 degrees C / 108.61 degrees F", None),
])
def test_command_port(module: Any, line: str, port: str | None) -> None:
    assert module.command_port(line) == port


def test_a_port_named_twice_is_refused() -> None:
    text = "# ethtool -m eth0\nIdentifier : 0x11 (QSFP28)\n" * 2
    with pytest.raises(ParseError, match="listed twice") as err:
        parse_ethtool_module(text, "h", AT)
    assert err.value.line_no == 3


def test_no_port_anywhere_is_refused() -> None:
    with pytest.raises(ParseError, match="no port named"):
        parse_ethtool_module("Identifier : 0x11 (QSFP28)\n", "h", AT)


# --- what is refused -------------------------------------------------------------------------


@pytest.mark.parametrize(("parse", "text", "line_no", "reason"), [
    (parse_ethtool_module, "", 0, "empty"),
    (parse_ethtool_module, "\n\n", 0, "empty"),
    (parse_ethtool_module, "Cannot get module EEPROM information: Invalid argument\n", 1,
     "not ethtool -m output"),
    (parse_ethtool_module, "Identifier : 0x11\nModule voltage : 3.3 volts\n", 2, "format"),
    (parse_ethtool_module, "Identifier : 0x11\nModule voltage : nan V\n", 2, "format"),
    (parse_ethtool_module, "Identifier : 0x11\nLaser tx bias current (Channel 99) : 1.0 mA\n",
     2, "lane 99"),
    (parse_ethtool_module, "Identifier : 0x11\njust some words\n", 2, "name : value"),
    (parse_mlxlink_module, "Operational Info\n----------------\nState : Active\n", 1,
     "Module Info"),
    (parse_mlxlink_module, "Module Info\n-----------\nVoltage [mV] : 3300 [lo..hi]\n", 3,
     "low..high"),
    (parse_mlxlink_module, "", 0, "empty"),
    (parse_onyx_optics, "", 0, "empty"),
    (parse_onyx_optics, "cable-type : Active cable\nch-1-rx-power : 0.8625 mW / -0.64 dB\n", 2,
     "power"),
    (parse_onyx_optics, "status : ok\n% Unrecognized command \"diagnostics\".\n", 2,
     "name : value"),
    (parse_onyx_optics, "error-status : N/A\n", 1, "not transceiver diagnostics"),
])
def test_errors(parse: Parser, text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse(text, "h", AT, "p1")
    assert err.value.line_no == line_no
    assert reason in err.value.reason


@pytest.mark.parametrize("folder", sorted(PARSERS))
def test_binary_garbage_is_a_parse_error(folder: str) -> None:
    with pytest.raises(ParseError) as err:
        PARSERS[folder](bytes(range(1, 256)).decode("latin-1") * 3, "h", AT, "p1")
    assert err.value.kind == KINDS[folder]


_LINES = {folder: [line for p in CASES if p.parent.name == folder
                   for line in p.read_text().split("\n")] for folder in PARSERS}
_FUZZ = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)


@pytest.mark.parametrize("folder", sorted(PARSERS))
@_FUZZ
@given(data=st.data())
def test_fuzz_only_parse_errors_and_sane_readings(folder: str, data: st.DataObject) -> None:
    text = data.draw(st.one_of(st.text(), st.lists(near_miss(_LINES[folder]),
                                                   max_size=40).map("\n".join)))
    error: ParseError | None = None
    found: list[OpticsReading] = []
    try:
        found = PARSERS[folder](text, "h", AT, "p1")
    except ParseError as exc:
        error = exc
    if error is not None:
        assert error.kind == KINDS[folder]
        assert 0 <= error.line_no <= text.count("\n") + 1
    for r in found:
        assert len(r.port_name) <= FIELD_MAX
        assert all(q in OPTICS_QUANTITIES for q in r.thresholds)
        for q in ("temperature_c", "vcc_v"):
            assert getattr(r, q) is None or plausible(q, getattr(r, q))
        for q, t in r.thresholds.items():
            assert all(v is None or plausible(q, v) for v in (
                t.low_alarm, t.low_warning, t.high_warning, t.high_alarm))
        for ln in r.lanes:
            assert 1 <= ln.lane <= 32
            for v in (ln.tx_bias_ma, ln.tx_power_dbm, ln.rx_power_dbm):
                assert v is None or math.isfinite(v)
            for q in ("tx_bias_ma", "tx_power_dbm", "rx_power_dbm"):
                assert getattr(ln, q) is None or plausible(q, getattr(ln, q))
            for v in (ln.tx_power_dbm, ln.rx_power_dbm):
                assert v is None or v >= NO_LIGHT_DBM or folder != "ethtool_module"


# --- plausibility (issue #21): what no module's 16-bit DDM word can say is left out, counted --

SR4 = FIXTURES / "ethtool_module" / "qsfp28_sr4_four_lanes_mw_and_dbm_tab_indent.txt"
HUGE = "1" + "0" * 308  # 1e308 as a tool that prints plain decimals would print it


def _replace(text: str, key: str, value: str) -> str:
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip().startswith(key)]
    assert len(hits) == 1, key
    lines[hits[0]] = lines[hits[0]].split(":", 1)[0] + ": " + value
    return "\n".join(lines)


def test_ethtool_values_no_module_can_report_are_left_out_and_counted() -> None:
    text = SR4.read_text()
    for key, value in [
            ("Module temperature  ", "-273000.00 degrees C / -459368.00 degrees F"),
            ("Module voltage  ", "-3.3000 V"),
            ("Laser tx bias current (Channel 1)", "-1000000.000 mA"),
            ("Transmit avg optical power (Channel 2)", f"{HUGE}.0000 mW / inf dBm"),
            ("Rcvr signal avg optical power(Channel 3)", "6.5535 mW / 8.16 dBm"),  # the most
            ("Laser bias current high alarm threshold", "9999.000 mA"),
            ("Module temperature high alarm threshold", f"{HUGE}.00 degrees C / 0 degrees F")]:
        text = _replace(text, key, value)
    r = _one(parse_ethtool_module, text)
    good = _one(parse_ethtool_module, SR4.read_text())
    assert (r.temperature_c, r.vcc_v) == (None, None)
    lanes = {ln.lane: ln for ln in r.lanes}
    assert lanes[1].tx_bias_ma is None and lanes[1].tx_power_dbm == good.lanes[0].tx_power_dbm
    assert lanes[2].tx_power_dbm is None and lanes[2].tx_bias_ma == 6.75
    assert lanes[3].rx_power_dbm == 8.165  # 6.5535 mW, the top of the scale, is a reading
    assert r.thresholds["tx_bias_ma"].high_alarm is None
    assert r.thresholds["tx_bias_ma"].low_alarm == good.thresholds["tx_bias_ma"].low_alarm
    assert r.thresholds["temperature_c"].high_alarm is None
    assert r.thresholds["rx_power_dbm"] == good.thresholds["rx_power_dbm"]
    assert sorted(r.issues) == sorted([
        "implausible temperature_c reading (outside -128..128 C), left out",
        "implausible vcc_v reading (outside 0..6.5535 V), left out",
        "implausible tx_bias_ma reading (outside 0..524.28 mA), left out",
        "implausible tx_power_dbm reading (outside -40..8.17 dBm), left out",
        "implausible tx_bias_ma threshold (outside 0..524.28 mA), left out",
        "implausible temperature_c threshold (outside -128..128 C), left out"])
    assert good.issues == ()


def test_mlxlink_and_switch_values_no_module_can_report_are_left_out() -> None:
    text = (MLXLINK.replace("Temperature [C]                    : 49 [-10..80]",
                            f"Temperature [C]                    : {HUGE} [-10..80]")
            .replace("3189.4 [3100..3500]", "-3300 [3100..3500]")
            .replace("9.210,0,9.054,9.142 [7..11]", "9.210,0,-5,9.142 [7..11]"))
    r = _one(parse_mlxlink_module, text, "mlx5_0/1")
    assert (r.temperature_c, r.vcc_v) == (None, None)
    assert [(ln.lane, ln.tx_bias_ma) for ln in r.lanes] == [(1, 9.21), (3, None), (4, 9.142)]
    assert len(r.issues) == 3
    nvue = (FIXTURES / "onyx_optics" / "nvue_flat_four_channels_mw_and_dbm_trailing_spaces.txt")
    switch = nvue.read_text().replace("42.56 degrees C / 108.61 degrees F", "500.00 degrees C")
    r = _one(parse_onyx_optics, switch, None)
    assert r.temperature_c is None and r.vcc_v == 3.2888
    assert r.issues == ("implausible temperature_c reading (outside -128..128 C), left out",)


def test_cut_text_fields_are_counted() -> None:
    text = ("Identifier                                : 0x11 (QSFP28)\n"
            "Vendor name                               : " + "A" * 100_000 + "\n"
            "Vendor PN                                 : " + "B" * 64 + "\n"
            "Vendor rev                                : " + "C" * 65 + "\n")
    r = _one(parse_ethtool_module, text, "x" * 1000)
    assert r.firmware == "C" * 63 + "…" and r.part_number == "B" * 64
    assert r.issues == (CUT, CUT, CUT)  # vendor name, revision (the firmware), port name
