"""Slurm hostlist expressions: `gpu-[001-004,010]` <-> the host names they stand for.

Syntax accepted by `expand_hostlist` (what Slurm prints in NodeList, sinfo and slurmctld logs):

* top-level comma lists: `a,b[1-2],c` (commas inside brackets belong to the bracket);
* a bracket group `[...]` holds comma-separated numbers and `lo-hi` ranges; each number is
  zero-padded to the width of the `lo` it came from, as Slurm does: `[008-010]` gives `008 009
  010`, `[8-10]` gives `8 9 10`;
* several bracket groups in one name are a Cartesian product, the leftmost group varying
  slowest: `rack[1-2]-gpu[01-02]` -> rack1-gpu01, rack1-gpu02, rack2-gpu01, rack2-gpu02;
* text outside brackets is literal, so `-` in host names needs no escaping.

Names keep the order they are written in, duplicates included. Anything else (unbalanced or
nested brackets, an empty item or group, a reversed range, a non-numeric bound, whitespace
inside a name, more than `MAX_HOSTS` names) raises ValueError naming the problem. ClusterShell's
`[1-9/2]` steps are not Slurm syntax and are rejected.

`joined_hostlist` gives the same names as one string, joined by commas (no name can hold
one), and how many: what the job readers store, without a string per name for most NodeLists.

`compress_hostlist` is the inverse for display: it folds names that share a prefix and end in
digits into one bracket group (`gpu-[001-004,010]`); prefixes keep their first-seen order and
numbers are sorted, so `expand_hostlist(compress_hostlist(names))` gives the same set of names
(each once).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import product

# A NodeList of a million names is not a cluster but a typo like `[1-99999999]`; refusing it
# keeps a bad input from eating all memory.
MAX_HOSTS = 1_000_000

_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$", re.ASCII)
# Characters that would change how a compressed list is read back.
_SPECIAL = frozenset("[],") | frozenset(" \t\r\n\f\v")
_TRAILING_DIGITS_RE = re.compile(r"^(.*?)(\d+)$", re.ASCII | re.DOTALL)


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets; check bracket balance on the way."""
    items: list[str] = []
    depth = 0
    start = 0
    for pos, char in enumerate(text):
        if char == "[":
            if depth:
                raise ValueError(f"hostlist {text!r}: nested '[' at position {pos}")
            depth = 1
        elif char == "]":
            if not depth:
                raise ValueError(f"hostlist {text!r}: ']' without '[' at position {pos}")
            depth = 0
        elif char == "," and not depth:
            items.append(text[start:pos])
            start = pos + 1
    if depth:
        raise ValueError(f"hostlist {text!r}: '[' is never closed")
    items.append(text[start:])
    return items


def _expand_group(group: str, item: str) -> list[str]:
    """`001-003,010` -> ['001', '002', '003', '010']."""
    numbers: list[str] = []
    for part in group.split(","):
        m = _RANGE_RE.match(part)
        if m is None:
            raise ValueError(f"hostlist item {item!r}: bad range {part!r} in [{group}]")
        lo_text, hi_text = m.group(1), m.group(2)
        if hi_text is None:
            numbers.append(lo_text)
            continue
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise ValueError(f"hostlist item {item!r}: reversed range {part!r}")
        if hi - lo + 1 > MAX_HOSTS:
            raise ValueError(f"hostlist item {item!r}: range {part!r} exceeds {MAX_HOSTS} names")
        width = len(lo_text)
        numbers.extend(str(n).zfill(width) for n in range(lo, hi + 1))
        if len(numbers) > MAX_HOSTS:
            raise ValueError(f"hostlist item {item!r}: [{group[:40]}] exceeds {MAX_HOSTS} names")
    return numbers


def _expand_item(item: str) -> tuple[list[str], list[list[str]]]:
    """Split one name pattern into literal pieces and the expanded groups between them."""
    literals: list[str] = []
    groups: list[list[str]] = []
    rest = item
    while "[" in rest:
        head, _, tail = rest.partition("[")
        group, _, rest = tail.partition("]")
        if not group:
            raise ValueError(f"hostlist item {item!r}: empty '[]'")
        literals.append(head)
        groups.append(_expand_group(group, item))
    literals.append(rest)
    return literals, groups


# The shapes Slurm prints for nearly every NodeList: comma-separated items, each a plain name or
# a name with one bracket group of numbers and ranges. They take `_joined_common`; anything else
# (and anything wrong inside a group) takes the general code, which names the problem.
_NAME_CHARS = r"[^\s,\[\]]"
_COMMON_ITEM = rf"(?:{_NAME_CHARS}++|{_NAME_CHARS}*+\[[0-9,-]++\]{_NAME_CHARS}*+)"
_COMMON_RE = re.compile(rf"{_COMMON_ITEM}(?:,{_COMMON_ITEM})*+")
_ONE_ITEM_RE = re.compile(rf"({_NAME_CHARS}*+)\[([0-9,-]++)\]({_NAME_CHARS}*+)")  # most of all
_TOP_COMMA_RE = re.compile(r",(?![^\[]*\])")  # a comma outside brackets (balanced, unnested)


def _joined_common(text: str) -> tuple[str, int] | None:
    """`joined_hostlist` for the common shapes, or None to leave `text` to the general code.

    No string is made per name but for ranges, and those are joins of numbers made once
    (`_padded`): a plain list is its own answer, a group of single numbers one replace. The
    general code builds every name from pieces: 4x the CPU for the 99,990 NodeLists (1.2
    million names) of a month on a 4,096-host cluster."""
    one = _ONE_ITEM_RE.fullmatch(text)
    if one is not None:
        return _joined_numbers(*one.groups())
    if not _COMMON_RE.fullmatch(text):
        return None
    head, bracket, tail = text.partition("[")
    if not bracket:
        count = text.count(",") + 1
        return (text, count) if count <= MAX_HOSTS else None
    group, _, rest = tail.partition("]")
    if "," not in head and "," not in rest:  # one item
        return _joined_numbers(head, group, rest)
    pieces: list[str] = []
    count = 0
    for item in _TOP_COMMA_RE.split(text):
        head, bracket, tail = item.partition("[")
        if not bracket:
            pieces.append(item)
            count += 1
            continue
        group, _, rest = tail.partition("]")
        done = _joined_numbers(head, group, rest)
        if done is None or count + done[1] > MAX_HOSTS:
            return None
        pieces.append(done[0])
        count += done[1]
    return (",".join(pieces), count) if count <= MAX_HOSTS else None


# Host numbers below this, padded to a width up to _PADDED_WIDTH, are made once per width; a
# cluster numbers its hosts well below it.
_PADDED_UP_TO = 10_000
_PADDED_WIDTH = 6


@cache
def _padded(width: int) -> list[str]:
    """0 .. _PADDED_UP_TO - 1 zero-filled to `width` (as Slurm pads: str.zfill)."""
    return [str(n).zfill(width) for n in range(_PADDED_UP_TO)]


def _joined_numbers(head: str, group: str, rest: str) -> tuple[str, int] | None:
    """The names of `head[group]rest` joined by commas and how many, for a group of digits,
    commas and dashes; None unless it is numbers and `lo-hi` ranges (no empty number, no range
    of three, none reversed) of at most MAX_HOSTS names: the general code says what is wrong.

    Single numbers take one replace however many there are (a NodeList of 99,990 sacct jobs
    averages 11 numbers and 1.3 ranges), so Python steps from range to range only. Splitting
    all the groups of a file at their ranges with one regex, to spell each distinct range once,
    took 40 % longer: the regex scan alone cost what this loop does."""
    if (group[0] in ",-" or group[-1] in ",-" or ",," in group or "--" in group
            or ",-" in group or "-," in group):
        return None  # an empty number
    between = f"{rest},{head}"
    if "-" not in group:
        count = group.count(",") + 1
        return (head + group.replace(",", between) + rest, count) if count <= MAX_HOSTS else None
    pieces: list[str] = []
    count = pos = 0
    while (dash := group.find("-", pos)) >= 0:
        start = group.rfind(",", pos, dash) + 1 or pos  # where this range's `lo` begins
        end = group.find(",", dash)
        end = len(group) if end < 0 else end
        if start > pos:  # single numbers before the range
            singles = group[pos:start - 1]
            pieces.append(head + singles.replace(",", between) + rest)
            count += singles.count(",") + 1
        lo_text, hi_text = group[start:dash], group[dash + 1:end]
        if "-" in hi_text:
            return None  # a range of three
        lo, hi = int(lo_text), int(hi_text)
        count += hi - lo + 1
        if hi < lo or count > MAX_HOSTS:
            return None
        if hi < _PADDED_UP_TO and len(lo_text) <= _PADDED_WIDTH:  # strings made once
            numbers: Sequence[str] = _padded(len(lo_text))[lo:hi + 1]
        else:
            numbers = [str(n).zfill(len(lo_text)) for n in range(lo, hi + 1)]
        pieces.append(head + between.join(numbers) + rest)
        pos = end + 1
    if pos < len(group):  # single numbers after the last range
        singles = group[pos:]
        pieces.append(head + singles.replace(",", between) + rest)
        count += singles.count(",") + 1
    return (",".join(pieces), count) if count <= MAX_HOSTS else None


def joined_hostlist(text: str) -> tuple[str, int]:
    """`expand_hostlist(text)` as one string, joined by commas (no name can hold one), and how
    many names that is: `gpu-[001-002]` -> ('gpu-001,gpu-002', 2); '' -> ('', 0)."""
    text = text.strip()
    if not text:
        return "", 0
    common = _joined_common(text)
    if common is not None:
        return common
    names = _expand_general(text)
    return ",".join(names), len(names)


def expand_hostlist(text: str) -> list[str]:
    """`gpu-[001-002,004]` -> ['gpu-001', 'gpu-002', 'gpu-004']; '' -> []."""
    text = text.strip()
    if not text:
        return []
    common = _joined_common(text)
    if common is not None:
        return common[0].split(",")
    return _expand_general(text)


def _expand_general(text: str) -> list[str]:
    names: list[str] = []
    for raw_item in _split_top_level(text):
        item = raw_item.strip()
        if not item:
            raise ValueError(f"hostlist {text!r}: empty item between commas")
        if any(c.isspace() for c in item):
            raise ValueError(f"hostlist item {item!r}: whitespace inside a host name")
        literals, groups = _expand_item(item)
        size = 1
        for group in groups:
            size *= len(group)
        if len(names) + size > MAX_HOSTS:
            raise ValueError(f"hostlist {text[:60]!r}: more than {MAX_HOSTS} host names")
        for combo in product(*groups):
            pieces = [literals[0]]
            for number, literal in zip(combo, literals[1:], strict=True):
                pieces.append(number)
                pieces.append(literal)
            names.append("".join(pieces))
    return names


def _ranges(numbers: list[str]) -> list[str]:
    """Sorted unique digit strings -> `lo-hi` runs that expand back to exactly these strings."""
    runs: list[str] = []
    lo = prev = numbers[0]
    for number in numbers[1:]:
        # A run continues only if `lo`'s padding reproduces the next string verbatim:
        # 099 -> 100 does (width 3), 9 -> 10 does (width 1), 09 -> 010 does not.
        if int(number) == int(prev) + 1 and number == str(int(number)).zfill(len(lo)):
            prev = number
            continue
        runs.append(lo if lo == prev else f"{lo}-{prev}")
        lo = prev = number
    runs.append(lo if lo == prev else f"{lo}-{prev}")
    return runs


def compress_hostlist(names: Iterable[str]) -> str:
    """['gpu-001', 'gpu-002', 'gpu-004'] -> `gpu-[001-002,004]`; duplicates are folded."""
    by_prefix: dict[str, set[str]] = {}
    plain: set[str] = set()
    order: list[tuple[bool, str]] = []  # (has digits, prefix or name) in first-seen order
    for name in names:
        if not name or _SPECIAL.intersection(name):
            raise ValueError(f"host name {name!r} cannot be written in a hostlist")
        m = _TRAILING_DIGITS_RE.match(name)
        if m is None:
            if name not in plain:
                plain.add(name)
                order.append((False, name))
            continue
        prefix, digits = m.group(1), m.group(2)
        if prefix not in by_prefix:
            by_prefix[prefix] = set()
            order.append((True, prefix))
        by_prefix[prefix].add(digits)
    parts: list[str] = []
    for numbered, key in order:
        if not numbered:
            parts.append(key)
            continue
        numbers = sorted(by_prefix[key], key=lambda d: (int(d), len(d)))
        if len(numbers) == 1:
            parts.append(key + numbers[0])
        else:
            parts.append(f"{key}[{','.join(_ranges(numbers))}]")
    return ",".join(parts)
