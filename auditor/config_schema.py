"""The schema of auditor.toml (pydantic v2), checked in full when the file is loaded.

Imported only by `auditor.config.load` when there is a file to check, so `auditor --help` and
commands run without a config never import pydantic. The schema says what each key may hold
(type, range, allowed words); the defaults are not here: they live once, in the dataclasses of
`auditor.config`, and a key left out of the file keeps its default there.

`check` returns the file's tables as plain dicts holding only the keys the file sets, or raises
one ConfigError with a line per mistake, each naming its key: `sweep.port: expected an
integer, got true`. Messages never repeat a string the file holds (it may be a secret).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from auditor.errors import AuditorError, ConfigError
from auditor.nccl import version_key
from auditor.timeparse import MAX_SPAN_DAYS, parse_span

# The SNMP protocols the poller knows (auditor/collect/snmp.py maps them onto pysnmp's; a test
# holds the two lists equal, so the config is checked without importing pysnmp).
SNMP_AUTH_PROTOCOLS = ("MD5", "SHA", "SHA224", "SHA256", "SHA384", "SHA512")
SNMP_PRIV_PROTOCOLS = ("DES", "3DES", "AES", "AES128", "AES192", "AES256", "AES192C", "AES256C")
SNMP_VERSIONS = ("2c", "3")
# The names the forwarding-table dump goes by (auditor/collect/commands.py allows the same).
LFTS_COMMANDS = ("dump_lfts", "dump_lfts.sh", "dump_fts")
# Link speeds `[ranking] ber_limits` / `ber_fec` may name, and the FEC opcodes NVIDIA's field
# table has rows for (auditor/analyse/ber.py; a test holds these equal to its tables, so the
# config is checked without importing analyse).
IB_SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")
FecOpcode = Literal[0, 2, 3, 7, 12, 13, 14]
FEC_OPCODES: tuple[int, ...] = get_args(FecOpcode)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


class KeyRuleError(ValueError):
    """A problem of one key inside the table being checked (cross-key rules)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _secret(value: str) -> str:
    if not value.startswith("env:") or len(value) <= 4:
        # Refuse inline secrets outright: config files end up in backups, tickets and git.
        raise ValueError("write secrets as env:VARIABLE, never inline")
    return value


def _env_name(name: str) -> str:
    if not ENV_NAME.fullmatch(name):
        # The names go into the command line on the management host.
        raise ValueError("is not an environment variable name (letters, digits and _, not "
                         "starting with a digit)")
    return name


def _pattern(value: str) -> str:
    try:
        groups = re.compile(value).groupindex
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    if "state" not in groups:
        raise ValueError("needs a named group (?P<state>...)")
    return value


def _zone(value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {value!r}") from None
    return value


def _span(value: str) -> str:
    try:
        parse_span(value)  # the reader `nightly.since` goes through later: one rule
    except AuditorError:
        raise ValueError(f"a span such as 24h or 7d, at most {MAX_SPAN_DAYS}d (100 years)") \
            from None
    return value


def _nccl_version(value: str) -> str:
    if value and version_key(value) is None:
        raise ValueError('expected a version such as "2.21.5"')
    return value


def _ib_speed(name: str) -> str:
    if name.upper() not in IB_SPEEDS:
        raise ValueError(f"is not an InfiniBand link speed ({', '.join(IB_SPEEDS)})")
    return name


def _replaced_by_ber(value: Any) -> None:
    raise ValueError("replaced by ber_limits: a symbol-BER limit per link speed, e.g. "
                     "ber_limits = { HDR = 1e-13 } (issue #14)")


def _one_of(names: tuple[str, ...]) -> AfterValidator:
    def check(value: str) -> str:
        if value.upper() not in names:
            raise ValueError(f"one of {', '.join(names)}")
        return value

    return AfterValidator(check)


Secret = Annotated[str, AfterValidator(_secret)]
Port = Annotated[int, Field(ge=1, le=65535)]
Positive = Annotated[float, Field(gt=0)]
# A length of history or a wait, bounded like every window (auditor.timeparse: 100 years), so
# that no setting makes a date computation leave the calendar.
Days = Annotated[float, Field(gt=0, le=MAX_SPAN_DAYS)]
Minutes = Annotated[float, Field(gt=0, le=MAX_SPAN_DAYS * 1440)]
# What one command may cost a collector (auditor/collect/bounded.py): a day at most, and at
# most 16 GiB (the bytes are held in memory).
Seconds = Annotated[float, Field(gt=0, le=86400)]
MiB = Annotated[float, Field(gt=0, le=16384)]
Count = Annotated[int, Field(ge=1)]
Name = Annotated[str, Field(min_length=1)]
Speed = Annotated[str, AfterValidator(_ib_speed)]


class _Table(BaseModel):
    # strict: no "22" for 22, no true for 1 (bool is an int in Python, not in TOML); an
    # integer is still a number where a number is expected.
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class StoreTable(_Table):
    db: str | None = None
    captures: str | None = None
    busy_timeout_s: Annotated[float, Field(ge=0)] | None = None


class TopologyTable(_Table):
    node_name_map: str | None = None


class FabricTable(_Table):
    adaptive_routing: bool | None = None


class SweepTable(_Table):
    host: str | None = None
    port: Port | None = None
    user: str | None = None
    key_file: str | None = None
    password: Secret | None = None
    known_hosts: str | None = None
    timeout_s: Seconds | None = None
    max_output_mb: MiB | None = None
    command_timeout_s: Seconds | None = None
    remote_dir: str | None = None
    env: dict[Annotated[str, AfterValidator(_env_name)], str] | None = None
    ibnetdiscover_args: list[str] | None = None
    iblinkinfo_args: list[str] | None = None
    ibqueryerrors_args: list[str] | None = None
    tool: Literal["infiniband-diags", "ibdiagnet"] | None = None
    ibdiagnet_args: list[str] | None = None
    sacct: bool | None = None
    sacct_since: str | None = None
    optics: bool | None = None
    lfts: bool | None = None
    lfts_command: Annotated[str, _one_of(LFTS_COMMANDS)] | None = None
    lfts_args: list[str] | None = None


class SwitchSnmpTable(_Table):
    version: Any = None  # "2c" or "3"; the integer 3 is taken for "3"
    port: Port | None = None
    community: Secret | None = None
    user: str | None = None
    auth_key: Secret | None = None
    priv_key: Secret | None = None
    auth_proto: Annotated[str, _one_of(SNMP_AUTH_PROTOCOLS)] | None = None
    priv_proto: Annotated[str, _one_of(SNMP_PRIV_PROTOCOLS)] | None = None
    timeout_s: Positive | None = None
    retries: Annotated[int, Field(ge=0)] | None = None

    @field_validator("version", mode="plain")
    @classmethod
    def _version(cls, value: Any) -> str | None:
        if value is None:
            return None
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if text not in SNMP_VERSIONS:
            got = f", got {_got(value)}" if not isinstance(value, str) else ""
            raise ValueError('SNMP version "2c" or "3" only (v1 has no GETBULK and no '
                             f"Counter64){got}")
        return str(text)

    @model_validator(mode="after")
    def _complete(self, info: ValidationInfo) -> SwitchSnmpTable:
        # The default version lives in auditor.config (passed in, so this module does not
        # import it back).
        version = self.version or dict(info.context or {})["snmp_version"]
        if version == "2c" and self.community is None:
            raise KeyRuleError("community", "required for SNMP v2c (env:VARIABLE)")
        if version == "3" and not self.user:
            raise KeyRuleError("user", "required for SNMP v3")
        if self.priv_key is not None and self.auth_key is None:
            raise KeyRuleError("auth_key", "required with priv_key (SNMP v3 authPriv)")
        return self


class SwitchSshTable(_Table):
    user: Name
    port: Port | None = None
    password: Secret | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    timeout_s: Seconds | None = None
    max_output_mb: MiB | None = None
    command_timeout_s: Seconds | None = None
    total_timeout_s: Seconds | None = None


class SwitchTable(_Table):
    name: Name
    host: Name
    snmp: SwitchSnmpTable | None = None
    ssh: SwitchSshTable | None = None
    os: Literal["onyx", "nvos"] | None = None


class SnmpTable(_Table):
    concurrency: Count | None = None


class LogsTable(_Table):
    year: Annotated[int, Field(ge=1970, le=9999)] | None = None
    tz: Annotated[str, AfterValidator(_zone)] | None = None
    patterns: list[Annotated[str, AfterValidator(_pattern)]] | None = None
    paths: list[str] | None = None


class HostsTable(_Table):
    names: list[str] | None = None
    user: str | None = None
    port: Port | None = None
    password: Secret | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    timeout_s: Seconds | None = None
    max_output_mb: MiB | None = None
    command_timeout_s: Seconds | None = None
    total_timeout_s: Seconds | None = None
    concurrency: Count | None = None
    kernel_log: Literal["dmesg", "journal", "none"] | None = None
    boots: Literal["journal", "last", "none"] | None = None
    sysfs_root: str | None = None


class NightlyTable(_Table):
    reports: str | None = None
    log_file: str | None = None
    since: Annotated[str, AfterValidator(_span)] | None = None
    keep_captures_days: Days | None = None
    keep_reports_days: Days | None = None
    verify_days: Days | None = None
    limit: Count | None = None


class RankingTable(_Table):
    before_minutes: Minutes | None = None
    after_minutes: Minutes | None = None
    gpus_per_node: Count | None = None
    ber_limits: dict[Speed, Annotated[float, Field(gt=0, lt=1)]] | None = None
    ber_fec: dict[Speed, FecOpcode] | None = None
    symbol_errors_per_hour: Annotated[Any, AfterValidator(_replaced_by_ber)] = None
    link_error_recovery_per_hour: Positive | None = None
    common_mode_min_ports: Count | None = None
    common_mode_fraction: Annotated[float, Field(gt=0, le=1)] | None = None
    host_event_fraction: Annotated[float, Field(gt=0, le=1)] | None = None
    port_rcv_errors_per_hour: Annotated[float, Field(gt=0)] | None = None
    weights: dict[str, Annotated[float, Field(ge=0, le=1000)]] | None = None
    host_event_min_rails: Annotated[int, Field(ge=2)] | None = None
    nccl_version: Annotated[str, AfterValidator(_nccl_version)] | None = None
    # A 5-bit field of the QP (IBTA 9.7.6.1.3); 0 = NCCL's default.
    nccl_ib_timeout: Annotated[int, Field(ge=0, le=31)] | None = None


class OpticsTable(_Table):
    history_days: Days | None = None
    min_days: Annotated[int, Field(ge=3)] | None = None  # a line through 2 points is no trend
    horizon_days: Days | None = None
    noise_ratio: Positive | None = None
    min_drift_db: Positive | None = None
    min_drift_c: Positive | None = None
    min_drift_v: Positive | None = None
    min_drift_bias_pct: Positive | None = None
    sibling_gap_db: Positive | None = None
    link_loss_db: Positive | None = None
    link_loss_rise_db: Positive | None = None
    cohort_min: Annotated[int, Field(ge=3)] | None = None
    cohort_z: Positive | None = None
    cohort_db: Positive | None = None
    cohort_c: Positive | None = None
    cohort_bias_pct: Positive | None = None
    bias_rise_pct: Positive | None = None
    flat_c: Positive | None = None
    flat_v: Positive | None = None
    strong: Annotated[float, Field(gt=0, le=1)] | None = None
class OutcomesTable(_Table):
    since: Annotated[str, AfterValidator(_span)] | None = None
    clean_days: Days | None = None
    learned_weights: bool | None = None
    prior_suspects: Annotated[float, Field(ge=0)] | None = None
    cohort_min_incidents: Count | None = None
    cohort_min_ratio: Annotated[float, Field(ge=1)] | None = None
    cohort_alpha: Annotated[float, Field(gt=0, lt=1)] | None = None


class ConfigFile(_Table):
    store: StoreTable | None = None
    topology: TopologyTable | None = None
    fabric: FabricTable | None = None
    sweep: SweepTable | None = None
    switches: list[SwitchTable] | None = None
    snmp: SnmpTable | None = None
    aliases: dict[str, str] | None = None  # name in logs = "name in the fabric"
    logs: LogsTable | None = None
    hosts: HostsTable | None = None
    nightly: NightlyTable | None = None
    ranking: RankingTable | None = None
    optics: OpticsTable | None = None
    outcomes: OutcomesTable | None = None


# -- messages -----------------------------------------------------------------------------------

_EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "string_type": "a string", "bool_type": "true or false", "bool_parsing": "true or false",
    "list_type": "a list", "dict_type": "a table", "model_type": "a table",
    "model_attributes_type": "a table",
}
_EXPECTED_AT = {"switches": "a list of [[switches]] tables", "switches[]": "a [[switches]] table"}
_BOUNDS = {"greater_than": "greater than {gt}", "greater_than_equal": "at least {ge}",
           "less_than": "less than {lt}", "less_than_equal": "at most {le}"}


def _got(value: Any) -> str:
    """The kind of a wrong value, or the value itself when it cannot be a secret."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, dt.date | dt.time):
        return "a date/time"
    return type(value).__name__


def _key(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _message(err: Any) -> str:
    loc: tuple[int | str, ...] = tuple(err["loc"])
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    problem = ctx.get("error")
    if isinstance(problem, KeyRuleError):
        return f"{_key((*loc, problem.key))}: {problem}"
    key = _key(loc)
    if loc[-1:] == ("[key]",) and len(loc) >= 2:  # a table's key itself (a [sweep.env] name)
        return f"{_key(loc[:-2])}: {str(loc[-2])!r} {problem or err.get('msg', kind)}"
    if kind in ("value_error", "assertion_error") and problem is not None:
        return f"{key}: {problem}"
    if kind == "missing":
        return f"{key}: required"
    if kind == "extra_forbidden":
        return f"{key}: unknown setting"
    if kind == "string_too_short":
        return f"{key}: must not be empty"
    if kind == "literal_error":
        got = "" if isinstance(value, str) else f", got {_got(value)}"
        return f"{key}: one of {ctx.get('expected', '')}{got}"
    if kind in _BOUNDS:
        bound = _BOUNDS[kind].format(**{k: _number(v) for k, v in ctx.items()})
        return f"{key}: must be {bound}, got {_got(value)}"
    generic = re.sub(r"\[\d+\]$", "[]", key)
    expected = _EXPECTED_AT.get(key) or _EXPECTED_AT.get(generic) or _EXPECTED.get(kind)
    if expected:
        return f"{key}: expected {expected}, got {_got(value)}"
    return f"{key}: {err.get('msg', kind)}"  # a rule without a message of ours


def check(data: dict[str, Any], *, snmp_version: str) -> dict[str, Any]:
    """The file's tables with only the keys it sets (values checked), or ConfigError.
    `snmp_version`: the version a switch's `snmp` table gets when it names none."""
    try:
        model = ConfigFile.model_validate(data, context={"snmp_version": snmp_version})
    except ValidationError as exc:
        raise ConfigError(*(_message(e) for e in exc.errors())) from None
    checked: dict[str, Any] = model.model_dump(exclude_unset=True)
    return checked
