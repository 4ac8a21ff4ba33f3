"""How long a job's NCCL keeps a connection alive across a dead link, by NCCL version.

An RC queue pair that gets no ACK waits the local ACK timeout, 4.096 us x 2^NCCL_IB_TIMEOUT,
retries NCCL_IB_RETRY_CNT times, then completes with IBV_WC_RETRY_EXC_ERR (12): the job dies
(retry_cnt + 1) x 4.096 us x 2^timeout after the link went down. A link down for less than
that is absorbed. Read at the version tags of github.com/NVIDIA/nccl:

- `NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 14)` up to v2.13.4-1, 18 from v2.14.3-1 to v2.22.3-1,
  20 from v2.23.4-1 (src/transport/net_ib.cc; src/transport/net_ib/connect.cc from v2.29.2-1);
- `NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7)` at every one of those tags;
- both reach `qpAttr.timeout` / `qpAttr.retry_cnt` unchanged (ncclIbRtsQp).

So the defaults give about 0.5 s (<= 2.13), 8.6 s (2.14 - 2.22) and 34 s (>= 2.23). An IB
timeout of 0 means "wait forever" (IBTA 9.7.6.1.3): such a job never dies of a flap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

RETRY_CNT_DEFAULT = 7
_ACK_UNIT_S = 4.096e-6
_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# Versions in use when nothing is known: NCCL 2.14 onwards (the two current defaults).
UNKNOWN_BOUNDS = ("2.14.3", "2.23.4")


def version_key(version: str) -> tuple[int, int, int] | None:
    m = _VERSION_RE.match(version.strip())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def default_ib_timeout(version: str) -> int | None:
    key = version_key(version)
    if key is None:
        return None
    if key < (2, 14, 0):
        return 14
    if key < (2, 23, 4):
        return 18
    return 20


def death_s(ib_timeout: int, retry_cnt: int = RETRY_CNT_DEFAULT) -> float:
    """Seconds from a link going down to the QP's retry-exceeded error."""
    if ib_timeout <= 0:
        return math.inf
    return float((max(0, retry_cnt) + 1) * _ACK_UNIT_S * 2.0 ** min(ib_timeout, 31))


@dataclass(frozen=True, slots=True)
class DeathTime:
    """When a job's NCCL gives up on a dead link: exactly (lo == hi) or within bounds."""

    lo: float
    hi: float
    rule: str  # how it was found, for the evidence text

    @property
    def exact(self) -> bool:
        return self.lo == self.hi


def job_death(versions: Iterable[str], env: dict[str, int], *, site_version: str = "",
              site_timeout: int = 0, versions_in_use: Iterable[str] = ()) -> DeathTime:
    """A job's death time from what its log says (NCCL version, NCCL_IB_TIMEOUT and
    NCCL_IB_RETRY_CNT set by environment), else the site's configured default, else the
    bounds of the versions seen in the other jobs' logs (else NCCL 2.14 onwards)."""
    retry = env.get("NCCL_IB_RETRY_CNT", RETRY_CNT_DEFAULT)
    retry_note = f", retry count {retry}" if "NCCL_IB_RETRY_CNT" in env else ""
    if "NCCL_IB_TIMEOUT" in env:
        t = env["NCCL_IB_TIMEOUT"]
        d = death_s(t, retry)
        return DeathTime(d, d, f"NCCL_IB_TIMEOUT={t} set by the job{retry_note}: gives up "
                               f"after {_secs(d)}")
    mine = [v for v in versions if default_ib_timeout(v) is not None]
    if mine:
        d = death_s(default_ib_timeout(mine[0]) or 0, retry)
        return DeathTime(d, d, f"NCCL {mine[0]} (IB timeout {default_ib_timeout(mine[0])}"
                               f"{retry_note}): gives up after {_secs(d)}")
    if site_timeout > 0:
        d = death_s(site_timeout, retry)
        return DeathTime(d, d, f"site NCCL_IB_TIMEOUT={site_timeout}: gives up after {_secs(d)}")
    if site_version and default_ib_timeout(site_version) is not None:
        d = death_s(default_ib_timeout(site_version) or 0, retry)
        return DeathTime(d, d, f"site NCCL {site_version}: gives up after {_secs(d)}")
    seen = sorted({v for v in versions_in_use if default_ib_timeout(v) is not None},
                  key=lambda v: version_key(v) or (0, 0, 0))
    span = (seen[0], seen[-1]) if seen else UNKNOWN_BOUNDS
    lo = death_s(default_ib_timeout(span[0]) or 0, retry)
    hi = death_s(default_ib_timeout(span[1]) or 0, retry)
    lo, hi = min(lo, hi), max(lo, hi)
    where = "versions in use" if seen else "no version known, NCCL"
    return DeathTime(lo, hi, f"NCCL version unknown ({where} {span[0]} - {span[1]}): gives "
                             f"up after {_secs(lo)} to {_secs(hi)}")


def ib_hca_selects(spec: str, device: str, port: int | None = None) -> bool:
    """Whether NCCL_IB_HCA (as NCCL prints it) lets NCCL use `device` port `port`. From
    net_ib.cc and utils.cc (matchIfList): a leading `^` excludes the listed HCAs instead, then a
    leading `=` asks for exact names instead of prefixes (`mlx5_1` also picks `mlx5_10`); the
    list is comma-separated `name[:port]`, an entry without a port matches every port, and an
    empty list matches every HCA."""
    text = spec.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    entries = [e.strip() for e in text.split(",") if e.strip()]
    hit = not entries
    for entry in entries:
        name, _, want = entry.partition(":")
        if want and (port is None or not want.isdigit() or int(want) != port):
            continue
        if device == name if exact else device.startswith(name):
            hit = True
            break
    return hit != exclude


def _secs(s: float) -> str:
    if math.isinf(s):
        return "never (IB timeout 0)"
    return f"{s:.1f} s" if s < 100 else f"{s:.0f} s"
