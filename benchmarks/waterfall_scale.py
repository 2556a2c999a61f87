"""How long a 10 000-request waterfall takes (issue 21: the web app within 2 s, the PNG
export within 10 s): the model (``analyzer.waterfall.build``), the figure
(``ui.figures.waterfall_figure``), the PNG export as the CLI writes it (``ui.exports.export``:
kaleido and Chromium started in a child process), and the web app in headless Chromium
(the page opened on the analysed capture until the waterfall is drawn; then the order
changed and drawn again).  The input is the synthetic page load of
tests/wf_scale_fixture.py (no capture file).  tests/test_waterfall_scale.py runs the same
functions and prints the numbers.

    PYTHONPATH=$PWD python benchmarks/waterfall_scale.py [--rows 10000] [--no-web] [--no-png]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]
# the waterfall is drawn: its rows' path shapes (or, small, its bars) are in the DOM, and no redraw is pending
DRAWN_JS = """n => { const gd = document.querySelector('#waterfall .js-plotly-plot');
    if (!gd || !gd._fullLayout || !gd._fullData) return false;
    const rows = gd._fullLayout.yaxis && gd._fullLayout.yaxis.range;
    return !!rows && Math.round(rows[0] + 0.5) === n && gd.querySelectorAll('.shapelayer path').length > 0; }"""


def big_analysis(rows: int = 10_000):
    from wf_scale_fixture import make_big_analysis

    return make_big_analysis(rows)


def time_figure(an) -> dict:
    """Seconds of the model and of the figure (with hover texts, as the web app; without, as
    the images), and the figure's JSON size."""
    from wirefall.analyzer import waterfall
    from wirefall.ui.figures import waterfall_figure

    out: dict = {}
    t = time.perf_counter()
    wf = waterfall.build(an)
    out["build_s"] = time.perf_counter() - t
    t = time.perf_counter()
    fig = waterfall_figure(wf)
    out["figure_s"] = time.perf_counter() - t
    t = time.perf_counter()
    out["json_bytes"] = len(fig.to_json())
    out["json_s"] = time.perf_counter() - t
    t = time.perf_counter()
    waterfall_figure(wf, hover=False)
    out["figure_static_s"] = time.perf_counter() - t
    out["rows"] = len(wf.rows)
    out["traces"] = len(fig.data)
    out["shapes"] = len(fig.layout.shapes)
    return out


def time_png(an, path: str) -> dict:
    """Seconds of ``wirefall export x.png`` (model, figure, kaleido in a child process) and
    the PNG's size in bytes and pixels."""
    from wirefall.ui.exports import export

    t, c = time.perf_counter(), os.times()
    export(an, path, force=True)
    s = time.perf_counter() - t
    c2 = os.times()  # (the kaleido child and its Chromium have ended: their CPU is in children_*)
    data = Path(path).read_bytes()
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return {"png_s": s, "png_cpu_s": sum(c2[:4]) - sum(c[:4]), "png_bytes": len(data), "png_px": (w, h)}


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process (the web app's server) and of its children (Playwright's
    driver and Chromium): on a shared machine, closer to an idle machine's time than the clock."""
    import psutil

    me = psutil.Process()
    own = sum(me.cpu_times()[:2])
    kids = 0.0
    for c in me.children(recursive=True):
        try:
            kids += sum(c.cpu_times()[:2])
        except psutil.Error:
            pass
    return own, kids


def time_web(an, viewport: tuple[int, int] = (1500, 1000)) -> dict:
    """The web app on the analysed capture in headless Chromium: seconds from opening the page
    until the waterfall is drawn (``open_s``: the Dash page, its callbacks, the model and
    figure on the server, plotly.js drawing), and from choosing another order until it is
    drawn again (``resort_s``)."""
    import logging

    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from wirefall.ui.web import WebState, create_app

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    st = WebState(use_cache=False, analyze=lambda path, keylogs=None, progress=None, **kw: an)
    with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
        e = st.add_file(f.name, name="big-page-load.pcap")
        st.wait(e.id, timeout=120)
        srv = make_server("127.0.0.1", 0, create_app(st).server, threaded=True)
        th = threading.Thread(target=srv.serve_forever, daemon=True)
        th.start()
        url = f"http://127.0.0.1:{srv.server_port}/"
        n = len(an.exchanges)
        out: dict = {}
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
                try:
                    pg = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
                    pg.set_default_timeout(180_000)
                    pg.goto(url + "?warm=1")  # the Dash bundles and plotly.js into the browser's cache
                    pg.wait_for_function(DRAWN_JS, arg=n, polling=50)
                    pg.close()
                    pg = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
                    pg.set_default_timeout(180_000)
                    t, c = time.perf_counter(), _cpu()
                    pg.goto(url)
                    pg.wait_for_function(DRAWN_JS, arg=n, polling=50)
                    out["open_s"] = time.perf_counter() - t
                    c2 = _cpu()
                    out["open_cpu_server_s"], out["open_cpu_browser_s"] = c2[0] - c[0], c2[1] - c[1]
                    out["dom_nodes"] = pg.evaluate("() => document.querySelectorAll('#waterfall svg *').length")
                    out["hover"] = _hover_text(pg)
                    t, c = time.perf_counter(), _cpu()
                    _choose_order(pg, "sort: duration")
                    out["resort_s"] = time.perf_counter() - t
                    c2 = _cpu()
                    out["resort_cpu_server_s"], out["resort_cpu_browser_s"] = c2[0] - c[0], c2[1] - c[1]
                finally:
                    browser.close()
        finally:
            srv.shutdown()
            th.join(10)
            st.close()
    return out


def _hover_text(pg) -> str:
    """The tooltip over the middle of the first request row (a person pointing at it)."""
    box = pg.evaluate("""() => { const gd = document.querySelector('#waterfall .js-plotly-plot');
        const L = gd._fullLayout, r = gd.getBoundingClientRect(), ya = L.yaxis, xa = L.xaxis;
        return [r.left + xa._offset + xa._length * 0.02, r.top + ya._offset + ya.l2p(0)]; }""")
    pg.mouse.move(box[0], box[1])
    try:
        pg.wait_for_selector("#waterfall .hovertext", timeout=5_000)
    except Exception:  # noqa: BLE001 - no tooltip: reported as ""
        return ""
    return " ".join(pg.locator("#waterfall .hovertext text").all_text_contents())


def _choose_order(pg, label: str) -> None:
    """Choose ``label`` in the order dropdown and wait until the figure was drawn again with
    the longest request first."""
    pg.evaluate("() => { const gd = document.querySelector('#waterfall .js-plotly-plot'); window.__drawn = 0;"
                " gd.on('plotly_afterplot', () => { window.__drawn++; }); }")
    pg.keyboard.press("Escape")
    pg.click("#wf-order")
    pg.wait_for_selector("[role=option]")
    pg.locator("[role=option]", has_text=label).first.click()
    pg.wait_for_function("() => window.__drawn > 0", polling=50)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--no-web", action="store_true")
    ap.add_argument("--no-png", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="wf-scale-"))
    t = time.perf_counter()
    an = big_analysis(a.rows)
    print(f"input: {a.rows} requests, {len(an.index)} packets, {len(an.connections)} connections ({time.perf_counter() - t:.2f} s)")
    print("figure:", {k: round(v, 3) if isinstance(v, float) else v for k, v in time_figure(an).items()})
    if not a.no_png:
        with tempfile.TemporaryDirectory() as d:
            print("png:", {k: round(v, 3) if isinstance(v, float) else v for k, v in time_png(an, os.path.join(d, "w.png")).items()})
    if not a.no_web:
        r = time_web(an)
        r["hover"] = r["hover"][:80]
        print("web:", {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()})
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
