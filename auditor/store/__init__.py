"""The DuckDB store: the only package that talks to DuckDB.

Every statement lives in queries/<name>.sql. Times are stored as naive UTC timestamps. `Store`
is one connection (connection.py: opening, migrations, transactions, background reads) with
the queries of each subject as a mixin: sources, topology, fabric_cache (the snapshots' reads
and the newest one kept ready), events, counters, jobs, hosts, switches, optics, inventory,
outcomes, exports. columns.py batches rows as numpy columns for the writers; rows.py types the
rows the queries return.
"""

from __future__ import annotations

from auditor.store.connection import utc_naive
from auditor.store.counters import CounterQueries
from auditor.store.events import EventQueries, Placement
from auditor.store.exports import ExportQueries, literal_path
from auditor.store.hosts import HostQueries
from auditor.store.inventory import InventoryQueries
from auditor.store.jobs import JobLogMeta, JobQueries
from auditor.store.optics import OpticsQueries
from auditor.store.outcomes import OutcomeQueries
from auditor.store.sources import SourceMeta, SourceQueries
from auditor.store.switches import SwitchQueries
from auditor.store.topology import TopologyQueries

__all__ = ["JobLogMeta", "Placement", "SourceMeta", "Store", "literal_path", "utc_naive"]


class Store(SourceQueries, TopologyQueries, EventQueries, CounterQueries, JobQueries,
            HostQueries, SwitchQueries, OpticsQueries, InventoryQueries, OutcomeQueries,
            ExportQueries):
    """One DuckDB file. Open it, use it, close it (or use it as a context manager).

    A file another process holds (DuckDB: one writer, or many readers) is retried for
    `busy_timeout_s`, then DatabaseBusyError. A database written by a newer auditor (a schema
    version this code does not know) is refused before anything is read or written."""
