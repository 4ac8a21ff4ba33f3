"""Symbol errors judged as a bit error ratio (issue #14): bits from the data counters or from the
link's width x data rate x time, limits from NVIDIA's field table by speed, FEC, ASIC and media,
overrides from `[ranking]`, and the per-speed effect through `auditor suspects`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.analyse import ber
from auditor.cli import app
from auditor.config import load

HOUR = 3600.0


def _ber(errors: int, width: str, speed: str, seconds: float = HOUR) -> float:
    bits = ber.line_bits(width, speed, seconds)
    assert bits is not None
    measured = ber.measure([ber.Interval(seconds, errors, bits, ber.nominal(width, speed))],
                           speed=speed, width=width)
    assert measured is not None
    return measured.worst_ber


# -- bits ---------------------------------------------------------------------------------------

def test_link_data_rates_at_edr_hdr_and_ndr() -> None:
    assert ber.link_gbps("4X", "EDR") == 100.0
    assert ber.link_gbps("4x", "HDR") == 200.0
    assert ber.link_gbps("4X", "NDR") == 400.0
    assert ber.link_gbps("2X", "NDR") == 200.0  # a split port
    assert ber.link_gbps("1X", "HDR") == 50.0  # a link that came up narrow
    # 8b/10b and 64b/66b: the data rate, not what the lane signals
    assert ber.link_gbps("4X", "QDR") == 32.0
    assert ber.link_gbps("4X", "FDR") == pytest.approx(4 * 14.0625 * 64 / 66)
    assert ber.link_gbps("4X", None) is None and ber.link_gbps("3X", "HDR") is None


def test_data_rates_are_the_signalling_rates_less_line_coding_and_fec() -> None:
    rates = ber.LANE_RATES
    for speed in ("SDR", "DDR", "QDR"):  # 8b/10b
        assert rates[speed].data_gbps == pytest.approx(rates[speed].signalling_gbps * 8 / 10)
    for speed in ("FDR10", "FDR", "EDR"):  # 64b/66b
        assert rates[speed].data_gbps == pytest.approx(rates[speed].signalling_gbps * 64 / 66)
    for speed in ("HDR", "NDR", "XDR"):  # RS(544,514) FEC and 256b/257b transcoding
        assert rates[speed].data_gbps == pytest.approx(
            rates[speed].signalling_gbps * 514 / 544 * 256 / 257, rel=1e-3)


def test_the_same_error_count_is_a_lower_ber_on_a_faster_link() -> None:
    # 720 errors in an hour: 1e-12 at 4X HDR (7.2e14 bits), twice that at EDR, half at NDR.
    assert _ber(720, "4X", "EDR") == pytest.approx(2e-12)
    assert _ber(720, "4X", "HDR") == pytest.approx(1e-12)
    assert _ber(720, "4X", "NDR") == pytest.approx(5e-13)


def test_bits_from_the_data_counters_are_four_octet_words() -> None:
    # A 4X HDR port that received a quarter of what the line could carry in an hour.
    words = int(200e9 * HOUR / 4 / 32)
    assert ber.data_bits(words) == words * 32
    carried = ber.Interval(HOUR, 720, ber.data_bits(words), "PortRcvData")
    measured = ber.measure([carried], speed="HDR", width="4X")
    assert measured is not None
    assert measured.worst_ber == pytest.approx(4e-12)  # 4x the line's 1e-12
    assert measured.bits_from == ("PortRcvData",)


def test_the_worst_interval_is_judged_and_the_window_shown() -> None:
    line = ber.line_bits("4X", "HDR", 4 * HOUR)
    assert line is not None
    quiet = ber.Interval(4 * HOUR, 0, line, "line")
    bad = ber.Interval(4 * HOUR, 576, line, "line")  # 2e-13 in its 4 h
    idle = ber.Interval(4 * HOUR, 3, 0.0, "line")  # no bits known: left out
    measured = ber.measure([quiet, quiet, bad, idle], speed="HDR", width="4X")
    assert measured is not None
    assert measured.worst_ber == pytest.approx(2e-13)
    assert measured.ber == pytest.approx(2e-13 / 3)
    assert (measured.intervals, measured.errors, measured.seconds) == (3, 576, 12 * HOUR)
    assert ber.measure([idle], speed="HDR", width="4X") is None


def test_a_climbing_rate_is_counted_back_from_the_newest_interval() -> None:
    line = ber.line_bits("4X", "HDR", HOUR)
    assert line is not None

    def climb(*errors: int) -> int:
        measured = ber.measure([ber.Interval(HOUR, e, line, "line") for e in errors],
                               speed="HDR", width="4X")
        assert measured is not None
        return measured.climbing

    assert climb(10, 20, 40, 80) == 3
    assert climb(50, 10, 20, 40) == 2  # an early burst does not break the newest climb
    assert climb(10, 40, 20) == 0  # fell in the newest interval
    assert climb(30, 30, 30) == 0 and climb(5) == 0


# -- limits -------------------------------------------------------------------------------------

def test_the_field_table_is_the_published_v06() -> None:
    assert len(ber.FIELD_TABLE) == 64
    keys = [(r.asic, r.speed, r.fec_opcode, r.media) for r in ber.FIELD_TABLE]
    assert len(set(keys)) == len(keys)
    assert {r.speed for r in ber.FIELD_TABLE} == {"EDR", "HDR", "NDR"}
    assert all(r.symbol_warning == pytest.approx(r.symbol / 2) for r in ber.FIELD_TABLE)
    # Rows quoted in issue #14: NDR with PLR, pre-FEC 1e-6 on DAC/ACC and 1e-5 on active
    # optics, post-FEC 1e-11, symbol 1e-14; HDR 7 nm pre-FEC 1e-7, post-FEC 1e-13.
    ndr = {r.media: r for r in ber.FIELD_TABLE if (r.speed, r.fec_opcode) == ("NDR", 14)}
    assert (ndr["DACs"].pre_fec, ndr["ACC"].pre_fec, ndr["Active"].pre_fec) == (1e-6, 1e-6, 1e-5)
    assert {(r.post_fec, r.symbol) for r in ndr.values()} == {(1e-11, 1e-14)}
    hdr7 = [r for r in ber.FIELD_TABLE if (r.asic, r.speed) == ("7nm", "HDR")]
    assert {(r.pre_fec, r.post_fec) for r in hdr7} == {(1e-7, 1e-13)}
    for speed, opcode in ber.DEFAULT_FEC.items():
        assert any((r.speed, r.fec_opcode) == (speed, opcode) for r in ber.FIELD_TABLE)


def test_limits_per_speed_at_edr_hdr_and_ndr() -> None:
    edr, hdr, ndr = (ber.symbol_limit(s) for s in ("EDR", "HDR", "NDR"))
    assert (edr.ber, hdr.ber, ndr.ber) == (1e-13, 1e-13, 1e-14)
    assert (edr.warning, hdr.warning, ndr.warning) == (5e-14, 5e-14, 5e-15)
    assert all(lim.kind == "field" for lim in (edr, hdr, ndr))
    assert "NDR 7nm, FEC KP4_Standard_RS_FEC_PLR (12) assumed, media unknown" in ndr.source
    assert "HDR 16nm" in hdr.source and ber.FIELD_TABLE_NAME in hdr.source
    # 50 symbol errors an hour: over the limit at EDR, at the warning level at HDR.
    assert _ber(50, "4X", "EDR") > edr.ber
    assert hdr.warning < _ber(50, "4X", "HDR") < hdr.ber
    # 20 an hour: over NDR's limit, under HDR's warning level (the old rule: 120 an hour).
    assert _ber(20, "4X", "NDR") > ndr.ber and _ber(20, "4X", "HDR") < hdr.warning


def test_limits_by_fec_asic_and_media() -> None:
    # NDR without PLR (plain KP4 RS-FEC) is held to 1e-13, with either PLR mode to 1e-14.
    assert ber.symbol_limit("NDR", fec=7).ber == 1e-13
    assert ber.symbol_limit("NDR", fec=14).ber == 1e-14
    assert "set in [ranking] ber_fec" in ber.symbol_limit("NDR", fec=14).source
    # HDR on a Quantum-2 switch port (7 nm) with PLR: 1e-14; on Quantum (16 nm): 1e-13.
    assert ber.symbol_limit("HDR", model="MQM9700").ber == 1e-14
    assert ber.symbol_limit("HDR", model="MQM8700").ber == 1e-13
    # A FEC the table has no row for at that ASIC falls back to the default, and says so.
    odd = ber.symbol_limit("HDR", model="MQM9790", fec=3)
    assert odd.ber == 1e-14 and "no FEC 3 row for HDR 7nm" in odd.source
    assert ber.symbol_limit("NDR", media="Active").source.endswith(", Active")
    assert ber.symbol_limit("NDR", media="DACs").source.endswith(", DACs")
    assert ber.media_of("Passive copper cable") == ber.media_of("DAC") == "DACs"
    assert ber.media_of("Passive copper, unequalized") == "DACs"
    assert ber.media_of("Active copper cable") == ber.media_of("ACC") == "ACC"
    assert ber.media_of("Optical module (separated)") == "Active"
    assert ber.media_of("Active optical cable") == ber.media_of("AOC") == "Active"
    assert ber.media_of(None) is None and ber.media_of("mystery") is None


def test_speeds_the_table_lacks() -> None:
    xdr = ber.symbol_limit("XDR")
    assert xdr.ber == 1e-14 and "XDR read as NDR" in xdr.source
    qdr = ber.symbol_limit("QDR")
    assert (qdr.ber, qdr.kind) == (1e-12, "IBTA") and "no QDR row" in qdr.source
    assert ber.symbol_limit(None).kind == "IBTA"


def test_overrides_from_the_config(tmp_path: Path) -> None:
    toml = tmp_path / "auditor.toml"
    toml.write_text("[ranking]\nber_limits = { hdr = 5e-13, NDR = 2e-14 }\nber_fec = { NDR = 7 }\n")
    ranking = load(toml, None).ranking
    assert ranking.ber_limits == {"HDR": 5e-13, "NDR": 2e-14} and ranking.ber_fec == {"NDR": 7}
    hdr = ber.symbol_limit("HDR", overrides=ranking.ber_limits)
    assert (hdr.ber, hdr.warning, hdr.kind) == (5e-13, 2.5e-13, "configured")
    assert hdr.source == "[ranking] ber_limits.HDR"
    assert ber.symbol_limit("EDR", overrides=ranking.ber_limits).ber == 1e-13  # not overridden


def test_the_config_check_knows_the_tables_speeds_and_fec_opcodes() -> None:
    from auditor.config_schema import FEC_OPCODES, IB_SPEEDS

    assert tuple(ber.LANE_RATES) == IB_SPEEDS
    assert set(FEC_OPCODES) == {r.fec_opcode for r in ber.FIELD_TABLE} == set(ber.FEC_NAMES)


# -- through `auditor suspects` -----------------------------------------------------------------

_TOPOLOGY = """\
vendid=0x2c9
devid=0xd2f0
sysimgguid=0xb8599f0300000001
switchguid=0xb8599f0300000001(b8599f0300000001)
Switch\t3 "S-b8599f0300000001"\t\t# "MF0;hdr-sw:MQM8700/U1" enhanced port 0 lid 1 lmc 0
[1]\t"H-1070fd0300000010"[1](1070fd0300000011) \t\t# "node-a mlx5_0" lid 3 4xHDR
[2]\t"H-1070fd0300000020"[1](1070fd0300000021) \t\t# "node-b mlx5_0" lid 4 4xHDR
[3]\t"S-b8599f0300000002"[3]\t\t# "MF0;ndr-sw:MQM9700/U1" lid 2 4xHDR

vendid=0x2c9
devid=0xd2f2
sysimgguid=0xb8599f0300000002
switchguid=0xb8599f0300000002(b8599f0300000002)
Switch\t3 "S-b8599f0300000002"\t\t# "MF0;ndr-sw:MQM9700/U1" enhanced port 0 lid 2 lmc 0
[1]\t"H-1070fd0300000030"[1](1070fd0300000031) \t\t# "node-c mlx5_0" lid 5 4xNDR
[3]\t"S-b8599f0300000001"[3]\t\t# "MF0;hdr-sw:MQM8700/U1" lid 1 4xHDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x1070fd0300000010
caguid=0x1070fd0300000010
Ca\t1 "H-1070fd0300000010"\t\t# "node-a mlx5_0"
[1](1070fd0300000011) \t"S-b8599f0300000001"[1]\t\t# lid 3 lmc 0 "MF0;hdr-sw:MQM8700/U1" lid 1 4xHDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x1070fd0300000020
caguid=0x1070fd0300000020
Ca\t1 "H-1070fd0300000020"\t\t# "node-b mlx5_0"
[1](1070fd0300000021) \t"S-b8599f0300000001"[2]\t\t# lid 4 lmc 0 "MF0;hdr-sw:MQM8700/U1" lid 1 4xHDR

vendid=0x2c9
devid=0x1021
sysimgguid=0x1070fd0300000030
caguid=0x1070fd0300000030
Ca\t1 "H-1070fd0300000030"\t\t# "node-c mlx5_0"
[1](1070fd0300000031) \t"S-b8599f0300000002"[1]\t\t# lid 5 lmc 0 "MF0;ndr-sw:MQM9700/U1" lid 2 4xNDR
"""

# 120 new symbol errors in 6 h (20 an hour) on three switch ports: hdr-sw 1 (4X HDR, nothing
# says what it carried), hdr-sw 2 (4X HDR, PortRcvData: a quarter of what the line carries) and
# ndr-sw 1 (4X NDR).
_QUARTER = int(200e9 * 6 * HOUR / 4 / 32)


def _errors(symbols: int, received: int) -> str:
    return (
        'Errors for 0xb8599f0300000001 "MF0;hdr-sw:MQM8700/U1"\n'
        f"   GUID 0xb8599f0300000001 port 1: [SymbolErrorCounter == {symbols}]\n"
        f"   GUID 0xb8599f0300000001 port 2: [SymbolErrorCounter == {symbols}] "
        f"[PortRcvData == {received} (1.0GB)]\n"
        'Errors for 0xb8599f0300000002 "MF0;ndr-sw:MQM9700/U1"\n'
        f"   GUID 0xb8599f0300000002 port 1: [SymbolErrorCounter == {symbols}]\n")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    runner = CliRunner()
    path = tmp_path / "a.duckdb"
    topo, before, after = (tmp_path / n for n in ("topo.txt", "iqe1.txt", "iqe2.txt"))
    topo.write_text(_TOPOLOGY)
    before.write_text(_errors(5, 1000))
    after.write_text(_errors(125, 1000 + _QUARTER))
    for at, f in (("05:00", topo), ("06:00", before), ("12:00", after)):
        res = runner.invoke(app, ["--db", str(path), "ingest", "--at", f"2026-11-29T{at}:00Z",
                                  str(f)])
        assert res.exit_code == 0, res.output
    return path


def _suspects(db: Path, *config: str) -> dict[tuple[str, ...], dict]:
    args = ["--db", str(db)]
    if config:
        toml = db.parent / "auditor.toml"
        toml.write_text("\n".join(config) + "\n")
        args += ["--config", str(toml)]
    res = CliRunner().invoke(app, [*args, "suspects", "--since", "24h", "--until",
                                   "2026-11-29T13:00:00Z", "--format", "json"])
    assert res.exit_code == 0, res.output
    return {tuple(sorted(e["name"] for e in s["ends"])): s
            for s in json.loads(res.stdout)["suspects"]}


def test_the_same_error_count_crosses_the_limit_at_ndr_and_not_at_hdr(db: Path) -> None:
    found = _suspects(db)
    # 20 errors an hour: 2.8e-14 of a 4X HDR line (warning level 5e-14): not a suspect.
    assert ("hdr-sw", "node-a") not in found
    # At 4X NDR the same count is 1.4e-14, over the 1e-14 of NDR with PLR FEC.
    ndr = found[("ndr-sw", "node-c")]
    assert ndr["component"] == "transceiver"  # errors at one end only, no flap
    line = ndr["evidence"][0]
    assert line.startswith("ndr-sw port 1: symbol BER 1.4e-14 over 6.0 h at 4X NDR")
    assert "above the field limit 1e-14" in line
    assert "(NVIDIA Field_BER_Thresholds V06: NDR 7nm, FEC KP4_Standard_RS_FEC_PLR (12) " \
           "assumed, media unknown)" in line
    assert "120 symbol errors" in line
    # The HDR port whose PortRcvData says it carried a quarter of its line: 1.1e-13, over.
    carried = found[("hdr-sw", "node-b")]["evidence"][0]
    assert "symbol BER 1.1e-13 over 6.0 h at 4X HDR (bits: PortRcvData)" in carried
    assert "above the field limit 1e-13 (NVIDIA Field_BER_Thresholds V06: HDR 16nm" in carried


def test_a_configured_limit_replaces_the_table(db: Path) -> None:
    found = _suspects(db, "[ranking]", "ber_limits = { HDR = 2e-14, NDR = 1e-13 }")
    assert ("ndr-sw", "node-c") not in found
    line = found[("hdr-sw", "node-a")]["evidence"][0]
    assert "symbol BER 2.8e-14 over 6.0 h at 4X HDR (bits: 4X HDR at 50 Gb/s a lane)" in line
    assert "above the configured limit 2e-14 ([ranking] ber_limits.HDR)" in line
