"""The input kinds: one entry per format the auditor reads, and what `--kind auto` does with them.

An entry says which parser reads the format, which ingester stores it (`family`: captures,
logs, jobs, optics), how `--kind auto` recognises it (`signs`), its line of `ingest --kind`
help, the parser's keywords and the options that change what it stores, and its fixture folder
under tests/fixtures/ (tests/test_fixtures.py runs every folder). An entry without a family is a
parser with fixtures that is no ingest kind yet (a collector's, or waiting for its issue).

A new format is one entry here, its parser in auditor/parse/ and its fixtures; the ingester of
its family stores it. Parsers, prefilters and command recognisers are named as "module:name"
and imported on first use: the command line imports this module to print its help, and neither
`auditor --help` nor `ingest --kind sacct` may import the log parsers (tests/test_imports.py).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any, Literal, NamedTuple

Family = Literal["captures", "logs", "jobs", "optics"]
# The order `--kind` lists the kinds in (help and errors): each family's kinds as entered below.
FAMILIES: tuple[Family, ...] = ("captures", "logs", "jobs", "optics")


# NamedTuples, not dataclasses: the command line imports this module for its help, and as two
# frozen dataclasses these cost `auditor --help` 2 ms or more to build (0.4 ms as NamedTuples).
class Sign(NamedTuple):
    """One way `--kind auto` recognises a kind in a file's first lines: a regex searched in
    the line (anchor it with ^ for the line's start), or `command`, a "module:name" function
    that returns the port a command line names (e.g. `# ethtool -m eth2`), else None.
    `line="first"` looks at the first line its family reads, "any" at each of them."""

    pattern: str = ""
    line: Literal["first", "any"] = "first"
    command: str = ""

    def holds(self, line: str) -> bool:
        if self.command:
            recognise: Callable[[str], str | None] = resolve(self.command)
            return recognise(line) is not None
        return _compiled(self.pattern).search(line) is not None


class Kind(NamedTuple):
    """An input format (see the module docstring)."""

    name: str  # the --kind value
    family: Family | None  # the ingester that stores it; None: a parser with fixtures only
    parse: str  # "module:function": parse(text or numbered lines, **params)
    help: str  # one line for `ingest --kind` (the tool or file, and the options it needs)
    fixtures: str  # its folder under tests/fixtures/
    expect: str = "records"  # how tests/test_fixtures.py compares a case with its .json
    # "lines": (line number, line) pairs; "document": the whole file is one document (JSON),
    # read and parsed whole, with no envelope or prefilter (logs family)
    reads: Literal["text", "lines", "document"] = "text"
    params: tuple[str, ...] = ()  # the parser's keywords a caller gives when it has them
    options: tuple[str, ...] = ()  # what changes what it stores: the re-ingest key's fields
    signs: tuple[Sign, ...] = ()  # how --kind auto recognises it (in AUTO_ORDER's order)
    envelope: str | None = None  # logs: how every line of the log starts (PCRE, for grep)
    prefilter: str | None = None  # logs: "module:NAME" of the PCRE of the lines worth parsing
    comment: str | None = None  # captures: a `#` line holding this is the tool's own header
    records: str = ""  # jobs: what the ingester keeps of the parse (its parsed-file field)
    fixture_parse: str | None = None  # the fixtures' parser, when the ingest reads a faster form

    @property
    def parser(self) -> Callable[..., Any]:
        parse: Callable[..., Any] = resolve(self.parse)
        return parse

    def call(self, data: object, given: Mapping[str, object]) -> Any:
        """The parse of `data` with the keywords of `params` that `given` holds."""
        return self.parser(data, **{p: given[p] for p in self.params if p in given})

    def option_values(self, given: Mapping[str, object]) -> dict[str, object]:
        """The re-ingest key's fields of this kind, from what the ingest was given."""
        return {o: given.get(o) for o in self.options}

    def prefilter_pattern(self) -> str:
        if self.prefilter is None:
            raise ValueError(f"{self.name}: no prefilter")
        pattern: str = resolve(self.prefilter)
        return pattern


# Log envelopes: how every line of each log starts. They count garbage lines (grep runs them
# over the whole file) and they are the logs' signs for --kind auto.
_SYSLOG = (r"^(?:<\d{1,3}>)?(?:1 )?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d|[A-Z][a-z]{2} {1,2}\d{1,2} "
           r"\d\d:\d\d|[A-Z][a-z]{2} [A-Z][a-z]{2} {1,2}\d{1,2} \d\d:|\[|- )")
_UFM_EVENTS = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
_OPENSM = r"^[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{6} \["
_DMESG = r"^(?:\[|\d{4}-\d\d-\d\dT|[A-Z][a-z]{2} {1,2}\d{1,2} )"
# slurmctld's LogTimeFormat iso8601(_ms), rfc5424(_ms), rfc3339 stamps (SchedMD/slurm@
# slurm-25-11-7-1 src/common/log.c:1118-1160): a file with none of them is no slurmctld.log.
SLURMCTLD_STAMP = (r"(?a)^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
                   r"(?:Z|[+-]\d{2}:?\d{2})?\] ")
_LOG_PARAMS = ("year", "reference", "tz")
_LOG_OPTIONS = ("year", "tz", "aliases")
_OPTICS_PARAMS = ("device", "read_at", "port")
_OPTICS_OPTIONS = ("host", "port", "aliases")

KINDS: tuple[Kind, ...] = (
    # captures: topology and counters, as infiniband-diags (rdma-core 44) prints them
    Kind("ibnetdiscover", "captures", "auditor.parse.ibnetdiscover:parse_ibnetdiscover",
         "topology: ibnetdiscover [-p]", "ibnetdiscover", expect="topology",
         options=("names",), comment="Topology file",
         signs=(Sign(r"^(#\s*Topology file|vendid=|devid=|sysimgguid=|switchguid=|caguid=|"
                     r"(CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s|(Ca|Switch|Rt)\s+:\s+0x|"
                     r"DR path )"),)),
    Kind("iblinkinfo", "captures", "auditor.parse.iblinkinfo:parse_iblinkinfo",
         "topology: iblinkinfo [--line]", "iblinkinfo", expect="topology", options=("names",),
         signs=(Sign(r"^(CA: |Switch: 0x|0x[0-9a-fA-F]+\s+\")"),)),
    Kind("perfquery", "captures", "auditor.parse.perfquery:parse_perfquery",
         "port counters: perfquery [-x]", "perfquery", options=("names",),
         comment="counters:", signs=(Sign(r"^# Port (extended )?counters: "),)),
    Kind("ibqueryerrors", "captures", "auditor.parse.ibqueryerrors:parse_ibqueryerrors_table",
         "port counters: ibqueryerrors [--data]", "ibqueryerrors", options=("names",),
         comment="## Summary:", signs=(Sign(r"^(Errors for (0x|\")|## Summary:)"),),
         fixture_parse="auditor.parse.ibqueryerrors:parse_ibqueryerrors"),
    # forwarding tables (issue #23): dump_lfts.sh / ibroute, opensm-lfts.dump and opensm.fdbs,
    # each told by its first line (auditor.parse.lfts); the fixtures of the last two are their
    # parsers' own kinds below
    Kind("lfts", "captures", "auditor.parse.lfts:parse_lfts",
         "forwarding tables: dump_lfts.sh, ibroute", "dump_lfts",
         expect="tables", fixture_parse="auditor.parse.dump_lfts:parse_dump_lfts",
         signs=(Sign(r"^(Unicast lids \[|dump_ucast_routes: Switch 0x)"),)),
    # An ibdiagnet run (issue #24): its output folder, its db_csv (every table, recognised by
    # its first `START_<TABLE>` line) or, alone, its net_dump (a switch line `"<desc>",
    # <vendor>, 0x<guid>, LID <n>` first): topology, counters, cables, labels, BER, findings.
    Kind("ibdiagnet", "captures", "auditor.parse.ibdiagnet:parse_ibdiagnet",
         "ibdiagnet: its folder, db_csv, net_dump", "ibdiagnet",
         expect="ibdiagnet", options=("names",),
         signs=(Sign(r"^START_[A-Z][A-Z0-9_]*,*$"),
                Sign(r'^"[^"]*"\s*,\s*[^,]*,\s*0x[0-9a-fA-F]{1,16}\s*,\s*LID\s+\d{1,5}\s*$'))),
    # logs: port events, each file scanned for its prefilter's lines
    Kind("syslog", "logs", "auditor.parse.syslog:parse_syslog_lines",
         "switch syslog (RFC 3164, 3339, 5424)", "syslog", expect="events",
         reads="lines", params=(*_LOG_PARAMS, "extra"), options=_LOG_OPTIONS,
         signs=(Sign(_SYSLOG),), envelope=_SYSLOG, prefilter="auditor.parse.syslog:PREFILTER"),
    Kind("ufm-events", "logs", "auditor.parse.ufm_events:parse_ufm_events",
         "UFM events.log", "ufm_events", expect="events", reads="lines", params=("tz",),
         options=_LOG_OPTIONS, signs=(Sign(_UFM_EVENTS),), envelope=_UFM_EVENTS,
         prefilter="auditor.parse.ufm_events:PREFILTER"),
    Kind("opensm", "logs", "auditor.parse.opensm:parse_opensm", "opensm.log", "opensm",
         expect="events", reads="lines", params=_LOG_PARAMS, options=_LOG_OPTIONS,
         signs=(Sign(_OPENSM),), envelope=_OPENSM, prefilter="auditor.parse.opensm:PREFILTER"),
    # Never recognised: its lines look like syslog's.
    Kind("dmesg", "logs", "auditor.parse.dmesg:parse_dmesg",
         "kernel log: dmesg, journalctl -k (--host)", "dmesg", expect="dmesg",
         params=("host", "boot_time", "tz"), options=(*_LOG_OPTIONS, "host"), envelope=_DMESG,
         prefilter="auditor.parse.dmesg:PREFILTER"),
    # Whole JSON documents of port events (issue #24): an NVOS switch's event table, UFM's REST
    # events. Recognised by their keys, on a line that starts the way JSON's lines do.
    Kind("nvos-events", "logs", "auditor.parse.nvos_events:parse_nvos_events",
         "nv show system events -o json (--host)", "nvos_events",
         expect="events", reads="document", params=("host", "tz"),
         options=("tz", "host", "aliases"),
         signs=(Sign(r'^(?=[\[{"]).*"(?:time-created|table-occupancy|table-size)"\s*:'),)),
    Kind("ufm-rest-events", "logs", "auditor.parse.ufm_rest_events:parse_ufm_rest_events",
         "UFM REST: /ufmRest/app/events", "ufm_rest_events", expect="events",
         reads="document", params=("tz",), options=("tz", "aliases"),
         signs=(Sign(r'^(?=[\[{"]).*"(?:object_path|write_to_syslog)"\s*:'),)),
    # jobs: the scheduler, job logs, the site's own files and what happened to whole hosts
    Kind("sacct", "jobs", "auditor.parse.sacct:parse_sacct", "jobs: sacct -P", "sacct",
         expect="jobs", params=("tz",), options=("tz",), records="jobs",
         signs=(Sign(r"(?i)^JobID(Raw)?\||\|JobID(Raw)?\|"),)),
    Kind("jobcomp", "jobs", "auditor.parse.jobcomp:parse_jobcomp",
         "jobs: Slurm jobcomp/filetxt", "jobcomp", expect="jobs", params=("tz",),
         options=("tz",), records="jobs", signs=(Sign(r"^JobId=\S+ "),)),
    Kind("jobs-jsonl", "jobs", "auditor.parse.jobcomp:parse_jobs_jsonl",
         "jobs: one JSON object a line", "jobs_jsonl", expect="jobs", params=("tz",),
         options=("tz",), records="jobs", signs=(Sign(r'^\{\s*"'),)),
    Kind("joblog", "jobs", "auditor.parse.joblog:parse_joblog",
         "a job's log: NCCL, PyTorch (--job)", "joblog", expect="joblog", reads="lines",
         params=("tz", "year", "reference"), options=("tz", "job", "year"), records="log",
         signs=(Sign(r"NCCL (WARN|INFO)|NET/IB|ProcessGroupNCCL|\[rank\d+\]|torchelastic|"
                     r"torch\.distributed|CUDA out of memory|NVRM: Xid", line="any"),)),
    Kind("hosts", "jobs", "auditor.parse.hosts_file:parse_hosts_file",
         "host addresses, /etc/hosts form", "hosts_file", records="addresses",
         signs=(Sign(r"^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:%\w]*)\s+[\w.-]+"),)),
    Kind("maintenance", "jobs", "auditor.parse.maintenance:parse_maintenance",
         "maintenance windows (CSV)", "maintenance", expect="windows", params=("tz",),
         options=("tz",), records="windows", signs=(Sign(r"(?i)^\s*target\s*,"),)),
    Kind("inventory", "jobs", "auditor.parse.inventory:parse_inventory",
         "sites, racks, U, port labels (CSV)", "inventory", records="locations",
         signs=(Sign(r"(?i)^\s*name\s*,.*\b(site|rack)\b"),)),
    Kind("cabling", "jobs", "auditor.parse.cabling:parse_cabling",
         "the cabling plan and its parts (CSV)", "cabling", records="cables",
         signs=(Sign(r"(?i)^\s*a_name\s*,"),)),
    Kind("slurm-events", "jobs", "auditor.parse.slurm_events:parse_slurm_events",
         "node events: sacctmgr show event -P", "slurm_events", expect="host-events",
         params=("tz",), options=("tz",), records="host_events",
         # TimeStart beside NodeName (node events) or TRES (cluster events)
         signs=(Sign(r"(?i)^(?=.*(?:^|\|)TimeStart(?:\||$))"
                     r"(?=.*(?:^|\|)(?:NodeName|TRES)(?:\||$))"),)),
    Kind("slurmctld", "jobs", "auditor.parse.slurmctld:parse_slurmctld", "slurmctld.log",
         "slurmctld", expect="host-events", params=("tz",), options=("tz",),
         records="host_events", signs=(Sign(SLURMCTLD_STAMP),)),
    Kind("boots", "jobs", "auditor.parse.boots:parse_boots",
         "journalctl --list-boots, last -x (--host)", "boots", expect="host-events",
         params=("host", "tz", "year", "reference"), options=("tz", "year", "host"),
         records="host_events",
         # last -x: a reboot or shutdown record among user sessions (util-linux last.c);
         # journalctl --list-boots: systemd >= 251's header, or a row of either layout
         signs=(Sign(r"^(?:reboot|shutdown)\s+system (?:boot|down)\s", line="any"),
                Sign(r"^\s*(?:IDX\s+BOOT ID\b|-?\d+ [0-9a-f]{32} \S+ \d{4}-\d{2}-\d{2} )"))),
    # optics: transceiver diagnostics; the command line a capture starts with names its kind
    Kind("ethtool-module", "optics", "auditor.parse.ethtool_module:parse_ethtool_module",
         "optics: ethtool -m (--host)", "ethtool_module", expect="readings",
         params=_OPTICS_PARAMS, options=_OPTICS_OPTIONS,
         signs=(Sign(command="auditor.parse.ethtool_module:command_port"),
                # ethtool's first field
                Sign(r"^\s*Identifier\s+: 0x[0-9a-fA-F]{2} \("))),
    Kind("mlxlink-module", "optics", "auditor.parse.mlxlink_module:parse_mlxlink_module",
         "optics: mlxlink -m (--host)", "mlxlink_module", expect="readings",
         params=_OPTICS_PARAMS, options=_OPTICS_OPTIONS,
         signs=(Sign(command="auditor.parse.mlxlink_module:command_port"),
                Sign(r"^(?:Operational Info|Module Info)\s*$"))),  # its section titles
    Kind("onyx-optics", "optics", "auditor.parse.onyx_optics:parse_onyx_optics",
         "optics: switch CLI, per port (--host)", "onyx_optics", expect="readings",
         params=_OPTICS_PARAMS, options=_OPTICS_OPTIONS,
         signs=(Sign(command="auditor.parse.onyx_optics:command_port"),
                # NVUE's hyphenated lower-case keys
                Sign(r"^(?:cable-type|diagnostics-status|ch-\d+-rx-power)\s*:"))),
    # parsers with fixtures that are no ingest kind: the collectors' own, and the forwarding
    # tables and ibdiagnet files of issues #23 and #24 (their ingest comes with those issues;
    # ibdiagnet's log and net_dump are read by the `ibdiagnet` kind, in its folder)
    Kind("node-name-map", None, "auditor.parse.nodedesc:parse_node_name_map",
         "the site's node-name map (config node_name_map)", "nodedesc", expect="value"),
    Kind("hostlist", None, "auditor.parse.hostlist:expand_hostlist",
         "a Slurm hostlist expression, one a line", "hostlist", expect="hostlist"),
    Kind("ibstat", None, "auditor.parse.ibstat:parse_ibstat", "ibstat (host sweep)", "ibstat"),
    Kind("sysfs-ib", None, "auditor.parse.sysfs_ib:parse_sysfs_ib",
         "/sys/class/infiniband as grep -H prints it (host sweep)", "sysfs_ib", expect="sysfs"),
    Kind("onyx-ib-status", None, "auditor.parse.onyx:parse_interfaces_ib_status",
         "Onyx show interfaces ib status (switch sweep)", "onyx_interfaces_ib_status"),
    Kind("onyx-transceiver", None, "auditor.parse.onyx:parse_transceivers",
         "Onyx show interfaces ib <port> transceiver (switch sweep)", "onyx_transceiver"),
    Kind("opensm-lfts", None, "auditor.parse.opensm_lfts:parse_opensm_lfts",
         "forwarding tables: opensm-lfts.dump (#23)", "opensm_lfts", expect="tables"),
    Kind("opensm-fdbs", None, "auditor.parse.opensm_lfts:parse_opensm_fdbs",
         "forwarding tables: opensm.fdbs (#23)", "opensm_fdbs", expect="tables"),
    Kind("ibtracert", None, "auditor.parse.ibtracert:parse_ibtracert",
         "routes: ibtracert (#23)", "ibtracert", expect="tables"),
    Kind("ibdiagnet-log", None, "auditor.parse.ibdiagnet:parse_ibdiagnet_log",
         "ibdiagnet2.log (#24)", "ibdiagnet_log", expect="events", params=("at",)),
    Kind("ibdiagnet-net-dump", None, "auditor.parse.ibdiagnet:parse_ibdiagnet_net_dump",
         "ibdiagnet2.net_dump (#24)", "ibdiagnet_net_dump", expect="full-topology"),
)

# --kind auto: the steps in the order they are tried (a family may have more than one step,
# tried in turn), and in each step the kinds in the order their signs are tried; a kind named
# twice has two signs, tried in turn. Captures and
# jobs try each sign on the lines their family reads, optics and logs each line with every sign.
AUTO_ORDER: tuple[tuple[Family, tuple[str, ...]], ...] = (
    ("captures", ("ibnetdiscover", "iblinkinfo", "perfquery", "ibqueryerrors", "lfts",
                  "ibdiagnet", "ibdiagnet")),
    # Before the job kinds: a module's `Identifier : 0x11 (QSFP28)` is no site file. First
    # the command lines, then the formats' own first fields.
    ("optics", ("ethtool-module", "mlxlink-module", "onyx-optics",
                "ethtool-module", "mlxlink-module", "onyx-optics")),
    # JSON documents of port events, before the job kinds (jobs-jsonl takes a compact `{"`
    # line) and before the logs' envelopes (syslog's takes the `[` of a pretty-printed array).
    ("logs", ("nvos-events", "ufm-rest-events")),
    ("jobs", ("boots",  # a `last -x` reboot record anywhere: before anything else
              "sacct", "slurm-events", "slurmctld", "boots", "jobcomp", "jobs-jsonl",
              "maintenance", "inventory", "cabling", "joblog", "hosts")),
    ("logs", ("ufm-events", "opensm", "syslog")),
)
_LINE_BY_LINE: frozenset[Family] = frozenset({"optics", "logs"})

_BY_NAME = {k.name: k for k in KINDS}


def get(name: str) -> Kind | None:
    return _BY_NAME.get(name)


def kind(name: str) -> Kind:
    """The entry of a kind known to exist (KeyError otherwise)."""
    return _BY_NAME[name]


def names(family: Family | None = None) -> tuple[str, ...]:
    """The ingest kinds (of one family), in the order `--kind` lists them."""
    return tuple(k.name for f in FAMILIES for k in KINDS
                 if k.family == f and (family is None or f == family))


def help_text() -> str:
    """`ingest --kind`'s help: every ingest kind with its line (`\\b`: click keeps the lines)."""
    listed = [kind(n) for n in names()]
    width = max(len(k.name) for k in listed) + 2
    unsigned = [k.name for k in listed if not k.signs]
    return ("what the files are; auto (the default) recognises each by its first lines"
            + (f", except {', '.join(unsigned)}" if unsigned else "") + "\n\n\b\n"
            + "\n".join(f"{k.name:<{width}}{k.help}" for k in listed))


@cache
def resolve(ref: str) -> Any:
    """The object a "module:name" reference names, imported now."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# --- --kind auto ------------------------------------------------------------------------------


def first_lines(text: str) -> Iterator[str]:
    """text.splitlines(), split a growing head at a time: recognising a 4.5 MB capture by its
    first line split all of it (4 ms) to read one line."""
    done, size = 0, 4096
    while size < len(text):
        lines = text[:size].splitlines()[:-1]  # the last may be cut (or a CR of a CRLF)
        yield from lines[done:]
        done, size = max(done, len(lines)), size * 8
    yield from text.splitlines()[done:]


def capture_line(text: str) -> tuple[int, str] | None:
    """The line a capture is recognised by: its first that is not blank or a `#` comment (a
    comment holding a captures kind's `comment` is the tool's own header), stripped."""
    headers = [k.comment for k in KINDS if k.family == "captures" and k.comment]
    for line_no, line in enumerate(first_lines(text), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#") and not any(h in stripped for h in headers):
            continue
        return line_no, stripped
    return None


def _capture_lines(head: str) -> list[str]:
    found = capture_line(head)
    return [] if found is None else [found[1]]


# What each family reads of a file's head to recognise its kinds.
_LINES: dict[Family, Callable[[str], list[str]]] = {
    "captures": _capture_lines,
    "optics": lambda head: [ln for ln in head.splitlines() if ln.strip()][:50],
    "jobs": lambda head: [ln for ln in head.splitlines()[:200]
                          if ln.strip() and not ln.startswith("#")],
    "logs": lambda head: [s for ln in head.splitlines()[:50] if (s := ln.strip())],
}


@cache
def _steps() -> tuple[tuple[Family, tuple[tuple[str, Sign], ...]], ...]:
    """AUTO_ORDER's steps with each kind's signs, checked: every sign of every kind once."""
    taken: dict[str, int] = {}
    steps = []
    for family, order in AUTO_ORDER:
        signs = []
        for name in order:
            kind = _BY_NAME[name]
            if kind.family != family:
                raise ValueError(f"AUTO_ORDER: {name} is no {family} kind")
            index = taken.get(name, 0)
            signs.append((name, kind.signs[index]))
            taken[name] = index + 1
        steps.append((family, tuple(signs)))
    for kind in KINDS:
        if kind.family is not None and taken.get(kind.name, 0) != len(kind.signs):
            raise ValueError(f"AUTO_ORDER: {kind.name} has {len(kind.signs)} sign(s)")
    return tuple(steps)


def ordered_signs(family: Family) -> tuple[tuple[str, Sign], ...]:
    """(kind, sign) in the order `AUTO_ORDER` tries them within `family`."""
    return tuple(s for f, signs in _steps() if f == family for s in signs)


def _match(family: Family, signs: tuple[tuple[str, Sign], ...], head: str) -> str | None:
    lines = _LINES[family](head)
    if family in _LINE_BY_LINE:
        for line in lines:
            for name, sign in signs:
                if sign.holds(line):
                    return name
        return None
    for name, sign in signs:
        if sign.line == "any":
            if any(sign.holds(line) for line in lines):
                return name
        elif lines and sign.holds(lines[0]):
            return name
    return None


def recognise(family: Family, head: str) -> str | None:
    """The kind of `family` a file's head shows, or None (the family's steps in turn)."""
    for f, signs in _steps():
        if f == family and (found := _match(f, signs, head)) is not None:
            return found
    return None


def auto(head: str) -> tuple[Family, str] | None:
    """The family and kind of a file from its head, trying the steps of `AUTO_ORDER`."""
    for family, signs in _steps():
        found = _match(family, signs, head)
        if found is not None:
            return family, found
    return None
