"""Pieces shared by the job parsers (sacct, jobcomp, JSONL) and the maintenance-window file.

Every helper here raises ValueError with a short reason; the parsers turn that into an
`unparsed` entry (job files) or a ParseError (maintenance file), naming the line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from auditor.models import Job, JobTable, clip
from auditor.parse.hostlist import expand_hostlist, joined_hostlist


@dataclass(slots=True)
class JobsResult:
    """What a job file gave: the jobs (as columns, in line order), how many step lines were
    folded into their allocation, and the lines that could not be read as (line_no, line,
    reason)."""

    table: JobTable = field(default_factory=JobTable)
    skipped_steps: int = 0
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)
    # (line_no, line) of the jobs read with a name, partition or exit code cut to TEXT_MAX
    cut: list[tuple[int, str]] = field(default_factory=list)

    @property
    def jobs(self) -> list[Job]:
        """The jobs as records (built on each call; `table.append` adds one)."""
        return self.table.rows()


# Slurm prints ISO-8601 without a zone by default; SLURM_TIME_FORMAT may add one (`%FT%T%z`).
# A time of day is required: a bare date would silently mean midnight.
_ISO_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?"
    r"(?:Z|[+-]\d{2}(?::?\d{2})?)?$",
    re.ASCII,
)
# slurm_make_time_str prints "Unknown" for 0/INFINITE and "None" for NO_VAL; sacct leaves the
# field empty in a few versions for jobs that never started.
_NO_TIME = frozenset({"", "Unknown", "None"})
# "CANCELLED by 1000" names the uid that cancelled it; only the state is kept. Other exports
# spell states in other cases ("Failed"); Job.state is upper case.
_STATE_RE = re.compile(r"^([A-Za-z][A-Za-z_]*)(?: by \d+)?$", re.ASCII)
# What sacct/jobcomp print as NodeList when there is no allocation: pending jobs in slurmdbd
# ("None assigned"), jobs requeued or cancelled before they ran ("(null)").
_NO_NODES = frozenset({"", "(null)", "None assigned", "None"})
_GPU_KEY = "gres/gpu"
_COUNT_RE = re.compile(r"\d{1,9}", re.ASCII)


def parse_instant(text: str, tz: tzinfo) -> datetime:
    """ISO-8601 -> aware UTC; a time without a zone is wall-clock time in `tz`.

    For a zoneinfo `tz`, a wall-clock time repeated at the end of DST is read as its first
    occurrence (fold=0): the zoneless text cannot say which one it was.
    """
    text = text.strip()
    if not _ISO_RE.match(text):
        raise ValueError(f"not an ISO-8601 date and time: {text!r}")
    try:
        moment = datetime.fromisoformat(text.replace(",", "."))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=tz)
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"bad date or time {text!r}: {exc}") from None


def parse_slurm_time(text: str, tz: tzinfo) -> datetime | None:
    """A Slurm time field: None for Unknown/None (never started, or still running)."""
    text = text.strip()
    if text in _NO_TIME:
        return None
    return parse_instant(text, tz)


# Slurm's longest state name (job_state_string) is OUT_OF_MEMORY; a state this long is no state.
STATE_MAX = 32
# A host name is at most 253 characters (RFC 1035 names; Slurm NodeNames are host names).
HOST_MAX = 253


def parse_state(text: str) -> str:
    m = _STATE_RE.match(text.strip()) if len(text) <= STATE_MAX + 64 else None
    if m is None or len(m.group(1)) > STATE_MAX:
        raise ValueError(f"unrecognised job state {clip(text.strip(), 80)!r}")
    return m.group(1).upper()


def _check_hosts(names: Sequence[str]) -> None:
    if any(len(n) > HOST_MAX for n in names):
        raise ValueError(f"a host name over {HOST_MAX} characters")


def parse_nodelist(text: str) -> tuple[str, ...]:
    text = text.strip()
    if text in _NO_NODES:
        return ()
    names = tuple(expand_hostlist(text))
    _check_hosts(names)
    return names


def parse_nodelist_joined(text: str) -> tuple[str, int]:
    """`parse_nodelist` as `JobTable.nodes_joined` holds it, and how many names that is."""
    text = text.strip()
    if text in _NO_NODES:
        return "", 0
    joined, count = joined_hostlist(text)
    # only a joined list longer than one name can be may hold a name too long
    if len(joined) > HOST_MAX:
        _check_hosts(joined.split(","))
    return joined, count


def parse_node_count(count_text: str, column: str) -> str | None:
    """A node count as printed (stripped); None when the field is empty."""
    count_text = count_text.strip()
    if not count_text:
        return None
    if not _COUNT_RE.fullmatch(count_text):
        raise ValueError(f"{column} {count_text!r} is not a node count")
    return count_text


def check_node_count(nodes: tuple[str, ...], count_text: str, column: str) -> None:
    """Cross-check a node count against the expanded list (skipped when there are no nodes:
    a pending job reports the node count it asked for)."""
    count = parse_node_count(count_text, column)
    if count is not None and nodes and int(count) != len(nodes):
        raise ValueError(f"{column} {count} but NodeList names {len(nodes)} nodes")


def gpus_from_tres(text: str) -> int | None:
    """`billing=16,cpu=16,gres/gpu=16,mem=64G,node=2` -> 16; None without a gres/gpu entry.

    Typed entries (`gres/gpu:a100=8`) are summed only when the untyped total is missing,
    because Slurm lists both for the same GPUs.
    """
    total: int | None = None
    typed: int | None = None
    for item in text.strip().split(","):
        key, sep, value = item.partition("=")
        if not sep or not (key == _GPU_KEY or key.startswith(_GPU_KEY + ":")):
            continue
        if not _COUNT_RE.fullmatch(value):
            raise ValueError(f"bad GPU count {item!r}")
        if key == _GPU_KEY:
            total = int(value)
        else:
            typed = (typed or 0) + int(value)
    return total if total is not None else typed


def check_times(start: datetime | None, end: datetime | None) -> None:
    if start is not None and end is not None and end < start:
        raise ValueError("end is before start")


TEXT_MAX = 256  # a job name, partition or exit code: users choose job names
CUT = f"a job name, partition or exit code over {TEXT_MAX} characters: stored cut"


def too_long(*values: object) -> bool:
    """Whether `optional_text` cuts any of these raw values."""
    return any(isinstance(v, str) and len(v) > TEXT_MAX and len(v.strip()) > TEXT_MAX
               for v in values)


def optional_text(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    return clip(text, TEXT_MAX) if text else None
