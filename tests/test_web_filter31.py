"""The packet list's display filter as a person uses it (session 31), in headless Chromium
(Playwright) on the third-party amazon page load with its key log:

- a filter that matches nothing, then others and none: each draws its rows (number, length)
  under its count.  dash-ag-grid answered the request after a 0-row answer from a timer its own
  effect cancelled; the unanswered request held AG Grid's one load (maxConcurrentDatasourceRequests
  1), so every later filter drew its count over empty rows until a reload;
- the text typed fast into the box is the text applied (dcc's debounce put the caret back a key:
  ``frame.len > 140 and0``);
- the filter is in the address (``pf``) and a reload or a bookmark applies it again, a filter
  with an error too (kept in the box, and said);
- an address's packet (``pkt``) has the keyboard's focus: the arrow keys go on from it, without a
  click (the cell had AG Grid's focus but not the browser's) — and without taking the focus from
  the filter box when the person is typing there;
- a filter that keeps the selected packet shows it, selected and focused at its new row (the list
  went to the top and the focused cell stayed at the old row number: another packet's).

The packets the filters keep, their numbers and lengths are tshark's (``-Y``, with the key log)."""
from __future__ import annotations

import shutil
from urllib.parse import parse_qs, quote_plus, urlsplit

import pytest
from conftest import SHARED, run_tool, unpack_amazon
from webfix import browser_fixture, grid_warnings, needs_chromium, new_page, private_cache, serving, wait_text

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
AMAZON = SHARED / "pageload-amazon"
pytestmark = [needs_chromium,
              pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
              pytest.mark.skipif(not (AMAZON / "amazon1.cap.gz").exists(), reason="../shared/captures/pageload-amazon is not present")]

browser = browser_fixture()
ROWS = "#packets .ag-center-cols-container .ag-row"
STATUS = 'http2.header.name == ":status"'


@pytest.fixture(scope="module")
def amazon(tmp_path_factory):
    """(the state's capture id, the app's address, the unpacked capture and key log for tshark)."""
    from wirefall.ui.web import WebState

    d = tmp_path_factory.mktemp("filter31")
    cap, keys = unpack_amazon(d)
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        cid = st.add_file(str(AMAZON / "amazon1.cap.gz"), [str(AMAZON / "amazon1.key_log.txt.gz")], name="amazon1.cap").id
        st.wait(cid, 120)
        with serving(st) as url:
            yield cid, url, cap, keys


def _tshark(amazon, expr: str = "") -> dict[int, int]:
    """tshark's packets for ``expr`` (with the key log): number -> frame length, in order."""
    _cid, _url, cap, keys = amazon
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", *(("-Y", expr) if expr else ()),
                   "-T", "fields", "-e", "frame.number", "-e", "frame.len")
    return {int(a): int(b) for a, b in (line.split("\t") for line in out.splitlines())}


def _grid(pg) -> dict:
    return pg.evaluate("""() => { let api; try { api = window.dash_ag_grid.getApi('packets'); } catch (e) { return {grid: false}; }
        const f = api.getFocusedCell(), a = document.activeElement, r = a && a.closest && a.closest('.ag-row');
        return {rows: api.getDisplayedRowCount(), focused: f && f.rowIndex, selected: api.getSelectedNodes().map(n => n.data && n.data.no),
                active: a && (a.id || a.tagName), activeRow: r && r.getAttribute('row-index'), search: location.search,
                value: document.querySelector('#packet-filter').value, blocks: api.getCacheBlockState()}; }""")


def _cell(pg, index: int, col: str) -> str:
    return pg.inner_text(f"{ROWS}[row-index='{index}'] [col-id='{col}']").strip()


def _wait_row(pg, index: int, number: int) -> None:
    """Wait until row ``index`` is drawn with packet ``number`` in it (shown there if need be)."""
    pg.evaluate("i => window.dash_ag_grid.getApi('packets').ensureIndexVisible(i, 'middle')", index)
    try:
        pg.wait_for_function("([s, t]) => { const e = document.querySelector(s); return e && e.innerText.trim() === t; }",
                             arg=[f"{ROWS}[row-index='{index}'] [col-id='no']", str(number)], timeout=10_000)
    except playwright_api.TimeoutError:
        raise AssertionError(f"row {index} does not show packet {number}: {_grid(pg)}") from None


def _rows_are(pg, want: dict[int, int]) -> None:
    """The list shows tshark's packets ``want``: its count, its first rows, its last row and one in
    a later block than the first, each with tshark's number and length."""
    numbers = list(want)
    total = 752
    wait_text(pg, "#packet-filter-msg", f"{len(want):,} of {total:,} packets match" if len(want) < total else f"{total:,} packets")
    pg.wait_for_function("n => window.dash_ag_grid.getApi('packets').getDisplayedRowCount() === n", arg=len(want))
    picks = sorted({*range(min(5, len(numbers))), *([len(numbers) // 2, len(numbers) - 1] if numbers else [])})
    for i in picks:
        _wait_row(pg, i, numbers[i])
        assert _cell(pg, i, "length") == str(want[numbers[i]]), (i, numbers[i], _grid(pg))
    if not numbers:
        try:
            pg.wait_for_function("s => !document.querySelector(s)", arg=f"{ROWS}[row-index='0']", timeout=10_000)
        except playwright_api.TimeoutError:
            raise AssertionError(f"a row is drawn in an empty list: {_grid(pg)}") from None


def _apply(pg, expr: str) -> None:
    """The filter typed and applied (Enter); back once the list has asked for its rows and had its answer
    (a filter after another with the same count: the page showed that count already)."""
    with pg.expect_response(lambda r: "_dash-update-component" in r.url and any(
            k in (r.request.post_data or "") for k in ("packets-rows", "getRowsResponse"))):
        pg.fill("#packet-filter", expr)
        pg.keyboard.press("Enter")


def _open(pg, url: str, query: str, row: int = 0) -> None:
    """The page at ``query``, once row ``row`` shows its packet (a row still loading is drawn empty)."""
    pg.goto(url + query)
    _drawn(pg, row)


def _drawn(pg, row: int = 0) -> None:
    pg.wait_for_function("s => { const e = document.querySelector(s); return e && e.innerText.trim() !== ''; }",
                         arg=f"{ROWS}[row-index='{row}'] [col-id='no']")


@pytest.mark.slow
def test_rows_drawn_after_a_filter_that_matches_nothing(amazon, browser):
    cid, url, *_ = amazon
    pg = new_page(browser, width=1500, height=1000)
    warned = grid_warnings(pg)
    try:
        _open(pg, url, f"?capture={cid}&tab=packets")
        _rows_are(pg, _tshark(amazon))
        # nothing, then a filter, nothing twice, the whole list, and a filter again
        for expr in ("tcp.analysis.retransmission", STATUS, "tcp.analysis.retransmission", "frame.len > 100000", "", "dns", "tcp"):
            want = _tshark(amazon, expr)
            _apply(pg, expr)
            _rows_are(pg, want)
        assert not warned, warned
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
def test_text_typed_fast_is_the_filter_applied(amazon, browser):
    cid, url, *_ = amazon
    pg = new_page(browser, width=1500, height=1000)
    try:
        _open(pg, url, f"?capture={cid}&tab=packets")
        for expr in ("tcp.analysis.retransmission", "frame.len > 1400 and tcp.port == 443", STATUS, "dns || frame.len < 70",
                     "frame.len > 1400 and tcp.port == 443"):
            pg.click("#packet-filter")
            pg.keyboard.press("Control+A")
            pg.keyboard.press("Delete")
            pg.keyboard.type(expr, delay=5)
            assert pg.input_value("#packet-filter") == expr
            pg.keyboard.press("Enter")
            _rows_are(pg, _tshark(amazon, expr))
            assert pg.input_value("#packet-filter") == expr
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
def test_filter_is_in_the_address(amazon, browser):
    cid, url, *_ = amazon
    pg = new_page(browser, width=1500, height=1000)
    try:
        _open(pg, url, f"?capture={cid}&tab=packets")
        history = pg.evaluate("() => history.length")
        _apply(pg, STATUS)
        _rows_are(pg, _tshark(amazon, STATUS))
        pg.wait_for_function("f => new URLSearchParams(location.search).get('pf') === f", arg=STATUS)
        # written as the server writes the address (urlencode), replacing the history entry (Back leaves the page)
        assert parse_qs(urlsplit(pg.url).query)["pf"] == [STATUS] and "&pf=" + quote_plus(STATUS) in pg.url
        assert pg.evaluate("() => history.length") == history
        # reloaded, or opened from a bookmark in another window: the filter in the box and applied
        bookmark = pg.url
        pg.reload()
        other = new_page(browser, width=1500, height=1000)
        try:
            for page in (pg, other):
                if page is other:
                    page.goto(bookmark)
                _drawn(page)
                assert page.input_value("#packet-filter") == STATUS
                _rows_are(page, _tshark(amazon, STATUS))
            assert not other.errors, other.errors
        finally:
            other.context.close()
        # a filter with an error: kept in the box and said, after a reload too
        bad = "frame.len > 1400 and"
        _apply(pg, bad)
        wait_text(pg, "#packet-filter-msg", "filter error")
        pg.wait_for_function("f => new URLSearchParams(location.search).get('pf') === f", arg=bad)
        pg.reload()
        wait_text(pg, "#packet-filter-msg", "filter error")
        assert pg.input_value("#packet-filter") == bad
        # the person types while the page is still opening: what is typed stays
        _apply(pg, STATUS)
        pg.wait_for_function("f => new URLSearchParams(location.search).get('pf') === f", arg=STATUS)
        pg.reload()
        pg.wait_for_selector("#packet-filter")
        pg.click("#packet-filter")
        pg.keyboard.press("End")
        pg.keyboard.type(" && frame.len > 1400", delay=5)
        _drawn(pg)
        pg.wait_for_timeout(1000)
        assert pg.input_value("#packet-filter") == STATUS + " && frame.len > 1400"
        pg.keyboard.press("Enter")
        _rows_are(pg, _tshark(amazon, STATUS + " && frame.len > 1400"))
        # cleared: no pf
        _apply(pg, "")
        _rows_are(pg, _tshark(amazon))
        pg.wait_for_function("() => !new URLSearchParams(location.search).has('pf')")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
def test_address_packet_has_the_keys(amazon, browser):
    cid, url, *_ = amazon
    lens = _tshark(amazon)
    pg = new_page(browser, width=1500, height=1000)
    try:
        _open(pg, url, f"?capture={cid}&tab=packets&pkt=47", 46)
        wait_text(pg, "#packet-detail-title", "Packet 47")
        pg.wait_for_function("() => { const a = document.activeElement, r = a && a.closest && a.closest('.ag-row');"
                             " return r && r.getAttribute('row-index') === '46'; }")
        # no click: the arrow keys go on from it
        for n in (48, 49, 50):
            pg.keyboard.press("ArrowDown")
            wait_text(pg, "#packet-detail-title", f"Packet {n}")
            pg.wait_for_function("n => new URLSearchParams(location.search).get('pkt') === String(n)", arg=n)
            assert f"Frame {n}: {lens[n]} bytes on wire" in pg.inner_text("#packet-detail")
        assert _grid(pg)["selected"] == [50]
        # the person types in the filter box as the page opens: the box keeps the keys
        pg.goto(url + f"?capture={cid}&tab=packets&pkt=600")
        pg.click("#packet-filter")
        pg.keyboard.type("dns", delay=20)
        wait_text(pg, "#packet-detail-title", "Packet 600")
        pg.wait_for_timeout(1000)
        g = _grid(pg)
        assert g["active"] == "packet-filter" and g["value"] == "dns" and g["selected"] == [600] and g["focused"] == 599, g
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
def test_filter_keeps_the_selected_packet_in_view(amazon, browser):
    cid, url, *_ = amazon
    everything = _tshark(amazon)
    pg = new_page(browser, width=1500, height=1000)
    warned = grid_warnings(pg)
    try:
        _open(pg, url, f"?capture={cid}&tab=packets")
        shown = list(everything)
        for expr, at in (("tcp", 350), ("tcp.len > 0", 120), ("", None)):
            want = _tshark(amazon, expr)
            numbers = list(want)
            if at is None:  # (the whole list: the packet selected stays, at its place in it)
                at = numbers.index(_grid(pg)["selected"][0])
            n = numbers[at]
            if _grid(pg)["selected"] != [n]:  # select it (a click) where it is in the list shown now
                i = shown.index(n)
                _wait_row(pg, i, n)
                pg.click(f"{ROWS}[row-index='{i}'] [col-id='info']")
                wait_text(pg, "#packet-detail-title", f"Packet {n}")
            _apply(pg, expr)
            wait_text(pg, "#packet-filter-msg", f"{len(want):,} of 752 packets match" if expr else "752 packets")
            row = f"{ROWS}[row-index='{at}']"
            try:
                pg.wait_for_selector(row + ".ag-row-selected .ag-cell-focus", timeout=10_000)
                pg.wait_for_function("i => window.dash_ag_grid.getApi('packets').getFocusedCell().rowIndex === i", arg=at)
            except playwright_api.TimeoutError:
                raise AssertionError(f"{expr!r}: packet {n} not selected and focused at row {at}: {_grid(pg)}") from None
            assert _cell(pg, at, "no") == str(n) and _cell(pg, at, "length") == str(want[n])
            assert pg.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect(),
                v = document.querySelector('#packets .ag-body-viewport').getBoundingClientRect();
                return r.top >= v.top - 1 && r.bottom <= v.bottom + 1; }""", row), _grid(pg)
            g = _grid(pg)
            # the filter box keeps the browser's focus (Enter was pressed there), the detail and the address the packet
            assert g["selected"] == [n] and g["active"] == "packet-filter" and f"pkt={n}" in g["search"], g
            wait_text(pg, "#packet-detail-title", f"Packet {n}")
            pg.wait_for_timeout(500)  # (it stays: nothing scrolls, selects or takes the focus after it)
            g = _grid(pg)
            assert g["selected"] == [n] and g["focused"] == at and g["active"] == "packet-filter", g
            shown = numbers
        assert not warned, warned
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


def test_address_writer_keeps_the_filter():
    """cb_url_out (the server's writer of the address) writes the filter applied as ``pf``, where
    URL_ORDER puts it and encoded as urlencode does — the page's own writer (PACKET_URL_JS) writes
    the same string, so neither rewrites the other's — and none when there is none."""
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import URL_ORDER, cb_url_out, url_params

    from dash import no_update

    st = WebState(use_cache=False)
    try:
        search = "?capture=c1&tab=packets&pkt=47"
        out = cb_url_out(st, "c1", "", "packets", None, None, None, True, search, time_format="absolute", packet_filter=STATUS,
                         goto_changed=False)
        assert out == "?capture=c1&tab=packets&pf=" + quote_plus(STATUS) + "&pkt=47&time=absolute"
        assert url_params(out)["pf"] == STATUS and URL_ORDER.index("sel") < URL_ORDER.index("pf") < URL_ORDER.index("pkt")
        assert cb_url_out(st, "c1", "", "packets", None, None, None, True, search, packet_filter="", goto_changed=False) is no_update
    finally:
        st.close()
