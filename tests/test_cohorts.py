"""Cohorts (issue #15): the binomial tail against its definition, and a bad lot found among the
parts a real store knows, the broader part number explained by it, a small lot not flagged on
too few incidents."""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.analyse.cohorts import binomial_tail, cohorts
from auditor.analyse.outcomes import Episode, Outcomes
from auditor.config import OutcomesSettings
from auditor.store import Store

SINCE = datetime(2026, 9, 1)  # noqa: DTZ001 - the store's naive UTC
UNTIL = SINCE + timedelta(days=30)


def exact_tail(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


@pytest.mark.parametrize("n", [1, 5, 20, 60])
@pytest.mark.parametrize("p", [0.01, 0.1, 0.5, 0.9])
def test_binomial_tail_is_the_sum_of_the_probabilities(n: int, p: float) -> None:
    for k in range(n + 2):
        assert binomial_tail(k, n, p) == pytest.approx(exact_tail(k, n, p), rel=1e-9, abs=1e-300)


def test_binomial_tail_edges() -> None:
    assert binomial_tail(0, 10, 0.3) == 1.0
    assert binomial_tail(11, 10, 0.3) == 0.0
    assert binomial_tail(1, 10, 0.0) == 0.0 and binomial_tail(10, 10, 1.0) == 1.0
    # large n stays finite and falls with k
    tails = [binomial_tail(k, 5000, 0.01) for k in (40, 60, 90)]
    assert tails[0] > tails[1] > tails[2] > 0.0


# part number -> lot -> (parts, of which had an incident)
FLEET = {
    "MFS1S00-H010V": {"LOT-2333A": (20, 10), "LOT-2341C": (60, 3)},
    "MCP1650-H002E30": {"LOT-2345A": (120, 4), "LOT-2345B": (3, 2)},
}


def _fleet(store: Store) -> list[Episode]:
    """Parts on made-up ports (the cohorts need no fabric), and a suspect on each part that
    had an incident; one of them known only from a swap outside any suspect."""
    episodes = []
    n = 0
    seen = SINCE - timedelta(days=1)
    with store.transaction():
        for part_number, lots in FLEET.items():
            for lot, (parts, hit) in lots.items():
                rows = []
                for i in range(parts):
                    n += 1
                    guid = f"0x{n:016x}"
                    rows.append({"port_name": "IB1/1", "guid": guid, "port": 1,
                                 "present": True, "vendor": "NVIDIA",
                                 "part_number": part_number, "serial_number": f"SN{n:05d}",
                                 "length": None, "cable_type": None, "revision": None,
                                 "lot": lot})
                    if i >= hit:
                        continue
                    if lot == "LOT-2341C" and i == 0:
                        store.add_replacement("T-1", "cable", SINCE + timedelta(days=3),
                                              (guid, 1, f"sw{n}"), None, [])
                        continue
                    first = SINCE + timedelta(days=1 + i % 20)
                    episodes.append(Episode(((guid, 1),), "cable", [], first, first, first,
                                            first, rules={"flaps"}))
                for row in rows:
                    store.add_transceivers(seen, row["guid"], [row])
    return episodes


def test_a_bad_lot_is_one_finding(tmp_path: Path) -> None:
    with Store(tmp_path / "c.duckdb") as store:
        episodes = _fleet(store)
        # a suspect on NCCL votes alone is not an incident of its part
        episodes.append(Episode((("0x" + "f" * 16, 1),), "cable", [], SINCE, SINCE, SINCE,
                                SINCE, rules={"votes"}))
        out = Outcomes(SINCE, UNTIL, 30, 16, episodes, 0, OutcomesSettings(), 7.0, SINCE)
        found = cohorts(store, out)
    groups = {(g["field"], g["value"]): g for g in found.groups}
    total = sum(parts for lots in FLEET.values() for parts, _ in lots.values())
    hit = sum(h for lots in FLEET.values() for _, h in lots.values())
    assert (found.parts, found.with_incident, found.incidents) == (total, hit, hit)
    bad = groups[("lot", "LOT-2333A")]
    parts, bad_hit = FLEET["MFS1S00-H010V"]["LOT-2333A"]
    rest_hit, rest_parts = hit - bad_hit, total - parts
    assert bad["flagged"] and bad["explained_by"] is None
    assert bad["rest_share"] == pytest.approx(rest_hit / rest_parts, abs=1e-4)
    tests = len(groups)  # every cohort was tested (each field has two values or more)
    assert bad["p_value"] == pytest.approx(binomial_tail(bad_hit, parts, rest_hit / rest_parts),
                                           rel=1e-2)
    assert bad["p_value"] * tests < OutcomesSettings().cohort_alpha
    assert bad["mtbi_days"] == pytest.approx(parts * 30 / bad_hit, abs=0.1)
    # The part number is flagged too, but only because of that lot.
    broad = groups[("part_number", "MFS1S00-H010V")]
    assert broad["flagged"] and broad["explained_by"] == "lot LOT-2333A"
    # Two of three is a high share, but too few parts had an incident to say anything.
    small = groups[("lot", "LOT-2345B")]
    assert small["share"] > bad["share"] and not small["flagged"]
    assert [g["value"] for g in found.findings] == ["LOT-2333A"]
    assert bad["finding"] is not None and bad["finding"].startswith(
        f"{bad_hit} of {parts} MFS1S00-H010V from lot LOT-2333A had an incident")


def test_no_finding_without_a_difference(tmp_path: Path) -> None:
    with Store(tmp_path / "c.duckdb") as store:
        with store.transaction():
            for n in range(100):
                store.add_transceivers(SINCE, f"sw{n}", [{
                    "port_name": "IB1/1", "guid": f"0x{n:016x}", "port": 1, "present": True,
                    "vendor": "NVIDIA", "part_number": "MFS1S00-H010V",
                    "serial_number": f"SN{n}", "length": None, "cable_type": None,
                    "revision": None, "lot": "LOT-A" if n % 2 else "LOT-B"}])
        episodes = [Episode(((f"0x{n:016x}", 1),), "cable", [], SINCE, SINCE, SINCE, SINCE,
                            rules={"flaps"}) for n in range(20)]  # 10 in each lot
        out = Outcomes(SINCE, UNTIL, 30, 16, episodes, 0, OutcomesSettings(), 7.0, SINCE)
        found = cohorts(store, out)
    assert found.findings == []
    assert {g["value"]: g["with_incident"] for g in found.groups} == {"LOT-A": 10, "LOT-B": 10}



def _counted_in_python(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """cohort_counts' rows from cohort_parts' as the cohorts counted them before issue #25:
    Counters over the columns, a value's most common part number a tie to the first seen."""
    out: list[tuple[Any, ...]] = []
    idents, part_number, vendor, firmware, lot, incidents = map(list, zip(*rows, strict=True))
    for dim, values in (("part_number", part_number), ("vendor", vendor),
                        ("firmware", firmware), ("lot", lot)):
        count = Counter(v for v in values if v is not None)
        top: dict[str, tuple[int, str]] = {}
        for (v, number), n in Counter(zip(values, part_number, strict=True)).items():
            if v is not None and number is not None and (v not in top or n > top[v][0]):
                top[v] = (n, number)
        for value, n in count.items():
            mine = [i for i, v in enumerate(values) if v == value and incidents[i]]
            out.append((dim, value, n, len(mine), sum(incidents[i] for i in mine),
                        top[value][1] if value in top else None))
    out.append(("", None, len(idents), sum(1 for n in incidents if n), sum(incidents), None))
    return out


def test_the_counts_in_sql_are_the_parts_counted(tmp_path: Path) -> None:
    """cohort_counts.sql against cohort_parts.sql's parts counted in Python: lots whose part
    numbers tie (the first part's wins), values not known, a cable's two ends one part, parts
    with several incidents."""
    numbers = ["MFS1S00-H010V", "MCP1650-H002E30", "", "MMA4Z00-NS"]
    wanted: dict[tuple[str, int], int] = {}
    with Store(tmp_path / "c.duckdb") as store, store.transaction():
        for n in range(90):
            guid = f"0x{n:016x}"
            serial = f"SN{n // 2 if n >= 80 else n:05d}"  # the last ten: five cables' two ends
            store.add_transceivers(SINCE, f"sw{n % 7}", [{
                "port_name": f"IB1/{n}", "guid": guid, "port": 1, "present": n % 11 != 5,
                "vendor": None if n % 13 == 0 else ("NVIDIA" if n % 3 else "Acme"),
                "part_number": numbers[(n * 7 + n // 10) % 4], "serial_number": serial,
                "length": None, "cable_type": None, "revision": None,
                "lot": None if n % 17 == 0 else f"LOT-{n % 6}"}])
            if n % 4 == 1:
                wanted[(guid, 1)] = 1 + n % 3
        parts = store.cohort_parts(wanted)
        counted = store.cohort_counts(wanted)
    assert len(parts) > 40 and any(n for *_, n in parts)
    assert sorted(counted, key=repr) == sorted(_counted_in_python(parts), key=repr)
    per_lot: dict[str, Counter[str]] = {}
    for _, number, _, _, lot, _ in parts:
        if lot is not None and number is not None:
            per_lot.setdefault(lot, Counter())[number] += 1
    assert any(len(c) > 1 and c.most_common(2)[0][1] == c.most_common(2)[1][1]
               for c in per_lot.values())  # a tie for the most common part number
