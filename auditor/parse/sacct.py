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

A month of a 4,096-host cluster is ~100,000 lines, so the file is read by column: each line is
only sorted (blank, header, data, wrong field count), the data lines under one header are split
at once, and each column is read as a whole: a time column checked by one regex and converted
by C loops, every other column per distinct value (a NodeList, state or job name recurs). What
does not fit the common shape takes the same per-value code as before, so reasons are the
same. 99,990 jobs: 0.9-1.0 s of CPU, where reading line by line with a Job each took 3.2-3.4 s.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import repeat
from operator import methodcaller
from typing import TypeVar, cast

from auditor.errors import ParseError
from auditor.models import JobTable
from auditor.parse._common import split_lines
from auditor.parse._jobs import (
    TEXT_MAX,
    JobsResult,
    gpus_from_tres,
    optional_text,
    parse_node_count,
    parse_nodelist_joined,
    parse_slurm_time,
    parse_state,
    too_long,
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
# Slurm's job ids are 32-bit (slurm.h: uint32_t job_id), array task ids too: at most 10 digits
# each (a longer "id" is no id: an attacker's or a broken line, refused like any other).
_JOB_ID = (r"(?P<alloc>\d{1,10}(?:_\d{1,10}|_\[[^\]\s]{0,64}\]|\+\d{1,10})?)"
           r"(?:\.(?P<step>\w{1,32})(?:\+\d{1,10})?)?")
_JOB_ID_RE = re.compile(rf"^{_JOB_ID}$", re.ASCII)
# The same for many ids, one a line: (alloc, step) per line, ("", "") for a line that is not one.
_JOB_IDS_RE = re.compile(rf"^(?:{_JOB_ID}|.*)$", re.ASCII | re.MULTILINE)
# A header line starts with a column name; a data line that does not start with a letter cannot
# be one, so only lines starting with a letter are tried as a header repeated further down.
_LETTERS = frozenset(string.ascii_letters)
# What sacct prints for a time (SLURM_TIME_FORMAT unset), or for none: a whole column of these
# is checked by one regex; any other value takes `parse_slurm_time` on its own.
_PLAIN_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
_TIME_OR_NONE = rf"(?:{_PLAIN_TIME}|Unknown|None)?+"
# Possessive: nothing to backtrack into, 4x faster (0.007 s for a column of 99,990).
_TIME_COLUMN_RE = re.compile(rf"{_TIME_OR_NONE}(?:\n{_TIME_OR_NONE})*+", re.ASCII)
_PLAIN_TIME_LEN = 19
_HOUR_LEN = 13  # 2026-11-30T06
_UTC_SUFFIX = "+00:00"
_ZERO = timedelta(0)
_MINUTE = timedelta(minutes=1)
_HOUR_END = timedelta(minutes=59, seconds=59)


@dataclass(frozen=True, slots=True)
class _Header:
    delim: str
    trailing: bool  # sacct -p ends every line with the delimiter
    index: dict[str, int]  # lower-case column name -> position
    width: int


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


@dataclass(slots=True)
class _Block:
    """The data lines under one header line (the first, or one repeated by a concatenation)."""

    header: _Header
    line_nos: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # as read, for `unparsed`
    bodies: list[str] = field(default_factory=list)  # without sacct -p's trailing delimiter

    def job_ids(self) -> list[str]:
        """The JobID field of each line, as printed."""
        pos, delim = self.header.index["jobid"], self.header.delim
        if pos == 0:
            return [body.partition(delim)[0] for body in self.bodies]
        return [body.split(delim, pos + 1)[pos] for body in self.bodies]


def _columns(header: _Header, bodies: list[str]) -> dict[str, list[str]]:
    """Lower-case column name -> its fields, one per line. Every body has width - 1 delimiters,
    so one split of all of them, sliced with a stride, gives each column."""
    fields = header.delim.join(bodies).split(header.delim)
    return {name: fields[pos::header.width] for name, pos in header.index.items()}


def _blocks(lines: list[str], header_no: int, header: _Header,
            unparsed: list[tuple[int, str, str]]) -> list[_Block]:
    """Sort the lines after the header: data lines into blocks, one per header line; a data
    line with the wrong number of fields into `unparsed`."""
    block = _Block(header)
    blocks = [block]
    delim, width, trailing = header.delim, header.width, header.trailing
    for line_no, line in enumerate(lines[header_no:], header_no + 1):
        if not line or line.isspace():
            continue
        if line[0] in _LETTERS:
            again = _header_names(line.rstrip())
            if again is not None and "jobid" in (n.lower() for n in again[1]):
                header = _make_header(line_no, line, *again)
                block = _Block(header)
                blocks.append(block)
                delim, width, trailing = header.delim, header.width, header.trailing
                continue
        count = line.count(delim) + 1
        if count == width:
            body = line
        elif trailing and count == width + 1 and line.endswith(delim):
            body = line[:-1]
        else:
            unparsed.append((line_no, line, f"expected {width} fields, got {count}"))
            continue
        block.line_nos.append(line_no)
        block.lines.append(line)
        block.bodies.append(body)
    return [b for b in blocks if b.bodies]


@dataclass(slots=True)
class _Ids:
    """A block's job ids (stripped), and which lines are steps (with their allocation's id)
    or not Slurm job ids at all."""

    ids: list[str]
    steps: dict[int, str]  # line index -> allocation id
    bad: set[int]
    allocations: set[str]


def _read_ids(raw: list[str]) -> _Ids:
    digits = "".join(raw)
    # sacct -X: allocations only (a 32-bit id has at most 10 digits)
    if digits.isascii() and digits.isdigit() and all(raw) and max(map(len, raw)) <= 10:
        return _Ids(raw, {}, set(), set(raw))
    found = _Ids(list(map(str.strip, raw)), {}, set(), set())
    # sacct without -X: three or four step lines a job. One findall reads all the ids (an
    # empty alloc: not a job id), where a match each took 3x as long.
    matches = _JOB_IDS_RE.findall("\n".join(found.ids))
    if len(matches) != len(found.ids):  # an id holding a line break: cannot be one
        matches = [m.group("alloc", "step") if (m := _JOB_ID_RE.match(i)) else ("", "")
                   for i in found.ids]
    for i, (alloc, step) in enumerate(matches):
        if not alloc:
            found.bad.add(i)
        elif step:
            found.steps[i] = alloc
        else:
            found.allocations.add(alloc)
    return found


def _per_value(values: list[str], read: Callable[[str], _T], prefix: str,
               errors: dict[int, str]) -> list[_T | None]:
    """`read` of each value, called once per distinct value. A value it refuses (ValueError)
    gives None and, unless its line has one already, the reason (after `prefix`) in
    `errors`."""
    done: dict[str, _T] = {}
    refused: dict[str, str] = {}
    for value in set(values):
        try:
            done[value] = read(value)
        except ValueError as exc:
            refused[value] = f"{prefix}{exc}"
    if refused:
        for i, value in enumerate(values):
            if value in refused:
                errors.setdefault(i, refused[value])
    return list(map(done.get, values))


def _read_times(values: list[str], tz: tzinfo, column: str,
                errors: dict[int, str]) -> list[datetime | None]:
    """Start or End: aware UTC, None for Unknown/None (`parse_slurm_time`)."""
    if _TIME_COLUMN_RE.fullmatch("\n".join(values)):
        moments = _plain_times(values, tz)
        if moments is not None:
            return moments
    return _per_value(values, lambda v: parse_slurm_time(v, tz), f"{column}: ", errors)


def _plain_times(values: list[str], tz: tzinfo) -> list[datetime | None] | None:
    """A column of plain times and Unknown/None read as `parse_slurm_time` reads them, or None
    to leave it to that: a date that does not exist, or an hour in which `tz` changes offset.

    Within an hour of steady offset, wall time in `tz` is that offset from UTC, so the offset
    is written after each value and fromisoformat reads it, both in C (map): Start and End of
    99,990 jobs in 0.09 s of CPU, where fromisoformat, replace(tzinfo) and astimezone value by
    value took 0.23 s. Every zone takes this road: the default --tz is ZoneInfo("UTC")."""
    plain = [v for v in values if len(v) == _PLAIN_TIME_LEN]
    suffixes: dict[str, str] = {}
    for hour in {v[:_HOUR_LEN] for v in plain}:
        suffix = _offset_suffix(hour, tz)
        if suffix is None:
            return None
        suffixes[hour] = suffix
    try:
        texts: Iterable[str]
        if len(set(suffixes.values())) == 1:
            texts = map(str.__add__, plain, repeat(next(iter(suffixes.values()))))
        else:
            texts = [v + suffixes[v[:_HOUR_LEN]] for v in plain]
        moments = list(map(datetime.fromisoformat, texts))
        if set(suffixes.values()) - {_UTC_SUFFIX}:
            moments = list(map(methodcaller("astimezone", UTC), moments))
    except (ValueError, OverflowError):
        return None
    if len(plain) == len(values):
        return cast(list[datetime | None], moments)
    it = iter(moments)
    return [next(it) if len(v) == _PLAIN_TIME_LEN else None for v in values]


def _offset_suffix(hour: str, tz: tzinfo) -> str | None:
    """`+01:00`: the offset of the wall-clock hour `2026-11-30T06` in `tz` (fold 0, as
    parse_instant reads a time), or None when it changes within the hour or is not whole
    minutes (or the hour does not exist at all)."""
    try:
        first = datetime.fromisoformat(hour).replace(tzinfo=tz)
        offset = first.utcoffset()
        if offset is None or offset != (first + _HOUR_END).utcoffset():
            return None
    except (ValueError, OverflowError):
        return None
    minutes, rest = divmod(offset, _MINUTE)
    if rest:
        return None
    hours, minutes = divmod(abs(minutes), 60)
    return f"{'-' if offset < _ZERO else '+'}{hours:02d}:{minutes:02d}"


def _node_count(text: str) -> tuple[str, int] | None:
    count = parse_node_count(text, "NNodes")
    return None if count is None else (count, int(count))


def _gpus(text: str) -> int | None:
    return gpus_from_tres(text) if text else None


def _take(values: list[_T], rows: list[int]) -> list[_T]:
    return list(map(values.__getitem__, rows))


def _read_block(block: _Block, ids: _Ids, allocations: set[str], tz: tzinfo,
                result: JobsResult) -> None:
    """Add a block's jobs to `result.table`, and its unreadable lines to `result.unparsed`."""
    rows = list(range(len(block.bodies)))
    bodies, job_ids, line_nos = block.bodies, ids.ids, block.line_nos
    if ids.bad or ids.steps:
        for i in ids.bad:
            result.unparsed.append((block.line_nos[i], block.lines[i],
                                    f"JobID: not a Slurm job id: {ids.ids[i]!r}"))
        folded = {i for i, alloc in ids.steps.items() if alloc in allocations}
        result.skipped_steps += len(folded)
        rows = [i for i in rows if i not in ids.bad and i not in folded]
        if not rows:
            return
        bodies, job_ids, line_nos = _take(bodies, rows), _take(job_ids, rows), _take(line_nos, rows)
    columns = _columns(block.header, bodies)
    n = len(rows)

    # Why a line is refused, checked in the order the line-by-line reader checked them (Start,
    # End, their order, NodeList, NNodes, State, AllocTRES): a line's first reason is reported.
    errors: dict[int, str] = {}
    starts = _read_times(columns["start"], tz, "Start", errors)
    ends = _read_times(columns["end"], tz, "End", errors)
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if start is not None and end is not None and end < start:
            errors.setdefault(i, "end is before start")
    nodes = _per_value(columns["nodelist"], parse_nodelist_joined, "NodeList: ", errors)
    if "nnodes" in columns:
        counts = _per_value(columns["nnodes"], _node_count, "", errors)
        for i, (named, count) in enumerate(zip(nodes, counts, strict=True)):
            if named and named[1] and count is not None and count[1] != named[1]:
                errors.setdefault(i, f"NNodes {count[0]} but NodeList names {named[1]} nodes")
    joined = [named[0] if named else "" for named in nodes]
    states = _per_value(columns["state"], parse_state, "State: ", errors)
    # An optional column that is not there reads as empty fields: None.
    absent = [""] * n
    gpus = _per_value(columns.get("alloctres", absent), _gpus, "AllocTRES: ", errors)
    names = _per_value(columns.get("jobname", absent), optional_text, "", errors)
    partitions = _per_value(columns.get("partition", absent), optional_text, "", errors)
    exit_codes = _per_value(columns.get("exitcode", absent), optional_text, "", errors)
    texts = [columns[k] for k in ("jobname", "partition", "exitcode") if k in columns]
    # max(map(len)) at C speed first: a value that long is rare (100,000 lines, 1 ms).
    if any(max(map(len, col), default=0) > TEXT_MAX for col in texts):
        result.cut += [(line_nos[i], block.lines[rows[i]]) for i in range(n)
                       if i not in errors and too_long(*(col[i] for col in texts))]
    if errors:
        result.unparsed += [(line_nos[i], block.lines[rows[i]], why) for i, why in errors.items()]
        keep = [i for i in range(n) if i not in errors]
        job_ids, line_nos, joined = _take(job_ids, keep), _take(line_nos, keep), _take(joined, keep)
        starts, ends, states = _take(starts, keep), _take(ends, keep), _take(states, keep)
        gpus, names = _take(gpus, keep), _take(names, keep)
        partitions, exit_codes = _take(partitions, keep), _take(exit_codes, keep)
    # Lines with a reason are gone: no None is left where a value is required.
    result.table.extend(JobTable(
        job_id=job_ids, state=cast(list[str], states), start=starts, end=ends,
        nodes_joined=joined, name=names, partition=partitions, gpus=gpus, exit_code=exit_codes,
        line_no=line_nos))


def parse_sacct(text: str, *, tz: tzinfo = UTC) -> JobsResult:
    """Read sacct -P output (see the module docstring)."""
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

    result = JobsResult()
    blocks = _blocks(lines, header_no, header, result.unparsed)
    # Steps are folded into an allocation line anywhere in the input, so all ids come first.
    ids = [_read_ids(block.job_ids()) for block in blocks]
    allocations: set[str] = set().union(*(i.allocations for i in ids))
    for block, block_ids in zip(blocks, ids, strict=True):
        _read_block(block, block_ids, allocations, tz, result)
    result.unparsed.sort(key=lambda u: u[0])
    return result
