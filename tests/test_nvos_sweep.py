"""The sweep's NVOS reader (issue #24): `nv show system events -o json` over SSH from every
`[[switches]]` entry with `os = "nvos"`, against an in-process SSH server on 127.0.0.1 that
answers the exec request with an event table (tests/ssh_server/fake_nvos.py). Host keys are
checked and never added, the password never reaches a message, the answer is bounded, and the
port events land where `ingest --kind nvos-events` puts them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import paramiko
import pytest

from auditor.collect.nvos import SHOW_EVENTS, check_command, collect_nvos, collect_nvos_switches
from auditor.collect.onyx import SwitchSsh
from auditor.config import Secret, load
from auditor.errors import CollectError
from auditor.models import PortEvent
from auditor.simulate.vendor_formats import nvos_events_json
from tests.conftest import FIXTURES, need
from tests.ssh_server.fake_nvos import FakeNvos
from tests.ssh_server.fake_onyx import endless

PW_ENV = "AUDITOR_TEST_NVOS_PASSWORD"
PASSWORD = "nvos-s3cret-Pw"
TABLE = (FIXTURES / "nvos_events" / "written_show_last_etc_utc.txt").read_text()


def _start(responses: dict[str, Any], **kw: Any) -> FakeNvos:
    try:
        return FakeNvos(responses, **kw).start()  # type: ignore[return-value]
    except OSError as exc:
        need(f"cannot run an SSH server on 127.0.0.1: {exc}")
        raise


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNvos]:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    server = _start({SHOW_EVENTS: TABLE}, password=PASSWORD, hostname="nvos")
    yield server
    server.stop()


@pytest.fixture
def known_hosts(tmp_path: Path, switch: FakeNvos) -> Path:
    path = tmp_path / "known_hosts"
    path.write_text(switch.known_hosts_line())
    return path


def _sw(port: int, known: Path | None, **kw: Any) -> SwitchSsh:
    args: dict[str, Any] = {"name": "leaf01", "host": "127.0.0.1", "port": port,
                            "user": "admin", "password": Secret(f"env:{PW_ENV}"),
                            "known_hosts": known, "timeout_s": 5.0}
    return SwitchSsh(**(args | kw))


@pytest.mark.parametrize("command", [SHOW_EVENTS, "nv show system events", "nv set system",
                                     "nv show system events -o json; reboot",
                                     "nv show system events -o json | cat", "nv action reboot"])
def test_the_allowlist_is_one_read_only_command(command: str) -> None:
    if command == SHOW_EVENTS:
        assert check_command(command) == command
    else:
        with pytest.raises(CollectError, match="allowlist"):
            check_command(command)


@pytest.mark.ssh
def test_reads_the_table_and_sends_nothing_else(
        switch: FakeNvos, known_hosts: Path, caplog: pytest.LogCaptureFixture) -> None:
    before = known_hosts.read_bytes()
    with caplog.at_level(logging.DEBUG):
        result = collect_nvos(_sw(switch.port, known_hosts))
    assert result.status == "ok", result.detail
    assert result.events == TABLE
    assert switch.record.commands == [SHOW_EVENTS]
    assert known_hosts.read_bytes() == before
    assert PASSWORD not in caplog.text and PASSWORD not in repr(result)


@pytest.mark.ssh
def test_an_unknown_host_key_gets_no_password(switch: FakeNvos, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    other = paramiko.ECDSAKey.generate()  # a key, but not this switch's
    known.write_text(f"[127.0.0.1]:{switch.port} {other.get_name()} {other.get_base64()}\n")
    before = known.read_bytes()
    result = collect_nvos(_sw(switch.port, known))
    assert result.status == "host_key_mismatch", result.detail
    assert switch.record.auth_attempts == [] and switch.record.commands == []
    assert known.read_bytes() == before
    known.write_text("[127.0.0.1]:22 ssh-ed25519 not-base64\n")
    broken = collect_nvos(_sw(switch.port, known))
    assert broken.status == "error" and "cannot read" in broken.detail


@pytest.mark.ssh
def test_a_wrong_password_is_auth_failed_and_not_shown(
        switch: FakeNvos, known_hosts: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(PW_ENV, "wrong-" + PASSWORD)
    with caplog.at_level(logging.DEBUG):
        result = collect_nvos(_sw(switch.port, known_hosts))
    assert result.status == "auth_failed" and switch.record.commands == []
    assert PASSWORD not in caplog.text and PASSWORD not in result.detail


@pytest.mark.ssh
def test_an_answer_without_end_or_a_refusal_is_the_switchs_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    servers = [_start({SHOW_EVENTS: endless}, password=PASSWORD),
               _start({}, password=PASSWORD)]
    try:
        known = tmp_path / "known_hosts"
        known.write_text("".join(s.known_hosts_line() for s in servers))
        endless_sw, refused = collect_nvos_switches(
            [_sw(servers[0].port, known, max_output_mb=1.0),
             _sw(servers[1].port, known, name="leaf02")])
    finally:
        for s in servers:
            s.stop()
    assert endless_sw.status == "output_too_large" and endless_sw.events == ""
    assert refused.status == "error" and "exit 1" in refused.detail


def _config(tmp_path: Path, port: int, known: Path) -> Path:
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(
        "[[switches]]\nname = \"leaf01\"\nhost = \"127.0.0.1\"\nos = \"nvos\"\n"
        f"ssh = {{ user = \"admin\", port = {port}, password = \"env:{PW_ENV}\", "
        f"known_hosts = \"{known}\", timeout_s = 5 }}\n")
    return cfg


@pytest.mark.ssh
def test_the_sweep_stores_the_port_events_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.demo import build_demo
    from auditor.ops.switches import collect_cli
    from auditor.store import Store

    monkeypatch.setenv(PW_ENV, PASSWORD)
    db = tmp_path / "a.duckdb"
    build_demo(db)  # a fabric with a switch leaf01, ports 1..12
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    events = [PortEvent(at=at, state="down", device="leaf01", port=3),
              PortEvent(at=at + timedelta(seconds=7), state="up", device="leaf01", port=3)]
    first = nvos_events_json(events[:1])
    whole = nvos_events_json(events)
    server = _start({SHOW_EVENTS: first}, password=PASSWORD)
    try:
        known = tmp_path / "known_hosts"
        known.write_text(server.known_hosts_line())
        settings = load(_config(tmp_path, server.port, known), db)
        with Store(db) as store:
            one = collect_cli(store, settings)
            server.responses[SHOW_EVENTS] = whole  # the table read again, one entry more
            two = collect_cli(store, settings, now=datetime.now(UTC) + timedelta(minutes=5))
            server.responses[SHOW_EVENTS] = "<html>not a table</html>"
            three = collect_cli(store, settings, now=datetime.now(UTC) + timedelta(minutes=10))
            rows = [r for r in store.events(at - timedelta(minutes=1), at + timedelta(minutes=1))
                    if r["origin"] == "nvos-events"]
            status = [s for s in store.device_status() if s["device"] == "leaf01"]
    finally:
        server.stop()
    assert [(o.status, o.events) for o in one + two] == [("ok", 1), ("ok", 1)]
    assert three[0].status == "parse_failed" and "nvos-events" in three[0].detail
    assert sorted((r["state"], r["port"], r["port_name"]) for r in rows) == [
        ("down", 3, "sw2p1"), ("up", 3, "sw2p1")]
    assert all(r["guid"] is not None for r in rows)
    assert server.record.commands == [SHOW_EVENTS] * 3
    assert PASSWORD not in json.dumps(status, default=str)


def test_os_is_onyx_unless_the_table_says_nvos(tmp_path: Path) -> None:
    from auditor.errors import ConfigError

    cfg = tmp_path / "auditor.toml"
    cfg.write_text("[[switches]]\nname = \"a\"\nhost = \"10.0.0.1\"\n"
                   "[[switches]]\nname = \"b\"\nhost = \"10.0.0.2\"\nos = \"nvos\"\n")
    assert [s.os for s in load(cfg, tmp_path / "d.duckdb").switches] == ["onyx", "nvos"]
    cfg.write_text("[[switches]]\nname = \"a\"\nhost = \"10.0.0.1\"\nos = \"cumulus\"\n")
    with pytest.raises(ConfigError, match=r"switches\[0\]\.os"):
        load(cfg, tmp_path / "d.duckdb")
