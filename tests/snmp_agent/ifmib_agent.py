"""Net-SNMP `pass_persist` backend: a fake InfiniBand switch's ifTable, ifXTable and
MELLANOX-IF-VPI-MIB table, for the SNMP collector's tests and benchmark.

    ifmib_agent.py BASE_OID [--ports N] [--control FILE]

snmpd starts one process per `pass_persist` line and hands it the requests for that subtree;
BASE_OID (the registered subtree) keeps getnext from walking into another registration.

FILE is JSON the test rewrites (atomically) to change a port; it is re-read when it changes:
    {"ports": {"7": {"oper": 2, "admin": 1, "changed_at": 1764480000.25,
                     "in_errors": 5, "symbol_errors": 9}}}
`changed_at` is wall-clock time (time.time()) of the port's last oper change; it is served as
ifLastChange in the agent's sysUpTime ticks, so a test can flip a port down and up again between
two polls and see only ifLastChange move. Octet counters grow with time.

Stdlib only: snmpd starts this with whatever interpreter the conf names, on first use.
"""

from __future__ import annotations

import bisect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

IF_ENTRY = (1, 3, 6, 1, 2, 1, 2, 2, 1)
IFX_ENTRY = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1)
VPI_ENTRY = (1, 3, 6, 1, 4, 1, 33049, 3, 1, 1, 1)

IF_COLS = (1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 14, 16, 19, 20)
IFX_COLS = (1, 6, 10, 15, 18)
VPI_COLS = (1, 2, 3, 6)

Oid = tuple[int, ...]


def agent_start_wall() -> float:
    """Wall-clock start of snmpd (our parent), which sysUpTime counts from.

    snmpd starts this script lazily on the first request to the subtree, so the script's own
    start time would put every ifLastChange seconds off from sysUpTime.
    """
    try:
        fields = Path(f"/proc/{os.getppid()}/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22 overall: starttime, clock ticks since boot
        boot_uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (boot_uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


class Switch:
    def __init__(self, ports: int, control: Path | None) -> None:
        self.ports = ports
        self.control = control
        self.start = agent_start_wall()
        self._stamp: tuple[int, int, int] | None = None
        self._state: dict[str, dict[str, Any]] = {}

    def port(self, i: int) -> dict[str, Any]:
        if self.control is not None:
            try:
                st = self.control.stat()
                stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
                if stamp != self._stamp:
                    control = json.loads(self.control.read_text())
                    self._state = control.get("ports", {})
                    # the launcher's reading of snmpd's own sysUpTime zero, when it has one
                    self.start = float(control.get("agent_start", self.start))
                    self._stamp = stamp
            except (OSError, ValueError):
                pass  # mid-rewrite or absent: keep serving the last good state
        return self._state.get(str(i), {})

    def value(self, entry: Oid, col: int, i: int) -> tuple[str, str | int]:
        p = self.port(i)
        t = time.time() - self.start
        admin = int(p.get("admin", 1))
        oper = int(p.get("oper", 1 if admin == 1 else 2))
        changed_at = p.get("changed_at")
        last_change = max(0, int((float(changed_at) - self.start) * 100)) if changed_at else 0
        name = f"IB1/{i}"
        if entry == IF_ENTRY:
            return {
                1: ("integer", i), 2: ("string", name), 3: ("integer", 199),
                4: ("integer", 4096), 5: ("gauge", 4294967295), 7: ("integer", admin),
                8: ("integer", oper), 9: ("timeticks", last_change),
                10: ("counter", int(1000 * i * t) % 2**32), 13: ("counter", 0),
                14: ("counter", int(p.get("in_errors", 0))), 16: ("counter", 0),
                19: ("counter", 0), 20: ("counter", int(p.get("out_errors", 0))),
            }[col]
        if entry == IFX_ENTRY:
            return {
                1: ("string", name),
                6: ("counter64", 10**9 * i + int(10**6 * i * t)),
                10: ("counter64", 9 * 10**8 * i + int(9 * 10**5 * i * t)),
                15: ("gauge", 200000), 18: ("string", ""),
            }[col]
        # IB PortPhysicalState: 5 linkUp, 2 polling (cable in, no partner), 3 disabled.
        phys = 5 if oper == 1 else (3 if admin == 2 else 2)
        return {
            1: ("integer", i), 2: ("integer", phys), 3: ("integer", 4 if oper == 1 else 1),
            6: ("counter64", int(p.get("symbol_errors", 0))),
        }[col]


def build_oids(base: Oid, ports: int) -> list[Oid]:
    tables = ((IF_ENTRY, IF_COLS), (IFX_ENTRY, IFX_COLS), (VPI_ENTRY, VPI_COLS))
    oids = [(*entry, c, i) for entry, cols in tables for c in cols for i in range(1, ports + 1)]
    return sorted(o for o in oids if o[: len(base)] == base)


def parse_oid(text: str) -> Oid:
    return tuple(int(x) for x in text.strip().strip(".").split(".") if x)


def main(argv: list[str]) -> int:
    base = parse_oid(argv[0])
    ports, control = 36, None
    rest = argv[1:]
    while rest:
        flag, val, rest = rest[0], rest[1], rest[2:]
        if flag == "--ports":
            ports = int(val)
        elif flag == "--control":
            control = Path(val)
    switch = Switch(ports, control)
    oids = build_oids(base, ports)
    known = set(oids)

    def answer(oid: Oid) -> str:
        entry, col, i = oid[:-2], oid[-2], oid[-1]
        typ, val = switch.value(entry, col, i)
        return f".{'.'.join(map(str, oid))}\n{typ}\n{val}\n"

    out, inp = sys.stdout, sys.stdin
    while True:
        cmd = inp.readline()
        if not cmd:
            return 0  # snmpd closed the pipe: it stopped or died
        cmd = cmd.strip()
        if cmd == "PING":
            out.write("PONG\n")
        elif cmd == "get":
            oid = parse_oid(inp.readline())
            out.write(answer(oid) if oid in known else "NONE\n")
        elif cmd == "getnext":
            oid = parse_oid(inp.readline())
            k = bisect.bisect_right(oids, oid)
            out.write(answer(oids[k]) if k < len(oids) else "NONE\n")
        elif cmd == "set":
            inp.readline()
            inp.readline()
            out.write("not-writable\n")
        elif cmd:
            out.write("NONE\n")
        out.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
