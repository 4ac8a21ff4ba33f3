"""Run allowlisted commands locally or on a management host over SSH (paramiko).

Host keys are checked against known_hosts and never added automatically: a changed key on the
management host is exactly the situation in which we must not send credentials.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import paramiko

from auditor.collect.bounded import Limits, read_channel, run_process
from auditor.collect.commands import check
from auditor.config import SweepSettings
from auditor.errors import CollectError


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str


class Runner(Protocol):
    where: str

    def run(self, argv: list[str]) -> CommandResult: ...

    def close(self) -> None: ...


def sweep_limits(settings: SweepSettings) -> Limits:
    """The bounds of every fabric tool the sweep runs ([sweep] max_output_mb,
    command_timeout_s; timeout_s of silence)."""
    return Limits.of(settings.max_output_mb, settings.command_timeout_s, settings.timeout_s,
                     "[sweep]")


class LocalRunner:
    """Runs the tools on this machine (the auditor sits on a host with an HCA)."""

    where = "local"

    def __init__(self, env: dict[str, str] | None = None,
                 timeout_s: float = SweepSettings().timeout_s,
                 limits: Limits | None = None) -> None:
        self._env = {**os.environ, **(env or {})}
        self._limits = limits or sweep_limits(SweepSettings(timeout_s=timeout_s))

    def run(self, argv: list[str]) -> CommandResult:
        """Run one allowlisted tool within the limits; CollectError when it cannot finish
        (BoundExceededError when it went past one: it is killed, with what it started)."""
        check(argv)
        try:
            code, out, err = run_process(argv, self._env, self._limits, f"local: {argv[0]}")
        except FileNotFoundError:
            raise CollectError(f"local: {argv[0]}: command not found "
                               "(install infiniband-diags)") from None
        except OSError as exc:
            raise CollectError(f"local: {argv[0]}: {exc.strerror or exc}") from None
        return CommandResult(tuple(argv), code, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"))

    def close(self) -> None:
        return None


class SshRunner:
    """Runs the tools on the management host named in the config."""

    def __init__(self, settings: SweepSettings) -> None:
        if not settings.host:
            raise CollectError("sweep.host is not set")
        self.where = settings.host
        self._settings = settings
        self._client = paramiko.SSHClient()
        self._client.set_missing_host_key_policy(paramiko.RejectPolicy())
        if settings.known_hosts is not None:
            try:
                self._client.load_host_keys(str(settings.known_hosts))
            except OSError as exc:
                raise CollectError(f"{settings.host}: cannot read known_hosts "
                                   f"{settings.known_hosts}: {exc.strerror}") from None
        else:
            self._client.load_system_host_keys()
        password = settings.password.value() if settings.password else None
        try:
            self._client.connect(
                settings.host, port=settings.port, username=settings.user,
                key_filename=str(settings.key_file) if settings.key_file else None,
                password=password, timeout=30, banner_timeout=30, auth_timeout=30,
                allow_agent=settings.key_file is None and password is None,
                look_for_keys=settings.key_file is None and password is None,
            )
        except paramiko.BadHostKeyException:
            raise CollectError(f"{settings.host}: host key does not match known_hosts; "
                               "refusing to connect") from None
        except paramiko.SSHException as exc:
            # Messages from paramiko name the host and the problem, never the password.
            raise CollectError(f"{settings.host}:{settings.port}: ssh: {exc}") from None
        except OSError as exc:
            raise CollectError(f"{settings.host}:{settings.port}: cannot connect: "
                               f"{exc.strerror or exc}") from None

    def run(self, argv: list[str]) -> CommandResult:
        """Run one allowlisted tool within [sweep]'s limits; CollectError when it cannot
        finish (BoundExceededError when it went past one: its channel is closed)."""
        check(argv)
        command = remote_command(argv, self._settings.env, self._settings.remote_dir)
        try:
            _, stdout, _ = self._client.exec_command(command, timeout=self._settings.timeout_s)
            code, out, err = read_channel(stdout.channel, sweep_limits(self._settings),
                                          f"{self.where}: {argv[0]}")
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise CollectError(f"{self.where}: {argv[0]}: {exc}") from None
        return CommandResult(tuple(argv), code, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"))

    def close(self) -> None:
        self._client.close()


def remote_command(argv: list[str], env: dict[str, str], remote_dir: str | None) -> str:
    """The shell command line the management host runs for `argv`: every word quoted (the
    environment names too, although config.load already allows only [A-Za-z_][A-Za-z0-9_]*).
    The config is trusted: PATH or LD_PRELOAD in [sweep.env] do change what runs."""
    assignments = [f"{k}={v}" for k, v in sorted(env.items())]
    command = shlex.join(["env", *assignments, *argv] if assignments else argv)
    if remote_dir:
        command = f"cd {shlex.quote(remote_dir)} && {command}"
    return command


def runner_for(settings: SweepSettings) -> Runner:
    if settings.host in (None, "", "local"):
        return LocalRunner(settings.env, limits=sweep_limits(settings))
    return SshRunner(settings)


class UnreachableRunner:
    """Stands in for a management host that could not be reached: each fabric command fails at
    once with the connect error. The sweep goes on with what does not need that host (switch
    SNMP and CLI, compute hosts, log files)."""

    def __init__(self, where: str, error: CollectError) -> None:
        self.where = where
        self.error = error

    def run(self, argv: list[str]) -> CommandResult:
        check(argv)
        raise self.error

    def close(self) -> None:
        return None


def open_runner(settings: SweepSettings) -> Runner:
    """runner_for, but an unreachable management host is an UnreachableRunner, not an error
    (a bad config, such as an unset secret, still raises)."""
    try:
        return runner_for(settings)
    except CollectError as exc:
        return UnreachableRunner(settings.host or "local", exc)


def save_capture(folder: Path, name: str, result: CommandResult) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.txt"
    path.write_text(result.stdout, encoding="utf-8")
    if result.stderr.strip():
        (folder / f"{name}.stderr.txt").write_text(result.stderr, encoding="utf-8")
    return path
