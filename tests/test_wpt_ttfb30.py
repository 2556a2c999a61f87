"""`stats`' WebPageTest TTFB (``webpagetest_ttfb``) against WebPageTest's own result of the
amazon load (its JSON: ``TTFB`` and the requests' ``load_start``/``ttfb_ms``/``responseCode``).

Before: `stats` gave only the page's first response byte (the 202 challenge page: 123.8 ms on
the wire, 144 ms in WebPageTest's run), and a WebPageTest user read it beside WebPageTest's
TTFB of 355 ms — which is its first 200 or 304 response (wptagent: the first request, in
order, with responseCode 200 or 304 and no certificate-check content type) — without a word
that the two are different moments."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from conftest import ROOT, shared

HAR = shared("hars/webpagetest-amazon.har.gz")
WPT_JSON = shared("hars/webpagetest-amazon.json.gz")
CAP = shared("pageload-amazon/amazon1.cap.gz")
KEYS = shared("pageload-amazon/amazon1.key_log.txt.gz")

pytestmark = pytest.mark.skipif(not HAR.exists() or not WPT_JSON.exists(), reason="third-party captures not present")


def _run1() -> dict:
    d = json.loads(gzip.decompress(WPT_JSON.read_bytes()))
    return d.get("data", d)["runs"]["1"]["firstView"]


def _wpt_ttfb_request(run: dict) -> dict:
    """WebPageTest's rule, from its own requests list: the first (by load_start) 200/304 response."""
    reqs = sorted(run["requests"], key=lambda r: r["load_start"])
    return next(r for r in reqs if r.get("responseCode") in (200, 304) and r.get("ttfb_ms", -1) >= 0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", "stats", *args], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def _requests(*args: str) -> dict[int, dict]:
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", "requests", *args, "--json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    return {r["id"]: r for r in json.loads(p.stdout)}


def test_webpagetests_har_gives_webpagetests_own_ttfb():
    """Its own HAR opened alone: the very number WebPageTest reports (355 ms), and its request."""
    run = _run1()
    st = json.loads(_cli(str(HAR), "--json").stdout)
    w = st["webpagetest_ttfb"]
    assert round(w["ttfb"] * 1000) == run["TTFB"] == 355
    truth = _wpt_ttfb_request(run)
    assert round(truth["load_start"] + truth["ttfb_ms"]) == run["TTFB"]  # (the rule reproduces WebPageTest's number)
    assert _requests(str(HAR))[w["exchange"]]["url"] == truth["full_url"]
    # the page's first response byte is another moment: the 202 challenge page's
    assert round(st["capture"]["ttfb"] * 1000) == run["requests"][0]["ttfb_end"] == 144 and run["requests"][0]["responseCode"] == 202
    # and the text says whose clock the 355 ms is on: the browser log's, not a wire's
    text = _cli(str(HAR)).stdout
    assert f"request {w['exchange']} — 355.0 ms in the browser log)" in text and "on the wire" not in text.split("\n\n", 1)[0]


@pytest.mark.skipif(not CAP.exists(), reason="third-party capture not present")
def test_the_capture_of_that_load_names_the_same_request():
    """The wire of the same load: the same request (challenge.js), its first response byte on
    the wire; the text says both moments and which request."""
    run = _run1()
    truth = _wpt_ttfb_request(run)
    st = json.loads(_cli(str(CAP), "--keylog", str(KEYS), "--json").stdout)
    w = st["webpagetest_ttfb"]
    reqs = _requests(str(CAP), "--keylog", str(KEYS))
    e = reqs[w["exchange"]]
    assert e["url"] == truth["full_url"] and e["status"] == 200
    # every page request that started before it answered something other than 200/304, or nothing
    earlier = [r for r in reqs.values() if r["request_start"] is not None and r["request_start"] < e["request_start"]]
    assert earlier and all(r["status"] not in (200, 304) for r in earlier)
    # both from the page's first packet: they lie as far apart as the two responses' first bytes
    first = min(r["response_start"] for r in reqs.values() if r["response_start"] is not None)
    assert w["ttfb"] - st["capture"]["ttfb"] == pytest.approx(e["response_start"] - first, abs=1e-6) and w["ttfb"] > st["capture"]["ttfb"]
    text = _cli(str(CAP), "--keylog", str(KEYS)).stdout
    line = " ".join(text.split("\n\n", 1)[0].split())
    assert f"by WebPageTest's rule — its first 200 or 304 response, request {w['exchange']} — {w['ttfb'] * 1000:.1f} ms on the wire" in line
    assert f"TTFB {st['capture']['ttfb'] * 1000:.1f} ms (first response byte;" in line


def test_no_second_ttfb_where_the_first_response_is_a_200():
    """A page whose first response is a 200: one TTFB, the same moment, said once."""
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.stats import compute, page_line

    cap = ROOT / "sample_captures" / "page" / "page-h2.pcapng"
    keys = cap.with_suffix(".keys")
    st = compute(analyze(str(cap), [str(keys)] if keys.exists() else None))
    assert st.webpagetest_ttfb is not None and st.webpagetest_ttfb[0] == st.capture.ttfb
    assert "WebPageTest" not in page_line(st)


def test_web_statistics_summary_shows_both_ttfbs():
    """The web app's Statistics summary: the page's TTFB and, below it, WebPageTest's, with its request."""
    pytest.importorskip("dash")
    from wirefall.ui.web import views
    from wirefall.ui.web.state import WebState

    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(HAR), [], name=HAR.name)
        st.wait(e.id, 60)
        assert e.status == "done", e.error
        rows = [(str(k), str(v)) for k, v in views.stats_summary(e)]
        labels = [k for k, _ in rows]
        i = next(i for i, k in enumerate(labels) if k.startswith("TTFB (first response byte"))
        truth = _wpt_ttfb_request(_run1())
        w = next(k for k in labels if k.startswith("TTFB by WebPageTest's rule"))
        assert labels.index(w) == i + 1 and rows[i][1] == "144.0 ms" and rows[i + 1][1] == "355.0 ms"
        n = int(w.rsplit("request ", 1)[1].rstrip(")"))
        assert _requests(str(HAR))[n]["url"] == truth["full_url"]
    finally:
        st.close()
