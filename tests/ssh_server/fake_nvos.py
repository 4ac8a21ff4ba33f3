"""An in-process SSH server on 127.0.0.1 that answers exec requests as an NVOS switch's login
shell would: a command it knows gets its canned answer on stdout and exit status 0, any other
`nv: command not found`-style stderr and 1. Host key, password and public-key auth and the
record of what a client sent are FakeOnyx's (tests/ssh_server/fake_onyx.py).

    with FakeNvos({"nv show system events -o json": "{...}"}, password="pw") as sw: ...
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import paramiko

from tests.ssh_server.fake_onyx import FakeOnyx, Stream, _Iface


class _ExecIface(_Iface):
    def __init__(self, server: FakeOnyx) -> None:
        super().__init__(server)
        self.command: str | None = None
        self.asked = threading.Event()

    def check_channel_exec_request(self, channel: Any, command: bytes) -> bool:
        self.command = command.decode(errors="replace")
        with self.server.record.lock:
            self.server.record.commands.append(self.command)
        self.asked.set()
        return True


class FakeNvos(FakeOnyx):
    def _serve(self, conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        self._transports.append(transport)
        transport.add_server_key(self.host_key)
        iface = _ExecIface(self)
        try:
            transport.start_server(server=iface)
            chan = transport.accept(10)
            if chan is None or not iface.asked.wait(10) or iface.command is None:
                return
            answer: str | Stream | None = self.responses.get(iface.command)
            if answer is None:
                chan.sendall_stderr(f"Error: unknown command {iface.command[:40]!r}\n".encode())
                chan.send_exit_status(1)
            elif callable(answer):
                answer(chan, self._stop)
                return
            else:
                chan.sendall(answer.encode())
                chan.send_exit_status(0)
            chan.shutdown_write()
            # Closing the transport at once could drop the exit status on its way: wait for
            # the client to close the channel (it does once it has read everything).
            for _ in range(1000):
                if chan.closed or self._stop.wait(0.01):
                    break
            chan.close()
        except (paramiko.SSHException, OSError, EOFError):
            return  # client hung up or refused our host key: expected in tests
        finally:
            transport.close()
