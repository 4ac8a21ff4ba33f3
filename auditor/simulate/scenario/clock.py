"""Time stamps every writer shares: the scenario clock (seconds into the window -> UTC
datetime) and the ISO 8601 and ctime forms of a datetime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.start = start.astimezone(UTC)

    def at(self, seconds: float) -> datetime:
        # Whole microseconds, so the same float always prints the same stamp.
        return self.start + timedelta(microseconds=round(seconds * 1e6))


def _ctime(dt: datetime) -> str:
    return f"{dt:%a %b} {dt.day:2d} {dt:%H:%M:%S %Y}"
