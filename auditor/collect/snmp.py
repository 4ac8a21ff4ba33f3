"""Poll switch port state and counters over SNMP (IF-MIB + MELLANOX-IF-VPI-MIB), pysnmp 7 asyncio.

`poll(targets)` polls many agents at once and always returns one `SnmpResult` per target, in
input order: a dead, slow or misconfigured agent costs only its own timeout and comes back with a
status instead of an exception.

What each status can really tell apart:

* ``timeout``: no answer within ``timeout_s * (retries + 1)`` for one request. On v2c a wrong
  community ends up here too: agents drop such requests without a word (Net-SNMP only counts
  snmpInBadCommunityNames), so no client can tell a wrong community from a dead agent.
* ``auth_failed``: an SNMPv3 agent answered with a USM report: wrong auth key
  (usmStatsWrongDigests), wrong priv key (usmStatsDecryptionErrors), unknown user, or a security
  level the user may not use; or any agent answered errorStatus noAccess/authorizationError.
* ``parse_failed``: the answer could not be understood (undecodable message, a value of the wrong
  type, OIDs that do not increase, a multi-part ifIndex).
* ``error``: anything else: unresolvable host, an unset `env:` variable for a secret, another
  errorStatus, or no IF-MIB rows visible (often a v3 user or community whose view hides IF-MIB).

`detail` never holds a community string or key: values are scrubbed from every message.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
    usm3DESEDEPrivProtocol,
    usmAesBlumenthalCfb192Protocol,
    usmAesBlumenthalCfb256Protocol,
    usmAesCfb128Protocol,
    usmAesCfb192Protocol,
    usmAesCfb256Protocol,
    usmDESPrivProtocol,
    usmHMAC128SHA224AuthProtocol,
    usmHMAC192SHA256AuthProtocol,
    usmHMAC256SHA384AuthProtocol,
    usmHMAC384SHA512AuthProtocol,
    usmHMACMD5AuthProtocol,
    usmHMACSHAAuthProtocol,
)
from pysnmp.proto import errind
from pysnmp.proto.rfc1902 import (
    Counter32,
    Counter64,
    Gauge32,
    Integer32,
    OctetString,
    TimeTicks,
    Unsigned32,
)
from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject

from auditor.config import SnmpSettings
from auditor.errors import ConfigError
from auditor.models import SnmpPort, SnmpResult, SnmpStatus

Oid = tuple[int, ...]


_AUTH = {
    "MD5": usmHMACMD5AuthProtocol, "SHA": usmHMACSHAAuthProtocol,
    "SHA224": usmHMAC128SHA224AuthProtocol, "SHA256": usmHMAC192SHA256AuthProtocol,
    "SHA384": usmHMAC256SHA384AuthProtocol, "SHA512": usmHMAC384SHA512AuthProtocol,
}
# AES-192/256 have two incompatible key extensions: Net-SNMP (and most Linux-based switch OSes)
# use Blumenthal's draft, Cisco uses Reeder's. "AES192C"/"AES256C" pick Cisco's.
_PRIV = {
    "DES": usmDESPrivProtocol, "3DES": usm3DESEDEPrivProtocol,
    "AES": usmAesCfb128Protocol, "AES128": usmAesCfb128Protocol,
    "AES192": usmAesBlumenthalCfb192Protocol, "AES256": usmAesBlumenthalCfb256Protocol,
    "AES192C": usmAesCfb192Protocol, "AES256C": usmAesCfb256Protocol,
}

_OPER = {1: "up", 2: "down", 3: "testing", 4: "unknown", 5: "dormant", 6: "notPresent",
         7: "lowerLayerDown"}
_ADMIN = {1: "up", 2: "down", 3: "testing"}
_PHYS = {0: "noStateChange", 1: "sleep", 2: "polling", 3: "disabled",
         4: "portConfigurationTraining", 5: "linkUp", 6: "linkErrorRecovery", 7: "phyTest",
         100: "notAvailable"}

_IF = (1, 3, 6, 1, 2, 1, 2, 2, 1)            # IF-MIB ifEntry
_IFX = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1)       # IF-MIB ifXEntry
_VPI = (1, 3, 6, 1, 4, 1, 33049, 3, 1, 1, 1)  # MELLANOX-IF-VPI-MIB mellanoxIfVPIEntry
_SYS_UPTIME = (1, 3, 6, 1, 2, 1, 1, 3, 0)

# Walked together, one repeater per column in each GETBULK.
_COLUMNS: dict[str, Oid] = {
    "ifName": (*_IFX, 1),
    "ifAdminStatus": (*_IF, 7),
    "ifOperStatus": (*_IF, 8),
    "ifLastChange": (*_IF, 9),
    "ifInErrors": (*_IF, 14),
    "ifOutErrors": (*_IF, 20),
    "ifHCInOctets": (*_IFX, 6),
    "ifHCOutOctets": (*_IFX, 10),
    # Onyx only; indexed by mellanoxIfVPIIndex, which the MIB does not tie to ifIndex in
    # writing. Joined on ifIndex here: check against a real switch before trusting it.
    "vpiPhysState": (*_VPI, 2),
    "vpiSymbolErrors": (*_VPI, 6),
}
_IF_DESCR = (*_IF, 2)

# ~250 varbinds keep a response near 8 KB: big enough for few round trips, small enough for
# agents with modest PDU buffers. An agent may always return fewer repetitions than asked.
_VARBINDS_PER_REQUEST = 250
_MAX_REPETITIONS = 50
_MAX_REQUESTS = 2000  # a 4,000-port chassis needs ~170; more means the agent is looping

_NUMBER = (Integer32, Counter32, Counter64, Gauge32, TimeTicks, Unsigned32)
_AUTH_REPORTS = (errind.WrongDigest, errind.DecryptionError, errind.UnknownUserName,
                 errind.UnknownSecurityName, errind.AuthenticationFailure,
                 errind.AuthenticationError, errind.UnsupportedSecurityLevel)
_NO_ACCESS = (6, 16)  # errorStatus noAccess, authorizationError
_TOO_BIG = 1


@dataclass(frozen=True, slots=True)
class SnmpTarget:
    """One agent: the switch's name and address, and how to ask it (its `[[switches]].snmp`
    table). Secrets are `env:VAR` references, read only while polling."""

    name: str
    host: str
    snmp: SnmpSettings

    def __post_init__(self) -> None:
        where = f"snmp target {self.name!r}"
        s = self.snmp
        # v1 has no GETBULK and no Counter64
        if s.version not in ("2c", "3"):
            raise ConfigError(f"{where}: version must be \"2c\" or \"3\", not {s.version!r}")
        if s.version == "2c" and s.community is None:
            raise ConfigError(f"{where}: SNMP v2c needs a community (env:VARIABLE)")
        if s.version == "3":
            if not s.user:
                raise ConfigError(f"{where}: SNMP v3 needs a user")
            if s.priv_key is not None and s.auth_key is None:
                raise ConfigError(f"{where}: a v3 priv_key needs an auth_key too")
            if s.auth_proto.upper() not in _AUTH:
                raise ConfigError(f"{where}: auth_proto {s.auth_proto!r} is not one of "
                                  f"{', '.join(_AUTH)}")
            if s.priv_proto.upper() not in _PRIV:
                raise ConfigError(f"{where}: priv_proto {s.priv_proto!r} is not one of "
                                  f"{', '.join(_PRIV)}")
        if not 0 < s.port < 65536:
            raise ConfigError(f"{where}: port {s.port} is out of range")
        if s.timeout_s <= 0 or s.retries < 0:
            raise ConfigError(f"{where}: timeout_s must be > 0 and retries >= 0")


class _PollError(Exception):
    def __init__(self, status: SnmpStatus, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class _TooBigError(Exception):
    pass


class _EnginePool:
    """SnmpEngines shared between targets.

    Building an engine costs ~70 ms of CPU (it loads its own MIB tree), so 500 targets must not
    get one each. v2c targets share one: pysnmp keeps each community as a separate entry inside
    it. v3 targets share one only with the same user and the same key references: pysnmp keys
    its USM user table by user name alone and re-keys the user when another target brings other
    keys, which would break the requests in flight.
    """

    def __init__(self) -> None:
        self._engines: dict[tuple[str, ...], Any] = {}

    def get(self, t: SnmpSettings) -> Any:
        if t.version == "2c":
            key: tuple[str, ...] = ("v2c",)
        else:
            key = ("usm", t.user or "", t.auth_key.ref if t.auth_key else "",
                   t.priv_key.ref if t.priv_key else "", t.auth_proto.upper(),
                   t.priv_proto.upper())
        if key not in self._engines:
            self._engines[key] = SnmpEngine()
        return self._engines[key]

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close_dispatcher()
        self._engines.clear()


def _auth_data(t: SnmpSettings) -> Any:
    if t.community is not None and t.version == "2c":
        # S508: NVOS switches speak only v1/v2c, so v2c has to stay.
        return CommunityData(t.community.value(), mpModel=1)  # noqa: S508
    auth = t.auth_key.value() if t.auth_key else None
    priv = t.priv_key.value() if t.priv_key else None
    return UsmUserData(
        t.user, authKey=auth, privKey=priv,
        authProtocol=_AUTH[t.auth_proto.upper()] if auth else None,
        privProtocol=_PRIV[t.priv_proto.upper()] if priv else None,
    )


def _secret_values(t: SnmpSettings) -> list[str]:
    values = []
    for secret in (t.community, t.auth_key, t.priv_key):
        if secret is None:
            continue
        try:
            value = secret.value()
        except ConfigError:
            continue
        if value:
            values.append(value)
    return sorted(values, key=len, reverse=True)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    # Defence in depth: pysnmp masks keys in its own reprs, but an exception text from a lower
    # layer could still carry one, and details end up in logs and the database.
    for value in secrets:
        text = text.replace(value, "***")
    return text


def _describe_error(t: SnmpSettings, err_ind: Any) -> _PollError:
    if isinstance(err_ind, errind.RequestTimedOut):
        tries = t.retries + 1
        hint = " (on v2c a wrong community looks the same)" if t.version == "2c" else ""
        plural = "try" if tries == 1 else "tries"
        return _PollError("timeout", f"no answer in {t.timeout_s:g} s x {tries} {plural}{hint}")
    if isinstance(err_ind, _AUTH_REPORTS):
        return _PollError("auth_failed", f"SNMPv3 agent refused the credentials: {err_ind}")
    if isinstance(err_ind, errind.DeserializationError):
        return _PollError("parse_failed", f"undecodable answer: {err_ind}")
    return _PollError("error", str(err_ind))


class _Session:
    def __init__(self, target: SnmpTarget, engine: Any, auth: Any, transport: Any) -> None:
        self.t = target
        self.engine = engine
        self.auth = auth
        self.transport = transport
        self.requests = 0

    @classmethod
    async def open(cls, target: SnmpTarget, pool: _EnginePool) -> _Session:
        s = target.snmp
        auth = _auth_data(s)
        try:
            transport = await UdpTransportTarget.create(
                (target.host, s.port), timeout=s.timeout_s, retries=s.retries)
        except Exception as exc:  # noqa: BLE001 - pysnmp wraps resolver errors in its own type
            reason = str(exc).split(" caused by ")[0]
            raise _PollError("error", f"cannot resolve {target.host}: {reason}") from None
        return cls(target, pool.get(s), auth, transport)

    def _check(self, err_ind: Any, err_stat: Any, what: str) -> None:
        if err_ind:
            raise _describe_error(self.t.snmp, err_ind)
        status = int(err_stat or 0)
        if status == _TOO_BIG:
            raise _TooBigError
        if status in _NO_ACCESS:
            raise _PollError("auth_failed", f"{what}: agent says {err_stat.prettyPrint()}")
        if status:
            raise _PollError("error", f"{what}: agent says {err_stat.prettyPrint()}")

    async def get_uptime(self) -> int | None:
        self.requests += 1
        err_ind, err_stat, _, vbs = await get_cmd(
            self.engine, self.auth, self.transport, ContextData(),
            ObjectType(ObjectIdentity(_SYS_UPTIME)), lookupMib=False)
        self._check(err_ind, err_stat, "GET sysUpTime")
        value = vbs[0][1]
        if isinstance(value, NoSuchObject | NoSuchInstance):
            return None  # outside this user's view: flaps lose their time estimate, nothing else
        return _number(value, "sysUpTime", 0)

    async def walk(self, columns: dict[str, Oid]) -> dict[str, dict[int, Any]]:
        """Walk several table columns at once; returns column -> ifIndex -> raw value."""
        values: dict[str, dict[int, Any]] = {name: {} for name in columns}
        cursor = dict(columns)
        active = list(columns)
        max_rep = _MAX_REPETITIONS
        while active:
            if self.requests >= _MAX_REQUESTS:
                raise _PollError("parse_failed",
                                 f"walk did not end after {_MAX_REQUESTS} requests: the agent "
                                 "is looping")
            reps = max(1, min(max_rep, _VARBINDS_PER_REQUEST // len(active)))
            self.requests += 1
            err_ind, err_stat, _, vbs = await bulk_cmd(
                self.engine, self.auth, self.transport, ContextData(), 0, reps,
                *(ObjectType(ObjectIdentity(cursor[name])) for name in active), lookupMib=False)
            try:
                self._check(err_ind, err_stat, "GETBULK")
            except _TooBigError:
                if reps == 1:
                    raise _PollError("error", "agent says tooBig even for one row") from None
                max_rep = reps // 2
                continue
            if not vbs:
                raise _PollError("parse_failed", "empty GETBULK response")
            ended: set[str] = set()
            # Responses are row-major: varbind k answers column active[k % width].
            width = len(active)
            for k, (name_obj, value) in enumerate(vbs):
                name = active[k % width]
                if name in ended:
                    continue
                oid = tuple(name_obj)
                base = columns[name]
                if (isinstance(value, EndOfMibView | NoSuchObject | NoSuchInstance)
                        or oid[: len(base)] != base):
                    ended.add(name)
                    continue
                if oid <= cursor[name]:
                    raise _PollError("parse_failed",
                                     f"{name}: agent answered {_dotted(oid)} after "
                                     f"{_dotted(cursor[name])} (OIDs not increasing)")
                index = oid[len(base):]
                if len(index) != 1:
                    raise _PollError("parse_failed",
                                     f"{name}: index {_dotted(index)} is not one ifIndex")
                values[name][index[0]] = value
                cursor[name] = oid
            active = [n for n in active if n not in ended]
        return values


def _dotted(oid: Oid) -> str:
    return ".".join(map(str, oid))


def _number(value: Any, column: str, index: int) -> int:
    if not isinstance(value, _NUMBER):
        raise _PollError("parse_failed",
                         f"{column}.{index}: expected a number, got {type(value).__name__}")
    return int(value)


def _text(value: Any, column: str, index: int) -> str:
    if not isinstance(value, OctetString):
        raise _PollError("parse_failed",
                         f"{column}.{index}: expected a string, got {type(value).__name__}")
    return bytes(value.asOctets()).decode("utf-8", errors="replace").strip("\x00 ")


def _ports(values: dict[str, dict[int, Any]], descr: dict[int, Any]) -> list[SnmpPort]:
    def num(column: str, i: int) -> int | None:
        v = values[column].get(i)
        return None if v is None else _number(v, column, i)

    ports = []
    for i in sorted(values["ifOperStatus"]):
        name = _text(values["ifName"][i], "ifName", i) if i in values["ifName"] else ""
        if not name and i in descr:
            name = _text(descr[i], "ifDescr", i)
        oper = num("ifOperStatus", i)
        admin = num("ifAdminStatus", i)
        phys = num("vpiPhysState", i)
        ports.append(SnmpPort(
            if_index=i,
            if_name=name or f"ifIndex.{i}",
            oper_status=_OPER.get(oper, f"status{oper}") if oper is not None else "unknown",
            admin_status=None if admin is None else _ADMIN.get(admin, f"status{admin}"),
            last_change_ticks=num("ifLastChange", i),
            in_errors=num("ifInErrors", i),
            out_errors=num("ifOutErrors", i),
            hc_in_octets=num("ifHCInOctets", i),
            hc_out_octets=num("ifHCOutOctets", i),
            symbol_errors=num("vpiSymbolErrors", i),
            phys_state=None if phys is None else _PHYS.get(phys, f"state{phys}"),
        ))
    return ports


async def _poll(target: SnmpTarget, pool: _EnginePool) -> SnmpResult:
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    s = target.snmp
    secrets = _secret_values(s)
    status: SnmpStatus
    try:
        session = await _Session.open(target, pool)
        uptime = await session.get_uptime()
        polled_at = datetime.now(UTC)
        values = await session.walk(_COLUMNS)
        if not values["ifOperStatus"]:
            raise _PollError("error", "no ifTable rows: IF-MIB is not implemented or not in "
                                      "the view of this community/user")
        descr: dict[int, Any] = {}
        if any(i not in values["ifName"] for i in values["ifOperStatus"]):
            descr = (await session.walk({"ifDescr": _IF_DESCR}))["ifDescr"]
        ports = _ports(values, descr)
        detail = f"{len(ports)} ports in {session.requests} requests, " \
                 f"{time.perf_counter() - t0:.2f} s"
        if not values["vpiPhysState"]:
            detail += "; no MELLANOX-IF-VPI-MIB (no symbol errors, no physical state)"
        return SnmpResult(target.name, "ok", _scrub(detail, secrets), polled_at, uptime, ports)
    except _PollError as exc:
        status, detail = exc.status, exc.detail
        if status == "timeout" and s.version == "3" and s.priv_key is not None \
                and await _answers_without_privacy(target):
            status = "auth_failed"
            detail = ("no answer with privacy, but the agent answers the same user and auth "
                      "key without it: the priv key (or priv_proto) is wrong")
    except ConfigError as exc:
        status, detail = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - one agent's surprise must not end everyone's sweep
        # pyasn1 (BER decoding) raises its own types when an agent sends garbage.
        status = "parse_failed" if type(exc).__module__.startswith("pyasn1") else "error"
        detail = f"{type(exc).__name__}: {exc}"
    where = f"{target.host}:{s.port}"
    return SnmpResult(target.name, status, _scrub(f"{where}: {detail}", secrets), started, None)


async def _answers_without_privacy(target: SnmpTarget) -> bool:
    """After a v3 authPriv timeout: does the agent answer authNoPriv?

    Net-SNMP (and others) silently drop a message they cannot decrypt, so a wrong priv key looks
    like a dead agent. An authenticated answer of any kind to the same request without privacy
    proves the agent is up and the auth key right. It gets its own engine: the shared one holds
    this user with privacy, and re-keying it would disturb requests in flight.
    """
    s = target.snmp
    if s.auth_key is None:  # a priv key without one is refused at construction
        return False
    engine = SnmpEngine()
    try:
        auth = UsmUserData(s.user, authKey=s.auth_key.value(),
                           authProtocol=_AUTH[s.auth_proto.upper()])
        transport = await UdpTransportTarget.create(
            (target.host, s.port), timeout=min(s.timeout_s, 1.0), retries=0)
        err_ind, _, _, _ = await get_cmd(engine, auth, transport, ContextData(),
                                         ObjectType(ObjectIdentity(_SYS_UPTIME)), lookupMib=False)
        return not err_ind or isinstance(err_ind, errind.UnsupportedSecurityLevel)
    except Exception:  # noqa: BLE001 - only a diagnosis: any failure leaves the timeout standing
        return False
    finally:
        engine.close_dispatcher()


async def poll_one(target: SnmpTarget) -> SnmpResult:
    """Poll one agent with an engine of its own (for many, `poll_many` shares engines)."""
    pool = _EnginePool()
    try:
        return await _poll(target, pool)
    finally:
        pool.close()


async def poll_many(targets: Sequence[SnmpTarget], concurrency: int = 32) -> list[SnmpResult]:
    """Poll all targets, at most `concurrency` at a time; results in input order."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = asyncio.Semaphore(concurrency)
    pool = _EnginePool()

    async def one(target: SnmpTarget) -> SnmpResult:
        async with gate:
            return await _poll(target, pool)

    try:
        return list(await asyncio.gather(*(one(t) for t in targets)))
    finally:
        pool.close()


def _poll_chunk(targets: list[SnmpTarget], concurrency: int) -> list[SnmpResult]:
    return asyncio.run(poll_many(targets, concurrency))


def poll(targets: list[SnmpTarget], concurrency: int = 32,
         processes: int = 1) -> list[SnmpResult]:
    """Poll all targets and block until done (not from inside a running event loop).

    The client, not the agents, is usually the limit: pysnmp spends ~0.2 ms of CPU decoding
    each varbind, ~0.14 s per 64-port switch, on one core. `processes` > 1 splits the targets
    over that many worker processes (each with `concurrency / processes` requests in flight).
    """
    if processes <= 1 or len(targets) < 2:
        return _poll_chunk(targets, concurrency)
    processes = min(processes, len(targets))
    chunks = [targets[k::processes] for k in range(processes)]
    per = max(1, concurrency // processes)
    # spawn, not fork: forking a process that may hold threads or a loop is not safe.
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as ex:
        parts = list(ex.map(_poll_chunk, chunks, [per] * processes))
    results: list[SnmpResult | None] = [None] * len(targets)
    for k, part in enumerate(parts):
        results[k::processes] = part
    return [r for r in results if r is not None]
