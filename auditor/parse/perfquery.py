"""Parse `perfquery` output: one CounterSample per `# ... counters: Lid N port P` block.

Blocks from several runs may be concatenated. `-x` blocks (`# Port extended counters`) give
`extended=True`. Port 255 is perfquery's AllPortSelect (`-a`), reported as port None like
ibqueryerrors' `ALL`. The selector fields (PortSelect, CounterSelect, CounterSelect2) are
checked to be numbers but not kept as counters. perfquery names the port by LID only, so
`guid` and `description` stay None.
"""

from __future__ import annotations

import re

from auditor.errors import ParseError
from auditor.models import CounterSample
from auditor.parse._common import split_lines

_KIND = "perfquery"
_ALL_PORTS = 255

# "# Port counters: Lid 3 port 7 (CapMask: 0x1300)", "# Port extended counters: ...",
# "# PortXmitDataSL counters: Lid 3 port 7", "# PortSamplesControl: Lid 3 port 7";
# a directed-route target prints "DR path slid 0; dlid 0; 0,1" instead of "Lid 3".
_HEADER_RE = re.compile(
    r"^# (?P<kind>[A-Za-z][\w ]*?): (?P<where>.*?) port (?P<port>\d{1,3})(?:\s.*)?$", re.ASCII
)
_LID_RE = re.compile(r"^Lid (\d{1,5})$", re.ASCII)
# mad_dump_fields pads the name with dots: "SymbolErrorCounter:..............0"
_COUNTER_RE = re.compile(
    r"^(?P<name>[A-Za-z][\w\[\]]*):\.*(?P<value>0x[0-9a-fA-F]{1,16}|\d{1,20})\s*$", re.ASCII
)


def _is_selector(name: str) -> bool:
    return name == "PortSelect" or name.startswith("CounterSelect")


def parse_perfquery(text: str) -> list[CounterSample]:
    samples: list[CounterSample] = []
    counters: dict[str, int] | None = None
    port: int | None = None
    lid: int | None = None
    extended = False

    def flush() -> None:
        if counters is not None:
            samples.append(CounterSample(port, counters, None, lid, None, extended))

    for line_no, line in enumerate(split_lines(text), 1):
        if line.startswith("#"):
            m = _HEADER_RE.match(line)
            if m is None:
                raise ParseError(_KIND, line_no, line, "unrecognised header")
            flush()
            counters = {}
            port_n = int(m.group("port"))
            port = None if port_n == _ALL_PORTS else port_n
            lid_m = _LID_RE.match(m.group("where"))
            lid = int(lid_m.group(1)) if lid_m else None
            extended = m.group("kind") == "Port extended counters"
            continue
        if not line.strip():
            continue
        m = _COUNTER_RE.match(line)
        if m is None:
            raise ParseError(_KIND, line_no, line, "expected Name:....value")
        if counters is None:
            raise ParseError(_KIND, line_no, line, "counter before any '# ... port N' header")
        name, raw = m.group("name"), m.group("value")
        value = int(raw, 16) if raw.startswith("0x") else int(raw)
        if _is_selector(name):
            continue
        if name in counters:
            raise ParseError(_KIND, line_no, line, "counter repeated in one block")
        counters[name] = value
    flush()
    if not samples:
        raise ParseError(_KIND, 0, "", "no counter blocks")
    return samples
