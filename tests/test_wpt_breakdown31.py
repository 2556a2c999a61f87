"""Review 31, findings 6 and 9, against WebPageTest's own result of the amazon load (its JSON,
run 1 = the capture's load; run 2 another).

6. `stats`' content table said "as WebPageTest's breakdown" but counted favicon.ico as an
   image: 3 requests / 34,557 bytes where WebPageTest's breakdown says 2 / 17,015.  Its rule
   (www/breakdown.inc, getBreakdownForStep): a request whose URL holds "favicon.ico" is left
   out; the class is its ContentType() (www/contentColors.inc).  Now `content` follows both, and
   ``content_left_out`` counts what it leaves out.
9. `stats --har` printed "the browser's Start Render (HAR) 67.2 ms" while the page's first
   response byte is at 123.8 ms (WebPageTest's own JSON: render 100 < TTFB 355): an event
   before the first byte is now marked ``before_first_response_byte`` and said unchecked."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT, shared

HAR = shared("hars/webpagetest-amazon.har.gz")
WPT_JSON = shared("hars/webpagetest-amazon.json.gz")
CAP = shared("pageload-amazon/amazon1.cap.gz")
KEYS = shared("pageload-amazon/amazon1.key_log.txt.gz")

pytestmark = pytest.mark.skipif(not (HAR.exists() and WPT_JSON.exists() and CAP.exists()), reason="third-party captures not present")

WPT_NAMES = {"js": "script"}  # WebPageTest's class names -> wirefall's


def _run(n: str) -> dict:
    d = json.loads(gzip.decompress(WPT_JSON.read_bytes()))
    return d.get("data", d)["runs"][n]["firstView"]


def _stats(*args: str, text: bool = False):
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", "stats", *args, *([] if text else ["--json"])],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout if text else json.loads(p.stdout)


@pytest.fixture(scope="module")
def wire() -> dict:
    return _stats(str(CAP), "--keylog", str(KEYS), "--har", str(HAR))


def test_the_capture_breakdown_is_webpagetests_class_by_class(wire):
    """Every class of WebPageTest's breakdown of run 1 (the classes with no request too): requests,
    bytes and uncompressed bytes, one by one."""
    wpt = _run("1")
    content = wire["content"]
    for cls, v in wpt["breakdown"].items():
        got = content.get(WPT_NAMES.get(cls, cls), {"requests": 0, "body_bytes": 0, "decoded_bytes": 0})
        assert got["requests"] == v["requests"], cls
        assert got["body_bytes"] == v["bytes"], cls
        assert got["decoded_bytes"] == v["bytesUncompressed"], cls
    assert set(content) <= {WPT_NAMES.get(k, k) for k in wpt["breakdown"]}
    # image: 2 / 17,015 (the sprite and the 1x1 gif), where the favicon made it 3 / 34,557
    assert content["image"] == {"requests": 2, "body_bytes": 17015, "decoded_bytes": 17015}
    # what is left out is WebPageTest's favicon.ico request, and with it the classes add up to its run
    fav = [r for r in wpt["requests"] if "favicon.ico" in r["url"].lower()]
    assert len(fav) == 1
    assert wire["content_left_out"] == {"favicon": {"requests": 1, "body_bytes": fav[0]["bytesIn"],
                                                    "decoded_bytes": fav[0]["objectSizeUncompressed"]}}
    every = [*content.values(), *wire["content_left_out"].values()]
    assert sum(v["requests"] for v in every) == wpt["requestsFull"] == 15
    assert sum(v["body_bytes"] for v in every) == wpt["bytesIn"] == 573908


@pytest.mark.parametrize("run", ["1", "2"])
def test_the_rules_give_webpagetests_breakdown_from_its_own_requests(run):
    """wirefall's class and favicon rules applied to WebPageTest's own request list (its
    contentType, url, bytesIn, objectSizeUncompressed) give the breakdown WebPageTest computed
    from it, for both runs (run 2 is a load the capture does not hold)."""
    from wirefall.analyzer.stats import content_breakdown

    wpt = _run(run)
    exs = [SimpleNamespace(url=r.get("full_url") or r["url"], content_type=r.get("contentType"), response_body_bytes=r["bytesIn"],
                           response_body_decoded_bytes=r.get("objectSizeUncompressed") or None) for r in wpt["requests"]]
    content, left = content_breakdown(exs)
    truth = {WPT_NAMES.get(k, k): [v["requests"], v["bytes"], v["bytesUncompressed"]] for k, v in wpt["breakdown"].items() if v["requests"]}
    assert content == truth
    assert left and set(left) == {"favicon"}


def test_webpagetests_content_type_rules():
    """ContentType() of www/contentColors.inc and breakdown.inc's favicon rule, case by case
    (those the waterfall's own colour classes read otherwise)."""
    from wirefall.analyzer.stats import wpt_content_class, wpt_left_out

    cases = [
        ("text/jscript", None, "script"), ("application/x-javascript", None, "script"), ("text/css; charset=utf-8", None, "css"),
        ("TEXT/HTML", None, "html"), ("application/xhtml+xml", None, "other"), ("image/svg+xml", None, "image"),
        ("application/x-shockwave-flash", None, "flash"), ("application/font-woff2", None, "font"),
        ("application/vnd.apple.mpegurl", "https://a/v.m3u8", "other"), ("video/mp4", None, "video"),
        # no MIME type (or one that names no class): the path's extension, WebPageTest's list only
        ("", "https://a/x.js?v=1", "script"), ("application/octet-stream", "https://a/p.jpg", "image"),
        ("", "https://a/logo.svg", "other"), ("", "https://a/f.ico", "other"), ("", "https://a/s.css", "other"),
        ("", "https://a/f.woff2", "font"), ("", "https://a/x.JPG", "image"), ("", "https://a/x.jpeg", "other"),
        ("", "https://a.js/", "other"), (None, None, "other"),
    ]
    for ct, url, want in cases:
        assert wpt_content_class(ct, url) == want, (ct, url)
    for url, want in [("https://www.amazon.com/favicon.ico", "favicon"), ("https://a/FAVICON.ICO?v=2", "favicon"),
                      ("https://a/static/favicon.ico.png", "favicon"), ("https://favicon.ico.example/x.png", None),
                      ("https://a/icon.png", None), (None, None)]:
        assert wpt_left_out(url) == want, url


def test_the_text_says_what_is_left_out(wire):
    out = _stats(str(CAP), "--keylog", str(KEYS), text=True)
    head, table = out.split("Content (the page's requests by type", 1)[1].split("\n\n", 1)[0].split("\n", 1)
    assert "as WebPageTest's breakdown" in head
    assert "favicon.ico left out, as WebPageTest does: 1 request, 17,542 bytes" in head
    rows = {ln.split()[0]: ln.split()[1:] for ln in table.splitlines()[2:]}
    assert rows["image"] == ["2", "17,015", "17,015"]


# ------------------------------------------------------------------ finding 9


def test_a_browser_event_before_the_first_byte_is_marked(wire):
    """WebPageTest's own run says its render (100 ms) came before its TTFB (355 ms): a start
    render before the first response byte.  On the wire's clock the same holds (67.2 ms against
    123.8 ms); the load event (WebPageTest: 2701 ms, after its TTFB) is not marked."""
    wpt = _run("1")
    assert wpt["render"] < wpt["TTFB"] and wpt["loadTime"] > wpt["TTFB"]
    ev, ttfb = wire["browser_events"], wire["capture"]["ttfb"]
    assert ev["start_render"] < ttfb < ev["load_event"]
    assert wire["browser_event_notes"] == {k: "before_first_response_byte" for k, t in ev.items() if t < ttfb} \
        == {"start_render": "before_first_response_byte"}
    out = _stats(str(CAP), "--keylog", str(KEYS), "--har", str(HAR), text=True)
    page = " ".join(out.split("\n\n", 2)[1].split()) if out.startswith("HAR ") else " ".join(out.split("\n\n", 1)[0].split())
    assert "Start Render (HAR) 67.2 ms (before the page's first response byte: the browser's value, not checked)" in page
    assert "Load event (HAR) 2668.2 ms" in page and "2668.2 ms (before" not in page


def test_no_browser_log_no_notes():
    s = _stats(str(CAP), "--keylog", str(KEYS))
    assert s["browser_events"] is None and s["browser_event_notes"] is None
