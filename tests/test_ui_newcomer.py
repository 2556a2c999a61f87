"""The TUI as a newcomer meets it (issue 23), driven with Textual's pilot: it says why a
view is empty or partial (the reasons are analyzer.completeness's, which `wirefall summary`
prints too), the layout fits 80×24 and 100×30, Enter in Follow scrolls the packet list to
the packet, → ← open and close the detail tree, panes resize, search looks in every column,
IPv6 addresses show whole.  Inputs: the real page loads of sample_captures/page, cut short
or paired with a key log of other connections by scripts/hostile/ui_inputs.py."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tuifix import sync, wait_loaded

from wirefall.analyzer.completeness import NEXT_NO_KEYLOG, NEXT_WRONG_KEYLOG, compute
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
SHARED = ROOT.parent / "shared" / "captures"
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import ui_inputs  # noqa: E402

pytestmark = pytest.mark.skipif(not (PAGE / "page-h2.pcapng").exists(), reason="sample captures missing")

textual = pytest.importorskip("textual")
from wirefall.ui.tui.app import HINT, FollowScreen, HelpScreen, WirefallApp  # noqa: E402
from wirefall.ui.tui.widgets import HexView, PacketList, WaterfallView  # noqa: E402


async def _open(pilot, app):
    await wait_loaded(pilot, app, steps=400, settle=0.1)


def _text(app, sel: str) -> str:
    return str(app.query_one(sel).render())


def _shown(app, sel: str) -> bool:
    w = app.query_one(sel)
    return w.display and w.size.height > 0


def _save(app, name: str) -> None:
    """The screen as text (and SVG) under /tmp/wirefall-shots, for a person to look at."""
    import io

    from rich.console import Console

    d = Path("/tmp/wirefall-shots")
    try:
        d.mkdir(parents=True, exist_ok=True)
        app.save_screenshot(str(d / f"{name}.svg"))
        # as text: the screen as the terminal shows it (as App.export_screenshot renders it)
        w, h = app.size
        con = Console(width=w, height=h, file=io.StringIO(), record=True, legacy_windows=False, safe_box=False)
        con.print(app.screen._compositor.render_update(full=True))
        (d / f"{name}.txt").write_text(con.export_text(styles=False))
    except OSError:
        pass


# ------------------------------------------------------------------ silence → an explanation


@sync
async def test_wrong_keylog_h3_says_why_in_status_waterfall_and_connections(tmp_path):
    cap = PAGE / "page-h3.pcapng"
    wrong = ui_inputs.wrong_keylog(tmp_path)
    an = analyze(str(cap), [str(wrong)])
    c = compute(an)
    reason = an.connections[0].quic.reason  # the model's own reason (what `wirefall summary` prints)
    assert not an.exchanges and reason and c.not_decrypted[0] == reason
    app = WirefallApp(str(cap), [str(wrong)])
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app)
        notice = _text(app, "#notice")
        assert _shown(app, "#notice")
        assert "1 connection not decrypted" in notice and NEXT_WRONG_KEYLOG[:40] in notice.replace("\n", " ")
        assert "Incomplete" in _text(app, "#status")
        await pilot.press("2")
        await pilot.pause(0.1)
        assert app.query_one(WaterfallView).count == 0
        note = _text(app, "#wf-note")
        assert _shown(app, "#wf-note") and note.startswith("no requests: 1 connection not decrypted") and reason[:30] in note
        _save(app, "tui-wrong-keylog-waterfall")
        await pilot.press("3")
        await pilot.pause(0.1)
        from textual.widgets import DataTable

        dt = app.query_one("#connections", DataTable)
        cell = str(dt.get_row_at(0)[10])
        assert "?" not in cell and cell.endswith("not decrypted: " + reason)


@sync
async def test_no_keylog_names_the_option():
    cap = PAGE / "page-h2.pcapng"
    app = WirefallApp(str(cap))
    async with app.run_test(size=(120, 30)) as pilot:
        await _open(pilot, app)
        notice = _text(app, "#notice").replace("\n", " ")
        assert "2 connections not decrypted (no key log given)" in notice
        assert NEXT_NO_KEYLOG[:20] in notice  # "pass --keylog FILE"


@sync
async def test_truncated_capture_warning_is_on_screen(tmp_path):
    cap = ui_inputs.truncated(tmp_path)
    an = analyze(str(cap), [str(PAGE / "page-h2.keys")])
    assert any("truncated" in w for w in an.warnings) and an.exchanges  # good data survives
    app = WirefallApp(str(cap), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app)
        notice = _text(app, "#notice").replace("\n", " ")
        assert _shown(app, "#notice") and "capture truncated in packet" in notice and "next: the capture file is cut short" in notice
        await pilot.press("2")
        await pilot.pause(0.1)
        assert app.query_one(WaterfallView).count == len(an.exchanges)
        _save(app, "tui-truncated-waterfall")


@sync
async def test_filter_that_matches_nothing_says_so():
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(120, 30)) as pilot:
        await _open(pilot, app)
        n = len(app.an.exchanges)
        await pilot.press("2")
        app.apply_filter('url contains "no-such-thing"')
        await pilot.pause(0.1)
        assert _text(app, "#wf-note") == f"no request matches the filter ({n} requests in the capture)"
        assert not _shown(app, "#notice")  # a complete capture: no notice line


# ------------------------------------------------------------------ layout, first contact


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
@sync
async def test_small_screen_layout(size):
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=size) as pilot:
        await _open(pilot, app)
        w, h = size
        # the first-run hint names the tabs
        assert _shown(app, "#hint") and _text(app, "#hint") == HINT and "1 Packets 2 Waterfall" in HINT
        assert len(HINT) + 2 <= w  # whole, padding included
        tree, bp = app.query_one("#detail"), app.query_one("#bytes-pane")
        assert tree.size.width >= w // 2 - 2 and bp.size.width <= w // 2 + 2
        hv = app.query_one(HexView)
        assert hv.WIDTH == 8 and max(len(x) for x in hv.lines()) <= hv.size.width  # the dump fits the pane
        assert app.query_one(PacketList).size.height >= 3  # some rows of the list show
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.query_one("#help-box").size.width <= w
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert not _shown(app, "#hint")  # gone once help was opened


@sync
async def test_panes_resize_with_keys():
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(120, 36)) as pilot:
        await _open(pilot, app)
        bp, lower = app.query_one("#bytes-pane"), app.query_one("#lower")
        w0, h0 = bp.outer_size.width, lower.outer_size.height
        await pilot.press("greater_than_sign", "greater_than_sign")
        await pilot.pause(0.1)
        assert bp.outer_size.width == w0 + 8
        await pilot.press("less_than_sign")
        await pilot.pause(0.1)
        assert bp.outer_size.width == w0 + 4
        list_h = app.query_one(PacketList).size.height
        await pilot.press("right_square_bracket")
        await pilot.pause(0.1)
        assert lower.outer_size.height == h0 - 2 and app.query_one(PacketList).size.height == list_h + 2


@sync
async def test_statistics_scroll_sideways():
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.1)
        sc = app.query_one("#stats-scroll")
        assert sc.virtual_size.width > sc.size.width  # wider than the screen …
        sc.scroll_right(animate=False)
        await pilot.pause(0.05)
        assert sc.scroll_offset.x > 0  # … and it scrolls


# ------------------------------------------------------------------ keys that did nothing


@sync
async def test_tree_right_expands_left_collapses():
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(pilot, app)
        await pilot.press("d")
        tree = app.query_one("#detail")
        await pilot.pause(0.05)
        node = tree.cursor_node
        assert node is not None and node.allow_expand and not node.is_expanded  # the frame layer, closed
        await pilot.press("right")
        await pilot.pause(0.05)
        assert node.is_expanded
        await pilot.press("right")  # on an open node: into its first child
        await pilot.pause(0.05)
        assert tree.cursor_node is node.children[0]
        await pilot.press("left")  # a leaf: back to its parent
        await pilot.pause(0.05)
        assert tree.cursor_node is node
        await pilot.press("left")
        await pilot.pause(0.05)
        assert not node.is_expanded


@sync
async def test_follow_enter_scrolls_the_list_to_the_packet():
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app)
        pl = app.query_one(PacketList)
        last_conn = max(c.id for c in app.an.connections)
        app.follow_stream(last_conn, None, None, whole_connection=True)
        await pilot.pause(0.1)
        assert isinstance(app.screen, FollowScreen)
        items = app.screen.items
        target = max(i for i, it in enumerate(items) if isinstance(it[2], int))
        await pilot.press("end")
        while app.screen.query_one("#follow-list").cursor > target:
            await pilot.press("up")
        await pilot.press("enter")
        await pilot.pause(0.2)
        pkt = items[target][2]
        assert pl.current_packet == pkt
        y, hgt = pl.scroll_offset.y, pl.scrollable_content_region.height
        assert y <= pl.cursor < y + hgt  # on screen, not only selected
        assert any(line.lstrip().startswith(str(pkt) + " ") for line in pl.visible_lines())


@sync
async def test_search_looks_in_every_column():
    an = analyze(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(120, 30)) as pilot:
        await _open(pilot, app)
        # the waterfall: a content type (not in the row's label)
        css = next(e for e in an.exchanges if "css" in (e.content_type or ""))
        await pilot.press("2", "slash", *"text/css", "enter")
        await pilot.pause(0.1)
        wv = app.query_one(WaterfallView)
        assert app.exchange(wv.rows[wv.cursor].exchange).content_type == css.content_type
        # the packets: a length (a column of its own)
        pl = app.query_one(PacketList)
        await pilot.press("1")
        await pilot.pause(0.05)
        row = pl.row(10)
        await pilot.press("slash", *f" {row[5]} ", "enter")
        await pilot.pause(0.1)
        assert pl.row(pl.cursor)[5] == row[5]


@sync
async def test_ipv6_addresses_whole():
    cap = SHARED / "pageload-amazon" / "amazon1.cap.gz"
    if not cap.exists():
        pytest.skip("third-party captures folder absent")
    an = analyze(str(cap))
    v6 = next(c for c in an.connections if max(len(str(c.client[0])), len(str(c.server[0]))) > 24)
    first = next(n for n in range(1, an.packets + 1) if an.index.conn[n - 1] == v6.id)
    app = WirefallApp(str(cap), analysis=an)
    async with app.run_test(size=(200, 40)) as pilot:
        await _open(pilot, app)
        pl = app.query_one(PacketList)
        pl.select_packet(first)
        await pilot.pause(0.1)
        line = pl.cached_line(pl.cursor)[0]
        assert str(v6.client[0]) in line and str(v6.server[0]) in line
        assert "Source" in _text(app, "#packet-header")
