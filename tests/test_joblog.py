"""Rule, conversion and fuzz tests for the job-log parser (auditor/parse/joblog/).

Its fixtures run in tests/test_fixtures.py: every `tests/fixtures/joblog/<case>.txt` holds lines
copied verbatim from a public log (the `.json` "about" names the sources), except
`*_from_format_strings` cases, written from NCCL's format strings at a named tag where no public
log exists (their "about" cites file and line), and is parsed with its terminators using the
"params" of `<case>.json`; the result is compared with that JSON: errors as compact records
(None fields and `message` left out), `first` as line numbers, unparsed lines as [line_no,
reason], the ignored count, hosts, hca_ports as [host, hca, port] and addresses.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.ingest import kinds
from auditor.models import JobError, gid_to_guid, ipoib_link_local_to_guid
from auditor.parse.joblog import first_errors, parse_joblog
from tests.strategies import near_miss
from tests.test_fixtures import check_joblog_invariants as check_invariants
from tests.test_fixtures import load, numbered

FIXTURES = Path(__file__).parent / "fixtures" / "joblog"
SAMPLES = Path(__file__).parent / "fixtures" / "reference" / "nccl-samples.txt"
CASES = sorted(FIXTURES.glob("*.txt"))
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+$")
def test_fixtures_cover_every_version_group() -> None:
    names = {p.stem for p in CASES}
    for needed in (
        "nccl_2_9_no_peer", "nccl_2_30_status_names_hca_both_ends",
        "pytorch_last_error_no_prefix", "torchelastic_child_failed_block",
        "gpu_xid_and_oom_not_network",
    ):
        assert needed in names
    assert len(names) >= 15


def test_every_failure_line_of_the_research_samples_is_understood() -> None:
    keywords = ("Got completion", "async event", "Watchdog caught", "failed (exitcode",
                "Call to recv", "Connection closed by remote", "ncclRemoteError")
    lines = [
        (no, line) for no, line in enumerate(SAMPLES.read_text(encoding="utf-8").split("\n"), 1)
        if line and not line.startswith(("#", "SOURCE")) and any(k in line for k in keywords)
    ]
    assert len(lines) >= 20
    for no, line in lines:
        got = parse_joblog([(no, line)], reference=datetime(2026, 12, 1, tzinfo=UTC))
        assert len(got.errors) == 1 and not got.unparsed, line


# ---------------------------------------------------------------------------------------------
# NCCL wording by version (README table; lines built from the format strings in NCCL's git history)

HOST = "gpu-007:4242:4300 [3] transport/net_ib.cc:1295 NCCL WARN "


@pytest.mark.parametrize(
    ("text", "peer", "status", "name", "hca", "kind", "network"),
    [
        # <= 2.9
        ("NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129",
         None, 12, "IBV_WC_RETRY_EXC_ERR", None, "completion_error", True),
        # 2.10 - 2.17
        ("NET/IB : Got completion from peer 10.1.2.3<50421> with error 12, opcode 0, len 0, vendor err 129",
         "10.1.2.3", 12, "IBV_WC_RETRY_EXC_ERR", None, "completion_error", True),
        # 2.18 - 2.19, RoCE
        ("NET/IB : Got completion from peer 10.1.2.3<50421> with error 5, opcode 32607, len 0, vendor err 249 (Recv) localGid ::ffff:10.1.2.4 remoteGid ::ffff:10.1.2.3",
         "10.1.2.3", 5, "IBV_WC_WR_FLUSH_ERR", None, "flush_error", True),
        # 2.20 - 2.21
        ("NET/IB : Got completion from peer 10.1.2.3<50421> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.2.4 remoteGids::ffff:10.1.2.3",
         "10.1.2.3", 12, "IBV_WC_RETRY_EXC_ERR", None, "completion_error", True),
        # 2.22 - 2.27: no space before the colon, hca suffix, native IB (no GIDs)
        ("NET/IB: Got completion from peer 10.1.2.3<50421> with status=12 opcode=1 len=0 vendor err 129 (Send) hca mlx5_4",
         "10.1.2.3", 12, "IBV_WC_RETRY_EXC_ERR", "mlx5_4", "completion_error", True),
        # 2.28: names, reqSize, req_type
        ("NET/IB: Got completion from peer 10.1.2.3<50421> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=524288 vendor_err=129 req_type=Send hca mlx5_2",
         "10.1.2.3", 12, "IBV_WC_RETRY_EXC_ERR", "mlx5_2", "completion_error", True),
        # >= 2.29, IPv6 link-local OOB peer with scope
        ("NET/IB: Got completion from peer fe80::966d:ae03:8b:df78%ib0<53249> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_RECV_RDMA_WITH_IMM(129) vendor_err=81  hca mlx5_0",
         "fe80::966d:ae03:8b:df78%ib0", 4, "IBV_WC_LOC_PROT_ERR", "mlx5_0", "setup_error", False),
        # 2.28+ GIN path keeps the numeric form
        ("NET/IB/GIN: Got completion from peer 10.1.2.3<50421> with status=12 opcode=0 len=0 vendor err 129 (Send) hca mlx5_1",
         "10.1.2.3", 12, "IBV_WC_RETRY_EXC_ERR", "mlx5_1", "completion_error", True),
        # resiliency path (INFO, no peer)
        ("NET/IB: ncclIbResiliencyHandleCompletionError: Got completion with error (devIndex=1, wc->status=(IBV_WC_RETRY_EXC_ERR)12, wc->opcode=(IBV_WC_SEND)0, wc->wr_id=7, wc->qp_num=77, wc->byte_len=0)",
         None, 12, "IBV_WC_RETRY_EXC_ERR", None, "completion_error", True),
        # the peer could not be named
        ("NET/IB : Got completion from peer  with status=13 opcode=0 len=0 vendor err 135 (Send)",
         None, 13, "IBV_WC_RNR_RETRY_EXC_ERR", None, "completion_error", False),
    ],
)
def test_completion_wording_of_every_nccl_version(
    text: str, peer: str | None, status: int, name: str, hca: str | None, kind: str,
    network: bool,
) -> None:
    got = parse_joblog([(1, HOST + text)])
    (e,) = got.errors
    assert (e.peer, e.status, e.status_name, e.hca, e.kind, e.network) == (
        peer, status, name, hca, kind, network
    )
    assert e.host == "gpu-007" and e.message.startswith("NET/IB")


@pytest.mark.parametrize(
    ("text", "hca", "port", "network"),
    [
        ("NET/IB : Got async event : port error", None, None, True),
        ("NET/IB : mlx5_3:1 Got async event : port error", "mlx5_3", 1, True),
        ("NET/IB : mlx5_3:1 Got async error event: port error", "mlx5_3", 1, True),
        ("NET/IB : mlx5_3:1 Got non-fatal async event: port error(10)", "mlx5_3", 1, True),
        ("NET/IB : mlx5_3:1 Got non-fatal async event: port active(9)", "mlx5_3", 1, True),
        ("NET/IB : mlx5_3:1 Got non-fatal async event: SM change(12)", "mlx5_3", 1, False),
        ("NET/IB : mlx5_3:2 async fatal event: local catastrophic error", "mlx5_3", 2, True),
        ("NET/IB : mlx5_3:1 async fatal event on CQ (0x7f00) handle=3 cqe=4095: CQ error",
         "mlx5_3", 1, False),
        ("NET/IB : mlx5_3:1 async fatal event on QP (0x7f01) qpn=77 handle=1 send_cq=2 "
         "recv_cq=2 state=6 sq_psn=1 rq_psn=2: local work queue catastrophic error",
         "mlx5_3", 1, False),
    ],
)
def test_async_event_wording_of_every_nccl_version(
    text: str, hca: str | None, port: int | None, network: bool
) -> None:
    got = parse_joblog([(1, HOST + text)])
    (e,) = got.errors
    assert (e.kind, e.hca, e.hca_port, e.network) == ("async_event", hca, port, network)
    assert got.hca_ports == ({("gpu-007", hca): port} if hca is not None else {})


def test_hca_from_using_list_and_channel_index_before_2_22() -> None:
    lines = [
        "gpu-007:4242:4242 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:2/IB ; OOB ib0:10.9.0.7<0>",
        "gpu-007:4242:4299 [3] NCCL INFO Channel 00/0 : 3[3] -> 11[3] [send] via NET/IB/2/GDRDMA",
        "gpu-007:4242:4299 [3] NCCL INFO Channel 01/0 : 3[3] -> 11[3] [send] via NET/IB/2/GDRDMA",
        "gpu-007:4241:4298 [1] NCCL INFO Channel 00/0 : 1[1] -> 9[1] [send] via NET/IB/0/GDRDMA",
        "gpu-007:4241:4298 [1] NCCL INFO Channel 02/0 : 1[1] -> 9[1] [send] via NET/IB/1/GDRDMA",
        "",
        HOST + "NET/IB : Got completion from peer 10.9.0.11<40001> with error 12, opcode 0, len 0, vendor err 129",
        "gpu-007:4241:4300 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.9.0.9<40001> with error 12, opcode 0, len 0, vendor err 129",
        # an async event belongs to a device, not to the GPU in the prefix
        HOST + "NET/IB : Got async event : port error",
        # another host without init lines
        "gpu-008:1:2 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.9.0.7<40001> with error 12, opcode 0, len 0, vendor err 129",
    ]
    got = parse_joblog(list(enumerate(lines, 1)))
    located = [(e.host, e.hca, e.hca_port, e.peer) for e in got.errors]
    assert located == [
        ("gpu-007", "mlx5_4", 2, "10.9.0.11"),  # [3] uses NET/IB/2 only
        ("gpu-007", None, None, "10.9.0.9"),  # [1] uses two NICs: ambiguous
        ("gpu-007", None, None, None),
        ("gpu-008", None, None, "10.9.0.7"),
    ]
    assert got.hca_ports == {("gpu-007", "mlx5_0"): 1, ("gpu-007", "mlx5_3"): 1,
                             ("gpu-007", "mlx5_4"): 2}
    assert got.addresses == {"10.9.0.7": "gpu-007"}
    assert got.hosts == {"gpu-007", "gpu-008"}
    assert got.ignored == 6


def test_single_device_host_names_its_hca_even_for_an_old_async_event() -> None:
    lines = [
        "spark01:2683:2780 [0] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE ; OOB ens192f1:10.150.178.134<0>",
        "spark01:2683:2826 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
    ]
    (e,) = parse_joblog(list(enumerate(lines, 1))).errors
    assert (e.host, e.hca, e.hca_port, e.network) == ("spark01", "mlx5_1", 1, True)


# ---------------------------------------------------------------------------------------------
# PyTorch / torchrun


def test_last_error_takes_the_host_of_its_torchrun_stream() -> None:
    lines = [
        "[default3]:gpu-002:9001:9001 [3] NCCL INFO NET/IB : Using [0]mlx5_3:1/IB ; OOB ib0:10.9.0.2<0>",
        "[default5]:gpu-002:9003:9003 [5] NCCL INFO NET/IB : Using [0]mlx5_5:1/IB ; OOB ib0:10.9.0.2<0>",
        "[default3]:[rank11]:[E1130 06:28:57.123456789 ProcessGroupNCCL.cpp:1711] [PG ID 0 PG GUID 0(default_pg) Rank 11] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
        "[default5]:some other rank's output",
        "[default3]:ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "[default3]:Last error:",
        "[default3]:NET/IB : Got completion from peer 10.9.0.4<36611> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
        "[default3]:next line of the traceback",
    ]
    got = parse_joblog(list(enumerate(lines, 1)), year=2026)
    (e,) = got.errors
    assert (e.kind, e.network, e.host, e.hca, e.hca_port, e.peer, e.status, e.rank) == (
        "remote_error", True, "gpu-002", "mlx5_3", 1, "10.9.0.4", 12, 11
    )
    assert e.at == datetime(2026, 11, 30, 6, 28, 57, 123456, tzinfo=UTC)
    assert "Last error: NET/IB : Got completion" in e.message
    assert got.ignored == 7


def test_last_error_without_ib_text_is_not_network() -> None:
    base = "NCCL error in: NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5"
    for tail, network, kind in [
        ("NET/IB : mlx5_0:1 Got async event : port error", True, "remote_error"),
        ("socketProgressOpt: Call to recv from 10.0.0.1<3> failed : Connection reset by peer",
         False, "remote_error"),
        ("Cuda failure 'an illegal memory access was encountered'", False, "gpu_error"),
        ("", False, "remote_error"),
    ]:
        (e,) = parse_joblog([(1, base + (" Last error: " + tail if tail else ""))]).errors
        assert (e.kind, e.network) == (kind, network), tail
    # before 2.13 the same IB error surfaced as ncclSystemError
    line = ("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL "
            "version 2.10.3 ncclSystemError: System call (e.g. socket, malloc) or external "
            "library call failed or device error. Last error: NET/IB : Got completion from peer "
            "10.0.0.5<4> with error 12, opcode 0, len 0, vendor err 129")
    (e,) = parse_joblog([(1, line)]).errors
    assert (e.kind, e.network, e.peer) == ("remote_error", True, "10.0.0.5")
    (e,) = parse_joblog([(1, "NCCL error in: x.cpp:1, unhandled cuda error, NCCL version 2.18.1")]).errors
    assert (e.kind, e.network) == ("gpu_error", False)


@pytest.mark.parametrize(
    ("line", "kind", "network"),
    [
        # the operators' search words, and what the tools really print
        ("gpu-1:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN Call to ibv_poll_cq failed", "poll_error", True),
        ("gpu-1:1:2 [0] include/ibvwrap.h:63 NCCL WARN Call to ibv_poll_cq() returned -1", "poll_error", True),
        ("ib_cq_poll failed: transport retry counter exceeded", "completion_error", True),
        ("[rank0]:[E1130 06:28:57.000000000 ProcessGroupNCCL.cpp:1] Watchdog caught unhandled error", "watchdog_error", False),
        ("[rank0]:[E1130 06:28:57.000000000 ProcessGroupNCCL.cpp:1] [Rank 0] Caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BARRIER, Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.", "watchdog_timeout", False),
        ("gpu-1:1:2 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable", "setup_error", False),
        ("gpu-1:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.9<35555> failed : Connection refused", "socket_error", True),
        ("gpu-1:1:2 [0] NCCL WARN Cuda failure 'out of memory'", "oom", False),
        ("Nov 30 06:28:57 gpu-001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.", "gpu_error", False),
        ("Nov 30 06:28:58 gpu-001 kernel: Out of memory: Killed process 1234 (python) total-vm:1kB", "oom", False),
    ],
)
def test_signatures(line: str, kind: str, network: bool) -> None:
    got = parse_joblog([(1, line)], year=2026)
    assert [(e.kind, e.network) for e in got.errors] == [(kind, network)], got


def test_c10d_store_and_training_chatter_are_not_network_errors() -> None:
    lines = [
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [gpu-001]:29500 (errno: 111 - Connection refused).",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "gpu-1:1:2 [0] NCCL INFO [Service thread] Connection closed by localRank 0",
        "gpu-1:1:2 [0] NCCL INFO transport/net.cc:1137 -> 6",
        "[2026-09-09 10:46:33] gpu-1:1:2 [1] transport/net_ib/p2p.cc:783 NCCL WARN NET/IB: ncclIbTest: Got CQE with error (devIndex=0, req=0x1, comm=0x2 (recv), wr_id=0, qp_num=26257)",
        "gpu-1:1:2 [0] NCCL TRACE Got completion from peer 10.0.0.1<4> with status=0 opcode=0 len=8 wr_id=0 r=0x1 type=1 events={1,0}, i=0",
        "iter 83592: loss 1.5455, time: 4401.19ms, memory 71.2 GiB, speed: 1771 toks/s/device",
        "gpu-1:1:2 [0] NCCL INFO comm 0x55 rank 4 nranks 8 cudaDev 0 nvmlDev 0 busId 42000 commId 0x99 - Init COMPLETE",
    ]
    got = parse_joblog(list(enumerate(lines, 1)))
    assert got.errors == [] and got.unparsed == [] and got.ignored == len(lines)


def test_unreadable_failure_lines_are_unparsed_with_a_reason() -> None:
    lines = [
        "gpu-1:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<4> with",
        "gpu-1:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : mlx5_0:1 Got async event :",
        "kernel: NVRM: Xid (PCI:0000:3b",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: ",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "============================================================",
        "[0]:",
        "============================================================",
    ]
    got = parse_joblog(list(enumerate(lines, 1)))
    assert [(no, reason) for no, _, reason in got.unparsed] == [
        (1, "unreadable IB completion error"),
        (2, "IB async event without an event name"),
        (3, "unreadable Xid line"),
        (4, "unreadable torchelastic failure"),
        (7, "torchelastic failure entry without fields"),
    ]
    assert got.errors == [] and got.ignored == 3


# ---------------------------------------------------------------------------------------------
# Times


def test_collector_and_program_stamps() -> None:
    la = ZoneInfo("America/Los_Angeles")
    cases = [
        # a shipper's zoned stamp wins over NCCL's zoneless one
        ("2026-11-30T06:28:57.123Z [2026-11-29 22:28:56] gpu-1:1:2 [0] NCCL WARN NET/IB : Got async event : port error",
         datetime(2026, 11, 30, 6, 28, 57, 123000, tzinfo=UTC)),
        # CRI (k8s) with nanoseconds
        ("2026-11-30T06:28:57.123456789Z stdout F gpu-1:1:2 [0] NCCL WARN NET/IB : Got async event : port error",
         datetime(2026, 11, 30, 6, 28, 57, 123456, tzinfo=UTC)),
        ("2026-11-30T06:28:57.5+05:30 gpu-1:1:2 [0] NCCL WARN NET/IB : Got async event : port error",
         datetime(2026, 11, 30, 0, 58, 57, 500000, tzinfo=UTC)),
        # NCCL >= 2.26 WARN stamp, local time in tz (NCCL_DEBUG_TIMESTAMP_FORMAT with %3f too)
        ("[2026-11-30 06:28:57.250] gpu-1:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got async event : port error",
         datetime(2026, 11, 30, 14, 28, 57, 250000, tzinfo=UTC)),
        # a zoneless collector stamp is used only when the program printed none
        ("2026-11-30 06:28 gpu-1:1:2 [0] NCCL WARN NET/IB : Got async event : port error",
         datetime(2026, 11, 30, 14, 28, tzinfo=UTC)),
        ("gpu-1:1:2 [0] NCCL WARN NET/IB : Got async event : port error", None),
    ]
    for line, at in cases:
        (e,) = parse_joblog([(1, line)], tz=la).errors
        assert e.at == at, line


def test_glog_year_from_year_reference_or_newest_dated_line() -> None:
    timeout = ("[rank0]:[E{md} 23:59:58.5 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
               "Timeout(ms)=600000) ran for 600045 milliseconds before timing out.")
    lines = [(1, timeout.format(md="1231")), (2, timeout.format(md="101"))]
    by_year = parse_joblog(lines, year=2025).errors
    assert [e.at for e in by_year] == [
        datetime(2025, 12, 31, 23, 59, 58, 500000, tzinfo=UTC),
        datetime(2026, 1, 1, 23, 59, 58, 500000, tzinfo=UTC),
    ]
    by_ref = parse_joblog(lines, reference=datetime(2026, 1, 2, tzinfo=UTC)).errors
    assert [e.at for e in by_ref] == [e.at for e in by_year]
    dated = [*lines, (3, "[2026-01-02 00:00:01,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) local_rank: 0 (pid: 1) of binary: /usr/bin/python3")]
    assert [e.at for e in parse_joblog(dated).errors][:2] == [e.at for e in by_year]
    assert [e.at for e in parse_joblog(lines).errors] == [None, None]  # no year anywhere
    (e,) = parse_joblog([(1, timeout.format(md="230"))], year=2026).errors  # Feb 30
    assert e.at is None


def test_child_failed_block_time_is_agent_local_time() -> None:
    text = (FIXTURES / "torchelastic_child_failed_block.txt").read_text(encoding="utf-8")
    got = parse_joblog(numbered(text), tz=ZoneInfo("Asia/Shanghai"))
    assert {e.at for e in got.errors} == {datetime(2023, 5, 19, 8, 39, 58, tzinfo=UTC)}
    assert [e.rank for e in got.errors] == [1, 0]


def test_line_numbers_are_the_callers_and_terminators_are_optional() -> None:
    line = "gpu5:35917:35994 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129"
    got = parse_joblog([(1000, line + "\r\n"), (2000, line)])
    assert [e.line_no for e in got.errors] == [1000, 2000]
    assert got.errors[0].message == got.errors[1].message


# ---------------------------------------------------------------------------------------------
# first per (host, hca, peer)

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def err(line_no: int, at: datetime | None, kind: str = "completion_error", network: bool = True,
        host: str | None = "gpu-1", hca: str | None = "mlx5_0", peer: str | None = "10.0.0.2",
        rank: int | None = None) -> JobError:
    return JobError(at, kind, network, host, hca, None, peer, None, None, rank, line_no, "m")


def test_first_error_per_host_hca_peer() -> None:
    errors = [
        err(1, None),  # untimed first line of the pair
        err(2, T0 + timedelta(seconds=5), "flush_error"),
        err(3, T0, peer="10.0.0.3"),
        err(4, T0 - timedelta(seconds=1), peer="10.0.0.3", kind="flush_error"),  # earlier time wins
        err(5, T0, hca="mlx5_1"),
        err(6, T0, host="gpu-2", hca=None, peer=None, kind="async_event"),
        err(7, T0 - timedelta(hours=1), host="gpu-2", hca=None, peer=None, kind="async_event"),
        err(8, T0, "watchdog_timeout", False, hca=None, peer=None, rank=0),
        err(9, T0, "watchdog_timeout", False, hca=None, peer=None, rank=1),
        err(10, T0 - timedelta(seconds=1), "watchdog_timeout", False, hca=None, peer=None, rank=1),
        err(11, T0, "gpu_error", False, hca=None, peer=None, rank=0),
    ]
    assert [e.line_no for e in first_errors(errors)] == [1, 4, 5, 7, 8, 10, 11]
    # the same rule over errors from several files (one per rank) of one job
    assert first_errors(reversed(errors))[0].line_no == 11


def test_first_keeps_both_ends_of_a_bad_link() -> None:
    text = (FIXTURES / "nccl_2_30_status_names_hca_both_ends.txt").read_text(encoding="utf-8")
    got = parse_joblog(numbered(text))
    assert [(e.host, e.hca, e.peer) for e in got.first] == [
        ("ubuntu2", "mlx5_1", "10.153.235.13"), ("ubuntu4", "mlx5_0", "10.153.235.11"),
    ]
    # each end's peer is the other end's OOB address
    assert {got.addresses[e.peer] for e in got.first if e.peer} == {"ubuntu2", "ubuntu4"}


# ---------------------------------------------------------------------------------------------
# IPoIB link-local / GID -> port GUID


@pytest.mark.parametrize(
    ("addr", "ipoib", "gid"),
    [
        ("fe80::966d:ae03:8b:df78", "0x946dae03008bdf78", "0x966dae03008bdf78"),
        ("fe80::966d:ae03:8b:df78%ib0", "0x946dae03008bdf78", "0x966dae03008bdf78"),
        ("fe80::966d:ae03:8b:df78%ib0<53249>", "0x946dae03008bdf78", "0x966dae03008bdf78"),
        ("FE80::966D:AE03:8B:DF50", "0x946dae03008bdf50", "0x966dae03008bdf50"),
        ("fe80:0000:0000:0000:946d:ae03:008b:df78", "0x966dae03008bdf78", "0x946dae03008bdf78"),
        ("fe80::0202:c903:0001:2345", "0x0002c90300012345", "0x0202c90300012345"),
        ("[fe80::b859:9f03:aa:1]", "0xba599f0300aa0001", "0xb8599f0300aa0001"),
        # MAC-derived (ff:fe) Ethernet/RoCE link-local: no IB GUID in it
        ("fe80::0a00:27ff:fe4e:66a1", None, None),
        ("::ffff:29.87.4.221", None, None),  # RoCE v2 IPv4-mapped GID
        ("fd00:1148:9000:5000:4:200:3:ff22", None, None),  # RoCE v2 IPv6 GID
        ("fe80:0:0:1::1", None, None),  # not the default subnet prefix
        ("10.153.235.13", None, None),
        ("not an address", None, None),
        ("", None, None),
    ],
)
def test_ipoib_and_gid_to_guid(addr: str, ipoib: str | None, gid: str | None) -> None:
    assert ipoib_link_local_to_guid(addr) == ipoib
    assert gid_to_guid(addr) == gid


def test_ipoib_peer_of_a_fixture_maps_to_the_readme_guid() -> None:
    case, _ = load(kinds.kind("joblog"), FIXTURES / "nccl_2_18_ipoib_link_local_peer_setup_error.txt")
    result = case.parse()
    peers = [e.peer for e in result.errors if e.peer]
    assert ipoib_link_local_to_guid(peers[0]) == "0x946dae03008bdf78"


# ---------------------------------------------------------------------------------------------
# Fuzz: never raise, every line accounted for

_MANGLED = near_miss(
    [line.rstrip("\n") for p in CASES for _, line in numbered(p.read_text(encoding="utf-8"))],
    actions=("cut", "insert", "replace", "raw", "keep"), noise=st.text(max_size=12))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.one_of(_MANGLED, st.text(max_size=200)), max_size=16),
    year=st.one_of(st.none(), st.integers(1, 9999)),
    newline=st.booleans(),
    tz=st.sampled_from(["UTC", "America/Los_Angeles", "Pacific/Kiritimati", "Etc/GMT+12"]),
)
def test_parser_never_raises(lines: list[str], year: int | None, newline: bool, tz: str) -> None:
    numbered_lines = [(i, line + ("\n" if newline else "")) for i, line in enumerate(lines, 1)]
    result = parse_joblog(numbered_lines, tz=ZoneInfo(tz), year=year,
                          reference=None if year else datetime(2026, 12, 1, tzinfo=UTC))
    check_invariants(result, numbered_lines)
