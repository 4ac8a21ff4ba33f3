"""Small helpers shared by the parser modules (GUIDs, IBTA width and speed names, lines)."""

from __future__ import annotations

# infiniband-diags prints GUIDs with "%" PRIx64 in some places, so leading zeros may be missing.
GUID_HEX = r"[0-9a-fA-F]{1,16}"

WIDTHS: dict[str, str] = {
    "1x": "1X",
    "2x": "2X",
    "4x": "4X",
    "8x": "8X",
    "12x": "12X",
    "1X": "1X",
    "2X": "2X",
    "4X": "4X",
    "8X": "8X",
    "12X": "12X",
}

SPEEDS: frozenset[str] = frozenset(
    {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}
)

# iblinkinfo prints the per-lane rate; FDR10 shows as "10.0 Gbps (FDR10)" (Mellanox extension),
# and some firmware/tool versions print its real lane rate 10.3125 instead.
LANE_SPEEDS: dict[str, str] = {
    "2.5 Gbps": "SDR",
    "5.0 Gbps": "DDR",
    "10.0 Gbps": "QDR",
    "10.0 Gbps (FDR10)": "FDR10",
    "10.3125 Gbps": "FDR10",
    "14.0625 Gbps": "FDR",
    "25.78125 Gbps": "EDR",
    "53.125 Gbps": "HDR",
    "106.25 Gbps": "NDR",
    "212.5 Gbps": "XDR",
}


def norm_guid(hex_digits: str) -> str:
    """`b8599f0300AA01` -> `0x00b8599f0300aa01` (caller guarantees 1-16 hex digits)."""
    return "0x" + hex_digits.lower().rjust(16, "0")


def split_lines(text: str) -> list[str]:
    """Split on newlines only, so line numbers match what `nl` or an editor shows."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text.split("\n")
