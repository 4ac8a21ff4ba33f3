"""Parse `sacct --parsable2` (`-P`) output into Jobs, one per allocation line.

Run it as, for example, `sacct -P -a -X -D -S <start> -E now
-o JobID,JobName,Partition,State,ExitCode,Start,End,NNodes,NodeList,AllocTRES`
(`-D` keeps the NODE_FAIL attempt of a requeued job, which otherwise vanishes). `sacct -c`
(reading jobcomp/filetxt without a database) prints the same format.

* The first non-blank line is the header. Columns may come in any order and any subset that
  has JobID, State, Start, End and NodeList (matched case-insensitively); otherwise ParseError
  on the header line naming the missing columns. The delimiter is whatever follows the first
  column name (`|` unless `--delimiter` was given); `sacct -p`'s trailing delimiter is fine.
  A header line repeated further down (concatenated runs) starts a new column map.
* Fixed-width output (plain `sacct`, no `-P`) truncates fields with `+` (`gpu-[001-002,0+`)
  and is refused: ParseError on the first truncated line, or on the header if none is.
* Step lines (`123.batch`, `123.extern`, `123.0`) are counted in `skipped_steps` when the
  allocation line `123` is in the same input; a step whose allocation line is absent (e.g. cut
  off by a `--state` filter) is kept as a Job under its step id, since it is the only record
  of where and when that job ran. Array tasks (`123_4`, pending `123_[5-9]`) and het-job
  components (`123+1`) keep their id. With `-D` a requeued job appears once per attempt; each
  attempt is a Job (same job_id, different line_no).
* Start/End are slurmctld local time without a zone unless SLURM_TIME_FORMAT added one: they
  are read in `tz` and returned as aware UTC. `Unknown`/`None` End = still running (end None);
  `Unknown`/`None` Start = never started (start None).
* State `CANCELLED by 1000` -> `CANCELLED`. NodeList `None assigned`/`(null)` -> no nodes.
* Optional columns: JobName -> name, Partition, ExitCode (as printed, e.g. `15:0`; it differs
  between sacct, sacct -c and scontrol for the same job, so key on State), AllocTRES ->
  gpus (`gres/gpu=16`; None without a gres/gpu entry), NNodes (cross-checked against the
  expanded NodeList when both are there).
* A data line that cannot be read (wrong field count, bad id, time, state or hostlist, End
  before Start, NNodes disagreeing) goes to `unparsed` with the reason; the rest still parse.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TypeVar

from auditor.errors import ParseError
from auditor.models import Job
from auditor.parse._common import split_lines
from auditor.parse._jobs import (
    JobsResult,
    check_node_count,
    check_times,
    gpus_from_tres,
    optional_text,
    parse_nodelist,
    parse_slurm_time,
    parse_state,
)

__all__ = ["JobsResult", "parse_sacct"]

_T = TypeVar("_T")
_KIND = "sacct"
_REQUIRED = ("JobID", "State", "Start", "End", "NodeList")
_NAME = r"[A-Za-z][A-Za-z0-9_]*"
_NAME_RE = re.compile(_NAME, re.ASCII)
_FIRST_NAME_RE = re.compile(rf"^{_NAME}(?P<delim>[^A-Za-z0-9_])", re.ASCII)
# Fixed-width sacct: names padded with spaces, then a row of dashes.
_FIXED_HEADER_RE = re.compile(rf"^ *{_NAME}(?: +{_NAME})+ *$", re.ASCII)
# 123 | 123_4 | 123_[5-9%2] | 123+1, then an optional .step (batch, extern, 0, interactive),
# and for a step of a heterogeneous srun its component (`108.0+1`: slurm-23-11-10-1
# src/common/log.c prints "+%u" after the step id).
_JOB_ID_RE = re.compile(
    r"^(?P<alloc>\d+(?:_\d+|_\[[^\]\s]*\]|\+\d+)?)(?:\.(?P<step>\w+)(?:\+\d+)?)?$", re.ASCII
)


@dataclass(frozen=True, slots=True)
class _Header:
    delim: str
    trailing: bool  # sacct -p ends every line with the delimiter
    index: dict[str, int]  # lower-case column name -> position
    width: int

    def get(self, fields: list[str], column: str) -> str | None:
        pos = self.index.get(column.lower())
        return None if pos is None else fields[pos]

    def need(self, fields: list[str], column: str) -> str:
        return fields[self.index[column.lower()]]


def _header_names(line: str) -> tuple[str, list[str], bool] | None:
    """(delimiter, names, trailing delimiter) if `line` is a delimited header, else None."""
    m = _FIRST_NAME_RE.match(line)
    if m is None:
        return ("|", [line], False) if _NAME_RE.fullmatch(line) else None
    delim = m.group("delim")
    if delim.isspace() and delim != "\t":
        return None
    names = line.split(delim)
    trailing = len(names) > 1 and names[-1] == ""
    if trailing:
        names.pop()
    if not all(_NAME_RE.fullmatch(n) for n in names):
        return None
    return delim, names, trailing


def _make_header(line_no: int, line: str, delim: str, names: list[str], trailing: bool) -> _Header:
    index: dict[str, int] = {}
    for pos, name in enumerate(names):
        index.setdefault(name.lower(), pos)  # a column asked for twice: the first one counts
    missing = [c for c in _REQUIRED if c.lower() not in index]
    if missing:
        raise ParseError(
            _KIND,
            line_no,
            line,
            f"missing column(s) {', '.join(missing)} (need {', '.join(_REQUIRED)})",
        )
    return _Header(delim, trailing, index, len(names))


def _refuse_fixed_width(lines: list[str], header_no: int) -> ParseError:
    for line_no in range(header_no + 1, len(lines) + 1):
        line = lines[line_no - 1]
        if any(token.endswith("+") for token in line.split()):
            return ParseError(_KIND, line_no, line, "fields truncated: use sacct -P")
    return ParseError(
        _KIND, header_no, lines[header_no - 1], "fixed-width sacct output: use sacct -P"
    )


def _split(header: _Header, line: str) -> list[str]:
    fields = line.split(header.delim)
    if header.trailing and len(fields) == header.width + 1 and fields[-1] == "":
        fields.pop()
    if len(fields) != header.width:
        raise ValueError(f"expected {header.width} fields, got {len(fields)}")
    return fields


def _read(column: str, parse: Callable[[str], _T], raw: str) -> _T:
    """Run one field parser; its ValueError gets the column name in front."""
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"{column}: {exc}") from None


def _job(header: _Header, fields: list[str], job_id: str, line_no: int, tz: tzinfo) -> Job:
    def when(raw: str) -> datetime | None:
        return parse_slurm_time(raw, tz)

    start = _read("Start", when, header.need(fields, "Start"))
    end = _read("End", when, header.need(fields, "End"))
    check_times(start, end)
    nodes = _read("NodeList", parse_nodelist, header.need(fields, "NodeList"))
    nnodes = header.get(fields, "NNodes")
    if nnodes is not None:
        check_node_count(nodes, nnodes, "NNodes")
    tres = header.get(fields, "AllocTRES")
    return Job(
        job_id=job_id,
        state=_read("State", parse_state, header.need(fields, "State")),
        start=start,
        end=end,
        nodes=nodes,
        name=optional_text(header.get(fields, "JobName")),
        partition=optional_text(header.get(fields, "Partition")),
        gpus=_read("AllocTRES", gpus_from_tres, tres) if tres else None,
        exit_code=optional_text(header.get(fields, "ExitCode")),
        line_no=line_no,
    )


def parse_sacct(text: str, *, tz: tzinfo = UTC) -> JobsResult:
    lines = split_lines(text)
    header_no = next((n for n, line in enumerate(lines, 1) if line.strip()), 0)
    if header_no == 0:
        raise ParseError(_KIND, 0, "", "no header line (expected sacct -P output)")
    first = lines[header_no - 1].rstrip()
    if _FIXED_HEADER_RE.match(first):
        raise _refuse_fixed_width(lines, header_no)
    parsed = _header_names(first)
    if parsed is None:
        raise ParseError(
            _KIND, header_no, lines[header_no - 1], "not a sacct header line (expected JobID|...)"
        )
    header = _make_header(header_no, lines[header_no - 1], *parsed)

    # Pass 1: split every line, so steps can be matched with allocation lines in any order.
    rows: list[tuple[int, str, _Header, list[str] | str]] = []
    allocations: set[str] = set()
    for line_no in range(header_no + 1, len(lines) + 1):
        line = lines[line_no - 1]
        if not line.strip():
            continue
        again = _header_names(line.rstrip())
        if again is not None and "jobid" in (n.lower() for n in again[1]):
            header = _make_header(line_no, line, *again)
            continue
        try:
            fields = _split(header, line)
        except ValueError as exc:
            rows.append((line_no, line, header, str(exc)))
            continue
        rows.append((line_no, line, header, fields))
        m = _JOB_ID_RE.match(header.need(fields, "JobID").strip())
        if m is not None and m.group("step") is None:
            allocations.add(m.group("alloc"))

    result = JobsResult()
    for line_no, line, row_header, fields_or_error in rows:
        if isinstance(fields_or_error, str):
            result.unparsed.append((line_no, line, fields_or_error))
            continue
        job_id = row_header.need(fields_or_error, "JobID").strip()
        m = _JOB_ID_RE.match(job_id)
        if m is None:
            result.unparsed.append((line_no, line, f"JobID: not a Slurm job id: {job_id!r}"))
            continue
        if m.group("step") is not None and m.group("alloc") in allocations:
            result.skipped_steps += 1
            continue
        try:
            result.jobs.append(_job(row_header, fields_or_error, job_id, line_no, tz))
        except ValueError as exc:
            result.unparsed.append((line_no, line, str(exc)))
    return result
