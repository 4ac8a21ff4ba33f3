"""Settings: flag > AUDITOR_* environment > auditor.toml > default. Loaded once, passed along.

Each default is written once, in the dataclasses below. The file is checked in full when it is
loaded, against the schema in `auditor.config_schema` (pydantic, imported only then): every
mistake is reported at once, one line each, naming its key.

Secrets are never written in the file: a secret setting holds `env:VARIABLE`, read when used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from auditor.errors import ConfigError

DEFAULT_DB = "auditor.duckdb"
# How long a command waits for a database another process holds before it gives up
# (`[store] busy_timeout_s`); 0 = do not wait.
DEFAULT_BUSY_TIMEOUT_S = 5.0
# The names of [sweep.env] go into the command line on the management host.


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
    """[sweep]: where the fabric tools run and what a sweep collects."""

    host: str | None = None  # management host for SSH; None runs the tools locally
    port: int = 22
    user: str | None = None
    key_file: Path | None = None
    password: Secret | None = None
    known_hosts: Path | None = None
    timeout_s: float = 300.0  # the longest a fabric tool may stay silent
    # Any one fabric tool's output (stdout and stderr, MiB) and time, start to finish
    # (auditor/collect/bounded.py). Measured with the benchmark generators on a 64 x 250 x 80
    # fat tree (20,000 hosts): ibnetdiscover 9 MB, `ibqueryerrors --data` 14 MB, a month of
    # sacct (500,000 jobs) 105 MB; a real ibsim fabric of 4,096 hosts gave 2.5 MB of
    # ibnetdiscover. 512 MiB holds the largest five times over, and an endless stream still
    # stops in seconds. An hour: ibqueryerrors on such a fabric asks ~100,000 PMA queries.
    max_output_mb: float = 512.0
    command_timeout_s: float = 3600.0
    remote_dir: str | None = None  # working directory for the tools on the management host
    env: dict[str, str] = field(default_factory=dict)
    ibnetdiscover_args: tuple[str, ...] = ()
    iblinkinfo_args: tuple[str, ...] = ()
    ibqueryerrors_args: tuple[str, ...] = ()
    # What reads the fabric: "infiniband-diags" (ibnetdiscover, iblinkinfo, ibqueryerrors) or
    # "ibdiagnet" (one run, its output folder ingested as kind ibdiagnet; issue #24).
    tool: str = "infiniband-diags"
    ibdiagnet_args: tuple[str, ...] = ()
    sacct: bool = False  # also read Slurm accounting (sacct -P) in the sweep
    sacct_since: str = "now-1days"
    # Also read transceiver diagnostics (DDM): per connected switch port over the Onyx CLI, and
    # mlxlink -m (or ethtool -m) on every [hosts] host. Off by default: one more command per
    # port, which a large fabric pays on every sweep.
    optics: bool = False
    # The switches' forwarding tables (issue #23), read with dump_lfts (upstream rdma-core and
    # Debian install it so; RHEL's rdma-core.spec as dump_lfts.sh) or dump_fts, its body: only
    # SubnGet(LinearForwardingTable) SMPs after a fabric scan (linux-rdma/rdma-core@v44.0
    # infiniband-diags/dump_fts.c:344, scripts/dump_lfts.sh.in:8).
    lfts: bool = True
    lfts_command: str = "dump_lfts"
    lfts_args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SnmpSettings:
    """[snmp] (and a switch's own override): how its agent is polled."""

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
    """How a switch (or host) is reached over SSH."""

    user: str
    port: int = 22
    password: Secret | None = None
    key_file: Path | None = None
    known_hosts: Path | None = None
    timeout_s: float = 30.0
    # Any one CLI command's answer (MiB) and time, start to finish: `show interfaces ib
    # status` of an 800-port director is ~100 kB, a port's transceiver block ~2 kB.
    max_output_mb: float = 16.0
    command_timeout_s: float = 120.0
    # The whole visit, login to logout (checked before each command): a director's 800
    # ports' transceivers and diagnostics take minutes, a switch that answers every command
    # just inside command_timeout_s would otherwise hold its worker 1,600 x 120 s.
    total_timeout_s: float = 1800.0


@dataclass(frozen=True, slots=True)
class SwitchSettings:
    """One switch of `[[switches]]`: its name in the fabric, address, and how to reach it."""

    name: str
    host: str
    snmp: SnmpSettings | None = None
    ssh: SshSettings | None = None
    # What the switch runs: "onyx" (MLNX-OS/Onyx: its CLI's port status and transceivers) or
    # "nvos" (Quantum-2 and later: its event table, `nv show system events -o json`; #24).
    os: str = "onyx"


@dataclass(frozen=True, slots=True)
class HostSettings:
    """`[hosts]`: compute nodes read over SSH for the HCA end of their links."""

    names: tuple[str, ...] = ()
    user: str | None = None
    port: int = 22
    password: Secret | None = None
    key_file: Path | None = None
    known_hosts: Path | None = None
    timeout_s: float = 30.0  # the longest a host may stay silent (connect, and each command)
    # Any one host command's output (MiB) and time, start to finish. The largest is the
    # kernel log: dmesg's ring buffer is at most 32 MiB (CONFIG_LOG_BUF_SHIFT=25), a day of
    # `journalctl -k` a few MB; `concurrency` hosts may each hold this much at once.
    max_output_mb: float = 64.0
    command_timeout_s: float = 120.0
    # The whole visit, connect to the last module read (checked before each command): a
    # host answering each of its ~70 commands just inside command_timeout_s would otherwise
    # hold a sweep worker over two hours.
    total_timeout_s: float = 600.0
    concurrency: int = 16
    kernel_log: str = "dmesg"  # "dmesg" (dmesg -T) or "journal" (journalctl -k) or "none"
    # The host's boot records (#20): "journal" (journalctl --list-boots), "last" (last -x -F)
    # or "none"; a reboot then is a host event, not its rails' cable faults.
    boots: str = "journal"
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
class OpticsSettings:
    """`[optics]`: the transceiver-diagnostics trends of the watch list (auditor.analyse.optics,
    issue #14). Each default's source is beside it; docs/ranking.md "Optics watch list" has the
    longer story. A module's own thresholds (SFF-8636 page 03h, CMIS page 02h) are the limits; these
    only say how much history and how big a change counts."""

    history_days: float = 30.0  # readings looked at before the window's end
    min_days: int = 5  # days with a reading before a trend is fitted (Theil-Sen needs a few)
    horizon_days: float = 30.0  # watch a trend that reaches a threshold within this (a month)
    # A drift counts when its fitted change over the history is this many times the readings'
    # own scatter (1.4826 x MAD of the residuals) ...
    noise_ratio: float = 3.0
    # ... and at least this much: below it a "trend" is DDM quantisation and calibration wobble
    # (powers are kept in 0.1 uW steps, temperature in 1/256 C).
    min_drift_db: float = 0.5
    min_drift_c: float = 2.0
    min_drift_v: float = 0.03
    min_drift_bias_pct: float = 5.0
    # One lane this far below its module's other lanes: lanes of one module share a calibration,
    # and healthy SR4 modules read within ~1 dB of each other (two public `ethtool -m` captures
    # of Mellanox and Finisar SR4 modules: 0.7 and 0.5 dB from lowest to highest lane); 3 dB is
    # half the light.
    sibling_gap_db: float = 3.0
    # Peer Tx minus local Rx: 200GBASE-SR4 allows 1.9 dB of channel insertion loss (IEEE
    # 802.3cd, OM4 100 m), plus 3 dB for two modules' power calibration (SFF-8636 / Finisar
    # AN-2030 allow +-3 dB each; real modules are usually within 1-1.5 dB).
    link_loss_db: float = 5.0
    link_loss_rise_db: float = 2.0  # growth of that loss over the history (calibration cancels)
    # Same part number and firmware: a robust z-score (median, 1.4826 x MAD) at least this big
    # and at least the floors below; cohorts smaller than cohort_min are not compared.
    cohort_min: int = 8
    cohort_z: float = 4.0
    cohort_db: float = 3.0
    cohort_c: float = 10.0
    cohort_bias_pct: float = 20.0
    # Laser ageing: the automatic power control raises Tx bias as the laser's efficiency drops,
    # so a rise at flat temperature (bias also rises with temperature) is the laser itself (Intel
    # US11177620B2 warns on the bias change temperature does not explain). Mellanox SR4 modules
    # warn at 8.0 mA on a 6.75 mA nominal bias (+18.5 %): 10 % is half way there.
    bias_rise_pct: float = 10.0
    flat_c: float = 3.0  # DDM temperature is good to +-3 C (AN-2030): less is "flat"
    flat_v: float = 0.05  # 1.5 % of 3.3 V
    # A watch this strong (0..1) makes a link a `transceiver` suspect on its own; any watch
    # does on a link that also flapped, and so does a lane past its warning and still trending.
    strong: float = 0.8

    @property
    def history(self) -> timedelta:
        return timedelta(days=self.history_days)


@dataclass(frozen=True, slots=True)
class RankingSettings:
    """`[ranking]`: the windows and thresholds of the correlation and the ranking (the one
    settings object auditor.analyse uses; these are the defaults)."""

    # `[optics]` (issue #14) rides along: the ranking turns strong optics trends into
    # `transceiver` verdicts, and every caller of the correlation already passes this object.
    optics: OpticsSettings = field(default_factory=OpticsSettings)
    before_minutes: float = 15.0  # a flap this long before a job died can have killed it
    after_minutes: float = 1.0  # clock skew between switches and hosts
    gpus_per_node: int = 8  # when the scheduler does not say
    # Symbol-BER limit per link speed ("HDR" = 1e-13), replacing NVIDIA's field table for that
    # speed (auditor/analyse/ber.py); and the FEC opcode the site's links of a speed run
    # (the table's "FEC OPCODE", what mlxlink and UFM show) where the assumed one is wrong.
    ber_limits: dict[str, float] = field(default_factory=dict)
    ber_fec: dict[str, int] = field(default_factory=dict)
    link_error_recovery_per_hour: float = 300.0  # NVSentinel: > 5 per minute
    # PortRcvErrors an hour above which a port is erroring even without a known BER.
    port_rcv_errors_per_hour: float = 100.0
    # Points per unit of any rule of auditor/analyse/rules.py, by name ({"flaps" = 1.5});
    # the rules table's own weights otherwise.
    weights: dict[str, float] = field(default_factory=dict)
    common_mode_min_ports: int = 3
    common_mode_fraction: float = 0.5
    # A host's rails down within 30 s of each other are one host event when they are this share
    # of its linked HCA ports, and at least host_event_min_rails (issue #20: most rails, so a
    # rail whose leaf's syslog is lost does not hide the event).
    host_event_fraction: float = 0.75
    host_event_min_rails: int = 2
    nccl_version: str = ""  # the site's NCCL, for jobs whose logs do not say (e.g. "2.21.5")
    nccl_ib_timeout: int = 0  # the site's NCCL_IB_TIMEOUT when jobs set it; 0 = NCCL's default
    # `[fabric] adaptive_routing` (issue #23) rides along like `[optics]`: the switches may send
    # a flow out of any equal-cost up port (Quantum AR), so paths widen and flaps on links AR
    # routes around weigh less (rules.py `adaptive_routing`).
    adaptive_routing: bool = False

    @property
    def before(self) -> timedelta:
        return timedelta(minutes=self.before_minutes)

    @property
    def after(self) -> timedelta:
        return timedelta(minutes=self.after_minutes)


@dataclass(frozen=True, slots=True)
class OutcomesSettings:
    """`[outcomes]` (issue #15): how the nightly runs' suspects are judged by what followed
    them, and the cohorts of parts."""

    since: str = "90d"  # the window `auditor outcomes` and the report's section look back over
    # A suspect nobody acted on is refuted when its link stays clean this long: twice
    # [nightly] verify_days, because a link nobody touched keeps whatever fault it has, and an
    # intermittent one (0.1 flaps a day) is often quiet for a week. In
    # benchmarks/bench_outcomes.py (5 campaigns) 3 days refuted 15 true faults, 7 days 6,
    # 14 days 2, 21 days none but judged 65 suspects instead of 154.
    clean_days: float = 14.0
    # Off: rules keep the points rank.py gives them. On: each rule's points are multiplied by
    # its measured precision, shrunk toward the pooled precision of all rules by
    # `prior_suspects` pseudo-suspects, and the evidence says so.
    learned_weights: bool = False
    prior_suspects: float = 5.0
    # A cohort (part number, vendor, firmware, lot) is flagged when at least this many of its
    # parts had an incident, their share is `cohort_min_ratio` times the rest's, and the
    # binomial tail is below `cohort_alpha` after a Bonferroni correction over the cohorts.
    cohort_min_incidents: int = 3
    cohort_min_ratio: float = 2.0
    cohort_alpha: float = 0.01

    @property
    def span(self) -> timedelta:
        """`since` as a length (the file's value was checked when it was loaded)."""
        from auditor.timeparse import parse_span

        return parse_span(self.since, "outcomes.since")


@dataclass(frozen=True, slots=True)
class LogSettings:
    """[logs]: how syslog lines without a year or zone are read."""

    year: int | None = None
    tz: str = "UTC"
    patterns: tuple[str, ...] = ()  # site-specific regexes with named groups (state, host, port)
    paths: tuple[str, ...] = ()  # log files (globs) a sweep ingests: switch syslog, UFM, opensm


@dataclass(frozen=True, slots=True)
class Settings:
    """The whole configuration: auditor.toml with the defaults filled in."""

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
    outcomes: OutcomesSettings = field(default_factory=OutcomesSettings)
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S  # [store]: wait for a DB another holds

    @property
    def optics(self) -> OpticsSettings:
        return self.ranking.optics

    @property
    def captures_dir(self) -> Path:
        return self.captures or self.db.resolve().parent / "captures"

    @property
    def reports_dir(self) -> Path:
        return self.nightly.reports or self.db.resolve().parent / "reports"

    @property
    def log_file(self) -> Path:
        return self.nightly.log_file or self.db.resolve().parent / "auditor-nightly.log"


def _path(value: str | None, base: Path) -> Path | None:
    if value is None:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else base / p


def _given(table: dict[str, Any], base: Path, *, paths: tuple[str, ...] = (),
           secrets: tuple[str, ...] = (), tuples: tuple[str, ...] = ()) -> dict[str, Any]:
    """A checked table's keys as dataclass arguments: file paths resolved against the config's
    folder, secrets as Secret, lists as tuples. Keys the file leaves out are not passed, so the
    dataclass default applies."""
    out = dict(table)
    for key in paths:
        if key in out:
            out[key] = _path(out[key], base)
    for key in secrets:
        if key in out:
            out[key] = Secret(out[key])
    for key in tuples:
        if key in out:
            out[key] = tuple(out[key])
    return out


_SSH_PATHS = ("key_file", "known_hosts")


def _switch(item: dict[str, Any], base: Path) -> SwitchSettings:
    snmp = ssh = None
    if "snmp" in item:
        snmp = SnmpSettings(**_given(item["snmp"], base,
                                     secrets=("community", "auth_key", "priv_key")))
    if "ssh" in item:
        ssh = SshSettings(**_given(item["ssh"], base, paths=_SSH_PATHS, secrets=("password",)))
    return SwitchSettings(item["name"], item["host"], snmp, ssh, item.get("os") or "onyx")


def load(config_path: Path | None, db: Path | None) -> Settings:
    """Read the config file (if any), check all of it, and apply AUDITOR_DB and the --db flag
    over it. Every mistake in the file is one line of the ConfigError, naming its key."""
    data: dict[str, Any] = {}
    base = Path.cwd()
    if config_path is not None:
        import tomllib  # only with a file: its regexes are 2 ms of every command (issue #13)

        try:
            data = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{config_path}: cannot read config: {exc.strerror}") from exc
        except UnicodeDecodeError:
            raise ConfigError(f"{config_path}: not a text file (UTF-8)") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{config_path}: {exc}") from exc
        base = config_path.resolve().parent
    if data:
        from auditor.config_schema import check  # pydantic: only when there is a file to check

        data = check(data, snmp_version=SnmpSettings().version)
    store = data.get("store", {})
    top: dict[str, Any] = _given(store, base, paths=("captures",))
    top.pop("db", None)
    env_db = os.environ.get("AUDITOR_DB")
    top["db"] = db or (Path(env_db) if env_db else None) \
        or _path(store.get("db"), base) or Path(DEFAULT_DB)
    if "node_name_map" in (topo := data.get("topology", {})):
        top["node_name_map"] = _path(topo["node_name_map"], base)
    if "sweep" in data:
        top["sweep"] = SweepSettings(**_given(
            data["sweep"], base, paths=_SSH_PATHS, secrets=("password",),
            tuples=("ibnetdiscover_args", "iblinkinfo_args", "ibqueryerrors_args",
                    "lfts_args", "ibdiagnet_args")))
    if "switches" in data:
        top["switches"] = tuple(_switch(item, base) for item in data["switches"])
    if "concurrency" in (snmp := data.get("snmp", {})):
        top["snmp_concurrency"] = snmp["concurrency"]
    if "aliases" in data:
        top["aliases"] = dict(data["aliases"])
    if "logs" in data:
        logs = _given(data["logs"], base, tuples=("patterns",))
        if "paths" in logs:
            logs["paths"] = tuple(str(_path(p, base)) for p in logs["paths"])
        top["logs"] = LogSettings(**logs)
    if "hosts" in data:
        top["hosts"] = HostSettings(**_given(data["hosts"], base, paths=_SSH_PATHS,
                                             secrets=("password",), tuples=("names",)))
    if "nightly" in data:
        top["nightly"] = NightlySettings(**_given(data["nightly"], base,
                                                  paths=("reports", "log_file")))
    if "ranking" in data:
        ranking = dict(data["ranking"])
        for key in ("ber_limits", "ber_fec"):  # speeds as the fabric prints them
            if key in ranking:
                ranking[key] = {k.upper(): v for k, v in ranking[key].items()}
        top["ranking"] = RankingSettings(**ranking)
    if "optics" in data:
        ranking_settings = top.get("ranking", RankingSettings())
        top["ranking"] = replace(ranking_settings, optics=OpticsSettings(**data["optics"]))
    if "adaptive_routing" in (fab := data.get("fabric", {})):
        top["ranking"] = replace(top.get("ranking", RankingSettings()),
                                 adaptive_routing=fab["adaptive_routing"])
    if "outcomes" in data:
        top["outcomes"] = OutcomesSettings(**data["outcomes"])
    return Settings(config_path=config_path, **top)
