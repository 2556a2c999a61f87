"""A web-performance review of the TUI on browser logs (2026-12-04), driven with Textual's pilot.

Outside truth: WebPageTest's HAR of two amazon runs (``hars/webpagetest-amazon.har.gz``: its
``pages``, each entry's ``_load_start`` / ``_ttfb_end``, ms from its page's ``startedDateTime``)
read here with json/gzip; ``wirefall requests --json`` of the same HAR (every packet field null:
no wire); ``analyzer.compare.PAGE_NOTES`` and ``compare()`` for the compare view's text.

- A HAR of several pages opened alone said nowhere in the TUI that it showed one page (the CLI
  notes it, the web app's status line too): run 2 was hidden without a word.
- The request view's "Browser log" section of a HAR opened alone said "ms since the log began";
  its times count from the shown page's start (run 2's HTML: 103 ms, its ``_load_start``, the
  log having begun 20 s before).
- The waterfall legend of a log opened alone said "lower half: browser's view" as if a wire bar
  were above it; there is no packet, every bar is the log's.
- The compare view's page-table caption ran past 160 columns (cut at "background rows and").
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from datetime import datetime

import pytest

from conftest import ROOT, SAMPLES, shared
from tuifix import sync, wait_compare, wait_loaded

textual = pytest.importorskip("textual")

from rich.text import Text  # noqa: E402
from textual.widgets import Static  # noqa: E402

from wirefall.ui.tui.app import TextScreen, WirefallApp  # noqa: E402
from wirefall.ui.tui.widgets import WaterfallView  # noqa: E402

WPT = "hars/webpagetest-amazon.har.gz"


def _epoch(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _har(p) -> dict:
    return json.loads(gzip.decompress(p.read_bytes()))["log"]


def _first_entry(log: dict, page: int) -> dict:
    pid = log["pages"][page - 1]["id"]
    return min((e for e in log["entries"] if e.get("pageref") == pid), key=lambda e: _epoch(e["startedDateTime"]))


def _ms_line(body: str, heading: str, label: str) -> float:
    """The number on the line ``label`` of the section under ``heading`` (its first column)."""
    sec = body.split(heading, 1)[1]
    line = next(x for x in sec.splitlines() if x.strip().startswith(label))
    return float(line.split(label, 1)[1].split("ms")[0].split()[-1])


@sync
async def test_har_page_2_alone_browser_log_counts_from_the_page_start():
    """``wirefall tui webpagetest-amazon.har.gz --har-page 2``, Enter on the HTML: the Browser log
    section counts from the page's start (said so), and its request and response start are the
    entry's ``_load_start`` and ``_ttfb_end`` -- ms from page 2's ``startedDateTime``."""
    p = shared(WPT)
    log = _har(p)
    e = _first_entry(log, 2)
    app = WirefallApp(str(p), [], limits={"har_page": 2})
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=400, settle=0, must_load=True)
        await pilot.press("2")
        await pilot.pause(0.05)
        wv = app.query_one(WaterfallView)
        wv.move_to(0)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, TextScreen)
        body = app.screen.body.plain
    head = next(x for x in body.splitlines() if x.startswith("Browser log ("))
    assert head.endswith("; ms since the page's start)"), head
    assert "the log began" not in body
    assert e["request"]["url"] in body.splitlines()[0]
    assert _ms_line(body, head, "request start") == pytest.approx(e["_load_start"], abs=1)
    assert _ms_line(body, head, "response start") == pytest.approx(e["_ttfb_end"], abs=1)
    # the Timing section (the same page clock) agrees
    assert _ms_line(body, "Timing (ms since the page's start", "response start") == pytest.approx(e["_ttfb_end"], abs=1)
    # page 2 started long after the log began: counted from the log, it would read ~20 s
    assert _epoch(log["pages"][1]["startedDateTime"]) - _epoch(log["pages"][0]["startedDateTime"]) > 10


@sync
async def test_har_of_several_pages_alone_says_which_page_is_shown():
    """The TUI says which page of the HAR it shows and how to see the others, as the CLI does:
    the subtitle "HAR page 1 of 2" (the HAR's own ``pages``) and the CLI's note, notified."""
    p = shared(WPT)
    log = _har(p)
    n = len(log["pages"])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cli = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(p), "--json"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    note = next(x for x in cli.stderr.splitlines() if "HAR has" in x).split("note: ", 1)[1]
    app = WirefallApp(str(p), [])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=400, settle=0.1, must_load=True)
        assert app.sub_title.endswith(f"HAR page 1 of {n}"), app.sub_title
        msgs = [str(x.message) for x in app._notifications]
    assert note in msgs, msgs
    assert f"HAR has {n} pages" in note and log["pages"][1]["title"] in note
    assert len(json.loads(cli.stdout)) == sum(1 for e in log["entries"] if e["pageref"] == log["pages"][0]["id"])


@sync
async def test_har_alone_legend_does_not_claim_a_wire_bar():
    """A HAR alone has no packet (``wirefall requests --json``: every packet field null), so the
    legend does not say "lower half: browser's view" (of a wire bar there is not); laid over a
    capture (pw-h1 with its HAR) it still does."""
    p = shared(WPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(p), "--json"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300).stdout
    reqs = json.loads(out)
    assert reqs and all(r["response_start_packet"] is None and r["request_start_packet"] is None for r in reqs)
    for path, keys, overlays, alone in ((p, [], [], True),
                                        (SAMPLES / "page" / "pw-h1.pcapng", [str(SAMPLES / "page" / "pw-h1.keys")],
                                         [("har", str(SAMPLES / "page" / "pw-h1.har.gz"))], False)):
        app = WirefallApp(str(path), keys, overlays=overlays)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_loaded(pilot, app, steps=400, settle=0, must_load=True)
            await pilot.press("2")
            await pilot.pause(0.1)
            legend = str(app.query_one("#wf-legend", Static).render())
        if alone:
            assert "lower half" not in legend, legend
            assert "bars: the browser log's own times (har; no packets, no wire bar)" in legend, legend
        else:
            assert "lower half: browser's view (har)" in legend, legend


@sync
async def test_compare_page_caption_is_whole_at_160_columns():
    """``wirefall tui pw-h1.pcapng --compare pw-h2.pcapng``: the page table's caption
    (``PAGE_NOTES[0]``, what `wirefall compare` prints) is on screen whole at 160x45, and the
    status line is whole (the match line, how many warnings ``compare()`` gave; the Table tab
    lists each: at 160 columns they ran to 7 lines in a one-line status, cut after the first)."""
    from wirefall.analyzer.compare import PAGE_NOTES
    from wirefall.ui.tui.compare import match_line

    page = SAMPLES / "page"
    app = WirefallApp(str(page / "pw-h1.pcapng"), [str(page / "pw-h1.keys")], compare=str(page / "pw-h2.pcapng"),
                      keylogs_b=[str(page / "pw-h2.keys")])
    async with app.run_test(size=(160, 45)) as pilot:
        scr = await wait_compare(pilot, app, steps=600, settle=0.2)
        assert scr.loaded, scr.error
        cap = next(w for w in scr.query(".cmp-caption") if str(w.render()).startswith("Page ("))
        st = scr.query_one("#cmp-status", Static)
        req = scr.query_one("#cmp-req-caption", Static)
        warnings = " ".join(str(scr.query_one("#cmp-warnings", Static).render()).split())
        for w in (cap, st, req):  # every line of the wrapped text has a row of the widget: none cut off
            lines = Text(str(w.render())).wrap(app.console, w.content_region.width)
            assert len(lines) <= w.content_region.height, (str(w.render()), w.content_region)
        words_cap = " ".join(str(cap.render()).split())
        status = " ".join(str(st.render()).split())
        res = scr.res
    assert words_cap == f"Page ({PAGE_NOTES[0]})"
    assert res is not None and res["warnings"]
    n = len(res["warnings"])
    assert f"⚠ {n} warning{'s' if n != 1 else ''} (the Table tab lists them)" in status, status
    assert status.startswith(match_line(res))
    for w in res["warnings"]:  # each whole under the Table tab
        assert " ".join(w.split()) in warnings


@sync
async def test_har_alone_connections_start_from_the_page_not_1970():
    """The Connections tab of a HAR opened alone: each connection's start in s from the page's
    ``startedDateTime`` (`wirefall summary --json`'s ``start`` less it; the first connection's is
    WebPageTest's ``_connect_start``, 56 ms) -- it read 1774569362.550, s since 1970 -- and its
    packets and bytes "–" (the HAR has none: `summary --json` ``packets`` 0), never 0/0."""
    from textual.widgets import DataTable

    p = shared(WPT)
    log = _har(p)
    page0 = _epoch(log["pages"][0]["startedDateTime"])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    summ = json.loads(subprocess.run([sys.executable, "-m", "wirefall", "summary", str(p), "--json"], capture_output=True,
                                     text=True, env=env, cwd=ROOT, timeout=300).stdout)
    assert summ["packets"] == 0
    app = WirefallApp(str(p), [])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=400, settle=0, must_load=True)
        await pilot.press("3")
        await pilot.pause(0.1)
        dt = app.query_one("#connections", DataTable)
        cols = [str(c.label) for c in dt.ordered_columns]
        rows = [[str(x) for x in dt.get_row_at(i)] for i in range(dt.row_count)]
    assert len(rows) == len(summ["connections"])
    by_id = {str(c["id"]): c for c in summ["connections"]}
    for r in rows:
        c = by_id[r[cols.index("id")]]
        assert float(r[cols.index("start")]) == pytest.approx(c["start"] - page0, abs=0.0006), (r, c)
        assert r[cols.index("packets c/s")] == "–" and r[cols.index("bytes c/s")] == "–"
    first = _first_entry(log, 1)
    assert float(rows[0][cols.index("start")]) == pytest.approx(first["_connect_start"] / 1000, abs=0.0006)


@sync
async def test_compare_har_side_says_no_packets_as_the_cli_does():
    """``wirefall tui pw-h1.har.gz --compare pw-h2.pcapng``: A's title line says what `wirefall
    compare` says of it ("a browser log (har), no packets"), not "0 packets" (an empty capture's
    words); B's says its packets (`wirefall summary --json`)."""
    page = SAMPLES / "page"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cli = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(page / "pw-h1.har.gz"), str(page / "pw-h2.pcapng"),
                          "--keylog-b", str(page / "pw-h2.keys")], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300).stdout
    a_line = next(x for x in cli.splitlines() if x.startswith("A: "))
    assert "a browser log (har), no packets" in a_line
    summ = json.loads(subprocess.run([sys.executable, "-m", "wirefall", "summary", str(page / "pw-h2.pcapng"), "--keylog",
                                      str(page / "pw-h2.keys"), "--json"], capture_output=True, text=True, env=env, cwd=ROOT,
                                     timeout=300).stdout)
    app = WirefallApp(str(page / "pw-h1.har.gz"), [], compare=str(page / "pw-h2.pcapng"), keylogs_b=[str(page / "pw-h2.keys")])
    async with app.run_test(size=(160, 45)) as pilot:
        scr = await wait_compare(pilot, app, steps=600, settle=0.1)
        assert scr.loaded, scr.error
        title = str(scr.query_one("#cmp-title", Static).render()).splitlines()
    assert title[0].endswith("(http/1.1, a browser log (har), no packets)"), title
    assert "0 packets" not in title[0]
    assert title[1].endswith(f"(h2, {summ['packets']:,} packets)"), title


@sync
async def test_har_alone_follow_and_frames_say_no_packets():
    """F (Follow) on a HAR's request, and the request view's frames: a HAR has no packets
    (`wirefall summary --json`: 0; `requests --json`: every packet field null), so no frame was
    decoded for that reason -- not "not decrypted, or a protocol wirefall does not decode" --,
    the title does not count "0 frames in 0 packets; client 0 B" of a response the HAR sized
    (``_bytesIn`` 2007), and the body's note is whole at 160 columns."""
    from wirefall.ui.tui.app import FollowScreen
    from wirefall.ui.tui.request_view import NO_FRAMES, NO_FRAMES_LOG
    from wirefall.ui.tui.widgets import TextList

    p = shared(WPT)
    first = _first_entry(_har(p), 1)
    assert first["_bytesIn"] > 0
    app = WirefallApp(str(p), [])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=400, settle=0, must_load=True)
        assert app.an.packets == 0
        await pilot.press("2")
        await pilot.pause(0.05)
        app.query_one(WaterfallView).move_to(0)
        await pilot.press("enter")
        await pilot.pause(0.1)
        body = app.screen.body.plain
        await pilot.press("escape")
        await pilot.pause(0.05)
        await pilot.press("F")
        await pilot.pause(0.2)
        scr = app.screen
        assert isinstance(scr, FollowScreen)
        title = scr.title_text
        lines = [it[0] for it in scr.items]
        width = scr.query_one(TextList).content_region.width
    frames = body.split("\nFrames of this stream (0)\n", 1)[1]
    assert frames.splitlines()[0] == NO_FRAMES_LOG and NO_FRAMES not in body
    assert "a browser log opened alone, no packets" in title and "0 B" not in title and "0 frames" not in title, title
    assert lines[0] == NO_FRAMES_LOG, lines
    note = next(x for x in lines if "response body of GET " + first["request"]["url"] in x)
    assert note.rstrip().endswith("(a browser log holds no bodies)") and len(note.rstrip()) <= width, (note, width)
