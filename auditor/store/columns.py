"""Batches of rows (port events, jobs, counter readings) as numpy columns, which the writers
register as a relation for one statement to read. Imported by those writers when they write:
the read-only commands need neither this module nor numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.errors import AuditorError
from auditor.models import CounterTable, JobTable, PortEvent

if TYPE_CHECKING:
    import numpy.typing as npt

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_NAT = -(2**63)  # numpy's NaT as int64


# Port events reach DuckDB as numpy columns of a registered relation: DuckDB scans those in C,
# where list parameters cost a Python-to-Value conversion per field (4x slower at 50,000 events).
# numpy is imported here, not at the top: the read-only commands start 0.1 s sooner without it.

def events_columns(events: Sequence[PortEvent],
                   placed: Sequence[tuple[str | None, int | None, str | None, int | None]] | None
                   ) -> dict[str, npt.NDArray[Any]]:
    """`placed`: each event's (GUID, port, peer GUID, peer port), else the event's own."""
    import numpy as np

    if placed is None:
        placed = [(e.guid, e.port, e.peer_guid, e.peer_port) for e in events]
    ints = {
        "line_no": [e.line_no for e in events],
        "event_us": [(e.at - _EPOCH) // _MICROSECOND for e in events],
    }
    objects = {
        "state": [e.state for e in events],
        "device": [e.device for e in events],
        "port_name": [e.port_name for e in events],
        "guid": [p[0] for p in placed],
        "port": [p[1] for p in placed],  # ints or None: an object column keeps the NULLs
        "peer_device": [e.peer_device for e in events],
        "peer_port_name": [e.peer_port_name for e in events],
        "peer_guid": [p[2] for p in placed],
        "peer_port": [p[3] for p in placed],
        "cable_serial": [e.cable_serial for e in events],
        "code": [e.code for e in events],
        "message": [e.message for e in events],
    }
    columns = {k: np.array(v, dtype=np.int64) for k, v in ints.items()}
    columns.update((k, np.array(v, dtype=object)) for k, v in objects.items())
    return columns


# Jobs take the same road: a month of sacct is 100,000 jobs on 1.2 million (job, host) pairs,
# and as list parameters they took 4.0 s of CPU (the pairs most of it). Registered, with each
# job's hosts one string (`JobTable.nodes_joined`) that DuckDB splits into rows: 0.55 s, the
# commit included.

def _micros(moments: Sequence[datetime | None]) -> npt.NDArray[Any]:
    """Aware times as datetime64[us] (UTC), None as NaT, which DuckDB reads as NULL."""
    import numpy as np

    micros = [(m - _EPOCH) // _MICROSECOND if m is not None else _NAT for m in moments]
    return np.array(micros, dtype=np.int64).view("datetime64[us]")


def jobs_columns(jobs: JobTable) -> dict[str, npt.NDArray[Any]]:
    import numpy as np

    columns = {"start_at": _micros(jobs.start), "end_at": _micros(jobs.end),
               "line_no": np.array(jobs.line_no, dtype=np.int64)}
    objects: dict[str, Sequence[object]] = {
        "job_id": jobs.job_id, "state": jobs.state, "nodes": jobs.nodes_joined,
        "name": jobs.name, "partition": jobs.partition, "gpus": jobs.gpus,
        "exit_code": jobs.exit_code}
    columns.update((k, np.array(v, dtype=object)) for k, v in objects.items())
    return columns


# Counter readings reach DuckDB the same way: a full `ibqueryerrors --data` snapshot of 12,288
# links (98,000 readings) took 0.22 s as list parameters, 0.02 s as these columns. Ports are
# int64 with -1 for NULL (the switch aggregate; a parsed port is never negative): an object
# column of ints and Nones costs DuckDB a Python conversion per reading (+10 ms).
_NO_PORT = -1


def counter_columns(table: CounterTable) -> dict[str, npt.NDArray[Any]]:
    import numpy as np

    counts = np.array(table.counts, dtype=np.int64)
    ports = [_NO_PORT if p is None else p for p in table.ports]
    try:
        values = np.array(table.values, dtype=np.int64)
    except OverflowError:
        raise AuditorError(f"a counter value over {2**63 - 1} (the store keeps 64-bit "
                           "signed values)") from None
    return {"guid": np.repeat(np.array(table.guids, dtype=object), counts),
            "port": np.repeat(np.array(ports, dtype=np.int64), counts),
            "counter": np.array(table.names, dtype=object), "value": values}



# A topology snapshot's nodes, ports and links take the same road (#25): the 28,000 ports of a
# 4,096-host capture took 0.34 s as ten list parameters, a third of the whole ingest. Numbers
# that are never NULL go as int64, the rest as object columns the statement casts.

def topology_columns(ints: dict[str, Sequence[int]], objects: dict[str, Sequence[object]]
                     ) -> dict[str, npt.NDArray[Any]]:
    import numpy as np

    columns = {k: np.array(v, dtype=np.int64) for k, v in ints.items()}
    columns.update((k, np.array(v, dtype=object)) for k, v in objects.items())
    return columns


def empty_topology_batches() -> dict[str, dict[str, npt.NDArray[Any]]]:
    """The topology batches as store/topology.py registers them, with no rows (for binding
    their statements, `Connection.check_query`)."""
    none: list[object] = []
    text = ("guid", "node_type", "description", "name", "model", "device", "lid")
    port_text = ("guid", "port_guid", "lid", "state", "phys_state", "width", "speed",
                 "could_be_width", "could_be_speed")
    return {
        "node_batch": topology_columns({}, dict.fromkeys(text, none)),
        "port_batch": topology_columns({"port": []}, dict.fromkeys(port_text, none)),
        "link_batch": topology_columns({"a_port": [], "b_port": []},
                                       dict.fromkeys(("a_guid", "b_guid", "width", "speed"),
                                                     none)),
    }
