"""Forwarding tables (`lfts`, issue #23): the routes the subnet manager (SM) writes into the
switches of the scenario's fat tree, its reroutes around leaf-spine links that stay down, and
the `dump_lfts.sh` captures the sweep keeps. The job model decides which connections a flap
breaks from these tables, through `auditor.analyse.paths.Routes` (the code that traces paths
in captured tables), so the truth of which flows crossed which uplink is the tables' own.

Routing. Destination-based, as every LFT is (a DLID maps to one out port):

- the HCA ports of host h (hosts numbered leaf by leaf; every rail of a host alike): every
  other leaf sends them up to spine h mod S (S spines), each spine down to the port's leaf.
  That is D-mod-K (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift
  Permutations on Real Life Fat Trees", 2010) with D the host's index, and what opensm's
  ftree engine assigns when a leaf has a multiple of S hosts: it routes each leaf's CAs in
  port order, each through the least-loaded up port group, the lowest index on a tie
  (linux-rdma/opensm@3.3.24 opensm/osm_ucast_ftree.c:2800-2870 fabric_route_to_cns,
  2480-2501 the choice, 2071-2093 port_group_compare_load_down), so the k-th host of a leaf
  goes through the spine of index k mod S. It is the rule the job model always used
  (`fabric._Fabric.spine_for`): with `lfts` every job keeps the footprint it had without.
- a leaf's LID: up through spine (leaf number mod S); a spine's LID: from each leaf straight
  up; spine to spine: no route. ftree and updn drop such down-up routes (on ibsim `ibtracert`
  from one spine to another fails under both: reference/ibsim/routing.md).

Reroutes. The trap of a port state change makes opensm force a heavy sweep at once
(osm_trap_rcv.c:613-630; `sweep_on_trap` is TRUE by default, osm_subnet.c:1648); were the trap
lost, the light sweep every `sweep_interval` (10 s, include/opensm/osm_base.h:330;
osm_sm.c:137-145) would find the change. A heavy sweep routes from scratch: every table reset to
no path (osm_ucast_mgr.c:1117 -> osm_switch.c:642) and computed again (osm_state_mgr.c:1582-
1588). Here a sweep lasts `sweep_s`, 2 ms per HCA port and at least 1 s (`opensm --once` took
0.84 s with 640 hosts, 3.0 s with 1,920 and 9.3 s with 4,096 on ibsim: reference/ibsim timings);
traps that come while one runs start one more after it. A sweep reads the links as they are when
it ends and sets the tables then, so a flap shorter than that changes no table.

- Around a dead leaf-spine link: a destination whose spine lost its link to the destination's
  leaf moves to the next spine (mod S) that still has one, and a leaf whose uplink to that spine
  is down sends it through the next spine that reaches both. opensm recomputes every table
  instead (and to ftree a leaf with one up link fewer is no fat tree: it falls back to minhop,
  osm_ucast_ftree.c:4231-4238, osm_ucast_mgr.c:1129-1133), so a real reroute may move more
  destinations than this minimal one; the paths it gives avoid the dead link alike.
- Back to normal when the link returns: the next heavy sweep computes the tables from scratch
  on the whole fabric again, and the engine is a function of the topology and the LIDs, so
  they are those from before the flap.
- A switch with every link down (rebooting) is out of the dump; what only it reached is not
  routed. An HCA port whose cable is down has no route in the captures taken meanwhile (the SM
  drops the port and its LID's entries go back to no path, port 255, which dump_fts does not
  print); that changes no path between live ports, so it is no reason for a capture.

Fates. A flap breaks the connections whose routes, in the tables in effect when it hit the job
(its down, or the job's start if later), cross the link: a job that starts after the SM routed
around a dead link is not on it. A connection on the link when it went down is lost when the
link stays down longer than the job's death time even if the SM rerouted sooner: a real QP whose
retries outlast the reroute would go on, which is not modelled, so that `lfts` changes the fates
only where the routes changed.

Captures, `lfts/dump_lfts-<time>.txt` (time as the counter snapshots name theirs, with
seconds): the sweep runs `dump_lfts.sh` beside the topology snapshot, then once a minute, and
keeps a capture when the SM's switch routing changed since the last one kept; a reroute that
came and went between two runs is not seen, as on a real fabric. (A site could hook dump_lfts.sh
on opensm's routing event, OSM_EVENT_ID_UCAST_ROUTING_DONE, osm_state_mgr.c:1603, and miss none;
that is a capture per sweep of the SM, nearly two per leaf-spine flap, 32 MB each with 64
spines, 128 leaves and 16 hosts a leaf.) The text is dump_fts's (linux-rdma/rdma-core@v44.0
infiniband-diags/dump_fts.c:299-374, 223-291 the info column): switches in the reverse of the
order the fabric scan found them (libibnetdisc/ibnetdisc.c:730-731 prepend), each addressed by its
directed route from the sweeping host's HCA (`DR path slid 0; dlid 0; 0,1,...`,
libibmad/portid.c:55-131), then the script's trailer.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from auditor.analyse.paths import EndPort, Routes
from auditor.models import Link, SwitchLft
from auditor.simulate.scenario.clock import _Clock
from auditor.simulate.scenario.fabric import _Fabric, _guid
from auditor.simulate.scenario.faults import _Flap, _Plan
from auditor.simulate.scenario.truth import LftCapture, Reroute

_SWEEP_PER_PORT_S = 0.002
_SWEEP_MIN_S = 1.0
_CAPTURE_EVERY_S = 60.0  # the sweep's dump_lfts cadence; a capture is kept on a change
ENGINE = "dmodk"


@dataclass(frozen=True, slots=True)
class _State:
    """What one sweep of the SM read: the leaf-spine links down, the switches gone."""

    dead: frozenset[int]
    gone: frozenset[int]


@dataclass(frozen=True, slots=True)
class _Version:
    at: float  # when the SM had set these tables
    state: _State
    reason: str  # initial, reroute, restore


def sweep_seconds(fab: _Fabric) -> float:
    """How long a heavy sweep of this fabric takes (see the module docstring)."""
    return max(_SWEEP_MIN_S, _SWEEP_PER_PORT_S * len(fab.hcas))


class _Routing:
    """The SM's tables over the window: its versions, the paths in them, the captures."""

    def __init__(self, fab: _Fabric, plan: _Plan) -> None:
        self.fab = fab
        self.sweep_s = sweep_seconds(fab)
        sc = fab.sc
        self.spines = sc.spines
        self.top = len(fab.switches) + len(fab.hcas)  # LIDs are 1..top (fabric.py)
        # the links as `Routes` takes them, in the scenario's order (index = link index)
        self.links: list[Link] = []
        for lk in fab.links:
            near = (_guid(fab.switches[lk.leaf].guid), lk.leaf_port)
            if lk.hca is not None:
                far = (_guid(fab.hcas[lk.hca].guid), 1)
            else:
                assert lk.spine is not None  # noqa: S101 - a link has an HCA or a spine
                far = (_guid(fab.switches[lk.spine].guid), lk.spine_port)
            self.links.append(Link(far[0], far[1], near[0], near[1], "4X", fab.speed))
        self.index = {link: i for i, link in enumerate(self.links)}
        self.ends = [EndPort(_guid(h.guid), 1, h.lid) for h in fab.hcas]
        # destinations routed up from a leaf: (LID, its leaf, its own spine); HCAs then leaves
        self.hca_leaf = [fab.links[fab.hca_link[c]].leaf for c in range(len(fab.hcas))]
        self.dests: list[tuple[int, int, int]] = [
            (h.lid, self.hca_leaf[c], fab.spine_for(c)) for c, h in enumerate(fab.hcas)]
        self.leaves = [i for i, s in enumerate(fab.switches) if s.leaf]
        self.dests += [(fab.switches[sw].lid, sw, (sw - sc.spines) % sc.spines)
                       for sw in self.leaves]
        self.by_home: dict[tuple[int, int], list[int]] = {}  # (leaf, spine) -> dests
        self.by_spine: dict[int, list[int]] = {}
        for k, (_, leaf, spine) in enumerate(self.dests):
            self.by_home.setdefault((leaf, spine), []).append(k)
            self.by_spine.setdefault(spine, []).append(k)
        self.port_of: dict[tuple[int, int], int] = {}  # (switch, port) -> link
        for i, lk in enumerate(fab.links):
            self.port_of[(lk.leaf, lk.leaf_port)] = i
            if lk.spine is not None:
                self.port_of[(lk.spine, lk.spine_port)] = i
        self.down = _Intervals(plan.flaps)
        self.versions = self._timeline(plan)
        self._times = [v.at for v in self.versions]
        self._base = self._baseline()
        self._tables: dict[int, dict[int, dict[int, int]]] = {}
        self._routes: dict[int, Routes] = {}
        self._rings: dict[tuple[tuple[int, ...], int], dict[int, tuple[int, int, int]]] = {}

    # ------------------------------------------------------------------ the SM's sweeps

    def _state_at(self, t: float, rebooted: list[tuple[int, list[int]]]) -> _State:
        dead = frozenset(i for i in self.down.links_down(t) if self.fab.links[i].hca is None)
        gone = frozenset(sw for sw, links in rebooted
                         if all(self.down.is_down(i, t) for i in links))
        return _State(dead, gone)

    def _timeline(self, plan: _Plan) -> list[_Version]:
        fab = self.fab
        rebooted = [(sw, sorted(fab.switch_links[sw])) for sw, _, _, _ in plan.reboots]
        events = sorted({t for f in plan.flaps if fab.links[f.link].hca is None
                         for t in (f.down, f.up)})
        versions = [_Version(0.0, _State(frozenset(), frozenset()), "initial")]
        i, busy = 0, -1.0
        while i < len(events):
            start = max(events[i], busy)
            end = start + self.sweep_s
            state = self._state_at(end, rebooted)
            last = versions[-1].state
            if state != last:
                back = state.dead <= last.dead and state.gone <= last.gone
                versions.append(_Version(end, state, "restore" if back else "reroute"))
            busy = end
            # traps during this sweep ask for one more after it (taken at max(event, busy))
            i = bisect.bisect_right(events, start)
        return versions

    def version_at(self, t: float) -> int:
        """The index of the tables in effect at `t`."""
        return max(0, bisect.bisect_right(self._times, t) - 1)

    # ------------------------------------------------------------------ the tables

    def _alive(self, state: _State, leaf: int, spine: int) -> bool:
        return self.fab.uplink[(leaf, spine)] not in state.dead

    def _pick(self, state: _State, src: int, dst: int, home: int) -> int | None:
        """The spine `src` sends a destination under leaf `dst` to, its own spine `home`."""
        spines = self.spines
        order = [(home + k) % spines for k in range(spines)]
        moved = next((s for s in order if self._alive(state, dst, s)), None)
        if moved is None:
            return None
        if self._alive(state, src, moved):
            return moved
        order = [(moved + k) % spines for k in range(spines)]
        return next((s for s in order
                     if self._alive(state, src, s) and self._alive(state, dst, s)), None)

    def _up_port(self, spine: int) -> int:
        return self.fab.sc.hosts_per_leaf + spine + 1

    def _baseline(self) -> dict[int, dict[int, int]]:
        """Every switch's table with every link up."""
        fab, spines = self.fab, self.spines
        tables: dict[int, dict[int, int]] = {}
        for s in range(spines):
            ports = {fab.switches[s].lid: 0}
            for lid, leaf, _ in self.dests:
                ports[lid] = leaf - spines + 1  # spine port j + 1 is leaf j (fabric.py)
            tables[s] = ports
        for leaf in self.leaves:
            ports = {fab.switches[s].lid: self._up_port(s) for s in range(spines)}
            for k, (lid, home_leaf, home) in enumerate(self.dests):
                if home_leaf == leaf:
                    if k < len(fab.hcas):
                        ports[lid] = fab.links[fab.hca_link[k]].leaf_port
                    else:
                        ports[lid] = 0
                else:
                    ports[lid] = self._up_port(home)
            tables[leaf] = ports
        return tables

    def tables(self, v: int) -> dict[int, dict[int, int]]:
        """Switch -> (DLID -> out port) of version `v`; switches gone have none."""
        cached = self._tables.get(v)
        if cached is not None:
            return cached
        state = self.versions[v].state
        if not state.dead and not state.gone:
            self._tables[v] = self._base
            return self._base
        fab, spines = self.fab, self.spines
        out: dict[int, dict[int, int]] = {}
        # destinations whose own spine lost its link to their leaf move for every source leaf
        moved: set[int] = set()
        dead_at: dict[int, set[int]] = {}  # leaf -> spines its dead uplinks lead to
        for i in state.dead:
            lk = fab.links[i]
            assert lk.spine is not None  # noqa: S101 - `dead` holds leaf-spine links only
            moved.update(self.by_home.get((lk.leaf, lk.spine), ()))
            dead_at.setdefault(lk.leaf, set()).add(lk.spine)
        for s in range(spines):
            if s in state.gone:
                continue
            ports = dict(self._base[s])
            for leaf in (lf for lf, sps in dead_at.items() if s in sps):
                for k in self.by_leaf(leaf):
                    ports.pop(self.dests[k][0], None)
            out[s] = ports
        for leaf in self.leaves:
            if leaf in state.gone:
                continue
            ports = dict(self._base[leaf])
            mine = dead_at.get(leaf, set())
            for s in mine:
                ports.pop(fab.switches[s].lid, None)
            todo = set(moved)
            for s in mine:
                todo.update(self.by_spine.get(s, ()))
            for k in todo:
                lid, home_leaf, home = self.dests[k]
                if home_leaf == leaf:
                    continue
                spine = self._pick(state, leaf, home_leaf, home)
                if spine is None:
                    ports.pop(lid, None)
                else:
                    ports[lid] = self._up_port(spine)
            out[leaf] = ports
        self._tables[v] = out
        return out

    def by_leaf(self, leaf: int) -> list[int]:
        """The destinations under `leaf` (its HCAs and itself)."""
        return [k for s in range(self.spines) for k in self.by_home.get((leaf, s), ())]

    def routes(self, v: int) -> Routes:
        """`Routes` over the tables of version `v` (every cable, up or down: a down cable
        still in a table is where the packets are lost)."""
        cached = self._routes.get(v)
        if cached is None:
            fab = self.fab
            lfts = [SwitchLft(_guid(fab.switches[sw].guid), fab.switches[sw].lid,
                              fab.switches[sw].desc, 0, self.top, ports)
                    for sw, ports in self.tables(v).items()]
            cached = self._routes[v] = Routes(self.links, lfts, self.ends)
        return cached

    # ------------------------------------------------------------------ what jobs cross

    def ring_pair(self, hosts: list[int], link: int, at: float) -> tuple[int, int, int] | None:
        """The first (host, peer host, rail) of the ring over `hosts` whose traffic crosses the
        leaf-spine `link` in the tables in effect at `at`, None when none does. No route goes
        down to a leaf and up again (see the module docstring), so only a ring with a host
        under the link's leaf can cross it: the others are not traced."""
        leaf = self.fab.links[link].leaf
        if all(self.hca_leaf[c] != leaf for h in hosts for c in self.fab.host_hcas[h]):
            return None
        return self.ring_links(hosts, at).get(link)

    def ring_links(self, hosts: list[int], at: float) -> dict[int, tuple[int, int, int]]:
        """Leaf-spine links an NCCL ring over `hosts` (in job order, one ring per rail) uses
        in the tables in effect at `at`, each mapped to the first (host, peer host, rail) whose
        traffic crosses it: `_Fabric.ring_links`, with the paths traced in the tables."""
        fab = self.fab
        v = self.version_at(at)
        key = (tuple(hosts), v)
        cached = self._rings.get(key)
        if cached is not None:
            return cached
        routes = self.routes(v)
        out: dict[int, tuple[int, int, int]] = {}
        self._rings[key] = out
        n = len(hosts)
        for i in range(n if n > 2 else 1):
            a, b = hosts[i], hosts[(i + 1) % n]
            if fab.host_su[a] == fab.host_su[b]:
                continue  # same leaf: its table sends the traffic straight to the host port
            for rail in range(fab.sc.hcas_per_host):
                ha, hb = fab.host_hcas[a][rail], fab.host_hcas[b][rail]
                for src, dst in ((ha, hb), (hb, ha)):
                    route = routes.route((self.ends[src].guid, 1), self.ends[dst].lid)
                    for link in route.links:
                        k = self.index[link]
                        if fab.links[k].hca is None:
                            out.setdefault(k, (a, b, rail))
        return out

    # ------------------------------------------------------------------ captures

    def see_flaps(self, plan: _Plan) -> None:
        """Take the plan's flaps as they are now for the captures: host reboots add the flaps
        of their hosts' cables once the jobs are placed (no leaf-spine link: the SM's tables
        stay what they were)."""
        self.down = _Intervals(plan.flaps)

    def captures(self, first_at: float, total: float) -> list[tuple[float, int]]:
        """(capture time, version) of every capture: the first at `first_at`, then at each
        later tick of the sweep's minute at which the SM's switch routing differs from the
        last capture's."""
        out = [(first_at, self.version_at(first_at))]
        ticks: set[int] = set()
        for ver in self.versions:
            if ver.at > first_at:
                ticks.add(math.ceil((ver.at - first_at) / _CAPTURE_EVERY_S))
        for k in sorted(ticks):
            t = first_at + k * _CAPTURE_EVERY_S
            v = self.version_at(t)
            if t < total and self.versions[v].state != self.versions[out[-1][1]].state:
                out.append((t, v))
        return out

    def dump(self, v: int, t: float) -> tuple[str, list[int], list[int]]:
        """The `dump_lfts.sh` text of version `v` captured at `t`, the switches the fabric
        scan did not reach and the HCAs whose LID had no route then."""
        fab = self.fab
        down = self.down.links_down(t)
        order = self._discover(down)
        found = {sw for sw, _ in order}
        tables = self.tables(v)
        gone_hcas = {c for c in range(len(fab.hcas))
                     if fab.hca_link[c] in down or self.hca_leaf[c] not in found}
        drop = {fab.hcas[c].lid for c in gone_hcas}
        owners: dict[int, str] = {}
        for sw in found:
            s = fab.switches[sw]
            owners[s.lid] = f": (Switch portguid {_guid(s.guid)}: '{s.desc}')"
        for c, h in enumerate(fab.hcas):
            if c not in gone_hcas:
                owners[h.lid] = (f": (Channel Adapter portguid {_guid(h.guid + 1)}: "
                                 f"'{fab.hosts[h.host]} {h.device}')")
        stale = ": (node info not available fabric scan)"
        # each DLID's line but the out port, made once: a dump of 64 spines and 128 leaves
        # has 430,000 lines
        head = {lid: f"0x{lid:04x} " for lid in range(self.top + 1)}
        tail = {lid: " " + owners.get(lid, stale) for lid in range(self.top + 1)}
        port_text = [f"{p:03d}" for p in range(256)]
        out: list[str] = []
        for sw, path in reversed(order):
            s = fab.switches[sw]
            ports = tables.get(sw)
            top = self.top if ports is not None else 0  # a switch back from reboot: empty
            out.append(f"Unicast lids [0x0-0x{top:x}] of switch DR path slid 0; dlid 0; "
                       f"{path} guid {_guid(s.guid)} ({s.desc}):")
            out += ["  Lid  Out   Destination", "       Port     Info "]
            lids = sorted((ports or {}).keys() - drop)
            if ports is not None:
                out += [head[lid] + port_text[ports[lid]] + tail[lid] for lid in lids]
            out.append(f"{len(lids)} valid lids dumped ")
        # dump_lfts.sh's trailer, byte for byte the ibsim capture's (tests/fixtures/dump_lfts)
        out += ["", "*** WARNING ***: this command has been replaced by dump_fts", "", "", ""]
        # some leaf that was dumped has no route to it: traffic from there cannot reach it
        lid_hca = {h.lid: c for c, h in enumerate(fab.hcas)}
        unrouted = set(gone_hcas)
        for sw in found:
            if fab.switches[sw].leaf and sw in tables:
                unrouted.update(lid_hca[lid] for lid in lid_hca.keys() - tables[sw].keys())
        return ("\n".join(out), sorted(set(range(len(fab.switches))) - found),
                sorted(unrouted))

    def _discover(self, down: set[int]) -> list[tuple[int, str]]:
        """(switch, directed route) in the order a fabric scan from the first HCA whose cable
        is up finds them, breadth first in port order (as `_ibnetdiscover` walks)."""
        fab = self.fab
        start = next((c for c in range(len(fab.hcas)) if fab.hca_link[c] not in down), None)
        if start is None:
            return []
        first = fab.links[fab.hca_link[start]].leaf
        order = [(first, "0,1")]
        seen = {first}
        queue = deque(order)
        while queue:
            sw, path = queue.popleft()
            for port, kind, peer, _ in fab.adjacency[sw]:
                if kind != "S" or peer in seen or self.port_of[(sw, port)] in down:
                    continue
                seen.add(peer)
                order.append((peer, f"{path},{port}"))
                queue.append(order[-1])
        return order

    # ------------------------------------------------------------------ truth

    def truth(self, clock: _Clock, shots: list[tuple[float, int, str, list[int], list[int]]],
              plan: _Plan) -> tuple[dict[str, object], tuple[LftCapture, ...],
                                    tuple[Reroute, ...]]:
        """truth.json's `routing`, `lft_captures` and `reroutes`."""
        fab = self.fab
        captures = tuple(
            LftCapture(rel, clock.at(t), clock.at(self.versions[v].at),
                       self.versions[v].reason if k else "initial",
                       tuple(sorted(fab.link_id(i) for i in self.versions[v].state.dead)),
                       tuple(fab.switches[sw].name for sw in absent),
                       tuple(f"{fab.hosts[fab.hcas[c].host]}/{fab.hcas[c].device}"
                             for c in unrouted))
            for k, (t, v, rel, absent, unrouted) in enumerate(shots))
        reroutes = []
        for f in sorted((f for f in plan.flaps if fab.links[f.link].hca is None),
                        key=lambda f: (f.down, f.link)):
            around = [v for v, ver in enumerate(self.versions)
                      if f.down <= ver.at <= f.up + self.sweep_s and f.link in ver.state.dead]
            if not around:
                continue  # back before the SM's sweep ended: no table changed
            first = around[0]
            back = next((v for v in range(first + 1, len(self.versions))
                         if f.link not in self.versions[v].state.dead), None)
            files = tuple(rel for _, v, rel, _, _ in shots if v in around or v == back)
            reroutes.append(Reroute(
                fab.link_id(f.link), f.cause, clock.at(f.down), clock.at(f.up),
                clock.at(self.versions[first].at),
                clock.at(self.versions[back].at) if back is not None else None, files))
        routing = {"engine": ENGINE, "sweep_s": round(self.sweep_s, 6),
                   "capture_every_s": _CAPTURE_EVERY_S, "tables": len(self.versions)}
        return routing, captures, tuple(reroutes)


class _Intervals:
    """When each link is down, from the plan's flaps."""

    def __init__(self, flaps: Iterable[_Flap]) -> None:
        self.by_link: dict[int, list[tuple[float, float]]] = {}
        for f in flaps:
            self.by_link.setdefault(f.link, []).append((f.down, f.up))

    def is_down(self, link: int, t: float) -> bool:
        return any(d <= t < u for d, u in self.by_link.get(link, ()))

    def links_down(self, t: float) -> set[int]:
        return {i for i, spans in self.by_link.items() if any(d <= t < u for d, u in spans)}


def capture_name(clock: _Clock, t: float, days: float) -> str:
    at: datetime = clock.at(t)
    return f"lfts/dump_lfts-{at:%H%M%S}.txt" if days <= 1 else \
        f"lfts/dump_lfts-{at:%Y%m%d-%H%M%S}.txt"
