"""Start and stop a real Net-SNMP snmpd on 127.0.0.1 that serves ifmib_agent.py's fake switch.

Used by tests/test_snmp.py and benchmarks/bench_snmp.py. Only processes started here are
signalled, by pid.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AGENT = Path(__file__).resolve().parent / "ifmib_agent.py"
SNMPD = "/usr/sbin/snmpd"
SUBTREES = (".1.3.6.1.2.1.2.2", ".1.3.6.1.2.1.31.1.1", ".1.3.6.1.4.1.33049.3.1.1")


def snmpd_path() -> str | None:
    found = shutil.which("snmpd") or (SNMPD if Path(SNMPD).exists() else None)
    return found


def unavailable_reason() -> str | None:
    if snmpd_path() is None:
        return "Net-SNMP snmpd is not installed (apt-get install snmpd)"
    return None


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class V3User:
    name: str
    auth: str  # SHA passphrase
    priv: str  # AES passphrase
    view: str | None = None  # limit the user to this subtree (e.g. mib-2 only)


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL snmpd if the test process dies without cleanup."""
    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):  # not Linux: stop() is the only guard
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _tlv(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 128:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def _probe_packet(community: str) -> bytes:
    """A hand-built SNMPv2c GET sysUpTime.0: readiness must not depend on the code under test."""
    varbind = _tlv(0x30, bytes.fromhex("06082b06010201010300") + b"\x05\x00")
    pdu = _tlv(0xA0, _tlv(0x02, b"\x01") + _tlv(0x02, b"\x00") + _tlv(0x02, b"\x00")
               + _tlv(0x30, varbind))
    return _tlv(0x30, _tlv(0x02, b"\x01") + _tlv(0x04, community.encode()) + pdu)


def _uptime_ticks(answer: bytes) -> int | None:
    """The TimeTicks value of a GET sysUpTime.0 response (tag 0x43 after the OID), if any."""
    at = answer.find(bytes.fromhex("06082b06010201010300"))
    if at < 0 or at + 12 > len(answer) or answer[at + 10] != 0x43:
        return None
    size = answer[at + 11]
    if size > 5 or at + 12 + size > len(answer):
        return None
    return int.from_bytes(answer[at + 12:at + 12 + size], "big")


class Snmpd:
    """One snmpd process; `communities` are v2c read-only, `users` v3 authPriv (SHA/AES)."""

    def __init__(self, workdir: Path, *, communities: tuple[str, ...] = ("public",),
                 users: tuple[V3User, ...] = (), ports: int = 36,
                 python: str = sys.executable) -> None:
        if not communities:
            raise ValueError("at least one community (the readiness probe uses it)")
        self.workdir = workdir
        self.communities = communities
        self.users = users
        self.ports = ports
        self.python = python
        self.control = workdir / "control.json"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._state: dict[str, dict[str, Any]] = {}
        self.agent_start: float | None = None  # wall time of sysUpTime 0, from the probe

    def _conf(self) -> str:
        lines = [f"rocommunity {c} 127.0.0.1" for c in self.communities]
        for u in self.users:
            lines.append(f'createUser {u.name} SHA "{u.auth}" AES "{u.priv}"')
            lines.append(f"rouser {u.name} priv" + (f" {u.view}" if u.view else ""))
        lines += ["sysName fake-ib-switch", "sysDescr fabric-auditor test agent"]
        # pass_persist splits the command on blanks: none of these paths may contain one.
        for base in SUBTREES:
            lines.append(f"pass_persist {base} {self.python} {AGENT} {base} "
                         f"--ports {self.ports} --control {self.control}")
        return "\n".join(lines) + "\n"

    def start(self, ready_s: float = 15.0) -> Snmpd:
        binary = snmpd_path()
        if binary is None:
            raise RuntimeError(unavailable_reason())
        if " " in f"{self.python}{AGENT}{self.workdir}":
            raise RuntimeError("pass_persist cannot run a path with a blank in it")
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "persist").mkdir(exist_ok=True)
        conf = self.workdir / "snmpd.conf"
        conf.write_text(self._conf())
        self._write_control()
        env = dict(os.environ, SNMP_PERSISTENT_DIR=str(self.workdir / "persist"), MIBS="")
        last = ""
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = free_udp_port()
            log = (self.workdir / "snmpd.log").open("wb")
            # -C: no system snmpd.conf; -I: built-in IF-MIB handlers off, so our
            # pass_persist registrations own ifTable/ifXTable.
            self.proc = subprocess.Popen(
                [binary, "-f", "-Lo", "-C", "-c", str(conf),
                 "-I", "-ifTable,ifXTable,ifStack,interfaces",
                 "-p", str(self.workdir / "snmpd.pid"), f"udp:127.0.0.1:{self.port}"],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent)
            log.close()
            try:
                self._wait_ready(ready_s)
                return self
            except RuntimeError as exc:
                last = str(exc)
                self.stop()
        raise RuntimeError(f"snmpd did not start: {last}")

    def _wait_ready(self, deadline_s: float) -> None:
        assert self.proc is not None
        packet = _probe_packet(self.communities[0])
        t0 = time.monotonic()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(0.05)
            while time.monotonic() - t0 < deadline_s:
                if self.proc.poll() is not None:
                    tail = (self.workdir / "snmpd.log").read_text(errors="replace")[-400:]
                    raise RuntimeError(f"exited rc={self.proc.returncode}: {tail}")
                s.sendto(packet, ("127.0.0.1", self.port))
                try:
                    answer = s.recv(4096)
                except TimeoutError:
                    continue
                ticks = _uptime_ticks(answer)
                if ticks is not None:
                    # snmpd counts sysUpTime from the end of its start-up, not from its
                    # process start (the backend's fallback): on a loaded machine the two
                    # differ by more than a second, and every ifLastChange would be off.
                    self.agent_start = time.time() - ticks / 100
                    self._write_control()
                return
        raise RuntimeError(f"no answer on 127.0.0.1:{self.port} in {deadline_s:.0f} s")

    def children(self) -> list[int]:
        """pass_persist backends of this snmpd (read from its own /proc entry)."""
        return [] if self.proc is None else _children_of(self.proc.pid)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        kids = [] if proc.poll() is not None else _children_of(proc.pid)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # The backends exit on EOF when snmpd's pipes close; make sure of it by pid.
        deadline = time.monotonic() + 2
        for pid in kids:
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if alive(pid):
                os.kill(pid, signal.SIGKILL)

    def set_port(self, index: int, **fields: Any) -> None:
        """Change how port `index` looks, e.g. set_port(7, oper=2, changed_at=time.time())."""
        self._state.setdefault(str(index), {}).update(fields)
        self._write_control()

    def reset(self) -> None:
        self._state = {}
        self._write_control()

    def _write_control(self) -> None:
        # Atomic replace: the backend re-reads on an inode/mtime change and never sees half a file.
        tmp = self.control.with_suffix(".tmp")
        control: dict[str, Any] = {"ports": self._state}
        if self.agent_start is not None:
            control["agent_start"] = self.agent_start
        tmp.write_text(json.dumps(control))
        tmp.replace(self.control)

    def __enter__(self) -> Snmpd:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _children_of(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
