"""Two things a person does with the web page (session 30), in headless Chromium (Playwright):

1. The waterfall's row labels take the room of the graph's real width (the page's ``wf-width``,
   app.GRAPH_WIDTH_JS, passed to ``views.page_figure(graph_px=)``): on the amazon load at 1100,
   1500 and 1920 px the drawn labels (the y axis' tick texts) get longer with the window, each
   still reads as its URL (``wirefall requests --json``), row 9's file is whole at 1920 px, and the
   time axis keeps the last response byte's milestone (its time from tshark's packets); a resize
   from 1920 to 1100 px lays them out again, once.  Before, every width got the labels of a
   1200 px page (row 9: ``csm-captcha-in….min.js`` at 1920 px).  The first figure of a page is
   still the warm-up's copy at the default width, and at the width the last page said.
2. Ctrl-Home / Ctrl-End in the packet list select the first / last row as shown (filtered,
   sorted), as a click does, as Wireshark's do (packet number and length against tshark's); they
   only scrolled the list, the focus and the detail stayed on the packet before.

Screenshots: SHOTS/width30-*.png (tests/webfix.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading

import pytest
from webfix import browser_fixture, needs_chromium, new_page, row_labels, shot, wait_rows, wait_text

from test_web22 import AMAZON, AMAZON_K, H2, H2K, _need
from test_web22 import server as amazon_server  # noqa: F401 - the fixture (the amazon load among its captures)
from test_web_grid import ROWS, _cell, _in_view, _open_packets, _tshark, _tshark_lengths, _wait_cell
from test_web_grid import server as grid_server  # noqa: F401 - the fixture (the 20,050-packet capture)

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

browser = browser_fixture()


def _requests_json(cap, key) -> list[dict]:
    """``wirefall requests --json`` of the capture, run as a person runs it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-m", "wirefall", "requests", "--json", "--keylog", str(key), str(cap)],
                       capture_output=True, text=True, cwd=root, env=dict(os.environ, PYTHONPATH=root), timeout=300, check=True)
    return json.loads(p.stdout)


def reads_as(text: str, url: str) -> bool:
    """Whether a label's host…path ``text`` is ``url`` (no scheme) with parts left out at its
    ``…``: its pieces in order, the first at the URL's start, the last at its end."""
    u = url.split("://", 1)[-1]
    parts = text.split("…")
    if len(parts) == 1:
        return u == text
    if not u.startswith(parts[0]) or not u.endswith(parts[-1]):
        return False
    at = len(parts[0])
    for p in parts[1:-1]:
        i = u.find(p, at)
        if i < 0:
            return False
        at = i + len(p)
    return at <= len(u) - len(parts[-1])


def _texts(pg) -> list[str]:
    return [x.split()[-1] for x in row_labels(pg)]


def _milestone(pg, label: str) -> dict:
    """The milestone annotation starting with ``label``: its text, and whether it lies within the graph's box."""
    return pg.evaluate("""t => { const gd = document.querySelector('#waterfall .js-plotly-plot'), b = gd.getBoundingClientRect();
        const a = [...gd.querySelectorAll('.annotation-text')].find(e => e.textContent.startsWith(t));
        if (!a) return null; const r = a.getBoundingClientRect();
        return {text: a.textContent, inside: r.width > 0 && r.left >= b.left - 1 && r.right <= b.right + 1}; }""", label)


def _figure_requests(pg) -> list:
    """The page's requests for the waterfall's figure (cb_wf), as they are sent."""
    seen: list = []
    pg.on("request", lambda r: seen.append(r) if "_dash-update-component" in r.url and "waterfall.figure" in (r.post_data or "") else None)
    return seen


def _width_of(request) -> int | None:
    """The ``wf-width`` a figure request (``_figure_requests``) sent."""
    body = json.loads(request.post_data)
    return next((i.get("value") for i in body.get("inputs", []) if i.get("id") == "wf-width"), None)


@pytest.fixture
def figure_builds(monkeypatch):
    """The waterfall figures the page's callbacks build (``views.figure``, not the warm-up's
    thread): none where the page's first figure is the warm-up's copy."""
    from wirefall.ui.web import views

    made: list[int | None] = []
    real = views.figure

    def counted(*a, **kw):
        if not threading.current_thread().name.startswith("wirefall-analyse"):
            made.append(kw.get("graph_px"))
        return real(*a, **kw)

    monkeypatch.setattr(views, "figure", counted)
    return made


@pytest.mark.slow
def test_labels_take_the_page_width(amazon_server, browser):  # noqa: F811
    """1100, 1500, 1920 px: the labels get longer, each reads as its URL, row 9's file
    (csm-captcha-instrumentation.min.js) is whole at 1920 px only, the last response byte's
    milestone is on the time axis; a resize (a drag over ~20 widths) from 1920 to 1100 px draws
    the figure once more, with the 1100 px page's labels."""
    if not (AMAZON.exists() and AMAZON_K.exists()):
        pytest.skip("../shared/captures/pageload-amazon not present")
    _st, url, ids = amazon_server
    cid = _need(ids, "amazon")
    reqs = _requests_json(AMAZON, AMAZON_K)
    urls = [r["url"] for r in reqs]
    last = max(reqs, key=lambda r: r["response_end"])
    t = [float(x) for x in _tshark("-r", str(AMAZON), "-Y", f"frame.number == 1 || frame.number == {last['response_end_packet']}",
                                   "-T", "fields", "-e", "frame.time_epoch").split()]
    last_ms = f"Last byte of the last response {(t[1] - t[0]) * 1000:.0f} ms"
    file9 = urls[8].rsplit("/", 1)[-1]
    assert file9 == "csm-captcha-instrumentation.min.js"
    texts: dict[int, list[str]] = {}
    for w in (1100, 1500, 1920):
        pg = new_page(browser, width=w, height=900)
        try:
            figs = _figure_requests(pg)
            pg.goto(url + f"?capture={cid}")
            wait_rows(pg, len(urls))
            texts[w] = _texts(pg)
            assert all(reads_as(x, u) for x, u in zip(texts[w], urls)), (w, texts[w])
            m = _milestone(pg, "Last byte of the last response")
            assert m is not None and m["inside"] and m["text"] == last_ms, (w, m, last_ms)
            shot(pg, f"width30-amazon-{w}.png")
            if w == 1920:
                pg.wait_for_timeout(300)
                assert [_width_of(r) for r in figs] == [1800]  # (the graph's 1892 px, in steps of 100)
                for x in (1910, 1900, 1890, 1880):  # (within the step: nothing drawn again)
                    pg.set_viewport_size({"width": x, "height": 900})
                    pg.wait_for_timeout(30)
                pg.wait_for_timeout(800)
                assert len(figs) == 1 and _texts(pg) == texts[1920]
                for x in range(1860, 1100, -40):  # (a person's drag: a resize event at each step)
                    pg.set_viewport_size({"width": x, "height": 900})
                    pg.wait_for_timeout(15)
                pg.set_viewport_size({"width": 1100, "height": 900})
                pg.wait_for_function("t => document.querySelectorAll('#waterfall .ytick text')[8].textContent.endsWith(t)",
                                     arg=texts[1100][8])
                pg.wait_for_timeout(800)
                sent = [_width_of(r) for r in figs]
                # drawn again once the drag paused (on a busy machine, where it paused on its way too), each
                # time for another step — not at each of its 20 resize events
                assert sent[-1] == 1000 and len(sent) <= 6 and all(a != b for a, b in zip(sent, sent[1:])), sent
                assert _texts(pg) == texts[1100], _texts(pg)
                m = _milestone(pg, "Last byte of the last response")
                assert m is not None and m["inside"] and m["text"] == last_ms, m
                shot(pg, "width30-amazon-1920-resized-to-1100.png")
            assert not pg.errors, pg.errors
        finally:
            pg.context.close()
    for a, b in ((1100, 1500), (1500, 1920)):
        assert all(len(x) <= len(y) for x, y in zip(texts[a], texts[b])), (texts[a], texts[b])
        assert sum(map(len, texts[a])) < sum(map(len, texts[b])) and len(texts[a][8]) < len(texts[b][8])
    assert texts[1920][8].endswith("/" + file9) and not any(x.endswith("/" + file9) for x in (texts[1100][8], texts[1500][8]))


@pytest.mark.slow
def test_first_figure_is_the_warm_copy(amazon_server, browser, figure_builds, tmp_path):  # noqa: F811
    """A page whose graph is 1200-1299 px wide (the default layout) gets the warm-up's figure
    (no figure built for it); at 1700 px one is built, with its width — and a capture opened
    after it is warmed at that width too (its page builds none)."""
    st, url, ids = amazon_server
    cid = _need(ids, "amazon")
    for w, built in ((1300, []), (1700, [1600])):
        pg = new_page(browser, width=w, height=900)
        try:
            pg.goto(url + f"?capture={cid}")
            wait_rows(pg, 15)
            pg.wait_for_timeout(300)
            assert figure_builds == built, (w, figure_builds)
        finally:
            pg.context.close()
    assert st.graph_px == 1600  # (GRAPH_WIDTH_JS: the graph's 1672 px in steps of 100)
    figure_builds.clear()
    again = tmp_path / "page-h2-again.pcapng"
    shutil.copy(H2, again)
    e = st.wait(st.add_file(str(again), [str(H2K)], name=again.name).id, 120)
    pg = new_page(browser, width=1700, height=900)
    try:
        pg.goto(url + f"?capture={e.id}")
        pg.wait_for_selector("#waterfall .ytick text")
        pg.wait_for_timeout(300)
        assert figure_builds == [], figure_builds
    finally:
        pg.context.close()


def _state(pg) -> dict:
    """The grid's focused row, its selected packet, and the detail's title."""
    return pg.evaluate("""() => { const api = window.dash_ag_grid.getApi('packets'), f = api.getFocusedCell();
        const t = document.querySelector('#packet-detail-title');
        return {focused: f && f.rowIndex, selected: api.getSelectedNodes().map(n => n.data && n.data.no),
                rows: api.getDisplayedRowCount(), title: t && t.innerText, search: location.search}; }""")


def _ctrl(pg, key: str, index: int, number: int) -> dict:
    """Press Ctrl-``key`` in the list; wait until row ``index`` (packet ``number``) is focused and its detail shown."""
    pg.keyboard.press(f"Control+{key}")
    try:
        pg.wait_for_selector(f"{ROWS}[row-index='{index}'] .ag-cell-focus", timeout=10_000)
        wait_text(pg, "#packet-detail-title", f"Packet {number}", timeout=10_000)
    except playwright_api.TimeoutError:
        raise AssertionError(f"Ctrl-{key}: not at row {index} (packet {number}): {_state(pg)}") from None
    s = _state(pg)
    assert s["focused"] == index and s["selected"] == [number] and s["title"] == f"Packet {number}", s
    assert _in_view(pg, f"{ROWS}[row-index='{index}']")
    return s


def _click_search(pg, index: int, number: int) -> str:
    """The address after a click on row ``index`` (packet ``number``): what the keys' selection must give."""
    pg.click(f"{ROWS}[row-index='{index}'] [col-id='info']")
    wait_text(pg, "#packet-detail-title", f"Packet {number}")
    pg.wait_for_timeout(400)
    return _state(pg)["search"]


@pytest.mark.slow
def test_ctrl_home_end_select_the_first_and_last_packet(grid_server, browser):  # noqa: F811
    """20,050 packets: Ctrl-End focuses and selects the last row (tshark's last packet: number and
    length), its detail reads "Packet 20050", the address is a click's; an arrow key goes on from
    there; Ctrl-Home the first.  Filtered ("tcp"): the last row is tshark's last TCP packet.
    Sorted by No., high to low: the last row is packet 1."""
    _st, url, ids, many = grid_server
    lens = _tshark_lengths(many)
    total = len(lens)
    pg = new_page(browser, width=1500, height=1000)
    try:
        _open_packets(pg, url, ids["many"], total)
        at_first = _click_search(pg, 0, 1)
        pg.wait_for_selector(f"{ROWS}[row-index='0'] .ag-cell-focus")
        s = _ctrl(pg, "End", total - 1, total)
        _wait_cell(pg, total - 1, "no", str(total))
        assert _cell(pg, total - 1, "length") == str(lens[total])
        shot(pg, "width30-ctrl-end-20050.png")
        pg.keyboard.press("ArrowUp")  # (the keyboard goes on from the row selected)
        pg.wait_for_selector(f"{ROWS}[row-index='{total - 2}'] .ag-cell-focus")
        end_search = s["search"]
        assert _click_search(pg, total - 1, total) == end_search  # (as a click on it)
        _ctrl(pg, "Home", 0, 1)
        assert _cell(pg, 0, "no") == "1" and _cell(pg, 0, "length") == str(lens[1])
        assert _state(pg)["search"] == at_first
        # a filter: the last row of the filtered list
        tcp = [int(x) for x in _tshark("-r", str(many), "-Y", "tcp", "-T", "fields", "-e", "frame.number").split()]
        pg.fill("#packet-filter", "tcp")
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", f"{len(tcp)} of {total:,} packets match")
        _wait_cell(pg, 0, "no", str(tcp[0]))
        pg.click(f"{ROWS}[row-index='0'] [col-id='info']")
        _ctrl(pg, "End", len(tcp) - 1, tcp[-1])
        assert _cell(pg, len(tcp) - 1, "no") == str(tcp[-1]) and _cell(pg, len(tcp) - 1, "length") == str(lens[tcp[-1]])
        _ctrl(pg, "Home", 0, tcp[0])
        shot(pg, "width30-ctrl-home-tcp.png")
        # sorted by No., high to low: the last row shown is packet 1
        pg.fill("#packet-filter", "")
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", f"{total:,} packets")
        for _ in range(2):
            pg.click("#packets .ag-header-cell[col-id='no'] .ag-header-cell-label")
        _wait_cell(pg, 0, "no", str(total))
        pg.click(f"{ROWS}[row-index='0'] [col-id='info']")
        _ctrl(pg, "End", total - 1, 1)
        assert _cell(pg, total - 1, "length") == str(lens[1])
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()
