"""SNMP collector against a real Net-SNMP snmpd on 127.0.0.1 serving a fake 36-port IB switch
(tests/snmp_agent), plus the pure flaps_between logic on hand-made results."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.analyse.snmp_changes import flaps_between
from auditor.collect.snmp import SnmpTarget, poll
from auditor.config import Secret, SnmpSettings
from auditor.errors import ConfigError
from auditor.models import SnmpPort, SnmpResult
from tests.conftest import need
from tests.snmp_agent.launcher import Snmpd, V3User, alive, free_udp_port, unavailable_reason

COMMUNITY = "c0mmunity-Xq7"
AUTH = "auth-S3cret-91"
PRIV = "priv-S3cret-37"
WRONG = "wr0ng-S3cret-55"
SECRETS = (COMMUNITY, AUTH, PRIV, WRONG)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snmpd]:
    need(unavailable_reason())
    snmpd = Snmpd(tmp_path_factory.mktemp("snmpd"), communities=(COMMUNITY,),
                  users=(V3User("auditor", AUTH, PRIV),
                         V3User("ifonly", AUTH, PRIV, view=".1.3.6.1.2.1")))
    snmpd.start()
    try:
        yield snmpd
    finally:
        snmpd.stop()


@pytest.fixture
def switch(agent: Snmpd, monkeypatch: pytest.MonkeyPatch) -> Iterator[Snmpd]:
    for var, value in (("T_COMMUNITY", COMMUNITY), ("T_AUTH", AUTH), ("T_PRIV", PRIV),
                       ("T_WRONG", WRONG)):
        monkeypatch.setenv(var, value)
    agent.reset()
    yield agent
    agent.reset()


def target(name: str, host: str = "127.0.0.1", **snmp: Any) -> SnmpTarget:
    return SnmpTarget(name, host, SnmpSettings(**snmp))


def v2c(agent: Snmpd, name: str = "leaf1", **kw: Any) -> SnmpTarget:
    return target(name, **{"port": agent.port, "community": Secret("env:T_COMMUNITY"), **kw})


def v3(agent: Snmpd, name: str = "leaf1", user: str = "auditor", **kw: Any) -> SnmpTarget:
    return target(name, **{"port": agent.port, "version": "3", "user": user,
                           "auth_key": Secret("env:T_AUTH"), "priv_key": Secret("env:T_PRIV"),
                           **kw})


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"secret leaked into {text!r}"


@pytest.mark.snmp
def test_v2c_poll_reads_every_port_and_counters_move(switch: Snmpd) -> None:
    switch.set_port(5, in_errors=42, out_errors=3, symbol_errors=7)
    first = poll([v2c(switch)])[0]
    assert first.status == "ok", first.detail
    assert first.polled_at.tzinfo is UTC and first.sys_uptime_ticks is not None
    assert [p.if_name for p in first.ports] == [f"IB1/{i}" for i in range(1, 37)]
    assert {p.oper_status for p in first.ports} == {"up"}
    assert {p.admin_status for p in first.ports} == {"up"}
    assert {p.phys_state for p in first.ports} == {"linkUp"}
    p5 = first.ports[4]
    assert (p5.if_index, p5.in_errors, p5.out_errors, p5.symbol_errors) == (5, 42, 3, 7)
    assert p5.last_change_ticks == 0 and p5.hc_in_octets and p5.hc_out_octets
    time.sleep(0.2)
    second = poll([v2c(switch)])[0]
    assert second.ports[4].hc_in_octets > p5.hc_in_octets
    assert second.sys_uptime_ticks > first.sys_uptime_ticks


@pytest.mark.snmp
def test_v3_auth_priv_poll(switch: Snmpd) -> None:
    result = poll([v3(switch)])[0]
    assert result.status == "ok", result.detail
    assert len(result.ports) == 36 and result.ports[0].symbol_errors == 0


@pytest.mark.snmp
def test_agent_without_vendor_mib_leaves_ib_fields_empty(switch: Snmpd) -> None:
    # This user's view is mib-2 only, as on an agent without MELLANOX-IF-VPI-MIB.
    result = poll([v3(switch, user="ifonly")])[0]
    assert result.status == "ok", result.detail
    assert "no MELLANOX-IF-VPI-MIB" in result.detail
    assert len(result.ports) == 36
    assert all(p.symbol_errors is None and p.phys_state is None for p in result.ports)
    assert all(p.in_errors == 0 for p in result.ports)


@pytest.mark.snmp
def test_wrong_v3_credentials_are_auth_failed(switch: Snmpd) -> None:
    wrong = Secret("env:T_WRONG")
    results = poll([
        v3(switch, "bad-auth", auth_key=wrong, timeout_s=0.5, retries=0),
        # Net-SNMP drops what it cannot decrypt: detected by the authNoPriv follow-up.
        v3(switch, "bad-priv", priv_key=wrong, timeout_s=0.5, retries=0),
        v3(switch, "bad-user", user="nobody", timeout_s=0.5, retries=0),
    ])
    assert [r.status for r in results] == ["auth_failed"] * 3, [r.detail for r in results]
    assert "Wrong SNMP PDU digest" in results[0].detail
    assert "priv key" in results[1].detail
    assert "Unknown USM user" in results[2].detail
    assert all(r.ports == [] and r.sys_uptime_ticks is None for r in results)


@pytest.mark.snmp
def test_wrong_v2c_community_can_only_time_out(switch: Snmpd) -> None:
    result = poll([v2c(switch, community=Secret("env:T_WRONG"), timeout_s=0.5, retries=0)])[0]
    assert result.status == "timeout"
    assert "wrong community" in result.detail


@pytest.mark.snmp
def test_nothing_listening_times_out_quickly() -> None:
    dead = target("dead", port=free_udp_port(), community=Secret("env:PATH"), timeout_s=0.5,
                  retries=0)
    t0 = time.monotonic()
    result = poll([dead])[0]
    assert result.status == "timeout", result.detail
    assert time.monotonic() - t0 < 2.0


@pytest.mark.snmp
def test_one_dead_agent_does_not_stop_the_others(switch: Snmpd) -> None:
    dead_port = free_udp_port()
    targets = [
        v2c(switch, "leaf1"),
        v2c(switch, "dead", port=dead_port, timeout_s=0.5, retries=0),
        v3(switch, "leaf2"),
        v2c(switch, "no-secret", community=Secret("env:T_UNSET_VARIABLE")),
        v3(switch, "leaf3", user="nobody", timeout_s=0.5, retries=0),
        v2c(switch, "leaf4"),
    ]
    t0 = time.monotonic()
    results = poll(targets, concurrency=4)
    assert time.monotonic() - t0 < 5
    assert [r.target for r in results] == [t.name for t in targets]
    assert [r.status for r in results] == ["ok", "timeout", "ok", "error", "auth_failed", "ok"]
    assert "T_UNSET_VARIABLE is not set" in results[3].detail
    assert all(len(r.ports) == 36 for r in results if r.status == "ok")


@pytest.mark.snmp
def test_worker_processes_keep_input_order(switch: Snmpd) -> None:
    targets = [v2c(switch, f"leaf{i}") if i != 2 else
               v2c(switch, "dead", port=free_udp_port(), timeout_s=0.3, retries=0)
               for i in range(5)]
    results = poll(targets, concurrency=4, processes=2)
    assert [r.target for r in results] == [t.name for t in targets]
    assert [r.status for r in results] == ["ok", "ok", "timeout", "ok", "ok"]


@pytest.mark.snmp
def test_port_taken_down_between_polls(switch: Snmpd) -> None:
    before = poll([v2c(switch)])[0]
    went_down = time.time()
    switch.set_port(7, oper=2, changed_at=went_down)
    time.sleep(0.3)
    after = poll([v2c(switch)])[0]
    assert after.ports[6].oper_status == "down" and after.ports[6].phys_state == "polling"
    changes = flaps_between(before, after)
    assert [(c.if_name, c.kind) for c in changes] == [("IB1/7", "down")]
    assert changes[0].at_estimate is not None
    assert abs(changes[0].at_estimate.timestamp() - went_down) < 1.5


@pytest.mark.snmp
def test_down_and_up_between_polls_is_a_flap(switch: Snmpd) -> None:
    before = poll([v2c(switch)])[0]
    switch.set_port(9, oper=2, changed_at=time.time())
    time.sleep(0.2)
    came_back = time.time()
    switch.set_port(9, oper=1, changed_at=came_back)
    time.sleep(0.3)
    after = poll([v2c(switch)])[0]
    assert after.ports[8].oper_status == "up"
    changes = flaps_between(before, after)
    assert [(c.if_name, c.kind) for c in changes] == [("IB1/9", "flap")]
    assert changes[0].at_estimate is not None
    assert abs(changes[0].at_estimate.timestamp() - came_back) < 1.5
    assert flaps_between(after, after) == []


@pytest.mark.snmp
def test_secrets_never_appear_in_details_or_reprs(switch: Snmpd) -> None:
    wrong = Secret("env:T_WRONG")
    targets = [
        v2c(switch), v3(switch),
        v2c(switch, "bad-community", community=wrong, timeout_s=0.3, retries=0),
        v3(switch, "bad-auth", auth_key=wrong, timeout_s=0.3, retries=0),
        v3(switch, "bad-priv", priv_key=wrong, timeout_s=0.3, retries=0),
        v2c(switch, "bad-host", host="no-such-host.invalid"),
    ]
    results = poll(targets)
    assert {r.status for r in results} == {"ok", "timeout", "auth_failed", "error"}
    assert_no_secret(*(repr(t) for t in targets), *(r.detail for r in results),
                     *(repr(r) for r in results), *(str(t) for t in targets))


@pytest.mark.snmp
def test_stop_leaves_no_process_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need(unavailable_reason())
    monkeypatch.setenv("T_PUBLIC", "public")
    snmpd = Snmpd(tmp_path / "a", ports=4).start()
    try:
        (result,) = poll([target("x", port=snmpd.port, community=Secret("env:T_PUBLIC"))])
        assert result.status == "ok" and len(result.ports) == 4
        assert snmpd.proc is not None
        pids = [snmpd.proc.pid, *snmpd.children()]
        assert len(pids) == 4  # snmpd and one pass_persist backend per subtree
    finally:
        snmpd.stop()
    assert not [pid for pid in pids if alive(pid)]


# --- pure logic: no agent ------------------------------------------------------------------

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def port(i: int, oper: str = "up", last_change: int | None = 0) -> SnmpPort:
    return SnmpPort(i, f"IB1/{i}", oper, "up", last_change, 0, 0, 0, 0, None, None)


def result(at: datetime, uptime: int | None, ports: list[SnmpPort]) -> SnmpResult:
    return SnmpResult("leaf1", "ok", "", at, uptime, ports)


def test_flap_time_comes_from_sysuptime_and_iflastchange() -> None:
    before = result(T0, 100_000, [port(1), port(2)])
    # 60 s later; port 2's ifLastChange 100,500 is 55 s before the second poll's 106,000 ticks.
    after = result(T0 + timedelta(seconds=60), 106_000, [port(1), port(2, last_change=100_500)])
    (change,) = flaps_between(before, after)
    assert (change.if_name, change.kind) == ("IB1/2", "flap")
    assert change.at_estimate == T0 + timedelta(seconds=5)


def test_status_change_without_iflastchange_has_no_time() -> None:
    before = result(T0, 100_000, [port(1)])
    after = result(T0 + timedelta(seconds=60), 106_000, [port(1, oper="lowerLayerDown")])
    (change,) = flaps_between(before, after)
    assert change.kind == "down" and change.at_estimate is None
    assert "did not move" in change.detail


def test_agent_reboot_is_reported_and_invents_no_flaps() -> None:
    before = result(T0, 9_000_000, [port(1, last_change=500), port(2, last_change=700),
                                    port(3, oper="down", last_change=800)])
    # Rebooted 20 s before the second poll: every ifLastChange restarts from a small number.
    after = result(T0 + timedelta(seconds=300), 2_000,
                   [port(1, last_change=1_500), port(2, last_change=1_600),
                    port(3, last_change=1_700)])
    changes = flaps_between(before, after)
    assert [(c.if_name, c.kind) for c in changes] == [("", "reboot"), ("IB1/3", "up")]
    assert changes[0].at_estimate == T0 + timedelta(seconds=280)
    assert changes[1].at_estimate == T0 + timedelta(seconds=297)


def test_reboot_longer_ago_than_the_old_uptime_is_still_seen() -> None:
    before = result(T0, 1_000, [port(1)])
    after = result(T0 + timedelta(hours=1), 180_000, [port(1, last_change=900)])
    kinds = [c.kind for c in flaps_between(before, after)]
    assert kinds == ["reboot"]


def test_sysuptime_wrap_is_not_a_reboot() -> None:
    wrap = 2**32
    before = result(T0, wrap - 3_000, [port(1, last_change=wrap - 5_000)])
    after = result(T0 + timedelta(seconds=60), 3_000, [port(1, last_change=1_000)])
    (change,) = flaps_between(before, after)
    assert change.kind == "flap"
    assert change.at_estimate == T0 + timedelta(seconds=40)


def test_port_that_disappears_is_reported() -> None:
    before = result(T0, 100, [port(1), port(2)])
    after = result(T0 + timedelta(seconds=10), 1_100, [port(1)])
    assert [(c.if_name, c.kind) for c in flaps_between(before, after)] == [("IB1/2", "gone")]


def test_flaps_between_refuses_failed_or_foreign_polls() -> None:
    ok = result(T0, 100, [port(1)])
    with pytest.raises(ValueError, match="status ok"):
        flaps_between(ok, SnmpResult("leaf1", "timeout", "", T0, None, []))
    with pytest.raises(ValueError, match="different targets"):
        flaps_between(ok, dataclasses.replace(ok, target="leaf2"))


@pytest.mark.parametrize(("kw", "message"), [
    ({"version": "1", "community": Secret("env:X")}, "version"),
    ({}, "needs a community"),
    ({"version": "3"}, "needs a user"),
    ({"version": "3", "user": "u", "priv_key": Secret("env:X")}, "needs an auth_key"),
    ({"version": "3", "user": "u", "auth_proto": "SHA999"}, "auth_proto"),
    ({"community": Secret("env:X"), "timeout_s": 0}, "timeout_s"),
])
def test_bad_targets_are_refused_at_construction(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        target("t", **kw)
