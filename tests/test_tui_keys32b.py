"""The Packets tab's keys act on what is shown (review 32b), as Wireshark's and DevTools' do.

t m W E (packet list), d b x (detail tree, bytes pane) and < > [ ] (pane sizes) are Packets keys
by the help text.  On the Packets tab each does what the help says, checked against tshark (the
Time column against ``tshark -t ud``, written files read back by tshark); on the Waterfall,
Connections, Statistics and Expert tabs and over the compare view each does nothing: before,
d / b jumped to the Packets tab, t / m changed the hidden list unseen, < > [ ] resized hidden
panes, and over the compare view W / E wrote files and ctrl+g opened "Go to packet".
Textual's ``check_action`` disables them there, so they are out of ``active_bindings`` (the
footer's source) too."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tuifix import sync, wait_compare, wait_loaded

from wirefall.ui.tui.app import HELP, DetailTree, WirefallApp
from wirefall.ui.tui.widgets import HexView, PacketList

ROOT = Path(__file__).resolve().parents[1]
TLS = ROOT / "sample_captures" / "tls" / "tls12_aes128gcm.pcap"
TLS_KEYS = TLS.with_suffix(".keys")
TSHARK = shutil.which("tshark")

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")

# the key as the help text writes it -> Textual's key name
KEYS = {"t": "t", "m": "m", "W": "W", "E": "E", "d": "d", "b": "b", "x": "x", "<": "less_than_sign",
        ">": "greater_than_sign", "[": "left_square_bracket", "]": "right_square_bracket"}
OTHER_TABS = {"2": "waterfall", "3": "connections-tab", "4": "statistics", "5": "expert"}


def _tshark(path, *args) -> list[list[str]]:
    out = subprocess.run([TSHARK, "-r", str(path), *args], capture_output=True, text=True, check=True, timeout=120).stdout
    return [ln.split("\t") for ln in out.splitlines()]


def _help_entries() -> dict[str, tuple[str, str]]:
    """Each key of HELP's key column -> (its section's title, its description)."""
    section, got = "", {}
    for line in HELP.splitlines():
        if m := re.match(r"\[b\](.+?)\[/b\]", line):
            section = m.group(1)
        elif m := re.match(r"  (\S.*?)\s{2,}(\S.*)", line):
            for k in re.split(r" / | ", m.group(1)):
                got.setdefault(k, (section, m.group(2)))
    return got


def test_help_calls_them_packets_keys():
    """The help text puts each of these keys on the Packets tab (its section, or "Packets:")."""
    entries = _help_entries()
    for key in KEYS:
        section, desc = entries[key]
        assert section.startswith("Packet") or desc.startswith("Packets:"), (key, section, desc)


def _state(app) -> dict:
    pl = app.query_one(PacketList)
    return {"tab": app.query_one("#tabs").active, "focused": app.focused, "time": pl.time_format, "marks": set(pl.marks),
            "refs": list(pl.refs), "source": app.query_one(HexView).current, "bytes_w": app.query_one("#bytes-pane").styles.width,
            "lower_h": app.query_one("#lower").styles.height, "status": str(app.query_one("#status").render()),
            "screen": app.screen}


def _status(app) -> str:
    return str(app.query_one("#status").render())


@pytest.mark.slow
@sync
async def test_packets_keys_act_on_the_packets_tab_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (W / E write here)
    ud = {int(n): t for n, t in _tshark(TLS, "-t", "ud", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")}
    orig = {int(n): (ln, ep) for n, ln, ep in
            _tshark(TLS, "-T", "fields", "-e", "frame.number", "-e", "frame.len", "-e", "frame.time_epoch")}
    app = WirefallApp(str(TLS), [str(TLS_KEYS)])
    async with app.run_test(size=(160, 44)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        pl, hv = app.query_one(PacketList), app.query_one(HexView)
        # a packet with a Decrypted TLS tab besides its Frame (x has somewhere to go)
        for n in range(1, app.an.packets + 1):
            pl.select_packet(n)
            await pilot.pause(0.05)
            if len(hv.sources) > 1:
                break
        assert pl.current_packet == n and "Decrypted TLS" in hv.sources[1][0]

        # ---- on the other tabs: nothing changes, no file is written, the keys are not active
        for tab_key, tab in OTHER_TABS.items():
            await pilot.press(tab_key)
            await pilot.pause(0.2)
            before = _state(app)
            assert before["tab"] == tab
            active = app.screen.active_bindings
            for key, name in KEYS.items():
                assert name not in active or active[name].node is not app, (tab, key)
                await pilot.press(name)
                await pilot.pause(0.05)
                assert _state(app) == before, (tab, key)
            assert list(tmp_path.iterdir()) == [], tab

        # ---- on the Packets tab: what the help says
        await pilot.press("1")
        await pilot.pause(0.1)
        assert app.query_one("#tabs").active == "packets" and app.focused is pl
        active = app.screen.active_bindings
        assert all(active[name].node is app and active[name].enabled for name in KEYS.values())
        # t: the next time display format, UTC date and time = tshark -t ud
        await pilot.press("t")
        await pilot.pause(0.05)
        assert pl.time_format == "absolute" and "UTC date and time" in _status(app)
        line = pl.cached_line(pl.cursor)[0]
        assert int(line[:7]) == n and line[8:8 + 26].strip() == ud[n]
        # m: mark the selected packet; E: write it, tshark reads back its length and time
        await pilot.press("m")
        await pilot.pause(0.05)
        assert pl.marks == {n} and f"packet {n} marked" in _status(app)
        await pilot.press("E")
        await pilot.pause(0.1)
        out = tmp_path / "tls12_aes128gcm-marked.pcapng"
        assert app.last_export == str(out) and "wrote 1 marked packets" in _status(app)
        assert [tuple(r) for r in _tshark(out, "-T", "fields", "-e", "frame.len", "-e", "frame.time_epoch")] == [orig[n]]
        # W: the packets shown (no filter: all of them)
        await pilot.press("W")
        await pilot.pause(0.1)
        out2 = tmp_path / "tls12_aes128gcm-displayed.pcapng"
        assert app.last_export == str(out2)
        got = {int(k): (ln, ep) for k, ln, ep in
               _tshark(out2, "-T", "fields", "-e", "frame.number", "-e", "frame.len", "-e", "frame.time_epoch")}
        assert got == orig
        # x: the bytes pane's next source (the packet's decrypted record)
        await pilot.press("x")
        await pilot.pause(0.05)
        assert app.query_one("#tabs").active == "packets" and hv.current == 1 and hv.data == hv.sources[1][1]
        # d / b: focus the detail tree / the bytes pane, on this tab
        await pilot.press("d")
        await pilot.pause(0.05)
        assert isinstance(app.focused, DetailTree) and app.query_one("#tabs").active == "packets"
        await pilot.press("b")
        await pilot.pause(0.05)
        assert app.focused is hv
        # < > the bytes pane 4 columns narrower / wider, [ ] the packet list 2 rows shorter / longer
        w0 = app.query_one("#bytes-pane").outer_size.width
        await pilot.press("less_than_sign")
        await pilot.pause(0.1)
        assert app.query_one("#bytes-pane").outer_size.width == w0 - 4 and f"bytes pane {w0 - 4} columns" in _status(app)
        await pilot.press("greater_than_sign")
        await pilot.pause(0.1)
        assert app.query_one("#bytes-pane").outer_size.width == w0
        rows0 = pl.size.height
        await pilot.press("left_square_bracket")
        await pilot.pause(0.1)
        assert pl.size.height == rows0 - 2 and "packet list" in _status(app)
        await pilot.press("right_square_bracket")
        await pilot.pause(0.1)
        assert pl.size.height == rows0


@pytest.mark.slow
@sync
async def test_packets_keys_do_nothing_over_the_compare_view(tmp_path, monkeypatch):
    """Over the compare view the hidden main view's packet list is not touched: no mark, no
    file written, no "Go to packet" dialog, and 5 does not switch its hidden tab."""
    monkeypatch.chdir(tmp_path)
    app = WirefallApp(str(TLS), [str(TLS_KEYS)], compare=str(TLS), keylogs_b=[str(TLS_KEYS)])
    async with app.run_test(size=(160, 44)) as pilot:
        scr = await wait_compare(pilot, app)
        for _ in range(100):  # (A is handed back to the main view once read)
            if app.loaded:
                break
            await pilot.pause(0.05)
        main = app.screen_stack[0]
        pl = main.query_one(PacketList)
        before = (pl.time_format, set(pl.marks), main.query_one("#tabs").active)
        for name in [*KEYS.values(), "s", "S", "ctrl+g", "ctrl+t", "5"]:
            await pilot.press(name)
            await pilot.pause(0.05)
            assert app.screen is scr, name
            assert (pl.time_format, set(pl.marks), main.query_one("#tabs").active) == before, name
        assert list(tmp_path.iterdir()) == []
