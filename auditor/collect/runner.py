"""Run allowlisted commands locally or on a management host over SSH (paramiko).

Host keys are checked against known_hosts and never added automatically: a changed key on the
management host is exactly the situation in which we must not send credentials.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import paramiko

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


class LocalRunner:
    """Runs the tools on this machine (the auditor sits on a host with an HCA)."""

    where = "local"

    def __init__(self, env: dict[str, str] | None = None,
                 timeout_s: float = SweepSettings().timeout_s) -> None:
        self._env = {**os.environ, **(env or {})}
        self._timeout = timeout_s

    def run(self, argv: list[str]) -> CommandResult:
        check(argv)
        try:
            proc = subprocess.run(  # noqa: S603 - argv is allowlisted by check()
                argv, capture_output=True, text=True, env=self._env, timeout=self._timeout,
                check=False, stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise CollectError(f"local: {argv[0]}: command not found "
                               "(install infiniband-diags)") from None
        except subprocess.TimeoutExpired:
            raise CollectError(f"local: {argv[0]}: no answer in {self._timeout:.0f} s") from None
        return CommandResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)

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
        check(argv)
        command = remote_command(argv, self._settings.env, self._settings.remote_dir)
        try:
            _, stdout, stderr = self._client.exec_command(
                command, timeout=self._settings.timeout_s
            )
            out = stdout.read().decode("utf-8", "replace")
            err = stderr.read().decode("utf-8", "replace")
            code = stdout.channel.recv_exit_status()
        except (paramiko.SSHException, OSError) as exc:
            raise CollectError(f"{self.where}: {argv[0]}: {exc}") from None
        return CommandResult(tuple(argv), code, out, err)

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
        return LocalRunner(settings.env, settings.timeout_s)
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
