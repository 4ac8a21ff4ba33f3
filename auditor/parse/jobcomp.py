"""Parse Slurm's jobcomp/filetxt log and generic JSONL job exports into Jobs.

`parse_jobcomp`: the file `JobCompType=jobcomp/filetxt` writes to `JobCompLoc`, one line per
finished job (src/plugins/jobcomp/filetxt/jobcomp_filetxt.c):
`JobId=2 UserId=root(0) ... Name=nccl-fail JobState=FAILED Partition=gpu TimeLimit=UNLIMITED
StartTime=... EndTime=... NodeList=gpu-[001-002,004] NodeCnt=3 ... Tres=cpu=3,... ExitCode=7:0`.

* Values are not quoted, so a line is cut before every ` Key=` (`(\\w+)=` after a space) rather
  than at every space: `Name=my job JobState=...` keeps the name `my job`. `Tres=cpu=3,mem=...`
  keeps everything after the first `=`.
* JobId, JobState, StartTime, EndTime and NodeList are required (else `unparsed`, naming the
  missing keys); Name, Partition, ExitCode, Tres (-> gpus from `gres/gpu=N`) are optional.
  filetxt's Tres is the job's requested TRES (tres_fmt_req_str); for a job that ran, its GPU
  count is what was allocated.
  NodeCnt is cross-checked against the expanded NodeList when there are nodes.
* Array tasks get the id sacct prints, `<ArrayJobId>_<ArrayTaskId>`; het-job components
  `<HetJobId>+<HetJobOffset>`.
* A requeued job (NODE_FAIL, then requeued) has one line per attempt; later attempts that never
  ran say `NodeList=(null) NodeCnt=0`: each line is a Job.
* Times are slurmctld local time without a zone (`tz`) -> aware UTC; `Unknown` = None.
* Blank lines are skipped; any other line that is not `JobId=...` goes to `unparsed`.

`parse_jobs_jsonl`: one JSON object per line, e.g. exported from Kubernetes pods or another
scheduler: `{"job_id": "7", "state": "FAILED", "start": "2026-11-30T06:14:54Z",
"end": null, "nodes": ["gpu-001", "gpu-002"], "gpus": 16, "name": "llm"}`.

* Required keys: job_id (string or integer), state (upper-cased: `Failed` -> FAILED;
  `CANCELLED by N` -> CANCELLED),
  start, end, nodes. start/end are ISO-8601 strings (with a zone, or naive = wall-clock in
  `tz`), epoch seconds (numbers, UTC), or null (start null = never started, end null = still
  running). nodes is a list of host names or one Slurm hostlist string (`gpu-[001-004]`).
* Optional: gpus (integer >= 0 or null), name, partition, exit_code (strings or null). Other
  keys (`source`, ...) are ignored.
* A line that is not such an object goes to `unparsed` with the reason; blank lines are skipped.

Both return a JobsResult (`skipped_steps` is always 0 here) and never raise for bad lines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from typing import Any, TypeVar

from auditor.models import Job, clip
from auditor.parse._common import split_lines
from auditor.parse._jobs import (
    HOST_MAX,
    JobsResult,
    check_node_count,
    check_times,
    gpus_from_tres,
    optional_text,
    parse_instant,
    parse_nodelist,
    parse_slurm_time,
    parse_state,
    too_long,
)

__all__ = ["JobsResult", "parse_jobcomp", "parse_jobs_jsonl"]

_T = TypeVar("_T")
_KEY_START_RE = re.compile(r" (?=\w+=)", re.ASCII)
_REQUIRED = ("JobId", "JobState", "StartTime", "EndTime", "NodeList")
_DIGITS_RE = re.compile(r"^\d{1,10}$", re.ASCII)
_JSONL_REQUIRED = ("job_id", "state", "start", "end", "nodes")
_HOST_RE = re.compile(r"^[^\s\[\],]+$")
# Epoch seconds outside this window are a unit mix-up (ms, us), not a job time.
_EPOCH_MIN, _EPOCH_MAX = 0, 32_503_680_000  # 1970 .. 3000


def _fields(line: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for token in _KEY_START_RE.split(line.strip()):
        key, sep, value = token.partition("=")
        if sep and key not in fields:  # a repeated key: the first one is Slurm's
            fields[key] = value
    return fields


def _jobcomp_id(fields: dict[str, str]) -> str:
    def number(key: str) -> str:
        value = fields[key]
        if not _DIGITS_RE.match(value):
            raise ValueError(f"{key}: not a job id number: {value!r}")
        return value

    if "ArrayJobId" in fields and "ArrayTaskId" in fields:
        return f"{number('ArrayJobId')}_{number('ArrayTaskId')}"
    if "HetJobId" in fields and "HetJobOffset" in fields:
        return f"{number('HetJobId')}+{number('HetJobOffset')}"
    return number("JobId")


def _jobcomp_job(fields: dict[str, str], line_no: int, tz: tzinfo) -> Job:
    missing = [k for k in _REQUIRED if k not in fields]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")

    def read(key: str, parse: Callable[[str], _T]) -> _T:
        try:
            return parse(fields[key])
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None

    def when(raw: str) -> datetime | None:
        return parse_slurm_time(raw, tz)

    job_id = _jobcomp_id(fields)
    start = read("StartTime", when)
    end = read("EndTime", when)
    check_times(start, end)
    nodes = read("NodeList", parse_nodelist)
    if "NodeCnt" in fields:
        check_node_count(nodes, fields["NodeCnt"], "NodeCnt")
    return Job(
        job_id=job_id,
        state=read("JobState", parse_state),
        start=start,
        end=end,
        nodes=nodes,
        name=optional_text(fields.get("Name")),
        partition=optional_text(fields.get("Partition")),
        gpus=read("Tres", gpus_from_tres) if fields.get("Tres") else None,
        exit_code=optional_text(fields.get("ExitCode")),
        line_no=line_no,
    )


def parse_jobcomp(text: str, *, tz: tzinfo = UTC) -> JobsResult:
    result = JobsResult()
    for line_no, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        if not line.startswith("JobId="):
            result.unparsed.append((line_no, line, "not a jobcomp line (JobId=...)"))
            continue
        fields = _fields(line)
        try:
            result.table.append(_jobcomp_job(fields, line_no, tz))
        except ValueError as exc:
            result.unparsed.append((line_no, line, str(exc)))
            continue
        if too_long(fields.get("Name"), fields.get("Partition"), fields.get("ExitCode")):
            result.cut.append((line_no, line))
    return result


# --- JSONL ------------------------------------------------------------------------------------


def _json_time(key: str, value: Any, tz: tzinfo) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{key}: expected an ISO-8601 string, epoch seconds or null")
    if isinstance(value, int | float):
        if not (math.isfinite(value) and _EPOCH_MIN <= value <= _EPOCH_MAX):
            raise ValueError(f"{key}: epoch seconds out of range: {value!r}")
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            return parse_instant(value, tz)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    raise ValueError(f"{key}: expected an ISO-8601 string, epoch seconds or null")


# A job id of another scheduler (Kubernetes: a pod or job name, at most 253 characters): a
# longer one is no id.
JOB_ID_MAX = 253


def _json_nodes(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            return parse_nodelist(value)
        except ValueError as exc:
            raise ValueError(f"nodes: {exc}") from None
    if isinstance(value, list):
        nodes: list[str] = []
        for name in value:
            if not isinstance(name, str) or not _HOST_RE.fullmatch(name) or len(name) > HOST_MAX:
                raise ValueError(f"nodes: not a host name: {clip(str(name), 80)!r}")
            nodes.append(name)
        return tuple(nodes)
    raise ValueError("nodes: expected a list of host names or a hostlist string")


def _json_text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return optional_text(value)
    raise ValueError(f"{key}: expected a string or null")


def _json_job(obj: Any, line_no: int, tz: tzinfo) -> Job:
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    missing = [k for k in _JSONL_REQUIRED if k not in obj]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    raw_id = obj["job_id"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise ValueError("job_id: expected a non-empty string or an integer")
    if len(str(raw_id).strip()) > JOB_ID_MAX:
        raise ValueError(f"job_id: over {JOB_ID_MAX} characters")
    if not isinstance(obj["state"], str):
        raise ValueError("state: expected a string")
    state = parse_state(obj["state"])
    start = _json_time("start", obj["start"], tz)
    end = _json_time("end", obj["end"], tz)
    check_times(start, end)
    gpus = obj.get("gpus")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        raise ValueError("gpus: expected an integer >= 0 or null")
    return Job(
        job_id=str(raw_id).strip(),
        state=state,
        start=start,
        end=end,
        nodes=_json_nodes(obj["nodes"]),
        name=_json_text(obj, "name"),
        partition=_json_text(obj, "partition"),
        gpus=gpus,
        exit_code=_json_text(obj, "exit_code"),
        line_no=line_no,
    )


def parse_jobs_jsonl(text: str, *, tz: tzinfo = UTC) -> JobsResult:
    result = JobsResult()
    for line_no, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            # The position, not json's wording (which changes between Python versions).
            result.unparsed.append((line_no, line, f"not JSON (error at column {exc.colno})"))
            continue
        except (ValueError, RecursionError):
            # Integers over 4300 digits; arrays nested deeper than the recursion limit.
            result.unparsed.append((line_no, line, "not JSON (too large or too deeply nested)"))
            continue
        try:
            result.table.append(_json_job(obj, line_no, tz))
        except ValueError as exc:
            result.unparsed.append((line_no, line, str(exc)))
            continue
        if too_long(obj.get("name"), obj.get("partition"), obj.get("exit_code")):
            result.cut.append((line_no, line))
    return result
