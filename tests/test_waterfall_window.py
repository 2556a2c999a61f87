"""The web app's window of rows over a big waterfall (docs/WATERFALL.md, "Scale"): above
``views.WINDOW_THRESHOLD`` rows the page draws ``views.WINDOW_ROWS`` at a time, each row as
the figure of all rows draws it (same number, label, duration text, bars, chunks, ticks and
zebra shading at the same y), with the time axis of all rows; the other orders of the
dropdown are the one built model's rows sorted again, equal to what ``build`` returns for
that order.  The synthetic load of tests/wf_scale_fixture.py (1000 requests) and a real
sample.  tests/test_waterfall_scale.py (slow) checks the same in headless Chromium on 10 000."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wf_scale_fixture import make_big_analysis  # noqa: E402

from wirefall.analyzer import waterfall as W  # noqa: E402
from wirefall.ui import waterfall_layout as L  # noqa: E402
from wirefall.ui.figures import NARROWEST, NBSP, label_columns, mark_width, waterfall_figure  # noqa: E402
from wirefall.ui.web import views  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ORDERS = [(g, s) for g in (None, *W.GROUPS) for s in W.SORTS]


@pytest.fixture(scope="module")
def big():
    an = make_big_analysis(1000)
    return an, W.build(an)


@pytest.fixture
def served(big, tmp_path):
    """A web app's state holding ``big``'s analysis as one capture: (state, its entry)."""
    from wirefall.ui.web import WebState

    an, _wf = big
    st = WebState(use_cache=False, analyze=lambda path, keylogs=None, progress=None, **kw: an)
    f = tmp_path / "big.pcap"
    f.write_bytes(b"")
    try:
        e = st.add_file(str(f), name="big.pcap")
        st.wait(e.id, timeout=120)
        yield st, e
    finally:
        st.close()


def _drawn(fig, lo: int, hi: int) -> dict:
    """What the figure draws on request rows lo..hi: per trace name, the (y, x, base or
    text, colour) of each bar / duration text / tick; the zebra shading's rows."""
    out: dict = {}
    for t in fig.data:
        if t.yaxis not in (None, "y") or t.y is None or t.name in ("request",):
            continue
        ys = list(t.y)
        if t.type == "bar":
            items = zip(ys, t.base, t.x, t.marker.color)
        elif t.mode == "text":
            items = zip(ys, t.x, t.text, [None] * len(ys))
        else:
            items = zip(ys, t.x, [None] * len(ys), [None] * len(ys))
        got = sorted((y, x, b, c) for y, x, b, c in items if y is not None and lo <= y < hi)
        if got:
            out[t.name] = got
    zebra = sorted(s.y0 + 0.5 for s in fig.layout.shapes if s.type == "rect" and s.yref == "y" and lo <= s.y0 + 0.5 < hi)
    out["zebra"] = zebra
    return out


def test_a_window_draws_its_rows_as_the_whole_figure_does(big):
    _an, wf = big
    full = waterfall_figure(wf, max_labels=10**6, big=False)  # every row labelled, as bars: the reference
    lo, hi = 400, 600
    win = waterfall_figure(wf, window=(lo, hi))
    assert list(win.layout.yaxis.tickvals) == list(range(lo, hi))
    assert list(win.layout.yaxis.ticktext) == list(full.layout.yaxis.ticktext)[lo:hi]
    n, bw = label_columns(wf.rows, NARROWEST, mark_width(wf.rows))  # (a page's labels: the room of the width it is laid out for)
    assert list(win.layout.yaxis.ticktext)[0] == L.row_label(wf.rows[lo], n, badge_chars=bw).replace(" ", NBSP)  # numbered as in the whole: 401
    assert list(win.layout.yaxis.range) == [hi - 0.5, lo - 0.5]
    assert list(win.layout.xaxis.range) == list(full.layout.xaxis.range)  # the time axis of all rows
    a, b = _drawn(full, lo, hi), _drawn(win, lo, hi)
    assert a == b
    assert {"Request sent", "Waiting (TTFB)", "Content download", "Download chunk", "duration"} <= set(b)
    assert len(b["duration"]) == hi - lo and [x[2] for x in b["duration"]] == [L.duration_text(r.duration) for r in wf.rows[lo:hi]]
    stalls = [r.index for r in wf.rows[lo:hi] if any(m.kind == "stall" for m in r.markers)]
    assert stalls and all((L.GLYPHS["stall"] in t) == (i in stalls) for i, t in zip(range(lo, hi), win.layout.yaxis.ticktext))
    assert not _drawn(win, 0, lo).get("duration") and not _drawn(win, hi, 10**6).get("duration")  # nothing else drawn
    # the connection view: the connections of these rows, and only these rows' segments
    conns = {r.connection for r in wf.rows[lo:hi]}
    assert len(list(win.layout.yaxis2.ticktext)) == len(conns) < len(wf.connection_rows)
    assert len(win.to_json()) < len(full.to_json()) / 3


def test_a_grouped_window_keeps_the_group_bands(big):
    an, _wf = big
    wf = W.build(an, group_by="connection")
    full = waterfall_figure(wf, max_labels=10**6, big=False)
    win = waterfall_figure(wf, window=(130, 330))
    # (the rows' bands; not a row text's pixel-sized box over a milestone's line: figures_marks.crossed_texts)
    bands = lambda f: sorted((s.y0, s.y1) for s in f.layout.shapes if s.type == "rect" and s.yref == "y" and s.ysizemode != "pixel")
    cut = [(max(a, 129.5), min(b, 329.5)) for a, b in bands(full) if b > 129.5 and a < 329.5]
    assert bands(win) == cut and cut


@pytest.mark.parametrize("group,sort", ORDERS)
def test_other_orders_are_the_built_rows_sorted_again(big, group, sort):
    an, wf = big
    before = wf.to_dict()
    assert views.reordered(wf, group, sort).to_dict() == W.build(an, group_by=group, sort=sort).to_dict()
    assert wf.to_dict() == before  # the memo it came from is unchanged


def test_other_orders_of_a_real_capture():
    from wirefall.analyzer.pipeline import analyze

    path = next(iter(sorted((ROOT / "sample_captures" / "page").glob("*.pcap*"))), None)
    if path is None:
        pytest.skip("sample captures missing")
    keys = sorted((ROOT / "sample_captures" / "page").glob(path.name.split(".")[0] + "*.keys")) or None
    an = analyze(str(path), keylogs=[str(k) for k in keys] if keys else None)
    wf = W.build(an)
    assert len(wf.rows) > 5
    for group, sort in ORDERS:
        assert views.reordered(wf, group, sort).to_dict() == W.build(an, group_by=group, sort=sort).to_dict(), (group, sort)


def test_the_window_and_its_moves(big):
    _an, wf = big
    small = views.View(views.L.subset(wf, wf.rows[: views.WINDOW_THRESHOLD]), total=1000)
    assert views.row_window(small, 0) is None  # small views: every row
    v = views.View(wf, total=1000)
    assert views.row_window(v, None) == (0, views.WINDOW_ROWS)
    assert views.row_window(v, 950) == (1000 - views.WINDOW_ROWS, 1000)  # cut to the view
    assert views.row_window(v, -5) == (0, views.WINDOW_ROWS)
    k = views.WINDOW_ROWS
    assert views.window_start_of(v, 450, 0) == 450 // k * k  # the window of the grid holding it
    assert views.window_start_of(v, 450, 451 - k) == 451 - k  # the current window holds it: kept


def test_the_pager_callback(big, served):
    from dash import no_update

    from wirefall.ui.web.app import cb_waterfall, cb_wf_window

    _an, wf = big
    st, e = served
    k = views.WINDOW_ROWS

    def move(trigger, start, row=None, selected=None, order=None, expr=""):
        out = cb_wf_window(st, 0, 0, 0, 0, row, e.id, "v", [], [], [], [], expr, order, selected, start, trigger=trigger)
        return (start if out[0] is no_update else out[0]), out[1], out[2]

    a, style, text = move(None, 0)
    assert a == 0 and style == {} and f"requests 1–{k} of 1000" in text
    assert move("wf-next", 0)[0] == k and move("wf-next", 1000 - k)[0] == 1000 - k  # not past the end
    assert move("wf-prev", k)[0] == 0 and move("wf-prev", 0)[0] == 0
    assert move("wf-last", 0)[0] == 1000 - k and move("wf-first", 500)[0] == 0
    assert move("wf-row", 0, row=450)[0] == 400  # the window holding request 450 (row 449)
    assert move("wf-order", 500, order="duration")[0] == 0  # a new order: from the top
    assert move("filter-expr", 500, expr="status >= 200")[0] == 0
    sel = wf.rows[777].exchange
    assert move("selected", 0, selected=sel)[0] == 700
    a, style, text = move(None, 0, expr="status >= 600")  # a small view: no pager, every row drawn
    assert style == {"display": "none"} and text == ""
    fig, *_ = cb_waterfall(st, e.id, "v", [], [], [], [], "", None, None, None, 300)
    assert list(fig.layout.yaxis.tickvals) == list(range(300, 300 + k))
    n, bw = label_columns(wf.rows, NARROWEST, mark_width(wf.rows))
    assert fig.layout.yaxis.ticktext[0] == L.row_label(wf.rows[300], n, badge_chars=bw).replace(" ", NBSP)


def test_the_window_and_its_figure_in_one_answer(big, served):
    """cb_wf answers the window and its figure together: the page's first call (or a capture
    just shown) from the top — or at the window of the selection that came with it (a page
    opened on ``?sel=``); a page button moves the window and draws it; a live capture's growth
    keeps it."""
    from dash import no_update

    from wirefall.ui.web.app import cb_wf, wf_trigger

    _an, wf = big
    st, e = served
    k = views.WINDOW_ROWS

    def call(triggered, start=0, selected=None):
        return cb_wf(st, 0, 0, 0, 0, None, e.id, "v", [], [], [], [], "", None, selected, None, start, None, triggered=triggered)

    out = call([], start=500)
    assert out[0] == 0 and f"requests 1–{k} of" in out[2]
    assert list(out[3].layout.yaxis.tickvals) == list(range(k))
    out = call(["wf-next"])
    assert out[0] == k and list(out[3].layout.yaxis.tickvals) == list(range(k, 2 * k))
    sel = wf.rows[777].exchange
    out = call(["capture", "selected"], selected={"capture": e.id, "id": sel})  # a page opened on ?sel=
    assert out[0] == 700 and list(out[3].layout.yaxis.tickvals) == list(range(700, 700 + k))
    assert call(["live-version"], start=300)[0] is no_update  # a live capture grew: the window kept
    assert wf_trigger(["selected", "wf-order"]) == "wf-order" and wf_trigger(["wf-next", "capture"]) == "wf-next"
    assert wf_trigger(["version"]) is None and wf_trigger(["selected"]) == "selected"


def test_connection_view_says_how_many_connections_carried_no_request():
    """page-h2's headline counts 2 connections; Chromium's spare socket carried no request, so
    the connection view draws 1 and says that 1 more is not drawn (and a capture whose every
    connection carried requests says nothing of the kind)."""
    from wirefall.analyzer.pipeline import analyze

    root = Path(__file__).resolve().parents[1] / "sample_captures"
    an = analyze(str(root / "page" / "page-h2.pcapng"), [str(root / "page" / "page-h2.keys")])
    wf = W.build(an)
    idle = [c for c in an.connections if c.id not in {r.connection for r in wf.rows}]
    assert len(an.connections) == 2 and len(wf.connection_rows) == 1 and len(idle) == 1 and idle[0].transport == "tcp"
    assert wf.unused_connections == 1
    heads = [a.text.replace("<br>", " ") for a in waterfall_figure(wf).layout.annotations if a.text.startswith("Connections")]  # (wrapped)
    assert heads == ["Connections (1): handshake, then each request · 1 more carried no request (not drawn)"]
    an = analyze(str(root / "http" / "h2-tls.pcap"), [str(root / "http" / "h2-tls.keys")])
    wf = W.build(an)
    assert wf.unused_connections == 0
    assert [a.text.replace("<br>", " ") for a in waterfall_figure(wf).layout.annotations if a.text.startswith("Connections")] == [
        f"Connections ({len(wf.connection_rows)}): handshake, then each request"]
