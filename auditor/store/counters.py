"""Port counter readings (ibqueryerrors, perfquery, sysfs), and their increases between
readings.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from auditor.models import CounterTable, PortBer
from auditor.store.connection import Connection, utc_naive

if TYPE_CHECKING:
    from auditor.store.rows import CounterDeltaRow, CounterStepRow, PortBerRow


class CounterQueries(Connection):
    """Counter readings and their increases."""

    def add_counters(self, source_id: int, seen_at: datetime, table: CounterTable) -> None:
        """Store readings: (node GUID, port or None for the switch aggregate, counter, value)."""
        if not table.names:
            return
        from auditor.store.columns import counter_columns

        self._con.register("counter_batch", counter_columns(table))
        try:
            self.run("counters_insert", source_id=source_id, seen_at=utc_naive(seen_at))
        finally:
            self._con.unregister("counter_batch")

    def add_port_ber(self, source_id: int, seen_at: datetime, rows: Sequence[PortBer]) -> None:
        """The BERs ports reported themselves (ibdiagnet PHY_DB16), as read at `seen_at`."""
        if not rows:
            return
        self.run("port_ber_insert", source_id=source_id, seen_at=utc_naive(seen_at),
                 guid=[r.guid for r in rows], port=[r.port for r in rows],
                 raw_ber=[r.raw_ber for r in rows], effective_ber=[r.effective_ber for r in rows],
                 symbol_ber=[r.symbol_ber for r in rows], origin=[r.source for r in rows])

    def port_bers(self, since: datetime, until: datetime) -> list[PortBerRow]:
        """Per port, the newest BER it reported itself in [since, until]."""
        return cast("list[PortBerRow]", self.run_dicts(
            "port_ber_window", since=utc_naive(since), until=utc_naive(until)))

    def counter_deltas(self, since: datetime, until: datetime) -> list[CounterDeltaRow]:
        """Counter increases per port between readings in (since, until]; resets handled."""
        return cast("list[CounterDeltaRow]", self.run_dicts(
            "counter_deltas", since=utc_naive(since), until=utc_naive(until)))

    def counter_steps(self, flaps_since: datetime, since: datetime, until: datetime
                      ) -> list[CounterStepRow]:
        """What `suspects` reads of the error counters, in one query: the LinkDownedCounter
        increases above 0 of `counter_deltas(flaps_since, until)`, then every other counter's
        increases of `counter_deltas(since, until)` that are not 0, and SymbolErrorCounter's
        0s; the same rows (less prev_value, value and reset), in the same order."""
        return cast("list[CounterStepRow]", self.run_dicts(
            "counter_steps", flaps_since=utc_naive(flaps_since), since=utc_naive(since),
            until=utc_naive(until)))

    def data_deltas(self, since: datetime, until: datetime,
                    series: Sequence[tuple[str, int, str]]) -> list[tuple[Any, ...]]:
        """PortXmitData / PortRcvData increases (4-octet words) of `series` (GUID, port,
        counter) between readings in (since, until], as (guid, port, counter, prev_at, seen_at,
        delta); intervals with a reset or a saturated reading left out."""
        if not series:
            return []
        wanted = sorted(set(series))
        return self.run("data_deltas", since=utc_naive(since), until=utc_naive(until),
                        guids=[g for g, _, _ in wanted], ports=[p for _, p, _ in wanted],
                        counters=[c for _, _, c in wanted])
