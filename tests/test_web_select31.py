"""The packet list's selection as a person leaves it and comes back (session 31), in headless
Chromium (Playwright, the 20,050-packet capture of tests/test_web_grid.py):

- the Packets tab shown again selects, focuses and shows the packet the address's ``pkt`` names
  (the one selected last, by a click or the keys), as Wireshark keeps the selected packet in view.
  The grid is made anew with each showing of the tab: it scrolled to the last "Go to packet"
  target instead and selected nothing, while the detail still showed the packet and dash-ag-grid,
  giving the new grid its old selection before its rows had come, selected the loading row
  (AG Grid's warning #60 in the console);
- nothing selected — a Ctrl-click on the selected row, a filter that hides it, another capture — no
  ``pkt`` in the address (a reload selected the packet left), without a history entry; a filter
  that keeps the selected packet keeps it selected;
- the horizontal scroll of a page whose frames come late: the header and the scrollbar end where
  the rows end (AG Grid took its scrollbar's late echo for the person's scroll and ignored the
  rows' own scrolls after it: the column titles stopped a few pixels off their columns).

The packets' numbers and lengths are tshark's (``-T fields -e frame.number -e frame.len``), the
filters' counts tshark's ``-Y``."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from webfix import browser_fixture, grid_warnings, needs_chromium, new_page, wait_text

from test_web_grid import LATE_FRAMES, ROWS, _cell, _in_view, _open_packets, _show_row, _tshark_lengths, _wait_cell, _wait_query
from test_web_grid import server as grid_server  # noqa: F401 - the fixture (the 20,050-packet capture)

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

browser = browser_fixture()
VIEWPORT = "#packets .ag-body-viewport"


def _state(pg) -> dict:
    return pg.evaluate("""v => { let api; try { api = window.dash_ag_grid.getApi('packets'); } catch (e) { return {grid: false}; }
        const f = api.getFocusedCell(), t = document.querySelector('#packet-detail-title');
        return {focused: f && f.rowIndex, selected: api.getSelectedNodes().map(n => n.data && n.data.no),
                title: t && t.innerText, search: location.search, history: history.length,
                first: api.getFirstDisplayedRowIndex(), last: api.getLastDisplayedRowIndex()}; }""", VIEWPORT)


def _selected(pg, number: int, index: int) -> dict:
    """Wait until packet ``number`` is the one selected, at row ``index`` focused and in view, its
    detail shown and the address's ``pkt``."""
    row = f"{ROWS}[row-index='{index}']"
    try:
        _wait_query(pg, "pkt", str(number))
        wait_text(pg, "#packet-detail-title", f"Packet {number}")
        pg.wait_for_function("n => { let s; try { s = window.dash_ag_grid.getApi('packets').getSelectedNodes(); }"
                             " catch (e) { return false; } return s.length === 1 && s[0].data && s[0].data.no === n; }",
                             arg=number)
        pg.wait_for_selector(row + ".ag-row-selected .ag-cell-focus")
        _wait_cell(pg, index, "no", str(number))
    except playwright_api.TimeoutError:
        raise AssertionError(f"packet {number} (row {index}) is not the one selected, shown and in the address: {_state(pg)}") from None
    assert _in_view(pg, row), _state(pg)
    return _state(pg)


def _nothing_selected(pg) -> dict:
    """Wait until no packet is selected, the detail shows none and the address has no ``pkt``."""
    try:
        pg.wait_for_function("() => !new URLSearchParams(location.search).has('pkt')")
        pg.wait_for_function("() => window.dash_ag_grid.getApi('packets').getSelectedNodes().length === 0")
        wait_text(pg, "#packet-detail", "Select a packet")
    except playwright_api.TimeoutError:
        raise AssertionError(f"a packet is still selected, shown or in the address: {_state(pg)}") from None
    return _state(pg)


def _tab(pg, name: str) -> None:
    pg.click(f"#tabs .tab:has-text('{name}')")
    pg.wait_for_function("t => { const e = document.querySelector('#tabs .tab--selected'); return e && e.innerText.includes(t); }",
                         arg=name)


def _tshark_count(path, expr: str) -> int:
    out = subprocess.run(["tshark", "-r", str(path), "-Y", expr, "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True).stdout
    return len(out.split())


@pytest.mark.slow
def test_tab_shown_again_selects_the_packet_in_the_address(grid_server, browser):  # noqa: F811
    _st, url, ids, many = grid_server
    lens = _tshark_lengths(many)
    total = len(lens)
    pg = new_page(browser, width=1500, height=1000)
    warned = grid_warnings(pg)
    try:
        _open_packets(pg, url, ids["many"], total)
        # a go-to (the packet the old page went back to), then a click and the keys elsewhere
        pg.fill("#packet-goto", "3000")
        pg.keyboard.press("Enter")
        _selected(pg, 3000, 2999)
        _show_row(pg, 9000, 9001)
        pg.click(f"{ROWS}[row-index='9000'] [col-id='info']")
        for _ in range(3):
            pg.keyboard.press("ArrowDown")
        _selected(pg, 9004, 9003)
        for other, back in (("Waterfall", 9004), ("Connections", 9005)):
            _tab(pg, other)
            assert f"pkt={back}" in pg.url
            _tab(pg, "Packets")
            s = _selected(pg, back, back - 1)
            assert s["selected"] == [back] and s["focused"] == back - 1, s
            assert _cell(pg, back - 1, "length") == str(lens[back])
            assert f"Frame {back}: {lens[back]} bytes on wire" in pg.inner_text("#packet-detail")
            pg.wait_for_timeout(500)  # (it stays: nothing selects or scrolls after it)
            assert _state(pg)["selected"] == [back] and _in_view(pg, f"{ROWS}[row-index='{back - 1}']"), _state(pg)
            # the keys go on from it
            pg.keyboard.press("ArrowDown")
            _selected(pg, back + 1, back)
        # no AG Grid warning: the new grid was not given the old selection before its rows came (#60)
        assert not warned, warned
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
def test_nothing_selected_leaves_no_packet_in_the_address(grid_server, browser):  # noqa: F811
    _st, url, ids, many = grid_server
    lens = _tshark_lengths(many)
    total = len(lens)
    pg = new_page(browser, width=1500, height=1000)
    warned = grid_warnings(pg)
    try:
        _open_packets(pg, url, ids["many"], total)
        pg.fill("#packet-goto", "15")
        pg.keyboard.press("Enter")
        _selected(pg, 15, 14)
        pg.click(f"{ROWS}[row-index='5'] [col-id='info']")
        start = _selected(pg, 6, 5)
        # Ctrl-click on the selected row: nothing selected (the page selected it again), no pkt
        pg.click(f"{ROWS}[row-index='5'] [col-id='info']", modifiers=["Control"])
        s = _nothing_selected(pg)
        assert s["history"] == start["history"], (start, s)
        # another change of the address: the last go-to (15) is not put back
        pg.click("#time-format")
        pg.click("#time-format [role=option]:has-text('UTC date and time of day'), "
                 ".dash-dropdown-option:has-text('UTC date and time of day')")
        _wait_query(pg, "time", "absolute")
        pg.wait_for_timeout(500)
        assert "pkt" not in pg.evaluate("() => location.search"), _state(pg)
        # reloaded: nothing selected
        pg.reload()
        wait_text(pg, "#packet-filter-msg", f"{total:,} packets")
        _wait_cell(pg, 14, "no", "15")
        pg.wait_for_timeout(1000)
        s = _state(pg)
        assert s["selected"] == [] and "pkt" not in s["search"] and not s["title"], s
        # a filter that hides the selected packet: nothing selected, no pkt, no history entry
        pg.click(f"{ROWS}[row-index='7'] [col-id='info']")
        start = _selected(pg, 8, 7)
        pg.fill("#packet-filter", "frame.number > 100")
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", f"{_tshark_count(many, 'frame.number > 100'):,} of {total:,} packets match")
        s = _nothing_selected(pg)
        assert s["history"] == start["history"], (start, s)
        # a filter that keeps it: still selected, where the filter put it (tshark's order)
        pg.fill("#packet-filter", "")
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", f"{total:,} packets")
        _show_row(pg, 9003, 9004)
        pg.click(f"{ROWS}[row-index='9003'] [col-id='info']")
        _selected(pg, 9004, 9003)
        expr = "frame.number > 5000"
        pg.fill("#packet-filter", expr)
        pg.keyboard.press("Enter")
        wait_text(pg, "#packet-filter-msg", f"{_tshark_count(many, expr):,} of {total:,} packets match")
        pg.wait_for_timeout(500)
        s = _state(pg)
        assert s["selected"] == [9004] and "pkt=9004" in s["search"] and s["title"] == "Packet 9004", s
        index = _tshark_count(many, f"{expr} && frame.number < 9004")
        _show_row(pg, index, 9004)
        pg.wait_for_selector(f"{ROWS}[row-index='{index}'].ag-row-selected")
        assert _cell(pg, index, "length") == str(lens[9004])
        assert not warned, warned
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


def _choose_capture(pg, text: str) -> None:
    pg.click("#capture")
    pg.click(f"[role=option]:has-text('{text}')")
    wait_text(pg, "#capture", text)


@pytest.mark.slow
def test_another_capture_starts_with_nothing_selected(grid_server, browser):  # noqa: F811
    """Another capture chosen, in the Packets tab or in another: nothing is selected in it and
    the address has no ``pkt`` (AG Grid kept the row of the same number selected, by its id, and
    the address the other capture's packet: a reload selected it in this one)."""
    _st, url, ids, many = grid_server
    from test_web_unit import H2

    lens = _tshark_lengths(many)
    h2 = _tshark_lengths(H2)
    pg = new_page(browser, width=1500, height=1000)
    try:
        _open_packets(pg, url, ids["many"], len(lens))
        pg.click(f"{ROWS}[row-index='5'] [col-id='info']")
        _selected(pg, 6, 5)
        _choose_capture(pg, f"{ids['good']}: page-h2")
        wait_text(pg, "#packet-filter-msg", f"{len(h2)} packets")
        _wait_cell(pg, 5, "length", str(h2[6]))
        _nothing_selected(pg)
        pg.wait_for_timeout(500)
        assert _state(pg)["selected"] == [] and "pkt" not in pg.evaluate("() => location.search"), _state(pg)
        pg.click(f"{ROWS}[row-index='9'] [col-id='info']")
        _selected(pg, 10, 9)
        assert f"Frame 10: {h2[10]} bytes on wire" in pg.inner_text("#packet-detail")
        _tab(pg, "Waterfall")
        _choose_capture(pg, ids["many"] + ":")
        pg.wait_for_function("c => new URLSearchParams(location.search).get('capture') === c", arg=ids["many"])
        pg.wait_for_timeout(500)
        assert "pkt" not in pg.evaluate("() => location.search")
        pg.reload()
        _tab(pg, "Packets")
        wait_text(pg, "#packet-filter-msg", f"{len(lens):,} packets")
        _wait_cell(pg, 9, "length", str(lens[10]))
        pg.wait_for_timeout(1000)
        s = _state(pg)
        assert s["selected"] == [] and "pkt" not in s["search"] and not s["title"], s
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


HSCROLL = """() => { const q = s => document.querySelector('#packets ' + s);
    const c = q('.ag-center-cols-viewport'), f = q('.ag-body-horizontal-scroll-viewport'), h = q('.ag-header-viewport');
    return {rows: c.scrollLeft, end: c.scrollWidth - c.clientWidth, scrollbar: f.scrollLeft, header: h.scrollLeft,
            title: q('.ag-header-cell[col-id="length"]').getBoundingClientRect().x,
            cell: q('.ag-row[row-index="0"] [col-id="length"]').getBoundingClientRect().x}; }"""


@pytest.mark.slow
def test_header_follows_a_sideways_scroll_when_frames_come_late(grid_server, browser):  # noqa: F811
    """A window too narrow for the packet list's columns, frames later than AG Grid's 150 ms
    (test_web_grid.LATE_FRAMES): the rows scrolled sideways to the end and back (the browser's
    smooth scroll, as the wheel's), six times — each time the header and the scrollbar end where
    the rows end, the Length title over its column (the old page: in 7 runs of 12); a person's
    move of the scrollbar still moves the rows."""
    _st, url, ids, many = grid_server
    lens = _tshark_lengths(many)
    pg = new_page(browser, width=760, height=900)
    pg.add_init_script(LATE_FRAMES)
    try:
        _open_packets(pg, url, ids["many"], len(lens))
        assert _cell(pg, 0, "length") == str(lens[1])
        end = pg.evaluate(HSCROLL)["end"]
        assert end > 200, pg.evaluate(HSCROLL)  # (the columns are wider than the window)
        for i in range(6):
            to = end if i % 2 == 0 else 0
            pg.evaluate("t => document.querySelector('#packets .ag-center-cols-viewport').scrollTo({left: t, behavior: 'smooth'})", to)
            pg.wait_for_function("t => Math.abs(document.querySelector('#packets .ag-center-cols-viewport').scrollLeft - t) < 1", arg=to)
            pg.wait_for_timeout(600)  # (a late echo came after the rows' scroll had ended)
            s = pg.evaluate(HSCROLL)
            assert abs(s["rows"] - to) < 1 and s["header"] == s["rows"] and s["scrollbar"] == s["rows"], (i, s)
            assert abs(s["title"] - s["cell"]) < 1, (i, s)
        # a person drags the scrollbar: the rows and the header follow
        for x in (120, 40):
            pg.evaluate("x => { document.querySelector('#packets .ag-body-horizontal-scroll-viewport').scrollLeft = x; }", x)
            pg.wait_for_function("x => document.querySelector('#packets .ag-center-cols-viewport').scrollLeft === x", arg=x)
            pg.wait_for_timeout(300)
            s = pg.evaluate(HSCROLL)
            assert s["rows"] == s["header"] == s["scrollbar"] == x and abs(s["title"] - s["cell"]) < 1, s
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()
