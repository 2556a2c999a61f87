"""The TUI's waterfall tells background traffic and open requests as the images do: on bg-mixed
(a headless-Chromium load with a VM agent's long-polls, telemetry and another client host) the
background rows say "bg" and the view opens on the page's span — the page's rows, which tshark
shows between the document's first packet and late.json's last, not squeezed by the 3 s
long-polls around them — with the rows beyond it said at the edge ("← 3004 ms"); 0 shows the
whole capture and back; the long-poll the capture holds no response to reads "no response"
(its request's own 0.11 ms before)."""
from __future__ import annotations

from tuifix import sync, wait_loaded

from conftest import SAMPLES, need_tool, run_tool

BG = SAMPLES / "page" / "bg-mixed.pcapng"


@sync
async def test_background_rows_page_view_and_no_response():
    need_tool("tshark")
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import WaterfallView

    keys = BG.with_suffix(".keys")
    # tshark: the requests of the metadata server (link-local, background) and whether each was answered
    out = run_tool("tshark", "-2", "-r", str(BG), "-Y", "http.request && ip.dst == 169.254.169.254", "-T", "fields",
                   "-e", "frame.number", "-e", "http.response_in")
    polls = [ln.split("\t") for ln in out.splitlines()]
    unanswered = [p for p in polls if not p[1]]
    assert len(polls) == 4 and len(unanswered) == 1
    app = WirefallApp(str(BG), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.2)
        wv = app.query_one(WaterfallView)
        bg = [r for r in wv.rows if r.background]
        page = [r for r in wv.rows if not r.background]
        assert len(bg) == 6 and len(page) == 10
        assert all(" bg " in wv.label_text(r) for r in bg) and not any(" bg " in wv.label_text(r) for r in page)
        # the view: every page row in it, the first long-poll (ended 3 s before the page) out of it
        assert wv.v0 <= min(r.start for r in page) and max(r.end for r in page) <= wv.v1
        assert (wv.v0, wv.v1) != (wv.t0, wv.t1)
        first = min(bg, key=lambda r: r.start)
        assert first.end < wv.v0 and wv.bar_text(wv.rows.index(first)).startswith("← ")
        open_row = next(r for r in wv.rows if r.status is None)
        assert "no response" in wv.bar_text(wv.rows.index(open_row)) and "0.11 ms" not in wv.bar_text(wv.rows.index(open_row))
        await pilot.press("0")
        assert (wv.v0, wv.v1) == (wv.t0, wv.t1)
        await pilot.press("0")
        assert (wv.v0, wv.v1) != (wv.t0, wv.t1)
