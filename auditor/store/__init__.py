"""The DuckDB store: the only package that talks to DuckDB.

Every statement lives in queries/<name>.sql. Times are stored as naive UTC timestamps. `Store`
is one connection (connection.py: opening, migrations, transactions, background reads) with
the queries of each subject as a mixin: sources, topology, fabric_cache (the snapshots' reads
and the newest one kept ready), events, counters, jobs, hosts, switches, optics, inventory,
outcomes, exports, lfts (the forwarding tables). columns.py batches rows as numpy columns for
the writers; fabric_codec.py and fabric_views.py hold the fabric cache's format and the objects
read from it; rows.py types the rows the queries return; meta.py holds what an ingest says
about a file (SourceMeta, JobLogMeta).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.store.connection import utc_naive
from auditor.store.counters import CounterQueries
from auditor.store.events import EventQueries, Placement
from auditor.store.exports import ExportQueries, literal_path
from auditor.store.hosts import HostQueries
from auditor.store.inventory import InventoryQueries
from auditor.store.jobs import JobQueries
from auditor.store.lfts import LftQueries
from auditor.store.optics import OpticsQueries
from auditor.store.outcomes import OutcomeQueries
from auditor.store.sources import SourceQueries
from auditor.store.switches import SwitchQueries
from auditor.store.topology import TopologyQueries

if TYPE_CHECKING:
    from auditor.store.meta import JobLogMeta, SourceMeta
else:
    def __getattr__(name: str) -> object:
        # SourceMeta and JobLogMeta (meta.py) are built when an ingester first asks for one:
        # two frozen dataclasses were 1-2 ms of every command's start-up, a read's included.
        if name in ("JobLogMeta", "SourceMeta"):
            from auditor.store import meta

            return getattr(meta, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["JobLogMeta", "Placement", "SourceMeta", "Store", "literal_path", "utc_naive"]


class Store(SourceQueries, TopologyQueries, EventQueries, CounterQueries, JobQueries,
            HostQueries, SwitchQueries, OpticsQueries, InventoryQueries, OutcomeQueries,
            ExportQueries, LftQueries):
    """One DuckDB file. Open it, use it, close it (or use it as a context manager).

    A file another process holds (DuckDB: one writer, or many readers) is retried for
    `busy_timeout_s`, then DatabaseBusyError. A database written by a newer auditor (a schema
    version this code does not know) is refused before anything is read or written."""
