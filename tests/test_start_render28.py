"""WebPageTest's Start Render — the green line of its waterfall, ``pageTimings._startRender``
(else the page's ``_render``) in its HAR — is a milestone of the waterfall as DOMContentLoaded
and the load event are: the browser-log reader ignored it (reviewer, session 28).  Truth: the
HAR's own page object, read here with json; and the exported HAR reads it back."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

from conftest import ROOT, shared

from wirefall.analyzer.browserlog import open_any
from wirefall.analyzer.waterfall import build

WPT = "hars/webpagetest-amazon.har.gz"


def test_wpt_start_render_is_a_milestone_and_survives_the_har_export(tmp_path):
    src = shared(WPT)
    page = json.load(gzip.open(src))["log"]["pages"][0]
    want = page["pageTimings"]["_startRender"] / 1000
    assert want == page["_render"] / 1000 == 0.1
    an = open_any(str(src))
    wf = build(an)
    m = wf.milestone("start_render")
    assert m is not None and m.label == "Start Render (HAR)" and m.packet is None
    assert abs((m.time - wf.page_start) - want) < 0.0015
    # the DOMContentLoaded / load lines beside it are still the HAR's own (onContentLoad -1: none)
    assert wf.milestone("dom_content_loaded") is None
    assert abs(wf.milestone("load_event").time - wf.page_start - page["pageTimings"]["onLoad"] / 1000) < 0.0015
    out = tmp_path / "out.har"
    subprocess.run([sys.executable, "-m", "wirefall", "export", str(src), "--format", "har", "-o", str(out)],
                   check=True, cwd=ROOT, capture_output=True, timeout=300)
    pt = json.loads(out.read_text())["log"]["pages"][0]["pageTimings"]
    assert abs(pt["_startRender"] - page["pageTimings"]["_startRender"]) < 1.5
    again = build(open_any(str(out))).milestone("start_render")
    assert again is not None and abs(again.time - m.time) < 0.0015
