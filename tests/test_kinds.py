"""The registry of input kinds (auditor/ingest/kinds.py) holds together: its references name
parsers of the parse room, its keywords are the parsers', `--kind auto` tries every sign once,
and `ingest --kind`'s help lists every kind. Its fixtures run in tests/test_fixtures.py and what
`--kind auto` decides is held by tests/test_kind_detection.py."""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import subprocess
import sys
from typing import get_args

import pytest

from auditor.errors import AuditorError
from auditor.ingest import jobs, kinds
from auditor.ingest.plan import plan_ingest

KINDS = kinds.KINDS


def _refs(kind: kinds.Kind) -> list[str]:
    return [r for r in (kind.parse, kind.fixture_parse, kind.prefilter,
                        *(s.command for s in kind.signs)) if r]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_references_name_the_parse_room(kind: kinds.Kind) -> None:
    """A reference is an import the layer test cannot see: it must stay in auditor/parse/."""
    for ref in _refs(kind):
        module, _, name = ref.partition(":")
        assert module.startswith("auditor.parse.") and name, ref
        assert kinds.resolve(ref) is not None, ref
    assert callable(kind.parser)
    if kind.prefilter:
        re.compile(kind.prefilter_pattern())


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_params_are_keywords_of_the_parser(kind: kinds.Kind) -> None:
    for parse in {kind.parser, kinds.resolve(kind.fixture_parse or kind.parse)}:
        accepted = list(inspect.signature(parse).parameters)[1:]
        assert set(kind.params) <= set(accepted), (kind.name, accepted)


def test_names_are_unique_and_look_like_options() -> None:
    names = [k.name for k in KINDS]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*", n) for n in names)
    assert "auto" not in names


@pytest.mark.parametrize("family", kinds.FAMILIES)
def test_auto_order_tries_every_sign_of_the_family_once(family: kinds.Family) -> None:
    ordered = kinds.ordered_signs(family)
    members = [k for k in KINDS if k.family == family]
    assert len(ordered) == sum(len(k.signs) for k in members)
    assert {name for name, _ in ordered} == {k.name for k in members if k.signs}
    assert [f for f, _ in kinds.AUTO_ORDER] == ["captures", "optics", "logs", "jobs", "logs"]


def test_only_ingest_kinds_have_signs_and_logs_what_the_scan_needs() -> None:
    for kind in KINDS:
        if kind.family is None:
            assert not kind.signs and not kind.options, kind.name
        if kind.family == "logs" and kind.reads != "document":
            assert kind.envelope and kind.prefilter, kind.name
        else:
            assert kind.envelope is None and kind.prefilter is None, kind.name
        if kind.comment:
            assert kind.family == "captures"


def test_a_job_kind_names_a_field_of_the_jobs_ingester() -> None:
    fields = {f.name for f in dataclasses.fields(jobs._JobFile)}
    for kind in KINDS:
        if kind.family == "jobs":
            assert kind.records in fields, kind.name
        else:
            assert not kind.records, kind.name


def test_the_families_are_the_ingesters() -> None:
    assert set(get_args(kinds.Family)) == set(kinds.FAMILIES)


def test_an_unknown_or_parser_only_kind_is_refused_with_the_list() -> None:
    for name in ("nope", "opensm-lfts"):
        with pytest.raises(AuditorError, match=r"use one of auto, ibnetdiscover, .*onyx-optics$"):
            plan_ingest([], name)


def test_ingest_help_lists_every_kind_on_a_line_of_its_own() -> None:
    env = dict(os.environ, COLUMNS="80")
    out = subprocess.run([sys.executable, "-m", "auditor", "ingest", "--help"],
                         capture_output=True, text=True, check=True, env=env).stdout
    rows = {line.split()[0]: line for line in out.splitlines()
            if line.strip() and line.split()[0] in kinds.names()}
    assert list(rows) == list(kinds.names())
    for name, line in rows.items():
        assert kinds.kind(name).help in line
        assert len(line) <= 80, line
    assert "except dmesg" in out
