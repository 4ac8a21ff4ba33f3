"""Issue #21, second look from the outside: what a hostile compute node or switch can still
cost the sweep. Each test fails on the code it was written against (redteam branch); see the
report of that review for the measurements behind each."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest

from auditor.collect.hostcmd import OPTICS_MAX, HostCollection, collect_host
from auditor.collect.onyx import SwitchSsh, collect_switch
from auditor.config import HostSettings, Secret
from tests.conftest import need
from tests.ssh_server.fake_onyx import FakeOnyx
from tests.sshd import sshd_missing, start_sshd

DEVICES, NETDEVS = 5, 16  # 80 netdevs: more than OPTICS_MAX

# The host's root decides what its sshd answers: here every RDMA device's mlxlink is missing
# (exit 127: the collector falls back to ethtool) and each device lists NETDEVS netdevs.
_HOSTILE_HOST = textwrap.dedent(f"""\
    #!{sys.executable}
    import os, sys
    cmd = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    with open(os.environ["RT_LOG"], "a") as log:
        log.write(cmd + "\\n")
    if cmd.startswith("ls -1") and cmd.endswith("/device/net"):
        print("\\n".join(f"ib{{i}}" for i in range({NETDEVS})))
    elif cmd.startswith("ls -1"):
        print("\\n".join(f"mlx5_{{i}}" for i in range({DEVICES})))
    elif cmd.startswith("mlxlink"):
        sys.exit(127)
    """)


def _visit_hostile_host(tmp_path: Path, host_script: str, **settings: Any
                        ) -> tuple[HostCollection, Path]:
    """Collect (with optics) from an sshd on 127.0.0.1 whose every command runs `host_script`;
    the collection and the log of the commands the host was sent."""
    need(sshd_missing())
    script = tmp_path / "host.py"
    script.write_text(host_script)
    script.chmod(0o755)
    log = tmp_path / "commands.log"
    # sshd passes its own environment to the forced command; RT_LOG reaches it through a
    # wrapper, since AcceptEnv is off.
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\nRT_LOG={log} exec {script}\n")
    wrapper.chmod(0o755)
    server = start_sshd(tmp_path / "sshd", forced_command=wrapper)
    try:
        host = HostSettings(names=("127.0.0.1",), user=server.user, port=server.port,
                            key_file=server.client_key, known_hosts=server.known_hosts,
                            kernel_log="none", boots="none", **settings)
        return collect_host("127.0.0.1", host, optics=True), log
    finally:
        server.stop()


@pytest.mark.ssh
def test_host_optics_reads_at_most_optics_max_netdevs_per_host(tmp_path: Path) -> None:
    """OPTICS_MAX says "devices or netdevs read per host", but the cap is per listing: a host
    that lists 64 devices of 64 netdevs each gets 4,096 `ethtool -m` commands, each allowed
    `timeout_s` of silence (30 s) or `command_timeout_s` (120 s): a host can hold a sweep
    worker for days without ever passing a bound. Measured: 64 silent mlxlink commands took
    64 x timeout_s on one host while the second host waited."""
    _, log = _visit_hostile_host(tmp_path, _HOSTILE_HOST, timeout_s=5)
    ethtool = [c for c in log.read_text().splitlines() if c.startswith("ethtool")]
    assert len(ethtool) <= OPTICS_MAX, (
        f"{len(ethtool)} ethtool commands on one host ({DEVICES} devices x {NETDEVS} netdevs)")


_SILENT_MODULES = _HOSTILE_HOST + textwrap.dedent("""\
    if cmd.startswith("ethtool"):
        import time
        time.sleep(60)
    """)


@pytest.mark.ssh
def test_host_optics_stops_after_a_module_read_that_does_not_answer(tmp_path: Path) -> None:
    """A module whose read hangs costs timeout_s once, not once per netdev."""
    result, log = _visit_hostile_host(tmp_path, _SILENT_MODULES, timeout_s=1)
    ethtool = [c for c in log.read_text().splitlines() if c.startswith("ethtool")]
    assert ethtool == ["ethtool -m ib0"]
    assert result.failed["ethtool.ib0"][0] == "timeout"


class _BannerFlood:
    """A TCP server on 127.0.0.1 that answers every connection with more than paramiko's 100
    pre-version lines, each holding terminal escapes (a host whose root runs any sshd)."""

    LINE = b"\x1b]0;PWNED\x07\x1b[2J\x1b[31mowned\xe2\x80\xae\r\n"

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        conns: list[socket.socket] = []
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            conns.append(conn)
            with contextlib.suppress(OSError):
                conn.sendall(self.LINE * 120)
        for conn in conns:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(5)


@pytest.fixture
def banner_flood() -> Iterator[_BannerFlood]:
    server = _BannerFlood()
    yield server
    server.close()


@pytest.mark.ssh
def test_sweep_console_gets_no_raw_escapes_from_a_host_banner(
        tmp_path: Path, banner_flood: _BannerFlood) -> None:
    """README, Security model: fabric text is shown inert, "the nightly run's log file and
    console get one inert line per record". `auditor nightly` does (its log handler escapes
    paramiko's records), but `auditor sweep` configures no logging: paramiko's transport thread
    logs "Indecipherable protocol version" with the host's raw line and a traceback, and
    Python's last-resort handler writes it to stderr, ESC, BEL and U+202E included."""
    key = tmp_path / "id_ecdsa"
    paramiko.ECDSAKey.generate().write_private_key_file(str(key))
    known = tmp_path / "known_hosts"
    known.write_text("")
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    config = tmp_path / "auditor.toml"
    config.write_text(textwrap.dedent(f"""\
        [store]
        db = "{tmp_path / 'a.duckdb'}"
        [sweep.env]
        PATH = "{empty_bin}"
        [hosts]
        names = ["127.0.0.1"]
        user = "root"
        port = {banner_flood.port}
        key_file = "{key}"
        known_hosts = "{known}"
        timeout_s = 3
        kernel_log = "none"
        boots = "none"
        """))
    done = subprocess.run([sys.executable, "-m", "auditor", "--config", str(config), "sweep"],
                          capture_output=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 1  # the host failed; the fabric tools are missing
    for stream in (done.stdout, done.stderr):
        assert b"\x1b" not in stream and b"\x07" not in stream and "\u202e".encode() not in stream
    assert b"Traceback" not in done.stderr


def _login_without_prompt(chan: Any, stop: threading.Event) -> None:
    """A CLI that never shows a prompt: one byte every half second."""
    while not stop.wait(0.5):
        chan.sendall(b"W")


@pytest.mark.ssh
def test_onyx_login_without_a_prompt_ends_within_its_bounds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README: the Onyx CLI is bounded by each switch's `ssh` table "(16 MiB, 120 s, login
    included)". With timeout_s = 2 and command_timeout_s = 3, a switch whose CLI never prompts
    keeps collect_switch ~32 s (netmiko's _test_channel_read loops ~20 s on its own clock, then
    disconnect()'s cleanup waits ~10 s for a prompt), and the status says "no CLI prompt within
    2 s after login". A command that trickles without a prompt likewise takes command_timeout_s
    + ~13 s (the same cleanup)."""
    monkeypatch.setenv("RT_SWITCH_PW", "pw")
    try:
        switch = FakeOnyx({}, password="pw", login=_login_without_prompt).start()
    except OSError as exc:
        need(f"cannot run an SSH server on 127.0.0.1: {exc}")
        raise
    try:
        known = tmp_path / "known_hosts"
        known.write_text(switch.known_hosts_line())
        sw = SwitchSsh(name="leaf01", host="127.0.0.1", port=switch.port, user="admin",
                       password=Secret("env:RT_SWITCH_PW"), known_hosts=known, timeout_s=2.0,
                       command_timeout_s=3.0)
        start = time.monotonic()
        result = collect_switch(sw)
        elapsed = time.monotonic() - start
    finally:
        switch.stop()
    assert result.status == "timeout"
    assert elapsed < 10, f"a 2 s / 3 s switch took {elapsed:.0f} s"


@pytest.mark.ssh
def test_host_visit_ends_at_total_timeout(tmp_path: Path) -> None:
    """[hosts] total_timeout_s bounds the whole visit: past it, no further command is sent."""
    result, log = _visit_hostile_host(tmp_path, _HOSTILE_HOST, timeout_s=5,
                                      total_timeout_s=0.001)
    assert result.status == "timeout"
    assert "total_timeout_s" in result.detail
    assert not log.exists() or log.read_text() == ""


@pytest.mark.ssh
def test_switch_visit_ends_at_total_timeout(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """[[switches]] ssh total_timeout_s: past it, no further CLI command is sent."""
    monkeypatch.setenv("RT_SWITCH_PW", "pw")
    try:
        switch = FakeOnyx({"show version": "Product name: Onyx\n"}, password="pw").start()
    except OSError as exc:
        need(f"cannot run an SSH server on 127.0.0.1: {exc}")
        raise
    try:
        known = tmp_path / "known_hosts"
        known.write_text(switch.known_hosts_line())
        sw = SwitchSsh(name="leaf01", host="127.0.0.1", port=switch.port, user="admin",
                       password=Secret("env:RT_SWITCH_PW"), known_hosts=known, timeout_s=5.0,
                       total_timeout_s=0.001)
        result = collect_switch(sw)
    finally:
        switch.stop()
    assert result.status == "timeout"
    assert "total_timeout_s" in result.detail
    assert "show version" not in switch.record.commands
