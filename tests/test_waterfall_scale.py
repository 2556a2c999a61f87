"""A 10 000-request waterfall (issue 21: drawn in the web app within 2 s, exported as PNG
within 10 s) built from the synthetic page load of tests/wf_scale_fixture.py and measured
by benchmarks/waterfall_scale.py: the figure, the PNG export as the CLI writes it, and the
web app in headless Chromium.  The times are printed (run with ``-s``), not asserted — the
machine running the suite may be shared; what is asserted is what was drawn: every row's
bars in a few path shapes, the PNG as tall as the figure with the bars' colours in it; the
web page's waterfall with its first window of rows (``views.WINDOW_ROWS``), the next window
(the page button) and the one after (PgDn), and the first window sorted by duration, each
showing the row labels of those rows of the model; a tooltip on a row.  The web test also
prints the page's own start-up (3 requests) and what it loaded, and opens the page cold (a new
server, an empty browser cache: benchmarks/web_cold_open.py), asserting that it drew the first
window of rows with plotly.js's basic build and without loading AG Grid."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import waterfall_scale as W  # noqa: E402
import web_cold_open as C  # noqa: E402

pytestmark = pytest.mark.slow
needs_chromium = pytest.mark.skipif(not os.path.exists(W.CHROMIUM), reason="chromium not installed")
ROWS = 10_000


@pytest.fixture(scope="module")
def big():
    return W.big_analysis(ROWS)


def _show(what: str, r: dict) -> None:
    print(f"\n{ROWS} requests, {what}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                                   for k, v in r.items()) + f" (load average {os.getloadavg()[0]:.1f})")


def test_figure_of_10000_requests(big):
    r = W.time_figure(big)
    _show("figure", r)
    assert r["rows"] == ROWS and r["shapes"] < 60 and r["traces"] < 40  # a path per colour, not a trace or shape per bar


@needs_chromium
def test_png_export_of_10000_requests(big, tmp_path):
    Image = pytest.importorskip("PIL.Image")

    from wirefall.analyzer.waterfall import CONTENT_COLORS

    out = tmp_path / "big.png"
    r = W.time_png(big, str(out))
    _show("PNG export", r)
    w, h = r["png_px"]
    assert w == 1400 and h > 16_000  # the whole figure: 10 000 rows, the connection view, the track, the legend
    img = Image.open(out).convert("RGB")
    seen = {img.getpixel((x, y)) for y in range(200, 16_000, 97) for x in range(300, 1400, 3)}
    dark = {tuple(int(c[1][i: i + 2], 16) for i in (1, 3, 5)) for c in CONTENT_COLORS.values()}
    assert len(dark & seen) >= 3, sorted(seen)[:20]  # downloads of several content classes drawn down the rows


@needs_chromium
def test_web_app_draws_10000_requests(big):
    from wirefall.analyzer import waterfall
    from wirefall.ui import waterfall_layout as L
    from wirefall.ui.figures import NBSP
    from wirefall.ui.web import bundles, views

    r = W.time_web(big)
    _show("web app", {k: v for k, v in r.items() if k != "hover" and not k.startswith("labels_")})
    # (time_web waited until the figure's y axis showed each window's rows and its bars were drawn)
    k = views.WINDOW_ROWS
    assert r["window"] == (0, k) and r["window_scrolled"] == (k, 2 * k) and r["window_pgdn"] == (2 * k, 3 * k)
    wf = waterfall.build(big)
    from wirefall.ui.figures import NARROWEST, label_columns, mark_width

    # (the page's labels: the room of the graph's width the page measured, views.label_room_for)
    assert r["graph_px"] and r["graph_px"] > NARROWEST  # (a 1500 px page: its graph is wider than the 1200 it is laid out for)
    n, bw = label_columns(wf.rows, views.label_room_for(NARROWEST, r["graph_px"]), mark_width(wf.rows))

    def label(row, n=n, bw=bw):
        return L.row_label(row, n, badge_chars=bw).replace(" ", NBSP).rstrip(NBSP)
    shown_of = lambda labels: [t.rstrip(NBSP) for t in labels]
    shown = lambda key: shown_of(r[key])
    assert shown("labels_open") == [label(x) for x in wf.rows[:k]]  # rows 1..k, numbered and labelled as the model's
    assert shown("labels_scroll") == [label(x) for x in wf.rows[k: 2 * k]]
    assert shown("labels_pgdn") == [label(x) for x in wf.rows[2 * k: 3 * k]]
    by_duration = waterfall.build(big, sort="duration")
    assert shown("labels_resort") == [label(x) for x in by_duration.rows[:k]]  # a new order: its first window
    assert r["scroll_draws"] == 1 and r["resort_draws"] == 1  # one redraw each
    assert r["dom_nodes"] < 5_000  # nodes for the window's rows only
    assert "https://" in r["hover"]  # the row under the pointer has its tooltip
    cold = C.cold_open(big, runs=1)[0]  # a new server and an empty browser cache (benchmarks/web_cold_open.py)
    _show("web app opened cold", {k: v for k, v in cold.items() if isinstance(v, (int, float))})
    nc, bwc = label_columns(wf.rows, views.label_room_for(NARROWEST, cold["graph_px"]), mark_width(wf.rows))
    assert shown_of(cold["labels"]) == [label(x, nc, bwc) for x in wf.rows[:k]]  # drawn: the first window of rows, as the model's
    assert cold["pager"].strip().startswith(f"requests 1–{k} of {ROWS}")  # rows windowed (the pager says which)
    files = {name.split(".")[0]: dec for name, _w, dec, *_ in cold["js_files"]}
    assert "dash_ag_grid" not in files  # loaded when a table is first drawn, not to draw the waterfall
    assert files["plotly"] == bundles.BASIC_BUNDLE.stat().st_size  # plotly.js's basic build, not the full one
    s = W.time_startup()
    res = s.pop("resources")
    _show("web app start-up on 3 requests", s)
    for p, tr, enc, dec, h in res:
        print(f"  {p[:90]:<90} wire {tr:>9} encoded {enc:>9} decoded {dec:>9} {h}")
    names = [p for p, *_ in res if "_favicon" not in p]
    assert len(names) == len(set(names))  # no script loaded twice
    assert all(h[0] in ("br", "gzip") for p, _tr, enc, _dec, h in res
               if enc > 4096 and "_favicon" not in p)  # scripts and JSON compressed
