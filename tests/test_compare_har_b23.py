"""compare lays a browser log over B too (--har-b, --netlog-b, --qlog-b).

A user comparing two page loads, each captured with its browser's HAR (WebPageTest's runs,
Playwright's), could lay a HAR over A only: B's load event row stayed empty and the note told
them to compare A against B's HAR instead, losing B's packets.  Outside truth: each HAR's own
``pageTimings`` (onContentLoad, onLoad: ms from its page's start, read here with ``json``), and
``wirefall stats --har`` of each capture alone (which places them on the capture's clock).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES

PAGE = SAMPLES / "page"


def _run(*args: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def _timings(name: str) -> dict:
    return json.loads(gzip.decompress((PAGE / f"{name}.har.gz").read_bytes()))["log"]["pages"][0]["pageTimings"]


def test_har_b_lays_bs_log_over_b():
    a, b = PAGE / "pw-h1.pcapng", PAGE / "pw-h2.pcapng"
    r = _run("compare", str(a), str(b), "--keylog", str(PAGE / "pw-h1.keys"), "--keylog-b", str(PAGE / "pw-h2.keys"),
             "--har", str(PAGE / "pw-h1.har.gz"), "--har-b", str(PAGE / "pw-h2.har.gz"), "--json")
    page = json.loads(r.stdout)["page"]
    assert "laid over A only" not in r.stderr
    for side, name in (("a", "pw-h1"), ("b", "pw-h2")):
        st = json.loads(_run("stats", str(PAGE / f"{name}.pcapng"), "--keylog", str(PAGE / f"{name}.keys"),
                             "--har", str(PAGE / f"{name}.har.gz"), "--json").stdout)
        ev = st["browser_events"]
        assert page["load_event"][side] == pytest.approx(ev["load_event"], abs=1e-6)
        assert page["dom_content_loaded"][side] == pytest.approx(ev["dom_content_loaded"], abs=1e-6)
        pt = _timings(name)  # the HAR's own: the gap between its two events
        assert page["load_event"][side] - page["dom_content_loaded"][side] == pytest.approx(
            (pt["onLoad"] - pt["onContentLoad"]) / 1000, abs=0.0015)
    assert page["load_event"]["diff"] == pytest.approx(page["load_event"]["b"] - page["load_event"]["a"], abs=1e-9)
    # the text table's row has both sides
    text = _run("compare", str(a), str(b), "--keylog", str(PAGE / "pw-h1.keys"), "--keylog-b", str(PAGE / "pw-h2.keys"),
                "--har", str(PAGE / "pw-h1.har.gz"), "--har-b", str(PAGE / "pw-h2.har.gz")).stdout
    row = next(ln for ln in text.splitlines() if ln.startswith("browser load event, onload (s)"))
    assert f"{page['load_event']['a']:.3f}" in row and f"{page['load_event']['b']:.3f}" in row


def test_har_over_a_alone_still_says_b_has_none():
    a, b = PAGE / "pw-h1.pcapng", PAGE / "pw-h2.pcapng"
    r = _run("compare", str(a), str(b), "--keylog", str(PAGE / "pw-h1.keys"), "--keylog-b", str(PAGE / "pw-h2.keys"),
             "--har", str(PAGE / "pw-h1.har.gz"), "--json")
    page = json.loads(r.stdout)["page"]
    assert page["load_event"]["a"] is not None and page["load_event"]["b"] is None
    assert "laid over A only" in r.stderr and "--har-b" in r.stderr


def test_compare_image_draws_each_sides_browser_events():
    """The side-by-side image drew one line per page, labelled "page load" at its last response
    byte: now "last byte" there and, where a log gives them, the browser's DOMContentLoaded
    and load event, each at the table's figure, each label inside its side's plot."""
    from wirefall.analyzer.browserlog import overlay
    from wirefall.analyzer.compare import compare
    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.compare_figure import compare_figure

    a = analyze(str(PAGE / "pw-h1.pcapng"), keylogs=[str(PAGE / "pw-h1.keys")])
    b = analyze(str(PAGE / "pw-h2.pcapng"), keylogs=[str(PAGE / "pw-h2.keys")])
    overlay(a, str(PAGE / "pw-h1.har.gz"))
    overlay(b, str(PAGE / "pw-h2.har.gz"))
    res = compare(a, b)
    fig = compare_figure(a, b, res)
    notes = {(n.xref, n.text.rsplit(" ", 2)[0]): n for n in fig.layout.annotations if n.text.endswith(" ms")}
    lines = {(sh.xref, round(sh.x0, 6)) for sh in fig.layout.shapes}
    for side, xref in (("a", "x"), ("b", "x2")):
        for key, label in (("page_load_time", "last byte"), ("dom_content_loaded", "DOMContentLoaded"), ("load_event", "load event")):
            x = res["page"][key][side] * 1000.0
            n = notes[(xref, label)]
            assert n.x == pytest.approx(x) and n.text == f"{label} {x:.0f} ms"
            assert (xref, round(x, 6)) in lines
            lo, hi = fig.layout["xaxis" if xref == "x" else "xaxis2"].range
            assert lo <= x <= hi
    assert not any(n.text.startswith("page load ") for n in fig.layout.annotations)


def test_stats_with_a_netlog_does_not_send_the_user_to_a_netlog_for_the_load_event():
    """With the NetLog of the load laid over, stats said the load event was missing and that
    "a browser log gives it: --har, --netlog" — a NetLog has no page events (Chrome's NetLog
    is the network stack's; its event types name no DOMContentLoaded or load).  Checked
    against the NetLog itself: no event type of its constants names a page load event."""
    log = json.loads(gzip.decompress((PAGE / "pw-h1.netlog.json.gz").read_bytes()))
    types = {str(k).lower() for k in log["constants"]["logEventTypes"]}
    assert not any("domcontent" in t or "onload" in t or t.endswith("load_event") for t in types)
    args = ("stats", str(PAGE / "pw-h1.pcapng"), "--keylog", str(PAGE / "pw-h1.keys"), "--netlog", str(PAGE / "pw-h1.netlog.json.gz"))
    st = json.loads(_run(*args, "--json").stdout)
    assert st["browser_events"] is None
    text = _run(*args).stdout
    page = " ".join(ln.strip() for ln in text.split("\n\n", 1)[0].splitlines()[1:])
    assert "not the browser's load event (a HAR of the load gives it: --har; a NetLog or a qlog has no page events)" in page
    assert "--netlog)" not in page
