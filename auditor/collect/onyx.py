"""Collect IB port state and transceiver inventory from Onyx / MLNX-OS switches over SSH (netmiko),
and, when asked (`[sweep] optics`), each module's diagnostics.

Host keys are checked against known_hosts and never added: netmiko runs with ssh_strict=True
(paramiko RejectPolicy), so an unknown or changed key ends the connection before any password is
sent. Only the read-only commands in `check_command` are ever sent by this module; the session
set-up netmiko itself sends (`enable`, `no cli session paging enable`, `terminal width 511`,
`exit`) changes the CLI session only, never the switch configuration.

One switch's failure is a status in its SwitchCollection, never an exception, so a sweep of many
switches always returns one result per switch. Every command's answer is bounded in bytes (the
login's too) and in time (auditor/collect/bounded.py; `max_output_mb` and `command_timeout_s` of
the switch's `ssh` table): past either, the switch's status is `output_too_large` or `timeout`.
"""

from __future__ import annotations

import logging
import math
import re
import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import paramiko
from netmiko.channel import SSHChannel
from netmiko.exceptions import (
    NetmikoAuthenticationException,
    NetmikoBaseException,
    NetmikoTimeoutException,
    ReadException,
    ReadTimeout,
)
from netmiko.mellanox import MellanoxMlnxosSSH
from netmiko.netmiko_globals import MAX_BUFFER

from auditor.collect.bounded import BoundExceededError, Limits, too_large
from auditor.config import Secret
from auditor.errors import AuditorError, CollectError, ParseError
from auditor.parse.onyx import (
    IbInterface,
    Transceiver,
    parse_interfaces_ib_status,
    parse_transceivers,
)

log = logging.getLogger(__name__)
_R = TypeVar("_R")  # what each_switch collects of a switch

Status = Literal["ok", "timeout", "output_too_large", "auth_failed", "host_key_mismatch",
                 "parse_failed", "error"]

SHOW_VERSION = "show version"
SHOW_IB_STATUS = "show interfaces ib status"
_FIXED = frozenset({SHOW_VERSION, SHOW_IB_STATUS})
# The per-port form is the one the MLNX-OS manual documents ("show interfaces ib 1/36
# transceiver"); an all-ports form is not documented for IB, so we ask port by port.
_XCVR_RE = re.compile(r"show interfaces ib (\d{1,2}(?:/\d{1,3}){1,3}) transceiver", re.ASCII)
# The module's DDM (temperature, voltage, per-lane bias and power, thresholds): asked only of
# ports that hold a module, and only with `[sweep] optics` on.
_DIAG_RE = re.compile(r"show interfaces ib (\d{1,2}(?:/\d{1,3}){1,3}) transceiver diagnostics",
                      re.ASCII)


def check_command(command: str) -> str:
    """Return `command` if it is on the read-only allowlist, else raise CollectError.

    Exact matches only: no pipes (`| json-print`, `| include`), no `;`, no abbreviations.
    """
    if command in _FIXED or _XCVR_RE.fullmatch(command) or _DIAG_RE.fullmatch(command):
        return command
    raise CollectError(f"{command!r}: not on the read-only Onyx command allowlist")


def transceiver_command(port: str) -> str:
    """`IB1/17` -> `show interfaces ib 1/17 transceiver` (validated)."""
    return check_command(f"show interfaces ib {port.removeprefix('IB')} transceiver")


def diagnostics_command(port: str) -> str:
    """`IB1/17` -> `show interfaces ib 1/17 transceiver diagnostics` (validated)."""
    return check_command(f"show interfaces ib {port.removeprefix('IB')} transceiver diagnostics")


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchSsh:
    name: str
    host: str
    port: int = 22
    user: str
    password: Secret | None = None
    key_file: Path | None = None
    known_hosts: Path | None = None  # None: the user's ~/.ssh/known_hosts
    timeout_s: float = 30.0  # connect, banner, login, and each wait of the session set-up
    optics: bool = False  # also read each module's diagnostics
    max_output_mb: float = 16.0  # any one command's answer (and the login's)
    command_timeout_s: float = 120.0  # any one command, start to finish
    total_timeout_s: float = 1800.0  # the whole visit, checked before each command

    @property
    def limits(self) -> Limits:
        return Limits.of(self.max_output_mb, self.command_timeout_s, None,
                         f"[[switches]] {self.name} ssh")


@dataclass(frozen=True, slots=True)
class SwitchCollection:
    name: str
    status: Status
    detail: str = ""
    interfaces: tuple[IbInterface, ...] = ()
    transceivers: tuple[Transceiver, ...] = ()
    raw: dict[str, str] = field(default_factory=dict)  # command -> output, for captures
    # (port, output) of each diagnostics read, parsed by the caller (auditor.ops.switches).
    diagnostics: tuple[tuple[str, str], ...] = ()
    optics_note: str = ""  # why the diagnostics read stopped early, when it did


class _StopError(Exception):
    """Internal: carries a status and a credential-free message out of the session code."""

    def __init__(self, status: Status, detail: str) -> None:
        super().__init__(detail)
        self.status: Status = status
        self.detail = detail


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes/contexts: netmiko re-raises paramiko and socket errors as
    NetmikoTimeoutException inside its except blocks, so the real reason is in __context__."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def _classify_connect(exc: NetmikoTimeoutException, sw: SwitchSsh) -> _StopError:
    where = f"{sw.host}:{sw.port}"
    keys = str(sw.known_hosts) if sw.known_hosts else "~/.ssh/known_hosts"
    for err in _chain(exc):
        if isinstance(err, paramiko.BadHostKeyException):
            return _StopError("host_key_mismatch", f"{where}: host key does not match {keys}; "
                              "refusing to connect (key changed or wrong host)")
        # paramiko's RejectPolicy: "Server '[host]:port' not found in known_hosts".
        if isinstance(err, paramiko.SSHException) and "not found in known_hosts" in str(err):
            return _StopError("host_key_mismatch", f"{where}: host key not in {keys}; refusing to "
                              "connect (verify the fingerprint, then add it; never added "
                              "automatically)")
        # paramiko wraps per-address socket errors in NoValidConnectionsError (.errors).
        reasons = [err, *getattr(err, "errors", {}).values()]
        if any(isinstance(r, ConnectionRefusedError) for r in reasons):
            return _StopError("error", f"{where}: connection refused")
        if isinstance(err, (TimeoutError, socket.timeout)):
            return _StopError("timeout", f"{where}: no answer within {sw.timeout_s:g} s")
        if isinstance(err, OSError) and not isinstance(err, paramiko.SSHException):
            return _StopError("error", f"{where}: cannot connect: {err.strerror or err}")
    # Banner or key-exchange timeouts: paramiko says "Error reading SSH protocol banner".
    return _StopError("timeout", f"{where}: SSH handshake did not complete within "
                      f"{sw.timeout_s:g} s")


def _load_key(sw: SwitchSsh) -> Any:
    if sw.key_file is None:
        return None
    try:
        return paramiko.PKey.from_path(sw.key_file)
    except (OSError, paramiko.SSHException) as exc:
        # Passphrase-protected keys land here too: there is no passphrase setting (yet).
        raise _StopError("error", f"{sw.name}: cannot load key_file {sw.key_file}: "
                         f"{type(exc).__name__}") from None


def _connect_args(sw: SwitchSsh, password: str | None) -> dict[str, Any]:
    t = sw.timeout_s
    return {
        "device_type": "mellanox_mlnxos",
        "host": sw.host,
        "port": sw.port,
        "username": sw.user,
        "password": password or "",
        # The key goes in as a loaded pkey: netmiko's use_keys would also turn on paramiko's
        # look_for_keys and offer every ~/.ssh/id_* of the auditor's user to each switch.
        "pkey": _load_key(sw),
        "use_keys": False,
        "allow_agent": False,
        # RejectPolicy; known_hosts is loaded read-only and never saved back.
        "ssh_strict": True,
        "system_host_keys": sw.known_hosts is None,
        "alt_host_keys": sw.known_hosts is not None,
        "alt_key_file": str(sw.known_hosts) if sw.known_hosts else "",
        "conn_timeout": t,
        "banner_timeout": t,
        "auth_timeout": t,
        "blocking_timeout": t,
        "timeout": t,
    }


class _BoundedChannel(SSHChannel):
    """netmiko's SSH channel, counting the bytes it reads: netmiko reads as long as data comes
    and keeps all of it until the prompt does, so an answer without end would take the memory.
    Past the budget (reset per command) it raises BoundExceededError. It also keeps a deadline
    (login, then each command): netmiko's own loops run on fixed clocks of their own (netmiko
    4.8 base_connection._test_channel_read waits 20 s for a prompt whatever the timeouts, and
    disconnect()'s cleanup waits again), so a CLI that trickles bytes without a prompt would
    hold the switch's worker ~30 s past the configured bounds. Past the deadline every read
    raises netmiko's ReadTimeout. Written against netmiko 4.8 channel.py
    SSHChannel.read_buffer, which it replaces."""

    def __init__(self, conn: paramiko.Channel | None, encoding: str, limits: Limits,
                 where: str) -> None:
        super().__init__(conn, encoding)
        self.limits = limits
        self.where = where
        self.used = 0
        self.deadline = math.inf
        self.seconds = 0.0

    def limit(self, seconds: float) -> None:
        """Reads from now on end `seconds` from now."""
        self.deadline, self.seconds = time.monotonic() + seconds, seconds

    def read_buffer(self) -> str:
        if time.monotonic() > self.deadline:
            raise ReadTimeout(f"{self.where}: no prompt within {self.seconds:g} s")
        conn = self.remote_conn
        if conn is None or not conn.recv_ready():
            return super().read_buffer()
        data = conn.recv(MAX_BUFFER)
        if not data:
            raise ReadException("Channel stream closed by remote device.")
        self.used += len(data)
        if self.used > self.limits.max_bytes:
            raise too_large(self.where, self.limits)
        return str(data.decode(self.encoding, "ignore"))


class _BoundedOnyx(MellanoxMlnxosSSH):
    """netmiko's MLNX-OS driver whose channel is a _BoundedChannel from the first byte after
    the SSH handshake on (the banner and the session set-up are bounded too)."""

    def __init__(self, *, limits: Limits, where: str, login_s: float, command_s: float,
                 **kwargs: Any) -> None:
        self._limits, self._where = limits, where
        self._login_s, self._command_s = login_s, command_s
        self.started = time.monotonic()
        super().__init__(**kwargs)

    def special_login_handler(self, delay_factor: float = 1.0) -> None:
        # netmiko 4.8 base_connection.establish_connection: made the channel, then this.
        channel = _BoundedChannel(self.remote_conn, self.encoding, self._limits,
                                  f"{self._where}: login")
        channel.limit(self._login_s)
        self.channel = channel
        super().special_login_handler(delay_factor)

    def bound(self, command: str, seconds: float | None = None) -> None:
        """A new budget for `command`'s answer: bytes, and time (command_timeout_s unless
        `seconds`)."""
        if isinstance(self.channel, _BoundedChannel):
            self.channel.used = 0
            self.channel.where = f"{self._where}: {command!r}"
            self.channel.limit(self._command_s if seconds is None else seconds)


def _run(conn: Any, command: str, sw: SwitchSsh, raw: dict[str, str]) -> str:
    check_command(command)
    if isinstance(conn, _BoundedOnyx):
        if time.monotonic() - conn.started > sw.total_timeout_s:
            raise _StopError("timeout", f"{sw.host}: visit past {sw.total_timeout_s:g} s "
                             f"before {command!r} ([[switches]] ssh total_timeout_s)")
        conn.bound(command)
    try:
        out = conn.send_command(command, read_timeout=sw.command_timeout_s)
    except ReadTimeout:
        raise _StopError("timeout", f"{sw.host}: no prompt after {command!r} within "
                         f"{sw.command_timeout_s:g} s ([[switches]] ssh command_timeout_s)"
                         ) from None
    except BoundExceededError as exc:
        raise _StopError(exc.status, str(exc)) from None
    text = out if isinstance(out, str) else str(out)
    raw[command] = text
    first = text.strip().splitlines()[0] if text.strip() else ""
    # Onyx answers an unknown or disallowed command with "% Unrecognized command ..." and
    # a prompt, not an SSH error; this firmware cannot give us that data.
    if first.startswith("%"):
        raise _StopError("error", f"{sw.host}: switch rejected {command!r}: {first[:120]}")
    return text


def _session(sw: SwitchSsh, password: str | None, raw: dict[str, str]) -> SwitchCollection:
    try:
        conn = _BoundedOnyx(limits=sw.limits, where=sw.host, login_s=sw.timeout_s,
                            command_s=sw.command_timeout_s, **_connect_args(sw, password))
    except BoundExceededError as exc:
        raise _StopError(exc.status, str(exc)) from None
    except NetmikoAuthenticationException:
        raise _StopError("auth_failed", f"{sw.host}:{sw.port}: authentication failed for user "
                         f"{sw.user!r}") from None
    except NetmikoTimeoutException as exc:
        raise _classify_connect(exc, sw) from None
    except ReadTimeout:
        # Logged in, but no prompt netmiko recognises (not an Onyx CLI, or a hung one).
        raise _StopError("timeout", f"{sw.host}:{sw.port}: no CLI prompt within "
                         f"{sw.timeout_s:g} s after login") from None
    interfaces: list[IbInterface] = []
    transceivers: list[Transceiver] = []
    diagnostics: list[tuple[str, str]] = []
    note = ""
    try:
        conn.enable()
        _run(conn, SHOW_VERSION, sw, raw)
        current = SHOW_IB_STATUS
        try:
            interfaces = parse_interfaces_ib_status(_run(conn, current, sw, raw))
            for iface in interfaces:
                cmd = transceiver_command(iface.port)
                current = cmd
                found = parse_transceivers(_run(conn, cmd, sw, raw))
                # The reply's header names the module cage; a split port (1/1/2) may be
                # reported under its cage (Slot 1 port 1). Keep the port we asked about so
                # every status row has its transceiver row.
                if len(found) == 1 and found[0].port != iface.port:
                    found = [replace(found[0], port=iface.port)]
                transceivers.extend(found)
        except ParseError as exc:
            err = exc.with_source(f"{sw.name}:{current}")
            return SwitchCollection(sw.name, "parse_failed", str(err), tuple(interfaces),
                                    tuple(transceivers), raw)
        if sw.optics:
            note = _diagnostics(conn, sw, raw, transceivers, diagnostics)
    finally:
        # The logout (netmiko's cleanup reads for a prompt) gets timeout_s, like the login.
        conn.bound("exit", sw.timeout_s)
        conn.disconnect()
    return SwitchCollection(sw.name, "ok", f"{len(interfaces)} IB ports, "
                            f"{sum(t.present for t in transceivers)} modules",
                            tuple(interfaces), tuple(transceivers), raw, tuple(diagnostics),
                            note)


def _diagnostics(conn: Any, sw: SwitchSsh, raw: dict[str, str],
                 transceivers: Sequence[Transceiver], out: list[tuple[str, str]]) -> str:
    """Read the diagnostics of every port holding a module into `out`. A firmware that rejects
    the command, or a port that does not answer in time, ends the optics read, not the switch's:
    its port status and inventory are already read. Returns why it ended early ("" if not)."""
    for t in transceivers:
        if not t.present:
            continue
        try:
            out.append((t.port, _run(conn, diagnostics_command(t.port), sw, raw)))
        except _StopError as exc:
            if exc.status == "output_too_large":
                raise  # the switch's answer has no end: the whole switch is failed
            return f"optics: {exc.detail}"
    return ""


def _redact(text: str, password: str | None) -> str:
    return text.replace(password, "***") if password else text


def collect_switch(sw: SwitchSsh) -> SwitchCollection:
    """Connect, read port status and every port's transceiver, disconnect. Never raises."""
    raw: dict[str, str] = {}
    password: str | None = None
    try:
        if sw.password is None and sw.key_file is None:
            raise _StopError("error", f"{sw.name}: neither password nor key_file is set")
        if sw.known_hosts is not None and not sw.known_hosts.is_file():
            raise _StopError("error", f"{sw.name}: known_hosts {sw.known_hosts} does not exist")
        password = sw.password.value() if sw.password else None
        result = _session(sw, password, raw)
    except _StopError as exc:
        result = SwitchCollection(sw.name, exc.status, exc.detail, raw=raw)
    except BoundExceededError as exc:  # past a bound in the session set-up (enable, paging)
        result = SwitchCollection(sw.name, exc.status, str(exc), raw=raw)
    except AuditorError as exc:  # CollectError from the allowlist, ConfigError from a secret
        result = SwitchCollection(sw.name, "error", str(exc), raw=raw)
    except (NetmikoBaseException, paramiko.SSHException, OSError, EOFError, ValueError) as exc:
        # Session dropped mid-command, or netmiko's "Failed to enter enable mode".
        result = SwitchCollection(sw.name, "error", f"{sw.host}: {type(exc).__name__}: {exc}",
                                  raw=raw)
    detail, note = _redact(result.detail, password), _redact(result.optics_note, password)
    if (detail, note) != (result.detail, result.optics_note):
        result = replace(result, detail=detail, optics_note=note)
    log.info("onyx %s: %s %s", sw.name, result.status, result.detail)
    return result


def each_switch(switches: Sequence[SwitchSsh], collect: Callable[[SwitchSsh], _R],
                failed: Callable[[SwitchSsh, str], _R], concurrency: int, name: str
                ) -> list[_R]:
    """`collect` every switch in parallel threads, results in input order; a switch whose
    collection raised gets `failed(switch, detail)` instead."""
    if concurrency < 1:
        raise CollectError(f"concurrency must be at least 1, got {concurrency}")
    if not switches:
        return []

    def one(sw: SwitchSsh) -> _R:
        try:
            return collect(sw)
        except Exception as exc:  # noqa: BLE001 - a bug for one switch must not lose the rest
            return failed(sw, f"internal error: {type(exc).__name__}")

    # Threads, not processes: the work is waiting on SSH, and netmiko's login alone idles ~2 s.
    with ThreadPoolExecutor(max_workers=min(concurrency, len(switches)),
                            thread_name_prefix=name) as pool:
        return list(pool.map(one, switches))


def collect_switches(switches: Sequence[SwitchSsh], concurrency: int = 8) -> list[SwitchCollection]:
    """Collect from all switches in parallel threads; results in input order."""
    return each_switch(switches, collect_switch,
                       lambda sw, detail: SwitchCollection(sw.name, "error", detail),
                       concurrency, "onyx")
