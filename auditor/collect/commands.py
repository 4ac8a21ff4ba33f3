"""The allowlist of fabric commands the auditor may run, and the flags each may take.

Everything here only reads. Counter resets (perfquery's reset-after-read flag, ibqueryerrors'
clear flags) and port changes (`ibportstate`) are not on the list and never will be: the auditor
must not write to the fabric, and a reset would also destroy the counter history other tools
rely on.

Transceiver diagnostics (issue #14) are read with two tools that can also write: mlxlink
toggles, reconfigures and resets ports and clears counters; ethtool writes module EEPROMs and
port settings. Of each only one read form passes, `mlxlink -d <dev> [-p <port>] -m` and
`ethtool -m <if>`, with plain device and interface names (nothing starting with "-", no path,
no shell character): every other flag is refused.
"""

from __future__ import annotations

import re

from auditor.errors import ConfigError

# Flags that take no value, per tool (infiniband-diags, rdma-core 44).
_FLAGS: dict[str, frozenset[str]] = {
    "ibnetdiscover": frozenset({"-p", "--ports", "-l", "--list", "-s", "--show", "-g", "--grouping",
                                "-H", "--Hca_list", "-S", "--Switch_list", "-R", "--Router_list"}),
    "iblinkinfo": frozenset({"--line", "-l", "--switches-only", "--cas-only", "-d", "--down",
                             "-p", "--print-capabilities"}),
    "ibqueryerrors": frozenset({"--skip-sl", "-r", "--report-port", "--data", "-c",
                                "--suppress-common", "-s", "--switch", "--ca", "--router",
                                "--details"}),
    "perfquery": frozenset({"-x", "--extended", "-X", "--xmtsl", "-S", "--rcvsl", "-a",
                            "--all_ports", "-l", "--loop_ports"}),
    # The forwarding tables (issue #23): dump_lfts (dump_lfts.sh on RHEL) runs dump_fts, which
    # scans the fabric and reads each switch's LFT blocks with SubnGet only (linux-rdma/
    # rdma-core@v44.0 infiniband-diags/scripts/dump_lfts.sh.in:8, dump_fts.c:344); -a prints
    # the no-route entries too, -n leaves out the destinations (dump_fts.c:424-430). No
    # address or LID range: the sweep dumps every switch whole.
    **dict.fromkeys(("dump_lfts", "dump_lfts.sh", "dump_fts"),
                    frozenset({"-a", "--all", "-n", "--no_dests"})),
    # Slurm accounting, read only: the allocations of every user with their node lists.
    "sacct": frozenset({"-P", "--parsable2", "-a", "--allusers", "-X", "--allocations", "-D",
                        "--duplicates", "-n", "--noheader"}),
}
# sacct options that take a value, written --opt=value.
_SACCT_VALUED = ("--starttime=", "--endtime=", "--format=", "--partition=", "--state=",
                 "--clusters=", "-S", "-E")
# Flags that take one value.
_VALUED = frozenset({"-C", "--Ca", "-P", "--Port", "-t", "--timeout", "--node-name-map"})
# ibnetdiscover's -R lists routers; every other tool's -R resets counters.
_FORBIDDEN = {
    "perfquery": frozenset({"-R", "--Reset_after_read", "-r", "--reset_after_read"}),
    "ibqueryerrors": frozenset({"-k", "-K", "--clear-errors", "--clear-counts"}),
    "iblinkinfo": frozenset({"-R"}),
}
# Reads, but of what the auditor does not parse (multicast tables).
_UNREAD = {tool: frozenset({"-M", "--Multicast"}) for tool in ("dump_lfts", "dump_lfts.sh",
                                                              "dump_fts")}


# mlxlink's writes, named so the refusal says why (anything else unlisted is refused too).
_MLXLINK_WRITES = frozenset({"-a", "--port_state", "--speeds", "--fec", "--fec_speed", "--pc",
                             "--clear_counters", "--serdes_tx", "--prbs", "--loopback", "--write",
                             "--cable", "--link_mode_force", "--set_amber", "--tx_policy",
                             "--error_injection", "--psi", "--mngr"})
# ethtool's writes (-E writes the EEPROM, -s/-K/-A/-G/-L/-C change the port, -r renegotiates).
_ETHTOOL_WRITES = frozenset({"-E", "--change-eeprom", "-s", "--change", "-K", "--features",
                             "-A", "--pause", "-G", "--set-ring", "-L", "--set-channels", "-C",
                             "--coalesce", "-r", "--negotiate", "-p", "--identify", "-f",
                             "--flash", "-t", "--test", "--reset"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,31}", re.ASCII)  # fullmatch only

# ibdiagnet (issue #24, `[sweep] tool = "ibdiagnet"`), checked against NVIDIA's IBUtils2 manual
# (docs.nvidia.com/networking, "IBUtils2 Utility Documentation" v2.23.0 and v2.24.0, pages
# "Basic Commands", "Port Counters", "Phy Diagnostic (Plugin)", "Cable Diagnostic"; "ibdiagnet
# User Manual" v2.8.0 "PHY Diagnostics"). Its default run only queries: the port counters are
# "collected by default" (Port Counters) and every clearing is an option of its own, named
# below so the refusal says why: `--pc` resets the fabric's PortCounters (the v2.8 PHY page's
# note on --reset_phy_info: "use this option with --pc, as both options have cross counters"),
# `--scr` "Resets all the NVIDIA Diagnostic counters", `--reset_phy_info` "Query and clear all
# ports phy information", `--reset_p_info` the same for HCA PCI information,
# `--clear_congestion_counters` "Displays Congestion Counters and clear them", and `--ber_test`
# runs a BER test (Basic Commands; SwitchX/ConnectX-3/4 only, "use --get_phy_info for BER
# validation" on later devices). Only the flags below pass, a value after those that take one;
# everything else (the SHARP am_key, routing, config files, ...) is refused.
_IBDIAGNET_WRITES = frozenset({"--pc", "--scr", "--reset_phy_info", "--reset_p_info",
                               "--clear_congestion_counters", "--ber_test"})
# reads that add tables to the db_csv: CABLE_INFO, PHY_DB*, per-lane PM, ...
_IBDIAGNET_FLAGS = frozenset({"--get_cable_info", "--cable_info_disconnected", "--get_phy_info",
                              "--pm_per_lane", "--per_slvl_cntrs", "--sc", "--discovery_only"})
# flags that take a value, and the values they may take
_IBDIAGNET_VALUED: dict[str, re.Pattern[str]] = {
    "-o": re.compile(r"[A-Za-z0-9_./+-]{1,4096}", re.ASCII),
    "--output_path": re.compile(r"[A-Za-z0-9_./+-]{1,4096}", re.ASCII),
    "-i": _NAME, "--device": _NAME,
    "-p": re.compile(r"\d{1,3}"), "--port": re.compile(r"\d{1,3}"),
    "--pm_pause_time": re.compile(r"\d{1,5}"),
    "--extended_speeds": re.compile(r"sw|all"),
    "--back_compat_db": re.compile(r"\d{1,2}(?:\.\d{1,2})?"),
    "--screen_num_errs": re.compile(r"\d{1,6}"),
    "--skip": re.compile(r"[a-z_]{1,40}(?:,[a-z_]{1,40}){0,20}"),
    "--disable_output": re.compile(r"[a-z_:]{1,60}(?:,[a-z_:]{1,60}){0,20}"),
    "--enable_output": re.compile(r"[a-z_:]{1,60}(?:,[a-z_:]{1,60}){0,20}"),
}


def _check_ibdiagnet(args: list[str]) -> None:
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in _IBDIAGNET_WRITES:
            raise ConfigError(f"ibdiagnet {arg}: would write to the fabric (clears counters "
                              "or runs a test); refused")
        if arg in _IBDIAGNET_FLAGS:
            continue
        pattern = _IBDIAGNET_VALUED.get(arg)
        if pattern is None:
            raise ConfigError(f"ibdiagnet {arg[:40]}: flag not on the read-only allowlist")
        if not rest or rest[0].startswith("-") or not pattern.fullmatch(rest[0]) \
                or ".." in rest[0].split("/"):
            raise ConfigError(f"ibdiagnet {arg} {(rest[0] if rest else '')[:40]}: not a value "
                              "the allowlist takes")
        rest.pop(0)


def _check_optics(tool: str, args: list[str]) -> None:
    """The one read form of mlxlink and ethtool, or ConfigError."""
    writes = _MLXLINK_WRITES if tool == "mlxlink" else _ETHTOOL_WRITES
    for arg in args:
        if arg in writes:
            raise ConfigError(f"{tool} {arg}: would write to the fabric; refused")
    if tool == "ethtool":
        if len(args) == 2 and args[0] in ("-m", "--module-info") and _NAME.fullmatch(args[1]):
            return
        raise ConfigError(f"ethtool {' '.join(args)[:80]}: only `ethtool -m <interface>` is on "
                          "the read-only allowlist")
    rest, device, show = list(args), None, False
    while rest:
        arg = rest.pop(0)
        if arg in ("-d", "--device", "-p", "--port") and rest and _NAME.fullmatch(rest[0]):
            value = rest.pop(0)
            if arg in ("-d", "--device"):
                device = value
            elif not value.isdigit():
                raise ConfigError(f"mlxlink {arg} {value[:40]}: not a port number")
        elif arg in ("-m", "--show_module"):
            show = True
        else:
            raise ConfigError(f"mlxlink {arg[:40]}: flag not on the read-only allowlist")
    if device is None or not show:
        raise ConfigError("mlxlink: only `mlxlink -d <device> [-p <port>] -m` is on the "
                          "read-only allowlist")


def check(argv: list[str]) -> list[str]:
    """Return argv unchanged if it is an allowed read-only command, else raise ConfigError."""
    if not argv:
        raise ConfigError("empty command")
    tool, args = argv[0], argv[1:]
    if tool in ("mlxlink", "ethtool"):
        _check_optics(tool, args)
        return argv
    if tool == "ibdiagnet":
        _check_ibdiagnet(args)
        return argv
    if tool not in _FLAGS:
        raise ConfigError(f"{tool}: not on the read-only command allowlist")
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _FORBIDDEN.get(tool, frozenset()):
            raise ConfigError(f"{tool} {arg}: would write to the fabric; refused")
        if arg in _UNREAD.get(tool, frozenset()):
            raise ConfigError(f"{tool} {arg}: not a table the auditor reads; refused")
        if arg in _VALUED:
            i += 2
            continue
        if tool == "sacct" and arg.startswith(_SACCT_VALUED):
            i += 1
            continue
        if arg not in _FLAGS[tool] and not (tool == "perfquery" and arg.isdigit()):
            raise ConfigError(f"{tool} {arg}: flag not on the read-only allowlist")
        i += 1
    return argv
