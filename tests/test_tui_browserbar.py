"""The TUI waterfall's browser bar (issue 21): with a browser log laid over the capture
(``wirefall tui CAP --netlog F``) each row's lower half shows the browser's view of the
request -- its log's request start → response end -- scaled like the wire's bar, as the
figures draw their thin browser bar under the row; without a log nothing changes.

Outside truth: the browser's times are the NetLog's own (``Exchange.browser``, read from
the raw JSON by tests/test_browserlog.py); the columns are computed here from the
waterfall model (``Row.browser_phases`` / ``Row.phases``) and the view's time window,
independently of the widget's drawing code, and read back from the rendered strips.
"""
from __future__ import annotations

import asyncio
import math

import pytest

from conftest import SAMPLES
from tuifix import wait_loaded

from wirefall.analyzer.model import not_sent_of
from wirefall.ui.tui.app import WirefallApp
from wirefall.ui.tui.widgets import WaterfallView

LOADS = [
    (SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "page" / "page-h2.keys", SAMPLES / "page" / "page-h2.netlog.json.gz"),
    (SAMPLES / "quic" / "page-h3-late.pcapng", SAMPLES / "quic" / "page-h3-late.keys", SAMPLES / "quic" / "page-h3-late.netlog.json.gz"),
]
BROWSER_GLYPHS = "▄▀"


def _columns(a: float, b: float, v0: float, v1: float, width: int) -> set[int]:
    """The cells [a, b] covers at ``width`` cells for the window [v0, v1] (a span shorter
    than a cell still takes the cell it starts in)."""
    x0, x1 = (a - v0) / (v1 - v0) * width, (b - v0) / (v1 - v0) * width
    c0, c1 = max(int(x0), 0), min(max(math.ceil(x1), int(x0) + 1), width)
    return set(range(c0, c1))


def _cells(wv: WaterfallView, y: int) -> tuple[int, list[tuple[str, str | None, str | None]]]:
    """(the bar's first column, [(char, fg, bg)] of the bar) of screen line y as rendered."""
    out: list[tuple[str, str | None, str | None]] = []
    for seg in wv.render_line(y):
        st = seg.style
        fg = st.color.name if st and st.color else None
        bg = st.bgcolor.name if st and st.bgcolor else None
        out += [(ch, fg, bg) for ch in seg.text]
    first = len(wv.label_text(wv.rows[wv.scroll_offset.y + y])) + 1  # (label, then "│")
    return first, out[first:-1]


def _open(cap, keys, overlays, each):
    async def run():
        app = WirefallApp(str(cap), [str(keys)], overlays=overlays)
        async with app.run_test(size=(180, 60)) as pilot:
            await wait_loaded(pilot, app, steps=600, settle=0, must_load=True)
            await pilot.press("2")
            await pilot.pause(0.1)
            wv = app.query_one(WaterfallView)
            wv.move_to(wv.count - 1)  # (the cursor's row last: every row checked on the plain background first)
            await pilot.pause(0.05)
            return each(app, wv)

    return asyncio.run(run())


@pytest.mark.parametrize("cap,keys,netlog", LOADS, ids=[c.name for c, _k, _n in LOADS])
def test_browser_bar_columns_follow_the_model(cap, keys, netlog):
    def with_log(app, wv):
        assert wv.count and wv.count < wv.size.height
        legend = str(app.query_one("#wf-legend").render())
        assert "browser's view (netlog)" in legend
        drawn = 0
        rows = {}
        for y in range(wv.count):
            r = wv.rows[y]
            first, cells = _cells(wv, y)
            bw = len(cells)
            got = {k for k, (ch, fg, bg) in enumerate(cells) if ch == "▄" or ch != " " and bg is not None and y != wv.cursor
                   or ch == "▀"}
            if not r.browser_phases:
                assert not got, (y, r.url)
                continue
            e = app.exchange(r.exchange)
            times = e.browser["times"]
            # the model's browser span is the log's own request start → response end
            assert r.browser_phases[0][1] == pytest.approx(times["start"])
            assert r.browser_phases[-1][2] == pytest.approx(times["response_end"])
            want = _columns(r.browser_phases[0][1], r.browser_phases[-1][2], wv.v0, wv.v1, bw)
            if y == wv.cursor:  # (under the cursor the plain cells have a background too: the glyphs tell)
                assert {k for k, (ch, _f, _b) in enumerate(cells) if ch in BROWSER_GLYPHS} <= want
            else:
                assert got == want, (y, r.url, sorted(got), sorted(want))
            # the colour under each browser cell is one of the row's browser phase colours
            for k in want:
                ch, fg, bg = cells[k]
                col = fg if ch == "▄" else bg
                assert col and col.startswith("#"), (y, k, cells[k])
            drawn += 1
            rows[r.exchange] = (first, cells)
        # (a NetLog of the load knows (nearly) every request; its rows of requests that never
        # reached the network — Chrome's own failed look-ups — have no response to draw)
        assert drawn >= sum(1 for r in wv.rows if not not_sent_of(r.browser)) - 1
        return rows, (wv.v0, wv.v1)

    rows, window = _open(cap, keys, [("netlog", str(netlog))], with_log)

    def without_log(app, wv):
        legend = str(app.query_one("#wf-legend").render())
        assert "browser" not in legend
        wv.v0, wv.v1 = window  # the same time window as with the log: the wire's bars must be the same
        wv.refresh()
        for y in range(wv.count):
            r = wv.rows[y]
            assert not r.browser_phases
            first, cells = _cells(wv, y)
            assert not any(ch in BROWSER_GLYPHS for ch, _f, _b in cells)
            if r.exchange not in rows:
                continue
            bw = len(cells)
            wire = _columns(r.phases[0][1], r.phases[-1][2], wv.v0, wv.v1, bw)
            over = rows[r.exchange][1]
            assert len(over) == bw
            for k in wire:  # the wire's bar under the log: its glyphs, a full block as its upper half
                assert {"▀": "█"}.get(over[k][0], over[k][0]) == cells[k][0], (y, k, over[k], cells[k])
                assert over[k][1] == cells[k][1]

    _open(cap, keys, [], without_log)


def test_milestones_are_dotted_lines_down_the_rows():
    """The TUI's waterfall drew no milestone: the first byte of the HTML, the last byte and — a
    HAR laid over — the browser's DOMContentLoaded and load events are now a ┊ in their
    colours (the figures' dotted lines) down every row where no bar is, named in the legend."""
    from wirefall.ui.waterfall_layout import MILESTONE_COLORS

    cap, keys, har = SAMPLES / "page" / "pw-h2.pcapng", SAMPLES / "page" / "pw-h2.keys", SAMPLES / "page" / "pw-h2.har.gz"

    def each(app, wv):
        legend = str(app.query_one("#wf-legend").render())
        for name in ("HTML first byte", "last byte", "DOMContentLoaded", "load event"):
            assert name in legend, (name, legend)
        ms = {m.name: m.time for m in app.wf.milestones}
        assert {"html_first_byte", "page_load", "dom_content_loaded", "load_event"} <= set(ms)
        seen = {k: 0 for k in ("html_first_byte", "page_load", "dom_content_loaded", "load_event")}
        for y in range(wv.count):
            _first, cells = _cells(wv, y)
            bw = len(cells)
            for k in seen:
                c = min(int((ms[k] - wv.v0) / (wv.v1 - wv.v0) * bw), bw - 1)  # (at the window's end: its last cell)
                ch, fg, _bg = cells[c]
                if ch == "┊":
                    assert fg == MILESTONE_COLORS[k].lstrip("#") or fg == MILESTONE_COLORS[k], (k, y, fg)
                    seen[k] += 1
                else:  # (a bar, or the duration's text, keeps its cell)
                    assert ch != " " or fg is not None or y == wv.cursor, (k, y, cells[c])
        # each line shows (the browser's events come after the wire's bars; the HAR's own lower-half
        # bars, which end later, take some of their cells)
        assert min(seen.values()) >= 1 and seen["html_first_byte"] >= wv.count - 2, seen

    _open(cap, keys, [("har", str(har))], each)
