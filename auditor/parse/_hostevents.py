"""Pieces shared by the host-event parsers (sacctmgr show event, slurmctld.log, boot records).

Slurm node states, as the scheduler prints them, are read into a `HostEvent` kind here so that
`sacctmgr show event` and slurmctld's `update_node: ... state set to X` agree.
"""

from __future__ import annotations

from datetime import datetime

from auditor.models import HostEvent, clip

REASON_MAX = 200  # HostEvent.reason: the source's own text, cut (models.HostEvent)
MESSAGE_MAX = 1000  # HostEvent.message: a whole line is kept for the report, bounded

# Slurm's node state strings come in two spellings, both from src/common/slurm_protocol_defs.c
# (SchedMD/slurm@slurm-22-05-8-1 :3558 node_state_string, :3806 node_state_string_compact;
# the same tables at slurm-25-11-7-1 :3518, :3775):
# * compact, which sacctmgr show event prints (src/sacctmgr/event_functions.c has called
#   node_state_string_compact since the command was added in 2010): DOWN, DOWN*, DRAIN, DRNG,
#   FAIL, FAILG, BOOT, BOOT^, IDLE@, MIX, ALLOC+ ... (at most one flag character after the base);
# * full, which slurmctld logs (`update_node: node X state set to DRAINED`, node_mgr.c): DOWN,
#   DRAINED, DRAINING, FAIL, FAILING, REBOOT^, REBOOT_ISSUED, IDLE, MIXED ...
# node_state_string_complete (`IDLE+DRAIN`, `MIXED+DRAIN+REBOOT_REQUESTED`) joins flags with
# `+`; it is read too, for lists built from scontrol/sinfo.
# The flag characters: * not responding, ~ powered down, # powering up, % powering down,
# ! power down pending, $ maintenance, @ reboot requested, ^ reboot issued, + completing,
# - planned.
_FLAG_CHARS = "*~#%!$@^+-"
_DOWN = frozenset({"DOWN"})
# FAIL/FAILING: an admin expects the node to fail and took it out (`scontrol update state=fail`);
# the nearest kind is drain (taken out of service on purpose, jobs may still finish).
_DRAIN = frozenset({"DRAIN", "DRNG", "DRAINED", "DRAINING", "FAIL", "FAILG", "FAILING"})
_REBOOT = frozenset({"BOOT", "REBOOT", "REBOOT_ISSUED", "REBOOT_REQUESTED"})
# States that say the node is usable (or asleep on purpose): known, not a fault.
_UP = frozenset({
    "IDLE", "MIX", "MIXED", "ALLOC", "ALLOCATED", "COMP", "COMPLETING", "RESV", "RESERVED",
    "PLND", "PLANNED", "BLOCK", "BLOCKED", "RESM", "RESUME", "UNDRAIN",
})
_OTHER = frozenset({
    "MAINT", "FUTR", "FUTURE", "CLOUD", "EXT", "EXTERNAL", "NPC", "PERFCTRS", "UNK", "UNKNOWN",
    "INVAL", "CANC_R", "CANCEL_REBOOT", "POW_DN", "POW_UP", "POWERED_DN", "POWERING_UP",
    "POWRING_DN", "POWER_DOWN", "POWER_UP", "POWERING_DOWN", "POWERED_DOWN", "DYNAMIC_FUTURE",
    "DYNAMIC_NORM",
})
_COMPLETE_FLAGS_DRAIN = frozenset({"DRAIN", "FAIL"})
_COMPLETE_FLAGS_REBOOT = frozenset({"REBOOT_REQUESTED", "REBOOT_ISSUED"})

UP = "up"  # a state that says the node is in service (resume): `state_kind` only
OTHER = "other"  # a known state that is neither a fault nor in service (power saving, future)


def state_kind(state: str) -> str | None:
    """The HostEvent kind a Slurm node state string stands for ("down", "drain",
    "reboot_requested"), `UP` or `OTHER` for known states that are not a host fault, None for a
    string that is not a Slurm node state. The base state decides (DOWN@ is down, DRAIN@ is
    drain); a reboot flag (@, ^) on a usable base makes it reboot_requested."""
    text = state.strip().upper()
    if not text:
        return None
    if "+" in text.rstrip("+"):  # node_state_string_complete: BASE+FLAG+FLAG
        base, *flags = text.split("+")
        if base in _DOWN:
            return "down"
        if any(f in _COMPLETE_FLAGS_DRAIN for f in flags):
            return "drain"
        if any(f in _COMPLETE_FLAGS_REBOOT for f in flags):
            return "reboot_requested"
        flag = ""
    else:
        flag = text[-1] if text[-1] in _FLAG_CHARS else ""
        base = text[:-1] if flag else text
    if base in _DOWN:
        return "down"
    if base in _DRAIN:
        return "drain"
    if base in _REBOOT or (flag in ("@", "^") and base in _UP):
        return "reboot_requested"
    if base in _UP:
        return UP
    if base in _OTHER:
        return OTHER
    return None


def host_event(host: str, at: datetime, kind: str, *, end_at: datetime | None = None,
               reason: str = "", line_no: int = 0, message: str = "") -> HostEvent:
    """A HostEvent with its untrusted text bounded."""
    return HostEvent(
        host=host,
        at=at,
        kind=kind,
        end_at=end_at,
        reason=clip(reason.strip(), REASON_MAX),
        line_no=line_no,
        message=clip(message, MESSAGE_MAX),
    )
