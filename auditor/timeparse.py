"""Parsing the times and durations users type: ISO-8601 instants and spans like 30m, 24h, 7d."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from auditor.errors import AuditorError

_SPAN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.ASCII)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_instant(text: str, option: str = "--at") -> datetime:
    """An ISO-8601 time; without a zone it is taken as UTC. Returns an aware datetime."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise AuditorError(f"{option} {text!r}: not an ISO-8601 time "
                           "(e.g. 2026-11-30T06:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_span(text: str, option: str = "--since") -> timedelta:
    match = _SPAN.fullmatch(text)
    if not match:
        raise AuditorError(f"{option} {text!r}: expected a span such as 30m, 24h or 7d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
