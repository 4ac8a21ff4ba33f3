"""Host-side collection: a real sshd on 127.0.0.1 in front of a fake /sys/class/infiniband tree.

The fabric is the demo's (real ibsim captures); the fake tree's node GUIDs are two of its HCAs,
so LinkDownedCounter steps read on the host become counter flaps of the host's link, with the
leaf end found through the fabric graph. Host keys are checked: unknown or changed keys refuse.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.analyse import flaps as flaps_mod
from auditor.cli import app
from auditor.collect.hostcmd import (
    BOOTS,
    BOOTS_JOURNAL,
    BOOTS_LAST,
    DMESG,
    IBSTAT,
    JOURNAL,
    SYSFS_COMMAND,
    SYSFS_PORT_FILES,
    HostCollection,
    check_host_command,
    check_sysfs_root,
    host_plan,
    sysfs_command,
)
from auditor.collect.runner import CommandResult
from auditor.config import HostSettings, Settings, load
from auditor.demo import build_demo
from auditor.errors import CollectError, ConfigError
from auditor.ops.hosts import collect_hosts, store_hosts
from auditor.ops.switches import DeviceOutcome
from auditor.parse.sysfs_ib import COUNTER_NAMES
from auditor.portmap import PortMap
from auditor.store import Store
from tests.sshd import Sshd

GPU05 = "0x0c42a10300000500"  # "gpu-node-05 mlx5_0", cabled to leaf02 port 1 in the demo
GPU07 = "0x0c42a10300000700"  # "gpu-node-07 mlx5_0"
LEAF02 = "0xb8599f0300200002"
T1 = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)  # after the demo's last sweep (02:00)
T2 = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
PW_ENV = "AUDITOR_TEST_HOSTS_PASSWORD"
PW = "s3cret-Hosts-Pa55word"


def write_tree(root: Path, hcas: dict[str, tuple[str, int]]) -> None:
    """A sysfs tree as the kernel lays it out: one port per mlx5 device, values as printed."""
    for device, (guid, downed) in hcas.items():
        port = root / device / "ports" / "1"
        (port / "counters").mkdir(parents=True, exist_ok=True)
        g = guid[2:]
        (root / device / "node_guid").write_text(":".join(g[i:i + 4] for i in (0, 4, 8, 12)) + "\n")
        (port / "state").write_text("4: ACTIVE\n")
        (port / "phys_state").write_text("5: LinkUp\n")
        (port / "rate").write_text("200 Gb/sec (4X HDR)\n")
        for name, value in (("link_downed", downed), ("symbol_error", 0),
                            ("link_error_recovery", 0), ("port_rcv_errors", 0),
                            ("local_link_integrity_errors", 0)):
            (port / "counters" / name).write_text(f"{value}\n")


def write_config(tmp_path: Path, server: Sshd, names: list[str], root: Path, *,
                 known: Path | None = None, key: bool = True, password: bool = True,
                 kernel_log: str = "none") -> Settings:
    lines = [
        "[store]", f'captures = "{tmp_path / "captures"}"',
        "[hosts]", f"names = {json.dumps(names)}", f'user = "{server.user}"',
        f"port = {server.port}", f'known_hosts = "{known or server.known_hosts}"',
        "timeout_s = 5", f'kernel_log = "{kernel_log}"', f'sysfs_root = "{root}"',
        *([f'key_file = "{server.client_key}"'] if key else []),
        *([f'password = "env:{PW_ENV}"'] if password else []),
        "[aliases]", '"127.0.0.1" = "gpu-node-05"',
    ]
    cfg = tmp_path / "auditor.toml"
    cfg.write_text("\n".join(lines) + "\n")
    return load(cfg, tmp_path / "a.duckdb")


def demo_db(tmp_path: Path) -> Path:
    db = tmp_path / "a.duckdb"
    build_demo(db)
    return db


def assert_no_secret(store: Store, outcomes: list[DeviceOutcome]) -> None:
    assert PW not in json.dumps([asdict(o) for o in outcomes])
    assert PW not in json.dumps(store.device_status(), default=str)


@pytest.mark.ssh
def test_link_downed_steps_on_the_hca_become_flaps_of_its_link(
        tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PW)
    root = tmp_path / "sys" / "class" / "infiniband"
    write_tree(root, {"mlx5_0": (GPU05, 0), "mlx5_1": (GPU07, 0)})
    settings = write_config(tmp_path, sshd, ["127.0.0.1"], root)
    db = demo_db(tmp_path)
    with Store(db) as store:
        first = collect_hosts(store, settings, now=T1)
        write_tree(root, {"mlx5_0": (GPU05, 2), "mlx5_1": (GPU07, 0)})
        second = collect_hosts(store, settings, now=T2)
        for out in (first, second):
            assert [(o.device, o.collector, o.status) for o in out] == \
                [("127.0.0.1", "host", "ok")]
            assert out[0].detail.startswith("2 HCA port(s) on 2 device(s), 10 counter(s)")
        assert_no_secret(store, [*first, *second])
        assert {(s["kind"], s["origin"]) for s in store.sources()
                if s["kind"] == "sysfs"} == {("sysfs", "127.0.0.1")}
        found = flaps_mod.flaps(store, T1.replace(tzinfo=None), (T2 + timedelta(minutes=5))
                                .replace(tzinfo=None))
        names = store.node_names()
    rows = [flaps_mod.as_dict(f, names, T2.replace(tzinfo=None)) for f in found]
    mine = [r for r in rows if any(e["guid"] in (GPU05, GPU07) for e in r["ends"])]
    assert len(mine) == 2
    for r in mine:
        assert sorted((e["name"], e["guid"], e["port"]) for e in r["ends"]) == \
            [("gpu-node-05", GPU05, 1), ("leaf02", LEAF02, 1)]
        assert r["sources"] == ["counters"] and r["approximate"]
        assert r["counted_between"] == ["2026-11-30T03:00:00Z", "2026-11-30T04:00:00Z"]
    # The same through the CLI.
    res = CliRunner().invoke(app, ["--db", str(db), "flaps", "--since", "30m", "--until",
                                   "2026-11-30T04:10:00Z", "--format", "json"])
    assert res.exit_code == 0, res.output
    cli = [r for r in json.loads(res.output) if any(e["guid"] == GPU05 for e in r["ends"])]
    assert len(cli) == 2 and {e["name"] for e in cli[0]["ends"]} == {"gpu-node-05", "leaf02"}
    stamp = settings.captures_dir / "20261130T040000Z" / "hosts"
    assert "mlx5_0/ports/1/counters/link_downed:2" in \
        (stamp / "127.0.0.1.sysfs.txt").read_text()
    assert (stamp / "127.0.0.1.ibstat.txt").exists()


@pytest.mark.ssh
def test_refused_keys_and_a_dead_host_do_not_stop_the_others(
        tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PW)
    root = tmp_path / "sys"
    write_tree(root, {"mlx5_0": (GPU05, 1)})
    other = tmp_path / "other_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    # 127.0.1 and 127.1 both reach 127.0.0.1, but known_hosts is looked up by the name given:
    # 127.0.1 has a wrong key on file, 127.1 none at all.
    known.write_text(sshd.known_hosts.read_text()
                     + f"[127.0.1]:{sshd.port} {other.with_suffix('.pub').read_text()}")
    before = known.read_text()
    settings = write_config(tmp_path, sshd, ["127.0.0.1", "127.1", "127.0.1", "127.0.0.2"],
                            root, known=known)
    started = time.monotonic()
    with Store(tmp_path / "a.duckdb") as store:
        out = collect_hosts(store, settings, now=T1)
        status = {r["device"]: (r["status"], r["detail"]) for r in store.device_status()
                  if r["collector"] == "host"}
        assert_no_secret(store, out)
    assert time.monotonic() - started < 10
    assert [(o.device, o.status) for o in out] == [
        ("127.0.0.1", "ok"), ("127.1", "host_key_mismatch"), ("127.0.1", "host_key_mismatch"),
        ("127.0.0.2", "error")]
    assert "not in" in status["127.1"][1] and "does not match" in status["127.0.1"][1]
    assert status["127.0.0.2"] == ("error", f"127.0.0.2:{sshd.port}: connection refused")
    assert known.read_text() == before  # nothing added or replaced


def test_a_host_that_never_answers_is_a_timeout(tmp_path: Path) -> None:
    """TCP connects (the kernel completes the handshake) but no SSH banner ever comes."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        (tmp_path / "kh").write_text("")
        settings = Settings(db=tmp_path / "a.duckdb", captures=tmp_path / "captures",
                            hosts=HostSettings(names=("127.0.0.1",), user="nobody", port=port,
                                               known_hosts=tmp_path / "kh", timeout_s=1))
        started = time.monotonic()
        with Store(tmp_path / "a.duckdb") as store:
            out = collect_hosts(store, settings, now=T1)
    assert time.monotonic() - started < 5
    assert [o.status for o in out] == ["timeout"]
    # Which of paramiko's two timers fires first varies; both say what happened.
    assert out[0].detail in (f"127.0.0.1:{port}: no SSH banner within 1 s",
                             f"127.0.0.1:{port}: SSH handshake did not complete within 1 s")


@pytest.mark.ssh
def test_password_never_shows_when_login_fails(
        tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PW)
    settings = write_config(tmp_path, sshd, ["127.0.0.1"], tmp_path, key=False)
    with Store(tmp_path / "a.duckdb") as store:
        out = collect_hosts(store, settings, now=T1)
        assert [o.status for o in out] == ["auth_failed"]
        assert_no_secret(store, out)


@pytest.mark.ssh
def test_no_hca_and_the_real_kernel_log(tmp_path: Path, sshd: Sshd) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    settings = write_config(tmp_path, sshd, ["127.0.0.1"], empty, password=False,
                            kernel_log="dmesg")
    with Store(tmp_path / "a.duckdb") as store:
        out = collect_hosts(store, settings, now=T1)
    assert [o.status for o in out] == ["no_hca"]
    # dmesg may be refused (containers, dmesg_restrict): then the detail says so.
    assert "dmesg:" in out[0].detail
    assert out[0].detail.startswith(f"no InfiniBand device under {empty}")


# --- storing, without SSH ----------------------------------------------------------------------

def _ok(argv: tuple[str, ...], out: str, code: int = 0, err: str = "") -> CommandResult:
    return CommandResult(argv, code, out, err)


def _sysfs_text(guid: str, downed: int, root: str = "/sys/class/infiniband") -> str:
    g = guid[2:]
    return "\n".join([
        f"{root}/mlx5_0/ports/1/state:4: ACTIVE",
        f"{root}/mlx5_0/ports/1/phys_state:5: LinkUp",
        f"{root}/mlx5_0/ports/1/counters/link_downed:{downed}",
        f"{root}/mlx5_0/node_guid:" + ":".join(g[i:i + 4] for i in (0, 4, 8, 12)), ""])


def test_kernel_log_events_are_placed_on_the_link_and_failures_are_partial(
        tmp_path: Path) -> None:
    db = demo_db(tmp_path)
    settings = Settings(db=db, aliases={"127.0.0.1": "gpu-node-05"},
                        hosts=HostSettings(names=("127.0.0.1", "gpu-node-07", "h3", "h4"),
                                           kernel_log="journal"))
    journal = "\n".join([
        "-- Boot 7d1f0c2a9b6e4e1f8a3c5b2d4e6f8a0b --",
        "2026-11-30T03:10:00+0000 gpu-node-05 kernel: ACPI: CPPC support missing.",
        "                           Please enable it if your BIOS has the CPPC option.",
        "2026-11-30T03:14:02+0000 gpu-node-05 kernel: ib0: Event 10 on device mlx5_0 port 1",
        "2026-11-30T03:14:09+0000 gpu-node-05 kernel: ib0: Event 9 on device mlx5_0 port 1", ""])
    sysfs = sysfs_command()
    colls = [
        HostCollection("127.0.0.1", "ok", results={
            "sysfs": _ok(sysfs, _sysfs_text(GPU05, 0)), "ibstat": _ok(IBSTAT, "", 127),
            "journal": _ok(JOURNAL, journal)}),
        HostCollection("gpu-node-07", "ok", results={
            "sysfs": _ok(sysfs, _sysfs_text(GPU07, 0), 2, "grep: x: No such file"),
            "ibstat": _ok(IBSTAT, ""),
            "journal": _ok(JOURNAL, "", 1, "Failed to open journal: Operation not permitted\n")}),
        HostCollection("h3", "ok", results={
            "sysfs": _ok(sysfs, "", 2, "grep: ...: No such file or directory"),
            "ibstat": _ok(IBSTAT, "")}, failed={"journal": ("timeout", "h3: journalctl: no "
                                                            "answer within 30 s")}),
        HostCollection("h4", "timeout", "h4:22: no answer within 30 s"),
    ]
    with Store(db) as store:
        pm = PortMap(store.fabric(store.snapshot_times(T2, limit=1)[0]), settings.aliases)
        with store.transaction():
            out = store_hosts(store, settings, colls, T2, pm)
        found = flaps_mod.flaps(store, T1.replace(tzinfo=None), T2.replace(tzinfo=None))
    assert [(o.device, o.status, o.events) for o in out] == [
        ("127.0.0.1", "ok", 2), ("gpu-node-07", "partial", 0), ("h3", "no_hca", 0),
        ("h4", "timeout", 0)]
    assert out[0].detail == ("1 HCA port(s) on 1 device(s), 1 counter(s); journal: 2 port "
                             "event(s); ibstat: not installed")  # continuation line: no issue
    assert "journal: exit 1: Failed to open journal: Operation not permitted" in out[1].detail
    assert "some sysfs files unreadable" in out[1].detail
    assert "journal: h3: journalctl: no answer" in out[2].detail
    flap = [f for f in found if (GPU05, 1) in f.ends]
    assert len(flap) == 1 and sorted(flap[0].ends) == [(GPU05, 1), (LEAF02, 1)]
    assert flap[0].sources == {"dmesg"} and flap[0].duration_s == 7


def test_sysfs_root_is_rewritten_and_bad_output_is_parse_failed(tmp_path: Path) -> None:
    root = "/srv/fake/ib"
    settings = Settings(db=tmp_path / "a.duckdb",
                        hosts=HostSettings(names=("a", "b"), kernel_log="none", sysfs_root=root))
    colls = [
        HostCollection("a", "ok", results={"sysfs": _ok(sysfs_command(root),
                                                         _sysfs_text(GPU05, 3, root)),
                                           "ibstat": _ok(IBSTAT, "")}),
        HostCollection("b", "ok", results={"sysfs": _ok(sysfs_command(root), "garbage:1\n"),
                                           "ibstat": _ok(IBSTAT, "")}),
    ]
    with Store(settings.db) as store, store.transaction():
        out = store_hosts(store, settings, colls, T1, PortMap(None))
        counters = store.counter_deltas(T1 - timedelta(days=1), T2)
    assert [(o.status, o.detail.split(";")[0]) for o in out] == [
        ("ok", "1 HCA port(s) on 1 device(s), 1 counter(s)"),
        ("parse_failed", "b:sysfs:1: sysfs: expected /sys/class/infiniband/...:<value>: "
                         "'garbage:1'")]
    assert counters == []  # one reading only: no delta yet


# --- the allowlist -----------------------------------------------------------------------------

def test_host_allowlist_is_exact() -> None:
    plan = host_plan(HostSettings(kernel_log="dmesg"))
    assert [name for name, _ in plan] == ["sysfs", "ibstat", "dmesg", "boots"]
    assert plan[-1][1] == BOOTS_JOURNAL
    assert host_plan(HostSettings(kernel_log="none", boots="last"))[-1][1] == BOOTS_LAST
    assert [n for n, _ in host_plan(HostSettings(boots="none"))] == ["sysfs", "ibstat", "dmesg"]
    assert plan[0][1] == SYSFS_COMMAND
    for _, argv in plan:
        assert check_host_command(argv) == list(argv)
    assert check_host_command(JOURNAL) == list(JOURNAL)
    assert DMESG == ("env", "LC_ALL=C", "TZ=UTC", "dmesg", "-T")
    for bad in (["dmesg", "-C"], ["dmesg", "-T"], ["ibstat", "-p"], ["ibstat", "mlx5_0"],
                ["journalctl", "-k", "--rotate"], ["sh", "-c", "rm -rf /"],
                list(sysfs_command("/tmp/x"))):
        with pytest.raises(CollectError):
            check_host_command(bad)
    assert check_host_command(sysfs_command("/tmp/x"), "/tmp/x")[2].startswith(
        "grep -H . /tmp/x/*/ports/*/state ")


def test_every_sysfs_counter_read_is_one_the_parser_knows() -> None:
    counters = [f.removeprefix("counters/") for f in SYSFS_PORT_FILES if f.startswith("counters/")]
    assert counters
    assert [c for c in counters if c not in COUNTER_NAMES] == []


@pytest.mark.parametrize("root", ["relative/path", "/a b", "/x;reboot", "/$(id)", "/a/../b",
                                  "/x`id`", "/x/*", "/", "", "/a|b", "/~root"])
def test_sysfs_root_must_be_plain(root: str) -> None:
    with pytest.raises(ConfigError):
        check_sysfs_root(root)


def test_sysfs_root_trailing_slash_is_dropped() -> None:
    assert check_sysfs_root("/sys/class/infiniband/") == "/sys/class/infiniband"


def test_boot_records_become_host_events_and_a_failed_read_is_partial(tmp_path: Path) -> None:
    """`journalctl --list-boots` of a host (issue #20): each boot a host event of source
    `boots`; the same list read again stores nothing new; a host whose read failed is partial."""
    db = demo_db(tmp_path)
    settings = Settings(db=db, hosts=HostSettings(names=("gpu-node-05", "gpu-node-07"),
                                                  kernel_log="none", boots="journal"))
    listing = (Path(__file__).parent / "fixtures" / "boots" / "newer_systemd_252_utc.txt"
               ).read_text()
    sysfs = sysfs_command()

    def colls() -> list[HostCollection]:
        return [
            HostCollection("gpu-node-05", "ok", results={
                "sysfs": _ok(sysfs, _sysfs_text(GPU05, 0)), "ibstat": _ok(IBSTAT, ""),
                BOOTS: _ok(BOOTS_JOURNAL, listing)}),
            HostCollection("gpu-node-07", "ok", results={
                "sysfs": _ok(sysfs, _sysfs_text(GPU07, 0)), "ibstat": _ok(IBSTAT, ""),
                BOOTS: _ok(BOOTS_JOURNAL, "", 1, "No journal files were found.\n")})]

    with Store(db) as store:
        pm = PortMap(store.fabric(store.snapshot_times(T2, limit=1)[0]), settings.aliases)
        with store.transaction():
            out = store_hosts(store, settings, colls(), T2, pm)
        with store.transaction():
            store_hosts(store, settings, colls(), T2 + timedelta(hours=1), pm)
        rows = store.host_events(T1.replace(tzinfo=None) - timedelta(days=3650),
                                 T2.replace(tzinfo=None) + timedelta(days=3650))
    assert [(o.device, o.status) for o in out] == [("gpu-node-05", "ok"),
                                                    ("gpu-node-07", "partial")]
    assert "boots: 4 record(s)" in out[0].detail
    assert "boots: exit 1: No journal files were found." in out[1].detail
    assert len(rows) == 4 and {(r["host"], r["kind"], r["source_kind"]) for r in rows} == {
        ("gpu-node-05", "boot", "boots")}


def test_boot_record_commands_are_on_the_allowlist_and_read_only() -> None:
    assert check_host_command(BOOTS_JOURNAL) == list(BOOTS_JOURNAL)
    assert check_host_command(BOOTS_LAST) == list(BOOTS_LAST)
    with pytest.raises(CollectError):
        check_host_command(("journalctl", "--vacuum-time=1s"))
    with pytest.raises(CollectError):
        check_host_command(("env", "LC_ALL=C", "TZ=UTC", "last", "-x", "-F", "reboot",
                            "shutdown", ";", "rm"))
