"""NCCL release facts a job's fate depends on: which releases are modelled, each one's
default NCCL_IB_TIMEOUT and how long a dead link takes to fail a connection. How each
release words its log lines is in `formats`."""

from __future__ import annotations

import re

from auditor.nccl import RETRY_CNT_DEFAULT, default_ib_timeout

# Facts below were read in the NVIDIA/nccl sources at the release tags named (`git show
# <tag>:<file>`); a version between two tags takes the rule of the older one.
IB_RETRY_CNT = RETRY_CNT_DEFAULT  # NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7): auditor.nccl
_NCCL_VERSION_RE = re.compile(r"2\.(\d{1,2})\.(\d{1,2})")
_MIN_NCCL = (2, 8, 0)


def parse_nccl_version(text: str) -> tuple[int, int, int]:
    """`2.21.5` -> (2, 21, 5); only NCCL 2.8 and later are modelled."""
    m = _NCCL_VERSION_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"NCCL version {text!r}: expected 2.MINOR.PATCH, e.g. 2.21.5")
    version = (2, int(m.group(1)), int(m.group(2)))
    if version < _MIN_NCCL:
        raise ValueError(f"NCCL version {text}: only 2.8.0 and later are modelled")
    return version


def ib_timeout_default(version: str) -> int:
    """NCCL_IB_TIMEOUT when the environment does not set it: the product's own table
    (auditor.nccl.default_ib_timeout, read at the NCCL tags), so the simulator and the auditor
    never disagree (issue #22)."""
    parse_nccl_version(version)
    found = default_ib_timeout(version)
    assert found is not None  # noqa: S101 - parse_nccl_version accepted it
    return found


def nccl_death_s(ib_timeout: int, retry_cnt: int = IB_RETRY_CNT) -> float:
    """How long a dead link takes to fail an NCCL connection: the QP sends retry_cnt + 1
    times, each waiting the IB local ACK timeout of 4.096 us x 2^timeout (ibv_modify_qp
    `timeout`, `retry_cnt` as net_ib.cc sets them): 14 -> 0.54 s, 18 -> 8.59 s, 20 -> 34.4 s."""
    return 4.096e-6 * float(2**ib_timeout) * (retry_cnt + 1)
