"""How long a 10 000-request waterfall takes (issue 21: the web app within 2 s, the PNG
export within 10 s): the model (``analyzer.waterfall.build``), the figure
(``ui.figures.waterfall_figure``), the PNG export as the CLI writes it (``ui.exports.export``:
kaleido and Chromium started in a child process), and the web app in headless Chromium
(the page opened on the analysed capture until the waterfall is drawn; then the order
changed and drawn again; then the next window of rows asked for and drawn: above
``views.WINDOW_THRESHOLD`` rows the page draws ``views.WINDOW_ROWS`` at a time).  CPU seconds
of the server (this process) and of the browser (Chromium's main thread as the DevTools
``Performance`` metrics count it, and all Chromium processes) are reported next to the
clock: on a shared machine they are what an idle one would take.  ``time_startup`` measures
the page itself on a 3-request capture.  The input is the synthetic page load of
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
# the waterfall is drawn with request rows [a, b): its y axis shows them, its bars (or, big, its path shapes) are in the DOM
DRAWN_JS = """([a, b]) => { const gd = document.querySelector('#waterfall .js-plotly-plot');
    if (!gd || !gd._fullLayout || !gd._fullData) return false;
    const rows = gd._fullLayout.yaxis && gd._fullLayout.yaxis.range;
    return !!rows && Math.round(rows[0] + 0.5) === b && Math.round(rows[1] + 0.5) === a
        && gd.querySelectorAll('.barlayer path, .shapelayer path').length > 0; }"""
# the row labels the page shows (the y axis' tick texts, top to bottom)
LABELS_JS = """() => Array.from(document.querySelectorAll('#waterfall .ytick text')).map(t => t.textContent)"""
RESOURCES_JS = """() => performance.getEntriesByType('resource').map(r => [r.name.replace(location.origin, ''), r.transferSize,
    r.encodedBodySize, r.decodedBodySize])"""


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


def _cpu() -> dict[str, float]:
    """CPU seconds of this process (``server``: the web app, and Playwright's client) and of
    its children: Chromium's renderers (``renderer``: the page's JavaScript, layout, paint),
    Chromium's other processes (``chromium``: browser, GPU, network) and Playwright's driver
    (``driver``: the test's own, not the page's): on a shared machine, closer to an idle
    machine's time than the clock."""
    import psutil

    me = psutil.Process()
    out = {"server": sum(me.cpu_times()[:2]), "renderer": 0.0, "chromium": 0.0, "driver": 0.0}
    for c in me.children(recursive=True):
        try:
            cmd = " ".join(c.cmdline())
            t = sum(c.cpu_times()[:2])
        except psutil.Error:
            continue
        out["renderer" if "--type=renderer" in cmd else "chromium" if "chrom" in cmd else "driver"] += t
    return out


def _main_thread_cpu(cdp) -> float:
    """CPU seconds of the page's main thread (DevTools ``Performance.getMetrics``: ThreadTime;
    TaskDuration, its clock time, where the metric is missing)."""
    m = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
    return float(m.get("ThreadTime", m.get("TaskDuration", 0.0)))


def time_web(an, viewport: tuple[int, int] = (1500, 1000), startup: bool = False) -> dict:
    """The web app on the analysed capture in headless Chromium: seconds from opening the page
    until the waterfall is drawn with its first window of rows (``open_s``: the Dash page,
    its callbacks, the model and figure on the server, plotly.js drawing), from choosing
    another order until it is drawn again (``resort_s``), and from asking for the next window
    until it is drawn (``scroll_s``); each with the CPU seconds of the server, of the page's
    main thread and of all the browser's processes.  ``labels_*``: the row labels shown
    (to check against the model's)."""
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
        from wirefall.ui.web import views

        n = len(an.exchanges)
        first = (0, min(n, views.WINDOW_ROWS)) if n > views.WINDOW_THRESHOLD else (0, n)
        nxt = (first[1], min(n, first[1] + views.WINDOW_ROWS)) if n > views.WINDOW_THRESHOLD else first
        out: dict = {"window": first}
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
                try:
                    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})  # (one cache)
                    pg = ctx.new_page()
                    pg.set_default_timeout(180_000)
                    pg.goto(url + "?warm=1")  # the Dash bundles and plotly.js into the browser's cache
                    pg.wait_for_function(DRAWN_JS, arg=list(first), polling=50)
                    pg.goto("about:blank")
                    pg.close()
                    pg = ctx.new_page()
                    pg.set_default_timeout(180_000)
                    cdp = pg.context.new_cdp_session(pg)
                    cdp.send("Performance.enable")
                    t, c, m = time.perf_counter(), _cpu(), _main_thread_cpu(cdp)
                    headers: dict = {}
                    pg.on("response", lambda r: headers.setdefault(r.url.replace(url, "/"), (
                        r.headers.get("content-encoding", ""), r.headers.get("cache-control", ""), r.status)))
                    pg.goto(url)
                    pg.wait_for_function(DRAWN_JS, arg=list(first), polling=50)
                    _measured(out, "open", t, c, m, cdp)
                    pg.evaluate("() => { window.__drawn = 0; document.querySelector('#waterfall .js-plotly-plot')"
                                ".on('plotly_afterplot', () => { window.__drawn++; }); }")  # (redraws counted from here)
                    if startup:  # what the page loaded: (path, bytes on the wire (0: from the cache), encoded, decoded, headers)
                        out["resources"] = [(p, tr, enc, dec, headers.get(p, ("", "", 0))) for p, tr, enc, dec in pg.evaluate(RESOURCES_JS)
                                            if not p.startswith("/_dash-update-component")]
                        out["callbacks"] = sum(1 for p, *_ in pg.evaluate(RESOURCES_JS) if p.startswith("/_dash-update-component"))
                        return out
                    out["labels_open"] = pg.evaluate(LABELS_JS)
                    out["graph_px"] = pg.evaluate("() => window.wirefallGraphPx || null")  # (the width the labels were laid out for)
                    out["dom_nodes"] = pg.evaluate("() => document.querySelectorAll('#waterfall svg *').length")
                    out["hover"] = _hover_text(pg)
                    if nxt != first:
                        pg.keyboard.press("Escape")
                        t, c, m = time.perf_counter(), _cpu(), _main_thread_cpu(cdp)
                        pg.click("#wf-next")
                        pg.wait_for_function(DRAWN_JS, arg=list(nxt), polling=50)
                        _measured(out, "scroll", t, c, m, cdp)
                        out["scroll_draws"] = pg.evaluate("() => window.__drawn")
                        out["window_scrolled"] = nxt
                        out["labels_scroll"] = pg.evaluate(LABELS_JS)
                        # PgDn with the window's last row in sight: the window after it
                        pg.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
                        key = (nxt[1], min(n, nxt[1] + views.WINDOW_ROWS))
                        t, c, m = time.perf_counter(), _cpu(), _main_thread_cpu(cdp)
                        pg.keyboard.press("PageDown")
                        pg.wait_for_function(DRAWN_JS, arg=list(key), polling=50)
                        _measured(out, "pgdn", t, c, m, cdp)
                        out["window_pgdn"] = key
                        out["labels_pgdn"] = pg.evaluate(LABELS_JS)
                    t, c, m = time.perf_counter(), _cpu(), _main_thread_cpu(cdp)
                    _choose_order(pg, "sort: duration")
                    pg.wait_for_function(DRAWN_JS, arg=list(first), polling=50)  # (a new order: from the first row)
                    _measured(out, "resort", t, c, m, cdp)
                    out["resort_draws"] = pg.evaluate("() => window.__drawn")
                    out["labels_resort"] = pg.evaluate(LABELS_JS)
                finally:
                    browser.close()
        finally:
            srv.shutdown()
            th.join(10)
            st.close()
    return out


def _measured(out: dict, what: str, t: float, c: dict[str, float], m: float, cdp) -> None:
    """``what_s`` (clock), ``what_cpu_server_s``, ``what_cpu_page_s`` (the page's main thread),
    ``what_cpu_renderer_s``, ``what_cpu_chromium_s`` (its other processes), ``what_cpu_driver_s``."""
    out[f"{what}_s"] = time.perf_counter() - t
    c2 = _cpu()
    out[f"{what}_cpu_page_s"] = _main_thread_cpu(cdp) - m
    for k in c:
        out[f"{what}_cpu_{k}_s"] = c2[k] - c[k]


def time_startup(viewport: tuple[int, int] = (1500, 1000)) -> dict:
    """The page itself: the web app opened (browser cache warm) on a 3-request capture until
    its waterfall is drawn, with the CPU seconds of the server, the page's main thread and
    the browser; and what the page loaded (``resources``: URL, bytes on the wire, bytes,
    encoding, cache header) — each bundle once, compressed, cached."""
    return time_web(big_analysis(3), viewport, startup=True)


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
    pg.evaluate("() => { window.__drawn = 0; }")
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
    ap.add_argument("--no-startup", action="store_true")
    ap.add_argument("--window", type=int, help="rows in the web page's window (default: views.WINDOW_ROWS)")
    a = ap.parse_args()
    if a.window:
        from wirefall.ui.web import views

        views.WINDOW_ROWS = a.window
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
        for k in [k for k in r if k.startswith("labels_")]:
            r[k] = f"{len(r[k])} labels, first {r[k][0] if r[k] else None!r}"
        print("web:", {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()})
    if not a.no_web and not a.no_startup:
        s = time_startup()
        res = s.pop("resources")
        print("page start-up (3 requests):", {k: round(v, 3) if isinstance(v, float) else v for k, v in s.items()})
        for p, tr, enc, dec, h in res:
            print(f"  {p[:90]:<90} wire {tr:>9} encoded {enc:>9} decoded {dec:>9} {h}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
