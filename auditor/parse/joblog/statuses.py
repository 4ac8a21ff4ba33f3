"""ibv_wc_status: the codes and names of libibverbs' work completions, what each says about
the fabric, and the code a status text without a number stands for."""

from __future__ import annotations

_STATUS_NAMES: tuple[str, ...] = (
    "IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR", "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
)
# No ACK within the retry budget (the link-loss signature), garbled or missing responses, HCA fatal.
_NETWORK_STATUSES = frozenset({7, 12, 19, 20})
# Length, QP-state, protection and access errors, local or reported by the remote: memory
# registration / GPUDirect / ACS / IOMMU set-up problems, not cables.
_SETUP_STATUSES = frozenset({1, 2, 3, 4, 6, 8, 9, 10, 14, 15, 17, 18})


def status_kind(code: int) -> tuple[str, bool]:
    if code == 5:
        return "flush_error", True
    if code in _SETUP_STATUSES:
        return "setup_error", False
    return "completion_error", code in _NETWORK_STATUSES


def status_name(code: int) -> str | None:
    return _STATUS_NAMES[code] if 0 <= code < len(_STATUS_NAMES) else None


# ibv_wc_status_str() and UCX's mlx5 syndrome texts, for lines that print no number.
_STATUS_TEXTS: tuple[tuple[str, int], ...] = (
    ("transport retry count", 12),
    ("rnr retry count", 13),
    ("receive-no-ready retry count", 13),
    ("work request flushed", 5),
    ("wr flushed", 5),
    ("local protection", 4),
)


def status_from_text(text: str) -> int | None:
    low = text.lower()
    for words, code in _STATUS_TEXTS:
        if words in low:
            return code
    return None
