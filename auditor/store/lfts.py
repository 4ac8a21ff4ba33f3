"""The switches' forwarding tables (issue #23): each capture, and the tables it changed.

A table is stored as a blob of out ports, one byte per DLID from 0 (255: no route); a capture
stores only the tables that differ from the ones in effect before it (queries/migrations/
0015_forwarding_tables.sql), and the table in effect at a time is each switch's newest row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from auditor.store.connection import Connection, utc_naive

# The digest of a switch's row when a whole-fabric capture did not have its table (the blob is
# empty: no route at all).
ABSENT = "absent"


class StoredLft(NamedTuple):
    """One switch's table as stored: `ports` holds the out port of DLID d at byte d."""

    guid: str
    lid: int | None
    description: str
    first_lid: int
    last_lid: int
    digest: str
    ports: bytes


class LftChange(NamedTuple):
    """A table stored at `at`, the switch's table before it (None: its first) and the time
    of the capture before `at` (None: none)."""

    at: datetime
    guid: str
    ports: bytes
    prev_ports: bytes | None
    before: datetime | None


class LftQueries(Connection):
    """Forwarding-table captures stored and read."""

    def add_lft_capture(self, source_id: int, captured_at: datetime,
                        tables: Sequence[StoredLft], lmc: int) -> int:
        """Store one capture and the tables of it that differ from those in effect before it
        (in the caller's transaction); how many were stored. A capture older than one stored
        already hands that later capture the tables it had seen where it stored none."""
        at = utc_naive(captured_at)
        before = {r[0]: r[1] for r in self.run("lft_digests_at", at=at)}
        changed = [t for t in tables if before.get(t.guid) != t.digest]
        if len(tables) > 1:
            # A whole-fabric dump without a switch it had before: the switch did not answer
            # (rebooting, cut off), so its table is gone until a capture has it again. One
            # table alone is `ibroute` of that switch: the others are as they were.
            held = {t.guid for t in tables}
            changed += [StoredLft(guid, None, "", 0, 0, ABSENT, b"")
                        for guid, digest in sorted(before.items())
                        if guid not in held and digest != ABSENT]
        if changed:
            guids = [t.guid for t in changed]
            self.run("lft_switches_replace", captured_at=at, guid=guids)
            nxt = self.run("lft_next_capture", at=at)
            if nxt:
                self.run("lft_switches_carry", next_source_id=nxt[0][0], next_at=nxt[0][1],
                         at=at, guid=guids)
            self.run("lft_switches_insert", source_id=source_id, captured_at=at, guid=guids,
                     lid=[t.lid for t in changed],
                     description=[t.description for t in changed],
                     first_lid=[t.first_lid for t in changed],
                     last_lid=[t.last_lid for t in changed],
                     digest=[t.digest for t in changed], ports=[t.ports for t in changed])
        self.run("lft_capture_insert", source_id=source_id, captured_at=at,
                 switches=len(tables), changed=len(changed), lmc=lmc)
        return len(changed)

    def lft_capture_at(self, at: datetime) -> tuple[datetime, int] | None:
        """(time, LMC) of the newest forwarding-table capture at or before `at`."""
        rows = self.run("lft_capture_at", at=utc_naive(at))
        return (rows[0][0], int(rows[0][1])) if rows else None

    def lft_captures_span(self) -> tuple[int, datetime | None, datetime | None]:
        """How many forwarding-table captures are stored, the first's and the last's time."""
        count, first, last = self.run("lft_captures_span")[0]
        return int(count), first, last

    def lft_capture_times(self, since: datetime, until: datetime) -> list[datetime]:
        return [r[0] for r in self.run("lft_capture_times", since=utc_naive(since),
                                       until=utc_naive(until))]

    def lft_route_changes(self, since: datetime, until: datetime) -> list[datetime]:
        """The capture times in (since, until] at which some switch's table changed."""
        return [r[0] for r in self.run("lft_route_changes", since=utc_naive(since),
                                       until=utc_naive(until))]

    def lft_tables_at(self, at: datetime) -> list[StoredLft]:
        """Each switch's table in effect at `at` (no digest: "" here); not the switches the
        newest whole-fabric capture did not have."""
        return [StoredLft(r[0], r[1], r[2], r[3], r[4], "", bytes(r[5]))
                for r in self.run("lft_tables_at", at=utc_naive(at))]

    def lft_changes(self, since: datetime, until: datetime) -> list[LftChange]:
        """The tables stored in (since, until] that changed a switch's routes, with the
        switch's table before each, in time order."""
        return [LftChange(r[0], r[1], bytes(r[2]), None if r[3] is None else bytes(r[3]), r[4])
                for r in self.run("lft_changes_window", since=utc_naive(since),
                                  until=utc_naive(until))]
