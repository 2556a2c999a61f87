"""What a person saw using the TUI on the sample captures (a review): each test failed before
its fix."""
from __future__ import annotations

import re
from pathlib import Path

from tuifix import sync, wait_loaded

from wirefall.ui.tui.app import WirefallApp
from wirefall.ui.tui.widgets import WaterfallView

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"


def _h2() -> tuple[str, list[str]]:
    return str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")]


async def _waterfall_tab(pilot, app) -> None:
    """The capture loaded, the waterfall tab shown."""
    await wait_loaded(pilot, app, must_load=True)
    await pilot.press("2")
    await pilot.pause(0.2)


def _ticks(axis: str) -> list[str]:
    return re.findall(r"┊(\S+)", axis)


@sync
async def test_waterfall_axis_follows_a_terminal_resize():
    """Opened in 80 columns then widened to 200, the axis kept its 80-column ticks (one
    label, "0ms", over a 140-column bar) until a zoom key redrew it."""
    app = WirefallApp(*_h2())
    async with app.run_test(size=(80, 24)) as pilot:
        await _waterfall_tab(pilot, app)
        narrow = _ticks(str(app.query_one("#wf-axis").render()))
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.3)
        wv = app.query_one(WaterfallView)
        axis = str(app.query_one("#wf-axis").render())
        assert len(axis.rstrip()) > 150, axis
        assert len(_ticks(axis)) > len(narrow) + 2, (narrow, axis)
        assert axis == wv.axis_text()


@sync
async def test_waterfall_axis_labels_read_alike():
    """page-h2's axis read ┊0ms ┊50.0ms ┊100.0ms ┊150ms ┊200ms: a tick summed from 0.05 s
    steps missed a whole ms by 1e-14 and got a decimal its neighbours lack."""
    app = WirefallApp(*_h2())
    async with app.run_test(size=(200, 50)) as pilot:
        await _waterfall_tab(pilot, app)
        ticks = _ticks(str(app.query_one("#wf-axis").render()))
        assert len(ticks) >= 4
        assert all(re.fullmatch(r"\d+ms", t) for t in ticks), ticks
        values = [int(t[:-2]) for t in ticks]
        steps = {b - a for a, b in zip(values, values[1:])}
        assert len(steps) == 1 and values[0] == 0, ticks


def test_tick_labels_one_unit_and_precision_per_axis():
    from wirefall.ui.tui.widgets import tick_label

    assert [tick_label(k * 0.05, 0.05) for k in range(5)] == ["0ms", "50ms", "100ms", "150ms", "200ms"]
    assert [tick_label(k * 0.0005, 0.0005) for k in range(4)] == ["0.0ms", "0.5ms", "1.0ms", "1.5ms"]
    assert [tick_label(k * 2.0, 2.0) for k in (0, 4, 5, 6)] == ["0s", "8s", "10s", "12s"]  # not 8000ms then 10.0s
    assert tick_label(3 * 0.1, 0.1) == "300ms"


@sync
async def test_waterfall_legend_names_every_glyph_on_screen():
    """The legend was one line of 325 characters: even 200 columns cut it at "(download: dark =",
    so what ◆ (priority signal, on every h2 row) and ┃ (retransmission) mean was never shown."""
    from wirefall.ui.waterfall_layout import GLYPH_KINDS, GLYPH_MEANING

    app = WirefallApp(*_h2())
    async with app.run_test(size=(200, 50)) as pilot:
        await _waterfall_tab(pilot, app)
        leg = app.query_one("#wf-legend")
        shown = "".join(leg.render_line(y).text for y in range(leg.size.height))
        for k in GLYPH_KINDS:
            assert GLYPH_MEANING[k] in shown, (k, shown)
        assert "┃ retransmission" in shown and "┃ out-of-order" in shown and "┃ loss" in shown and "packets arriving" in shown


@sync
async def test_waterfall_number_is_the_request_id_whatever_the_order():
    """Sorted (s) or grouped (c / H), the waterfall renumbered its rows 1, 2, 3 … and the request
    view said "Request 2" for the row now second, which `wirefall requests --detail 2` (and the
    same view before the sort) calls another request. The number is the request's id now, as
    Wireshark's No. stays with its packet when the list is sorted."""
    from wirefall.ui.tui.app import TextScreen

    app = WirefallApp(str(PAGE / "page-h1.pcapng"), [str(PAGE / "page-h1.keys")])
    async with app.run_test(size=(160, 40)) as pilot:
        await _waterfall_tab(pilot, app)
        wv = app.query_one(WaterfallView)
        urls = {r.exchange: r.url for r in wv.rows}
        for keys in (["s"], ["c"], ["H"]):  # by duration; grouped by connection; by host
            await pilot.press(*keys)
            await pilot.pause(0.5)
            assert [r.exchange for r in wv.rows] != sorted(urls) or keys == ["H"]
            for r in wv.rows:
                label = wv.label_text(r)
                num = label[5:9] if wv.group_by else label[:4]  # (bracket, connection, then the number)
                assert urls[int(num)] == r.url, (keys, num, r.url)
        await pilot.press("home", "down", "enter")
        await pilot.pause(0.3)
        r = wv.rows[1]
        assert isinstance(app.screen, TextScreen)
        assert app.screen.title_text.startswith(f"Request {r.exchange}: ")
        ex = next(e for e in app.an.exchanges if e.id == r.exchange)
        assert ex.url == r.url


def test_help_lists_every_waterfall_key():
    """The footer offered H (group by host) and s (sort), the help's Waterfall section named
    neither (and said c toggles back to 'start time', which is the current sort)."""
    from wirefall.ui.tui.app import HELP

    section = HELP.split("[b]Waterfall[/b]", 1)[1].split("[b]", 1)[0]
    keys = set()
    for line in section.splitlines():
        col = line[2:20].strip()
        if col and not col.startswith("("):
            keys |= {k for part in col.split(" / ") for k in part.split()}
    for b in WaterfallView.BINDINGS:
        if b.show:
            assert any(k in keys for k in b.key.split(",")) or b.key in ("plus,equals_sign", "minus,underscore"), b
    assert {"H", "s", "c", "0"} <= keys, keys


def _amazon() -> tuple[str, list[str]]:
    import pytest

    d = ROOT.parent / "shared" / "captures" / "pageload-amazon"
    if not d.is_dir():
        pytest.skip("third-party captures folder absent")
    return str(d / "amazon1.cap.gz"), [str(d / "amazon1.key_log.txt.gz")]


@sync
async def test_packet_list_keeps_protocol_and_info_on_80_columns():
    """On amazon1 (IPv6 addresses: 39-column Source and Destination) an 80-column terminal
    showed No., Time, Source and Destination only: Protocol and Info were off the screen.
    The address columns now narrow (elided in the middle) to leave Info its room; wide, they
    stay whole."""
    from wirefall.ui.tui.widgets import PacketList

    app = WirefallApp(*_amazon())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.pause(0.2)
        pl = app.query_one(PacketList)
        header = str(app.query_one("#packet-header").render())
        assert "Protocol" in header and "Info" in header and header.index("Info") <= 80 - 12, header
        pl.move_to(22)  # packet 23 (a Client Hello): IPv6 both ways
        line = pl.line(22)[0]
        assert "…" in line and line.index(" TLS") < 80 - 20, line
        assert header.index("Protocol") == line.index("TLS")
        await pilot.resize_terminal(200, 40)
        await pilot.pause(0.3)
        header = str(app.query_one("#packet-header").render())
        line = pl.line(22)[0]
        assert "2600:9000:215a:6200:7:49a5:5fd6:da1" in line and "…" not in line.split(" TLS", 1)[0]
        assert header.index("Protocol") == line.index("TLS")


@sync
async def test_waterfall_bars_keep_room_in_80_columns():
    """In 80 columns the label column (number, glyphs, 34-character URL, an 8-column badge
    for "h2", status) took 58 columns and left the bars 20; the URL now gives way so the bars
    keep WaterfallView.BAR_MIN, the badge column is as wide as the widest badge, and every
    row's label is as wide as the axis's; at 200 columns the URL gets what the badge left."""
    app = WirefallApp(*_h2())
    async with app.run_test(size=(80, 24)) as pilot:
        await _waterfall_tab(pilot, app)
        wv = app.query_one(WaterfallView)
        labels = [wv.label_text(r) for r in wv.rows]
        assert len({len(x) for x in labels}) == 1
        assert wv.size.width - len(labels[0]) - 2 >= WaterfallView.BAR_MIN, (wv.size.width, labels[0])
        assert all(re.search(r" h2 200 $", x) for x in labels), labels
        assert wv.axis_text().index("┊") == len(labels[0]) + 1
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.3)
        wide = [wv.label_text(r) for r in wv.rows]
        # (58 before 2026-12-04, the six columns "h2" did not need going to the URL; a wide terminal's URL now takes a
        # third of the columns past WIDE as well: 20 more at 200 columns — review 26)
        from wirefall.ui.tui.widgets import WIDE

        assert len(wide[0]) == 58 + min((200 - WIDE) // 3, 40)
        assert any("127.0.0.1:59833/data/config.json" in x for x in wide)


def _amazon_app() -> WirefallApp:
    """The TUI on the real amazon load (../shared/captures), skipped where it is not."""
    amazon = ROOT.parent / "shared" / "captures" / "pageload-amazon"
    if not (amazon / "amazon1.cap.gz").exists():
        import pytest

        pytest.skip("no amazon load")
    return WirefallApp(str(amazon / "amazon1.cap.gz"), [str(amazon / "amazon1.key_log.txt.gz")])


@sync
async def test_a_wide_terminal_names_each_file():
    """At 200 columns the amazon load's rows name their files (the URL took 34 characters at any
    width: images-na's five rows read "…/cs…in.js", "…/rd…8d.js"; review 26): each label holds
    the first ten characters of its URL's last path segment."""
    from urllib.parse import urlsplit

    app = _amazon_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await _waterfall_tab(pilot, app)
        wv = app.query_one(WaterfallView)
        rows = [r for r in wv.rows if "images-na" in (r.url or "")]
        assert len(rows) == 6
        for r in rows:
            name = urlsplit(r.url).path.rsplit("/", 1)[-1]
            assert name[:10] in wv.label_text(r), (name, wv.label_text(r))


@sync
async def test_a_short_terminal_gives_the_rows_the_lines():
    """At 80x24 the amazon load's waterfall showed 3 of its 15 rows: the notice (4 lines), the
    waterfall's note (3) and the legend (5) took the rest. Below SHORT_TERMINAL lines the note
    and the legend take 1 and 2 (the notice keeps its reason and next step whole): 8 rows; at 50
    lines as before."""
    app = _amazon_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _waterfall_tab(pilot, app)
        await pilot.pause(0.3)
        wv = app.query_one(WaterfallView)
        assert wv.count == 15 and wv.size.height >= 8, wv.size.height
        assert app.query_one("#wf-legend").size.height <= 2 and app.query_one("#wf-note").size.height <= 1
        await pilot.resize_terminal(120, 50)
        await pilot.pause(0.3)
        assert app.query_one("#wf-legend").size.height > 2
