"""Hypothesis strategies shared by the parser fuzz tests."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

NEAR_MISS = ("keep", "cut", "insert", "digits")


def near_miss(lines: Sequence[str], actions: Sequence[str] = NEAR_MISS,
              noise: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[str]:
    """A line of a real capture, mangled the way captures go wrong: cut short (a truncated
    write), noise inserted or written over part of it, a number grown past its field, rotated,
    or only the noise (`actions` picks which; "keep" leaves it whole)."""
    extra = noise if noise is not None else st.text(max_size=3)
    choices = sorted(set(lines))

    @st.composite
    def mangled(draw: st.DrawFn) -> str:
        line = draw(st.sampled_from(choices))
        action = draw(st.sampled_from(actions))
        if action == "keep":
            return line
        pos = draw(st.integers(0, len(line)))
        if action == "cut":
            return line[:pos]
        if action == "insert":
            return line[:pos] + draw(extra) + line[pos:]
        if action == "replace":
            text = draw(extra)
            return line[:pos] + text + line[pos + len(text):]
        if action == "digits":
            return line[:pos] + "9" * draw(st.integers(1, 30)) + line[pos:]
        if action == "swap":
            return line[pos:] + line[:pos]
        if action == "raw":
            return draw(extra)
        raise ValueError(f"unknown action {action!r}")

    return mangled()
