"""The web app's tables (AG Grid) and the state a person expects it to keep, in headless
Chromium (Playwright, as tests/test_web_newcomer.py): the packet list scrolls through a
20,050-packet capture as one list (no pages, only the rows in view drawn; Ctrl-End reaches the
end even when the page draws its frames late), sorts by any column over the whole list, shows
the Time column in Wireshark's formats (against tshark's -t), marks packets (Ctrl-M) and sets
time references, paints the colouring rules' colours; the dropdown filters survive a reload;
another capture does not inherit the zoom; the waterfall is drawn once when it first appears (a
click right after lands)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from webfix import browser_fixture, needs_chromium, page_fixture, pick, private_cache, query, serving, shot, wait_rows, wait_text, zoom_to_10_60

from test_web_unit import H2, H2K, tshark_requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import ui_inputs  # noqa: E402
import web_grid_inputs  # noqa: E402

MANY = 20_000

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium,
              pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
              pytest.mark.skipif(not H2.exists(), reason="sample captures missing")]


def _tshark(*args: str) -> str:
    return subprocess.run(["tshark", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from wirefall.ui.web import WebState

    d = tmp_path_factory.mktemp("grid")
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        many = web_grid_inputs.many_packets(d, MANY)
        ids = {
            "good": st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng").id,
            "many": st.add_file(str(many), [], name=many.name).id,
            "cut": st.add_file(str(ui_inputs.truncated(d)), [str(H2K)], name="truncated-page-h2.pcapng").id,
        }
        for i in ids.values():
            st.wait(i, 120)
        with serving(st) as url:
            yield st, url, ids, many


browser = browser_fixture()
pg = page_fixture()


ROWS = "#packets .ag-center-cols-container .ag-row"


def _cell(pg, index: int, col: str) -> str:
    sel = f"{ROWS}[row-index='{index}'] [col-id='{col}']"
    pg.wait_for_selector(sel)
    return pg.inner_text(sel).strip()


def _wait_cell(pg, index: int, col: str, text: str) -> None:
    pg.wait_for_function("""([s, t]) => { const e = document.querySelector(s); return e && e.innerText.trim() === t; }""",
                         arg=[f"{ROWS}[row-index='{index}'] [col-id='{col}']", text])


def _show_row(pg, index: int, number: int) -> None:
    """Scroll the list until row ``index`` is drawn with packet ``number`` in it.  The scroll is
    asked again at each poll: the filter's message can show before the grid has taken the rows
    of the same answer (ROWS_JS runs after it), and a grid that does not know the row yet does
    not scroll to it (a flake in CI, session 32)."""
    pg.wait_for_function("""([i, s, t]) => { let api; try { api = window.dash_ag_grid.getApi('packets'); } catch (e) { return false; }
        const e = document.querySelector(s); if (e && e.innerText.trim() === t) return true;
        if (api.getDisplayedRowCount() > i) api.ensureIndexVisible(i, 'middle'); return false; }""",
                         arg=[index, f"{ROWS}[row-index='{index}'] [col-id='no']", str(number)], polling=100)


def _in_view(pg, sel: str) -> bool:
    return pg.evaluate("""s => { const e = document.querySelector(s); if (!e) return false;
        const r = e.getBoundingClientRect(), v = document.querySelector('#packets .ag-body-viewport').getBoundingClientRect();
        return r.height > 0 && r.top >= v.top - 1 && r.bottom <= v.bottom + 1; }""", sel)


def _wait_query(pg, key: str, value: str) -> None:
    """Wait for the address to hold ``key=value``: cb_url_out writes it one callback after
    the change the page shows (read at once, under load, it could still hold the old one)."""
    pg.wait_for_function("([k, v]) => new URLSearchParams(location.search).get(k) === v", arg=[key, value])


def _open_packets(pg, url: str, cid: str, total: int) -> None:
    pg.goto(url + f"?capture={cid}&tab=packets")
    wait_text(pg, "#packet-filter-msg", f"{total:,} packets")
    pg.wait_for_selector(f"{ROWS}[row-index='0'] [col-id='info']")


def _tshark_lengths(path) -> dict[int, int]:
    out = _tshark("-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "frame.len")
    return {int(a): int(b) for a, b in (line.split("\t") for line in out.splitlines())}


def test_large_capture_scrolls_as_one_list(server, pg):
    """20,050 packets: one list, no pages; only the rows in view (and a few around) are in
    the page; Ctrl-End reaches the last packet (tshark's); go to packet 15000 scrolls there
    and highlights it."""
    st, url, ids, many = server
    lens = _tshark_lengths(many)
    total = len(lens)
    assert total == MANY + 50
    _open_packets(pg, url, ids["many"], total)
    assert not pg.locator("#packets .ag-paging-panel").is_visible()  # no pager
    drawn = pg.locator(ROWS).count()
    assert 10 < drawn < 120, drawn
    pg.click(f"{ROWS}[row-index='0'] [col-id='info']")
    pg.wait_for_selector(f"{ROWS}[row-index='0'] .ag-cell-focus")  # (what a person sees before the next key)
    pg.keyboard.press("Control+End")
    last = f"{ROWS}[row-index='{total - 1}']"
    try:
        pg.wait_for_selector(last + " [col-id='no']")
    except playwright_api.TimeoutError:  # what the grid holds, for whoever reads the failure
        held = pg.evaluate("""() => { const v = document.querySelector('#packets .ag-body-viewport'),
            api = window.dash_ag_grid.getApi('packets'), f = api.getFocusedCell();
            return {scroll: v && v.scrollTop, rows: api.getDisplayedRowCount(), focused: f && f.rowIndex,
                    first: api.getFirstDisplayedRowIndex(), last: api.getLastDisplayedRowIndex()}; }""")
        raise AssertionError(f"Ctrl-End did not reach packet {total}: {held}") from None
    _wait_cell(pg, total - 1, "no", str(total))
    assert _cell(pg, total - 1, "length") == str(lens[total]) and _in_view(pg, last)
    assert pg.locator(ROWS).count() < 120
    # the same capture set again, as the address's answer does when it comes late (a busy
    # server): nothing changed, the list stays where the person scrolled it (it was thrown
    # back to the top: CI)
    pg.evaluate("cid => window.dash_clientside.set_props('capture', {value: cid})", ids["many"])
    pg.wait_for_timeout(500)
    assert _in_view(pg, last), "the same capture set again scrolled the list"
    shot(pg, "web-packets-last-of-20050.png")
    pg.fill("#packet-goto", "15000")
    pg.keyboard.press("Enter")
    row = f"{ROWS}[row-id='15000']"
    pg.wait_for_selector(row + ".pkt-goto")
    pg.wait_for_function("s => { const e = document.querySelector(s); const v = document.querySelector('#packets .ag-body-viewport')"
                         ".getBoundingClientRect(); const r = e.getBoundingClientRect(); return r.top >= v.top && r.bottom <= v.bottom; }",
                         arg=row)
    assert pg.evaluate("s => getComputedStyle(document.querySelector(s)).backgroundColor", row) == "rgb(255, 224, 130)"
    wait_text(pg, "#packet-detail-title", "Packet 15000")
    _wait_query(pg, "pkt", "15000")


# AG Grid's 150 ms timers (SCROLL_END_TIMEOUT: how long after the rows' last scroll their
# scrollbar's echo is still known for one) run at once: the page as on a machine too busy to
# draw its next frame within 150 ms (CI with -n 2 on 2 cores)
LATE_FRAMES = """(() => { const st = window.setTimeout; window.setTimeout = function (f, d) {
    const a = Array.prototype.slice.call(arguments); if (d === 150) { a[1] = 1; } return st.apply(this, a); }; })();"""
VIEWPORT = "#packets .ag-body-viewport"


def _scroll_state(pg) -> dict:
    return pg.evaluate("""s => { const v = document.querySelector(s), api = window.dash_ag_grid.getApi('packets');
        return {scroll: v.scrollTop, end: v.scrollHeight - v.clientHeight,
                first: api.getFirstDisplayedRowIndex(), last: api.getLastDisplayedRowIndex()}; }""", VIEWPORT)


@pytest.mark.slow
def test_ctrl_end_reaches_the_last_packet_when_frames_come_late(server, pg):
    """Ctrl-End and Ctrl-Home (the browser's smooth scroll of the list) on a page whose frames
    come later than AG Grid's 150 ms: the list ends at the last packet (tshark's number and
    length) and stays there, and back at the first.  AG Grid took its own scrollbar's echo of
    the scroll, a frame late, for a person moving the scrollbar and put the rows back a frame:
    the scroll stopped mid-list or was thrown back from the end (1 Ctrl-End in 4 here, CI's
    "Ctrl-End did not reach packet 20050").  A person's move of the scrollbar still moves the
    rows (the echo filter, PAGE_JS, lets it through)."""
    st, url, ids, many = server
    lens = _tshark_lengths(many)
    total = len(lens)
    pg.add_init_script(LATE_FRAMES)
    _open_packets(pg, url, ids["many"], total)
    pg.click(f"{ROWS}[row-index='0'] [col-id='info']")
    pg.wait_for_selector(f"{ROWS}[row-index='0'] .ag-cell-focus")
    at_end = "s => { const v = document.querySelector(s); return v.scrollTop >= v.scrollHeight - v.clientHeight - 1; }"
    at_top = "s => document.querySelector(s).scrollTop === 0"
    for i in range(6):  # (the old page failed within these 6 round trips in 8 runs of 8)
        for key, done, row in (("Control+End", at_end, total - 1), ("Control+Home", at_top, 0)):
            pg.keyboard.press(key)
            try:
                pg.wait_for_function(done, arg=VIEWPORT, timeout=5_000)
                pg.wait_for_timeout(400)  # (a late echo came after the scroll had reached the end)
                assert pg.evaluate(done, VIEWPORT)
            except (playwright_api.TimeoutError, AssertionError):
                raise AssertionError(f"{key} (round {i + 1}) did not stay at packet {row + 1}: {_scroll_state(pg)}") from None
            _wait_cell(pg, row, "no", str(row + 1))
            assert _cell(pg, row, "length") == str(lens[row + 1]) and _in_view(pg, f"{ROWS}[row-index='{row}']")
    # a person drags the scrollbar to packet 10,001 and then 12,001: the rows follow
    for row in (10_000, 12_000):
        pg.evaluate("([s, y]) => { document.querySelector(s).scrollTop = y; }", ["#packets .ag-body-vertical-scroll-viewport", row * 24])
        pg.wait_for_function("([s, y]) => document.querySelector(s).scrollTop === y", arg=[VIEWPORT, row * 24])
        _wait_cell(pg, row, "no", str(row + 1))
        assert _cell(pg, row, "length") == str(lens[row + 1]) and _in_view(pg, f"{ROWS}[row-index='{row}']")


def test_sort_by_any_column_over_the_whole_list(server, pg, monkeypatch):
    """A click on Length sorts all 20,050 packets (smallest first, then the largest of the
    capture first), as tshark's lengths order them; Protocol sorts page-h2 by name; a text
    sort over more packets than it may decode says so and keeps the order."""
    from wirefall.ui.web import views

    st, url, ids, many = server
    lens = _tshark_lengths(many)
    _open_packets(pg, url, ids["many"], len(lens))
    pg.click("#packets .ag-header-cell[col-id='length'] .ag-header-cell-label")
    asc = sorted(lens, key=lambda n: (lens[n], n))
    _wait_cell(pg, 0, "no", str(asc[0]))
    assert [int(_cell(pg, i, "no")) for i in range(10)] == asc[:10]
    assert [int(_cell(pg, i, "length")) for i in range(10)] == [lens[n] for n in asc[:10]]
    pg.click("#packets .ag-header-cell[col-id='length'] .ag-header-cell-label")
    desc = sorted(lens, key=lambda n: (-lens[n], n))
    _wait_cell(pg, 0, "no", str(desc[0]))
    assert [int(_cell(pg, i, "length")) for i in range(10)] == [lens[n] for n in desc[:10]]
    # text columns: decoded for every packet shown, up to a bound
    monkeypatch.setattr(views, "SORT_TEXT_LIMIT", 1000)
    pg.click("#packets .ag-header-cell[col-id='info'] .ag-header-cell-label")
    wait_text(pg, "#packet-filter-msg", "not sorted by Info")
    assert "at most 1,000" in pg.inner_text("#packet-sort-note")
    _wait_cell(pg, 0, "no", "1")
    # page-h2: by protocol, as tshark names them
    _open_packets(pg, url, ids["good"], 75)
    pg.click("#packets .ag-header-cell[col-id='protocol'] .ag-header-cell-label")
    pg.wait_for_function(f"() => document.querySelector(\"{ROWS}[row-index='0'] [col-id='protocol']\").innerText.trim() === 'HTTP2'")
    protos = sorted(_tshark("-r", str(H2), "-o", f"tls.keylog_file:{H2K}", "-T", "fields", "-e", "_ws.col.Protocol").split())
    h2 = sum(1 for p in protos if p.startswith("HTTP2"))  # (HTTP2/JSON among them: the packet list names it as tshark)
    shown = [_cell(pg, i, "protocol") for i in range(h2 + 5)]
    assert shown == protos[: h2 + 5] and shown[h2 - 1] == "HTTP2/JSON" and shown[h2] == "TCP"


def _choose_time(pg, label: str) -> None:
    pg.click("#time-format")
    pg.click(f"#time-format [role=option]:has-text('{label}'), .dash-dropdown-option:has-text('{label}')")
    wait_text(pg, "#time-format", label)


def test_time_formats_time_reference_and_marks(server, pg):
    """The Time column as tshark's -t ud (UTC date and time) and -t dd (delta from the
    previous displayed packet, with a filter); a time reference on packet 25: it shows
    *REF*, later packets count from it; Ctrl-M marks the selected packet (black, white
    text), again unmarks it."""
    st, url, ids, _ = server

    def tshark_times(fmt: str, *extra: str) -> dict[int, str]:
        out = _tshark("-r", str(H2), "-t", fmt, *extra, "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")
        return {int(a): b.strip() for a, b in (line.split("\t") for line in out.splitlines())}

    _open_packets(pg, url, ids["good"], 75)
    _choose_time(pg, "UTC date and time of day")
    ud = tshark_times("ud")
    pg.wait_for_function(f"t => document.querySelector(\"{ROWS}[row-index='0'] [col-id='time']\").innerText.trim().startsWith(t)",
                         arg=ud[1][:19])
    assert all(ud[i + 1].startswith(_cell(pg, i, "time")) and len(_cell(pg, i, "time")) == 26 for i in range(10))
    _wait_query(pg, "time", "absolute")
    pg.fill("#packet-filter", "tcp.len > 0")
    pg.keyboard.press("Enter")
    _choose_time(pg, "since the previous displayed packet")
    dd = tshark_times("dd", "-Y", "tcp.len > 0")
    first = sorted(dd)
    wait_text(pg, "#packet-filter-msg", f"{len(dd)} of 75 packets match")
    _wait_cell(pg, 1, "no", str(first[1]))
    pg.wait_for_function(f"t => Math.abs(parseFloat(document.querySelector(\"{ROWS}[row-index='1'] [col-id='time']\").innerText) - t) < 2e-6",
                         arg=float(dd[first[1]]))
    for i in range(8):
        assert abs(float(_cell(pg, i, "time")) - float(dd[first[i]])) < 2e-6
    # a time reference on packet 25
    pg.fill("#packet-filter", "")
    pg.keyboard.press("Enter")
    _choose_time(pg, "since the time reference")
    _wait_cell(pg, 24, "no", "25")
    pg.click(f"{ROWS}[row-index='24'] [col-id='info']")
    pg.click("#btn-timeref")
    wait_text(pg, "#mark-msg", "packet 25: time reference set")
    _wait_cell(pg, 24, "time", "*REF*")
    rel = {k: float(v) for k, v in tshark_times("r").items()}
    pg.wait_for_function(f"t => Math.abs(parseFloat(document.querySelector(\"{ROWS}[row-index='25'] [col-id='time']\").innerText) - t) < 2e-6",
                         arg=rel[26] - rel[25])
    assert abs(float(_cell(pg, 10, "time")) - rel[11]) < 2e-6  # before the reference: from the first packet
    # Ctrl-M on the selected packet
    row = f"{ROWS}[row-index='24']"
    pg.click(row + " [col-id='info']")
    pg.keyboard.press("Control+m")
    wait_text(pg, "#mark-msg", "packet 25 marked (1 marked)")
    pg.wait_for_selector(row + ".pkt-marked")
    style = pg.evaluate("s => { const c = getComputedStyle(document.querySelector(s)); return [c.backgroundColor, c.color]; }", row)
    assert style == ["rgb(0, 0, 0)", "rgb(255, 255, 255)"]
    pg.keyboard.press("Control+m")
    wait_text(pg, "#mark-msg", "packet 25 unmarked (0 marked)")
    pg.wait_for_function("s => !document.querySelector(s).classList.contains('pkt-marked')", arg=row)
    from wirefall.ui.web import views

    if not views.export_available():  # (analyzer.pcapng_write is written on another branch)
        assert pg.locator("#export-marked").is_disabled() and "pcapng_write" in (pg.get_attribute("#export-marked", "title") or "")


def test_rows_painted_with_the_colouring_rules(server, browser, monkeypatch):
    """With analyzer.colouring, each row has its rule's background and text colours."""
    import types

    from wirefall.ui.web import views

    fake = types.ModuleType("wirefall.analyzer.colouring")
    fake.colours_for = lambda an, nums: [("TCP", "#12272e", "#e7e6ff") if n % 2 else ("HTTP", "#12272e", "#e4ffc7")
                                         for n in nums]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wirefall.analyzer.colouring", fake)
    monkeypatch.setattr(views, "colours_available", lambda: True)
    st, url, ids, _ = server
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = ctx.new_page()
    _open_packets(pg, url, ids["good"], 75)
    pg.wait_for_function("s => getComputedStyle(document.querySelector(s)).backgroundColor !== 'rgb(255, 255, 255)'",
                         arg=f"{ROWS}[row-index='2']", timeout=10_000)
    got = pg.evaluate("""s => [0, 1, 2].map(i => { const c = getComputedStyle(document.querySelector(s + "[row-index='" + i + "']"));
                                                   return [c.backgroundColor, c.color]; })""", ROWS)
    assert got == [["rgb(231, 230, 255)", "rgb(18, 39, 46)"], ["rgb(228, 255, 199)", "rgb(18, 39, 46)"],
                   ["rgb(231, 230, 255)", "rgb(18, 39, 46)"]]
    ctx.close()


def _choose(pg, dropdown_id: str, text: str) -> None:
    """Open a dropdown that has no search box and click the option."""
    pg.click(f"#{dropdown_id}")
    pg.click(f"[role=option]:has-text('{text}')")
    wait_text(pg, f"#{dropdown_id}", text)


def test_dropdown_filters_survive_a_reload(server, pg):
    st, url, ids, _ = server
    truth = tshark_requests(H2, H2K)
    css = sum(1 for r in truth.values() if (r.get("content_type") or "").startswith("text/css"))
    assert css == 2
    pg.goto(url + f"?capture={ids['good']}")
    wait_rows(pg, len(truth))
    pick(pg, "f-content", "css")
    wait_rows(pg, css)
    pg.wait_for_function("() => new URLSearchParams(location.search).get('content') === 'css'")
    pg.reload()
    wait_rows(pg, css)
    assert "css" in pg.inner_text("#f-content") and pg.inner_text("#shown-count") == f"{css} of {len(truth)} requests"
    assert all("css" in t for t in pg.locator("#waterfall .ytick text").all_text_contents())


def test_zoom_does_not_follow_to_another_capture(server, pg):
    """Zoomed into page-h2, then another capture opened: its waterfall shows all its time
    (from 0), the address has no zoom; back to page-h2: its zoom again."""
    st, url, ids, _ = server
    pg.goto(url + f"?capture={ids['good']}")
    pg.wait_for_function("() => document.querySelectorAll('#waterfall .ytick text').length === 13")
    zoom_to_10_60(pg)
    _choose(pg, "capture", "truncated-page-h2")
    wait_text(pg, "#status", "truncated-page-h2.pcapng: ")
    pg.wait_for_function("c => new URLSearchParams(location.search).get('capture') === c", arg=ids["cut"])
    pg.wait_for_function("() => { const gd = document.querySelector('#waterfall .js-plotly-plot');"
                         " return gd && gd.layout && gd.layout.title && String(gd.layout.title.text || '').includes('truncated'); }")
    pg.wait_for_timeout(500)
    rng = pg.evaluate("() => document.querySelector('#waterfall .js-plotly-plot')._fullLayout.xaxis.range")
    assert rng[0] == 0 and rng[1] > 100, rng
    assert "x0" not in query(pg, repeated=True)
    _choose(pg, "capture", "c1: page-h2.pcapng")
    pg.wait_for_function("() => new URLSearchParams(location.search).get('x0') === '10'")


def test_zoom_store_follows_each_relayout_in_order(server, pg):
    """The zoom store's function (a clientside callback: on the server, the zoom's answer was
    dropped by Dash for the newer request of the resize that followed it) on the page's real
    graph: a zoom is stored, a resize after it keeps it, a reset is this capture's "no zoom"
    (an address's zoom does not come back after it), another capture's zoom is not this one's."""
    from wirefall.ui.web.app import XRANGE_JS

    st, url, ids, _ = server
    pg.goto(url + f"?capture={ids['good']}")
    pg.wait_for_function("() => document.querySelectorAll('#waterfall .ytick text').length === 13")
    f = f"([r, p, c]) => ({XRANGE_JS})(r, p, c)"
    zoom = pg.evaluate(f, [{"xaxis.range[0]": 90.5, "xaxis.range[1]": 140}, None, "c1"])
    assert zoom == {"capture": "c1", "range": [90.5, 140.0]}
    assert pg.evaluate(f, [{"xaxis.range": [10, 60]}, zoom, "c1"]) == {"capture": "c1", "range": [10, 60]}
    nu = pg.evaluate("() => window.dash_clientside.no_update")
    assert pg.evaluate(f, [{"autosize": True}, zoom, "c1"]) == nu  # a resize after the zoom: kept
    assert pg.evaluate(f, [{"xaxis.range[0]": 90.5, "xaxis.range[1]": 140}, zoom, "c1"]) == nu  # the same zoom
    assert pg.evaluate(f, [{"xaxis.autorange": True}, zoom, "c1"]) == {"capture": "c1", "range": None}
    assert pg.evaluate(f, [{"xaxis.autorange": True}, {"capture": "c1", "range": None}, "c1"]) == nu
    assert pg.evaluate(f, [{"autosize": True}, None, "c1"]) == nu  # nothing stored: a resize stores nothing
    assert pg.evaluate(f, [{"xaxis.range": [10, 60]}, {"capture": "c9", "range": [10, 60]}, "c1"]) == {
        "capture": "c1", "range": [10, 60]}  # another capture's zoom is not this one's
    assert pg.evaluate(f, [{"xaxis.range": [10, "x"]}, None, "c1"]) == nu  # not a range
    # on the page: a zoom and at once a resize's relayout (the detail panel opening after a click:
    # dcc.Graph's ResizeObserver, a task of its own) — the zoom reaches the address (on the server
    # the resize's newer request dropped the zoom's answer: this failed before)
    pg.evaluate("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        return Plotly.relayout(gd, {'xaxis.range[0]': 10, 'xaxis.range[1]': 60})
            .then(() => { setTimeout(() => gd.emit('plotly_relayout', {autosize: true}), 0); }); }""")
    pg.wait_for_function("() => new URLSearchParams(location.search).get('x0') === '10'", timeout=5000)
    assert query(pg, repeated=True)["x1"] == "60"


def test_zoom_merged_with_a_resize_on_a_fresh_page_is_kept(server, pg):
    """The page's first relayout is a zoom and the detail panel's resize in one task (a slow
    machine: the panel opened as the person zoomed): dcc.Graph's relayoutData holds the resize
    alone.  The graph's own listener saw the zoom, and it listens from the first drawing: it
    was added by the zoom store's first call, too late for this one (the live test's zoom never
    reached the address, 1 CI run in 4; this failed before)."""
    st, url, ids, _ = server
    pg.goto(url + f"?capture={ids['good']}")
    pg.wait_for_function("() => document.querySelectorAll('#waterfall .ytick text').length === 13")
    assert pg.evaluate("() => document.querySelector('#waterfall .js-plotly-plot')._wfZoomSeen") is True
    pg.evaluate("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        return Plotly.relayout(gd, {'xaxis.range[0]': 10, 'xaxis.range[1]': 60})
            .then(() => { gd.emit('plotly_relayout', {autosize: true}); }); }""")
    pg.wait_for_function("() => new URLSearchParams(location.search).get('x0') === '10'", timeout=10_000)
    assert query(pg, repeated=True)["x1"] == "60"


def test_first_load_draws_the_waterfall_once(server, browser):
    """The figure is drawn when it arrives and not again (dcc.Graph redrew it on the height
    change from Plotly's 450 px default: twice within a second, a click in between lost);
    a click right after it appears opens the request."""
    st, url, ids, _ = server
    truth = tshark_requests(H2, H2K)
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = ctx.new_page()
    pg.goto(url + f"?capture={ids['good']}")
    # the graph's relayout events from its first draw on (the zoom store is the page's own: no request to count)
    pg.wait_for_function("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        if (!gd || !gd.on) { return false; }
        if (!window._relayouts) { window._relayouts = []; gd.on('plotly_relayout', d => window._relayouts.push(d)); }
        return true; }""", polling="raf")
    wait_rows(pg, len(truth))
    pg.evaluate("""() => { window._draws = 0; document.querySelector('#waterfall .js-plotly-plot')
                             .on('plotly_afterplot', () => { window._draws += 1; }); }""")
    pg.wait_for_timeout(2500)
    assert pg.evaluate("() => window._draws") == 0
    relayouts = pg.evaluate("() => window._relayouts")
    assert not relayouts, relayouts  # no {"autosize": true} from a redraw
    x, y = pg.evaluate("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        const L = gd._fullLayout, r = gd.getBoundingClientRect(); let best = null;
        for (const tr of gd._fullData) { if (tr.type !== 'bar') continue;
            tr.y.forEach((yy, k) => { if (yy === 8 && (!best || tr.x[k] > best[1])) best = [tr.base[k], tr.x[k]]; }); }
        return [r.left + L._size.l + L.xaxis.l2p(best[0] + best[1] / 2), r.top + L._size.t + L.yaxis.l2p(8)]; }""")
    pg.mouse.click(x, y)
    pg.wait_for_selector("#detail-title", timeout=10_000)
    # the detail panel opening narrows the figure: that is a resize, and it is drawn again to fit
    pg.wait_for_function("() => { const gd = document.querySelector('#waterfall .js-plotly-plot');"
                         " return Math.abs(gd._fullLayout.width - gd.getBoundingClientRect().width) < 1; }")
    ctx.close()
