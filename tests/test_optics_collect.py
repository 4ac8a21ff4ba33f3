"""Collecting transceiver diagnostics (issue #14), opt-in with `[sweep] optics`.

Switches: netmiko against the in-process Onyx CLI on 127.0.0.1 (tests/ssh_server/fake_onyx.py),
which answers `show interfaces ib <port> transceiver diagnostics` with real NVUE captures (the
closest public output; see auditor/parse/onyx_optics.py). Hosts: a real sshd on 127.0.0.1 in
front of a fake /sys/class/infiniband tree, as tests/test_hostside.py does; this machine has
neither mlxlink nor ethtool's module access to a real module, so the SSH test proves which
commands run and that a missing mlxlink falls back to ethtool, and the storing tests feed the
real captures through store_hosts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.collect.hostcmd import (
    HostCollection,
    OpticsTarget,
    check_host_command,
    collect_host,
    ethtool_command,
    list_command,
    mlxlink_command,
    sysfs_command,
)
from auditor.collect.onyx import SHOW_IB_STATUS, check_command, diagnostics_command
from auditor.collect.runner import CommandResult
from auditor.config import HostSettings, Settings, load
from auditor.demo import build_demo
from auditor.errors import CollectError
from auditor.ops.hosts import store_hosts
from auditor.ops.switches import collect_cli
from auditor.portmap import PortMap
from auditor.store import Store
from tests.conftest import FIXTURES
from tests.ssh_server.fake_onyx import FakeOnyx, answer_of
from tests.sshd import Sshd
from tests.test_hostside import _sysfs_text
from tests.test_onyx import PASSWORD, PW_ENV, SESSION, _responses, _start

LEAF01 = "0xb8599f0300200001"
GPU05 = "0x0c42a10300000500"  # "gpu-node-05 mlx5_0" in the demo fabric
GPU07 = "0x0c42a10300000700"
NESTED = FIXTURES / "onyx_optics" / "nvue_nested_thresholds_first_channel_only.txt"
FLAT = FIXTURES / "onyx_optics" / "nvue_flat_four_channels_mw_and_dbm_trailing_spaces.txt"
SR4 = FIXTURES / "ethtool_module" / "qsfp28_sr4_four_lanes_mw_and_dbm_tab_indent.txt"
BF3 = FIXTURES / "mlxlink_module" / "bluefield3_two_ports_passive_dac_na_values_with_counters.txt"
T1 = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


def _readings(store: Store) -> list[dict[str, object]]:
    return store.optics_readings(datetime(2026, 1, 1, tzinfo=UTC),
                                 datetime(2027, 1, 1, tzinfo=UTC))


# --- the switch -------------------------------------------------------------------------------


def test_diagnostics_command_is_on_the_allowlist_and_nothing_else_is() -> None:
    assert diagnostics_command("IB1/1/2") == "show interfaces ib 1/1/2 transceiver diagnostics"
    for bad in ("show interfaces ib 1/1 transceiver diagnostics | json-print",
                "show interfaces ib 1/1 transceiver diagnostics ; reload",
                "show interfaces ib 1/1 transceiver diagnostics clear",
                "show interfaces ib 1/x transceiver diagnostics"):
        with pytest.raises(CollectError):
            check_command(bad)
    with pytest.raises(CollectError):
        diagnostics_command("IB1/1 | json-print")


# The ports of the status fixture that hold a module (the others are empty cages).
PRESENT = {"IB1/1/1": NESTED, "IB1/1/2": FLAT, "IB1/2/1": NESTED}


@pytest.fixture
def optics_switch(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOnyx]:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    answers = {diagnostics_command(p): answer_of(f.read_text()) for p, f in PRESENT.items()}
    server = _start({**_responses(), **answers}, password=PASSWORD)
    yield server
    server.stop()


def _config(tmp_path: Path, server: FakeOnyx, optics: bool) -> Settings:
    known = tmp_path / "known_hosts"
    known.write_text(server.known_hosts_line())
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(
        f"[sweep]\noptics = {'true' if optics else 'false'}\n"
        "[[switches]]\nname = \"leaf01\"\nhost = \"127.0.0.1\"\n"
        f"ssh = {{ user = \"admin\", port = {server.port}, password = \"env:{PW_ENV}\", "
        f"known_hosts = \"{known}\", timeout_s = 5 }}\n")
    db = tmp_path / "a.duckdb"
    build_demo(db)  # the fabric has a switch named leaf01 with ports 1..12
    return load(cfg, db)


@pytest.mark.ssh
def test_sweep_reads_every_modules_diagnostics_and_places_them(
        optics_switch: FakeOnyx, tmp_path: Path) -> None:
    settings = _config(tmp_path, optics_switch, optics=True)
    with Store(settings.db) as store:
        outcomes = collect_cli(store, settings, T1)
        rows = _readings(store)
        sources = [s for s in store.sources() if s["kind"] == "onyx-optics"]
        again = collect_cli(store, settings, T1)  # a replayed sweep stores nothing twice
        assert len(_readings(store)) == len(rows)
    assert [(o.device, o.status) for o in outcomes + again] == [("leaf01", "ok")] * 2
    assert outcomes[0].detail.endswith("3 optics reading(s)")
    # Split ports 1/1/1 and 1/1/2 are IB ports 1 and 2 on Quantum; 1/2/1 is port 3.
    placed = {(r["port_name"], r["guid"], r["port"], r["lane"]) for r in rows}
    assert placed == {("IB1/1/1", LEAF01, 1, 1), ("IB1/2/1", LEAF01, 3, 1),
                      *(("IB1/1/2", LEAF01, 2, lane) for lane in (1, 2, 3, 4))}
    assert {r["serial_number"] for r in rows} == {"MT2108FT02204"}
    assert len(sources) == 1 and sources[0]["origin"] == "leaf01"
    sent = set(optics_switch.record.commands) - SESSION
    assert sent == {"show version", SHOW_IB_STATUS,
                    *(f"show interfaces ib {p} transceiver" for p in
                      ("1/1/1", "1/1/2", "1/2/1", "1/2/2", "1/3")),
                    *(diagnostics_command(p) for p in PRESENT)}, "empty cages are not asked"
    assert PASSWORD not in json.dumps([o.detail for o in outcomes])


@pytest.mark.ssh
def test_optics_off_by_default_sends_no_diagnostics_command(
        optics_switch: FakeOnyx, tmp_path: Path) -> None:
    settings = _config(tmp_path, optics_switch, optics=False)
    with Store(settings.db) as store:
        outcomes = collect_cli(store, settings, T1)
        assert _readings(store) == []
    assert outcomes[0].status == "ok"
    assert not any("diagnostics" in c for c in optics_switch.record.commands)


@pytest.mark.ssh
def test_a_firmware_without_the_command_keeps_the_switch_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PASSWORD)
    server = _start(_responses(), password=PASSWORD)  # answers "% Unrecognized command"
    try:
        settings = _config(tmp_path, server, optics=True)
        with Store(settings.db) as store:
            outcomes = collect_cli(store, settings, T1)
            parts = [t for t in store.transceivers() if t["device"] == "leaf01"]
            assert _readings(store) == []
    finally:
        server.stop()
    assert outcomes[0].status == "ok"
    assert "optics: 127.0.0.1: switch rejected 'show interfaces ib 1/1/1 transceiver " \
           "diagnostics'" in outcomes[0].detail
    assert len(parts) == 5  # the inventory of the same session is kept
    # It stopped asking after the first refusal.
    assert sum("diagnostics" in c for c in server.record.commands) == 1


# --- hosts ------------------------------------------------------------------------------------


def test_host_optics_commands_are_exact_and_write_flags_cannot_pass() -> None:
    root = "/sys/class/infiniband"
    assert mlxlink_command("mlx5_0") == ("mlxlink", "-d", "mlx5_0", "-m")
    assert ethtool_command("ib0") == ("ethtool", "-m", "ib0")
    assert list_command(root) == ("ls", "-1", root)
    assert list_command(f"{root}/mlx5_0/device/net") == ("ls", "-1", f"{root}/mlx5_0/device/net")
    for good in (mlxlink_command("mlx5_0"), ethtool_command("ibp65s0f1"), list_command(root),
                 list_command(f"{root}/mlx5_3/device/net")):
        assert check_host_command(good, root) == list(good)
    bad = [
        ["mlxlink", "-d", "mlx5_0", "-m", "-a", "TG"],  # toggle the link
        ["mlxlink", "-d", "mlx5_0", "--port_state", "dn"],
        ["mlxlink", "-d", "mlx5_0", "-m", "--pc"],  # clears counters
        ["mlxlink", "-d", "-a", "-m"], ["mlxlink", "-d", "mlx5_0;reboot", "-m"],
        ["mlxlink", "-d", "/dev/mst/mt4123_pciconf0", "-m"],
        ["ethtool", "-E", "ib0", "magic", "0", "offset", "0", "value", "0"],  # EEPROM write
        ["ethtool", "-m", "ib0", "hex", "on"], ["ethtool", "-s", "ib0", "speed", "100"],
        ["ethtool", "-m", "-s"], ["ethtool", "-m", "ib0 ; reboot"], ["ethtool", "-m", "x" * 16],
        ["ls", "-1", "/etc"], ["ls", "-1", f"{root}/../../etc"], ["ls", "-la", root],
        ["ls", "-1", f"{root}/mlx5_0/device/net/../../.."],
    ]
    for argv in bad:
        with pytest.raises(CollectError):
            check_host_command(argv, root)


def _write_tree(root: Path) -> None:
    for device, netdev in (("mlx5_0", "ib0"), ("mlx5_1", "ib1")):
        (root / device / "ports" / "1").mkdir(parents=True)
        (root / device / "ports" / "1" / "state").write_text("4: ACTIVE\n")
        (root / device / "device" / "net" / netdev).mkdir(parents=True)


@pytest.mark.ssh
def test_host_reads_mlxlink_per_device_and_falls_back_to_ethtool(
        tmp_path: Path, sshd: Sshd) -> None:
    root = tmp_path / "sys"
    _write_tree(root)
    settings = HostSettings(names=("127.0.0.1",), user=sshd.user, port=sshd.port,
                            key_file=sshd.client_key, known_hosts=sshd.known_hosts, timeout_s=10,
                            kernel_log="none", sysfs_root=str(root))
    coll = collect_host("127.0.0.1", settings, optics=True)
    assert coll.status == "ok", coll.detail
    assert coll.results["optics-list"].stdout.split() == ["mlx5_0", "mlx5_1"]
    # Neither tool is installed here: mlxlink's 127 sends it to ethtool, per netdev.
    assert coll.results["mlxlink.mlx5_0"].exit_code == 127
    assert "mlxlink.mlx5_1" not in coll.results
    assert {name: (t.kind, t.rdma_device, t.port_name) for name, t in coll.optics.items()} == {
        "ethtool.ib0": ("ethtool-module", "mlx5_0", "ib0"),
        "ethtool.ib1": ("ethtool-module", "mlx5_1", "ib1")}
    assert all(coll.results[name].argv[:2] == ("ethtool", "-m") for name in coll.optics)


def _ok(argv: tuple[str, ...], out: str, code: int = 0, err: str = "") -> CommandResult:
    return CommandResult(argv, code, out, err)


def test_host_readings_are_stored_placed_and_failures_noted(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    build_demo(db)
    settings = Settings(db=db, hosts=HostSettings(names=("gpu-node-05", "gpu-node-07"),
                                                  kernel_log="none"))
    sysfs = sysfs_command()
    mlx = _ok(mlxlink_command("mlx5_0"), answer_of(BF3.read_text()).split("\nubuntu@")[0])
    colls = [
        HostCollection("gpu-node-05", "ok", results={
            "sysfs": _ok(sysfs, _sysfs_text(GPU05, 0)), "ibstat": _ok(("ibstat",), "", 127),
            "mlxlink.mlx5_0": mlx, "mlxlink.mlx5_1": _ok(mlxlink_command("mlx5_1"), "", 127),
            "ethtool.ib1": _ok(ethtool_command("ib1"), SR4.read_text())},
            optics={"mlxlink.mlx5_0": OpticsTarget("mlxlink-module", "mlx5_0", "mlx5_0/1"),
                    "ethtool.ib1": OpticsTarget("ethtool-module", "mlx5_0", "ib1")}),
        HostCollection("gpu-node-07", "ok", results={
            "sysfs": _ok(sysfs, _sysfs_text(GPU07, 0)), "ibstat": _ok(("ibstat",), "", 127),
            "mlxlink.mlx5_0": _ok(mlxlink_command("mlx5_0"), "",
                                  1, "-E- Failed to open device\n")},
            optics={"mlxlink.mlx5_0": OpticsTarget("mlxlink-module", "mlx5_0", "mlx5_0/1")}),
    ]
    with Store(db) as store:
        pm = PortMap(store.fabric(store.snapshot_times(T1, limit=1)[0]))
        with store.transaction():
            out = store_hosts(store, settings, colls, T1, pm)
        rows = _readings(store)
    assert [(o.device, o.status) for o in out] == [("gpu-node-05", "ok"),
                                                   ("gpu-node-07", "partial")]
    assert "2 optics reading(s)" in out[0].detail
    assert "mlxlink: not installed" in out[0].detail  # why ib1 was read with ethtool
    assert "mlxlink mlx5_0: exit 1: -E- Failed to open device" in out[1].detail
    # Both modules of gpu-node-05 are placed on mlx5_0, the GUID its own sysfs gave, port 1.
    assert {(r["port_name"], r["guid"], r["port"]) for r in rows} == {
        ("mlx5_0/1", GPU05, 1), ("ib1", GPU05, 1)}
    assert len([r for r in rows if r["port_name"] == "ib1"]) == 4
