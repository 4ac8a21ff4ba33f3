"""Capture the forwarding-table fixtures (issue #23) from the real tools run against ibsim.

Developer script (needs ibsim-utils, infiniband-diags and opensm): writes the `.txt` captures
under tests/fixtures/{dump_lfts,opensm_lfts,opensm_fdbs,ibtracert}/ and, for a capture with no
`.json` yet, a `.json` holding only its "about": the expected records are written in by hand
(tests/test_fixtures.py prints what the parser makes of a capture whose `.json` has none).

    python scripts/capture_lft_fixtures.py

Fabrics: the 2 spine x 4 leaf x 2 host tree of the harness tests (LIDs: spines 1-2, leaves
3-6, hosts 7-14) and a three-tier tree of 2 pods x (2 leaves + 2 spines), 2 cores and 2 hosts a
leaf (LIDs: cores 1-2, spines 3-6, leaves 7-10, hosts 11-18).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from auditor.parse.dump_lfts import parse_dump_lfts
from auditor.parse.ibtracert import parse_ibtracert
from auditor.parse.opensm_lfts import parse_opensm_fdbs, parse_opensm_lfts
from auditor.simulate.ibsim import FatTree, FatTree3, IbSim, write_net_file

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
TWO_TIER = FatTree(spines=2, leaves=4, hosts_per_leaf=2)
THREE_TIER = FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=2, hosts_per_leaf=2)
TWO_TIER_NAME = "FatTree(spines=2, leaves=4, hosts_per_leaf=2)"
THREE_TIER_NAME = ("FatTree3(pods=2, leaves_per_pod=2, spines_per_pod=2, cores=2, "
                   "hosts_per_leaf=2)")
TOOLS = "infiniband-diags 44, ibsim 0.10"


def save(folder: str, case: str, text: str, about: str,
         parse: Callable[[str], Any]) -> None:
    parse(text)  # a capture the parser refuses is not a fixture yet: stop here
    out = FIXTURES / folder
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{case}.txt").write_text(text, encoding="utf-8")
    expected = out / f"{case}.json"
    if not expected.exists():
        expected.write_text(json.dumps({"about": about}, indent=1) + "\n", encoding="utf-8")
        sys.stdout.write(f"wrote {expected}: fill in the expected records\n")


def run(sim: IbSim, *argv: str, ok: tuple[int, ...] = (0,)) -> str:
    result = sim.run(*argv)
    if result.returncode not in ok:
        sys.exit(f"{argv} failed ({result.returncode}): {result.stderr}")
    return result.stdout


def two_tier(tmp: Path) -> None:
    where = f"ibsim, {TWO_TIER_NAME}"
    with IbSim(write_net_file(TWO_TIER), tmp / "two") as sim:
        dumps = tmp / "two-osm"
        sim.opensm_once(routing_engine="minhop", dump_dir=dumps)
        osm = "opensm 3.3.23 -R minhop"
        about = f"captured with {{}} ({TOOLS}) on {where}, {osm}"
        save("dump_lfts", "ibsim_2tier_minhop_sh_trailer", run(sim, "dump_lfts"),
             about.format("dump_lfts.sh (Debian: dump_lfts)"), parse_dump_lfts)
        save("dump_lfts", "ibsim_n_no_destination_info", run(sim, "dump_lfts", "-n"),
             about.format("dump_lfts.sh -n"), parse_dump_lfts)
        save("dump_lfts", "ibsim_a_illegal_port_255", run(sim, "dump_lfts", "-a"),
             about.format("dump_lfts.sh -a"), parse_dump_lfts)
        save("dump_lfts", "ibroute_D_direct_route_header", run(sim, "ibroute", "-D", "0,1"),
             about.format("ibroute -D 0,1"), parse_dump_lfts)
        save("opensm_lfts", "ibsim_2tier_minhop",
             (dumps / "opensm-lfts.dump").read_text(),
             f"opensm-lfts.dump written by opensm 3.3.23 --once -R minhop -D 0x43 "
             f"--dump_files_dir on {where} (the run of dump_lfts/ibsim_2tier_minhop_sh_trailer)",
             parse_opensm_lfts)
        save("opensm_fdbs", "ibsim_2tier_minhop", (dumps / "opensm.fdbs").read_text(),
             f"opensm.fdbs written by opensm 3.3.23 --once -R minhop -D 0x43 --dump_files_dir "
             f"on {where}", parse_opensm_fdbs)
        save("ibtracert", "ibsim_2tier_hca_to_hca", run(sim, "ibtracert", "7", "14"),
             about.format("ibtracert 7 14"), parse_ibtracert)
        save("ibtracert", "ibsim_n_simple_form", run(sim, "ibtracert", "-n", "7", "14"),
             about.format("ibtracert -n 7 14"), parse_ibtracert)
        # a host gone (its cable pulled) and no SM since: every table still routes its LID 14
        sim.unlink("gpu-node-08")
        save("dump_lfts", "ibsim_stale_node_info_not_available", run(sim, "dump_lfts"),
             about.format("dump_lfts.sh") + ", after 'Unlink \"gpu-node-08\"' (LID 14) and no "
             "SM run since", parse_dump_lfts)
        save("dump_lfts", "ibroute_stale_unknown_node_and_type", run(sim, "ibroute", "3"),
             about.format("ibroute 3") + ", after 'Unlink \"gpu-node-08\"' (LID 14) and no SM "
             "run since", parse_dump_lfts)
        sim.relink("gpu-node-08")
        # leaf01's uplink to spine01 pulled, no SM since: LID 14 is routed into the dead port
        sim.unlink("leaf01", 3)
        save("ibtracert", "ibsim_failed_stale_route", run(sim, "ibtracert", "7", "14", ok=(255,)),
             about.format("ibtracert 7 14") + ", after 'Unlink \"leaf01\"[3]' and no SM run "
             "since (rc 255; stderr: can't reach to/from ports)", parse_ibtracert)


def lmc_one(tmp: Path) -> None:
    where = f"ibsim, {TWO_TIER_NAME}"
    with IbSim(write_net_file(TWO_TIER), tmp / "lmc") as sim:
        dumps = tmp / "lmc-osm"
        sim.opensm_once(routing_engine="minhop", lmc=1, dump_dir=dumps)
        osm = "opensm 3.3.23 -R minhop -l 1 (hosts renumbered to even LIDs 8-23)"
        save("dump_lfts", "ibsim_lmc1_path_2_of_2", run(sim, "dump_lfts"),
             f"captured with dump_lfts.sh ({TOOLS}) on {where}, {osm}", parse_dump_lfts)
        save("opensm_lfts", "ibsim_lmc1_two_lids_a_port",
             (dumps / "opensm-lfts.dump").read_text(),
             f"opensm-lfts.dump written by {osm} -D 0x43 --dump_files_dir on {where}",
             parse_opensm_lfts)
        save("opensm_fdbs", "ibsim_lmc1_unreachable_unused_lid",
             (dumps / "opensm.fdbs").read_text(),
             f"opensm.fdbs written by {osm} -D 0x43 --dump_files_dir on {where}: LID 7 is no "
             "port's any more", parse_opensm_fdbs)


def three_tier(tmp: Path) -> None:
    where = f"ibsim, {THREE_TIER_NAME}"
    with IbSim(write_net_file(THREE_TIER), tmp / "three") as sim:
        dumps = tmp / "three-osm"
        sim.opensm_once(routing_engine="ftree", dump_dir=dumps)
        osm = "opensm 3.3.23 -R ftree"
        save("dump_lfts", "ibsim_3tier_ftree", run(sim, "dump_lfts"),
             f"captured with dump_lfts.sh ({TOOLS}) on {where}, {osm}", parse_dump_lfts)
        save("opensm_lfts", "ibsim_3tier_ftree", (dumps / "opensm-lfts.dump").read_text(),
             f"opensm-lfts.dump written by {osm} -D 0x43 --dump_files_dir on {where}",
             parse_opensm_lfts)
        pairs = sim.workdir / "pairs"  # named relative to the tool's cwd: the same every run
        # gpu-node-01 to a host under its own leaf, its pod's other leaf and the other pod
        pairs.write_text("11 12\n11 13\n11 16\n16 11\n")
        save("ibtracert", "ibsim_ports_file_3tier_cross_pod",
             run(sim, "ibtracert", "--ports-file", pairs.name),
             f"captured with ibtracert --ports-file ({TOOLS}) on {where}, {osm}; the file "
             "held '11 12', '11 13', '11 16', '16 11'", parse_ibtracert)
        # one whole run for the path walk's own test: links, tables and every HCA pair traced
        run_dir = FIXTURES / "paths" / "ibsim_3tier_ftree"
        run_dir.mkdir(parents=True, exist_ok=True)
        hcas = [THREE_TIER.host_lid(h) for h in range(1, THREE_TIER.hosts + 1)]
        pairs.write_text("".join(f"{a} {b}\n" for a in hcas for b in hcas if a != b))
        for name, argv in (("ibnetdiscover-p", ["ibnetdiscover", "-p"]),
                           ("dump_lfts", ["dump_lfts"]),
                           ("ibtracert", ["ibtracert", "--ports-file", pairs.name])):
            (run_dir / f"{name}.txt").write_text(run(sim, *argv), encoding="utf-8")
        (run_dir / "about.txt").write_text(
            f"captured with ibnetdiscover -p, dump_lfts.sh and ibtracert --ports-file (every "
            f"ordered pair of the 8 HCA ports) ({TOOLS}) on {where}, {osm}\n", encoding="utf-8")
        save("ibtracert", "ibsim_switch_to_switch",
             run(sim, "ibtracert", "7", "8"),
             f"captured with ibtracert 7 8 ({TOOLS}) on {where}, {osm}: leaf to leaf, ends "
             "at port 0", parse_ibtracert)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        two_tier(Path(tmp))
        lmc_one(Path(tmp))
        three_tier(Path(tmp))


if __name__ == "__main__":
    main()
