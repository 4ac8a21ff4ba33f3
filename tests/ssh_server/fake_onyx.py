"""An in-process SSH server on 127.0.0.1 that behaves like the Onyx CLI as far as netmiko's
`mellanox_mlnxos` driver cares: `<host> [standalone: master] >` prompt, `enable` -> `#`,
paging/width commands accepted silently, canned `show` answers, `% Unrecognized command` for
the rest. It echoes typed characters and ends lines with CR LF, as a pty with ONLCR would.

Its host key is generated per instance (ECDSA, fast); `known_hosts_line()` gives the entry a
client should trust. Password auth checks one user/password; public-key auth accepts one key.
Every auth attempt and every CLI line is recorded so tests can prove what a client sent.

    with FakeOnyx({"show version": "..."}, password="pw") as sw: ... sw.port ...
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import paramiko

BANNER = "\r\nNVIDIA Onyx Switch Management\r\n\r\n"
_SILENT = frozenset({"", "no cli session paging enable", "terminal length 999",
                     "terminal width 511", "terminal length 0"})


def _accept_until(sock: socket.socket, stop: threading.Event,
                  take: Callable[[socket.socket], object]) -> None:
    """Hand every connection to `take` until `stop` is set or the socket is closed (the
    socket has a short timeout, so `stop` is seen)."""
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        take(conn)


@dataclass
class _Record:
    auth_attempts: list[tuple[str, str]] = field(default_factory=list)  # (user, method)
    commands: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Iface(paramiko.ServerInterface):  # type: ignore[misc]
    def __init__(self, server: FakeOnyx) -> None:
        self.server = server
        self.shell = threading.Event()

    def get_allowed_auths(self, username: str) -> str:
        return "password,publickey"

    def check_auth_password(self, username: str, password: str) -> int:
        with self.server.record.lock:
            self.server.record.auth_attempts.append((username, "password"))
        ok = username == self.server.user and password == self.server.password
        return int(paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED)

    def check_auth_publickey(self, username: str, key: Any) -> int:
        with self.server.record.lock:
            self.server.record.auth_attempts.append((username, "publickey"))
        wanted = self.server.authorized_key
        ok = (username == self.server.user and wanted is not None
              and key.get_base64() == wanted.get_base64())
        return int(paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED)

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return int(paramiko.OPEN_SUCCEEDED)
        return int(paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED)

    def check_channel_pty_request(self, *args: Any) -> bool:
        return True

    def check_channel_window_change_request(self, *args: Any) -> bool:
        return True

    def check_channel_shell_request(self, channel: Any) -> bool:
        self.shell.set()
        return True


# A streamed answer: called with the channel and the server's stop event, it sends as long as
# it likes (an answer without end, or one that trickles); the session ends with it.
Stream = Callable[[Any, threading.Event], None]


def endless(chan: Any, stop: threading.Event) -> None:
    """An answer that never ends, as fast as the client reads it."""
    line = b"x" * 1023 + b"\r\n"
    while not stop.is_set():
        chan.sendall(line * 64)


def trickle(chan: Any, stop: threading.Event) -> None:
    """An answer that never ends, one byte every half second."""
    while not stop.wait(0.5):
        chan.sendall(b"x")


class FakeOnyx:
    def __init__(self, responses: dict[str, str | Stream], *, user: str = "admin",
                 password: str | None = None, authorized_key: Any = None,
                 hostname: str = "ib-leaf-01", login: Stream | None = None) -> None:
        self.responses = dict(responses)
        self.login = login  # instead of the banner and the first prompt
        self.user, self.password, self.authorized_key = user, password, authorized_key
        self.hostname = hostname
        self.host_key = paramiko.ECDSAKey.generate()
        self.record = _Record()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)  # set before the thread runs: stop() may close it first
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._transports: list[Any] = []
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"fake-onyx-{self.port}")

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key.get_name()} {self.host_key.get_base64()}\n"

    def start(self) -> FakeOnyx:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()
        for t in list(self._transports):
            t.close()
        self._thread.join(5)

    def __enter__(self) -> FakeOnyx:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        _accept_until(self._sock, self._stop, lambda conn: threading.Thread(
            target=self._serve, args=(conn,), daemon=True).start())

    def _serve(self, conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        self._transports.append(transport)
        transport.add_server_key(self.host_key)
        iface = _Iface(self)
        try:
            transport.start_server(server=iface)
            chan = transport.accept(10)
            if chan is None or not iface.shell.wait(10):
                return
            self._cli(chan)
        except (paramiko.SSHException, OSError, EOFError):
            return  # client hung up or refused our host key: expected in tests
        finally:
            transport.close()

    def _prompt(self, mode: str) -> str:
        tail = {"user": ">", "enable": "#", "config": "(config) #"}[mode]
        return f"{self.hostname} [standalone: master] {tail} "

    def _cli(self, chan: Any) -> None:
        mode = "user"
        if self.login is not None:
            self.login(chan, self._stop)
            return
        chan.sendall((BANNER + self._prompt(mode)).encode())
        line, last = bytearray(), 0
        while not self._stop.is_set():
            data = chan.recv(4096)
            if not data:
                return
            for byte in data:
                if byte in (10, 13):
                    if byte == 10 and last == 13:  # CR LF from the client is one Enter
                        last = byte
                        continue
                    last = byte
                    chan.sendall(b"\r\n")
                    mode_or_none = self._command(chan, line.decode(errors="replace"), mode)
                    line.clear()
                    if mode_or_none is None:
                        chan.close()
                        return
                    mode = mode_or_none
                    chan.sendall(self._prompt(mode).encode())
                    continue
                last = byte
                if byte in (8, 127):
                    del line[-1:]
                else:
                    line.append(byte)
                    chan.sendall(bytes([byte]))

    def _command(self, chan: Any, line: str, mode: str) -> str | None:
        cmd = " ".join(line.split())
        if cmd:
            with self.record.lock:
                self.record.commands.append(cmd)
        if cmd in ("exit", "quit", "logout"):
            return "enable" if mode == "config" else None
        if cmd == "enable":
            return "enable" if mode == "user" else mode
        if cmd in ("configure terminal", "config terminal", "conf t"):
            return "config" if mode != "user" else mode
        if cmd in _SILENT:
            return mode
        answer = self.responses.get(cmd)
        if callable(answer):
            answer(chan, self._stop)
            return None
        if answer is not None:
            chan.sendall(answer.replace("\r\n", "\n").replace("\n", "\r\n").encode())
        else:
            word = cmd.split()[0]
            chan.sendall(f'% Unrecognized command "{word}".\r\n% Type "?" for help.\r\n'.encode())
        return mode


def answer_of(capture: str) -> str:
    """What a switch sends back for a command, from a capture whose first line is the prompt and
    command it was typed on (`cumulus@switch:~$ nv show interface swp1 transceiver`): the rest."""
    return capture.partition("\n")[2]


class SilentListener:
    """Accepts TCP connections and never says anything: a switch whose sshd is hung."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4)
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        _accept_until(self._sock, self._stop, self._held.append)

    def __enter__(self) -> SilentListener:
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(5)
        for conn in self._held:
            conn.close()
