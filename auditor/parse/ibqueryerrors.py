"""Parse `ibqueryerrors` output: one CounterSample per `GUID 0x... port N|ALL:` line.

ibqueryerrors prints only ports whose counters exceed a threshold, so empty stdout (e.g. when
the SA query failed) and a summary-only report are valid and give []. Port `ALL` is the switch
aggregate (port None). The GUID on a port line is a switch's port-0 GUID or a CA's PORT GUID
(CA headers carry no GUID), matching the CA-keyed-by-port-GUID convention of the topology
parsers; `--counters` mode prints the node GUID instead. `-r` "Link info:" lines and the `##`
summary, threshold and suppression lines carry nothing we keep. Data counters added by
`--data` are kept like the error counters; their human-readable "(1.395MB)" suffix is dropped.
"""

from __future__ import annotations

import re

from auditor.errors import ParseError
from auditor.models import CounterSample
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


def parse_ibqueryerrors(text: str) -> list[CounterSample]:
    samples: list[CounterSample] = []
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
            samples.append(
                CounterSample(
                    port=None if port == "ALL" else int(port),
                    counters=counters,
                    guid=norm_guid(m.group("guid")),
                    description=description,
                )
            )
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
    return samples
