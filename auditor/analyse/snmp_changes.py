"""What two SNMP polls of one switch say happened between them: ports that went down, came
back, or flapped in between (ifLastChange moved), and agent restarts (sysUpTime). Pure: the
polls come from auditor.collect.snmp."""

from __future__ import annotations

from datetime import datetime, timedelta

from auditor.models import TICKS_WRAP, ChangeKind, SnmpChange, SnmpPort, SnmpResult


def _restart_tolerance_ticks(elapsed_ticks: float) -> float:
    # Some agents refresh sysUpTime and the tables only every 10-60 s (NVOS auto-refresh), so a
    # sysUpTime that lags the wall clock by up to a minute is not a restart.
    return max(6000.0, 0.01 * elapsed_ticks)


def _agent_restarted(before: SnmpResult, after: SnmpResult) -> bool | None:
    """True if sysUpTime shows the agent restarted between the polls; None if unknown."""
    if before.sys_uptime_ticks is None or after.sys_uptime_ticks is None:
        return None
    b, a = before.sys_uptime_ticks, after.sys_uptime_ticks
    elapsed = (after.polled_at - before.polled_at).total_seconds() * 100
    tol = _restart_tolerance_ticks(elapsed)
    if a >= b:
        # Up less than the time between the polls: it went down and has been up since.
        return a - b < elapsed - tol
    expected = b + elapsed
    wrapped = expected >= TICKS_WRAP - tol and abs(expected - TICKS_WRAP - a) <= tol
    return not wrapped


def _estimate(after: SnmpResult, last_change: int | None,
              window: tuple[datetime, datetime]) -> datetime | None:
    """When ifLastChange happened: after.polled_at - (sysUpTime - ifLastChange) / 100 s."""
    if last_change is None or after.sys_uptime_ticks is None:
        return None
    ago = ((after.sys_uptime_ticks - last_change) % TICKS_WRAP) / 100
    at = after.polled_at - timedelta(seconds=ago)
    lo, hi = window
    return at if lo <= at <= hi else None


def _keyed(ports: list[SnmpPort]) -> dict[str, SnmpPort]:
    # Ports are matched by name, not ifIndex: some agents renumber ifIndex across restarts.
    counts: dict[str, int] = {}
    for p in ports:
        counts[p.if_name] = counts.get(p.if_name, 0) + 1
    return {p.if_name if counts[p.if_name] == 1 else f"{p.if_name} (ifIndex {p.if_index})": p
            for p in ports}


def flaps_between(before: SnmpResult, after: SnmpResult) -> list[SnmpChange]:
    """Port state changes between two successful polls of the same agent, oldest poll first.

    "down"/"up": ifOperStatus changed. "flap": the status is the same but ifLastChange moved,
    so the port changed state at least twice in between. "reboot": sysUpTime shows the agent
    restarted; ifLastChange values from before it are not comparable, so no flap is inferred
    from them (status changes are still reported). "gone": the port is no longer listed.
    """
    if before.target != after.target:
        raise ValueError(f"polls of different targets: {before.target!r}, {after.target!r}")
    if before.status != "ok" or after.status != "ok":
        raise ValueError("flaps_between needs two polls with status ok")
    changes: list[SnmpChange] = []
    restarted = _agent_restarted(before, after)
    slack = timedelta(seconds=_restart_tolerance_ticks(0) / 100)
    window = (before.polled_at - slack, after.polled_at + timedelta(seconds=1))
    if restarted and after.sys_uptime_ticks is not None:
        boot = after.polled_at - timedelta(seconds=after.sys_uptime_ticks / 100)
        window = (boot, after.polled_at + timedelta(seconds=1))
        changes.append(SnmpChange(
            "", "reboot", boot,
            f"agent restarted: sysUpTime {before.sys_uptime_ticks} -> "
            f"{after.sys_uptime_ticks} ticks in {(after.polled_at - before.polled_at)}; "
            "ifLastChange before it is not comparable"))
    old = _keyed(before.ports)
    new = _keyed(after.ports)
    for key, b in old.items():
        a = new.get(key)
        if a is None:
            changes.append(SnmpChange(b.if_name, "gone", None,
                                      f"ifIndex {b.if_index} no longer listed by the agent"))
            continue
        was_up, is_up = b.oper_status == "up", a.oper_status == "up"
        moved = (b.last_change_ticks is not None and a.last_change_ticks is not None
                 and b.last_change_ticks != a.last_change_ticks)
        kind: ChangeKind
        if was_up != is_up:
            kind = "up" if is_up else "down"
            detail = f"ifOperStatus {b.oper_status} -> {a.oper_status}"
            if moved or restarted:
                at = _estimate(after, a.last_change_ticks, window)
                if at is None:
                    detail += "; ifLastChange points outside the time between the polls"
            else:
                at = None
                detail += "; ifLastChange did not move (agent does not maintain it): no time"
        elif moved and not restarted:
            kind = "flap"
            at = _estimate(after, a.last_change_ticks, window)
            detail = (f"ifLastChange {b.last_change_ticks} -> {a.last_change_ticks} while "
                      f"ifOperStatus stayed {a.oper_status}: changed state at least twice")
        else:
            continue
        changes.append(SnmpChange(a.if_name, kind, at, detail))
    return changes
