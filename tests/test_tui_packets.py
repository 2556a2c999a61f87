"""The TUI packet list's Wireshark habits, as the person sees them (Textual pilot): sort by a
column (keys and a click on the header), go to packet (Ctrl+G), the time display formats
checked against tshark's ``-t r`` / ``-t ud`` / ``-t dd`` columns, time references, marks,
and the marked / displayed packets written to pcapng that tshark reads back (with the keys
of the Decryption Secrets Block)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tuifix import sync, wait_loaded

from wirefall.ui.tui.app import HELP, HINT, HelpScreen, WirefallApp
from wirefall.ui.tui.packets import GotoScreen
from wirefall.ui.tui.widgets import MARKED_STYLE, PacketList

ROOT = Path(__file__).resolve().parents[1]
H1 = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"  # 74 packets, 6 connections
TLS = ROOT / "sample_captures" / "tls" / "tls12_aes128gcm.pcap"
TLS_KEYS = TLS.with_suffix(".keys")
TSHARK = shutil.which("tshark")

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def _tshark(path, *args) -> list[list[str]]:
    out = subprocess.run([TSHARK, "-r", str(path), *args], capture_output=True, text=True, check=True, timeout=120).stdout
    return [ln.split("\t") for ln in out.splitlines()]


def _lines(pl: PacketList) -> list[str]:
    """Every line of the list as drawn (the ones on screen are ``visible_lines``)."""
    got = [pl.cached_line(i)[0] for i in range(pl.count)]
    assert pl.visible_lines() == got[pl.scroll_offset.y: pl.scroll_offset.y + len(pl.visible_lines())]
    return got


def _numbers(pl: PacketList) -> list[int]:
    return [int(ln[:7]) for ln in _lines(pl)]


def _times(pl: PacketList, width: int = 11) -> dict[int, str]:
    return {int(ln[:7]): ln[8:8 + width].strip() for ln in _lines(pl)}


def _header(app) -> str:
    return str(app.query_one("#packet-header").render())


async def _filter(pilot, app, expr: str):
    await pilot.press("f")
    app.query_one("#filter").value = ""
    await pilot.press(*expr, "enter")
    for _ in range(100):
        await pilot.pause(0.05)
        if app.query_one(PacketList).count != app.an.packets:
            break
    await pilot.pause(0.05)


async def _goto(pilot, app, n: int):
    await pilot.press("ctrl+g")
    await pilot.pause(0.05)
    assert isinstance(app.screen, GotoScreen)
    await pilot.press(*str(n), "enter")
    await pilot.pause(0.05)


@sync
async def test_time_display_formats_are_tsharks():
    """t cycles the Time column: relative (tshark -t r) → UTC date and time (-t ud) → since
    the previous displayed packet (-t dd, with a filter on) → since the time reference:
    Ctrl+T on packets 10 and 40 shows *REF* there and counts from them (tshark's epochs)."""
    rel = {int(n): t for n, t in _tshark(H1, "-t", "r", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")}
    ud = {int(n): t for n, t in _tshark(H1, "-t", "ud", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")}
    dd = {int(n): t for n, t in _tshark(H1, "-t", "dd", "-Y", "tcp.len > 0", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")}
    epoch = {int(n): float(t) for n, t in _tshark(H1, "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch")}
    app = WirefallApp(str(H1), [])
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        pl = app.query_one(PacketList)
        assert _times(pl) == rel and len(rel) == 74
        assert "Time" in _header(app)
        await pilot.press("t")
        await pilot.pause(0.05)
        assert _times(pl, 26) == ud and "Time (UTC)" in _header(app)
        assert "UTC date and time" in str(app.query_one("#status").render())
        await pilot.press("t")
        await _filter(pilot, app, "tcp.len > 0")
        assert "Delta time" in _header(app)
        assert _times(pl) == dd and len(dd) < 74
        await pilot.press("f")
        app.query_one("#filter").value = ""
        await pilot.press("enter")  # the filter cleared: delta from the previous captured packet (-t d)
        await pilot.pause(0.2)
        d = {int(n): t for n, t in _tshark(H1, "-t", "d", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")}
        assert pl.count == 74 and _times(pl) == d
        for n in (10, 40):
            await _goto(pilot, app, n)
            await pilot.press("ctrl+t")
            await pilot.pause(0.05)
        assert pl.time_format == "reference" and pl.refs == [10, 40] and "Ref time" in _header(app)
        shown = _times(pl)
        assert shown[10] == shown[40] == "*REF*"
        for n, t in shown.items():
            if n in (10, 40):
                continue
            base = epoch[40] if n > 40 else epoch[10] if n > 10 else epoch[1]
            assert abs(float(t) - (epoch[n] - base)) < 1.5e-6, n
        await pilot.press("ctrl+t")  # on packet 40 again: removed
        await pilot.pause(0.05)
        assert pl.refs == [10] and _times(pl)[40] != "*REF*"
        assert abs(float(_times(pl)[40]) - (epoch[40] - epoch[10])) < 1.5e-6
        await pilot.press("t")  # back to relative
        await pilot.pause(0.05)
        assert _times(pl) == rel


@sync
async def test_sort_by_columns_with_keys_and_header_clicks():
    """s sorts by the next column (Time, Source, …, Length), S the other way, a click on a
    column title sorts by it; the order is tshark's values sorted stably, the cursor stays on
    its packet and the title carries ▲/▼."""
    rows = [(int(n), float(t), int(ln)) for n, t, ln in
            _tshark(H1, "-T", "fields", "-e", "frame.number", "-e", "frame.time_relative", "-e", "frame.len")]
    by_len = [n for n, _, _ in sorted(rows, key=lambda r: r[2])]
    by_len_desc = [n for n, _, _ in sorted(rows, key=lambda r: r[2], reverse=True)]
    app = WirefallApp(str(H1), [])
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        pl = app.query_one(PacketList)
        await _goto(pilot, app, 44)
        assert _numbers(pl) == list(range(1, 75))
        await pilot.press("s")  # Time
        await pilot.pause(0.05)
        assert pl.sort == ("time", False) and _numbers(pl) == [n for n, _, _ in sorted(rows, key=lambda r: r[1])]
        await pilot.press("s", "s", "s", "s")  # Source, Destination, Protocol, Length
        await pilot.pause(0.05)
        assert pl.sort == ("length", False) and _numbers(pl) == by_len
        assert pl.current_packet == 44 and pl.cached_line(pl.cursor)[0].startswith("     44 ")
        assert "▲Length" in _header(app)
        await pilot.press("S")
        await pilot.pause(0.05)
        assert _numbers(pl) == by_len_desc and "▼Length" in _header(app) and pl.current_packet == 44
        # a click on the Info title: by Info, the text the list shows (then the other way)
        hdr = _header(app)
        await pilot.click("#packet-header", offset=(hdr.index("Info") + 1, 0))
        await pilot.pause(0.05)
        infos = {int(ln[:7]): ln[88:] for ln in _lines(pl)}  # (No. 7, Time 11, addresses 24, Protocol 10, Length 6)
        assert pl.sort == ("info", False) and "Info ▲" in _header(app)
        assert _numbers(pl) == sorted(range(1, 75), key=lambda n: pl.row_fn(n).info)
        assert [infos[n] for n in _numbers(pl)] == sorted(infos.values())
        # No.: ascending is capture order, again descending, a third time capture order
        await pilot.click("#packet-header", offset=(3, 0))
        await pilot.pause(0.05)
        assert _numbers(pl) == list(range(1, 75))
        await pilot.click("#packet-header", offset=(3, 0))
        await pilot.pause(0.05)
        assert _numbers(pl) == list(range(74, 0, -1)) and "▼ No." in _header(app)
        await pilot.click("#packet-header", offset=(3, 0))
        await pilot.pause(0.05)
        assert pl.sort is None and _numbers(pl) == list(range(1, 75))
        # a sort holds across the filter: the filter's packets, sorted
        await pilot.press("s", "s", "s", "s", "s")
        await _filter(pilot, app, "tcp.flags.push == 1")
        want = [int(n) for (n,) in _tshark(H1, "-Y", "tcp.flags.push == 1", "-T", "fields", "-e", "frame.number")]
        lens = {n: ln for n, _, ln in rows}
        assert pl.sort == ("length", False) and _numbers(pl) == sorted(want, key=lens.__getitem__)


@sync
async def test_go_to_packet_and_marks(tmp_path, monkeypatch):
    """Ctrl+G goes to a packet (one hidden by the filter is said, the cursor stays); m marks
    (white on black), again unmarks; E writes the marked packets, W the shown ones, to
    pcapng files tshark reads: the same packets, and the DSB's keys decrypt them."""
    monkeypatch.chdir(tmp_path)
    want_http = [int(n) for (n,) in _tshark(TLS, "-o", f"tls.keylog_file:{TLS_KEYS}", "-Y", "http", "-T", "fields", "-e", "frame.number")]
    orig = {int(n): (ln, ep) for n, ln, ep in
            _tshark(TLS, "-T", "fields", "-e", "frame.number", "-e", "frame.len", "-e", "frame.time_epoch")}
    app = WirefallApp(str(TLS), [str(TLS_KEYS)])
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        pl = app.query_one(PacketList)
        await _goto(pilot, app, 12)
        assert pl.current_packet == 12 and pl.cached_line(pl.cursor)[0].startswith("     12 ")
        await _goto(pilot, app, 999)
        assert pl.current_packet == 12  # out of range: said, stays
        for n in (4, 11, 12):
            await _goto(pilot, app, n)
            await pilot.press("m")
            await pilot.pause(0.05)
        await pilot.press("m")  # 12 again: unmarked
        await pilot.pause(0.05)
        assert pl.marks == {4, 11}
        assert pl.cached_line(3)[1].bgcolor == MARKED_STYLE.bgcolor and pl.cached_line(10)[1].bgcolor == MARKED_STYLE.bgcolor
        assert pl.cached_line(11)[1].bgcolor != MARKED_STYLE.bgcolor
        assert "packet 12 unmarked (2 marked" in str(app.query_one("#status").render())
        await pilot.press("E")
        await pilot.pause(0.1)
        out = tmp_path / "tls12_aes128gcm-marked.pcapng"
        assert app.last_export == str(out) and "wrote 2 marked packets" in str(app.query_one("#status").render())
        got = _tshark(out, "-T", "fields", "-e", "frame.len", "-e", "frame.time_epoch")
        assert [tuple(r) for r in got] == [orig[4], orig[11]]
        # W: the packets the filter shows; tshark decrypts them with the DSB alone
        await _filter(pilot, app, "tcp.len > 0")
        want_shown = [int(n) for (n,) in _tshark(TLS, "-Y", "tcp.len > 0", "-T", "fields", "-e", "frame.number")]
        assert list(pl.packets) == want_shown and set(want_http) <= set(want_shown)
        await _goto(pilot, app, 2)  # hidden by the filter now
        assert pl.current_packet == 12 and 12 in want_shown  # (the cursor stays where it was)
        await pilot.press("W")
        await pilot.pause(0.1)
        out2 = tmp_path / "tls12_aes128gcm-displayed.pcapng"
        assert app.last_export == str(out2)
        got2 = _tshark(out2, "-Y", "http", "-T", "fields", "-e", "frame.len", "-e", "frame.time_epoch")
        assert [tuple(r) for r in got2] == [orig[n] for n in want_http] and want_http
        assert len(_tshark(out2, "-T", "fields", "-e", "frame.number")) == len(want_shown)


@sync
async def test_help_and_hint_name_the_packet_list_keys():
    for key in ("ctrl+g", "go to packet", "ctrl+t", "time reference", "time display format", "-t dd", "mark / unmark",
                "CAPTURE-marked.pcapng", "sort by the next column", "click on a column title"):
        assert key in HELP, key
    assert "s sort" in HINT and "t time" in HINT and "m mark" in HINT and "^G go" in HINT and len(HINT) + 2 <= 80
    app = WirefallApp(str(H1), [])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        assert str(app.query_one("#hint").render()) == HINT
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        assert "Packet list (as in Wireshark)" in text and "ctrl+g" in text
