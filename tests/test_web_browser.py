"""The web dashboard in headless Chromium, used as a person would: open the app on a
sample capture, see one waterfall bar per request (as many as tshark shows), hover a
bar and read its tooltip, click it and read its headers (compared with tshark's), filter,
visit every tab, upload another capture with its key log, compare the two, download a
PNG and look inside it.  Screenshots of each view go to a temporary folder
(``$WIREFALL_SHOTS`` if set, so that a person can look at them).

Driver: Playwright for Python driving Debian's /usr/bin/chromium (no ``playwright
install``): it waits for elements by itself, hovers and clicks at page coordinates,
fills file inputs and catches downloads without extra plumbing, and it has no pin on an
old Selenium as ``dash[testing]`` has (selenium <= 4.2).  The app runs in this process
on a free port (werkzeug's threaded server, as ``wirefall web`` uses).
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from pngutil import png_pixels
from webfix import chromium, needs_chromium, new_page, pick, private_cache, row_labels, serving, wait_rows

from test_web_unit import H2, H2K, H3, H3K, _server_log_h3, tshark_requests

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
pytestmark = [
    needs_chromium,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
    pytest.mark.skipif(not H2.exists(), reason="sample captures missing"),
]


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    d = Path(os.environ.get("WIREFALL_SHOTS") or tmp_path_factory.mktemp("web-shots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from wirefall.ui.web import WebState

    with private_cache(tmp_path_factory.mktemp("xdg")):  # a private cache for this test
        # a small upload limit so that "too large" can be tried with a small file
        st = WebState(upload_limit=1_000_000)
        st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng")
        with serving(st) as url:
            yield st, url


@pytest.fixture(scope="module")
def page(server):
    """One page for the whole walk (its own browser); the test looks at ``pg.errors`` itself, at its end."""
    with chromium() as browser:
        pg = new_page(browser, accept_downloads=True)
        pg.goto(server[1])
        yield pg


def _bar_point(pg, path_suffix: str) -> tuple[float, float]:
    """Page coordinates of the middle of the longest bar of the row whose label ends with
    ``path_suffix`` (what a person would point at)."""
    return pg.evaluate(
        """suffix => {
            const gd = document.querySelector('#waterfall .js-plotly-plot');
            const L = gd._fullLayout, r = gd.getBoundingClientRect();
            const vals = L.yaxis.tickvals, txt = L.yaxis.ticktext;
            const y = vals[txt.findIndex(t => t.replace(/\u00a0/g, ' ').trim().endsWith(suffix))];
            let best = null;
            for (const tr of gd._fullData) {
                if (tr.type !== 'bar') continue;
                tr.y.forEach((yy, i) => { if (yy === y && (!best || tr.x[i] > best[1])) best = [tr.base[i], tr.x[i]]; });
            }
            const x = best[0] + best[1] / 2;
            return [r.left + L._size.l + L.xaxis.l2p(x), r.top + L._size.t + L.yaxis.l2p(y)];
        }""", path_suffix)


def _tab(pg, name: str) -> None:
    pg.click(f"#tabs .tab:has-text('{name}')")


def _pick(pg, dropdown_id: str, text: str) -> None:
    pick(pg, dropdown_id, text, retry_on=Exception)  # (this walk tries again after any failure, not only a timeout)


def test_dashboard_as_a_person_uses_it(server, page, shots, tmp_path):
    st, url = server
    pg = page
    truth = tshark_requests(H2, H2K)

    # 1. the waterfall of the capture named on the command line: one row per request
    wait_rows(pg, len(truth))
    labels = row_labels(pg)
    assert sorted(lbl.split(":59833", 1)[1] for lbl in labels) == sorted(r["path"] for r in truth.values())
    n_rows = pg.evaluate("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        const ys = new Set(); gd._fullData.filter(t => t.type === 'bar').forEach(t => t.y.forEach(y => ys.add(y))); return ys.size; }""")
    assert n_rows == len(truth) == 13
    assert "13 requests" in pg.inner_text("#status")
    pg.screenshot(path=str(shots / "01-waterfall.png"), full_page=True)

    # 2. hover a bar: the tooltip names URL, status, protocol, sizes and phase times
    stream = next(s for s, r in truth.items() if r["path"] == "/js/vendor.js")
    x, y = _bar_point(pg, "/js/vendor.js")
    pg.mouse.move(x, y)
    pg.wait_for_selector("#waterfall .hoverlayer .hovertext")
    tip = pg.locator("#waterfall .hoverlayer .hovertext").first.text_content()
    assert "/js/vendor.js" in tip and f"status {truth[stream]['status']}" in tip and "h2" in tip
    assert "Content download" in tip and " ms" in tip and "body " in tip
    pg.screenshot(path=str(shots / "02-hover.png"))

    # 3. click it: its headers both ways, as tshark decodes them
    pg.mouse.click(x, y)
    pg.wait_for_selector("#detail-request-headers")
    assert pg.inner_text("#detail-title").endswith("/js/vendor.js")
    req = [tuple(r.locator("td").all_inner_texts()) for r in pg.locator("#detail-request-headers tbody tr").all()]
    resp = [tuple(r.locator("td").all_inner_texts()) for r in pg.locator("#detail-response-headers tbody tr").all()]
    assert req == [tuple(h) for h in truth[stream]["request_headers"]]
    assert resp == [tuple(h) for h in truth[stream]["response_headers"]]
    assert pg.locator("#detail-frames tbody tr").count() > 1
    pg.locator("#request-detail").scroll_into_view_if_needed()
    pg.screenshot(path=str(shots / "03-request-detail.png"), full_page=True)
    # on a narrower window the panel leaves the graph ~650 px: its headings and legend are still
    # whole (they start at its left edge: the plot area alone cut "· 1 more carried no request")
    pg.set_viewport_size({"width": 1100, "height": 1000})
    pg.wait_for_function("""() => { const r = document.querySelector('#waterfall .js-plotly-plot').getBoundingClientRect();
        return r.width < 700; }""")
    time.sleep(0.5)
    out = pg.evaluate("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot'), g = gd.getBoundingClientRect();
        const els = [...gd.querySelectorAll('.annotation-text, .legend .legendtext')];
        return [els.length, els.filter(e => { const r = e.getBoundingClientRect();
            return r.width > 0 && (r.left < g.left - 0.5 || r.right > g.right + 0.5); }).map(e => e.textContent)]; }""")
    assert out[0] > 10 and out[1] == [], out
    assert any("more carried no request" in (t or "") for t in pg.locator("#waterfall .annotation-text").all_text_contents())
    pg.screenshot(path=str(shots / "03b-request-detail-narrow.png"), full_page=True)
    pg.set_viewport_size({"width": 1500, "height": 1000})

    # 4. a filter expression, then a broken one (error with its column)
    pg.fill("#filter-expr", 'url contains "css"')
    pg.press("#filter-expr", "Enter")
    wait_rows(pg, 2)
    assert all("css" in t for t in row_labels(pg)), row_labels(pg)
    pg.fill("#filter-expr", "status >= && x")
    pg.press("#filter-expr", "Enter")
    pg.wait_for_selector("#filter-error-msg")
    assert "column 11" in pg.inner_text("#filter-error-msg")
    pg.screenshot(path=str(shots / "04-filter-error.png"))
    pg.fill("#filter-expr", "")
    pg.press("#filter-expr", "Enter")
    wait_rows(pg, 13)

    # 5. the other tabs
    _tab(pg, "Connections")
    pg.wait_for_selector("#conn-table .ag-row [col-id='cipher']")
    assert pg.locator("#conn-table .ag-center-cols-container .ag-row").count() == 2
    assert "TLS_AES_128_GCM_SHA256" in pg.inner_text("#conn-table")
    pg.screenshot(path=str(shots / "05-connections.png"), full_page=True)
    _tab(pg, "Statistics")
    pg.wait_for_selector("#st-inflight .main-svg")
    pg.wait_for_selector("#st-headers-table .ag-row [col-id='req_wire']")
    pg.screenshot(path=str(shots / "06-statistics.png"), full_page=True)
    _tab(pg, "Packets")
    pg.wait_for_selector("#packets .ag-row [col-id='info']")
    pg.wait_for_function("() => document.querySelector('#packet-filter-msg').innerText === '75 packets'")  # tshark: 75, one list
    pg.locator("#packets .ag-row[row-index='24'] [col-id='info']").click()
    pg.wait_for_selector("#packet-detail-title")
    assert pg.inner_text("#packet-detail-title") == "Packet 25"
    assert "Transmission Control Protocol" in pg.inner_text("#packet-detail")
    pg.screenshot(path=str(shots / "07-packets.png"), full_page=True)

    # 6. uploads: one too large (a clear message), then page-h3 with its key log
    _tab(pg, "Waterfall")
    big = tmp_path / "big.pcap"
    big.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(1_200_000))
    pg.set_input_files("#up-capture input[type=file]", str(big))
    pg.wait_for_selector("#up-capture-msg .error")
    assert "too large" in pg.inner_text("#up-capture-msg") and "976.6 KiB" in pg.inner_text("#up-capture-msg")
    pg.screenshot(path=str(shots / "08-upload-too-large.png"))
    pg.set_input_files("#up-capture input[type=file]", str(H3))
    pg.wait_for_function("() => document.querySelector('#up-capture-msg').innerText.includes('page-h3.pcapng')")
    pg.set_input_files("#up-keylog input[type=file]", str(H3K))
    pg.wait_for_function("() => document.querySelector('#up-keylog-msg').innerText.includes('page-h3.keys')")
    pg.click("#btn-open")
    pg.wait_for_selector("#open-done")
    log = _server_log_h3()
    pg.wait_for_function("() => document.querySelector('#status').innerText.includes('page-h3.pcapng: ')")
    # the new capture's figure (page-h2 also has 13 rows: wait for the h3 badges)
    pg.wait_for_function("""n => { const t = [...document.querySelectorAll('#waterfall .ytick text')]
                                      .map(x => x.textContent.replace(/\u00a0/g, ' '));
                                  return t.length === n && t.every(x => x.includes(' h3 ')); }""", arg=len(log))
    assert sorted(t.split(":", 2)[-1].split("/", 1)[1] for t in row_labels(pg)) == sorted(r["path"].lstrip("/") for r in log)
    assert all(" h3 " in t for t in row_labels(pg)), row_labels(pg)
    pg.screenshot(path=str(shots / "09-uploaded-h3.png"), full_page=True)

    # 7. compare the two
    _tab(pg, "Compare")
    _pick(pg, "compare-a", "page-h2")
    _pick(pg, "compare-b", "page-h3")
    pg.click("#btn-compare")
    pg.wait_for_selector("#compare-matched", timeout=90_000)
    matched = pg.locator("#compare-matched tbody tr").count()
    assert matched == len({r["path"] for r in truth.values()} & {r["path"] for r in log}) == 13
    assert "Only in A (0)" in pg.inner_text("#compare-out")
    pg.screenshot(path=str(shots / "10-compare.png"), full_page=True)

    # 8. download the PNG of what is shown (the h3 waterfall) and look inside
    _tab(pg, "Waterfall")
    with pg.expect_download(timeout=90_000) as dl:
        pg.click("#export-png")
    path = tmp_path / "download.png"
    dl.value.save_as(str(path))
    assert dl.value.suggested_filename == "page-h3-waterfall.png"
    shutil.copy(path, shots / "11-downloaded.png")
    w, h, rows, bpp = png_pixels(path.read_bytes())
    assert w >= 700 and h >= 360
    # the bars are drawn in the waterfall palette: the "script", "image" and "css" download colours
    from wirefall.analyzer.waterfall import CONTENT_COLORS

    colours = {bytes.fromhex(CONTENT_COLORS[c][1][1:]) for c in ("script", "image", "css")}
    seen = set()
    for r in rows:
        for i in range(0, len(r), bpp):
            px = r[i : i + 3]
            if px in colours:
                seen.add(px)
    assert seen == colours, seen
    assert not pg.errors, pg.errors
