"""Read the HCA end of the links on compute hosts: a few read-only commands over SSH (paramiko).

The fabric allowlist in auditor/collect/commands.py is for infiniband-diags run on a management
host; the commands here run on every compute node, so they have their own allowlist, and it is
exact: `check_host_command` accepts only the argv lists built below, flag for flag. Nothing here
writes to a host; nothing from the config or a host reaches a shell except the sysfs root, and
that is checked to be an absolute path of plain characters first.

Host keys are checked against known_hosts and never added (paramiko RejectPolicy): a host whose
key is unknown or changed gets no password. One host's failure is a status in its HostCollection,
never an exception, so collecting from many hosts always gives one result per host. A command
that goes past `[hosts] max_output_mb` or `command_timeout_s` (auditor/collect/bounded.py) ends
its host's session with the status `output_too_large` or `timeout`.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
import socket
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import paramiko

from auditor.collect.bounded import BoundExceededError, CommandTimeoutError, Limits, read_channel
from auditor.collect.commands import check
from auditor.collect.runner import CommandResult
from auditor.config import HostSettings
from auditor.errors import AuditorError, CollectError, ConfigError

log = logging.getLogger(__name__)

HostStatus = Literal["ok", "partial", "no_hca", "timeout", "output_too_large", "auth_failed",
                     "host_key_mismatch", "parse_failed", "error"]

DEFAULT_SYSFS_ROOT = "/sys/class/infiniband"
NOT_INSTALLED = 127  # what a POSIX shell exits with for "command not found"
# The root is pasted into an `sh -c` string, so it may hold only characters no shell treats
# specially (no spaces, quotes, $, `, ;, |, &, globs, ~, newlines) and must be absolute. Every
# pattern here is used with fullmatch: `$` with match() would let a trailing newline through.
_ROOT_RE = re.compile(r"(?:/[A-Za-z0-9_.+-]+)+", re.ASCII)

IBSTAT: tuple[str, ...] = ("ibstat",)
# LC_ALL=C: dmesg -T formats its stamp with strftime, so another locale prints month names the
# parser cannot read. TZ=UTC: the stamp is the host's local time, and the host's zone is not
# known here; asking for UTC makes the times exact without it. `env` takes both as plain argv.
DMESG: tuple[str, ...] = ("env", "LC_ALL=C", "TZ=UTC", "dmesg", "-T")
# systemd 252 (Debian 12): -k = kernel messages of the current boot (it implies -b), short-iso
# stamps carry their UTC offset, --since takes a relative "-1d". Checked against journalctl 252.
JOURNAL: tuple[str, ...] = ("journalctl", "-k", "-o", "short-iso", "--no-pager", "--since", "-1d")
KERNEL_LOGS: dict[str, tuple[str, ...]] = {"dmesg": DMESG, "journal": JOURNAL}
# The host's own record of its boots (issue #20). Both only read: journalctl's list of boots
# (systemd >= 251 prints the IDX/BOOT ID/FIRST ENTRY/LAST ENTRY table; older ones rows with an
# em dash) and last's wtmp records of reboots and shutdowns (util-linux login-utils/last.c; -F
# prints full times with the year). LC_ALL=C: both name weekdays and months per locale; TZ=UTC:
# both print local time, and the host's zone is not known here.
BOOTS_JOURNAL: tuple[str, ...] = ("env", "LC_ALL=C", "TZ=UTC", "journalctl", "--list-boots",
                                  "--no-pager")
BOOTS_LAST: tuple[str, ...] = ("env", "LC_ALL=C", "TZ=UTC", "last", "-x", "-F", "reboot",
                               "shutdown")
BOOT_RECORDS: dict[str, tuple[str, ...]] = {"journal": BOOTS_JOURNAL, "last": BOOTS_LAST}
BOOTS = "boots"  # the capture name of either


def check_sysfs_root(root: str) -> str:
    """The root without a trailing '/', if it is a safe absolute path; else ConfigError."""
    trimmed = root.rstrip("/")
    parts = trimmed.split("/")[1:]
    if _ROOT_RE.fullmatch(trimmed) is None or any(p in (".", "..") for p in parts):
        raise ConfigError(f"hosts.sysfs_root: {root!r} must be an absolute path of letters, "
                          "digits and _ . + - only")
    return trimmed


# What the sysfs read asks of each port (every counter is one auditor.parse.sysfs_ib knows by
# name; tests/test_hostside.py holds the two together), and each device's node_guid.
SYSFS_PORT_FILES = (
    "state",
    "phys_state",
    "rate",
    "counters/link_downed",
    "counters/symbol_error",
    "counters/link_error_recovery",
    "counters/port_rcv_errors",
    "counters/local_link_integrity_errors",
)


# The globs need a shell; `sh -c` with a constant string is the only shell-free-of-input way to
# expand them (grep -r cannot: the device entries are symlinks, and grep -R would follow sysfs's
# symlink cycles through device/ and subsystem/). Nothing is interpolated into the string but a
# checked root, so the read-only allowlist can match the argv exactly. grep exits 0 when it
# printed any line and 2 when some file was missing or unreadable (no IB device, a VF whose PMA
# counters fail); the lines it did print are still valid, so rc 2 with stdout is a partial
# read, not a failure.
def _sysfs_argv(root: str) -> tuple[str, ...]:
    files = " ".join(f"{root}/*/ports/*/{name}" for name in SYSFS_PORT_FILES)
    return ("sh", "-c", f"grep -H . {files} {root}/*/node_guid")


SYSFS_COMMAND = _sysfs_argv(DEFAULT_SYSFS_ROOT)


def sysfs_command(root: str = DEFAULT_SYSFS_ROOT) -> tuple[str, ...]:
    """SYSFS_COMMAND reading `root` instead of /sys/class/infiniband (tests use a fake tree)."""
    return _sysfs_argv(check_sysfs_root(root))


# Transceiver diagnostics (`[sweep] optics`): per RDMA device `mlxlink -d <dev> -m`, or where
# mlxlink is not installed `ethtool -m <netdev>` per netdev of the device. Both are built only
# from names the host's own sysfs listed, checked against these patterns first: an RDMA device
# name (mlx5_0, hfi1_0, ibp65s0) and a netdev name (IFNAMSIZ: at most 15 characters), neither
# starting with "-", so nothing from a host can become a flag, a path or a second command.
_RDMA_DEVICE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}", re.ASCII)
_NETDEV = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}", re.ASCII)
OPTICS_LIST = "optics-list"  # the result name of `ls -1 <sysfs root>`
# Module reads per host, all devices and netdevs together: more is not a compute node.
OPTICS_MAX = 64


def mlxlink_command(device: str) -> tuple[str, ...]:
    """`mlxlink -d <dev> -m`: the module section only. mlxlink can also toggle a port, change its
    speed or FEC and clear counters; none of those flags is ever built or accepted here."""
    if not _RDMA_DEVICE.fullmatch(device):
        raise CollectError(f"{device[:40]!r}: not an RDMA device name")
    return ("mlxlink", "-d", device, "-m")


def ethtool_command(netdev: str) -> tuple[str, ...]:
    """`ethtool -m <if>`: reads the module EEPROM (ethtool -E would write it; never built)."""
    if not _NETDEV.fullmatch(netdev):
        raise CollectError(f"{netdev[:40]!r}: not a network interface name")
    return ("ethtool", "-m", netdev)


def list_command(path: str) -> tuple[str, ...]:
    """`ls -1 <path>` of the sysfs root or of one device's `device/net` folder."""
    return ("ls", "-1", path)


def _listable(path: str, root: str) -> bool:
    if path == root:
        return True
    prefix, _, device = path.removesuffix("/device/net").rpartition("/")
    return path.endswith("/device/net") and prefix == root and bool(_RDMA_DEVICE.fullmatch(device))


def _optics_command(args: tuple[str, ...], root: str) -> bool:
    """Whether argv is exactly one of the diagnostics commands above, names checked, and (for
    the two tools that can write) passes the fabric allowlist of auditor/collect/commands.py
    too: two independent checks stand between a host's listing and a command line."""
    if args[:1] in (("mlxlink",), ("ethtool",)):
        try:
            check(list(args))
        except ConfigError:
            return False
    if len(args) == 4:
        return args[:2] == ("mlxlink", "-d") and args[3] == "-m" \
            and bool(_RDMA_DEVICE.fullmatch(args[2]))
    if len(args) != 3:
        return False
    if args[:2] == ("ethtool", "-m"):
        return bool(_NETDEV.fullmatch(args[2]))
    return args[:2] == ("ls", "-1") and _listable(args[2], root)


def host_plan(settings: HostSettings) -> list[tuple[str, tuple[str, ...]]]:
    """(name, argv) of every command to run on each host, in order; the name names captures."""
    plan = [("sysfs", sysfs_command(settings.sysfs_root)), ("ibstat", IBSTAT)]
    if settings.kernel_log in KERNEL_LOGS:
        plan.append((settings.kernel_log, KERNEL_LOGS[settings.kernel_log]))
    elif settings.kernel_log != "none":
        raise ConfigError("hosts.kernel_log: use dmesg, journal or none")
    if settings.boots in BOOT_RECORDS:
        plan.append((BOOTS, BOOT_RECORDS[settings.boots]))
    elif settings.boots != "none":
        raise ConfigError("hosts.boots: use journal, last or none")
    return plan


def check_host_command(argv: Sequence[str], sysfs_root: str = DEFAULT_SYSFS_ROOT) -> list[str]:
    """Return argv as a list if it is exactly one of the allowed host commands, else raise."""
    allowed = {sysfs_command(sysfs_root), IBSTAT, *KERNEL_LOGS.values(), *BOOT_RECORDS.values()}
    args = tuple(argv)
    optics = _optics_command(args, check_sysfs_root(sysfs_root))
    if args not in allowed and not optics:
        raise CollectError(f"{shlex.join(argv)!r}: not on the read-only host command allowlist")
    return list(argv)


@dataclass(frozen=True, slots=True)
class OpticsTarget:
    """What a diagnostics result is of: its format, the RDMA device and the port name."""

    kind: Literal["mlxlink-module", "ethtool-module"]
    rdma_device: str  # mlx5_0: the HCA whose module it is
    port_name: str  # mlx5_0/1 for mlxlink, the netdev for ethtool


@dataclass(frozen=True, slots=True)
class HostCollection:
    """What one host gave. `status` is about the SSH session ("ok" once logged in); a command
    that could not finish is in `failed` (name -> why), one that ran is in `results`; `optics`
    says which results are module diagnostics (result name -> what of)."""

    host: str
    status: HostStatus
    detail: str = ""
    results: dict[str, CommandResult] = field(default_factory=dict)
    failed: dict[str, tuple[HostStatus, str]] = field(default_factory=dict)  # status, why
    optics: dict[str, OpticsTarget] = field(default_factory=dict)


class _StopError(Exception):
    """Internal: a status and a credential-free message out of the session code."""

    def __init__(self, status: HostStatus, detail: str) -> None:
        super().__init__(detail)
        self.status: HostStatus = status
        self.detail = detail


def _classify(exc: BaseException, where: str, keys: str, timeout_s: float) -> _StopError:
    """Map a connect/login failure onto a status. Subclasses first: BadHostKeyException and
    AuthenticationException are SSHExceptions, NoValidConnectionsError is an OSError."""
    if isinstance(exc, paramiko.BadHostKeyException):
        return _StopError("host_key_mismatch", f"{where}: host key does not match {keys}; "
                          "refusing to connect (key changed or wrong host)")
    if isinstance(exc, paramiko.AuthenticationException):
        return _StopError("auth_failed", f"{where}: authentication failed")
    if isinstance(exc, paramiko.SSHException):
        # RejectPolicy: "Server '[host]:port' not found in known_hosts".
        if "not found in known_hosts" in str(exc):
            return _StopError("host_key_mismatch", f"{where}: host key not in {keys}; refusing "
                              "to connect (verify the fingerprint, then add it; never added "
                              "automatically)")
        if "banner" in str(exc).lower():
            return _StopError("timeout", f"{where}: no SSH banner within {timeout_s:g} s")
        # start_client() stops waiting at the connect timeout without raising; the next step
        # then finds no session. The handshake did not finish in time.
        if str(exc) == "No existing session":
            return _StopError("timeout", f"{where}: SSH handshake did not complete within "
                              f"{timeout_s:g} s")
        return _StopError("error", f"{where}: ssh: {exc}")
    if isinstance(exc, TimeoutError):
        return _StopError("timeout", f"{where}: no answer within {timeout_s:g} s")
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        reasons = list(exc.errors.values())
        if reasons and all(isinstance(r, ConnectionRefusedError) for r in reasons):
            return _StopError("error", f"{where}: connection refused")
        if any(isinstance(r, TimeoutError) for r in reasons):
            return _StopError("timeout", f"{where}: no answer within {timeout_s:g} s")
        return _StopError("error", f"{where}: cannot connect: {exc.strerror or exc}")
    if isinstance(exc, socket.gaierror):
        return _StopError("error", f"{where}: cannot resolve the host name: {exc.strerror}")
    if isinstance(exc, OSError):
        return _StopError("error", f"{where}: cannot connect: {exc.strerror or exc}")
    return _StopError("error", f"{where}: {type(exc).__name__}")


def classify_login(exc: BaseException, where: str, keys: str, timeout_s: float
                   ) -> tuple[HostStatus, str]:
    """(status, message) of a failed paramiko connect or login, as a host's is recorded (the
    NVOS switch collector shares it: collect/nvos.py)."""
    stop = _classify(exc, where, keys, timeout_s)
    return stop.status, stop.detail


class HostRunner:
    """One SSH session to one compute host, running only the host allowlist."""

    def __init__(self, host: str, settings: HostSettings) -> None:
        self.where = host
        self._settings = settings
        self._root = check_sysfs_root(settings.sysfs_root)
        self._limits = Limits.of(settings.max_output_mb, settings.command_timeout_s,
                                 settings.timeout_s, "[hosts]")
        self._client = paramiko.SSHClient()
        self._client.set_missing_host_key_policy(paramiko.RejectPolicy())

    def connect(self) -> None:
        """Log in, or raise _StopError with the status to record."""
        s = self._settings
        where = f"{self.where}:{s.port}"
        keys = str(s.known_hosts) if s.known_hosts else "~/.ssh/known_hosts"
        if s.known_hosts is not None:
            if not s.known_hosts.is_file():
                raise _StopError("error", f"{where}: known_hosts {s.known_hosts} does not exist")
            # Loaded read-only: paramiko writes host keys back only on save_host_keys().
            self._client.load_host_keys(str(s.known_hosts))
        else:
            self._client.load_system_host_keys()
        password = s.password.value() if s.password else None
        explicit = s.key_file is not None or password is not None
        try:
            self._client.connect(
                self.where, port=s.port, username=s.user,
                key_filename=str(s.key_file) if s.key_file else None, password=password,
                timeout=s.timeout_s, banner_timeout=s.timeout_s, auth_timeout=s.timeout_s,
                # With a configured key or password, offer nothing else: the agent and every
                # ~/.ssh/id_* of the auditor's user are not meant for each compute node.
                allow_agent=not explicit, look_for_keys=not explicit,
            )
        except (paramiko.SSHException, OSError) as exc:
            # The transport thread keeps the real reason when start_client() gave up first.
            transport = self._client.get_transport()
            cause = transport.get_exception() if transport is not None else None
            raise _classify(cause or exc, where, keys, s.timeout_s) from None

    def run(self, argv: Sequence[str]) -> CommandResult:
        """Run one allowlisted command within the host limits ([hosts] max_output_mb and
        command_timeout_s; timeout_s of silence). CommandTimeoutError when it does not answer,
        BoundExceededError when it goes past a bound, CollectError (no password in any) when
        it cannot finish otherwise."""
        args = check_host_command(argv, self._root)
        t = self._settings.timeout_s
        where = f"{self.where}: {args[0]}"
        try:
            _, stdout, _ = self._client.exec_command(shlex.join(args), timeout=t)
            code, out, err = read_channel(stdout.channel, self._limits, where)
        except TimeoutError:
            raise CommandTimeoutError(f"{where}: no answer within {t:g} s") from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise CollectError(f"{where}: {type(exc).__name__}: {exc}") from None
        return CommandResult(tuple(args), code, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"))

    def close(self) -> None:
        self._client.close()


def _redact(text: str, password: str | None) -> str:
    return text.replace(password, "***") if password else text


class _Commands:
    """Runs named commands on one host, filing each result or failure under its name."""

    def __init__(self, runner: HostRunner, total_s: float = math.inf) -> None:
        self.runner = runner
        self.results: dict[str, CommandResult] = {}
        self.failed: dict[str, tuple[HostStatus, str]] = {}
        self.total_s = total_s
        self.started = time.monotonic()

    def run(self, name: str, argv: Sequence[str]) -> CommandResult | None:
        """The command's result, or None with its failure filed. A command that went past a
        bound ends the host's session (_StopError): a host streaming or trickling without
        end would do the same to every command, and one bound is all a host may cost. So
        does a visit past [hosts] total_timeout_s, before the next command."""
        if time.monotonic() - self.started > self.total_s:
            why = (f"{self.runner.where}: visit past {self.total_s:g} s before {name} "
                   "([hosts] total_timeout_s)")
            self.failed[name] = ("timeout", why)
            raise _StopError("timeout", why)
        try:
            self.results[name] = result = self.runner.run(argv)
        except BoundExceededError as exc:
            self.failed[name] = (exc.status, str(exc))
            raise _StopError(exc.status, str(exc)) from None
        except CommandTimeoutError as exc:
            self.failed[name] = ("timeout", str(exc))
            return None
        except CollectError as exc:
            self.failed[name] = ("error", str(exc))
            return None
        return result


def _names(listing: CommandResult | None, pattern: re.Pattern[str]) -> list[str]:
    """The entries of an `ls -1` that are plain names of the expected kind (others ignored)."""
    if listing is None or listing.exit_code != 0:
        return []
    return [n for n in listing.stdout.split() if pattern.fullmatch(n)][:OPTICS_MAX]


def _read_optics(cmds: _Commands, root: str, targets: dict[str, OpticsTarget]) -> None:
    """mlxlink -m per RDMA device; once mlxlink turns out not to be installed (exit 127), ethtool
    -m per netdev of each remaining device instead. At most OPTICS_MAX module reads per host in
    all (a host listing 64 devices of 64 netdevs would otherwise cost 4,096 commands), and none
    after one that did not answer: a module that hangs its reader hangs the next one too, and
    each silent read costs the sweep timeout_s."""
    budget = OPTICS_MAX
    mlxlink = True

    def read(name: str, argv: Sequence[str]) -> CommandResult | None:
        nonlocal budget
        budget -= 1
        result = cmds.run(name, argv)
        if result is None and name in cmds.failed and cmds.failed[name][0] == "timeout":
            budget = 0
        return result

    for device in _names(cmds.run(OPTICS_LIST, list_command(root)), _RDMA_DEVICE):
        if budget <= 0:
            return
        if mlxlink:
            name = f"mlxlink.{device}"
            result = read(name, mlxlink_command(device))
            if result is None or result.exit_code != NOT_INSTALLED:
                targets[name] = OpticsTarget("mlxlink-module", device, f"{device}/1")
                continue
            mlxlink = False
            budget += 1  # finding out that mlxlink is missing read no module
        net = cmds.run(f"optics-net.{device}", list_command(f"{root}/{device}/device/net"))
        for netdev in _names(net, _NETDEV):
            if budget <= 0:
                return
            name = f"ethtool.{netdev}"
            read(name, ethtool_command(netdev))
            targets[name] = OpticsTarget("ethtool-module", device, netdev)


def collect_host(host: str, settings: HostSettings, optics: bool = False) -> HostCollection:
    """Connect, run the plan (and with `optics` each module's diagnostics), disconnect. Never
    raises."""
    cmds: _Commands | None = None
    targets: dict[str, OpticsTarget] = {}
    try:
        runner = HostRunner(host, settings)
        cmds = _Commands(runner, settings.total_timeout_s)
        try:
            runner.connect()
            for name, argv in host_plan(settings):
                cmds.run(name, argv)
            if optics:
                _read_optics(cmds, check_sysfs_root(settings.sysfs_root), targets)
            result = HostCollection(host, "ok", "", cmds.results, cmds.failed, targets)
        finally:
            runner.close()
    except _StopError as exc:
        result = HostCollection(host, exc.status, exc.detail, *_so_far(cmds), targets)
    except AuditorError as exc:  # ConfigError: the password's variable is not set
        result = HostCollection(host, "error", str(exc), *_so_far(cmds), targets)
    try:
        password = settings.password.value() if settings.password else None
    except ConfigError:
        password = None
    # paramiko never puts a password in a message; this makes sure no message ever does.
    result = HostCollection(result.host, result.status, _redact(result.detail, password),
                            result.results,
                            {k: (st, _redact(why, password))
                             for k, (st, why) in result.failed.items()}, result.optics)
    log.info("host %s: %s %s", host, result.status, result.detail)
    return result


def _so_far(cmds: _Commands | None
            ) -> tuple[dict[str, CommandResult], dict[str, tuple[HostStatus, str]]]:
    return (cmds.results, cmds.failed) if cmds is not None else ({}, {})


def collect_host_outputs(settings: HostSettings, optics: bool = False) -> list[HostCollection]:
    """Collect from every host of settings.names in parallel threads; results in input order.
    `optics`: also read each module's diagnostics (`[sweep] optics`)."""
    if settings.concurrency < 1:
        raise ConfigError(f"hosts.concurrency must be at least 1, got {settings.concurrency}")
    names = list(settings.names)
    if not names:
        return []
    host_plan(settings)  # a bad sysfs_root or kernel_log is the config's fault: raise it once

    def one(host: str) -> HostCollection:
        try:
            return collect_host(host, settings, optics)
        except Exception as exc:  # noqa: BLE001 - a bug for one host must not lose the rest
            return HostCollection(host, "error", f"internal error: {type(exc).__name__}")

    # Threads, not processes: the work is waiting on SSH round trips.
    with ThreadPoolExecutor(max_workers=min(settings.concurrency, len(names)),
                            thread_name_prefix="hostcmd") as pool:
        return list(pool.map(one, names))
