"""The job-log parser's shortcuts (issue #13) answer what the long way answers: the envelope of
a line with none (`read_envelope` vs `read_envelope_fully`), the regexes rewritten so the
search looks for a literal first (against the patterns they replace), and the `Using` lines
read without their envelope or from the cache (against the same lines behind a torchrun tag,
which go the long way)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.parse.joblog import parse_joblog
from auditor.parse.joblog.envelope import GLOG_RE, read_envelope, read_envelope_fully
from auditor.parse.joblog.machine import _ENV_RE
from auditor.parse.joblog.recognise import NCCL_TOKEN_RE

# Pieces of real lines, and the characters the shortcuts look at, glued at random.
_PIECES = [
    "node-0875:338546:338546 [0] ", "NCCL INFO ", "NCCL WARN ", "[rank3]:", "[default0]:",
    "[1,12]<stdout>:", "3: ", "2026-10-31T01:02:03.5Z ", "2025-11-09 15:39:31.043 +08:00 ",
    "Nov 30 06:28:57 node-1 kernel: ", "Nov 22 05:43:54 ", "<6>", "Sat Oct 31 01:05:24 2026 ",
    "(RayTrainWorker pid=355353) ", "[Sat Oct 31 01:05:24 2026] ", "E0517 08:24:03.805000 ",
    "[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:1]", "[PG ID 0 PG GUID 0(default_pg) Rank 5]",
    "[PG 0 Rank 2]", "  time      : 2026-10-31_01:05:26", "=====", "-----", "[0]:", "Rank ",
    "ncclRemoteError", "xncclSystemError", "NCCL_IB_TIMEOUT", " set by environment to ", "18",
    "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.1.2.3<0>", "host:1:2] ", "[", "]", ":", " ",
    "\t", "\u2003", "\u0663", "x", "_", ".", "-", "I", "E",
]
_LINES = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join)

# The patterns the rewritten ones replace, as they were.
_OLD_GLOG = re.compile(r"(?<![\w.])[IWEF](\d{3,4}) (\d\d):(\d\d):(\d\d)\.(\d{1,9})\b")
_OLD_TOKEN = re.compile(r"\bnccl(RemoteError|SystemError|InternalError|UnhandledCudaError"
                        r"|InvalidUsage|InvalidArgument)\b")
_OLD_ENV = re.compile(r"\b(NCCL_IB_TIMEOUT|NCCL_IB_RETRY_CNT) set by environment to (-?\d+)")


def _found(m: re.Match[str] | None) -> tuple[tuple[int, int], tuple[str | None, ...]] | None:
    return None if m is None else (m.span(), m.groups())


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(line=st.one_of(_LINES, st.text(max_size=60)))
def test_the_shortcuts_answer_what_the_long_way_does(line: str) -> None:
    assert read_envelope(line) == read_envelope_fully(line)
    for new, old in ((GLOG_RE, _OLD_GLOG), (NCCL_TOKEN_RE, _OLD_TOKEN), (_ENV_RE, _OLD_ENV)):
        assert _found(new.search(line)) == _found(old.search(line))
        assert _found(new.match(line)) == _found(old.match(line))


def test_a_using_line_says_the_same_bare_cached_or_behind_a_tag() -> None:
    using = ("{h}:{p}:{p} [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; [2]mlx5_2:1/IB "
             "[RO]; OOB ib0:10.0.0.{n}<0>")
    error = ("{h}:{p}:{p} [1] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer "
             "10.0.0.9<1> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca mlx5_2")
    for tag in ("", "[default1]:"):
        lines = [tag + using.format(h=f"node-{n}", p=100 + n, n=n) for n in range(3)]
        lines += [tag + using.format(h="node-1", p=101, n=1),  # again: the memo
                  tag + error.format(h="node-1", p=101)]
        for _ in range(2):  # the second time from the cache
            res = parse_joblog(list(enumerate(lines, 1)))
            assert res.hosts == {"node-0", "node-1", "node-2"}
            assert res.hca_ports == {(f"node-{n}", f"mlx5_{d}"): 1 for n in range(3)
                                     for d in (0, 2)}
            assert res.addresses == {f"10.0.0.{n}": f"node-{n}" for n in range(3)}
            (err,) = res.errors
            assert (err.host, err.hca, err.hca_port, err.peer) == ("node-1", "mlx5_2", 1,
                                                                  "10.0.0.9")
