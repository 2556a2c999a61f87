"""A "Go to packet" and a reloaded address select their packet's row even when the page takes
the go-to late (session 33), in headless Chromium (Playwright, the 20,050-packet capture of
tests/test_web_grid.py).

The grid's go-to (``goto-done``) selected the row only if the packet detail's key it was given
was already the go-to's.  On a busy page the key's own clientside callback ran after the
server's position had come back: the detail showed the packet, the address had its ``pkt``,
and nothing was selected or focused (CI: a reloaded ``?pkt=1237``; the page's CPU slowed 5-6×:
a typed go-to).  Here the race is made every time: the key's callback (``PACKET_DETAIL_KEY_JS``)
answers 1.5 s late (Dash awaits a clientside callback's Promise).  The packets' numbers and
lengths are tshark's (``-T fields -e frame.number -e frame.len``)."""
from __future__ import annotations

import json
import shutil

import pytest
from webfix import browser_fixture, grid_warnings, needs_chromium, new_page, wait_text

from test_web_grid import ROWS, _cell, _open_packets, _tshark_lengths
from test_web_grid import server as grid_server  # noqa: F401 - the fixture (the 20,050-packet capture)
from test_web_select31 import _selected
from wirefall.ui.web.app import PACKET_DETAIL_KEY_JS

pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

browser = browser_fixture()
# (a line of the key's callback that no other callback has: Dash registers an inline clientside
# callback as window.dash_clientside._dashprivate_clientside_funcs[sha256 of its source])
MARKER = next(line.strip() for line in PACKET_DETAIL_KEY_JS.splitlines() if "var why" in line)
LATE_KEY_JS = """marker => {
    const late = f => function (...a) {  // (called at once: it reads the callback's context now)
        const r = f.apply(this, a);
        window.wirefallLateKeys = (window.wirefallLateKeys || 0) + 1;
        return new Promise(res => setTimeout(() => res(r), 1500));
    };
    const ns = new Proxy({}, {set(t, k, v) { t[k] = typeof v === 'function' && String(v).includes(marker) ? late(v) : v; return true; }});
    window.dash_clientside = Object.assign(window.dash_clientside || {}, {_dashprivate_clientside_funcs: ns});
}"""


def _late_key_page(browser):
    pg = new_page(browser, width=1500, height=1000)
    pg.add_init_script(f"({LATE_KEY_JS})({json.dumps(MARKER)})")
    return pg


@pytest.mark.slow
def test_goto_selects_when_the_detail_key_comes_late(grid_server, browser):  # noqa: F811
    _st, url, ids, many = grid_server
    lens = _tshark_lengths(many)
    pg = _late_key_page(browser)
    warned = grid_warnings(pg)
    try:
        _open_packets(pg, url, ids["many"], len(lens))
        assert pg.evaluate("() => window.wirefallLateKeys") >= 1  # (the key's callback is the delayed one)
        pg.fill("#packet-goto", "15")
        pg.keyboard.press("Enter")
        # the position comes back before the key: the row is selected, focused and in view once the
        # key (and the address's pkt written from it) has come
        _selected(pg, 15, 14)
        assert _cell(pg, 14, "length") == str(lens[15])
        # a row clicked, then the address reloaded: its packet selected again
        pg.click(f"{ROWS}[row-index='7'] [col-id='info']")
        _selected(pg, 8, 7)
        pg.reload()
        wait_text(pg, "#packet-filter-msg", f"{len(lens):,} packets")
        _selected(pg, 8, 7)
        assert _cell(pg, 7, "length") == str(lens[8])
        assert not warned, warned
    finally:
        pg.context.close()
