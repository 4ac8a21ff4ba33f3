"""Host-side (HCA end) parsers: ibstat, the /sys/class/infiniband dump, and the kernel log
(their fixtures run in tests/test_fixtures.py).

Fixture provenance:
* ibstat/ibsim_simulator_ca: verbatim research notes: ibsim/ibstat.txt (rdma-core 44
  ibstat against ibsim; "CA type: simulator", "Rate: 104", "Link layer: IB").
* ibstat/cx6_hdr_second_hca_down_polling_lid_65535, mlx4_dual_port_fdr10_and_roce: written
  here in the format of rdma-core infiniband-diags/ibstat.c (ca_dump/port_dump printf strings:
  tabs, `Rate: 40 (FDR10)`, `0x%016` GUIDs) with our own GUIDs; not captured from hardware.
* sysfs_ib/two_hca_down_port_saturated_counters: written here as `grep -H .` prints the files
  of SYSFS_COMMAND in glob order, values in the drivers/infiniband/core/sysfs.c formats; it is
  the same host as the cx6 ibstat fixture (same GUIDs, states). Counters at their IBTA maximum
  (8-bit 255, 16-bit 65535, 4-bit 15) on the down port.
* dmesg/plain_monotonic_*, syslog_rfc3164_and_freebsd_unsupported: verbatim lines from
  research notes: switch/syslog-samples.txt section 5.
* dmesg/dmesg_T_local_time_plus_0100: the plain_monotonic_cable_plugged_link_up lines converted
  to `dmesg -T` form for a host at UTC+1 booted 2026-11-29 21:23:53 local.
* dmesg/plain_monotonic_boot_banner_dsm_4_4: verbatim dmesg lines of fbelavenuto/arpl#621 (the
  `Command line:` line, which holds serial numbers and MACs, left out);
  dmesg/syslog_rfc3164_boot_banner_no_year: verbatim line of systemd/systemd#28981;
  dmesg/journal_short_iso_two_boots_banner: the arpl#621 lines converted to journal form for two
  boots (each .json says so in its "about").
* dmesg/journal_short_iso_ipoib_flap: the linux-rdma IPoIB lines and the cubecos `eth1: Link up`
  line converted to `journalctl -k -o short-iso` form; the `Event 10` and `eth1: Link down`
  lines are constructed from the same format strings (no captured link-down line is public).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.collect.hostcmd import SYSFS_COMMAND
from auditor.errors import ParseError
from auditor.parse.dmesg import DmesgResult, parse_dmesg
from auditor.parse.ibstat import HcaPort, parse_ibstat
from auditor.parse.sysfs_ib import (
    SysfsSnapshot,
    parse_sysfs_ib,
    to_counter_samples,
)
from tests.strategies import near_miss

FIXTURES = Path(__file__).parent / "fixtures"
KINDS = ("ibstat", "sysfs_ib", "dmesg")
CASES = sorted(p for kind in KINDS for p in (FIXTURES / kind).glob("*.txt"))


def _tz(spec: str | None) -> tzinfo:
    if spec is None:
        return UTC
    sign = -1 if spec.startswith("-") else 1
    hours, minutes = spec[1:].split(":")
    return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))


def test_ibstat_fixtures_name_guids_in_lower_case_hex() -> None:
    for path in sorted((FIXTURES / "ibstat").glob("*.txt")):
        for p in parse_ibstat(path.read_text()):
            for guid in (p.node_guid, p.port_guid):
                assert guid.startswith("0x") and len(guid) == 18 and guid == guid.lower()


# --- ibstat -----------------------------------------------------------------------------------


def _fixture_lines(case: str) -> list[str]:
    return (FIXTURES / f"{case}.txt").read_text().split("\n")


def test_ibstat_empty_output_means_no_devices() -> None:
    assert parse_ibstat("") == []
    assert parse_ibstat("\n\n") == []


def test_ibstat_tabs_turned_into_spaces_still_parse() -> None:
    text = (FIXTURES / "ibstat/cx6_hdr_second_hca_down_polling_lid_65535.txt").read_text()
    assert parse_ibstat(text.replace("\t", "    ")) == parse_ibstat(text)
    assert parse_ibstat(text.replace("\n", "\r\n")) == parse_ibstat(text)


def test_ibstat_rate_forms_and_initializing() -> None:
    text = (FIXTURES / "ibstat/ibsim_simulator_ca.txt").read_text()
    sdr = parse_ibstat(
        text.replace("Rate: 104", "Rate: 2.5").replace("State: Active", "State: Initializing")
    )
    assert (sdr[0].rate, sdr[0].state) == (2.5, "Initialize")


@pytest.mark.parametrize(
    ("case", "line_no", "edit", "reason"),
    [
        ("ibstat/ibsim_simulator_ca", 17, lambda s: "\t\tLink l", "expected 'Key: value'"),
        ("ibstat/ibsim_simulator_ca", 17, lambda s: "\t\tLink layer: IPoIB", "link layer"),
        ("ibstat/ibsim_simulator_ca", 9, lambda s: "\t\tState: Sleeping", "unknown port state"),
        ("ibstat/ibsim_simulator_ca", 10, lambda s: "\t\tPhysical state: Up", "physical state"),
        ("ibstat/ibsim_simulator_ca", 11, lambda s: "\t\tRate: fast", "expected a rate"),
        ("ibstat/ibsim_simulator_ca", 6, lambda s: "\tNode GUID: 1070fd03", "expected 0x<GUID>"),
        ("ibstat/ibsim_simulator_ca", 16, lambda s: "\t\tPort GUID: 0xzz", "expected 0x<GUID>"),
        ("ibstat/ibsim_simulator_ca", 12, lambda s: "\t\tBase lid: -1", "decimal number"),
        ("ibstat/ibsim_simulator_ca", 15, lambda s: "\t\tCapability mask: 5", "capability"),
        ("ibstat/ibsim_simulator_ca", 14, lambda s: "\t\tLMC: 0", "field repeated"),
        ("ibstat/ibsim_simulator_ca", 7, lambda s: "\tCA type: x", "field repeated"),
        ("ibstat/ibsim_simulator_ca", 7, lambda s: "\tPorts: 1", "unknown ibstat field"),
        ("ibstat/ibsim_simulator_ca", 7, lambda s: "\tState: Active", "before any 'Port N:'"),
        ("ibstat/ibsim_simulator_ca", 1, lambda s: "CA: 'ibsim0'", "one-port form"),
        ("ibstat/ibsim_simulator_ca", 1, lambda s: "Switch 'sw0'", "not a channel adapter"),
        ("ibstat/ibsim_simulator_ca", 1, lambda s: "\tCA type: simulator", "expected a CA"),
        ("ibstat/ibsim_simulator_ca", 8, lambda s: "\tPort 1", "expected 'Key: value'"),
        (
            "ibstat/mlx4_dual_port_fdr10_and_roce",
            18,
            lambda s: s.replace("2", "1"),
            "port repeated",
        ),
        (
            "ibstat/mlx4_dual_port_fdr10_and_roce",
            27,
            lambda s: "\tCA type: MT4099",
            "CA field after the port blocks",
        ),
        (
            "ibstat/mlx4_dual_port_fdr10_and_roce",
            11,
            lambda s: "\t\tRate: 40 (QDR)",
            "expected a rate",
        ),
    ],
)
def test_ibstat_error_line(
    case: str, line_no: int, edit: Callable[[str], str], reason: str
) -> None:
    lines = _fixture_lines(case)
    lines[line_no - 1] = edit(lines[line_no - 1])
    with pytest.raises(ParseError, match=reason) as err:
        parse_ibstat("\n".join(lines))
    assert (err.value.kind, err.value.line_no) == ("ibstat", line_no)
    assert err.value.line == lines[line_no - 1]


def test_ibstat_truncated_capture_is_caught_at_its_header() -> None:
    lines = _fixture_lines("ibstat/mlx4_dual_port_fdr10_and_roce")
    with pytest.raises(ParseError, match="declares 2 ports but has 1") as err:
        parse_ibstat("\n".join(lines[:17]))  # ends after port 1's "Link layer"
    assert err.value.line_no == 1
    with pytest.raises(ParseError, match="port block has no Port GUID, Link layer") as err:
        parse_ibstat("\n".join(lines[:25]))  # port 2 cut after "Capability mask"
    assert err.value.line_no == 18


def test_ibstat_rejects_port_list_output() -> None:
    sample = (Path(__file__).parent / "fixtures" / "reference" / "ibstat-p.txt").read_text()
    with pytest.raises(ParseError, match="expected a CA") as err:
        parse_ibstat(sample)
    assert err.value.line_no == 1


# --- sysfs -------------------------------------------------------------------------------------

_SYSFS_CASE = "sysfs_ib/two_hca_down_port_saturated_counters"


def test_sysfs_agrees_with_ibstat_for_the_same_host() -> None:
    hca = parse_ibstat(
        (FIXTURES / "ibstat/cx6_hdr_second_hca_down_polling_lid_65535.txt").read_text()
    )
    snap = parse_sysfs_ib((FIXTURES / f"{_SYSFS_CASE}.txt").read_text())
    assert len(hca) == 2  # the second HCA's port is down
    for port in hca:
        sys_port = snap.port(port.device, port.port)
        assert sys_port is not None
        assert (sys_port.state, sys_port.phys_state) == (port.state, port.phys_state)
        assert sys_port.rate is not None and sys_port.rate.startswith(f"{port.rate:g} Gb/sec")
        assert snap.node_guids[port.device] == port.node_guid
    assert snap.port("mlx5_9", 1) is None


def test_sysfs_empty_output_is_an_empty_snapshot() -> None:
    assert parse_sysfs_ib("") == SysfsSnapshot({}, [])


def test_sysfs_value_forms() -> None:
    root = "/sys/class/infiniband/ibp65s0/ports/2"
    snap = parse_sysfs_ib(
        f"{root}/state:5: ACTIVE_DEFER\n"
        f"{root}/phys_state:7: Phy Test\n"
        f"{root}/rate:2.5 Gb/sec (1X SDR)\n"
        f"{root}/counters/port_xmit_wait:4294967295\n"
    )
    (port,) = snap.ports
    assert (port.device, port.port, port.state, port.phys_state) == (
        "ibp65s0",
        2,
        "ACTIVE_DEFER",
        "PhyTest",
    )
    assert (port.width, port.speed) == ("1X", "SDR")
    assert port.counters == {"PortXmitWait": 4294967295}
    # No node_guid line for the device: the sample has no GUID rather than a wrong one.
    (sample,) = to_counter_samples(snap, host="gpu-node-08")
    assert (sample.guid, sample.port, sample.description) == (None, 2, "gpu-node-08 ibp65s0")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "grep: /sys/class/infiniband/*/ports/*/state: No such file or directory",
            "expected /sys/class/infiniband",
        ),
        ("/sys/class/infiniband/mlx5_7/ports/1/state:ACTIVE", "expected '<n>: <STATE>'"),
        ("/sys/class/infiniband/mlx5_7/ports/1/rate:200 Gb/s", "expected '<n> Gb/sec"),
        ("/sys/class/infiniband/mlx5_7/ports/1/counters/link_downed:-1", "counter value"),
        ("/sys/class/infiniband/mlx5_0/ports/1/counters/np_cnp_sent:0", "unknown counter"),
        ("/sys/class/infiniband/mlx5_0/ports/1/lid:0x17", "expected /sys/class/infiniband"),
        ("/sys/class/infiniband/mlx5_0/node_guid:1070fd0300123456", "xxxx:xxxx:xxxx:xxxx"),
        ("/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE", "file repeated"),
    ],
)
def test_sysfs_error_line(line: str, reason: str) -> None:
    lines = _fixture_lines(_SYSFS_CASE)
    lines.insert(5, line)
    with pytest.raises(ParseError, match=reason) as err:
        parse_sysfs_ib("\n".join(lines))
    assert (err.value.kind, err.value.line_no, err.value.line) == ("sysfs", 6, line)


def test_sysfs_truncated_last_line() -> None:
    lines = [line for line in _fixture_lines(_SYSFS_CASE) if line]
    lines[-1] = lines[-1][:-3]
    with pytest.raises(ParseError) as err:
        parse_sysfs_ib("\n".join(lines))
    assert err.value.line_no == len(lines)


def test_sysfs_command_against_a_fake_tree(tmp_path: Path) -> None:
    """Runs the exact command string over a copy of the sysfs layout: globs, grep -H format."""
    expected = parse_sysfs_ib((FIXTURES / f"{_SYSFS_CASE}.txt").read_text())
    root = tmp_path / "class/infiniband"
    for device, guid in expected.node_guids.items():
        (root / device).mkdir(parents=True)
        g = guid[2:]
        (root / device / "node_guid").write_text(
            ":".join(g[i : i + 4] for i in (0, 4, 8, 12)) + "\n"
        )
    for line in _fixture_lines(_SYSFS_CASE):
        path, _, value = line.partition(":")
        if line and not path.endswith("node_guid"):
            file = root / path.removeprefix("/sys/class/infiniband/")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(value + "\n")
    # A sysfs attribute the command does not read, and an empty file grep skips.
    (root / "mlx5_0/ports/1/lid").write_text("0x17\n")
    (root / "mlx5_0/ports/1/counters/port_xmit_wait").write_text("")
    assert SYSFS_COMMAND[:2] == ("sh", "-c")
    script = SYSFS_COMMAND[2].replace("/sys/class/infiniband", str(root))
    run = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stderr) == (0, "")
    assert parse_sysfs_ib(run.stdout.replace(str(root), "/sys/class/infiniband")) == expected


# --- dmesg -------------------------------------------------------------------------------------

_BOOT = datetime(2026, 11, 29, 20, 23, 53, tzinfo=UTC)


def _one(line: str, **kwargs: Any) -> DmesgResult:
    return parse_dmesg(line, host="gpu-node-07", **kwargs)


def test_dmesg_ctime_and_monotonic_forms_give_the_same_events() -> None:
    plain = (FIXTURES / "dmesg/plain_monotonic_cable_plugged_link_up.txt").read_text()
    ctime = (FIXTURES / "dmesg/dmesg_T_local_time_plus_0100.txt").read_text()
    a = parse_dmesg(plain, host="h", boot_time=_BOOT)
    b = parse_dmesg(ctime, host="h", tz=_tz("+01:00"))
    assert a.events
    # dmesg -T drops the fraction of a second.
    assert [(e.at.replace(microsecond=0), e.state, e.port_name) for e in a.events] == [
        (e.at, e.state, e.port_name) for e in b.events
    ]


@pytest.mark.parametrize(
    ("line", "state", "port_name", "code"),
    [
        # ib_cache_update() state print (linux-rdma 2025 "IB/cache: Add log messages ...").
        ("[  812.000100] mlx5_core 0000:08:00.0 mlx5_0: Port DOWN", "down", "mlx5_0/1", None),
        (
            "[  812.000100] mlx5_core 0000:08:00.0 rocep8s0f0: Port ACTIVE",
            "up",
            "rocep8s0f0/1",
            None,
        ),
        # mlx5 events.c error form; kernels before 4.20 add "port_module:<line>:(pid N): ".
        (
            "[  812.000100] mlx5_core 0000:af:00.0: port_module:1094:(pid 0): Port module "
            "event[error]: module 0, Cable error, Bad or shorted cable/module",
            "module_error",
            "0000:af:00.0",
            None,
        ),
        (
            "[  812.000100] mlx5_core 0000:AF:00.0: Port module event: module 1, Cable unplugged",
            "module_unplugged",
            "0000:af:00.0",
            None,
        ),
        (
            "[  812.000100] mlx5_core 0000:af:00.0: Port module event: module 1, Cable disabled",
            "module_disabled",
            "0000:af:00.0",
            None,
        ),
        ("[  812.000100] mlx5_ib: mlx5_1 port 1 state changed to DOWN", "down", "mlx5_1/1", None),
        (
            "[  812.000100] mlx5_ib: mlx5_3: port 2 link state changing to ACTIVE",
            "up",
            "mlx5_3/2",
            None,
        ),
        ("[  812.000100] ib0.8001: Event 10 on device mlx5_2 port 1", "down", "mlx5_2/1", "10"),
        (
            "[  812.000100] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",
            "down",
            "enp1s0f0np0",
            None,
        ),
        # dmesg -x and dmesg -r prefixes.
        ("kern  :info  : [  812.000100] mlx5_core 0000:01:00.0 ib0: Link up", "up", "ib0", None),
        ("<6>[  812.000100] mlx5_core 0000:01:00.0 ib0: Link up", "up", "ib0", None),
    ],
)
def test_dmesg_recognised_lines(line: str, state: str, port_name: str, code: str | None) -> None:
    result = _one(line, boot_time=_BOOT)
    (event,) = result.events
    assert (event.state, event.port_name, event.code, event.device) == (
        state,
        port_name,
        code,
        "gpu-node-07",
    )
    assert event.at == _BOOT + timedelta(seconds=812, microseconds=100)
    assert event.at.tzinfo is UTC and event.line_no == 1


@pytest.mark.parametrize(
    "line",
    [
        "[  812.000100] mlx5_core 0000:08:00.0 mlx5_0: Port INIT",
        "[  812.000100] mlx5_core 0000:08:00.0 mlx5_0: Port ARMED",
        "[  812.000100] ib0: Event 13 on device mlx5_0 port 1",
        "[  812.000100] IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
        "[  812.000100] mlx5_core 0000:01:00.0: E-Switch: cleanup",
        "[  812.000100] nvme nvme0: SHUTDOWN of port 1 requested",
        "2026-11-30T06:28:57+0000 gpu-node-07 systemd-networkd[812]: ib0: Lost carrier",
        "-- No entries --",
    ],
)
def test_dmesg_ignored_lines(line: str) -> None:
    assert _one(line, boot_time=_BOOT) == DmesgResult([], [], 1)
    assert _one(line) == DmesgResult([], [], 1)  # no boot time needed to ignore a line


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("mlx5_core 0000:01:00.0 enp1s0f0: Link up", "unrecognised time stamp"),
        ("[Mon Nov 31 06:28:57 2026] mlx5_core 0000:01:00.0 enp1s0f0: Link up", "bad date"),
        (
            "[Mo Okt 30 06:28:57 2026] mlx5_core 0000:01:00.0 enp1s0f0: Link up",
            "unknown month name",
        ),
        ("2026-11-30T25:00:00+0000 h kernel: mlx5_core 0000:01:00.0 ib0: Link up", "bad ISO"),
        ("2026-11-30T06:28:57+0000 mlx5_core 0000:01:00.0 ib0: Link up", "expected '<host>"),
        ("[999999999999.000000] mlx5_core 0000:01:00.0 ib0: Link up", "out of range"),
    ],
)
def test_dmesg_unparsed_lines(line: str, reason: str) -> None:
    result = _one("\n" + line, boot_time=_BOOT)
    assert result.events == [] and result.ignored == 0
    ((line_no, text, why),) = result.unparsed
    assert (line_no, text) == (2, line) and reason in why


def test_dmesg_time_forms() -> None:
    msg = "mlx5_core 0000:01:00.0 ib0: Link down"
    want = datetime(2026, 11, 30, 5, 28, 57, 421015, tzinfo=UTC)
    lines = [
        f"2026-11-30T06:28:57,421015+01:00 {msg}",  # dmesg --time-format iso
        f"2026-11-30T05:28:57.421015+0000 gpu-node-07 kernel: {msg}",  # short-iso-precise
        # rsyslog RSYSLOG_FileFormat with imklog's monotonic stamp left in the message.
        f"2026-11-30T05:28:57.421015+00:00 gpu-node-07 kernel: [ 3.5] {msg}",
        f"2026-11-30T06:28:57.421015 gpu-node-07 kernel: {msg}",  # no offset: the host's tz
    ]
    result = parse_dmesg("\r\n".join(lines), host="h", tz=_tz("+01:00"))
    assert [e.at for e in result.events] == [want] * 4
    assert {e.message for e in result.events} == {msg}
    # A naive boot time is the host's local time too.
    local_boot = datetime(2026, 11, 30, 6, 28, 56)  # noqa: DTZ001
    naive = parse_dmesg("[1.421015] " + msg, host="h", tz=_tz("+01:00"), boot_time=local_boot)
    assert [e.at for e in naive.events] == [want]


def test_dmesg_ctime_in_a_zone_with_dst() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    text = (
        "[Sat Jul  4 12:00:00 2026] mlx5_core 0000:01:00.0 ib0: Link down\n"
        "[Mon Nov 30 12:00:00 2026] mlx5_core 0000:01:00.0 ib0: Link up\n"
    )
    result = parse_dmesg(text, host="h", tz=berlin)
    assert [e.at.hour for e in result.events] == [10, 11]


# --- fuzzing -----------------------------------------------------------------------------------

_near_miss_text = st.lists(
    near_miss([line for path in CASES for line in path.read_text().split("\n")]),
    max_size=30).map("\n".join)
_FUZZ = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)


@pytest.mark.parametrize("kind", ["ibstat", "sysfs"])
@_FUZZ
@given(text=st.one_of(st.text(), _near_miss_text))
def test_fuzz_ibstat_sysfs_only_parse_errors(kind: str, text: str) -> None:
    error: ParseError | None = None
    try:
        result = parse_ibstat(text) if kind == "ibstat" else parse_sysfs_ib(text)
    except ParseError as exc:
        error = exc
    if error is not None:
        assert error.kind == kind
        assert 0 <= error.line_no <= text.count("\n") + 1
    elif isinstance(result, list):
        assert all(isinstance(p, HcaPort) and p.node_guid.startswith("0x") for p in result)
    else:
        assert all(len(g) == 18 for g in result.node_guids.values())


@_FUZZ
@given(
    text=st.one_of(st.text(), _near_miss_text),
    boot=st.one_of(st.none(), st.datetimes(timezones=st.just(UTC))),
    offset=st.integers(-14 * 60, 14 * 60),
)
def test_fuzz_dmesg_never_raises(text: str, boot: datetime | None, offset: int) -> None:
    tz = timezone(timedelta(minutes=offset))
    result = parse_dmesg(text, host="h", boot_time=boot, tz=tz)
    lines = text.replace("\r\n", "\n").split("\n")
    counted = len(result.events) + len(result.boots) + len(result.unparsed) + result.ignored
    assert counted == sum(1 for line in lines if line.strip())
    for boot in result.boots:
        assert boot.at.tzinfo is UTC and boot.host == "h" and boot.kind == "boot"
    for event in result.events:
        assert event.at.tzinfo is UTC and event.device == "h"
        assert 1 <= event.line_no <= len(lines)
    for line_no, line, reason in result.unparsed:
        assert lines[line_no - 1] == line and reason
