"""The ibsim harness: net-file generation, the read-only guard, and the real diag tools on a
simulated 2 spine x 4 leaf x 2 host fat tree (LIDs: spines 1-2, leaves 3-6, hosts 7-14)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.simulate.ibsim import (
    FabricWriteError,
    FatTree,
    FatTree3,
    IbSim,
    IbSimError,
    check_read_only,
    expected_links,
    ibsim_limit_args,
    write_net_file,
)
from tests.ibsim_counters import inject_counter

SMALL = FatTree(spines=2, leaves=4, hosts_per_leaf=2)  # leaf ports 1-2 hosts, 3-4 spines
# 2 pods x (2 leaves + 2 spines), 2 cores (one per plane); LIDs cores 1-2, spines 3-6, leaves
# 7-10, hosts 11-18
THREE = FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=2, hosts_per_leaf=2)

# The conftest fixture: a skip outside CI, a failure in CI (where ibsim must be installed).
needs_ibsim = pytest.mark.usefixtures("need_ibsim")


def port_line(text: str, lid: int, port: int) -> str:
    """The iblinkinfo line of switch port (lid, port); fails the test if there is none."""
    pattern = re.compile(rf"^\s+{lid}\s+{port}\[  \] ==\(.*$", re.MULTILINE)
    found = pattern.findall(text)
    assert len(found) == 1, f"no single line for lid {lid} port {port}:\n{text}"
    return str(found[0])


# ---------------------------------------------------------------------- no simulator needed


def test_net_file_layout() -> None:
    text = write_net_file(SMALL)
    assert (SMALL.leaf_ports, SMALL.spine_ports) == (4, 4)
    assert len(re.findall(r"^Switch 4 ", text, re.MULTILINE)) == SMALL.switches == 6
    assert len(re.findall(r"^Hca 1 ", text, re.MULTILINE)) == SMALL.hosts == 8
    assert expected_links(SMALL) == 16
    assert 'Switch 4 "spine01" # "MF0;spine01:MQM8700/U1" enhanced port 0 lid 1' in text
    assert 'Switch 4 "leaf04" # "MF0;leaf04:MQM8700/U1" enhanced port 0 lid 6' in text
    assert 'Hca 1 "gpu-node-08" # "gpu-node-08 mlx5_0"' in text
    assert '[2] "leaf04"[2] # lid 14' not in text  # CA side names its own port 1
    assert '[1] "leaf04"[2] # lid 14' in text
    # leaf port H+s goes to spine s; spine port l goes to leaf l
    for line in ('[3] "spine01"[2]', '[2] "leaf02"[3]', '[4] "spine02"[4]', '[4] "leaf04"[4]'):
        assert line in text
    assert "caguid=0x0c42a10300000100" in text
    assert "caguid=0x0c42a10300000800" in text


def test_names_and_sizes_scale() -> None:
    big = FatTree(spines=64, leaves=128, hosts_per_leaf=32)
    assert (big.spine_name(1), big.leaf_name(1), big.host_name(1)) == (
        "spine01",
        "leaf001",
        "gpu-node-0001",
    )
    assert (big.leaf_ports, big.spine_ports, expected_links(big)) == (96, 128, 12288)
    assert big.host_lid(4096) == 192 + 4096
    # 4288 nodes and 28768 port slots exceed ibsim's defaults (2048 / 13312); 192 switches don't
    assert ibsim_limit_args(write_net_file(big)) == ["-N", "8192", "-P", "32768"]
    assert ibsim_limit_args(write_net_file(SMALL)) == []


def test_fat_tree_rejects_impossible_sizes() -> None:
    with pytest.raises(ValueError, match="leaf needs 4 ports"):
        FatTree(spines=2, leaves=4, hosts_per_leaf=2, leaf_ports=3)
    with pytest.raises(ValueError, match="at most 254"):
        FatTree(spines=2, leaves=300, hosts_per_leaf=1)
    assert FatTree(2, 4, 2, leaf_ports=8).leaf_ports == 8


def test_degrade_writes_masks_on_both_ends() -> None:
    text = write_net_file(SMALL, {("leaf02", "spine01"): "1x", ("leaf03", "spine02"): "EDR"})
    assert '[2] "leaf02"[3] w=1 s=7 e=7' in text
    assert '[3] "spine01"[2] w=1 s=7 e=7' in text
    assert '[3] "leaf03"[4] w=2 s=7 e=3' in text
    assert '[4] "spine02"[3] w=2 s=7 e=3' in text
    with pytest.raises(ValueError, match="mode"):
        write_net_file(SMALL, {("leaf02", "spine01"): "NDR"})
    with pytest.raises(ValueError, match="no link"):
        write_net_file(SMALL, {("leaf09", "spine01"): "1x"})


@pytest.mark.parametrize(
    "argv",
    [
        ("perfquery", "-R", "3", "1"),
        ("perfquery", "-xR", "3", "1"),
        ("perfquery", "-r", "3", "1"),
        ("perfquery", "--Reset_only", "3", "1"),
        ("perfquery", "--reset", "3", "1"),
        ("/usr/sbin/perfquery", "-a", "-x", "-R", "3"),
        ("ibqueryerrors", "--skip-sl", "-k"),
        ("ibqueryerrors", "-K"),
        ("ibqueryerrors", "--clear-errors"),
        ("ibclearcounters",),
        ("ibportstate", "3", "1", "disable"),
    ],
)
def test_run_refuses_fabric_writes(tmp_path: Path, argv: tuple[str, ...]) -> None:
    sim = IbSim(write_net_file(SMALL), tmp_path)  # refused before anything is started
    with pytest.raises(ValueError, match="refused"):
        sim.run(*argv)
    with pytest.raises(FabricWriteError):
        check_read_only(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ("perfquery", "-x", "3", "1"),
        ("perfquery", "-C", "ibsim0", "-P", "1"),
        ("perfquery", "-Cmlx5_0r"),  # the "r" is the -C value, not --reset_after_read
        ("ibqueryerrors", "--skip-sl", "-r", "--data"),  # -r here is --report-port
        ("ibportstate", "3", "1", "query"),
        ("iblinkinfo", "-R"),
    ],
)
def test_read_only_commands_pass(argv: tuple[str, ...]) -> None:
    check_read_only(argv)


# ---------------------------------------------------------------------- real tools on ibsim


@pytest.fixture
def fabric(tmp_path: Path) -> Iterator[IbSim]:
    with IbSim(write_net_file(SMALL), tmp_path) as sim:
        sim.opensm_once()
        yield sim


@pytest.mark.ibsim
@needs_ibsim
def test_discovery_tools_see_the_whole_tree(fabric: IbSim) -> None:
    disc = fabric.run("ibnetdiscover")
    assert disc.returncode == 0, disc.stderr
    assert len(re.findall(r"^Switch\s+4 ", disc.stdout, re.MULTILINE)) == 6
    assert len(re.findall(r"^Ca\s+1 ", disc.stdout, re.MULTILINE)) == 8
    assert '# "MF0;leaf01:MQM8700/U1" enhanced port 0 lid 3 lmc 0' in disc.stdout
    assert "switchguid=0xb8599f0300200001(b8599f0300200001)" in disc.stdout

    links = fabric.run("iblinkinfo")
    assert links.returncode == 0, links.stderr
    for name in SMALL.leaf_names() + SMALL.spine_names():
        assert re.search(rf"^Switch: 0x[0-9a-f]{{16}} MF0;{name}:MQM8700/U1:$", links.stdout, re.M)
    for name in SMALL.host_names():
        assert f"CA: {name} mlx5_0:" in links.stdout
    # every link is printed from both ends
    assert links.stdout.count("Active/  LinkUp") == 2 * expected_links(SMALL) == 32
    assert "Down/" not in links.stdout
    assert "4X        53.125 Gbps Active/  LinkUp" in port_line(links.stdout, 3, 3)

    errors = fabric.run("ibqueryerrors", "--skip-sl")
    assert errors.returncode == 0, errors.stderr
    assert "## Summary: 14 nodes checked, 0 bad nodes found" in errors.stdout

    counters = fabric.run("perfquery", "3", "3")
    assert counters.returncode == 0, counters.stderr
    assert "# Port counters: Lid 3 port 3" in counters.stdout
    assert re.search(r"^SymbolErrorCounter:\.+0$", counters.stdout, re.MULTILINE)


@pytest.mark.ibsim
@needs_ibsim
def test_unlink_takes_both_ends_down_and_relink_restores(fabric: IbSim) -> None:
    fabric.unlink("leaf02", 3)  # leaf02 (lid 4) port 3 <-> spine01 (lid 1) port 2
    down = fabric.run("iblinkinfo").stdout
    for lid, port in ((4, 3), (1, 2)):
        assert "Down/ Polling)==>" in port_line(down, lid, port)
    assert down.count("Active/  LinkUp") == 2 * expected_links(SMALL) - 2
    with pytest.raises(IbSimError, match="not linked"):
        fabric.unlink("leaf02", 3)

    fabric.relink("leaf02", 3)
    assert "Initialize/  LinkUp" in port_line(fabric.run("iblinkinfo").stdout, 4, 3)
    fabric.opensm_once()
    assert fabric.run("iblinkinfo").stdout.count("Active/  LinkUp") == 32


@pytest.mark.ibsim
@needs_ibsim
def test_injected_counters_show_in_perfquery_and_ibqueryerrors(fabric: IbSim) -> None:
    assert inject_counter(fabric, "leaf01", 3, "SymbolErrorCounter", 1234) == 1234
    assert inject_counter(fabric, "leaf01", 3, "PortCounters.LinkDownedCounter", 1000) == 255  # 8 bits
    counters = fabric.run("perfquery", "3", "3").stdout
    assert re.search(r"^SymbolErrorCounter:\.+1234$", counters, re.MULTILINE)
    assert re.search(r"^LinkDownedCounter:\.+255$", counters, re.MULTILINE)

    errors = fabric.run("ibqueryerrors", "--skip-sl")
    assert errors.returncode == 1  # ibqueryerrors exits 1 when it found errors
    assert 'Errors for 0xb8599f0300200001 "MF0;leaf01:MQM8700/U1"' in errors.stdout
    assert (
        "GUID 0xb8599f0300200001 port 3: [SymbolErrorCounter == 1234] [LinkDownedCounter == 255]"
        in errors.stdout
    )
    with pytest.raises(IbSimError, match="not found"):
        inject_counter(fabric, "no-such-node", 1, "SymbolErrorCounter", 1)


@pytest.mark.ibsim
@needs_ibsim
def test_degraded_links_train_slower(tmp_path: Path) -> None:
    slow = {("leaf02", "spine01"): "1x", ("leaf03", "spine02"): "EDR"}
    with IbSim(write_net_file(SMALL, slow), tmp_path) as sim:  # no SM: rates show anyway
        links = sim.run("iblinkinfo").stdout
    assert "==( 1X        53.125 Gbps Initialize/  LinkUp)==>" in port_line(links, 4, 3)
    assert "==( 1X        53.125 Gbps" in port_line(links, 1, 2)
    assert "==( 4X      25.78125 Gbps" in port_line(links, 5, 4)
    assert "==( 4X        53.125 Gbps" in port_line(links, 3, 3)


@pytest.mark.ibsim
@needs_ibsim
def test_simulator_never_outlives_the_context(tmp_path: Path) -> None:
    sim = IbSim(write_net_file(SMALL), tmp_path, name="harness-stop-test")

    def use_then_fail() -> None:
        with sim:
            assert sim.running
            assert sim.console("#hello").strip() == "#hello"  # ibsim echoes comments
            assert sim.run("ibnetdiscover").returncode == 0
            raise KeyError("boom")

    with pytest.raises(KeyError):
        use_then_fail()
    assert not sim.running
    assert not list(tmp_path.glob("sys-*"))
    assert not sim.fifo_path.exists()
    with pytest.raises(IbSimError, match="exited"):
        sim.run("iblinkinfo")


@pytest.mark.ibsim
@needs_ibsim
def test_start_failure_reports_ibsim_log(tmp_path: Path) -> None:
    broken = 'Switch 2 "sw" # "sw"\n[1] "nowhere"[1]\n\n'
    with pytest.raises(IbSimError, match="nowhere") as info, IbSim(broken, tmp_path):
        pass
    assert "exited" in str(info.value)


# ---------------------------------------------------------------------- three tiers


def test_three_tier_net_file_layout() -> None:
    text = write_net_file(THREE)
    assert (THREE.leaf_ports, THREE.spine_ports, THREE.core_ports) == (4, 3, 2)
    assert (THREE.leaves, THREE.spines, THREE.hosts, THREE.switches) == (4, 4, 8, 10)
    assert expected_links(THREE) == 8 + 4 * 2 + 4 * 1 == 20
    assert 'Switch 2 "core02" # "MF0;core02:MQM8700/U1" enhanced port 0 lid 2' in text
    assert 'Switch 3 "spine03" # "MF0;spine03:MQM8700/U1" enhanced port 0 lid 5' in text
    assert 'Switch 4 "leaf03" # "MF0;leaf03:MQM8700/U1" enhanced port 0 lid 9' in text
    assert '[1] "leaf04"[2] # lid 18' in text
    # core02 is plane 2: port p goes to pod p's second spine (spine02, spine04), their port 3
    for line in ('[1] "spine02"[3]', '[2] "spine04"[3]', '[3] "core02"[2]', '[3] "core01"[1]'):
        assert line in text
    # pod 2's leaves (leaf03, leaf04) go to pod 2's spines only, on leaf ports 3 and 4
    for line in ('[3] "spine03"[1]', '[4] "spine04"[2]', '[1] "leaf03"[3]', '[2] "leaf04"[4]'):
        assert line in text
    leaf03 = re.search(r'^Switch 4 "leaf03".*?\n\n', text, re.MULTILINE | re.DOTALL)
    assert leaf03 is not None
    assert re.findall(r'"(spine\d+)"', leaf03[0]) == ["spine03", "spine04"]
    # each link is written at both ends
    ends = re.findall(r'^\[\d+\] "', text, re.MULTILINE)
    assert len(ends) == 2 * expected_links(THREE)


def test_three_tier_rails_and_sizes() -> None:
    tree = FatTree3(pods=2, leaves_per_pod=4, spines_per_pod=2, cores=4, hosts_per_leaf=2,
                    rails=2)
    assert (tree.hosts, tree.core_ports, tree.spine_ports, expected_links(tree)) == (
        8, 2, 6, 16 + 16 + 8)
    # rails pair the leaves within a pod: host 3's rail 1 is on pod 1's leaf 4
    assert tree.host_attachment(3, 1) == (4, 1) and tree.leaf_pod(4) == 1
    assert tree.host_attachment(5, 0) == (5, 1) and tree.leaf_pod(5) == 2
    assert 'Hca 1 "gpu-node-03-mlx5_1" # "gpu-node-03 mlx5_1"' in write_net_file(tree)
    assert tree.lids()["gpu-node-08-mlx5_1"] == tree.switches + 16
    big = FatTree3(pods=8, leaves_per_pod=16, spines_per_pod=16, cores=64, hosts_per_leaf=16)
    assert (big.hosts, big.switches, big.spine_ports) == (2048, 320, 20)
    with pytest.raises(ValueError, match="multiple of spines_per_pod"):
        FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=3, hosts_per_leaf=1)
    with pytest.raises(ValueError, match="multiple of rails"):
        FatTree3(pods=2, leaves_per_pod=3, spines_per_pod=2, cores=2, hosts_per_leaf=1, rails=2)
    with pytest.raises(ValueError, match="no link leaf01-spine03"):
        write_net_file(THREE, degrade={("leaf01", "spine03"): "1x"})
    slow = write_net_file(THREE, degrade={("spine01", "core01"): "EDR"})
    assert slow.count(" w=2 s=7 e=3") == 2


def test_opensm_options_are_checked(tmp_path: Path) -> None:
    sim = IbSim(write_net_file(SMALL), tmp_path)
    with pytest.raises(ValueError, match="bad routing engine"):
        sim.opensm_once(routing_engine="ftree; reboot")
    with pytest.raises(ValueError, match="LMC"):
        sim.opensm_once(lmc=8)


@pytest.mark.ibsim
@needs_ibsim
def test_three_tier_tree_in_ibsim(tmp_path: Path) -> None:
    with IbSim(write_net_file(THREE), tmp_path) as sim:
        sim.opensm_once(routing_engine="ftree", dump_dir=tmp_path / "dumps")
        log = (sim.opensm_dir / "opensm.log").read_text()
        assert "ftree tables configured on all switches" in log
        assert (tmp_path / "dumps" / "opensm-lfts.dump").is_file()
        links = sim.run("iblinkinfo")
        assert links.returncode == 0, links.stderr
        assert links.stdout.count("Active/  LinkUp") == 2 * expected_links(THREE)
        disc = sim.run("ibnetdiscover")
        for name, lid in THREE.lids().items():
            assert re.search(rf'"{name if "node" in name else f"MF0;{name}:MQM8700/U1"}'
                             rf'.*\blid {lid}\b', disc.stdout), name
