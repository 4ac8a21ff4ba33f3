"""Parsing the times and durations users type: ISO-8601 instants and spans like 30m, 24h, 7d.

Both are bounded, so that no window the auditor computes leaves the calendar Python and DuckDB
share (years 1-9999): a span is at most MAX_SPAN (100 years, longer than any fabric's history),
and an instant lies in [EARLIEST, LATEST). A window of the longest span ending at the earliest
instant still starts in 1869, and the latest instant plus any span is still before 9999, so
`--since 1000000d` or `--until 9999-12-31` is one line of error, never an OverflowError.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from auditor.errors import AuditorError

_SPAN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.ASCII)  # fullmatch
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_SPAN_DAYS = 36525  # 100 years
MAX_SPAN = timedelta(days=MAX_SPAN_DAYS)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def parse_instant(text: str, option: str = "--at") -> datetime:
    """An ISO-8601 time; without a zone it is taken as UTC. Returns an aware datetime."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise AuditorError(f"{option} {text!r}: not an ISO-8601 time "
                           "(e.g. 2026-11-30T06:00:00Z)") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if not EARLIEST <= moment < LATEST:
        raise AuditorError(f"{option} {text!r}: a time between {EARLIEST:%Y} and {LATEST:%Y}")
    return moment


def parse_span(text: str, option: str = "--since") -> timedelta:
    """A length such as 30m, 24h, 7d or 2w, at most MAX_SPAN."""
    match = _SPAN.fullmatch(text)
    if not match:
        raise AuditorError(f"{option} {text!r}: expected a span such as 30m, 24h or 7d")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]  # 1e400 is inf: refused below
    if not seconds <= MAX_SPAN.total_seconds():
        raise AuditorError(f"{option} {text[:40]!r}: at most {MAX_SPAN_DAYS}d (100 years)")
    return timedelta(seconds=seconds)


def parse_window(since: str, until: str | None, now: datetime | None = None
                 ) -> tuple[datetime, datetime]:
    """(start, end) of `--since` back from `--until` (default: now), both aware."""
    end = parse_instant(until, "--until") if until else (now or datetime.now(UTC))
    return end - parse_span(since), end
