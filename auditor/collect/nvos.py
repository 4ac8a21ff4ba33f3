"""Read an NVOS switch's event table over SSH (Quantum-2 and later switches, issue #24).

NVOS is NVIDIA's NVUE-based switch OS. Its port state changes are rows of an event table, not
syslog lines (NVOS user manual for InfiniBand switches v25.02.5002, "Event Management
Commands": `nv show system events`, 1000 entries by default); `-o json` prints it as JSON
(NVIDIA's own NVOS tests read it so: echuawu/sonic-mgmt@f7d3019 ngts/tests_nvos/system/
test_system_events.py). The manuals' examples run `nv` at the login shell's prompt
(`admin@nvos:~$ nv show ...`), so the command goes in one SSH exec request; no interactive CLI
session is opened. NVOS on a real switch answering the exec request is assumed, not seen.

The plain command shows the table's last 50 entries, not all of it (the manual's note on
`nv show system events`; NVIDIA's test_show_system_events.py asserts 50): a switch that logs
more than 50 events between two sweeps loses the older ones to this reader. The whole table is
`... last <N>` in that test and `--last <N>` in later releases of the same tests (the syntax
changed between releases), so no such form is allowlisted until a switch confirms one. Entries
read again by the next sweep are not stored twice (auditor.ingest.logs, by switch, time, state,
port and text).

Only `nv show system events -o json` is ever sent: it is the whole allowlist (`check_command`),
and it only reads. Host keys are checked against known_hosts and never added (paramiko
RejectPolicy): a switch whose key is unknown or changed gets no password. The answer is bounded
in bytes and time (`max_output_mb`, `command_timeout_s`, and `timeout_s` of silence, of the
switch's `ssh` table). One switch's failure is a status in its NvosCollection, never an
exception; no message holds the password.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import paramiko

from auditor.collect.bounded import BoundExceededError, CommandTimeoutError, Limits, read_channel
from auditor.collect.hostcmd import classify_login
from auditor.collect.onyx import Status, SwitchSsh, each_switch
from auditor.errors import AuditorError, CollectError

log = logging.getLogger(__name__)

SHOW_EVENTS = "nv show system events -o json"
_ALLOWED = frozenset({SHOW_EVENTS})
DETAIL_MAX = 300  # of a switch's stderr kept in its status


def check_command(command: str) -> str:
    """`command` if it is on the NVOS allowlist (exactly), else CollectError."""
    if command in _ALLOWED:
        return command
    raise CollectError(f"{command!r}: not on the read-only NVOS command allowlist")


@dataclass(frozen=True, slots=True)
class NvosCollection:
    name: str
    status: Status
    detail: str = ""
    events: str = ""  # the answer of SHOW_EVENTS (JSON text), parsed by the caller


class _StopError(Exception):
    def __init__(self, status: Status, detail: str) -> None:
        super().__init__(detail)
        self.status: Status = status
        self.detail = detail


def _limits(sw: SwitchSsh) -> Limits:
    # timeout_s is also the longest silence: a switch that accepts the command and says
    # nothing is not answering.
    return Limits.of(sw.max_output_mb, sw.command_timeout_s, sw.timeout_s,
                     f"[[switches]] {sw.name} ssh")


def _connect(client: paramiko.SSHClient, sw: SwitchSsh, password: str | None) -> None:
    where = f"{sw.host}:{sw.port}"
    keys = str(sw.known_hosts) if sw.known_hosts else "~/.ssh/known_hosts"
    try:
        if sw.known_hosts is not None:
            if not sw.known_hosts.is_file():
                raise _StopError("error",
                                 f"{sw.name}: known_hosts {sw.known_hosts} does not exist")
            client.load_host_keys(str(sw.known_hosts))  # read only: never saved back
        else:
            client.load_system_host_keys()
    except (OSError, paramiko.SSHException, paramiko.hostkeys.InvalidHostKey) as exc:
        raise _StopError("error", f"{sw.name}: cannot read {keys}: {type(exc).__name__}"
                         ) from None
    try:
        client.connect(
            sw.host, port=sw.port, username=sw.user, password=password,
            key_filename=str(sw.key_file) if sw.key_file else None,
            timeout=sw.timeout_s, banner_timeout=sw.timeout_s, auth_timeout=sw.timeout_s,
            # Only what the switch's table configures: not the agent, not ~/.ssh/id_*.
            allow_agent=False, look_for_keys=False)
    except (paramiko.SSHException, OSError) as exc:
        transport = client.get_transport()
        cause = transport.get_exception() if transport is not None else None
        status, detail = classify_login(cause or exc, where, keys, sw.timeout_s)
        raise _StopError(_LOGIN.get(status, "error"), detail) from None


# What a failed login is recorded as (the host statuses it can be; the rest is "error").
_LOGIN: dict[str, Status] = {"timeout": "timeout", "auth_failed": "auth_failed",
                             "host_key_mismatch": "host_key_mismatch"}


def _events(client: paramiko.SSHClient, sw: SwitchSsh) -> str:
    command = check_command(SHOW_EVENTS)
    where = f"{sw.host}: {command!r}"
    try:
        _, stdout, _ = client.exec_command(command, timeout=sw.timeout_s)
        code, out, err = read_channel(stdout.channel, _limits(sw), where)
    except BoundExceededError as exc:
        raise _StopError(exc.status, str(exc)) from None
    except CommandTimeoutError as exc:
        raise _StopError("timeout", str(exc)) from None
    except (TimeoutError, paramiko.SSHException, OSError, EOFError) as exc:
        raise _StopError("error", f"{where}: {type(exc).__name__}") from None
    if code != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        first = said[0][:DETAIL_MAX] if said else ""
        raise _StopError("error", f"{where}: exit {code}" + (f": {first!r}" if first else ""))
    return out.decode("utf-8", "replace")


def _redact(text: str, password: str | None) -> str:
    return text.replace(password, "***") if password else text


def collect_nvos(sw: SwitchSsh) -> NvosCollection:
    """Connect, read the event table, disconnect. Never raises."""
    password: str | None = None
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        if sw.password is None and sw.key_file is None:
            raise _StopError("error", f"{sw.name}: neither password nor key_file is set")
        password = sw.password.value() if sw.password else None
        _connect(client, sw, password)
        text = _events(client, sw)
        result = NvosCollection(sw.name, "ok", f"{len(text)} bytes of events", text)
    except _StopError as exc:
        result = NvosCollection(sw.name, exc.status, exc.detail)
    except AuditorError as exc:  # ConfigError: the password's variable is not set
        result = NvosCollection(sw.name, "error", str(exc))
    finally:
        client.close()
    # paramiko never puts a password in a message; this makes sure no message ever does.
    result = NvosCollection(result.name, result.status, _redact(result.detail, password),
                            result.events)
    log.info("nvos %s: %s %s", sw.name, result.status, result.detail)
    return result


def collect_nvos_switches(switches: Sequence[SwitchSsh], concurrency: int = 8
                          ) -> list[NvosCollection]:
    """Every switch's table, in parallel threads; results in input order."""
    return each_switch(switches, collect_nvos,
                       lambda sw, detail: NvosCollection(sw.name, "error", detail),
                       concurrency, "nvos")
