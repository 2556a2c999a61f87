"""The web app as a newcomer meets it (issue 23), in headless Chromium (Playwright, as
tests/test_web_browser.py): the status line and the waterfall say why nothing shows (a key
log of other connections, a truncated file) and what to do; the page's state lives in its
address (a reload keeps capture, filter, tab, zoom and selection); the selected bar is
highlighted with its detail beside it; packet numbers open the packet; the Packets tab
filters and highlights the packet gone to; the first load is compressed; the request detail
needs no sideways scroll and the Expert headers read in full.  Screenshots go to
/tmp/wirefall-shots/."""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import pytest
from webfix import browser_fixture, needs_chromium, page_fixture, private_cache, query, serving, shot, wait_rows, wait_text, zoom_to_10_60

from wirefall.analyzer.completeness import NEXT_WRONG_KEYLOG
from test_web_unit import H2, H2K, tshark_requests

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import ui_inputs  # noqa: E402

# a delay of up to max_s before each callback's answer (0: none), as a loaded machine gives,
# and of late_s for the callback requests ``late`` (a test of the request's JSON) picks
JITTER: dict = {"max_s": 0.0, "rng": random.Random(23), "late": None, "late_s": 0.0}


def _state_of(body: dict, prop: str):
    """The value of ``prop`` ("selected.data") among a callback request's states."""
    return next((x.get("value") for x in body.get("state", []) if isinstance(x, dict) and f"{x.get('id')}.{x.get('property')}" == prop),
                "absent")


# the orders that fill the page from its address on a reload, one per reload in turn: the
# selection callback's first call (the store still empty) answering last — the order a loaded
# machine gave, in which the selection was lost before the fix —; cb_url_in (whose capture
# output has allow_duplicate: no callback waits for it) answering last; the capture list
# (cb_poll) answering last; callbacks at random only
ORDERS = (
    (lambda b: "selected.data" in str(b.get("output")) and _state_of(b, "selected.data") is None, 1.2),
    (lambda b: "capture.value@" in str(b.get("output")), 0.45),
    (lambda b: "capture.options" in str(b.get("output")), 0.45),  # (< the 600 ms poll: a slower answer is superseded)
    (None, 0.0),
)

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium, pytest.mark.skipif(not H2.exists(), reason="sample captures missing")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from wirefall.ui.web import WebState, create_app

    d = tmp_path_factory.mktemp("newcomer")
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        ids = {
            "good": st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng").id,
            "wrong": st.add_file(str(PAGE / "page-h3.pcapng"), [str(ui_inputs.wrong_keylog(d))], name="page-h3.pcapng").id,
            "cut": st.add_file(str(ui_inputs.truncated(d)), [str(H2K)], name="truncated-page-h2.pcapng").id,
        }
        for i in ids.values():
            st.wait(i, 60)
        app = create_app(st)

        @app.server.before_request
        def _jitter():  # (test_reload_ten_times: callbacks answered in a different order each time)
            from flask import request

            if JITTER["max_s"] and request.path.startswith("/_dash-update-component"):
                body = request.get_json(silent=True) or {}
                late = JITTER["late"] is not None and JITTER["late"](body)
                time.sleep(JITTER["late_s"] if late else JITTER["max_s"] * JITTER["rng"].random())

        with serving(st, app) as url:
            yield st, url, ids


browser = browser_fixture()
pg = page_fixture()


def test_wrong_keylog_says_why_and_what_next(server, pg):
    st, url, ids = server
    an = st.get(ids["wrong"]).analysis
    reason = an.connections[0].quic.reason  # the model's reason (what `wirefall summary` prints)
    assert not an.exchanges and "no SERVER_HANDSHAKE_TRAFFIC_SECRET in the key log" in reason and "SERVER_TRAFFIC_SECRET_0" in reason
    pg.goto(url + f"?capture={ids['wrong']}")
    wait_text(pg, "#wf-explain", "no requests")
    why = pg.inner_text("#empty-why")
    assert why.startswith("no requests: 1 connection not decrypted") and reason in why and NEXT_WRONG_KEYLOG in why
    # the status line, not "0 requests" alone: its word, and where the headline is (said once: report 28)
    assert "· Incomplete (what and why: the Waterfall tab)" in pg.inner_text("#status")
    assert "1 connection not decrypted" in pg.inner_text("#explain-box")
    pg.wait_for_function("() => [...document.querySelectorAll('#waterfall .annotation-text')].some(a => a.textContent.includes('no requests:'))")
    ann = pg.locator("#waterfall .annotation-text").all_text_contents()
    joined = " ".join(ann)
    # the plot's own note (lines of ≤ 90 characters)
    assert "no requests: 1 connection not" in joined and "SERVER_TRAFFIC_SECRET_0" in joined and "no requests in this capture" not in joined
    shot(pg, "web-wrong-keylog.png")


def test_truncated_capture_warning_in_the_waterfall_tab(server, pg):
    st, url, ids = server
    an = st.get(ids["cut"]).analysis
    assert any("truncated" in w for w in an.warnings) and an.exchanges
    pg.goto(url + f"?capture={ids['cut']}")
    wait_text(pg, "#explain-box", "capture truncated in packet")
    box = pg.inner_text("#explain-box")
    assert "capture damaged (1 warning)" in box and "next: the capture file is cut short or damaged" in box
    assert "truncated-page-h2.pcapng" in box  # the file's name, not the server's path
    assert "· Incomplete (what and why: the Waterfall tab)" in pg.inner_text("#status")  # (the box says what: report 28)
    wait_rows(pg, len(an.exchanges))
    shot(pg, "web-truncated.png")


def _bar_xy(pg, index: int):
    return pg.evaluate("""i => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        const L = gd._fullLayout, r = gd.getBoundingClientRect();
        let best = null;
        for (const tr of gd._fullData) { if (tr.type !== 'bar') continue;
            tr.y.forEach((yy, k) => { if (yy === i && (!best || tr.x[k] > best[1])) best = [tr.base[k], tr.x[k]]; }); }
        return [r.left + L._size.l + L.xaxis.l2p(best[0] + best[1] / 2), r.top + L._size.t + L.yaxis.l2p(i)]; }""", index)


def _click_bar(pg, index: int, selector: str) -> None:
    """Click row `index`'s bar until `selector` shows, as a person clicks again when the figure was
    still being redrawn under the pointer (a second render after the first can swallow a click)."""
    for attempt in range(3):
        x, y = _bar_xy(pg, index)
        pg.mouse.click(x, y)
        try:
            pg.wait_for_selector(selector, timeout=5000)
            return
        except playwright_api.TimeoutError:
            if attempt == 2:
                raise
            pg.wait_for_timeout(300)


def _grid_column(pg, grid: str, col: str) -> list[str]:
    """The cells of column ``col`` of the rows the grid has drawn, in row order."""
    return pg.evaluate("""([g, c]) => [...document.querySelectorAll('#' + g + ' .ag-center-cols-container .ag-row')]
        .sort((a, b) => +a.getAttribute('row-index') - +b.getAttribute('row-index'))
        .map(r => (r.querySelector('[col-id="' + c + '"]') || {innerText: ''}).innerText.trim())""", [grid, col])


def _in_view(pg, sel: str) -> bool:
    """The element is inside the grid's scrolled viewport (a person sees it)."""
    return pg.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
        const v = document.querySelector('#packets .ag-body-viewport').getBoundingClientRect();
        return r.top >= v.top - 1 && r.bottom <= v.bottom + 1; }""", sel)


def test_state_in_the_url_survives_a_reload(server, pg):
    st, url, ids = server
    truth = tshark_requests(H2, H2K)
    js = sum(1 for r in truth.values() if "js" in r["path"])
    pg.goto(url + f"?capture={ids['good']}")
    wait_rows(pg, len(truth))
    # click a bar (row 9, /js/vendor.js: one long enough to point at): highlighted, its detail
    # beside the waterfall, on screen
    _click_bar(pg, 8, "#detail-title")
    pg.wait_for_function("() => (document.querySelector('#waterfall .js-plotly-plot').layout.shapes || []).some(s => s.name === 'selected')")
    shapes = pg.evaluate("() => document.querySelector('#waterfall .js-plotly-plot').layout.shapes.filter(s => s.name === 'selected')")
    assert len(shapes) == 1 and shapes[0]["y0"] == 7.5 and shapes[0]["y1"] == 8.5
    box = pg.locator("#detail-side").bounding_box()
    graph = pg.locator("#waterfall").bounding_box()
    assert box["y"] < 1000 and box["x"] >= graph["x"] + graph["width"] - 5  # beside it, within the first screen
    sel = query(pg)["sel"]
    title = pg.inner_text("#detail-title")
    # a filter and a zoom
    pg.fill("#filter-expr", 'url contains "js"')
    pg.keyboard.press("Enter")
    wait_rows(pg, js)
    zoom_to_10_60(pg)  # (the figure may still be redrawn after the filter)
    q = query(pg)
    assert q == {"capture": ids["good"], "filter": 'url contains "js"', "x0": "10", "x1": "60", "sel": sel}
    # another filter keeps the zoom
    pg.fill("#filter-expr", 'url contains "s"')
    pg.keyboard.press("Enter")
    pg.wait_for_function("() => new URLSearchParams(location.search).get('filter') === 'url contains \"s\"'")
    pg.wait_for_timeout(800)
    rng = pg.evaluate("() => document.querySelector('#waterfall .js-plotly-plot')._fullLayout.xaxis.range")
    assert [round(v) for v in rng] == [10, 60]
    # reload: the same capture, filter, zoom and selection (once: test_reload_ten_times reloads more)
    pg.reload()
    seen = _sees(pg)
    assert seen["filter"] == 'url contains "s"' and seen["title"] == title and seen["x"] == [10, 60]
    assert query(pg)["x1"] == "60" and query(pg)["sel"] == sel


# What a person sees of the page's state: the Waterfall tab chosen, the filter box, the rows
# drawn, the zoom, the highlighted row (the "selected" shape) and the detail beside it.  Waited
# for as a whole (the callbacks answer in any order), then returned.
SEES_JS = """() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
    const tab = document.querySelector('#tabs .tab--selected');
    const t = document.querySelector('#detail-title'), side = document.querySelector('#detail-side');
    if (!gd || !gd._fullLayout || !gd._fullLayout.xaxis || !gd.layout || !t || !side || !tab) return null;
    const hl = (gd.layout.shapes || []).filter(s => s.name === 'selected');
    if (hl.length !== 1) return null;
    const ticks = [...document.querySelectorAll('#waterfall .ytick text')].map(e => e.textContent);
    const r = side.getBoundingClientRect(), g = document.querySelector('#waterfall').getBoundingClientRect();
    return {tab: tab.innerText.trim(), filter: document.querySelector('#filter-expr').value, rows: ticks.length,
            x: gd._fullLayout.xaxis.range.map(Math.round), hl: [hl[0].y0, hl[0].y1], title: t.innerText,
            label: ticks[Math.round(hl[0].y0 + 0.5)] || '', beside: r.left >= g.right - 5 && r.top < 1000 && r.height > 0}; }"""


def _sees(pg, timeout: float = 30_000) -> dict:
    """What the page shows once its waterfall, highlight and detail are all there (``SEES_JS``)."""
    try:
        h = pg.wait_for_function(SEES_JS, timeout=timeout, polling=100)
    except playwright_api.TimeoutError:
        raise AssertionError("the page did not show its state: " + repr(pg.evaluate(SEEN_JS)) + " at " + pg.url) from None
    return h.json_value()


SEEN_JS = """() => { const gd = document.querySelector('#waterfall .js-plotly-plot'), t = document.querySelector('#detail-title');
    return {shapes: gd && gd.layout && (gd.layout.shapes || []).map(s => s.name), x: gd && gd._fullLayout && gd._fullLayout.xaxis
            && gd._fullLayout.xaxis.range, rows: document.querySelectorAll('#waterfall .ytick text').length, title: t && t.innerText,
            side: (document.querySelector('#detail-side') || {}).className}; }"""


def test_reload_ten_times_keeps_what_the_person_sees(server, pg):
    """A bookmarked address (capture, filter, zoom, selected request) reloaded ten times: each
    time the Waterfall tab with the filter in its box, the filter's rows (tshark's requests
    whose URL matches), the zoom, the selected request's row highlighted and its detail beside
    the waterfall — the callbacks that fill the page answer in a different order each time
    (they race on a loaded machine).  Then on another tab: a reload stays on it, and the
    waterfall tab still has the selection and the zoom."""
    st, url, ids = server
    truth = tshark_requests(H2, H2K)
    an = st.get(ids["good"]).analysis
    js = sum(1 for r in truth.values() if "js" in r["path"])  # (the authority is 127.0.0.1:port)
    x = next(e for e in an.exchanges if e.path == "/js/vendor.js")
    from urllib.parse import urlencode

    pg.goto(url + "?" + urlencode({"capture": ids["good"], "filter": 'url contains "js"', "x0": 10, "x1": 60, "sel": x.id}))
    first = _sees(pg)
    assert first["title"].startswith("GET ") and first["title"].endswith("/js/vendor.js")

    def _check(n, seen):
        assert seen["tab"] == "Waterfall" and seen["filter"] == 'url contains "js"', (n, seen)
        assert seen["rows"] == js, (n, seen)
        assert seen["x"] == [10, 60] and seen["title"] == first["title"] and seen["beside"], (n, seen)
        # the highlighted row is the selected request's: its label is vendor.js's
        assert seen["hl"][1] - seen["hl"][0] == 1 and "vendor.js" in seen["label"].replace("\u00a0", " "), (n, seen)
        assert query(pg) == {"capture": ids["good"], "filter": 'url contains "js"', "x0": "10", "x1": "60", "sel": str(x.id)}

    # each reload with callbacks answering late at random, and in one of the ORDERS
    JITTER["max_s"] = 0.3
    try:
        for n in range(10):
            JITTER["late"], JITTER["late_s"] = ORDERS[n % len(ORDERS)]
            if n:
                pg.reload()
                seen = _sees(pg)
            else:
                seen = first
            _check(n, seen)
    finally:
        JITTER["max_s"], JITTER["late"] = 0.0, None
    pg.click("#tabs >> text=Connections")
    pg.wait_for_function("() => new URLSearchParams(location.search).get('tab') === 'connections'")
    for n in range(3):
        pg.reload()
        pg.wait_for_function("() => { const t = document.querySelector('#tabs .tab--selected');"
                             " return t && t.innerText.trim() === 'Connections' && document.querySelector('#conn-fig .js-plotly-plot'); }")
        assert query(pg)["sel"] == str(x.id) and query(pg)["x0"] == "10", n
    pg.click("#tabs >> text=Waterfall")
    seen = _sees(pg)
    assert seen["x"] == [10, 60] and seen["title"] == first["title"] and "vendor.js" in seen["label"].replace("\u00a0", " ")


def test_packet_link_opens_the_packet_and_the_packets_filter(server, pg):
    st, url, ids = server
    truth = tshark_requests(H2, H2K)
    pg.goto(url + f"?capture={ids['good']}")
    wait_rows(pg, len(truth))
    _click_bar(pg, 0, "#detail-packets .pktlink")
    link = pg.locator("#detail-packets .pktlink").first
    n = int(link.inner_text())
    link.click()
    wait_text(pg, "#packet-detail-title", f"Packet {n}")
    # (the address is written by its own callback after the tab has changed: wait for it)
    pg.wait_for_function("n => { const q = new URLSearchParams(location.search);"
                         " return q.get('tab') === 'packets' && q.get('pkt') === String(n); }", arg=n)
    assert query(pg)["tab"] == "packets" and query(pg)["pkt"] == str(n)
    row = f"#packets .ag-center-cols-container .ag-row[row-id='{n}']"
    pg.wait_for_selector(row + ".pkt-goto")
    assert pg.evaluate("s => getComputedStyle(document.querySelector(s)).backgroundColor", row) == "rgb(255, 224, 130)"  # highlighted
    assert _in_view(pg, row)
    # the Packets tab's own filter (Wireshark's fields, as tshark)
    import shutil
    import subprocess

    if shutil.which("tshark"):
        want = subprocess.run(["tshark", "-r", str(H2), "-Y", "tcp.srcport == 42682 && tcp.len > 0", "-T", "fields", "-e", "frame.number"],
                              capture_output=True, text=True, check=True).stdout.split()
        pg.fill("#packet-filter", "tcp.srcport == 42682 && tcp.len > 0")
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", "packets match")
        assert pg.inner_text("#packet-filter-msg").startswith(f"{len(want)} of")
        pg.wait_for_function("n => document.querySelector('#packets .ag-center-cols-container .ag-row[row-index=\"0\"] [col-id=\"no\"]')"
                             " && document.querySelector('#packets .ag-center-cols-container .ag-row[row-index=\"0\"] [col-id=\"no\"]')"
                             ".innerText.trim() === n", arg=want[0])
        shown = _grid_column(pg, "packets", "no")
        assert shown == want[: len(shown)] and shown
        pg.fill("#packet-filter", "tcp.port ==")
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", "filter error")


def test_newcomer_line_and_compressed_first_load(server, browser):
    st, url, ids = server
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = ctx.new_page()
    sizes: dict[str, int] = {}
    encodings: dict[str, str] = {}

    def on_response(r):
        try:
            sizes[r.url] = int(r.request.sizes()["responseBodySize"])
            encodings[r.url] = r.headers.get("content-encoding", "")
        except Exception:  # noqa: BLE001
            pass

    pg.on("response", on_response)
    pg.goto(url + f"?capture={ids['good']}")
    pg.wait_for_selector("#waterfall .ytick text")
    text = pg.inner_text("#newcomer")
    assert "Waterfall: one bar per request" in text and "Packets" in text
    js = {u: n for u, n in sizes.items() if ".js" in u}
    total = sum(sizes.values())
    print(f"first load: {len(sizes)} responses, {total} bytes on the wire, {sum(js.values())} of JavaScript")
    assert js and all(encodings[u] in ("br", "gzip") for u, n in js.items() if n > 2048)
    assert total < 2_500_000  # 6.2 MB uncompressed before
    ctx.close()


def test_detail_beside_the_waterfall_hides_nothing(server, browser):
    """With a request's detail open beside it, the waterfall is 60 % of the page (about 720 px
    on a 1200 px page): its legend was cut off at the bottom (the figure had room for the rows
    of a 1200 px wide one) and the milestone labels lay over each other; a long URL in the
    detail's title ran out of the panel (no spaces to wrap at).  Now the figure is laid out for
    the narrower graph while a request is selected, and the title wraps."""
    from webfix import new_page

    st, url, ids = server
    pg = new_page(browser, width=1200, height=900)
    try:
        pg.goto(url + f"?capture={ids['good']}&sel=8")
        pg.wait_for_selector("#detail-title")
        pg.wait_for_function("() => (document.querySelector('#waterfall .js-plotly-plot').layout.shapes || []).some(s => s.name === 'selected')")
        pg.wait_for_timeout(500)
        got = pg.evaluate("""() => {
            const gd = document.querySelector('#waterfall .js-plotly-plot');
            const svg = gd.querySelector('.main-svg').getBoundingClientRect();
            const leg = gd.querySelector('.legend').getBoundingClientRect();
            const notes = [...gd.querySelectorAll('.annotation')].map(a => a.getBoundingClientRect())
                .filter(b => b.bottom < svg.top + gd._fullLayout._size.t);  // the milestone labels above the axis
            let overlaps = 0;
            for (let i = 0; i < notes.length; i++) for (let j = i + 1; j < notes.length; j++) {
                const a = notes[i], b = notes[j];
                if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) overlaps++;
            }
            return {legendBottom: leg.bottom, svgBottom: svg.bottom, labels: notes.length, overlaps: overlaps, graphWidth: svg.width};
        }""")
        shot(pg, "detail-beside-1200.png", full_page=True)
        assert got["graphWidth"] < 800  # (the detail is beside the graph)
        assert got["legendBottom"] <= got["svgBottom"], got
        assert got["labels"] >= 3 and got["overlaps"] == 0, got
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


def test_detail_title_wraps_a_long_url(server, browser):
    """The detail's title (method and URL) is one word to the browser: on a 1000 px page (the
    panel 38 % of it) it ran out of the panel, its end hidden behind a horizontal scroll.
    It wraps within the panel."""
    from webfix import new_page

    st, url, ids = server
    pg = new_page(browser, width=1000, height=900)
    try:
        pg.goto(url + f"?capture={ids['good']}&sel=3")
        pg.wait_for_selector("#detail-title")
        got = pg.evaluate("""() => { const t = document.querySelector('#detail-title'), side = document.querySelector('#detail-side');
            return {text: t.innerText, scroll: t.scrollWidth - t.clientWidth, right: t.getBoundingClientRect().right,
                    sideRight: side.getBoundingClientRect().right}; }""")
        assert "/css/theme.css" in got["text"]
        assert got["scroll"] <= 1 and got["right"] <= got["sideRight"], got
    finally:
        pg.context.close()


_HEADERS_JS = """() => [...document.querySelectorAll('#expert-grid .ag-header-cell')].map(c => {
    const t = c.querySelector('.ag-header-cell-text');
    return {col: c.getAttribute('col-id'), text: t.innerText, scroll: t.scrollWidth, width: t.clientWidth}; })"""


def test_expert_headers_read_in_full(server, browser):
    """The Expert tab's column headers on a 1366 px page: the columns (90-120 px) were narrower
    than header, filter button and sort arrow, and read "pac…", "co…", "seve…", "proto…"
    ("gro…" once sorted).  Each header shows its whole name, sorted or not."""
    from webfix import new_page

    from wirefall.ui.web.expert import COLUMNS

    st, url, ids = server
    pg = new_page(browser, width=1366, height=768)
    try:
        pg.goto(url + f"?capture={ids['good']}&tab=expert")
        pg.wait_for_selector("#expert-grid .ag-row")
        want = {c["field"]: c["headerName"] for c in COLUMNS}
        for col in [None, *want]:  # unsorted, then sorted by each column in turn (its arrow takes room)
            if col is not None:
                pg.click(f"#expert-grid .ag-header-cell[col-id='{col}'] .ag-header-cell-label")
                pg.wait_for_selector(f"#expert-grid .ag-header-cell[col-id='{col}'][aria-sort='ascending']")
            got = pg.evaluate(_HEADERS_JS)
            assert {h["col"]: h["text"] for h in got} == want
            assert all(h["scroll"] <= h["width"] for h in got), (col, got)
            if col in (None, "severity"):
                shot(pg, f"expert-headers-1366{'-sorted' if col else ''}.png")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


_PANEL_JS = """() => {
    const side = document.querySelector('#detail-side'), s = side.getBoundingClientRect(), right = s.left + side.clientWidth;
    const ua = [...document.querySelectorAll('#detail-request-headers tr')].find(r => r.innerText.startsWith('user-agent'));
    return {scroll: side.scrollWidth - side.clientWidth,
            outside: [...side.querySelectorAll('h3, h4, p, li, table')].filter(e => e.getBoundingClientRect().right > right + 1)
                .map(e => e.id || e.tagName),
            tablesScroll: [...side.querySelectorAll('.hscroll')].filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.firstChild.id),
            ua: ua.children[1].innerText, uaRight: ua.getBoundingClientRect().right, right: right}; }"""


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_detail_panel_reads_without_sideways_scroll(server, browser, size):
    """The request detail beside the waterfall on a 1366 or 1920 px page: the frames table
    (9 columns, the last an error column empty but for a frame in error) was wider than the
    panel, so the panel scrolled sideways to read it.  Nothing in the panel is wider than it:
    long words wrap (a user-agent, a URL), the frames table fits (no error column where no
    frame has an error, narrower cell padding)."""
    from webfix import new_page

    st, url, ids = server
    width, height = size
    pg = new_page(browser, width=width, height=height)
    try:
        pg.goto(url + f"?capture={ids['good']}&sel=9")  # /js/vendor.js: frames from earlier packets, a 109-character user-agent
        pg.wait_for_selector("#detail-frames")
        pg.wait_for_timeout(300)
        got = pg.evaluate(_PANEL_JS)
        e = next(x for x in st.get(ids["good"]).analysis.exchanges if x.url.endswith("/js/vendor.js"))
        assert got["ua"] == dict(e.request_headers)["user-agent"] and len(got["ua"]) > 100, got  # (whole, wrapped)
        assert got["scroll"] <= 1, got
        assert not got["outside"] and not got["tablesScroll"] and got["uaRight"] <= got["right"] + 1, got
        pg.evaluate("() => document.querySelector('#detail-request-headers').scrollIntoView()")
        shot(pg, f"detail-panel-{width}-headers.png")
        pg.evaluate("() => document.querySelector('#detail-frames').scrollIntoView()")
        shot(pg, f"detail-panel-{width}-frames.png")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()
