"""A strict reader of the Prometheus text exposition format (version 0.0.4), for the tests of
`auditor metrics` (prometheus_client is not a dependency). It refuses what Prometheus'
own parser (prometheus/common expfmt, which node_exporter's textfile collector uses) refuses,
the rule issue #21 was about first: one metric and label set twice is an error, and the whole
file is dropped with it. Also: a metric's lines not together, TYPE after its samples or twice,
a bad metric or label name, a label twice, an escape other than \\\\, \\" and \\n, a value that is
not a float, a file not ending in a newline.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}

Samples = dict[str, list[tuple[dict[str, str], float]]]


class ExpositionError(ValueError):
    pass


def _labels(text: str, at: int, line_no: int) -> tuple[dict[str, str], int]:
    """The label set starting after `{` at `at`; returns it and the index after `}`."""
    labels: dict[str, str] = {}
    i = at
    while True:
        if text[i:i + 1] == "}":
            return labels, i + 1
        m = _LABEL.match(text, i)
        if m is None:
            raise ExpositionError(f"line {line_no}: bad label name at {text[i:i + 20]!r}")
        name, i = m.group(), m.end()
        if name in labels:
            raise ExpositionError(f"line {line_no}: label {name} twice")
        if text[i:i + 2] != '="':
            raise ExpositionError(f"line {line_no}: label {name} without =\"")
        i += 2
        value: list[str] = []
        while True:
            if i >= len(text):
                raise ExpositionError(f"line {line_no}: label {name} not closed")
            ch = text[i]
            if ch == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in _ESCAPES:
                    raise ExpositionError(f"line {line_no}: bad escape \\{nxt}")
                value.append(_ESCAPES[nxt])
                i += 2
            elif ch == '"':
                i += 1
                break
            elif ch == "\n":
                raise ExpositionError(f"line {line_no}: a newline in label {name}")
            else:
                value.append(ch)
                i += 1
        labels[name] = "".join(value)
        if text[i:i + 1] == ",":
            i += 1
        elif text[i:i + 1] != "}":
            raise ExpositionError(f"line {line_no}: expected , or }} after label {name}")


def parse(text: str) -> Samples:
    """metric name -> [(labels, value)], in file order; ExpositionError on anything invalid."""
    if text and not text.endswith("\n"):
        raise ExpositionError("the file does not end in a newline")
    samples: Samples = {}
    typed: set[str] = set()
    helped: set[str] = set()
    seen: set[tuple[str, frozenset[tuple[str, str]]]] = set()
    done: set[str] = set()  # metrics whose lines are behind us
    current: str | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not _NAME.fullmatch(name):
                    raise ExpositionError(f"line {line_no}: bad metric name {name!r}")
                if parts[1] == "TYPE":
                    if name in typed or name in samples:
                        raise ExpositionError(f"line {line_no}: TYPE of {name} twice or late")
                    if len(parts) != 4 or parts[3] not in _TYPES:
                        raise ExpositionError(f"line {line_no}: bad TYPE line")
                    typed.add(name)
                else:
                    if name in helped:
                        raise ExpositionError(f"line {line_no}: HELP of {name} twice")
                    helped.add(name)
                if name != current:
                    if name in done:
                        raise ExpositionError(f"line {line_no}: {name}'s lines are apart")
                    if current is not None:
                        done.add(current)
                    current = name
            continue
        m = _NAME.match(line)
        if m is None:
            raise ExpositionError(f"line {line_no}: bad metric name in {line[:40]!r}")
        name, i = m.group(), m.end()
        labels: dict[str, str] = {}
        if line[i:i + 1] == "{":
            labels, i = _labels(line, i + 1, line_no)
        rest = line[i:].split()
        if not line[i:i + 1].isspace() or len(rest) not in (1, 2):
            raise ExpositionError(f"line {line_no}: expected a value after the labels")
        try:
            value = float(rest[0])
        except ValueError:
            raise ExpositionError(f"line {line_no}: not a value: {rest[0]!r}") from None
        if len(rest) == 2 and not re.fullmatch(r"-?\d+", rest[1]):
            raise ExpositionError(f"line {line_no}: not a timestamp: {rest[1]!r}")
        if name != current:
            if name in done:
                raise ExpositionError(f"line {line_no}: {name}'s lines are apart")
            if current is not None:
                done.add(current)
            current = name
        key = (name, frozenset(labels.items()))
        if key in seen:
            raise ExpositionError(f"line {line_no}: duplicate series {name}{labels}")
        seen.add(key)
        samples.setdefault(name, []).append((labels, value))
    return samples
