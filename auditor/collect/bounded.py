"""What one command may cost a collector: its output (bytes, stdout and stderr together) and
its time (seconds, start to finish), bounded for every way the auditor runs a command: a local
process, an SSH exec channel (the management host, each compute host) and the Onyx CLI.

Whoever has root on a host or a switch decides what its sshd answers. A per-read timeout does
not bound an answer that never ends (`yes`) or one that trickles (a byte every half second):
read to its end, either takes the sweep's memory or its night. With these bounds such a
command ends as a status of its device (`output_too_large`, `timeout`), and the sweep goes on.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import paramiko

from auditor.errors import CollectError

MIB = 1024 * 1024
_CHUNK = 64 * 1024
# The longest a reader sleeps between checks when nothing arrives: an exit status can come
# without waking the channel's pipe (paramiko sets it only for data, EOF and close).
_TICK_S = 0.5


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds of one command: `max_bytes` of output, `timeout_s` from start to finish, and
    (optionally) `idle_s`, the longest silence before it counts as not answering."""

    max_bytes: int
    timeout_s: float
    idle_s: float | None = None
    setting: str = ""  # where the bounds are configured, for messages ("[hosts]")

    @classmethod
    def of(cls, max_output_mb: float, command_timeout_s: float, idle_s: float | None,
           setting: str) -> Limits:
        return cls(max(1, int(max_output_mb * MIB)), command_timeout_s, idle_s, setting)


class CommandTimeoutError(CollectError):
    """A command gave no output or exit status for `idle_s`: it is not answering."""


class BoundExceededError(CollectError):
    """A command went past one of its Limits and was stopped: `status` says which."""

    def __init__(self, status: Literal["output_too_large", "timeout"], message: str) -> None:
        super().__init__(message)
        self.status: Literal["output_too_large", "timeout"] = status


def too_large(where: str, limits: Limits) -> BoundExceededError:
    return BoundExceededError(
        "output_too_large", f"{where}: output over {limits.max_bytes / MIB:g} MiB "
        f"({limits.setting} max_output_mb); stopped")


def too_long(where: str, limits: Limits) -> BoundExceededError:
    return BoundExceededError(
        "timeout", f"{where}: not finished within {limits.timeout_s:g} s "
        f"({limits.setting} command_timeout_s); stopped")


def _silent(where: str, limits: Limits) -> CommandTimeoutError:
    return CommandTimeoutError(f"{where}: no answer within {limits.idle_s:g} s")


def read_channel(chan: paramiko.Channel, limits: Limits, where: str
                 ) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of a command running on an SSH exec channel, read within
    `limits`; BoundExceededError or CommandTimeoutError (the channel closed) when it is not.
    Both streams are read as they come: SSH's flow-control window is the channel's, so an
    unread stderr would stall stdout."""
    start = last = time.monotonic()
    out, err = bytearray(), bytearray()
    fd = chan.fileno()  # a pipe paramiko sets when data or EOF arrives on either stream
    try:
        while True:
            got = False
            while chan.recv_ready() or chan.recv_stderr_ready():
                for ready, recv, buf in ((chan.recv_ready, chan.recv, out),
                                         (chan.recv_stderr_ready, chan.recv_stderr, err)):
                    if ready():
                        buf += recv(_CHUNK)
                        got = True
                if len(out) + len(err) > limits.max_bytes:
                    raise too_large(where, limits)
                if time.monotonic() - start > limits.timeout_s:
                    raise too_long(where, limits)
            now = time.monotonic()
            if got:
                last = now
            done = chan.eof_received or chan.exit_status_ready()
            if done and not (chan.recv_ready() or chan.recv_stderr_ready()):
                break
            if now - start > limits.timeout_s:
                raise too_long(where, limits)
            if limits.idle_s is not None and now - last > limits.idle_s:
                raise _silent(where, limits)
            waits = [start + limits.timeout_s - now, _TICK_S]
            if limits.idle_s is not None:
                waits.append(last + limits.idle_s - now)
            select.select([fd], [], [], max(0.0, min(waits)))
        # EOF came; the exit status follows it (or never, from a broken server).
        remaining = max(0.0, start + limits.timeout_s - time.monotonic())
        last_wait = remaining if limits.idle_s is None else min(remaining, limits.idle_s)
        if not chan.status_event.wait(last_wait):
            raise too_long(where, limits) if last_wait >= remaining else _silent(where, limits)
        return chan.recv_exit_status(), bytes(out), bytes(err)
    finally:
        # Also frees the pipe fileno() made (paramiko closes it only on an explicit close).
        # Stopped early, the remote command gets SIGPIPE or SIGHUP; nothing more is read.
        chan.close()


def run_process(argv: Sequence[str], env: dict[str, str], limits: Limits, where: str
                ) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of a local command read within `limits`; on a bound the
    command and everything it started (its own process group) are killed. FileNotFoundError
    when the command does not exist."""
    proc = subprocess.Popen(  # noqa: S603 - the caller passes an allowlisted argv
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, start_new_session=True)
    pipes = [pipe for pipe in (proc.stdout, proc.stderr) if pipe is not None]  # both: PIPE
    out, err = bytearray(), bytearray()
    streams = dict(zip((pipe.fileno() for pipe in pipes), (out, err), strict=True))
    start = last = time.monotonic()
    open_fds = list(streams)
    try:
        while open_fds:
            now = time.monotonic()
            if now - start > limits.timeout_s:
                raise too_long(where, limits)
            if limits.idle_s is not None and now - last > limits.idle_s:
                raise _silent(where, limits)
            waits = [start + limits.timeout_s - now]
            if limits.idle_s is not None:
                waits.append(last + limits.idle_s - now)
            ready, _, _ = select.select(open_fds, [], [], max(0.0, min(waits)))
            for fd in ready:
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    open_fds.remove(fd)
                    continue
                streams[fd] += chunk
                last = time.monotonic()
            if len(out) + len(err) > limits.max_bytes:
                raise too_large(where, limits)
        left = max(0.0, start + limits.timeout_s - time.monotonic())
        try:
            code = proc.wait(left)
        except subprocess.TimeoutExpired:
            raise too_long(where, limits) from None
        return code, bytes(out), bytes(err)
    except CollectError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise
    finally:
        for pipe in pipes:
            pipe.close()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
