"""A browser log's requests that never reached the network, laid over a capture (or opened
alone), told as what they were in the request views and in the HAR.

Before: over amazon's capture the request view of the NetLog's disk-cache favicon.ico and its
refused POST checkin said "(no packets: a browser log opened alone …)" although the capture was
open, and its body and frames sections blamed the capture ("not decrypted, or lost by the
capture"); the HAR wrote the cache hit's ``response.bodySize`` as 17,542 where HAR 1.2 says 0.

Outside truth: the NetLog itself read with json — which URL_REQUEST read Chrome's HTTP cache
(``HTTP_CACHE_READ_*``) and sent nothing, the bytes its job read
(``URL_REQUEST_JOB_FILTERED_BYTES_READ``), the net error its REQUEST_ALIVE ended with, named
from the log's own ``constants.netError`` —; HAR 1.2's rule for ``response.bodySize`` ("Set to
0 in case of responses coming from the cache", ``content.size`` the content's length) and
Chrome DevTools' HAR writer for a cache hit (``_fromCache``, ``_transferSize`` 0, no
``content.compression``); the TUI through Textual's pilot, the web detail through its callback.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, shared
from netlog_truth import netlog_unsent

from wirefall.analyzer.model import not_sent_of

CLI = [sys.executable, "-m", "wirefall"]
ENV = dict(os.environ, LC_ALL="C", PYTHONIOENCODING="utf-8", PYTHONPATH=str(ROOT))
# what blamed the capture, or a missing capture, for a request that never reached the network
WRONG = ("opened alone", "not decrypted", "lost by the capture", "no decoded frames", "lay it over", "on the wire,",
         "wire 0")


def _run(*args) -> str:
    p = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


@pytest.fixture(scope="module")
def amazon():
    from wirefall.analyzer.browserlog import open_any, overlay
    from wirefall.analyzer.pipeline import analyze

    d = shared("pageload-amazon")
    cap, keys, nl = d / "amazon1.cap.gz", d / "amazon1.key_log.txt.gz", d / "amazon1_netlog.json.gz"
    truth = netlog_unsent(nl)
    # the NetLog's own two: favicon.ico read from the disk cache, the checkin POST refused
    assert sorted((t["method"], t["url"].rsplit("/", 1)[-1], t["cache"], t["error"]) for t in truth.values()) == [
        ("GET", "favicon.ico", True, None), ("POST", "checkin", False, "ERR_CONNECTION_REFUSED")]
    over = analyze(str(cap), keylogs=[str(keys)])
    overlay(over, str(nl))
    alone = open_any(str(nl))
    return dict(cap=cap, keys=keys, nl=nl, truth=truth, over=over, alone=alone)


def _rows(an) -> dict[str, object]:
    """NetLog source id -> the exchange of its request that never reached the network."""
    return {x.browser["id"]: x for x in an.exchanges if not_sent_of(x.browser)}


def _check_view(text: str, t: dict) -> None:
    """The request view's text of the not-sent request ``t`` (the NetLog's own facts)."""
    assert "never reached the network" in text
    for bad in WRONG:
        assert bad not in text, (bad, text)
    assert "no frames: the request never reached the network" in text
    if t["cache"]:
        assert "served from the browser's disk cache" in text
        assert f"{t['body']} body bytes read" in text and f"{t['body']} read from the browser's disk cache" in text
        assert "Response body (body not available: served from the browser's disk cache, never on the network" in text
    else:
        assert f"failed before sending ({t['error']})" in text
        assert f"error: {t['error']}" in text
        assert "no response" in text


@pytest.mark.parametrize("which", ["over", "alone"])
def test_the_request_view_says_it_never_reached_the_network(amazon, which):
    """``wirefall requests CAP --netlog F --detail N`` (and of F alone): what the NetLog says of
    each — the disk cache and the bytes it read, the net error's name — and nothing that blames
    the capture or its absence."""
    from wirefall.analyzer.request_detail import request_detail
    from wirefall.ui.tui.request_view import detail_text

    an = amazon[which]
    rows = _rows(an)
    assert set(rows) == set(amazon["truth"])
    for sid, t in amazon["truth"].items():
        text = detail_text(request_detail(an, rows[sid])).plain
        _check_view(text, t)
        head = text.split("\n", 3)[1]
        assert "(none: never on the network)" in head and "? → ?" not in head
        if which == "over":  # the times are the log's, on the capture's clock: said so
            assert "the browser log's times on the capture's clock" in text


def test_the_cli_detail_of_the_overlaid_rows(amazon):
    """The same through the command line, as the brief's example runs it (rows 16 and 17)."""
    over = json.loads(_run("requests", amazon["cap"], "--keylog", amazon["keys"], "--netlog", amazon["nl"], "--json"))
    ids = {r["browser"]["id"]: r["id"] for r in over if r["browser"] and r["browser"].get("not_sent")}
    assert sorted(ids.values()) == [16, 17]
    for sid, t in amazon["truth"].items():
        _check_view(_run("requests", amazon["cap"], "--keylog", amazon["keys"], "--netlog", amazon["nl"], "--detail", ids[sid]), t)


def test_its_body_is_not_looked_for_in_the_capture(amazon, monkeypatch):
    """The body of a request that never reached the network is not searched for in the capture
    laid under it (two passes over it found nothing and blamed decryption or loss)."""
    from wirefall.analyzer import objects
    from wirefall.analyzer.body import body_views

    def no(*a, **k):
        raise AssertionError("the capture was read again for a request that never reached the network")

    monkeypatch.setattr(objects, "_collect_pass", no)
    an = amazon["over"]
    for sid, x in _rows(an).items():
        v = body_views(an, [(x, 1)])[(x.id, 1)]
        assert v.kind == "unavailable" and ("never on the network" in v.error or "never reached the network" in v.error), v.error
        assert "not decrypted" not in v.error and "lost" not in v.error
        if amazon["truth"][sid]["cache"]:
            assert "disk cache" in v.error
        else:
            assert v.error.startswith("no response") and amazon["truth"][sid]["error"] in v.error


def test_tui_request_view_of_the_rows(amazon):
    """The TUI (Textual's pilot): the Waterfall tab, each not-sent row selected, Enter — over
    the capture and of the log alone."""
    from tuifix import wait_loaded
    from wirefall.ui.tui.app import TextScreen, WirefallApp
    from wirefall.ui.tui.widgets import WaterfallView

    got: dict[tuple[str, str], str] = {}

    async def run(which, app):
        async with app.run_test(size=(200, 60)) as pilot:
            await wait_loaded(pilot, app, steps=600, settle=0, must_load=True)
            await pilot.press("2")
            await pilot.pause(0.05)
            wv = app.query_one(WaterfallView)
            for i, r in enumerate(wv.rows):
                x = app.exchange(r.exchange)
                if not not_sent_of(x.browser):
                    continue
                wv.move_to(i)
                await pilot.press("enter")
                await pilot.pause(0.1)
                assert isinstance(app.screen, TextScreen)
                got[(which, x.browser["id"])] = app.screen.body.plain
                await pilot.press("escape")
                await pilot.pause(0.05)

    asyncio.run(run("over", WirefallApp(str(amazon["cap"]), [str(amazon["keys"])], overlays=[("netlog", str(amazon["nl"]))])))
    asyncio.run(run("alone", WirefallApp(str(amazon["nl"]), [])))
    assert set(got) == {(w, sid) for w in ("over", "alone") for sid in amazon["truth"]}
    for (_which, sid), text in got.items():
        _check_view(text, amazon["truth"][sid])
        assert "(no wire times in any capture: the request never reached the network" in text


def test_web_request_detail_of_the_rows(amazon):
    """The web request detail (ui.web.views.request_detail, the callback's components)."""
    from test_browserlog_ui import _dash_tables
    from wirefall.ui.web import WebState, views

    def hints(c, out: dict) -> dict:
        ch = getattr(c, "children", None)
        if getattr(c, "id", None) in ("detail-not-sent", "detail-no-frames", "detail-browser-note"):
            out[c.id] = ch
        for y in ch if isinstance(ch, (list, tuple)) else [ch] if ch is not None and not isinstance(ch, str) else []:
            hints(y, out)
        return out

    st = WebState(use_cache=False)
    try:
        for which, args in (("over", (str(amazon["cap"]), [str(amazon["keys"])], [("netlog", str(amazon["nl"]), "amazon1_netlog.json.gz")])),
                            ("alone", (str(amazon["nl"]), [], []))):
            e = st.add_file(args[0], args[1], name=which, overlays=args[2])
            st.wait(e.id)
            assert e.status == "done", e.error
            rows = _rows(e.analysis)
            assert set(rows) == set(amazon["truth"])
            for sid, t in amazon["truth"].items():
                comp = views.request_detail(e, rows[sid].id)
                facts = dict((r[0], r[1]) for r in _dash_tables(comp, {})["detail-facts"])
                h = hints(comp, {})
                assert h["detail-not-sent"].startswith("never reached the network")
                assert h["detail-no-frames"] == "No frames: the request never reached the network."
                assert "never reached the network" in h["detail-browser-note"] and "opened alone" not in h["detail-browser-note"]
                assert facts["on the wire"] == "none: the request never reached the network"
                assert "request headers" not in facts and "bytes on the wire" not in facts["response body"]
                assert facts["connection"].endswith("(none: never on the network)")
                if t["cache"]:
                    assert facts["response body"] == f"{t['body']} bytes read from the browser's disk cache (the log's count)"
                    assert f"{t['body']} body bytes read" in h["detail-not-sent"]
                else:
                    assert facts["response body"] == "none: no response, the request failed before sending"
                    assert facts["error"] == t["error"] and f"({t['error']})" in h["detail-not-sent"]
    finally:
        st.close()


def test_har_cache_hit_body_size_is_zero_and_reads_back(amazon, tmp_path):
    """HAR 1.2: ``response.bodySize`` 0 for a response from the cache, ``content.size`` its
    length (the NetLog's bytes read), as Chrome's DevTools writes it (``_fromCache``,
    ``_transferSize`` 0, no ``compression``) — over the capture and of the log alone; read
    back, the HAR's row is the NetLog's: the cache hit with its response and its size."""
    over, alone = tmp_path / "over.har", tmp_path / "alone.har"
    _run("export", amazon["cap"], "--keylog", amazon["keys"], "--netlog", amazon["nl"], "-o", over)
    _run("export", amazon["nl"], "-o", alone)
    (sid, fav), = ((s, t) for s, t in amazon["truth"].items() if t["cache"])
    for p in (over, alone):
        h = json.loads(p.read_text())
        en = next(x for x in h["log"]["entries"] if x["request"]["url"] == fav["url"] and x.get("_not_sent"))
        assert en["_fromCache"] == "disk" and en["_not_sent"] == "disk cache"
        assert en["response"]["bodySize"] == 0  # (before: 17542)
        assert en["response"]["content"]["size"] == fav["body"]
        assert en["response"]["_transferSize"] == 0 and "compression" not in en["response"]["content"]
        failed = next(x for x in h["log"]["entries"] if x.get("_not_sent") == "failed")
        assert failed["response"]["bodySize"] == -1 and "_transferSize" not in failed["response"]  # (no response: unknown)
    solo = {r["browser"]["id"]: r for r in json.loads(_run("requests", amazon["nl"], "--json")) if r["browser"].get("not_sent")}
    back = [r for r in json.loads(_run("requests", alone, "--json")) if r["browser"].get("not_sent")]
    row = next(r for r in back if r["url"] == fav["url"])
    want = solo[sid]
    assert row["browser"]["not_sent"] == "disk cache" and row["browser"]["cache"] == "disk"
    assert row["response_body_decoded_bytes"] == fav["body"] == want["response_body_decoded_bytes"]
    assert row["response_body_bytes"] == want["response_body_bytes"]
    for k in ("request_start", "response_start", "response_end"):  # (the response read from the cache is kept)
        assert row[k] == pytest.approx(want[k], abs=2e-6), k
    assert row["phases"]["total"] == pytest.approx(want["phases"]["total"], abs=2e-6)
    summ = json.loads(_run("summary", alone, "--json"))["browser"]["logs"][0]
    assert summ["not_sent_reasons"] == {"cache": 1, "failed": 1}


def test_a_chrome_cache_hit_with_body_size_zero(tmp_path):
    """A HAR entry as Chrome's DevTools writes a cache hit (bodySize 0, _transferSize 0,
    _fromCache) reads as the cache hit with its content's size, answered — not as an empty body."""
    entry = {"startedDateTime": "2026-12-01T10:00:00.000Z", "time": 1.0, "_fromCache": "memory",
             "request": {"method": "GET", "url": "https://a.test/logo.png", "httpVersion": "h2", "headers": [], "queryString": [],
                         "cookies": [], "headersSize": -1, "bodySize": 0},
             "response": {"status": 200, "statusText": "", "httpVersion": "h2", "headers": [], "cookies": [], "redirectURL": "",
                          "content": {"size": 4321, "mimeType": "image/png"}, "headersSize": -1, "bodySize": 0, "_transferSize": 0},
             "cache": {}, "timings": {"blocked": 0.2, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0.3, "receive": 0.5}}
    p = tmp_path / "c.har"
    p.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"}, "entries": [entry]}}))
    (r,) = json.loads(_run("requests", p, "--json"))
    assert r["browser"]["not_sent"] == "memory cache" and r["status"] == 200
    assert r["response_body_decoded_bytes"] == 4321 == r["response_body_bytes"]  # (before: 0, an empty body)
    assert r["response_start"] is not None and r["response_end"] is not None


def test_the_record_past_the_listed_ones(amazon):
    """A row past the summary's first 50 listed (``not_sent_requests``) reads from its own label
    and error the same reason, cache and net error as the log's record."""
    from wirefall.analyzer.browserlog import open_any
    from wirefall.analyzer.request_detail import not_sent_record

    an = open_any(str(amazon["nl"]))
    listed = {x.browser["id"]: not_sent_record(an, x) for x in _rows(an).values()}
    an.browser["logs"][0]["not_sent_requests"] = []
    for sid, x in _rows(an).items():
        ns, t = not_sent_record(an, x), amazon["truth"][sid]
        assert (ns.reason, ns.cache, ns.net_error_name) == (listed[sid].reason, listed[sid].cache, listed[sid].net_error_name)
        assert (ns.reason, ns.cache, ns.net_error_name) == (("cache", "disk", None) if t["cache"] else ("failed", None, t["error"]))


def test_follow_title_of_a_request_that_never_reached_the_network():
    """The TUI's Follow view of amazon's disk-cache favicon laid over the capture said "0 frames
    in 0 packets … ? → ?" (a stream the capture lost); it never reached the network."""
    from wirefall.analyzer.browserlog import overlay
    from wirefall.analyzer.model import no_network_connections
    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.tui.app import follow_frames, follow_title

    base = shared("pageload-amazon")
    an = analyze(str(base / "amazon1.cap.gz"), [str(base / "amazon1.key_log.txt.gz")])
    overlay(an, str(base / "amazon1_netlog.json.gz"))
    fav = next(e for e in an.exchanges if not_sent_of(e.browser) and e.url.endswith("/favicon.ico"))
    assert fav.connection in no_network_connections(an)
    frs = follow_frames(an, fav.connection, fav.stream_id, fav, False)
    title = follow_title(an, fav.connection, fav.stream_id, fav, frs, False)
    assert frs == [] and "never reached the network" in title and "?" not in title
    wire = next(e for e in an.exchanges if not not_sent_of(e.browser) and e.url.endswith("/favicon.ico"))
    assert "never reached" not in follow_title(an, wire.connection, wire.stream_id, wire,
                                               follow_frames(an, wire.connection, wire.stream_id, wire, False), False)
