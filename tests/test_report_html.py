"""The HTML report: self-contained, escaped, empty states, and a real Chromium that renders it,
screenshots it and prints it to PDF."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.report.document import OpticsTrace, Replacement, Report, Timeline, TimelineFlap
from auditor.report.html import render_html
from auditor.safe_text import NAME_MAX, TEXT_MAX
from tests.conftest import need

EVIL = '<script>alert("x")</script>leaf$07$'
SINCE = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)
UNTIL = SINCE + timedelta(hours=24)


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _at(hours: float, seconds: float = 0) -> str:
    return _iso(SINCE + timedelta(hours=hours, seconds=seconds))


def _loc(rack: str, u: str) -> dict[str, Any]:
    return {"site": "fra1", "row": "B", "rack": rack, "u": u}


def sample_report() -> Report:
    """What auditor/report/build.py builds for a morning with three bad cables, a rebooted switch and
    one cable already swapped."""
    replacements: list[Replacement] = [
        {"priority": 1, "verdict": "cable", "score": 0.97,
         "action": "Replace the cable leaf03 IB1/17 <-> spine02 IB1/5; clean both optics first.",
         "a": {"name": "leaf03", "guid": "0x03", "port": 17, "label": "IB1/17", **_loc("B07", "38")},
         "b": {"name": "spine02", "guid": "0x102", "port": 5, "label": "IB1/5", **_loc("B01", "40")},
         "part": {"vendor": "Mellanox", "part_number": "MFS1S00-H010V",
                  "serial_number": "MT2147FT01234", "length": "10 m"},
         "first_flap": _at(2, 13), "last_flap": _at(21, 2), "jobs_failed": 3,
         "gpu_hours_lost": 412.5,
         "evidence": ["9 flap(s), 4 longer than 7 s, 311 s down in all (first "
                      "2026-11-29 08:00:13, seen by syslog, ufm)",
                      "3 failed job(s) (4242, 4250, 4311), 412 GPU-hours lost",
                      "leaf03 port 17: 18442 symbol errors, 12 link-error recoveries, 0 "
                      "receive errors in 24.0 h (threshold 120/h)"],
         "ticket": ""},
        {"priority": 2, "verdict": "transceiver", "score": 0.81,
         "action": "Clean, then replace the transceiver at gpu-node-07 mlx5_0 port 1 "
                   "(the sending end).",
         "a": {"name": "gpu-node-07", "guid": "0x207", "port": 1, "label": "mlx5_0 port 1", **_loc("B07", "12")},
         "b": {"name": "leaf03", "guid": "0x03", "port": 7, "label": "IB1/7", **_loc("B07", "38")},
         "part": {"vendor": "NVIDIA", "part_number": "MMA1T00-HS", "serial_number":
                  "MT2203FT00077", "length": None},
         "first_flap": None, "last_flap": None, "jobs_failed": 0, "gpu_hours_lost": 0.0,
         "evidence": ["gpu-node-07 port 1: 9120 symbol errors in 24.0 h (threshold 120/h)",
                      "symbol errors grew in several successive snapshots"],
         "ticket": ""},
        {"priority": 3, "verdict": "switch", "score": 0.63,
         "action": f"Check {EVIL}: 28 ports went down within 4 s (reboot or power).",
         "a": {"name": EVIL, "guid": "sw-evil", "port": None, "label": "", **_loc("B02", "40")},
         "b": None,
         "part": {"vendor": None, "part_number": None, "serial_number": None, "length": None},
         "first_flap": _at(15), "last_flap": _at(15, 4), "jobs_failed": 1,
         "gpu_hours_lost": 96.0,
         "evidence": [f"{EVIL}: 28 of 32 cabled ports down within 4 s"],
         "ticket": ""},
        {"priority": 4, "verdict": "cable", "score": 0.41,
         "action": "Reseat leaf05 IB1/3 <-> gpu-node-19 mlx5_1 port 1 and watch.",
         "a": {"name": "leaf05", "guid": "0x05", "port": 3, "label": "IB1/3", "site": None, "row": None,
               "rack": None, "u": None},
         "b": {"name": "gpu-node-19", "guid": "0x219", "port": 1, "label": "mlx5_1 port 1", "site": None,
               "row": None, "rack": None, "u": None},
         "part": {"vendor": None, "part_number": None, "serial_number": None, "length": None},
         "first_flap": _at(22, 30), "last_flap": _at(22, 30), "jobs_failed": 0,
         "gpu_hours_lost": 0.0, "evidence": ["1 flap(s), 1 longer than 7 s, still down"],
         "ticket": ""},
    ]
    flaps1: list[TimelineFlap] = [{"down_at": _at(h, 13), "up_at": _at(h, 13 + d)}
        for h, d in ((2, 3), (2.5, 41), (7, 9), (9.2, 2), (13, 120), (13.1, 8),
                     (18, 30), (20.5, 60))]
    flaps1.append({"down_at": _at(21, 2), "up_at": None})  # still down at the window end
    timelines: dict[str, Timeline] = {
        "1": {"flaps": flaps1, "jobs": [{"job_id": "4242", "died_at": _at(2.5, 60)},
                                        {"job_id": "4250", "died_at": _at(13, 150)},
                                        {"job_id": "4311", "died_at": _at(20.5, 90)}]},
        "2": {"flaps": [], "jobs": []},
        "3": {"flaps": [{"down_at": _at(15), "up_at": _at(15, 190)}],
              "jobs": [{"job_id": "4301", "died_at": _at(15, 40)}]},
        "4": {"flaps": [{"down_at": _at(22, 30), "up_at": None}], "jobs": []},
    }

    def tier_nodes(names: list[str], kind: str, tier: int) -> list[dict[str, Any]]:
        return [{"id": n, "name": n, "kind": kind, "tier": tier} for n in names]

    spines = [f"spine{i:02d}" for i in range(1, 5)]
    hosts3 = [f"gpu-node-{i:02d}" for i in range(1, 9)]
    neighbourhoods = {
        "1": {"nodes": tier_nodes(spines, "switch", 0) + tier_nodes(["leaf03", "leaf04"],
                                                                    "switch", 1)
              + tier_nodes(hosts3, "hca", 2),
              "edges": [{"a": "leaf03", "b": s, "label": f"IB1/{17 + i}",
                         "suspect": False} for i, s in enumerate(spines) if s != "spine02"]
              + [{"a": "leaf04", "b": "spine02", "label": "IB1/18", "suspect": False}]
              + [{"a": "leaf03", "b": h, "label": f"IB1/{i + 1}", "suspect": False}
                 for i, h in enumerate(hosts3)]
              + [{"a": "leaf03", "b": "spine02", "label": "IB1/17 - IB1/5", "suspect": True}]},
        "2": {"nodes": tier_nodes(["leaf03"], "switch", 1) + tier_nodes(["gpu-node-07"],
                                                                       "hca", 2),
              "edges": [{"a": "leaf03", "b": "gpu-node-07", "label": "IB1/7 - mlx5_0 p1",
                         "suspect": True}]},
        "3": {"nodes": [{"id": "sw-evil", "name": EVIL, "kind": "switch", "tier": 0},
                        *tier_nodes([f"leaf{i:02d}" for i in range(1, 31)], "switch", 1)],
              "edges": [{"a": "sw-evil", "b": f"leaf{i:02d}", "label": "", "suspect": False}
                        for i in range(1, 31)]},
        # "4" left out on purpose: a missing neighbourhood renders a placeholder.
    }
    bins = [_iso(SINCE + timedelta(hours=h)) for h in range(24)]
    counts1 = [0] * 24
    for h in (2, 2, 7, 9, 13, 13, 18, 20, 21):
        counts1[h] += 1
    heatmap = {"bins": bins, "rows": [
        {"switch": "leaf03", "counts": counts1},
        {"switch": "spine02", "counts": counts1},
        {"switch": EVIL, "counts": [28 if h == 9 else 0 for h in range(24)]},
        {"switch": "leaf05", "counts": [1 if h == 16 else 0 for h in range(24)]},
        {"switch": "leaf01", "counts": [0] * 24},  # no flaps: not a row of the heatmap
    ]}
    tracking = [
        {"ticket": "DCOPS-1182", "link": "leaf02 IB1/9 <-> gpu-node-03 mlx5_0 port 1",
         "part": "MFS1S00-H005V S/N MT2140FT00912", "recorded_at": _iso(SINCE - timedelta(days=3)),
         "status": "verified", "reason": "no flap in 72 h after the swap", "flaps_since": 0},
        {"ticket": "DCOPS-1190", "link": "leaf06 IB1/21 <-> spine01 IB1/12",
         "part": "MFS1S00-H010V S/N MT2147FT04444", "recorded_at": _iso(SINCE - timedelta(hours=20)),
         "status": "escalated", "reason": "4 flap(s) on the same port(s) since the swap (last "
         "2026-11-29 05:12): replace the transceivers at both ends next, then suspect the "
         "switch port"},
        {"ticket": "DCOPS-1193", "link": "leaf01 IB1/2 <-> gpu-node-01 mlx5_0 port 1",
         "part": "MMA1T00-HS S/N MT2203FT00001", "recorded_at": _iso(SINCE - timedelta(hours=6)),
         "status": "watching", "reason": "swapped 30 h ago, quiet so far", "flaps_since": 0},
    ]
    return {
        "title": "Fabric audit fra1-pod2",
        "generated_at": _iso(UNTIL + timedelta(minutes=3)),
        "window": {"since": _iso(SINCE), "until": _iso(UNTIL)},
        "coverage": {"switches_ok": 46, "switches_total": 48, "hosts_ok": 510,
                     "hosts_total": 512,
                     "failed_devices": [{"device": "leaf11", "collector": "ssh",
                                         "status": "timeout", "detail": "no answer in 30 s"},
                                        {"device": "leaf12", "collector": "snmp",
                                         "status": "auth_failed", "detail": "wrong community"}],
                     "blind_spots": ["switch syslog missing from leaf<13>&co: their peers "
                                     "logged link changes they did not"]},
        "summary": {"switches": 48, "hcas": 512, "links": 1280, "flaps": 47, "suspects": 4,
                    "jobs_failed": 9, "jobs_network": 4, "gpu_hours_lost": 508.5},
        "replacements": replacements,
        # The page is drawn from the replacement rows; the suspects are for automation.
        "suspects": [{"rank": r["priority"], "component": r["verdict"], "score": r["score"],
                      "ends": [{"name": e["name"], "guid": e["guid"], "port": e["port"],
                                "label": e["label"]} for e in (r["a"], r["b"]) if e],
                      "flaps": len(timelines[str(r["priority"])]["flaps"]), "downtime_s": 0.0,
                      "jobs_failed": r["jobs_failed"], "gpu_hours_lost": r["gpu_hours_lost"],
                      "evidence": r["evidence"], "action": r["action"],
                      "first_at": r["first_flap"], "last_at": r["last_flap"]}
                     for r in replacements],
        "timelines": timelines,
        "neighbourhoods": neighbourhoods,
        "heatmap": heatmap,
        "tracking": tracking,
        "outcomes": None,
    }


# Plots the sample must produce: a timeline for #1 and #3 and #4 (#2 has no flaps), a
# neighbourhood for #1, #2 and #3 (#4 has none), and the heatmap.
SAMPLE_SVGS = 3 + 3 + 1


@pytest.fixture(scope="module")
def sample_html() -> str:
    return render_html(sample_report())


def test_self_contained(sample_html: str) -> None:
    assert sample_html.startswith("<!DOCTYPE html>")
    # No attribute may fetch anything: src/href are local anchors (the plots are SVG
    # elements, the heatmap's cells too: no embedded image).
    refs = re.findall(r"""\b(?:src|href|xlink:href|action|poster)\s*=\s*["']([^"']*)""",
                      sample_html)
    remote = [r for r in refs if not r.startswith("#")]
    assert refs and not remote, remote
    assert not re.search(r"url\(\s*['\"]?(?!#)", sample_html)
    assert "@import" not in sample_html and "@font-face" not in sample_html
    assert "<link" not in sample_html and "<script" not in sample_html
    assert "<img" not in sample_html and "<?xml" not in sample_html
    assert "<!DOCTYPE svg" not in sample_html


def test_every_plot_is_inline_svg_with_unique_ids(sample_html: str) -> None:
    assert sample_html.count("<svg ") == SAMPLE_SVGS
    assert all('width="100%"' in tag for tag in re.findall(r"<svg [^>]*>", sample_html))
    ids = re.findall(r'\sid="([^"]+)"', sample_html)
    assert len(ids) == len(set(ids)), "duplicate ids across inline SVGs"
    # Every internal reference points at an id of this document.
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', sample_html))
    assert refs <= set(ids), refs - set(ids)


def test_escaping(sample_html: str) -> None:
    assert "<script>" not in sample_html
    assert "&lt;script&gt;alert(" in sample_html
    # Quotes escaped too (attribute-safe), in the plots' text as well (outside comments).
    assert 'alert("x")' not in re.sub(r"<!--.*?-->", "", sample_html, flags=re.DOTALL)
    assert "-->" not in "".join(re.findall(r"<!--(.*?)-->", sample_html, flags=re.DOTALL))


def test_sections_and_content(sample_html: str) -> None:
    assert "Audited 46/48 switches, 510/512 hosts" in sample_html
    assert "What this report could not see" in sample_html
    assert "switch syslog missing from leaf&lt;13&gt;&amp;co: their peers" in sample_html
    assert sample_html.count('class="suspect-row"') == 4
    assert 'id="suspect-1"' in sample_html and 'id="suspect-4"' in sample_html
    for text in ("IB1/17", "spine02", "MT2147FT01234", "PN MFS1S00-H010V", "fra1 / row B / "
                 "rack B07 / U38", "2026-11-29 08:00:13", "DCOPS-1190",
                 '<span class="badge s-escalated">escalated</span>', "No neighbourhood data.",
                 "leaf11",
                 "No flaps or job failures recorded", "GPU-hours lost", "508.5"):
        assert text in sample_html, text
    assert '<td class="time"><span class="nw">2026-11-29</span> <span class="nw">08:00:13</span>' \
        in sample_html
    # The ticket column is left empty for the technician to fill in.
    assert sample_html.count('<td class="ticket"></td>') == 4
    # Job ids are labelled on the timeline, as text.
    assert re.search(r"<text [^>]*>4242</text>", sample_html)


def test_print_css(sample_html: str) -> None:
    print_css = sample_html[sample_html.index("@media print"):]
    assert "@page { size: A4 landscape" in sample_html
    assert "page-break-inside: avoid" in print_css and "section.suspect" in print_css
    assert "header.top { background: #fff" in print_css


def test_top_n_limits_cards() -> None:
    out = render_html(sample_report(), top_n=1)
    assert out.count('class="suspect-row"') == 4  # the table lists every suspect
    assert out.count('<section class="suspect') == 1
    assert out.count("<svg ") == 2 + 1  # one timeline, one neighbourhood, the heatmap


def empty_report() -> Report:
    """Nothing ingested in the window and no device audited."""
    return {"title": "Fabric audit", "generated_at": "2026-11-30T06:03:00Z",
            "window": {"since": _iso(SINCE), "until": _iso(UNTIL)},
            "coverage": {"switches_ok": 0, "switches_total": 0, "hosts_ok": 0,
                         "hosts_total": 0, "failed_devices": [], "blind_spots": []},
            "summary": {"switches": 0, "hcas": 0, "links": 0, "flaps": 0, "suspects": 0,
                        "jobs_failed": 0, "jobs_network": 0, "gpu_hours_lost": 0.0},
            "replacements": [], "suspects": [], "timelines": {}, "neighbourhoods": {},
            "heatmap": {"bins": [_iso(SINCE + timedelta(hours=h)) for h in range(24)],
                        "rows": []},
            "tracking": []}


def test_empty_report_renders_cleanly() -> None:
    out = render_html(empty_report())
    assert "No suspects in this window." in out
    assert "No flaps in this window." in out
    assert "No replacements recorded." in out
    assert "Coverage unknown" in out and "<svg" not in out


def test_quiet_window() -> None:
    report = {"title": "Quiet", "generated_at": "2026-11-30T06:03:00Z",
              "window": {"since": "2026-11-29T06:00:00Z", "until": "2026-11-30T06:00:00Z"},
              "coverage": {"switches_ok": 48, "switches_total": 48, "hosts_ok": 0,
                           "hosts_total": 0, "failed_devices": [], "blind_spots": []},
              "summary": {"switches": 48, "hcas": 512, "links": 1280, "flaps": 0,
                          "suspects": 0, "jobs_failed": 0, "jobs_network": 0,
                          "gpu_hours_lost": 0.0},
              "replacements": [], "timelines": {}, "neighbourhoods": {},
              "heatmap": {"bins": ["2026-11-29T06:00:00Z"], "rows": [
                  {"switch": "leaf01", "counts": [0]}]},
              "tracking": []}
    out = render_html(report)
    assert "Audited 48/48 switches" in out and "hosts" not in out.split("Audited")[1][:40]
    assert out.count("No suspects in this window.") == 2
    assert "<svg" not in out


def test_odd_values_the_schema_allows() -> None:
    report = sample_report()
    report["replacements"][1]["evidence"] = []
    report["timelines"]["1"]["flaps"].append({"down_at": _at(-5), "up_at": _at(30)})  # spans it
    report["timelines"]["1"]["jobs"].append({"job_id": "4400", "died_at": None})
    report["neighbourhoods"]["2"]["edges"].append({"a": "nowhere", "b": "leaf03", "label": "",
                                                   "suspect": False})
    report["tracking"][0]["status"] = "lost"
    out = render_html(report)
    assert out.count('class="suspect-row"') == 4 and out.count("<svg ") == SAMPLE_SVGS
    assert "No evidence recorded." in out and '<span class="badge s-other">lost</span>' in out


def test_an_empty_window_has_no_time_axis() -> None:
    report = sample_report()
    report["window"]["until"] = report["window"]["since"]  # --since 0h
    out = render_html(report)
    assert out.count('class="suspect-row"') == 4
    assert out.count("<svg ") == SAMPLE_SVGS - 3  # no timelines; the rest is drawn


def test_deterministic() -> None:
    assert render_html(sample_report()) == render_html(sample_report())


# --- the plots' SVG: well-formed and inert whatever the fabric calls its parts ---------------

SVG_NS = "{http://www.w3.org/2000/svg}"
# What auditor/report/svg.py writes; anything else in a plot would be markup from a name.
SVG_TAGS = {"svg", "defs", "clipPath", "linearGradient", "stop", "rect", "line", "path",
            "circle", "text", "tspan"}
HOSTILE = ['a<b&c"d\'e]]></svg><script>x</script>\x00\x1b[2J\x7f\u202e\ud800',
           "&amp;<!-- -->&#x3c;<![CDATA[y]]>",
           "L" * 10_000 + "<&>"]


def _hostile(i: int) -> str:
    return HOSTILE[i % len(HOSTILE)] + str(i)


def hostile_report() -> Report:
    """The sample with every name, label and job id a plot draws chosen by an attacker, and
    enough jobs and switches that the plots' "not shown" notes appear too."""
    report = sample_report()
    for i, r in enumerate(report["replacements"]):
        r["a"]["name"] = _hostile(i)  # the plots' aria-label
    for i, t in enumerate(report["timelines"].values()):
        t["jobs"] = [{"job_id": _hostile(i + k), "died_at": _at(0.5 + 1.5 * k)}
                     for k in range(14)]  # 14 clusters: 5 left unlabelled
    names: dict[str, str] = {}
    for hood in report["neighbourhoods"].values():
        for n in hood["nodes"]:
            names.setdefault(n["id"], _hostile(len(names)))
        for n in hood["nodes"]:
            n["id"], n["name"] = names[n["id"]], names[n["id"]]
        for e in hood["edges"]:
            e["a"], e["b"], e["label"] = names[e["a"]], names[e["b"]], _hostile(7)
    counts = [1 if h % 3 else 0 for h in range(24)]
    report["heatmap"]["rows"] = [{"switch": _hostile(k), "counts": counts} for k in range(45)]
    return report


def _plots(page: str) -> list[ET.Element]:
    # S314: the document is our own output, and whether it parses is the question (entity
    # expansion could not hide anything: the page has no DTD, so an entity would not parse).
    return [ET.fromstring(s)  # noqa: S314
            for s in re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)]


def test_every_plot_is_well_formed_and_inert_with_hostile_names() -> None:
    page = render_html(hostile_report())
    plots = _plots(page)  # ET.fromstring raises on anything that is not well-formed XML
    assert len(plots) == SAMPLE_SVGS + 1  # #2 has jobs now: a timeline
    drawn = []
    for plot in plots:
        assert plot.tag == f"{SVG_NS}svg"
        assert (plot.get("class"), plot.get("role"), plot.get("width")) == ("plot", "img",
                                                                             "100%")
        assert re.fullmatch(r"max-width: \d+pt", plot.get("style", ""))
        label = plot.get("aria-label", "")
        assert label.isprintable() and 0 < len(label) <= TEXT_MAX
        for el in plot.iter():
            assert el.tag.removeprefix(SVG_NS) in SVG_TAGS, el.tag
            assert not any(a.lower().startswith("on") or "href" in a for a in el.attrib)
            assert all(v.isprintable() for v in el.attrib.values())
            for text in (el.text, el.tail):
                if text and text.strip():
                    assert text.isprintable() and len(text) <= TEXT_MAX, text[:80]
                    drawn.append(text)
    text = "\n".join(drawn)
    # The names are drawn as their characters, controls made visible, long ones cut.
    assert 'a<b&c"d\'e]]></svg><script>x</script>\\x00\\x1b[2J\\x7f\\u202e\\ud800' in text
    assert "&amp;<!-- -->&#x3c;<![CDATA[y]]>" in text
    assert "L" * (NAME_MAX - 1) in text and "L" * (TEXT_MAX + 1) not in page
    assert "<script>" not in page and "\x00" not in page and "\x1b" not in page
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_the_plots_say_what_they_leave_out() -> None:
    texts = ["".join(el.itertext()) for plot in _plots(render_html(hostile_report()))
             for el in plot.iter(f"{SVG_NS}text")]
    assert "5 more job ids not labelled" in texts  # 14 job clusters, 9 labelled
    assert "5 quieter switches not shown" in texts  # 45 switches flapped, 40 rows
    assert "+6 more" in texts  # 30 leaves under the hostile switch, 24 drawn
    # Every timeline's axis: ticks every 3 h from 06:00, the date under a day's first tick.
    assert "06:0029 Nov" in texts and "00:0030 Nov" in texts and "09:00" in texts


# --- real browser ----------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--enable-logging=stderr",
                  "--v=0", "--hide-scrollbars", "--window-size=1400,2000"]


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if ("CONSOLE" in line and "ERROR" in line) or "Uncaught" in line]


@pytest.mark.browser
def test_chromium_renders_and_prints(tmp_path: Path, record_property: Any) -> None:
    chromium = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    need(None if chromium else "Chromium not installed (apt-get install chromium)")
    assert chromium is not None
    page = tmp_path / "report.html"
    page.write_text(render_html(sample_report()), encoding="utf-8")
    url = page.as_uri()
    shot, pdf = tmp_path / "report.png", tmp_path / "report.pdf"
    jobs = {"dom": ["--dump-dom"], "png": [f"--screenshot={shot}"],
            "pdf": [f"--print-to-pdf={pdf}", "--no-pdf-header-footer"]}
    # Three browsers at once, each with its own fresh profile: a third of the wall time.
    procs = {name: subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / ('profile-' + name)}",
         *extra, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, extra in jobs.items()}
    results = {name: p.communicate(timeout=60) for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, (name, results[name][1][-2000:])
        assert not _console_errors(results[name][1]), (name, _console_errors(results[name][1]))

    dom = results["dom"][0]
    assert dom.count('class="suspect-row"') == 4
    assert "MT2147FT01234" in dom and "Audited 46/48 switches" in dom
    assert len(re.findall(r"<svg\b", dom)) == SAMPLE_SVGS
    assert "<script>alert" not in dom
    assert re.findall(r"<img\b", dom) == []  # the plots are inline SVG, nothing to fetch

    record_property("screenshot", str(shot))
    sys.stderr.write(f"report screenshot: {shot}\nreport PDF: {pdf}\n")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page\b", data))
    assert pages > 1 or len(data) > 10_000, (pages, len(data))


@pytest.mark.browser
def test_console_error_check_can_fail(tmp_path: Path) -> None:
    """The console check above would see a script error: proven on a page that has one."""
    chromium = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    need(None if chromium else "Chromium not installed (apt-get install chromium)")
    assert chromium is not None
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><p>x</p><script>undefinedFunction();</script>",
                    encoding="utf-8")
    done = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                           "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=60, check=False)
    assert _console_errors(done.stderr), done.stderr[-2000:]


_NUMBER_ATTRS = ("x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height", "dy",
                 "font-size", "stroke-width")
_NON_FINITE = re.compile(r"(?i)nan|inf")


def _finite_coordinates(plot: ET.Element) -> None:
    vb = [float(v) for v in plot.get("viewBox", "").split()]
    assert len(vb) == 4 and all(math.isfinite(v) for v in vb)
    for el in list(plot.iter())[1:]:  # the <svg> itself: its viewBox, width="100%"
        for name in _NUMBER_ATTRS:
            if name in el.attrib:
                assert math.isfinite(float(el.attrib[name])), (el.tag, name, el.attrib[name])
        for name in ("d", "transform"):
            assert not _NON_FINITE.search(el.attrib.get(name, "")), el.attrib[name]


def test_the_svg_writer_never_writes_a_non_finite_coordinate() -> None:
    """Issue #21: a series holding `inf` once made the trend plot invalid (not drawn). A shape
    with a coordinate that is not a finite number is left out; the rest is drawn."""
    from auditor.report import svg

    c = svg.Canvas("t")
    nan, inf = math.nan, math.inf
    c.line(0.0, 0.0, 10.0, 10.0, stroke="#000000")
    c.line(0.0, inf, 10.0, 10.0, stroke="#000000")
    c.rect(nan, 0.0, 5.0, 5.0, fill="#000000")
    c.circle(1.0, -inf, 1.6, fill="#000000")
    c.segments([(0.0, 0.0, 1.0, 1.0), (0.0, nan, 1.0, 1.0)], stroke="#000000")
    c.text(inf, 0.0, "x", size=8.0)
    c.text(2.0, 2.0, "kept", size=8.0, rotate=nan)
    clipped = c.clip("area", 0.0, 0.0, inf, 10.0)
    c.rect(1.0, 1.0, 2.0, 2.0, clip=clipped, fill="#000000")
    plot = ET.fromstring(c.svg("odd numbers"))  # noqa: S314 - our own output
    _finite_coordinates(plot)
    assert [el.tag.removeprefix(f"{SVG_NS}") for el in plot.iter()][1:] == [
        "defs", "clipPath", "rect", "line", "path", "rect"]
    with pytest.raises(ValueError, match="not a finite coordinate"):
        svg.num(nan)


def test_a_trend_with_non_finite_and_huge_values_is_drawn_from_the_rest() -> None:
    from auditor.report.html import _trend_svg

    days = [f"2026-11-{d:02d}" for d in range(1, 7)]
    values = [1.0, math.inf, math.nan, -math.inf, 1e308, 2.0]
    trace: OpticsTrace = {
        "device": "gpu01", "port_name": "mlx5_0/1", "serial_number": "S", "quantity":
        "temperature_c", "unit": "C", "warning": math.inf, "alarm": math.nan, "lane": None,
        "watched": True, "series": [{"lane": None, "points": list(zip(days, values, strict=True))},
                                    {"lane": 1, "points": [(days[0], math.nan)]}]}
    page = _trend_svg(trace, "t", "gpu01 mlx5_0/1")
    assert page is not None
    plot = ET.fromstring(page)  # noqa: S314 - our own output
    _finite_coordinates(plot)
    assert len(plot.findall(f"{SVG_NS}circle")) == 3  # 1, 1e308 and 2 are numbers
    # Too far apart to scale (the span overflows): nothing non-finite is written either.
    trace["series"] = [{"lane": None, "points": [(days[0], 1e308), (days[1], -1e308)]}]
    _finite_coordinates(ET.fromstring(_trend_svg(trace, "t", "x") or ""))  # noqa: S314
    trace["series"] = [{"lane": None, "points": [(days[0], math.nan)]}]
    assert _trend_svg(trace, "t", "gpu01 mlx5_0/1") is None  # nothing to draw
