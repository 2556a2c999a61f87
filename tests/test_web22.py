"""The web app against a web-performance engineer's review (2026), in headless Chromium
(Playwright, as tests/test_web_browser.py):

- a HAR of several pages (WebPageTest's two runs) says which page it shows, as the CLI does,
  and a "HAR page" menu shows another, as ``--har-page N|all`` does;
- the Compare tab's page table is the CLI's ``compare`` table cell for cell (a difference of two
  percentages is "+96.5 pt", signed, never "96.5 %" beside the relative column);
- a click on a bar at 1024×768 leaves the waterfall the page's width (the detail a sheet below it,
  not beside it) and its time axis the page's time, not stretched;
- the connection lanes name each connection by the model's id, the one the request detail, the
  Connections tab and the JSON use.

Screenshots go to /tmp/wirefall-shots/."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT, SHARED
from webfix import browser_fixture, needs_chromium, new_page, pick, private_cache, serving, shot, wait_rows, wait_text

PAGE = ROOT / "sample_captures" / "page"
H1, H1K, H2, H2K = PAGE / "page-h1.pcapng", PAGE / "page-h1.keys", PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
WPT = SHARED / "hars" / "webpagetest-amazon.har.gz"
AMAZON, AMAZON_K = SHARED / "pageload-amazon" / "amazon1.cap.gz", SHARED / "pageload-amazon" / "amazon1.key_log.txt.gz"

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [needs_chromium, pytest.mark.skipif(not H2.exists(), reason="sample captures missing")]


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "wirefall", *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from wirefall.ui.web import WebState

    d = tmp_path_factory.mktemp("web22")
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        ids = {"h1": st.add_file(str(H1), [str(H1K)], name="page-h1.pcapng").id,
               "h2": st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng").id}
        if WPT.exists():
            ids["wpt"] = st.add_file(str(WPT), name="wpt.har").id
        if AMAZON.exists() and AMAZON_K.exists():
            ids["amazon"] = st.add_file(str(AMAZON), [str(AMAZON_K)], name="amazon1.cap").id
        for i in ids.values():
            st.wait(i, 120)
        with serving(st) as url:
            yield st, url, ids


browser = browser_fixture()


@pytest.fixture
def pg1024(browser):
    page = new_page(browser, width=1024, height=768)
    yield page
    try:
        assert not page.errors, page.errors
    finally:
        page.context.close()


@pytest.fixture
def pg(browser):
    page = new_page(browser, width=1440, height=900)
    yield page
    try:
        assert not page.errors, page.errors
    finally:
        page.context.close()


def _choose(pg, dropdown_id: str, text: str) -> None:
    """Click the option containing ``text`` in a Dash dropdown that has a value (it opens on the
    chosen option, not on its search box: webfix.pick's typing goes nowhere), then wait until
    the dropdown shows it."""
    for _ in range(3):
        pg.click(f"#{dropdown_id}")
        opt = pg.locator(".dash-options-list-option", has_text=text).first
        try:
            opt.click(timeout=5_000)
            pg.wait_for_function("([id, t]) => (document.getElementById(id) || {innerText: ''}).innerText.includes(t)",
                                 arg=[dropdown_id, text], timeout=15_000)
            return
        except playwright_api.TimeoutError:
            pg.keyboard.press("Escape")
    raise AssertionError(f"could not choose {text!r} in #{dropdown_id}")


def _need(ids, key):
    if key not in ids:
        pytest.skip(f"third-party capture for {key} not present (../shared/captures)")
    return ids[key]


# ---------------------------------------------------------------------- 2. a HAR of several pages


def test_har_of_two_pages_says_so_and_shows_the_other(server, pg):
    """WebPageTest's HAR of two runs: the status line has the CLI's note ("HAR has 2 pages;
    showing page 1 …", what `wirefall summary` prints on stderr), the header's HAR page menu
    lists both runs and every page; page 2 chosen, the app opens the HAR again with page 2 (the
    requests `--har-page 2` gives, its note "as asked"); every page: the 30 entries; page 1
    again: the first entry, not a third analysis."""
    from wirefall.analyzer.browserlog import open_log

    st, url, ids = server
    cid = _need(ids, "wpt")
    note = next(ln for ln in _cli("summary", WPT).stderr.splitlines() if "HAR has 2 pages" in ln)
    note = note.split("wirefall: note: ", 1)[1]
    pg.goto(url + f"?capture={cid}")
    wait_rows(pg, 15)
    wait_text(pg, "#status", "HAR has 2 pages")
    assert note in pg.inner_text("#status")
    pg.wait_for_selector("#har-page-bar", state="visible")
    assert "page 1 'Run 1, First View for https://www.amazon.com' (15 entries)" in pg.inner_text("#har-page")
    shot(pg, "web22-har-page1.png")
    # page 2, as --har-page 2
    _choose(pg, "har-page", "Run 2")
    pg.wait_for_function("c => { const q = new URLSearchParams(location.search).get('capture'); return q && q !== c; }", arg=cid)
    wait_text(pg, "#status", "showing page 2 'Run 2, First View for https://www.amazon.com' (15 entries), as asked")
    wait_rows(pg, 15)
    c2 = pg.evaluate("() => new URLSearchParams(location.search).get('capture')")
    want = open_log(str(WPT), limits={"har_page": 2})
    got = st.get(c2).analysis
    assert [(x.url, x.browser.get("id")) for x in got.exchanges] == [(x.url, x.browser.get("id")) for x in want.exchanges]
    assert {x.browser.get("id") for x in got.exchanges} == {str(i) for i in range(15, 30)}
    assert "HAR page 2" in pg.inner_text("#capture")
    shot(pg, "web22-har-page2.png")
    # every page, as --har-page all
    _choose(pg, "har-page", "every page")
    wait_text(pg, "#status", "showing every page (30 entries)")
    wait_rows(pg, 30)
    # page 1 again: the entry that shows it already
    _choose(pg, "har-page", "Run 1")
    pg.wait_for_function("c => new URLSearchParams(location.search).get('capture') === c", arg=cid)
    wait_text(pg, "#status", "showing page 1")
    assert sum(1 for e in st.list() if e.path == str(WPT)) == 3


def test_no_har_page_menu_for_a_capture(server, pg):
    st, url, ids = server
    pg.goto(url + f"?capture={ids['h2']}")
    wait_rows(pg, 13)
    assert not pg.locator("#har-page-bar").is_visible()
    assert "HAR has" not in pg.inner_text("#status")


# ---------------------------------------------------------------------- 3. compare: the CLI's cells


def _cli_page_table(text: str) -> list[str]:
    """The page table's rows of `wirefall compare`'s text, each with its runs of spaces made one."""
    lines = text.splitlines()
    ruler = next(i for i, ln in enumerate(lines) if ln.startswith("---"))
    rows = []
    for ln in lines[ruler + 1:]:
        if not ln.strip() or ln.startswith("(A − B) / A:"):
            break
        rows.append(" ".join(ln.split()))
    return [" ".join(lines[ruler - 1].split())] + rows


def test_compare_page_table_is_the_clis_cell_for_cell(server, pg):
    """page-h1 (A) against page-h2 (B) in the Compare tab: each cell of the page table is the
    CLI's — "+96.5 pt" for the request header compression (two percentages: points), signed
    differences ("+3,724", "-5"), "–" where the CLI has one — and the rows are the CLI's rows."""
    st, url, ids = server
    cli = _cli("compare", H1, H2, "--keylog", H1K, "--keylog-b", H2K).stdout
    want = _cli_page_table(cli)
    pg.goto(url + f"?capture={ids['h1']}&tab=compare")
    pick(pg, "compare-a", "page-h1")
    pick(pg, "compare-b", "page-h2")
    pg.click("#btn-compare")
    pg.wait_for_selector("#compare-page tbody tr")
    cells = pg.evaluate("""() => [...document.querySelectorAll('#compare-page tr')].map(r =>
        [...r.querySelectorAll('th, td')].map(c => c.innerText.trim()))""")
    assert len(cells) == len(want) and all(len(r) == 5 for r in cells)
    for row, line in zip(cells, want):
        assert " ".join(" ".join(row).split()) == line, (row, line)
    comp = next(r for r in cells if r[0] == "request header compression")
    assert comp[3] == "+96.5 pt" and comp[4] == "–"
    assert next(r for r in cells if r[0] == "response header compression")[3] == "+63.0 pt"
    assert any(r[3].startswith("+") and r[3] != "+0" for r in cells) and any(r[3].startswith("-") for r in cells)
    assert "96.5 %" not in pg.inner_text("#compare-page")
    pg.locator("#compare-page").scroll_into_view_if_needed()
    shot(pg, "web22-compare-h1-h2.png")


# ---------------------------------------------------------------------- 5. the detail at 1024 px


def _bar_xy(pg, index: int):
    return pg.evaluate("""i => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        const L = gd._fullLayout, r = gd.getBoundingClientRect();
        let best = null;
        for (const tr of gd._fullData) { if (tr.type !== 'bar' || tr.yaxis !== 'y') continue;
            tr.y.forEach((yy, k) => { if (yy === i && (!best || tr.x[k] > best[1])) best = [tr.base[k], tr.x[k]]; }); }
        return [r.left + L._size.l + L.xaxis.l2p(best[0] + best[1] / 2), r.top + L._size.t + L.yaxis.l2p(i)]; }""", index)


def _click_row(pg, index: int) -> None:
    """Click row ``index``'s bar (scrolled into the window first) until its detail shows (a
    click during a redraw can be lost: up to three tries)."""
    for attempt in range(3):
        pg.evaluate("() => document.querySelector('#waterfall').scrollIntoView({block: 'start'})")
        pg.wait_for_timeout(200)
        x, y = _bar_xy(pg, index)
        pg.mouse.click(x, y)
        try:
            pg.wait_for_selector("#detail-side:not(.none) #detail-title", timeout=5000)
            return
        except playwright_api.TimeoutError:
            if attempt == 2:
                raise
            pg.wait_for_timeout(300)


LAYOUT_JS = """() => { const gd = document.querySelector('#waterfall .js-plotly-plot'), g = gd.getBoundingClientRect();
    const s = document.querySelector('#detail-side').getBoundingClientRect();
    return {graph: [g.left, g.top, g.width, g.bottom], side: [s.left, s.top, s.width, s.bottom], range: gd._fullLayout.xaxis.range,
            ticks: gd._fullLayout.xaxis._vals.length, inner: window.innerWidth, height: window.innerHeight}; }"""


@pytest.mark.parametrize("which, row", [("h2", 8), ("amazon", 13)])
def test_a_click_at_1024_keeps_the_waterfall_readable(server, pg1024, which, row):
    """At 1024×768 a click opened the detail beside the waterfall and left the graph ~600 px, its
    time axis ~200 px with two ticks, stretched to 5.1 s for a 3.7 s page.  Now the detail does
    not share the waterfall's row (a sheet over the window's bottom, the clicked row kept in
    sight above it), the graph keeps the page's width and its axis ends within 10 % of the page's
    last byte; the sheet's close button gives the whole window back."""
    from wirefall.ui.web import views

    st, url, ids = server
    cid = _need(ids, which)
    e = st.get(cid)
    wf = views.waterfall_of(e)
    last = max((r.end - wf.t0) * 1000 for r in wf.rows)
    pg = pg1024
    pg.goto(url + f"?capture={cid}")
    wait_rows(pg, len(wf.rows))
    pg.wait_for_timeout(500)
    _click_row(pg, row)
    pg.wait_for_function("() => (document.querySelector('#waterfall .js-plotly-plot').layout.shapes || []).some(s => s.name === 'selected')")
    pg.wait_for_timeout(800)  # (the figure laid out again for the selection, the page scrolled to the row)
    got = pg.evaluate(LAYOUT_JS)
    shot(pg, f"web22-click-1024-{which}.png")
    gx, gy, gw, gb = got["graph"]
    sx, sy, sw, sb = got["side"]
    assert gw >= 0.6 * got["inner"] or sy >= gy + 50 or sx + sw <= gx, got  # wide, or the detail not in its row
    assert gw >= 0.9 * got["inner"] and sy > gy and sw >= 0.9 * got["inner"], got  # (here: the whole width, the detail below)
    x0, x1 = got["range"]
    assert x0 <= 0.0 + 1e-6 and last <= x1 <= 1.1 * last, (got["range"], last)
    assert got["ticks"] >= 5, got
    # the clicked row is above the sheet, in the window
    _x, y = _bar_xy(pg, row)
    assert 0 < y < sy, (y, got)
    assert pg.evaluate("() => new URLSearchParams(location.search).get('sel')")
    pg.click("#detail-close")
    pg.wait_for_selector("#detail-side.none", state="attached")
    pg.wait_for_function("() => !new URLSearchParams(location.search).get('sel')")
    pg.wait_for_function("() => !(document.querySelector('#waterfall .js-plotly-plot').layout.shapes || []).some(s => s.name === 'selected')")


def test_detail_beside_at_1440_keeps_most_of_the_width(server, pg):
    """On a wide window the detail is beside the waterfall, at most 36 % of the page (560 px), and
    the figure is laid out for the graph's width beside it: the axis no longer runs half as far
    again as the page (the layout was made for a 570 px graph whatever the window)."""
    from wirefall.ui.web import views

    st, url, ids = server
    cid = ids["h2"]
    wf = views.waterfall_of(st.get(cid))
    last = max((r.end - wf.t0) * 1000 for r in wf.rows)
    pg.goto(url + f"?capture={cid}")
    wait_rows(pg, len(wf.rows))
    _click_row(pg, 8)
    pg.wait_for_timeout(800)
    got = pg.evaluate(LAYOUT_JS)
    gx, gy, gw, gb = got["graph"]
    sx, sy, sw, sb = got["side"]
    assert sx >= gx + gw - 5 and sw <= 560 + 1 and gw >= 0.6 * got["inner"], got
    assert got["range"][1] <= 1.2 * last, (got["range"], last)
    shot(pg, "web22-click-1440.png")


# ---------------------------------------------------------------------- 7. one connection id


def _lane_ids(pg) -> list[int]:
    """The ids the connection lanes' labels give ("#17 host:443 h2"), top to bottom."""
    for _ in range(50):  # (the figure may be re-laid out for the graph's width between the two reads)
        texts = pg.evaluate("() => document.querySelector('#waterfall .js-plotly-plot')._fullLayout.yaxis2.ticktext")
        drawn = [t.replace("\xa0", " ") for t in pg.locator("#waterfall .y2tick text").all_text_contents()]
        if drawn and all(any(d.strip() == t.replace("\xa0", " ").strip() for t in texts) for d in drawn):
            break
        pg.wait_for_timeout(200)
    assert drawn and all(any(d.strip() == t.replace("\xa0", " ").strip() for t in texts) for d in drawn), (drawn, texts)
    out = []
    for t in texts:
        m = re.match(r"\s*#(\d+) ", t.replace("\xa0", " "))
        assert m, t
        out.append(int(m.group(1)))
    return out


@pytest.mark.parametrize("which", ["h1", "amazon"])
def test_lane_ids_are_the_request_details_connection_ids(server, pg, which):
    """The connection lanes under the waterfall numbered connections 1, 2, 3 … in order of first
    use while the request detail, the Connections tab, the statistics and the JSON say the
    model's id ("#2" in the lanes was "connection 17" in the detail).  Each lane's id is the
    connection id the request detail gives for every row drawn in that lane — read from the
    page for a clicked row, and for all rows from the detail the app shows."""
    from wirefall.analyzer.request_detail import request_detail as detail_of
    from wirefall.ui.web import views

    st, url, ids = server
    cid = _need(ids, which)
    e = st.get(cid)
    wf = views.waterfall_of(e)
    pg.goto(url + f"?capture={cid}")
    wait_rows(pg, len(wf.rows))
    lanes = _lane_ids(pg)
    assert len(lanes) == len(wf.connection_rows)
    by_id = {x.id: x for x in e.analysis.exchanges}
    for k, cn in enumerate(wf.connection_rows):
        for i, _a, _b in cn.requests:
            r = wf.rows[i]
            d = detail_of(e.analysis, by_id[r.exchange], row=r, waterfall=wf)
            assert lanes[k] == d.connection == r.connection, (k, i, lanes[k], d.connection)
    assert {c["id"] for c in views.connection_rows(e)} >= set(lanes)  # the Connections tab's ids
    # in the page: the clicked row's detail names the connection its lane names
    row = 1
    _click_row(pg, row)
    facts = pg.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#request-detail table.kv tr')]
        .map(r => [r.children[0].innerText.trim(), r.children[1].innerText.trim()]))""")
    conn = int(facts["connection"].split()[0])
    k = next(k for k, cn in enumerate(wf.connection_rows) if any(i == row for i, _a, _b in cn.requests))
    assert _lane_ids(pg)[k] == conn
    shot(pg, f"web22-lanes-{which}.png")
