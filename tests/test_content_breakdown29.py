"""`stats`' content breakdown (the page's requests by type, as WebPageTest's "Content
Breakdown") and a WebPageTest HAR's decoded body sizes, against WebPageTest's own result of
the same load (its JSON's ``breakdown``: requests, bytes, bytesUncompressed per class).

Before: `stats` had no breakdown by type (the web app drew one from its own loop), and a
WebPageTest HAR's decoded sizes were its ``content.size`` — which WebPageTest writes as the bytes
transferred — so its HTML read 3,833 bytes decoded where WebPageTest says 7,077, and the
compression saved 0 % where WebPageTest's numbers say 64 %."""
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

WPT_CLASS = {"js": "script"}  # WebPageTest's class names -> wirefall's (analyzer.stats.CONTENT_CLASSES)


def _wpt(run: str = "1"):
    d = json.loads(gzip.decompress(WPT_JSON.read_bytes()))
    d = d.get("data", d)
    return d["runs"][run]["firstView"]


def _truth() -> dict[str, dict[str, int]]:
    """WebPageTest's breakdown of run 1 (the HAR's page 1), the classes with requests, by wirefall's names."""
    return {WPT_CLASS.get(k, k): {"requests": v["requests"], "body_bytes": v["bytes"], "decoded_bytes": v["bytesUncompressed"]}
            for k, v in _wpt()["breakdown"].items() if v["requests"]}


def _favicons() -> list[dict]:
    """The favicon.ico requests in WebPageTest's own requests list — which its breakdown leaves out."""
    return [r for r in _wpt()["requests"] if r["url"].split("?", 1)[0].endswith("/favicon.ico")]


def _stats(*args: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", "stats", *args, "--json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _left_out_truth() -> dict:
    """The favicon.ico WebPageTest's breakdown leaves out (www/breakdown.inc), from its requests list
    (review 31: `content` leaves it out too, and ``content_left_out`` counts it)."""
    fav = _favicons()
    return {"favicon": {"requests": len(fav), "body_bytes": sum(r["objectSize"] for r in fav),
                        "decoded_bytes": sum(r.get("objectSizeUncompressed", r["objectSize"]) for r in fav)}}


def test_stats_of_webpagetests_har_equal_its_own_breakdown():
    s = _stats(str(HAR))
    content = s["content"]
    truth = _truth()
    assert len(_favicons()) == 1  # (the one named difference)
    assert content == truth
    assert s["content_left_out"] == _left_out_truth()
    # the decoded sizes are WebPageTest's _objectSizeUncompressed, not content.size: the script
    # class alone 515,570 bytes transferred, 1,381,902 decoded
    assert content["script"]["decoded_bytes"] == truth["script"]["decoded_bytes"] != content["script"]["body_bytes"]
    assert list(content) == [k for k in ("html", "script", "css", "image", "flash", "font", "video", "other") if k in content]


@pytest.mark.skipif(not CAP.exists(), reason="third-party capture not present")
def test_stats_of_the_capture_of_that_load_equal_webpagetests_breakdown():
    """The amazon capture, decrypted (its response bodies add up to the very 573,908 bytes
    WebPageTest's run reports as bytesIn): the wire's bodies, Content-Encoding undone by
    wirefall, give WebPageTest's breakdown too."""
    s = _stats(str(CAP), "--keylog", str(KEYS))
    assert s["content"] == _truth()
    assert s["content_left_out"] == _left_out_truth()


def test_stats_text_shows_the_breakdown():
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", "stats", str(HAR)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    head, section = p.stdout.split("Content (the page's requests by type", 1)[1].split("\n\n", 1)[0].split("\n", 1)
    got = {ln.split()[0]: [int(x.replace(",", "")) for x in ln.split()[1:]] for ln in section.splitlines()[2:]}
    assert got == {k: [v["requests"], v["body_bytes"], v["decoded_bytes"]] for k, v in _truth().items()}
    fav = _left_out_truth()["favicon"]
    assert f"favicon.ico left out, as WebPageTest does: 1 request, {fav['body_bytes']:,} bytes" in head


def test_web_content_chart_is_the_stats_breakdown():
    pytest.importorskip("dash")
    from wirefall.ui.web import views
    from wirefall.ui.web.state import WebState

    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(HAR), [], name=HAR.name)
        st.wait(e.id, 60)
        assert e.status == "done", e.error
        cb = views.content_bytes(e)
        assert {k: {"requests": v[0], "body_bytes": v[1], "decoded_bytes": v[2]} for k, v in cb.items()} == _truth()
        fig = views.bytes_by_content_figure(e)
        assert [int(y) for y in fig.data[1].y] == [cb[k][2] for k in cb]
    finally:
        st.close()
