"""The allowlist of fabric commands the auditor may run, and the flags each may take.

Everything here only reads. Counter resets (perfquery's reset-after-read flag, ibqueryerrors'
clear flags) and port changes (`ibportstate`) are not on the list and never will be: the auditor
must not write to the fabric, and a reset would also destroy the counter history other tools
rely on.
"""

from __future__ import annotations

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


def check(argv: list[str]) -> list[str]:
    """Return argv unchanged if it is an allowed read-only command, else raise ConfigError."""
    if not argv:
        raise ConfigError("empty command")
    tool, args = argv[0], argv[1:]
    if tool not in _FLAGS:
        raise ConfigError(f"{tool}: not on the read-only command allowlist")
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _FORBIDDEN.get(tool, frozenset()):
            raise ConfigError(f"{tool} {arg}: would write to the fabric; refused")
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
