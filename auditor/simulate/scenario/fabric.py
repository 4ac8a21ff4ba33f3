"""Fabric: `leaves` leaves each with one uplink to every spine (leaf ports 1..H hosts, H+s spine s;
spine port l is leaf l). With `hcas_per_host` R > 1 (the rails, at most one per GPU) the layout
is rail-optimised: leaves form groups of R (a scalable unit, SU), leaf k of an SU takes mlx5_k
of each of the SU's H hosts, so hosts = leaves / R * H; GPU d of a host uses rail d mod R.
GUIDs, OUIs and LIDs are drawn from the seed; names follow the prefixes.

The topology text it leaves: ibnetdiscover, and the site's inventory.csv and cabling.csv.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from auditor.simulate.scenario.clock import _ctime
from auditor.simulate.scenario.options import _MODELS, Scenario
from auditor.simulate.scenario.truth import End

# NVIDIA/Mellanox OUIs seen in real GUIDs; some start with 0 so unpadded printing is exercised.
_SWITCH_OUIS = (0xB8599F, 0x98039B, 0x1070FD, 0x9C0591, 0xFC6A1C, 0xE8EBD3)
_HCA_OUIS = (0x0C42A1, 0x043F72, 0x946DAE, 0x506B4B, 0xB83FD2, 0x58A2E1)


def _guid(g: int) -> str:
    return f"0x{g:016x}"


@dataclass(frozen=True, slots=True)
class _Switch:
    name: str
    guid: int
    lid: int
    leaf: bool
    num_ports: int
    desc: str


@dataclass(frozen=True, slots=True)
class _Hca:
    host: int
    rail: int
    guid: int  # node GUID; port 1 GUID = node GUID + 1, as in ibsim and the demo capture
    lid: int

    @property
    def device(self) -> str:
        return f"mlx5_{self.rail}"


@dataclass(frozen=True, slots=True)
class _Link:
    leaf: int  # switch index of the leaf end
    leaf_port: int
    hca: int | None  # host link: the HCA (its port 1)
    spine: int | None  # leaf-spine link: the spine
    spine_port: int = 0


@dataclass(slots=True)
class _Fabric:
    sc: Scenario
    speed: str
    switches: list[_Switch]
    hcas: list[_Hca]
    hosts: list[str]
    ips: list[str]
    links: list[_Link]
    host_hcas: list[list[int]]
    host_su: list[int]
    switch_links: list[list[int]]  # switch index -> link indices
    hca_link: list[int]
    # switch index -> [(port, "S"|"H", peer index, peer port)], by port
    adjacency: list[list[tuple[int, str, int, int]]]
    uplink: dict[tuple[int, int], int]  # (leaf, spine) -> link index

    def spine_for(self, hca: int) -> int:
        """The spine that traffic to this HCA crosses. Fat-tree routing (D-mod-K) picks the
        down path by destination, spreading a leaf's hosts and consecutive leaves over the
        spines, so it is fixed per destination whatever the source. (Three tiers: the spine's
        position within a pod.)"""
        return self.hcas[hca].host % self.sc.spines_per_pod

    def core_for(self, hca: int) -> int:
        """Three tiers: the core (switch index) that traffic from another pod to this HCA
        crosses, in the plane of `spine_for`, again chosen by destination (D-mod-K)."""
        sc = self.sc
        per_plane = sc.cores // sc.spines_per_pod
        host = self.hcas[hca].host
        return (sc.spines + sc.leaves + self.spine_for(hca) * per_plane
                + host // sc.spines_per_pod % per_plane)

    def _ring_links3(self, hosts: list[int]) -> dict[int, tuple[int, int, int]]:
        """`ring_links` in three tiers: up the source leaf to the destination's spine position
        in the source pod, through the destination's core when the pods differ, down the
        destination pod's spine to the destination leaf; both directions of each pair."""
        out: dict[int, tuple[int, int, int]] = {}
        lpp, spp = self.sc.leaves_per_pod, self.sc.spines_per_pod
        n = len(hosts)
        for i in range(n if n > 2 else 1):
            a, b = hosts[i], hosts[(i + 1) % n]
            if self.host_su[a] == self.host_su[b]:
                continue
            for rail in range(self.sc.hcas_per_host):
                ha, hb = self.host_hcas[a][rail], self.host_hcas[b][rail]
                la, lb = self.links[self.hca_link[ha]].leaf, self.links[self.hca_link[hb]].leaf
                pa, pb = (la - self.sc.spines) // lpp, (lb - self.sc.spines) // lpp
                for src, dst, dst_hca in ((la, lb, hb), (lb, la, ha)):
                    ps, pd = (pa, pb) if src == la else (pb, pa)
                    pos = self.spine_for(dst_hca)
                    up, down = ps * spp + pos, pd * spp + pos
                    out.setdefault(self.uplink[(src, up)], (a, b, rail))
                    if ps != pd:
                        core = self.core_for(dst_hca)
                        out.setdefault(self.uplink[(up, core)], (a, b, rail))
                        out.setdefault(self.uplink[(down, core)], (a, b, rail))
                    out.setdefault(self.uplink[(dst, down)], (a, b, rail))
        return out

    def ring_links(self, hosts: list[int]) -> dict[int, tuple[int, int, int]]:
        """Leaf-spine links an NCCL ring over `hosts` (in job order, one ring per rail)
        uses, each mapped to the first (host, peer host, rail) whose traffic crosses it."""
        if self.sc.cores:
            return self._ring_links3(hosts)
        out: dict[int, tuple[int, int, int]] = {}
        n = len(hosts)
        for i in range(n if n > 2 else 1):
            a, b = hosts[i], hosts[(i + 1) % n]
            if self.host_su[a] == self.host_su[b]:
                continue  # same leaf: the traffic never leaves it
            for rail in range(self.sc.hcas_per_host):
                ha, hb = self.host_hcas[a][rail], self.host_hcas[b][rail]
                la, lb = self.links[self.hca_link[ha]].leaf, self.links[self.hca_link[hb]].leaf
                sa, sb = self.spine_for(ha), self.spine_for(hb)
                # a -> b goes up la to sb and down to lb; b -> a up lb to sa, down to la.
                for leaf, spine in ((la, sb), (lb, sb), (lb, sa), (la, sa)):
                    out.setdefault(self.uplink[(leaf, spine)], (a, b, rail))
        return out

    def link_id(self, i: int) -> str:
        lk = self.links[i]
        leaf = f"{self.switches[lk.leaf].name}:{lk.leaf_port}"
        if lk.hca is not None:
            h = self.hcas[lk.hca]
            return f"{self.hosts[h.host]}/{h.device}:1={leaf}"
        assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
        return f"{leaf}={self.switches[lk.spine].name}:{lk.spine_port}"

    def switch_end(self, sw: int, port: int) -> End:
        s = self.switches[sw]
        return End("switch", s.name, _guid(s.guid), port, port_name=f"IB1/{port}")

    def ends(self, i: int) -> tuple[End, End]:
        lk = self.links[i]
        leaf = self.switch_end(lk.leaf, lk.leaf_port)
        if lk.hca is not None:
            h = self.hcas[lk.hca]
            hca = End("hca", self.hosts[h.host], _guid(h.guid), 1, device=h.device,
                      port_guid=_guid(h.guid + 1))
            return hca, leaf
        assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
        return leaf, self.switch_end(lk.spine, lk.spine_port)

    def logging_ends(self, i: int) -> list[tuple[int, int]]:
        """(switch, port) of each end that writes to the switch log: HCAs do not."""
        lk = self.links[i]
        out = [(lk.leaf, lk.leaf_port)]
        if lk.spine is not None:
            out.append((lk.spine, lk.spine_port))
        return out


def _build_fabric(sc: Scenario, rng: random.Random) -> _Fabric:
    _, model_ports, speed, _ = _MODELS[sc.switch_model]
    rails, per_leaf = sc.hcas_per_host, sc.hosts_per_leaf
    n_sw, n_hosts = sc.spines + sc.leaves + sc.cores, sc.hosts
    spp, lpp = sc.spines_per_pod, sc.leaves_per_pod
    cpp = sc.cores // spp
    n_hca = n_hosts * rails
    sw_oui, ca_oui = rng.choice(_SWITCH_OUIS), rng.choice(_HCA_OUIS)
    sw_serials = rng.sample(range(1, 1 << 24), n_sw)
    # CA serials are even so that port GUID = node GUID + 1 never hits another CA.
    ca_serials = [2 * s for s in rng.sample(range(1, 1 << 23), n_hca)]
    lids = rng.sample(range(1, n_sw + n_hca + 1), n_sw + n_hca)  # opensm's order is not ours

    def sw_width(n: int) -> int:
        return max(2, len(str(n)))

    hw = max(3, len(str(n_hosts)))
    hosts = [f"{sc.host_prefix}-{i + 1:0{hw}d}" for i in range(n_hosts)]
    switches: list[_Switch] = []
    for s in range(sc.spines):
        name = f"{sc.spine_prefix}{s + 1:0{sw_width(sc.spines)}d}"
        switches.append(_Switch(name, (sw_oui << 40) | (0x0300 << 24) | sw_serials[s], lids[s],
                                False, max(model_ports, lpp + cpp + 1),
                                f"MF0;{name}:{sc.switch_model}/U1"))
    for j in range(sc.leaves):
        name = f"{sc.leaf_prefix}{j + 1:0{sw_width(sc.leaves)}d}"
        k = sc.spines + j
        switches.append(_Switch(name, (sw_oui << 40) | (0x0300 << 24) | sw_serials[k], lids[k],
                                True, max(model_ports, per_leaf + spp + 1),
                                f"MF0;{name}:{sc.switch_model}/U1"))
    for c in range(sc.cores):
        name = f"core{c + 1:0{sw_width(sc.cores)}d}"
        k = sc.spines + sc.leaves + c
        switches.append(_Switch(name, (sw_oui << 40) | (0x0300 << 24) | sw_serials[k], lids[k],
                                False, max(model_ports, sc.pods + 1),
                                f"MF0;{name}:{sc.switch_model}/U1"))
    second = rng.randint(16, 200)
    ips = [f"10.{second}.{i // 250}.{i % 250 + 1}" for i in range(n_hosts)]

    hcas: list[_Hca] = []
    links: list[_Link] = []
    host_hcas: list[list[int]] = []
    host_su: list[int] = []
    hca_link: list[int] = []
    switch_links: list[list[int]] = [[] for _ in range(n_sw)]
    adjacency: list[list[tuple[int, str, int, int]]] = [[] for _ in range(n_sw)]
    for h in range(n_hosts):
        su, pos = divmod(h, per_leaf)
        host_su.append(su)
        mine: list[int] = []
        for r in range(rails):
            idx = len(hcas)
            hcas.append(_Hca(h, r, (ca_oui << 40) | (0x0300 << 24) | ca_serials[idx],
                             lids[n_sw + idx]))
            leaf = sc.spines + su * rails + r
            links.append(_Link(leaf, pos + 1, idx, None))
            hca_link.append(len(links) - 1)
            switch_links[leaf].append(len(links) - 1)
            adjacency[leaf].append((pos + 1, "H", idx, 1))
            mine.append(idx)
        host_hcas.append(mine)
    # Three tiers: a leaf's uplinks go to its pod's spines, its port on them is its place in
    # the pod; then every spine's uplinks to the cores of its plane (core port = pod).
    for j in range(sc.leaves):
        leaf = sc.spines + j
        pod, place = divmod(j, lpp)
        for position in range(spp):
            s = pod * spp + position
            links.append(_Link(leaf, per_leaf + position + 1, None, s, place + 1))
            switch_links[leaf].append(len(links) - 1)
            switch_links[s].append(len(links) - 1)
            adjacency[leaf].append((per_leaf + position + 1, "S", s, place + 1))
            adjacency[s].append((place + 1, "S", leaf, per_leaf + position + 1))
    for s in range(sc.spines if sc.cores else 0):
        pod, position = divmod(s, spp)
        for k in range(cpp):
            core = sc.spines + sc.leaves + position * cpp + k
            links.append(_Link(s, lpp + k + 1, None, core, pod + 1))
            switch_links[s].append(len(links) - 1)
            switch_links[core].append(len(links) - 1)
            adjacency[s].append((lpp + k + 1, "S", core, pod + 1))
            adjacency[core].append((pod + 1, "S", s, lpp + k + 1))
    for ports in adjacency:
        ports.sort()
    uplink = {(lk.leaf, lk.spine): i for i, lk in enumerate(links) if lk.spine is not None}
    return _Fabric(sc, speed, switches, hcas, hosts, ips, links, host_hcas, host_su,
                   switch_links, hca_link, adjacency, uplink)


# --------------------------------------------------------------------------- ibnetdiscover


def _ibnetdiscover(fab: _Fabric, at: datetime) -> str:
    """The default ibnetdiscover form, byte-for-byte the layout of the ibsim capture in
    auditor/demo_data: records in reverse discovery order (switches, then CAs), GUIDs unpadded
    in the id lines and port GUIDs, zero-padded in the quoted node ids."""
    sw_devid, _, _, ca_devid = _MODELS[fab.sc.switch_model]
    speed = f"4x{fab.speed}"
    first = fab.hcas[0]
    seen_sw: set[int] = set()
    seen_ca = {0}
    order_sw: list[int] = []
    order_ca = [0]
    queue = deque([fab.links[fab.hca_link[0]].leaf])
    seen_sw.add(queue[0])
    while queue:  # breadth first from the sweeping host's HCA, as ibnetdiscover walks
        sw = queue.popleft()
        order_sw.append(sw)
        for _, kind, peer, _ in fab.adjacency[sw]:
            if kind == "H" and peer not in seen_ca:
                seen_ca.add(peer)
                order_ca.append(peer)
            elif kind == "S" and peer not in seen_sw:
                seen_sw.add(peer)
                queue.append(peer)
    out = ["#", f"# Topology file: generated on {_ctime(at)}", "#",
           f"# Initiated from node {first.guid:016x} port {first.guid + 1:016x}"]
    for sw in reversed(order_sw):
        s = fab.switches[sw]
        out += ["", "vendid=0x2c9", f"devid=0x{sw_devid:x}", f"sysimgguid=0x{s.guid:x}",
                f"switchguid=0x{s.guid:x}({s.guid:x})",
                f'Switch\t{s.num_ports} "S-{s.guid:016x}"\t\t# "{s.desc}" enhanced port 0 '
                f"lid {s.lid} lmc 0"]
        for port, kind, peer, peer_port in fab.adjacency[sw]:
            if kind == "H":
                h = fab.hcas[peer]
                out.append(f'[{port}]\t"H-{h.guid:016x}"[1]({h.guid + 1:x}) \t\t# '
                           f'"{fab.hosts[h.host]} {h.device}" lid {h.lid} {speed}')
            else:
                p = fab.switches[peer]
                out.append(f'[{port}]\t"S-{p.guid:016x}"[{peer_port}]\t\t# "{p.desc}" '
                           f"lid {p.lid} {speed}")
    for ca in reversed(order_ca):
        h = fab.hcas[ca]
        lk = fab.links[fab.hca_link[ca]]
        s = fab.switches[lk.leaf]
        desc = f"{fab.hosts[h.host]} {h.device}"
        out += ["", "vendid=0x2c9", f"devid=0x{ca_devid:x}", f"sysimgguid=0x{h.guid:x}",
                f"caguid=0x{h.guid:x}", f'Ca\t1 "H-{h.guid:016x}"\t\t# "{desc}"',
                f'[1]({h.guid + 1:x}) \t"S-{s.guid:016x}"[{lk.leaf_port}]\t\t# lid {h.lid} '
                f'lmc 0 "{s.desc}" lid {s.lid} {speed}']
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- site files


def _inventory(fab: _Fabric) -> str:
    """Where things stand: each leaf at the top of its own rack with its hosts below it, the
    spines in racks of their own, two rows per site."""
    rows = ["name,site,row,rack,u"]
    leaves = [i for i, s in enumerate(fab.switches) if s.leaf]
    spines = [i for i, s in enumerate(fab.switches) if not s.leaf]
    rack_of: dict[int, str] = {}
    for n, i in enumerate(leaves):
        rack_of[i] = f"R{n + 1:03d}"
        rows.append(f"{fab.switches[i].name},DC1,{'A' if n % 2 == 0 else 'B'},{rack_of[i]},42")
    for n, i in enumerate(spines):
        rows.append(f"{fab.switches[i].name},DC1,C,S{n // 8 + 1:02d},{40 - 2 * (n % 8)}")
    placed: set[int] = set()
    filled: dict[int, int] = {}  # leaf -> hosts already racked under it
    row_of = {leaf: "A" if n % 2 == 0 else "B" for n, leaf in enumerate(leaves)}
    for link in fab.links:
        if link.hca is None or fab.hcas[link.hca].host in placed:
            continue
        host = fab.hcas[link.hca].host  # racked under the leaf of its first HCA
        placed.add(host)
        slot = filled.get(link.leaf, 0)
        filled[link.leaf] = slot + 1
        rows.append(f"{fab.hosts[host]},DC1,{row_of[link.leaf]},"
                    f"{rack_of.get(link.leaf, 'R000')},{2 + 4 * slot}")
    return "\n".join(rows) + "\n"


def _cabling(fab: _Fabric, host_optics: dict[int, tuple[str, str]] | None = None) -> str:
    """The cabling plan: copper DAC from hosts to their leaf, optics between leaves and spines,
    with serial numbers as printed on the cable label. `host_optics` (HCA -> part number and
    serial number of its transceiver): host links are SR4 optics instead (`optics` scenarios)."""
    rows = ["a_name,a_port,b_name,b_port,vendor,part_number,serial_number,length,type"]
    for n, link in enumerate(fab.links):
        leaf = fab.switches[link.leaf]
        if link.hca is not None:
            hca = fab.hcas[link.hca]
            part, serial, length, kind = "MCP1650-H002E30", f"MT2331VS{10000 + n:05d}", "2m", "DAC"
            if host_optics is not None:
                part, serial = host_optics[link.hca]
                length, kind = "30m", "SR4"
            rows.append(f"{fab.hosts[hca.host]},{hca.device}/1,{leaf.name},IB1/{link.leaf_port},"
                        f"NVIDIA,{part},{serial},{length},{kind}")
        elif link.spine is not None:
            spine = fab.switches[link.spine]
            rows.append(f"{leaf.name},IB1/{link.leaf_port},{spine.name},IB1/{link.spine_port},"
                        f"NVIDIA,MFS1S00-H010V,MT2330FT{10000 + n:05d},10m,AOC")
    return "\n".join(rows) + "\n"
