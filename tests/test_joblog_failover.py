"""NCCL port failover lines (>= 2.29, NCCL_IB_RESILIENCY_PORT_FAILOVER=1) in job logs.

No public capture exists that we know of: the lines are built from the format strings of
NVIDIA/nccl v2.29.7-1 (src/transport/net_ib/p2p_resiliency.cc, net_ib/init.cc, debug.cc), as in
tests/fixtures/joblog/nccl_2_29_port_failover_from_format_strings.txt.
"""

from __future__ import annotations

from auditor.models import JobError
from auditor.parse.joblog import parse_joblog

WARN = "[2026-03-04 10:15:0{s}] {host}:{pid}:77 [{dev}] transport/net_ib/p2p_resiliency.cc:{line} NCCL WARN "
FAILED = WARN + ("NET/IB: ncclIbResiliencyHandleDeviceFailure: Device {i} marked as failed. "
                 "(send comm=0x7f3a5c012000)")
NO_REPLACEMENT = WARN + ("NET/IB: ncclIbResiliencyReplaceQps: Could not find a replacement QP "
                         "for the failed QP with qpIndex=3 (devIndex={i})")
COMPLETION = ("{host}:{pid}:77 [{dev}] NCCL INFO NET/IB: ncclIbResiliencyHandleCompletionError: "
              "Got completion with error (devIndex={i}, wc->status=({name}){code}, "
              "wc->opcode=(IBV_WC_RDMA_WRITE)1, wc->wr_id=3, wc->qp_num=4711, wc->byte_len=0)")
VDEV = "{host}:{pid}:{pid} [0] NCCL INFO NET/IB : Made virtual device [{n}] name={name} speed=800000 ndevs={k}"


def parse(*lines: str) -> list[JobError]:
    return parse_joblog(enumerate(lines, 1)).errors


def vdev(n: int, name: str, host: str = "node1", pid: int = 10) -> str:
    return VDEV.format(host=host, pid=pid, n=n, name=name, k=len(name.split("+")))


def test_failover_is_not_network_and_names_the_device_of_the_only_merged_nic() -> None:
    (e,) = parse(vdev(0, "mlx5_0"), vdev(1, "mlx5_1"), vdev(2, "mlx5_0+mlx5_1"),
                 FAILED.format(s=2, host="node1", pid=10, dev=0, line=312, i=0))
    assert (e.kind, e.network, e.host, e.hca, e.dev_index) == (
        "port_failover", False, "node1", "mlx5_0", 0)
    assert e.at is not None and e.at.isoformat() == "2026-03-04T10:15:02+00:00"


def test_several_merged_nics_give_the_hcas_it_may_be() -> None:
    (e,) = parse(vdev(4, "mlx5_0+mlx5_1"), vdev(5, "mlx5_2+mlx5_3"),
                 FAILED.format(s=2, host="node1", pid=10, dev=3, line=312, i=1))
    assert (e.hca, e.hca_candidates) == (None, ("mlx5_1", "mlx5_3"))


def test_without_made_virtual_device_lines_the_hca_is_not_guessed() -> None:
    # A WARN-only log: the Using list names physical devices, not the merged NIC's order.
    using = "node1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>"
    (e,) = parse(using, FAILED.format(s=2, host="node1", pid=10, dev=0, line=312, i=1))
    assert (e.kind, e.hca, e.hca_candidates, e.dev_index) == ("port_failover", None, (), 1)


def test_no_replacement_is_a_network_failure() -> None:
    (e,) = parse(vdev(2, "mlx5_0+mlx5_1"),
                 NO_REPLACEMENT.format(s=4, host="node1", pid=10, dev=0, line=95, i=1))
    assert (e.kind, e.network, e.hca, e.dev_index) == ("failover_failed", True, "mlx5_1", 1)


def test_only_the_completion_error_failed_over_from_stops_being_network() -> None:
    lines = [vdev(2, "mlx5_0+mlx5_1"),
             COMPLETION.format(host="node1", pid=10, dev=0, i=1, name="IBV_WC_RETRY_EXC_ERR",
                               code=12),
             FAILED.format(s=2, host="node1", pid=10, dev=0, line=312, i=1),
             # the last device goes too: :44-50 judge it fatal, no failover follows
             COMPLETION.format(host="node1", pid=10, dev=0, i=0, name="IBV_WC_RETRY_EXC_ERR",
                               code=12),
             # another process (the host's merged NIC), no failover of its own
             COMPLETION.format(host="node1", pid=11, dev=1, i=1, name="IBV_WC_RETRY_EXC_ERR",
                               code=12),
             # a status resiliency does not survive (:34-35) stays network
             COMPLETION.format(host="node1", pid=10, dev=0, i=1, name="IBV_WC_BAD_RESP_ERR",
                               code=7)]
    got = [(e.line_no, e.kind, e.network, e.hca) for e in parse(*lines)]
    assert got == [(2, "completion_error", False, "mlx5_1"), (3, "port_failover", False, "mlx5_1"),
                   (4, "completion_error", True, "mlx5_0"), (5, "completion_error", True, "mlx5_1"),
                   (6, "completion_error", True, "mlx5_1")]


def test_other_resiliency_lines_are_not_failures() -> None:
    info = "node1:10:77 [0] NCCL INFO NET/IB: "
    res = parse_joblog(enumerate([
        info + "ncclIbResiliencyHandleDeviceFailure: Device 1 was already marked as failed.",
        info + "ncclIbResiliencyReplaceQps: Replacing QP: qpIndex=1 (qp_num=4711, devIndex=1) to "
               "qpIndex=0 (qp_num=4710, devIndex=0) on send communicator (comm=0x7f3a5c012000)",
        info + "ncclIbResiliencyCheckErrorNotFatal: The error is not fatal. Trying to continue...",
    ], 1))
    assert (res.errors, res.unparsed, res.ignored) == ([], [], 3)
