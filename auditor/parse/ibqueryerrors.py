"""Parse `ibqueryerrors` output: one CounterSample per `GUID 0x... port N|ALL:` line.

ibqueryerrors prints only ports whose counters exceed a threshold, so empty stdout (e.g. when
the SA query failed) and a summary-only report are valid and give []. Port `ALL` is the switch
aggregate (port None). The GUID on a port line is a switch's port-0 GUID or a CA's PORT GUID
(CA headers carry no GUID), matching the CA-keyed-by-port-GUID convention of the topology
parsers; `--counters` mode prints the node GUID instead. `-r` "Link info:" lines and the `##`
summary, threshold and suppression lines carry nothing we keep. Data counters added by
`--data` are kept like the error counters; their human-readable "(1.395MB)" suffix is dropped.

`parse_ibqueryerrors_table` gives the same readings in columns, for the ingest: a `--data`
snapshot of a large fabric lists every port (4.5 MB, 98,000 readings for 12,288 links).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from operator import itemgetter

from auditor.errors import ParseError
from auditor.models import CounterSample, CounterTable
from auditor.parse._common import GUID_HEX, norm_guid, split_lines

_KIND = "ibqueryerrors"

# Switches: Errors for 0x<guid> "<desc>"; CAs and routers: Errors for "<desc>".
_HEADER_RE = re.compile(
    r"^(?:Errors|Data Counters) for (?:0x(?P<guid>" + GUID_HEX + r') )?"(?P<desc>.*)"\s*$',
    re.ASCII,
)
_PORT_RE = re.compile(
    r"^\s+GUID 0x(?P<guid>" + GUID_HEX + r") port (?P<port>\d{1,3}|ALL):(?P<items>.*)$",
    re.ASCII,
)
_ITEM = r"\[(\w+) == (\d{1,20})(?: \([^)]*\))?\]"
_ITEM_RE = re.compile(_ITEM, re.ASCII)
_ITEMS_RE = re.compile(r"^(?:\s*" + _ITEM + r")*\s*$", re.ASCII)


def _port_lines(text: str) -> Iterator[tuple[str, int | None, str | None, dict[str, int]]]:
    """(GUID, port, description, counters) of every port line, line by line; any line that is
    not what ibqueryerrors prints is a ParseError naming it."""
    description: str | None = None
    in_block = False

    for line_no, line in enumerate(split_lines(text), 1):
        if not line.strip() or line.startswith("##"):
            continue
        m = _PORT_RE.match(line)
        if m is not None:
            if not in_block:
                raise ParseError(_KIND, line_no, line, "port line before any 'Errors for' line")
            items = m.group("items")
            if not _ITEMS_RE.match(items):
                raise ParseError(_KIND, line_no, line, "expected [Counter == value] items")
            counters: dict[str, int] = {}
            for name, value in _ITEM_RE.findall(items):
                if name in counters:
                    raise ParseError(_KIND, line_no, line, "counter repeated on one line")
                counters[name] = int(value)
            port = m.group("port")
            yield (norm_guid(m.group("guid")), None if port == "ALL" else int(port), description,
                   counters)
            continue
        if line.lstrip().startswith("Link info:"):
            if not in_block:
                raise ParseError(_KIND, line_no, line, "link info before any 'Errors for' line")
            continue
        m = _HEADER_RE.match(line)
        if m is not None:
            description = m.group("desc")
            in_block = True
            continue
        raise ParseError(_KIND, line_no, line, "unrecognised line")


def parse_ibqueryerrors(text: str) -> list[CounterSample]:
    return [CounterSample(port=port, counters=counters, guid=guid, description=description)
            for guid, port, description, counters in _port_lines(text)]


# The fast path of parse_ibqueryerrors_table. On a 4.5 MB `--data` snapshot (24,576 port lines,
# 98,000 readings) _port_lines takes 0.13 s of CPU: three regexes, a dict and a tuple per port
# line. `--data` prints the same data counters at the end of every port line, after the error
# counters that passed their threshold; so the first port line's counter names make a regex
# that matches a whole port line and captures those values itself (20 ms for all lines), and
# only the items before them, on the few ports with errors, are found one line at a time. If
# a port line does not end that way the items of every line are found one at a time (45 ms).
# The whole text is checked first by one regex in C (3 ms), the port lines loosely: each one
# must then be matched by the strict port line regex (same count). Only a subset of what
# _port_lines accepts is taken: blank lines of spaces and tabs only, a suffix "(...)" without
# brackets or newlines, no counter repeated on a line. Anything else goes to _port_lines,
# which gives the same readings or the ParseError naming the line.
_FAST_PORT_ANY = r"[ \t]++GUID 0x[^\n]*+\n"
_FAST_HEADER = r'(?:Errors|Data Counters) for (?:0x' + GUID_HEX + r' )?"[^\n]*"[ \t]*\n'
_FAST_NOTE = r"(?:[ \t]*|##[^\n]*)\n"  # blank, or the summary
_FAST_LINK = r"[ \t]*Link info:[^\n]*\n"
# Notes, then (from the first header on) port lines, headers, notes and link info lines. The
# possessive repeats keep no backtracking state: memory stays flat however long the text.
_FAST_TEXT = re.compile(
    f"(?:{_FAST_NOTE})*+(?:{_FAST_HEADER}(?:{_FAST_PORT_ANY}|{_FAST_HEADER}|{_FAST_LINK}|"
    f"{_FAST_NOTE})*+)?+",
    re.ASCII,
)
# Possessive wherever backtracking could not help.
_FAST_SUFFIX = r"(?: \([^\[\])\n]*+\))?+\]"
_FAST_ITEM = r"\[[A-Za-z0-9_]++ == [0-9]{1,20}+" + _FAST_SUFFIX
_FAST_PREFIX = r"\n[ \t]++GUID 0x([0-9a-fA-F]{1,16}+) port ([0-9]{1,3}+|ALL):"
_FAST_PORT_LINE = re.compile(_FAST_PREFIX + r"([^\n]*+)", re.ASCII)
_FAST_PAIR = re.compile(r"\[([A-Za-z0-9_]++) == ([0-9]{1,20}+)", re.ASCII)


@lru_cache(maxsize=8)
def _port_line_re(shared: tuple[str, ...]) -> re.Pattern[str]:
    """A whole port line whose items end with the counters `shared`: GUID, port, the items
    before those, and the values of those."""
    before = r"((?:[ \t]*+" + _FAST_ITEM + (r")*?)" if shared else r")*+)")
    ending = "".join(r"[ \t]*+\[" + re.escape(name) + r" == ([0-9]{1,20}+)" + _FAST_SUFFIX
                     for name in shared)
    return re.compile(_FAST_PREFIX + before + ending + r"[ \t]*+(?=\n|\Z)", re.ASCII)


def _shared_ending(text: str) -> tuple[str, ...]:
    """The counter names that end each of 32 port lines spread over the text (the first port
    line alone would give its error counters too), none repeated; () if there are none."""
    ending: list[str] | None = None
    for pos in range(0, len(text), len(text) // 32 + 1):
        line = _FAST_PORT_LINE.search(text, pos)
        if line is None:
            break
        names = [name for name, _ in _FAST_PAIR.findall(line.group(3))]
        if ending is None:
            ending = names
        while ending and ending != names[len(names) - len(ending):]:
            del ending[0]
    return tuple(ending) if ending and len(set(ending)) == len(ending) else ()


def _fast_table(text: str) -> CounterTable | None:
    if "\r" in text:
        text = text.replace("\r\n", "\n")  # as split_lines does
    if not _FAST_TEXT.fullmatch(text if text.endswith("\n") else text + "\n"):
        return None
    # A port line follows a header, so a newline starts it. Each one has "GUID 0x" in it: as
    # many strict matches as there are of those means every port line was one.
    port_lines = text.count("GUID 0x")
    shared = _shared_ending(text)
    for ending in ((shared, ()) if shared else ((),)):
        lines: list[tuple[str, ...]] = _port_line_re(ending).findall(text)
        if len(lines) == port_lines:
            break
    else:
        return None
    counts: list[int] = []
    names: list[str] = []
    values: list[str] = []
    find_pairs = _FAST_PAIR.findall
    for line in lines:
        count = len(ending)
        if line[2]:
            pairs = find_pairs(line[2])
            own = [name for name, _ in pairs]
            count += len(own)
            if len({*own, *ending}) != count:
                return None  # a counter repeated on one line: _port_lines says where
            names += own
            values += [value for _, value in pairs]
        counts.append(count)
        names += ending
        values += line[3:]
    # GUIDs and ports repeat across lines (a switch's GUID on all its ports; ALL and 1-64):
    # each distinct one is normalised once.
    raw_guids, raw_ports = list(map(itemgetter(0), lines)), list(map(itemgetter(1), lines))
    guid_of = {g: norm_guid(g) for g in dict.fromkeys(raw_guids)}
    port_of = {p: None if p == "ALL" else int(p) for p in dict.fromkeys(raw_ports)}
    return CounterTable(guids=list(map(guid_of.__getitem__, raw_guids)),
                        ports=list(map(port_of.__getitem__, raw_ports)), counts=counts,
                        names=names, values=list(map(int, values)))


def parse_ibqueryerrors_table(text: str) -> CounterTable:
    """The readings of parse_ibqueryerrors in columns (descriptions are not kept)."""
    table = _fast_table(text)
    if table is not None:
        return table
    guids: list[str] = []
    ports: list[int | None] = []
    counts: list[int] = []
    names: list[str] = []
    values: list[int] = []
    for guid, port, _, counters in _port_lines(text):
        guids.append(guid)
        ports.append(port)
        counts.append(len(counters))
        names.extend(counters)
        values.extend(counters.values())
    return CounterTable(guids, ports, counts, names, values)
