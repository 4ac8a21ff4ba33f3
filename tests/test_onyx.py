"""Onyx / MLNX-OS switch collection: the parsers (their fixtures run in tests/test_fixtures.py),
then netmiko against a real SSH server.

Fixture provenance (see research notes: switch/README.md, section 5):
* onyx_transceiver/: block shape from the MLNX-OS user manual, "InfiniBand Interface" page
  (`show interfaces ib 1/36 transceiver` -> `Slot 1 port 36 state` + `key : value` lines), with
  our own part and serial numbers. `Port 1/2/1 state` headers, tab-padded keys and
  `Cable is not present` follow the Onyx *Ethernet* transceiver output (as parsed by the NOC
  project's Mellanox.Onyx.get_inventory script); they are assumed, not seen, for IB.
* onyx_interfaces_ib_status/: no verbatim capture is public. The column set follows the shaped
  table in the reference's fake_onyx_cli.py; port names follow the manual's split-port and
  Quantum-2 notation (x/y/z, asic/cage/port, modular 1/1/5/1).
The SSH tests run an in-process paramiko server (tests/ssh_server/fake_onyx.py) on 127.0.0.1
that answers with these fixtures.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest

from auditor.collect.onyx import (
    SHOW_IB_STATUS,
    SHOW_VERSION,
    SwitchCollection,
    SwitchSsh,
    check_command,
    collect_switch,
    collect_switches,
    transceiver_command,
)
from auditor.config import Secret
from auditor.errors import CollectError, ParseError
from auditor.parse.onyx import parse_interfaces_ib_status, parse_transceivers
from tests.conftest import FIXTURES, need
from tests.ssh_server.fake_onyx import FakeOnyx, SilentListener

# --- parsers --------------------------------------------------------------------------------


HEADER = ("Interface      Description    Speed                 Current line rate   "
          "Logical port state   Physical port state\n"
          "---------      -----------    ---------             -----------------   "
          "------------------   -------------------\n")
UP = "IB1/1          N/A            HDR - 4X 50.0 Gbps    200.0 Gbps          Active   LinkUp\n"


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        ("", 0, "no 'Interface"),
        ("\n\n", 0, "no 'Interface"),
        (UP, 1, "header"),  # a row before the header: not this command's output
        (HEADER + UP + UP, 4, "listed twice"),
        (HEADER + UP + "IB1/2          N/A            HDR - 4X 50.0 Gbps\n", 4, "row"),
        (HEADER + "Eth1/1   N/A   N/A   N/A   Down   Polling\n", 3, "row"),
        (HEADER + "Warning: High power transceiver is not supported\n", 3, "row"),
        (HEADER + "IB1/1  N/A  HDR - 4X 50.0 Gbps  200.0 Gbps  Active  Link Up\n", 3, "row"),
        ("% Unrecognized command \"interfaces\".\n", 1, "header"),
    ],
)
def test_status_errors(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_interfaces_ib_status(text)
    assert err.value.kind == "onyx-ib-status"
    assert err.value.line_no == line_no
    assert reason in err.value.reason


BLOCK = "Slot 1 port 2 state\n  identifier : QSFP56\n  serial number : MT0000\n"


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        ("", 0, "empty"),
        ("  vendor : Mellanox\n", 1, "header"),
        (BLOCK + "  vendor Mellanox\n", 4, "key : value"),
        (BLOCK + "  serial number : MT0001\n", 4, "repeated"),
        (BLOCK + "  Cable is not present\n", 4, "not present"),
        ("Slot 1 port 3 state\n  Cable is not present\n  vendor : X\n", 3, "no module"),
        ("Slot 1 port 3 state\nSlot 1 port 4 state\n  Cable is not present\n", 1, "no fields"),
        (BLOCK + BLOCK, 4, "listed twice"),
    ],
)
def test_transceiver_errors(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_transceivers(text)
    assert err.value.kind == "onyx-transceiver"
    assert err.value.line_no == line_no
    assert reason in err.value.reason


@pytest.mark.parametrize("parse", [parse_interfaces_ib_status, parse_transceivers])
def test_binary_garbage(parse: Any) -> None:
    with pytest.raises(ParseError) as err:
        parse(bytes(range(256)).decode("latin-1") * 3)
    assert err.value.line_no == 1


# --- allowlist ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cmd",
    [SHOW_VERSION, SHOW_IB_STATUS, "show interfaces ib 1/17 transceiver",
     "show interfaces ib 1/1/2 transceiver"],
)
def test_allowlist_accepts_read_only_commands(cmd: str) -> None:
    assert check_command(cmd) == cmd


@pytest.mark.parametrize(
    "cmd",
    [
        "configure terminal", "reload", "show running-config", "enable",
        "show interfaces ib 1/1 transceiver | json-print",
        "show interfaces ib 1/1 transceiver ; reload", "show interfaces ib status\nreload",
        "show  interfaces ib status", "sh int ib status", "clear counters",
        "show interfaces ib 1/x transceiver",
    ],
)
def test_allowlist_refuses_everything_else(cmd: str) -> None:
    with pytest.raises(CollectError, match="allowlist"):
        check_command(cmd)


def test_transceiver_command_validates_the_port() -> None:
    assert transceiver_command("IB1/1/2") == "show interfaces ib 1/1/2 transceiver"
    with pytest.raises(CollectError):
        transceiver_command("IB1/1 | json-print")


# --- real SSH -------------------------------------------------------------------------------

# Random per run, so finding it anywhere in a result can only mean it leaked.
PASSWORD = "onyx-" + secrets.token_urlsafe(16)
PW_ENV = "AUDITOR_TEST_ONYX_PASSWORD"
STATUS_FIXTURE = FIXTURES / "onyx_interfaces_ib_status" / "split_ports_and_long_description.txt"
XCVR_FIXTURE = FIXTURES / "onyx_transceiver" / "split_ports_and_no_module.txt"
VERSION = ("Product name:      Onyx\nProduct release:   3.9.3202\nProduct model:     x86onie\n"
           "Host ID:           B8599F00AA01\nSystem serial num: MT2034X07777\n")
# netmiko's own session set-up; everything else must be on the allowlist.
SESSION = {"enable", "no cli session paging enable", "terminal width 511", "exit"}


def _blocks(text: str) -> dict[str, str]:
    parts = re.split(r"\n(?=(?:Slot \d+ port \d+|Port [\d/]+) state\n)", text.strip("\n"))
    return {parse_transceivers(p)[0].port: p + "\n" for p in parts}


def _responses() -> dict[str, str]:
    status = STATUS_FIXTURE.read_text()
    blocks = _blocks(XCVR_FIXTURE.read_text())
    # Split ports IB1/1/1 and IB1/1/2 answer with their cage's block (Slot 1 port 1): the
    # collector must still file each under the port it asked about.
    per_port = {"IB1/1/1": blocks["IB1/1"], "IB1/1/2": blocks["IB1/1"],
                "IB1/2/1": blocks["IB1/2/1"], "IB1/2/2": blocks["IB1/2/2"],
                "IB1/3": blocks["IB1/3"]}
    return {SHOW_VERSION: VERSION, SHOW_IB_STATUS: status,
            **{transceiver_command(p): t for p, t in per_port.items()}}


def _start(responses: dict[str, str], **kw: Any) -> FakeOnyx:
    try:
        return FakeOnyx(responses, **kw).start()
    except OSError as exc:
        need(f"cannot run an SSH server on 127.0.0.1: {exc}")
        raise


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOnyx]:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    server = _start(_responses(), password=PASSWORD)
    yield server
    server.stop()


@pytest.fixture
def known_hosts(tmp_path: Path, switch: FakeOnyx) -> Path:
    path = tmp_path / "known_hosts"
    path.write_text(switch.known_hosts_line())
    return path


def _sw(server_port: int, known: Path | None, **kw: Any) -> SwitchSsh:
    args: dict[str, Any] = {"name": "leaf01", "host": "127.0.0.1", "port": server_port,
                            "user": "admin", "password": Secret(f"env:{PW_ENV}"),
                            "known_hosts": known, "timeout_s": 5.0}
    args.update(kw)
    return SwitchSsh(**args)


def _no_password(result: SwitchCollection) -> None:
    assert PASSWORD not in repr(result)
    assert PASSWORD not in result.detail
    assert all(PASSWORD not in v for v in result.raw.values())


@pytest.mark.ssh
def test_collect_ok(switch: FakeOnyx, known_hosts: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # netmiko and paramiko debug logs included
    before = known_hosts.read_bytes()
    result = collect_switch(_sw(switch.port, known_hosts))
    assert result.status == "ok", result.detail
    assert list(result.interfaces) == parse_interfaces_ib_status(STATUS_FIXTURE.read_text())
    assert [(t.port, t.present) for t in result.transceivers] == [
        ("IB1/1/1", True), ("IB1/1/2", True), ("IB1/2/1", True), ("IB1/2/2", False),
        ("IB1/3", False)]
    assert result.transceivers[0].serial_number == "MT2120FT01234"
    assert set(result.raw) == {SHOW_VERSION, SHOW_IB_STATUS,
                               *(transceiver_command(i.port) for i in result.interfaces)}
    assert "Product release:   3.9.3202" in result.raw[SHOW_VERSION]
    sent = set(switch.record.commands)
    assert sent - SESSION == set(result.raw), "only allowlisted commands were sent"
    assert not any(c.startswith(("conf", "write", "reload", "clear")) for c in sent)
    assert known_hosts.read_bytes() == before
    _no_password(result)
    assert PASSWORD not in caplog.text


@pytest.mark.ssh
def test_key_file_auth(switch: FakeOnyx, known_hosts: Path, tmp_path: Path) -> None:
    key = paramiko.ECDSAKey.generate()
    key.write_private_key_file(str(tmp_path / "id_ecdsa"))
    switch.authorized_key = key
    result = collect_switch(_sw(switch.port, known_hosts, password=None,
                                key_file=tmp_path / "id_ecdsa"))
    assert result.status == "ok", result.detail
    assert [a for a in switch.record.auth_attempts if a[1] == "password"] == []


@pytest.mark.ssh
def test_wrong_password(switch: FakeOnyx, known_hosts: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUDITOR_TEST_ONYX_WRONG", PASSWORD + "-wrong")
    result = collect_switch(_sw(switch.port, known_hosts,
                                password=Secret("env:AUDITOR_TEST_ONYX_WRONG")))
    assert result.status == "auth_failed", result.detail
    assert "admin" in result.detail
    assert PASSWORD not in repr(result)
    assert switch.record.commands == []


@pytest.mark.ssh
@pytest.mark.parametrize("entry", ["other-host", "changed-key"])
def test_host_key_not_trusted(switch: FakeOnyx, tmp_path: Path, entry: str) -> None:
    other = paramiko.ECDSAKey.generate()
    host = "[10.0.0.9]:22" if entry == "other-host" else f"[127.0.0.1]:{switch.port}"
    known = tmp_path / "known_hosts"
    known.write_text(f"{host} {other.get_name()} {other.get_base64()}\n")
    before, mtime = known.read_bytes(), known.stat().st_mtime_ns
    result = collect_switch(_sw(switch.port, known))
    assert result.status == "host_key_mismatch", result.detail
    assert ("not in" if entry == "other-host" else "does not match") in result.detail
    assert switch.record.auth_attempts == [], "no credentials may be sent to an unverified host"
    assert switch.record.commands == []
    assert known.read_bytes() == before and known.stat().st_mtime_ns == mtime
    assert not list(tmp_path.glob("known_hosts*.tmp")) and len(list(tmp_path.iterdir())) == 1
    _no_password(result)


@pytest.mark.ssh
def test_missing_known_hosts_file_is_not_created(switch: FakeOnyx, tmp_path: Path) -> None:
    result = collect_switch(_sw(switch.port, tmp_path / "nope"))
    assert result.status == "error" and "known_hosts" in result.detail
    assert not (tmp_path / "nope").exists()
    assert switch.record.auth_attempts == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.ssh
def test_closed_port_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    known = tmp_path / "known_hosts"
    known.write_text("")
    t0 = time.monotonic()
    result = collect_switch(_sw(_closed_port(), known))
    assert result.status == "error", result.detail
    assert "refused" in result.detail
    assert time.monotonic() - t0 < 3


@pytest.mark.ssh
def test_silent_server_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    known = tmp_path / "known_hosts"
    known.write_text("")
    with SilentListener() as silent:
        t0 = time.monotonic()
        result = collect_switch(_sw(silent.port, known, timeout_s=1.0))
    assert result.status == "timeout", result.detail
    assert time.monotonic() - t0 < 5


@pytest.mark.ssh
def test_unparseable_output_is_parse_failed(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    bad = {**_responses(), SHOW_IB_STATUS: HEADER + "IB1/1   this is not a status row\n"}
    server = _start(bad, password=PASSWORD)
    try:
        known = tmp_path / "known_hosts"
        known.write_text(server.known_hosts_line())
        result = collect_switch(_sw(server.port, known))
    finally:
        server.stop()
    assert result.status == "parse_failed", result.detail
    assert "leaf01:show interfaces ib status:3" in result.detail
    assert result.raw[SHOW_IB_STATUS].startswith("Interface")
    _no_password(result)


@pytest.mark.ssh
def test_one_dead_switch_does_not_stop_the_rest(switch: FakeOnyx, known_hosts: Path) -> None:
    dead = _sw(_closed_port(), known_hosts, name="leaf02")
    results = collect_switches([dead, _sw(switch.port, known_hosts)], concurrency=2)
    assert [r.name for r in results] == ["leaf02", "leaf01"]
    assert results[0].status == "error" and results[1].status == "ok"
    assert len(results[1].transceivers) == 5
    for r in results:
        _no_password(r)


def test_collect_switches_edge_cases() -> None:
    assert collect_switches([]) == []
    with pytest.raises(CollectError):
        collect_switches([], concurrency=0)


@pytest.mark.ssh
def test_sweep_reads_the_switch_and_keys_parts_to_fabric_ports(
        switch: FakeOnyx, known_hosts: Path, tmp_path: Path) -> None:
    from auditor.config import load
    from auditor.demo import build_demo
    from auditor.ops.switches import collect_cli
    from auditor.store import Store

    db = tmp_path / "a.duckdb"
    build_demo(db)  # the fabric has a switch named leaf01 with ports 1..12
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(
        "[[switches]]\nname = \"leaf01\"\nhost = \"127.0.0.1\"\n"
        f"ssh = {{ user = \"admin\", port = {switch.port}, password = \"env:{PW_ENV}\", "
        f"known_hosts = \"{known_hosts}\", timeout_s = 5 }}\n"
        "[[switches]]\nname = \"leaf02\"\nhost = \"127.0.0.1\"\n"
        f"ssh = {{ user = \"admin\", port = {_closed_port()}, password = \"env:{PW_ENV}\", "
        f"known_hosts = \"{known_hosts}\", timeout_s = 2 }}\n")
    settings = load(cfg, db)
    with Store(db) as store:
        outcomes = {o.device: o.status for o in collect_cli(store, settings)}
        parts = {(t["device"], t["port_name"]): t for t in store.transceivers()}
        status = {(s["device"], s["collector"]): s for s in store.device_status()}
    assert outcomes == {"leaf01": "ok", "leaf02": "error"}
    split = parts[("leaf01", "IB1/1/1")]  # split port 1/1/1 is IB port 1 on Quantum
    assert (split["guid"], split["port"], split["serial_number"]) == (
        "0xb8599f0300200001", 1, "MT2120FT01234")
    empty = parts[("leaf01", "IB1/3")]
    assert (empty["port"], empty["present"], empty["serial_number"]) == (3, False, None)
    assert status[("leaf02", "ssh")]["status"] == "error"
    assert PASSWORD not in json.dumps(list(status.values()), default=str)
