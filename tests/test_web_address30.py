"""The packet selected in the Packets tab is in the page's address (session 30), in headless
Chromium (Playwright, the 20,050-packet capture of tests/test_web_grid.py): a click, the arrow
keys and Ctrl-End write ``pkt`` at once, replacing the history entry (not one per key), with no
request for rows and no jump of the list; the address reloaded shows that packet selected, in
view, its detail open (packet number and length against tshark's).  Before, only "Go to packet"
and packet links wrote ``pkt``: an address copied after a click named another packet or none —
and the arrow keys moved only the focus, not the selection (nor the detail)."""
from __future__ import annotations

import json
import shutil

import pytest
from webfix import browser_fixture, needs_chromium, new_page, wait_text

from test_web_grid import ROWS, _cell, _in_view, _open_packets, _show_row, _tshark_lengths, _wait_cell, _wait_query
from test_web_grid import server as grid_server  # noqa: F401 - the fixture (the 20,050-packet capture)

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

browser = browser_fixture()
VIEWPORT = "#packets .ag-body-viewport"


def _state(pg) -> dict:
    return pg.evaluate("""v => { const api = window.dash_ag_grid.getApi('packets'), f = api.getFocusedCell();
        const t = document.querySelector('#packet-detail-title');
        return {focused: f && f.rowIndex, selected: api.getSelectedNodes().map(n => n.data && n.data.no),
                title: t && t.innerText, pkt: new URLSearchParams(location.search).get('pkt'), history: history.length,
                scroll: document.querySelector(v).scrollTop}; }""", VIEWPORT)


def _at(pg, number: int) -> dict:
    """Wait until packet ``number`` is selected, its detail shown and the address's ``pkt``."""
    try:
        _wait_query(pg, "pkt", str(number))
        wait_text(pg, "#packet-detail-title", f"Packet {number}", timeout=10_000)
        # (getApi throws until the grid is made: after a reload on a busy machine it may not be yet)
        pg.wait_for_function("n => { let s; try { s = window.dash_ag_grid.getApi('packets').getSelectedNodes(); }"
                             " catch (e) { return false; } return s.length === 1 && s[0].data && s[0].data.no === n; }",
                             arg=number, timeout=10_000)
    except playwright_api.TimeoutError:
        raise AssertionError(f"packet {number} is not the one selected, shown and in the address: {_state(pg)}") from None
    return _state(pg)


def _outputs(pg) -> list[str]:
    """The outputs of the page's requests to the server's callbacks, as they are sent."""
    sent: list[str] = []

    def seen(req):
        if req.method == "POST" and "_dash-update-component" in req.url:
            try:
                sent.append(str(json.loads(req.post_data or "{}").get("output")))
            except ValueError:
                sent.append("?")

    pg.on("request", seen)
    return sent


@pytest.mark.slow
def test_selected_packet_is_in_the_address(grid_server, browser):  # noqa: F811
    _st, url, ids, many = grid_server
    lens = _tshark_lengths(many)
    total = len(lens)
    pg = new_page(browser, width=1500, height=1000)
    try:
        _open_packets(pg, url, ids["many"], total)
        _show_row(pg, 1233, 1234)
        pg.click(f"{ROWS}[row-index='1233'] [col-id='info']")
        start = _at(pg, 1234)
        sent = _outputs(pg)
        # the keys select (the detail follows), each selection is in the address at once
        for _ in range(3):
            pg.keyboard.press("ArrowDown")
        s = _at(pg, 1237)
        assert s["focused"] == 1236 and _cell(pg, 1236, "length") == str(lens[1237])
        for _ in range(4):
            pg.keyboard.press("ArrowDown")
        _at(pg, 1241)
        for _ in range(4):
            pg.keyboard.press("ArrowUp")
        s = _at(pg, 1237)
        # 11 keys: the history entry replaced, not one more per key; the list did not move nor ask
        # for rows; the address was written by the page itself (no request for it); at most one
        # detail asked per key (a key held down is throttled: FOCUS_SELECT_MS)
        assert s["history"] <= start["history"] + 1, (start, s)
        assert s["scroll"] == start["scroll"], (start, s)
        assert not [o for o in sent if "packets-rows" in o or "getRowsResponse" in o or "url.search" in o or "goto-pos" in o], sent
        assert 2 <= sum("packet-detail.children" in o for o in sent) <= 11, sent
        assert "pkt=1237" in pg.url
        # the address reloaded: the same packet selected, in view, its detail open, the keys go on from it
        pg.reload()
        s = _at(pg, 1237)
        pg.wait_for_selector(f"{ROWS}[row-index='1236'] .ag-cell-focus")
        _wait_cell(pg, 1236, "no", "1237")
        assert _in_view(pg, f"{ROWS}[row-index='1236']"), s
        assert _cell(pg, 1236, "length") == str(lens[1237])
        assert f"Frame 1237: {lens[1237]} bytes on wire" in pg.inner_text("#packet-detail")
        pg.keyboard.press("ArrowDown")
        _at(pg, 1238)
        # Ctrl-End: the last packet (tshark's), in the address
        pg.keyboard.press("Control+End")
        _at(pg, total)
        _wait_cell(pg, total - 1, "no", str(total))
        assert _cell(pg, total - 1, "length") == str(lens[total]) and _in_view(pg, f"{ROWS}[row-index='{total - 1}']")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


def test_address_writer_keeps_the_selected_packet():
    """cb_url_out (a server callback, blind to the list's selection) keeps the address's
    ``pkt`` — the page wrote the selection there — when something else changed, and writes the
    packet gone to when the go-to changed (before, any change put the last go-to's back)."""
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_url_out

    from dash import no_update

    st = WebState(use_cache=False)
    try:
        search = "?capture=c1&tab=packets&pkt=1237"
        # the time format changed after the keys selected 1237 (the last go-to: 15)
        assert cb_url_out(st, "c1", "", "packets", None, None, 15, True, search, time_format="absolute",
                          goto_changed=False) == search + "&time=absolute"
        assert cb_url_out(st, "c1", "", "packets", None, None, 15, True, search, goto_changed=False) is no_update
        # a go-to: its packet
        assert cb_url_out(st, "c1", "", "packets", None, None, 15, True, search, goto_changed=True) == "?capture=c1&tab=packets&pkt=15"
        # nothing selected yet: the go-to's
        assert cb_url_out(st, "c1", "", "packets", None, None, 15, True, "?capture=c1&tab=packets",
                          goto_changed=False) == "?capture=c1&tab=packets&pkt=15"
    finally:
        st.close()
