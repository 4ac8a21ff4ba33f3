"""Counter values put into an ibsim-simulated fabric for the tests (ibsim's own console command
`PerformanceSet`: ibsim does not count link-downs or symbol errors itself, and a real switch
would). Kept with the tests, out of the `auditor` package: the product never writes counters,
not even to a simulator (`auditor.simulate.ibsim.check_read_only` refuses every reset)."""

from __future__ import annotations

import re

from auditor.simulate.ibsim import IbSim, IbSimError, quote_node

_SET_REPLY = re.compile(r"has been set to (\d+)")


def inject_counter(sim: IbSim, node: str, port: int, field: str, value: int) -> int:
    """Set a PMA counter of the simulated `node`'s `port`; returns the value ibsim stored (it
    clamps to the field width). `field` is `PortCounters.SymbolErrorCounter` or just
    `SymbolErrorCounter` (meaning PortCounters); `PortCountersExtended.*` works too."""
    if not re.fullmatch(r"[A-Za-z]+(\.[A-Za-z0-9]+)?", field) or value < 0:
        raise ValueError(f"bad counter {field}={value}")
    if "." not in field:
        field = f"PortCounters.{field}"
    reply = sim.command(f"PerformanceSet {quote_node(node)}[{port}] {field}={value}")
    stored = _SET_REPLY.search(reply)
    if stored is None:
        raise IbSimError(f"unexpected reply to PerformanceSet: {reply.strip()}")
    return int(stored.group(1))
