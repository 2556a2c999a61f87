"""The TUI's compare view as a person uses it (issue 23), driven with Textual's pilot: the
"A only:" / "B only:" labels keep their prefix when the URL is cut (it is cut from the
left, where a path is alike); a request is never simply not drawn — one outside the zoomed
window is an arrow at the edge it lies beyond; a browser log (no packets) compared with a
capture is drawn on its own time axis, not 1.8e9 s along it.  Inputs: the real page loads
of sample_captures/page (a capture cut short by scripts/hostile/ui_inputs.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tuifix import sync, wait_compare

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import ui_inputs  # noqa: E402

pytestmark = pytest.mark.skipif(not (PAGE / "page-h2.pcapng").exists(), reason="sample captures missing")
textual = pytest.importorskip("textual")

from textual.widgets import DataTable  # noqa: E402

from wirefall.analyzer.compare import compare, normalise_url  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from wirefall.ui.tui.app import WirefallApp  # noqa: E402
from wirefall.ui.tui.compare import CompareScreen, CompareWaterfall  # noqa: E402


async def _open_compare(pilot, app) -> CompareScreen:
    scr = await wait_compare(pilot, app, steps=400, settle=0.1)
    assert scr.loaded, scr.error
    return scr


def _bars_at_their_start(wv: CompareWaterfall, res: dict) -> int:
    """Each matched side's bar is drawn at the column of its start (compare()'s seconds
    from that side's start); returns the sides checked."""
    n = 0
    for i, m in enumerate(res["matched"]):
        for side, bar in zip("ab", wv.bar_texts(i)):
            s = m[side]["start"]
            if s is None or not (wv.v0 <= s < wv.v1):
                continue
            col = min(wv.column(s), wv.side_width - 1)
            assert bar[col] != " " and len(bar) - len(bar.lstrip()) <= col, (m["url"], side, col, bar)
            n += 1
    return n


@sync
async def test_only_a_labels_keep_their_prefix(tmp_path):
    """page-h2 against the same load cut at 30 %: the requests the cut lost are "A only:"
    rows, in the table and the waterfall, with the prefix whole and the URL's path end."""
    a, keys = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
    b = ui_inputs.truncated(tmp_path, fraction=0.3)
    res = compare(analyze(str(a), [str(keys)]), analyze(str(b), [str(keys)]))
    only = [normalise_url(e["url"]) for e in res["only_a"]]
    assert only and all(len("A only: " + u) > 40 for u in only)  # longer than the column: cut
    app = WirefallApp(str(a), [str(keys)], compare=str(b), keylogs_b=[str(keys)])
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await _open_compare(pilot, app)
        rq = scr.query_one("#cmp-requests", DataTable)
        cells = [str(rq.get_row_at(i)[0]) for i in range(rq.row_count)]
        shown = [c for c in cells if c.startswith("A only: ")]
        assert len(shown) == len(only), cells
        for c, u in zip(shown, only):
            assert len(c) <= 40 and c.startswith("A only: …") and u.endswith(c[len("A only: …"):]), (c, u)
        await pilot.press("2")
        await pilot.pause(0.1)
        wv = scr.query_one(CompareWaterfall)
        labels = [wv.label_text(i)[4:].rstrip() for i in range(wv.count)]
        wf_only = [lab for lab in labels if lab.startswith("A only: ")]
        assert len(wf_only) == len(only), labels
        for lab, u in zip(wf_only, only):
            assert u.endswith(lab[len("A only: …"):]), (lab, u)


@sync
async def test_a_request_beyond_the_window_is_an_arrow_at_its_edge():
    """Zoomed in on the first request, the later ones lie beyond the window: each side
    that has a request shows an arrow at the right edge (none is blank); panned past them
    all, arrows at the left edge; reset, every bar whole again."""
    (a, ka), (b, kb) = (PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"), (PAGE / "page-h2.pcapng", PAGE / "page-h2.keys")
    app = WirefallApp(str(a), [str(ka)], compare=str(b), keylogs_b=[str(kb)])
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await _open_compare(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        wv = scr.query_one(CompareWaterfall)
        for _ in range(6):
            await pilot.press("plus")
        await pilot.pause(0.05)
        arrows = 0
        for i, r in enumerate(wv.rows):
            for row, t0, bar in ((r.a, wv.ta0, wv.bar_texts(i)[0]), (r.b, wv.tb0, wv.bar_texts(i)[1])):
                if row is None:
                    continue
                assert bar.strip(), (i, r.label)  # drawn, in some form
                if row.start - t0 > wv.v1:
                    assert bar.rstrip().endswith("▸") and bar.strip() == "▸", (i, bar)
                    arrows += 1
        assert arrows >= 4
        line = wv.render_line(len(wv.rows) - 1 - wv.scroll_offset.y).text if wv.count <= wv.size.height else ""
        assert not line or "▸" in line  # on screen, as the person sees the last row
        for _ in range(40):
            await pilot.press("right")
        left = sum(1 for i in range(wv.count) for bar in wv.bar_texts(i) if bar.strip() == "◂")
        assert left >= 4 and all(bar.strip() for i in range(wv.count) for bar in wv.bar_texts(i))
        await pilot.press("0")
        assert not any(c in bar for i in range(wv.count) for bar in wv.bar_texts(i) for c in "◂▸")


@sync
async def test_browser_log_against_its_capture_on_its_own_axis():
    """The browser's own HAR of a page load (no packets) against the capture of that load:
    both sides' bars start at their request's start on the shared ms scale (the HAR's
    requests were drawn 1.8e9 s along the axis, beyond anything on screen)."""
    har, cap, keys = PAGE / "pw-h2.har.gz", PAGE / "pw-h2.pcapng", PAGE / "pw-h2.keys"
    res = compare(analyze(str(har), []), analyze(str(cap), [str(keys)]))
    assert len(res["matched"]) >= 10
    app = WirefallApp(str(har), [], compare=str(cap), keylogs_b=[str(keys)])
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await _open_compare(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        wv = scr.query_one(CompareWaterfall)
        assert wv.full < 60  # seconds: the page load, not the epoch
        assert _bars_at_their_start(wv, res) == 2 * len(res["matched"])
        axis = str(scr.query_one("#cmp-wf-axis").render())
        assert "┊0ms" in axis
