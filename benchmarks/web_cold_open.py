"""The web app opened cold on a 10 000-request page load (issue 21: "renders in the web app
within 2 s"): for each run a new server (``WebState`` over the synthetic analysis of
tests/wf_scale_fixture.py, as the cache would hand it back) and a new browser context (an
empty HTTP cache), timed from navigation until the waterfall is drawn with its first window
of rows (``waterfall_scale.DRAWN_JS``).  Reported per run: the clock (``open_s``), the CPU
seconds of the page's main thread (``cpu_page_s``: DevTools ``Performance`` metrics), of all
the renderer processes and of the server (this process: the web app's callbacks and
Playwright's client), the JavaScript fetched (bytes on the wire and decoded, and which
files), and what was drawn (``labels``: the row labels; ``pager``: the window's text).  ``--profile FILE`` also writes a DevTools CPU
profile of the last run's page; ``--timeline`` prints the last run's requests in order;
``--settled`` opens the page once the capture's model is built (see ``cold_open``).

    PYTHONPATH=$PWD python benchmarks/web_cold_open.py [--rows 10000] [--runs 5] [--settled] [--timeline] [--profile out.cpuprofile]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import waterfall_scale as W  # noqa: E402

RESOURCES_JS = """() => performance.getEntriesByType('resource').map(r => [r.name.replace(location.origin, ''), r.transferSize,
    r.decodedBodySize, Math.round(r.startTime), Math.round(r.responseEnd)])"""


def _timeline(pg, t0: float) -> list:
    """What the page asks for and when: [(what, start_ms, end_ms)] from navigation (a callback
    request: the outputs it answers), filled by Playwright's request events."""
    events: list = []
    started: dict = {}

    def req(r) -> None:
        started[id(r)] = time.perf_counter()

    def done(r) -> None:
        what = r.url.split("?")[0].rsplit("/", 1)[-1][:40]
        if "_dash-update-component" in r.url:
            try:
                what = "callback " + json.loads(r.post_data or "{}").get("output", "")[:90]
            except ValueError:
                pass
        a = started.pop(id(r), None)
        events.append((what, round(1000 * ((a or t0) - t0)), round(1000 * (time.perf_counter() - t0))))

    pg.on("request", req)
    pg.on("requestfinished", done)
    return events


def cold_open(an, runs: int = 5, viewport: tuple[int, int] = (1500, 1000), profile: str | None = None,
              settled: bool = False) -> list[dict]:
    """``runs`` cold opens of the web app on analysis ``an`` (see the module's docstring).
    The page is opened as the analysis is reported done — while the server still builds the
    waterfall's model and the filters' options in the background (``WebState._warm``), so the
    first callbacks wait for it — or, ``settled``, once that is built too (a capture opened a
    while ago: the model's CPU, ``warm_cpu_s``, is then not in ``cpu_server_s``)."""
    import logging

    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from wirefall.ui.web import WebState, create_app, views

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    n = len(an.exchanges)
    first = [0, min(n, views.WINDOW_ROWS)] if n > views.WINDOW_THRESHOLD else [0, n]
    out: list[dict] = []
    with sync_playwright() as p, tempfile.NamedTemporaryFile(suffix=".pcap") as f:
        browser = p.chromium.launch(executable_path=W.CHROMIUM, args=W.FLAGS, headless=True)
        try:
            for k in range(runs):
                st = WebState(use_cache=False, analyze=lambda path, keylogs=None, progress=None, **kw: an)
                e = st.add_file(f.name, name="big-page-load.pcap")
                st.wait(e.id, timeout=120)
                warm = W._cpu()["server"]
                if settled:  # (waits for the background build, Entry.memo)
                    views.filter_options(e)
                    views.filtered_view(e)
                warm = W._cpu()["server"] - warm
                srv = make_server("127.0.0.1", 0, create_app(st).server, threaded=True)
                th = threading.Thread(target=srv.serve_forever, daemon=True)
                th.start()
                url = f"http://127.0.0.1:{srv.server_port}/"
                ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})  # an empty cache
                try:
                    pg = ctx.new_page()
                    pg.set_default_timeout(180_000)
                    cdp = ctx.new_cdp_session(pg)
                    cdp.send("Performance.enable")
                    if profile and k == runs - 1:
                        cdp.send("Profiler.enable")
                        cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                        cdp.send("Profiler.start")
                    t, c, m = time.perf_counter(), W._cpu(), W._main_thread_cpu(cdp)
                    events = _timeline(pg, t)
                    pg.goto(url)
                    pg.wait_for_function(W.DRAWN_JS, arg=first, polling=20)
                    r = {"open_s": time.perf_counter() - t, "cpu_page_s": W._main_thread_cpu(cdp) - m}
                    events.append(("drawn", round(1000 * r["open_s"]), round(1000 * r["open_s"])))
                    c2 = W._cpu()
                    r.update({f"cpu_{x}_s": c2[x] - c[x] for x in ("renderer", "server", "chromium")})
                    if profile and k == runs - 1:
                        Path(profile).write_text(json.dumps(cdp.send("Profiler.stop")["profile"]))
                    r["labels"] = pg.evaluate(W.LABELS_JS)
                    r["graph_px"] = pg.evaluate("() => window.wirefallGraphPx || null")
                    r["pager"] = pg.inner_text("#wf-rows-text")
                    res = [x for x in pg.evaluate(RESOURCES_JS) if not x[0].startswith("/_dash-update-component")]
                    js = [x for x in res if x[0].split("?")[0].endswith(".js")]
                    r["js_wire_bytes"] = sum(x[1] for x in js)
                    r["js_bytes"] = sum(x[2] for x in js)
                    r["js_files"] = [(x[0].rsplit("/", 1)[-1][:60], x[1], x[2], x[3], x[4]) for x in js]
                    r["callbacks"] = sum(1 for x in pg.evaluate(RESOURCES_JS) if x[0].startswith("/_dash-update-component"))
                    r["load_average"] = os.getloadavg()[0]
                    if settled:
                        r["warm_cpu_s"] = warm
                    r["timeline"] = sorted(events, key=lambda x: x[1])
                    out.append(r)
                finally:
                    ctx.close()
                    srv.shutdown()
                    th.join(10)
                    st.close()
        finally:
            browser.close()
    return out


def summary(runs: list[dict]) -> str:
    keys = ("open_s", "cpu_page_s", "cpu_renderer_s", "cpu_server_s")
    parts = [f"{k} median {statistics.median(r[k] for r in runs):.2f} (min {min(r[k] for r in runs):.2f}, "
             f"max {max(r[k] for r in runs):.2f})" for k in keys]
    r = runs[-1]
    return "; ".join(parts) + f"; JavaScript {r['js_wire_bytes']:,} bytes on the wire, {r['js_bytes']:,} decoded"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profile", help="write the last run's DevTools CPU profile here")
    ap.add_argument("--settled", action="store_true", help="open the page once the model is built (not as the analysis is done)")
    ap.add_argument("--timeline", action="store_true", help="print the last run's requests in order (start-end ms from navigation)")
    a = ap.parse_args()
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="wf-cold-"))
    an = W.big_analysis(a.rows)
    runs = cold_open(an, a.runs, profile=a.profile, settled=a.settled)
    for i, r in enumerate(runs):
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items() if isinstance(v, float))
              + f", JS {r['js_wire_bytes']:,} wire / {r['js_bytes']:,} decoded, {r['callbacks']} callbacks")
    for name, wire, dec, start, end in runs[-1]["js_files"]:
        print(f"  {name:<60} wire {wire:>9} decoded {dec:>9}  {start:>5}-{end:>5} ms")
    if a.timeline:
        for what, start, end in runs[-1]["timeline"]:
            print(f"  {start:>5}-{end:>5} ms  {what}")
    print(summary(runs))


if __name__ == "__main__":
    main()
