"""Settings: flag > AUDITOR_* environment > auditor.toml > default. Loaded once, passed along.

Secrets are never written in the file: a secret setting holds `env:VARIABLE`, read when used.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from auditor.errors import ConfigError
from auditor.nccl import version_key

DEFAULT_DB = "auditor.duckdb"


@dataclass(frozen=True, slots=True)
class Secret:
    """A reference to a secret (`env:NAME`); its value never appears in repr or messages."""

    ref: str

    def value(self) -> str:
        name = self.ref.removeprefix("env:")
        try:
            return os.environ[name]
        except KeyError:
            raise ConfigError(
                f"secret {self.ref}: environment variable {name} is not set"
            ) from None

    def __repr__(self) -> str:
        return f"Secret({self.ref!r})"


@dataclass(frozen=True, slots=True)
class SweepSettings:
    host: str | None = None  # management host for SSH; None runs the tools locally
    port: int = 22
    user: str | None = None
    key_file: Path | None = None
    password: Secret | None = None
    known_hosts: Path | None = None
    timeout_s: float = 300.0
    remote_dir: str | None = None  # working directory for the tools on the management host
    env: dict[str, str] = field(default_factory=dict)
    ibnetdiscover_args: tuple[str, ...] = ()
    iblinkinfo_args: tuple[str, ...] = ()
    ibqueryerrors_args: tuple[str, ...] = ()
    sacct: bool = False  # also read Slurm accounting (sacct -P) in the sweep
    sacct_since: str = "now-1days"


@dataclass(frozen=True, slots=True)
class SnmpSettings:
    version: str = "2c"
    port: int = 161
    community: Secret | None = None
    user: str | None = None
    auth_key: Secret | None = None
    priv_key: Secret | None = None
    auth_proto: str = "SHA"
    priv_proto: str = "AES"
    timeout_s: float = 2.0
    retries: int = 1


@dataclass(frozen=True, slots=True)
class SshSettings:
    user: str
    port: int = 22
    password: Secret | None = None
    key_file: Path | None = None
    known_hosts: Path | None = None
    timeout_s: float = 30.0


@dataclass(frozen=True, slots=True)
class SwitchSettings:
    """One switch of `[[switches]]`: its name in the fabric, address, and how to reach it."""

    name: str
    host: str
    snmp: SnmpSettings | None = None
    ssh: SshSettings | None = None


@dataclass(frozen=True, slots=True)
class HostSettings:
    """`[hosts]`: compute nodes read over SSH for the HCA end of their links."""

    names: tuple[str, ...] = ()
    user: str | None = None
    port: int = 22
    password: Secret | None = None
    key_file: Path | None = None
    known_hosts: Path | None = None
    timeout_s: float = 30.0
    concurrency: int = 16
    kernel_log: str = "dmesg"  # "dmesg" (dmesg -T) or "journal" (journalctl -k) or "none"
    sysfs_root: str = "/sys/class/infiniband"


@dataclass(frozen=True, slots=True)
class NightlySettings:
    """`[nightly]`: the cron run."""

    reports: Path | None = None  # dated report folders go here (default: reports/ beside the DB)
    log_file: Path | None = None  # default: auditor-nightly.log beside the DB
    since: str = "24h"
    keep_captures_days: float = 14.0
    keep_reports_days: float = 90.0
    verify_days: float = 7.0  # clean days after a swap before it counts as verified
    limit: int = 50  # suspects in the report


@dataclass(frozen=True, slots=True)
class RankingSettings:
    """`[ranking]`: the windows and thresholds of the correlation (defaults in correlate.py)."""

    before_minutes: float = 15.0  # a flap this long before a job died can have killed it
    after_minutes: float = 1.0  # clock skew between switches and hosts
    gpus_per_node: int = 8  # when the scheduler does not say
    symbol_errors_per_hour: float = 120.0
    link_error_recovery_per_hour: float = 300.0
    common_mode_min_ports: int = 3
    common_mode_fraction: float = 0.5
    nccl_version: str = ""  # the site's NCCL, for jobs whose logs do not say (e.g. "2.21.5")
    nccl_ib_timeout: int = 0  # the site's NCCL_IB_TIMEOUT when jobs set it; 0 = NCCL's default


@dataclass(frozen=True, slots=True)
class LogSettings:
    year: int | None = None
    tz: str = "UTC"
    patterns: tuple[str, ...] = ()  # site-specific regexes with named groups (state, host, port)
    paths: tuple[str, ...] = ()  # log files (globs) a sweep ingests: switch syslog, UFM, opensm


@dataclass(frozen=True, slots=True)
class Settings:
    db: Path = Path(DEFAULT_DB)
    config_path: Path | None = None
    captures: Path | None = None  # default: captures/ beside the DB
    node_name_map: Path | None = None
    sweep: SweepSettings = field(default_factory=SweepSettings)
    switches: tuple[SwitchSettings, ...] = ()
    snmp_concurrency: int = 32
    aliases: dict[str, str] = field(default_factory=dict)  # name in logs -> name in the fabric
    logs: LogSettings = field(default_factory=LogSettings)
    hosts: HostSettings = field(default_factory=HostSettings)
    nightly: NightlySettings = field(default_factory=NightlySettings)
    ranking: RankingSettings = field(default_factory=RankingSettings)

    @property
    def captures_dir(self) -> Path:
        return self.captures or self.db.resolve().parent / "captures"

    @property
    def reports_dir(self) -> Path:
        return self.nightly.reports or self.db.resolve().parent / "reports"

    @property
    def log_file(self) -> Path:
        return self.nightly.log_file or self.db.resolve().parent / "auditor-nightly.log"


def _get(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = table.get(key)
    if value is not None and not isinstance(value, kind):
        raise ConfigError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, "
                          f"got {type(value).__name__}")
    return value


def _secret(table: dict[str, Any], key: str, where: str) -> Secret | None:
    value = _get(table, key, str, where)
    if value is None:
        return None
    if not value.startswith("env:") or len(value) <= 4:
        # Refuse inline secrets outright: config files end up in backups, tickets and git.
        raise ConfigError(f"{where}.{key}: write secrets as env:VARIABLE, never inline")
    return Secret(value)


def _path(value: str | None, base: Path) -> Path | None:
    if value is None:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else base / p


def _args(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = _get(table, key, list, where) or []
    if not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}.{key}: expected a list of strings")
    return tuple(value)


_KNOWN = {
    "": {"store", "topology", "sweep", "switches", "snmp", "aliases", "logs", "hosts",
         "nightly", "ranking"},
    "nightly": {"reports", "log_file", "since", "keep_captures_days", "keep_reports_days",
                "verify_days", "limit"},
    "hosts": {"names", "user", "port", "password", "key_file", "known_hosts", "timeout_s",
              "concurrency", "kernel_log", "sysfs_root"},
    "snmp": {"concurrency"},
    "logs": {"year", "tz", "patterns", "paths"},
    "ranking": {"before_minutes", "after_minutes", "gpus_per_node", "symbol_errors_per_hour",
                "link_error_recovery_per_hour", "common_mode_min_ports", "common_mode_fraction",
                "nccl_version", "nccl_ib_timeout"},
    "store": {"db", "captures"},
    "topology": {"node_name_map"},
    "sweep": {"host", "port", "user", "key_file", "password", "known_hosts", "timeout_s", "env",
              "remote_dir", "sacct", "sacct_since",
              "ibnetdiscover_args", "iblinkinfo_args", "ibqueryerrors_args"},
}


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def load(config_path: Path | None, db: Path | None) -> Settings:
    """Read the config file (if any) and apply AUDITOR_DB and the --db flag over it."""
    data: dict[str, Any] = {}
    base = Path.cwd()
    if config_path is not None:
        try:
            data = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{config_path}: cannot read config: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{config_path}: {exc}") from exc
        base = config_path.resolve().parent
    for section, keys in _KNOWN.items():
        if section in ("switches", "aliases"):
            continue
        table = data if not section else data.get(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{section}: expected a table")
        for key in table:
            if key not in keys and not (section == "" and key in _KNOWN):
                raise ConfigError(f"{section + '.' if section else ''}{key}: unknown setting")
    store = data.get("store", {})
    topo = data.get("topology", {})
    sw = data.get("sweep", {})
    env = _get(sw, "env", dict, "sweep") or {}
    for key in env:
        if not _ENV_NAME.fullmatch(key):
            # The names go into the command line on the management host.
            raise ConfigError(f"sweep.env: {key!r} is not an environment variable name "
                              "(letters, digits and _, not starting with a digit)")
    if not all(isinstance(v, str) for v in env.values()):
        raise ConfigError("sweep.env: values must be strings")
    sweep = SweepSettings(
        host=_get(sw, "host", str, "sweep"),
        port=_get(sw, "port", int, "sweep") or 22,
        user=_get(sw, "user", str, "sweep"),
        key_file=_path(_get(sw, "key_file", str, "sweep"), base),
        password=_secret(sw, "password", "sweep"),
        known_hosts=_path(_get(sw, "known_hosts", str, "sweep"), base),
        timeout_s=float(_get(sw, "timeout_s", (int, float), "sweep") or 300.0),
        remote_dir=_get(sw, "remote_dir", str, "sweep"),
        env=dict(env),
        ibnetdiscover_args=_args(sw, "ibnetdiscover_args", "sweep"),
        iblinkinfo_args=_args(sw, "iblinkinfo_args", "sweep"),
        ibqueryerrors_args=_args(sw, "ibqueryerrors_args", "sweep"),
        sacct=bool(_get(sw, "sacct", bool, "sweep")),
        sacct_since=_get(sw, "sacct_since", str, "sweep") or "now-1days",
    )
    env_db = os.environ.get("AUDITOR_DB")
    chosen_db = db or (Path(env_db) if env_db else None) \
        or _path(_get(store, "db", str, "store"), base) or Path(DEFAULT_DB)
    aliases = data.get("aliases", {})
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise ConfigError("aliases: expected a table of name = \"fabric name\"")
    logs = data.get("logs", {})
    patterns = _args(logs, "patterns", "logs")
    for i, pattern in enumerate(patterns):
        try:
            if "state" not in re.compile(pattern).groupindex:
                raise ConfigError(f"logs.patterns[{i}]: needs a named group (?P<state>...)")
        except re.error as exc:
            raise ConfigError(f"logs.patterns[{i}]: not a regular expression: {exc}") from None
    tz = _get(logs, "tz", str, "logs") or "UTC"
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"logs.tz: unknown time zone {tz!r}") from None
    snmp = data.get("snmp", {})
    hosts = data.get("hosts", {})
    kernel_log = _get(hosts, "kernel_log", str, "hosts") or "dmesg"
    if kernel_log not in ("dmesg", "journal", "none"):
        raise ConfigError("hosts.kernel_log: use dmesg, journal or none")
    host_settings = HostSettings(
        names=_args(hosts, "names", "hosts"), user=_get(hosts, "user", str, "hosts"),
        port=_get(hosts, "port", int, "hosts") or 22, password=_secret(hosts, "password", "hosts"),
        key_file=_path(_get(hosts, "key_file", str, "hosts"), base),
        known_hosts=_path(_get(hosts, "known_hosts", str, "hosts"), base),
        timeout_s=float(_get(hosts, "timeout_s", (int, float), "hosts") or 30.0),
        concurrency=_get(hosts, "concurrency", int, "hosts") or 16, kernel_log=kernel_log,
        sysfs_root=_get(hosts, "sysfs_root", str, "hosts") or "/sys/class/infiniband",
    )
    nightly = data.get("nightly", {})

    def number(key: str, default: float) -> float:
        value = _get(nightly, key, (int, float), "nightly")
        if value is not None and value <= 0:
            raise ConfigError(f"nightly.{key}: must be greater than 0")
        return float(value) if value is not None else default

    since = _get(nightly, "since", str, "nightly") or "24h"
    if not re.match(r"^\s*\d+(\.\d+)?\s*[smhdw]\s*$", since):
        raise ConfigError("nightly.since: a span such as 24h or 7d")
    night = NightlySettings(
        reports=_path(_get(nightly, "reports", str, "nightly"), base),
        log_file=_path(_get(nightly, "log_file", str, "nightly"), base), since=since,
        keep_captures_days=number("keep_captures_days", 14.0),
        keep_reports_days=number("keep_reports_days", 90.0),
        verify_days=number("verify_days", 7.0), limit=int(number("limit", 50)),
    )
    return Settings(
        nightly=night,
        db=chosen_db,
        config_path=config_path,
        captures=_path(_get(store, "captures", str, "store"), base),
        node_name_map=_path(_get(topo, "node_name_map", str, "topology"), base),
        sweep=sweep,
        switches=_switches(data.get("switches", []), base),
        snmp_concurrency=_get(snmp, "concurrency", int, "snmp") or 32,
        aliases=dict(aliases),
        logs=LogSettings(_get(logs, "year", int, "logs"), tz, patterns,
                         tuple(str(_path(x, base)) for x in _args(logs, "paths", "logs"))),
        ranking=_ranking(data.get("ranking", {})),
        hosts=host_settings,
    )


def _ranking(table: dict[str, Any]) -> RankingSettings:
    defaults = RankingSettings()
    values: dict[str, Any] = {}
    for key in RankingSettings.__dataclass_fields__:
        if key == "nccl_version":
            version = _get(table, key, str, "ranking")
            if version is not None and version and version_key(version) is None:
                raise ConfigError("ranking.nccl_version: expected a version such as \"2.21.5\"")
            if version is not None:
                values[key] = version
            continue
        kind: type | tuple[type, ...] = int if key in (
            "gpus_per_node", "common_mode_min_ports", "nccl_ib_timeout") else (int, float)
        value = _get(table, key, kind, "ranking")
        if value is None:
            continue
        if key == "nccl_ib_timeout":
            if not 0 <= value <= 31:  # a 5-bit field of the QP (IBTA 9.7.6.1.3)
                raise ConfigError("ranking.nccl_ib_timeout: out of range (0-31)")
        elif value <= 0 or (key == "common_mode_fraction" and value > 1):
            raise ConfigError(f"ranking.{key}: out of range")
        values[key] = value
    return RankingSettings(**{k: values.get(k, getattr(defaults, k))
                              for k in RankingSettings.__dataclass_fields__})


_SWITCH_KEYS = {"name", "host", "snmp", "ssh"}
_SNMP_KEYS = {"version", "port", "community", "user", "auth_key", "priv_key", "auth_proto",
              "priv_proto", "timeout_s", "retries"}
_SSH_KEYS = {"user", "port", "password", "key_file", "known_hosts", "timeout_s"}


def _unknown(table: dict[str, Any], keys: set[str], where: str) -> None:
    for key in table:
        if key not in keys:
            raise ConfigError(f"{where}.{key}: unknown setting")


def _switches(items: Any, base: Path) -> tuple[SwitchSettings, ...]:
    if not isinstance(items, list):
        raise ConfigError("switches: expected [[switches]] tables")
    out = []
    for i, item in enumerate(items):
        where = f"switches[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: expected a table")
        _unknown(item, _SWITCH_KEYS, where)
        name, host = _get(item, "name", str, where), _get(item, "host", str, where)
        if not name or not host:
            raise ConfigError(f"{where}: needs name and host")
        snmp = ssh = None
        if (s := _get(item, "snmp", dict, where)) is not None:
            w = f"{where}.snmp"
            _unknown(s, _SNMP_KEYS, w)
            version = str(_get(s, "version", (str, int), w) or "2c")
            snmp = SnmpSettings(
                version=version, port=_get(s, "port", int, w) or 161,
                community=_secret(s, "community", w), user=_get(s, "user", str, w),
                auth_key=_secret(s, "auth_key", w), priv_key=_secret(s, "priv_key", w),
                auth_proto=_get(s, "auth_proto", str, w) or "SHA",
                priv_proto=_get(s, "priv_proto", str, w) or "AES",
                timeout_s=float(_get(s, "timeout_s", (int, float), w) or 2.0),
                retries=_get(s, "retries", int, w) if "retries" in s else 1,
            )
        if (h := _get(item, "ssh", dict, where)) is not None:
            w = f"{where}.ssh"
            _unknown(h, _SSH_KEYS, w)
            user = _get(h, "user", str, w)
            if not user:
                raise ConfigError(f"{w}.user: required")
            ssh = SshSettings(
                user=user, port=_get(h, "port", int, w) or 22,
                password=_secret(h, "password", w),
                key_file=_path(_get(h, "key_file", str, w), base),
                known_hosts=_path(_get(h, "known_hosts", str, w), base),
                timeout_s=float(_get(h, "timeout_s", (int, float), w) or 30.0),
            )
        out.append(SwitchSettings(name, host, snmp, ssh))
    return tuple(out)
