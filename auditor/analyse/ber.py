"""Bit error ratios (issue #14): the bits a port carried, and the limit its symbol errors are
held to, by link speed, FEC mode, ASIC generation and media.

Bits carried. The data counters PortXmitData / PortRcvData count octets divided by 4 (32-bit
words): IBTA PortCounters and PortCountersExtended, as rdma-core states in
infiniband-diags/man/perfquery.8.in.rst at tag v64.0 ("components that represent Data (e.g.
PortXmitData and PortRcvData) indicate octets divided by 4") and as ibqueryerrors applies when it
prints them (infiniband-diags/ibdiag_common.c, conv_cnt_human_readable, `*val *= 4` for data
counters, v64.0). Where no data counter covers an interval, the bits are the link's width x
per-lane DATA rate x time. Data, not signalling, rate: (1) the data counters count payload, so
both ways give the same bits for a link that ran full; (2) NVIDIA's own PDR plugin, which ships
the field table below, normalised the table's BERs by 14/25/50/100 Gb/s a lane for
FDR/EDR/HDR/NDR times the width (Mellanox/ufm_sdk_3.0 at the commit below,
plugins/pdr_deterministic_plugin/ufm_sim_web_service/isolation_mgr.py, calc_single_rate), i.e.
the nominal data rate, not the 53.125 Gb/s a lane an HDR link signals.

Limits. NVIDIA's published field table, `Field_BER_Thresholds.csv` version V06, as UFM's PDR
plugin shipped it: Mellanox/ufm_sdk_3.0 commit 0eea373bb97b96f913b35c0692e508fc57aa5fbf
(2023-05-21), plugins/pdr_deterministic_plugin/build/config/Field_BER_Thresholds.csv (the last
version of the file: commit e04f549 of 2024-01-09 removed it from the plugin). Encoded below
as data: its "Error" level of the pre-FEC, post-FEC and symbol BER per (ASIC, speed, FEC
opcode, media) and the Warning level of the symbol BER; the other Warning/Normal levels and
its "FEC OPCODE vs MAD" column are left out. SymbolErrorCounter is held to the symbol-BER
columns, as the plugin held its symbol BER. The table covers EDR, HDR and NDR only: XDR gets
NDR's row (the nearest the table has, said in the evidence), SDR-FDR the IBTA 1e-12 link BER
objective the earlier per-hour rule came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class LaneRate:
    """One lane's rates at a link speed."""

    signalling_gbps: float  # one lane on the wire, as iblinkinfo prints it
    data_gbps: float  # after line coding (8b/10b, 64b/66b) and, HDR on, RS FEC + transcoding


# Signalling rates as libibmad prints them (rdma-core v64.0 libibmad/dump.c: 2.5, 5.0, 10.0,
# 14.0625, 25.78125, 53.125, 106.25, 212.5 Gbps; FDR10 is Mellanox's 10.3125). Data rates:
# SDR-QDR carry 8 bits in 10, FDR10-EDR 64 in 66; HDR-XDR are PAM4 lanes whose RS(544,514) FEC
# and 256b/257b transcoding leave 50, 100 and 200 Gb/s (53.125 x 514/544 x 256/257 = 50.0).
LANE_RATES: dict[str, LaneRate] = {
    "SDR": LaneRate(2.5, 2.0),
    "DDR": LaneRate(5.0, 4.0),
    "QDR": LaneRate(10.0, 8.0),
    "FDR10": LaneRate(10.3125, 10.0),
    "FDR": LaneRate(14.0625, 14.0625 * 64 / 66),
    "EDR": LaneRate(25.78125, 25.0),
    "HDR": LaneRate(53.125, 50.0),
    "NDR": LaneRate(106.25, 100.0),
    "XDR": LaneRate(212.5, 200.0),
}
WIDTHS = (1, 2, 4, 8, 12)
BITS_PER_DATA_WORD = 32  # PortXmitData / PortRcvData count 4-octet words
IBTA_BER = 1e-12

FIELD_TABLE_NAME = "NVIDIA Field_BER_Thresholds V06"


# The table's "FEC TYPE" names by its "FEC OPCODE" (what UFM reports as fec_mode_active).
FEC_NAMES: dict[int, str] = {
    14: "Ethernet_Consortium_LL_50G_RS_FEC_PLR",
    12: "KP4_Standard_RS_FEC_PLR",
    7: "KP4_Standard_RS_FEC",
    13: "LL_FEC_PLR",
    3: "STD_LL_RS",
    2: "STD_RS",
    0: "NO_FEC",
}


class FieldRow(NamedTuple):
    asic: str  # "7nm" (Quantum-2, ConnectX-7) or "16nm" (Quantum, ConnectX-6)
    speed: str
    fec_opcode: int
    media: str  # DACs, ACC, Active (optics), Active_DiD
    pre_fec: float  # "Error" level of each BER
    post_fec: float
    symbol: float
    symbol_warning: float  # its "Warning" level: half the Error level in every row of V06


FIELD_TABLE: tuple[FieldRow, ...] = tuple(FieldRow(*row) for row in (
    ("7nm", "NDR", 14, "DACs", 1e-06, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 14, "ACC", 1e-06, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 14, "Active", 1e-05, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 14, "Active_DiD", 1e-05, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 12, "DACs", 1e-06, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 12, "ACC", 1e-06, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 12, "Active", 1e-05, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 12, "Active_DiD", 1e-05, 1e-11, 1e-14, 5e-15),
    ("7nm", "NDR", 7, "DACs", 1e-07, 1e-13, 1e-13, 5e-14),
    ("7nm", "NDR", 7, "ACC", 1e-07, 1e-13, 1e-13, 5e-14),
    ("7nm", "NDR", 7, "Active", 1e-05, 1e-13, 1e-13, 5e-14),
    ("7nm", "NDR", 7, "Active_DiD", 1e-05, 1e-13, 1e-13, 5e-14),
    ("7nm", "HDR", 12, "DACs", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 12, "ACC", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 12, "Active", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 12, "Active_DiD", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 7, "DACs", 1e-07, 1e-13, 1e-13, 5e-14),
    ("7nm", "HDR", 7, "ACC", 1e-07, 1e-13, 1e-13, 5e-14),
    ("7nm", "HDR", 7, "Active", 1e-07, 1e-13, 1e-13, 5e-14),
    ("7nm", "HDR", 7, "Active_DiD", 1e-07, 1e-13, 1e-13, 5e-14),
    ("7nm", "HDR", 13, "DACs", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 13, "ACC", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 13, "Active", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "HDR", 13, "Active_DiD", 1e-07, 1e-13, 1e-14, 5e-15),
    ("7nm", "EDR", 3, "DACs", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 3, "ACC", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 3, "Active", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 3, "Active_DiD", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 2, "DACs", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 2, "ACC", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 2, "Active", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 2, "Active_DiD", 1e-12, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 0, "DACs", 1e-13, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 0, "ACC", 1e-13, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 0, "Active", 1e-13, 1e-13, 1e-13, 5e-14),
    ("7nm", "EDR", 0, "Active_DiD", 1e-13, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 12, "DACs", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 12, "ACC", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 12, "Active", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 12, "Active_DiD", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 7, "DACs", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 7, "ACC", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 7, "Active", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 7, "Active_DiD", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 13, "DACs", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 13, "ACC", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 13, "Active", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 13, "Active_DiD", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 3, "DACs", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 3, "ACC", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 3, "Active", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "HDR", 3, "Active_DiD", 1e-05, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 3, "DACs", 1e-12, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 3, "ACC", 1e-12, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 3, "Active", 1e-12, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 3, "Active_DiD", 1e-12, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 2, "DACs", 1e-09, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 2, "ACC", 1e-09, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 2, "Active", 1e-09, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 2, "Active_DiD", 1e-09, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 0, "DACs", 1e-13, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 0, "ACC", 1e-13, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 0, "Active", 1e-13, 1e-13, 1e-13, 5e-14),
    ("16nm", "EDR", 0, "Active_DiD", 1e-13, 1e-13, 1e-13, 5e-14),
))

# The FEC a link of each speed is taken to run when nothing says (`[ranking] ber_fec` does):
# RS(544,514) with NVIDIA's Physical Layer Retransmission (opcode 12) at HDR and NDR. NVIDIA's
# Quantum firmware release notes ("Changes and New Features History", 27.2000.x) add PLR in
# 27.2000.1886 and later remove it only from active cables longer than 30 m; that NDR links run
# it too is our assumption (both NDR PLR modes, 12 and 14, have the same limits). At EDR every
# row has the same symbol limit, so the choice does not move it.
DEFAULT_FEC: dict[str, int] = {"EDR": 3, "HDR": 12, "NDR": 12}

# Which ASIC generation a switch model is: Quantum-2 (QM97xx) is the table's 7 nm, Quantum
# (QM87xx) its 16 nm. A port of unknown make (an HCA: its description names no model) is taken
# to be of its speed's generation: NDR parts are 7 nm, HDR and EDR parts 16 nm.
_MODEL_ASIC = ((re.compile(r"^M?QM9\d", re.IGNORECASE), "7nm"),
               (re.compile(r"^M?QM8\d", re.IGNORECASE), "16nm"))
_SPEED_ASIC = {"NDR": "7nm", "HDR": "16nm", "EDR": "16nm"}


def lanes(width: str | None) -> int | None:
    """4 for "4X" (or "4x"); None for what is not an IB width."""
    if not width:
        return None
    text = width.strip().upper().removesuffix("X")
    n = int(text) if text.isdigit() else 0
    return n if n in WIDTHS else None


def link_gbps(width: str | None, speed: str | None) -> float | None:
    """The link's data rate in Gb/s (4X HDR: 200), or None when width or speed is unknown."""
    n, rate = lanes(width), LANE_RATES.get((speed or "").upper())
    return n * rate.data_gbps if n and rate else None


def line_bits(width: str | None, speed: str | None, seconds: float) -> float | None:
    """Bits a link of this width and speed carries in `seconds` at its data rate."""
    gbps = link_gbps(width, speed)
    return gbps * 1e9 * seconds if gbps is not None else None


def data_bits(words: int) -> int:
    """Bits a PortXmitData / PortRcvData increase stands for."""
    return words * BITS_PER_DATA_WORD


def asic_of(model: str | None, speed: str) -> str:
    for pattern, asic in _MODEL_ASIC:
        if model and pattern.match(model):
            return asic
    return _SPEED_ASIC.get(speed, "7nm")


def media_of(cable_type: str | None) -> str | None:
    """The table's media for a transceiver's cable/module type (Onyx: "Passive copper cable",
    "Active optical cable", "Optical module (separated)"; a cabling plan: DAC, ACC, AOC)."""
    text = (cable_type or "").strip().lower()
    if not text:
        return None
    if "optic" in text or "fib" in text or text in ("aoc", "transceiver"):
        return "Active"
    if "active" in text or text in ("acc", "aec"):
        return "ACC"
    if "passive" in text or "copper" in text or text == "dac":
        return "DACs"
    return None


@dataclass(frozen=True, slots=True)
class Limit:
    """The bit error rate a port is held to, and where the figure comes from."""

    ber: float  # the table's Error level
    warning: float  # its Warning level; half the limit where the table has no row
    kind: str  # "field" (NVIDIA's table), "configured" ([ranking] ber_limits), "IBTA"
    source: str  # where the number comes from, for the evidence line


def symbol_limit(speed: str | None, *, model: str | None = None, media: str | None = None,
                 fec: int | None = None, overrides: dict[str, float] | None = None) -> Limit:
    """The symbol-BER limit of a port at `speed` (its node's `model` when known, the link's
    `media` from `media_of`, the FEC opcode when the site set it), and where it comes from.
    `overrides` ([ranking] ber_limits) replace the table per speed."""
    speed = (speed or "").upper()
    if overrides and speed in overrides:
        return Limit(overrides[speed], overrides[speed] / 2, "configured",
                     f"[ranking] ber_limits.{speed}")
    table_speed = "NDR" if speed == "XDR" else speed
    rows = [r for r in FIELD_TABLE if r.speed == table_speed]
    if not rows:
        return Limit(IBTA_BER, IBTA_BER / 2, "IBTA", f"the IBTA link BER objective: "
                     f"{FIELD_TABLE_NAME} has no {speed or 'unknown-speed'} row")
    asic = asic_of(model, table_speed)
    rows = [r for r in rows if r.asic == asic] or rows
    wanted = fec if fec is not None else DEFAULT_FEC[table_speed]
    picked = [r for r in rows if r.fec_opcode == wanted]
    how = "set in [ranking] ber_fec" if fec is not None else "assumed"
    if not picked:  # a configured FEC the table has no row for at this ASIC
        picked = [r for r in rows if r.fec_opcode == DEFAULT_FEC[table_speed]]
        how = f"assumed, the table has no FEC {fec} row for {table_speed} {asic}"
    by_media = [r for r in picked if r.media == media]
    # Unknown media: the strictest row (in V06 the symbol limits do not differ by media).
    row = min(by_media or picked, key=lambda r: r.symbol)
    nearest = "" if speed == table_speed else f", {speed} read as NDR (the table has none)"
    return Limit(row.symbol, row.symbol_warning, "field",
                 f"{FIELD_TABLE_NAME}: {row.speed} {row.asic}, FEC {FEC_NAMES[row.fec_opcode]} "
                 f"({row.fec_opcode}) {how}, {row.media if by_media else 'media unknown'}"
                 f"{nearest}")


@dataclass(frozen=True, slots=True)
class Interval:
    """One counter interval of a port: its symbol errors and the bits it carried."""

    seconds: float
    errors: int
    bits: float
    bits_from: str  # "PortRcvData", "the peer's PortXmitData", "4X HDR at 50 Gb/s a lane"


@dataclass(frozen=True, slots=True)
class PortBer:
    """A port's symbol BER over the window and in its worst interval, with what the limit
    depends on (speed, its node's model, the link's media)."""

    speed: str | None
    width: str | None
    model: str | None
    media: str | None
    errors: int
    seconds: float
    ber: float  # all errors over all bits of the window
    worst_ber: float  # the interval with the highest BER
    worst_seconds: float
    intervals: int
    bits_from: tuple[str, ...]
    trend: tuple[float, ...] = ()  # the BER of each interval, oldest first
    # Set when the port's PHY reported the BER itself (ibdiagnet --get_phy_info, issue #24):
    # what it reported, for the evidence ("ibdiagnet PHY_DB16 at 06:00: raw 1.2e-08, ...").
    reported: str = ""

    @property
    def climbing(self) -> int:
        """How many times in a row the BER rose up to the newest interval (2: the last three
        intervals each higher than the one before)."""
        n = 0
        while n + 1 < len(self.trend) and self.trend[-1 - n] > self.trend[-2 - n]:
            n += 1
        return n


def measure(intervals: list[Interval], *, speed: str | None, width: str | None,
            model: str | None = None, media: str | None = None) -> PortBer | None:
    """The BER of a port over its intervals, given oldest first (None when no interval carried
    a bit)."""
    carried = [i for i in intervals if i.bits > 0]
    if not carried:
        return None
    worst = max(carried, key=lambda i: i.errors / i.bits)
    return PortBer(speed, width, model, media, errors=sum(i.errors for i in carried),
                   seconds=sum(i.seconds for i in carried),
                   ber=sum(i.errors for i in carried) / sum(i.bits for i in carried),
                   worst_ber=worst.errors / worst.bits, worst_seconds=worst.seconds,
                   intervals=len(carried),
                   bits_from=tuple(dict.fromkeys(i.bits_from for i in carried)),
                   trend=tuple(i.errors / i.bits for i in carried))


def self_reported(symbol_ber: float, *, speed: str | None, width: str | None,
                  model: str | None, media: str | None, said: str) -> PortBer:
    """A port's symbol BER as its PHY reported it (not computed from counters): one reading,
    judged by the same limit as a measured one."""
    return PortBer(speed, width, model, media, errors=0, seconds=0.0, ber=symbol_ber,
                   worst_ber=symbol_ber, worst_seconds=0.0, intervals=1,
                   bits_from=("the port's own report",), reported=said)


def nominal(width: str | None, speed: str | None) -> str:
    """How line bits were counted, for the evidence: "4X HDR at 50 Gb/s a lane"."""
    rate = LANE_RATES.get((speed or "").upper())
    return f"{width} {speed} at {rate.data_gbps:g} Gb/s a lane" if rate else f"{width} {speed}"
