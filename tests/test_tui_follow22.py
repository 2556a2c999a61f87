"""A TUI review (session 22): the Follow view's title counted its lines as frames, and the
waterfall's loss tick had no colour in the legend and white in the rows.

- Follow stream 1 of amazon1.cap's connection 8 said "35 frames": one per line with a packet,
  the HEADERS frames' header lines too; tshark shows 3 HTTP/2 frames in 2 packets.  The title
  now counts frames and the packets they complete in, with the bytes each way (Wireshark's
  Follow dialog), checked here against tshark on page-h2 (same shape: stream 1 is HEADERS in
  one packet, HEADERS and DATA in the next).
- The legend drew "┃ loss" in the legend text's grey while the rows drew the tick #ffffff
  (invisible on a light terminal); retransmission red and out-of-order orange.  Each kind now
  has one colour, read by the legend and the rows alike."""
from __future__ import annotations

import collections

import pytest
from conftest import SAMPLES, run_tool
from tuifix import sync, wait_loaded

from wirefall.ui.tui.app import FollowScreen, WirefallApp

H2, H2_KEYS = SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "page" / "page-h2.keys"


def _tshark_stream(tcp_stream: int, stream_id: int) -> tuple[int, int, list[int]]:
    """tshark's frames, packets, and ``http2.length`` bytes per direction (client, server) of
    HTTP/2 stream ``stream_id`` of TCP stream ``tcp_stream``."""
    out = run_tool("tshark", "-r", str(H2), "-o", f"tls.keylog_file:{H2_KEYS}",
                   "-Y", f"http2.streamid == {stream_id} && tcp.stream == {tcp_stream}",
                   "-T", "fields", "-e", "frame.number", "-e", "tcp.dstport", "-e", "http2.streamid", "-e", "http2.length")
    frames, packets = 0, set()
    b = [0, 0]
    for line in out.splitlines():
        num, dport, ids, lens = line.split("\t")
        d = 0 if dport == _server_port() else 1
        for sid, ln in zip(ids.split(","), lens.split(",")):
            if int(sid) == stream_id:  # (a packet may carry frames of other streams too)
                frames += 1
                packets.add(num)
                b[d] += int(ln)
    return frames, len(packets), b


def _server_port() -> str:
    """page-h2's server port (the connection's SYN/ACK source)."""
    out = run_tool("tshark", "-r", str(H2), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 1", "-T", "fields", "-e", "tcp.srcport")
    return out.split()[0]


def _tcp_stream(packet: int) -> int:
    return int(run_tool("tshark", "-r", str(H2), "-Y", f"frame.number == {packet}", "-T", "fields", "-e", "tcp.stream").strip())


async def _follow_from_packet(pilot, app, packet: int) -> FollowScreen:
    """Ctrl+G ``packet`` Enter, then F (as the reviewer did)."""
    await pilot.press("ctrl+g")
    await pilot.pause(0.05)
    await pilot.press(*str(packet), "enter")
    await pilot.pause(0.05)
    assert app.query_one("PacketList").current_packet == packet
    await pilot.press("F")
    await pilot.pause(0.2)
    assert isinstance(app.screen, FollowScreen)
    return app.screen


@pytest.mark.parametrize(("packet", "stream_id"), [(25, 1), (40, 9)])
@sync
async def test_follow_title_counts_frames_and_packets_as_tshark(packet, stream_id):
    """Stream 1 (the page: 3 frames in 2 packets, 17 + 10 header lines) and stream 9 (a
    download of 14 frames in 9 packets): frames, packets, and each direction's frame-payload
    bytes as tshark's ``http2.streamid == N && tcp.stream == S``."""
    frames, packets, b = _tshark_stream(_tcp_stream(packet), stream_id)
    app = WirefallApp(str(H2), [str(H2_KEYS)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        scr = await _follow_from_packet(pilot, app, packet)
        title = scr.title_text
        assert title.startswith(f"Follow stream {stream_id} of connection "), title
        assert f" (h2): {frames} frames in {packets} packets; frame payload: client {b[0]:,} B, server {b[1]:,} B — " in title, title
        # the lines with a packet are more than the frames (header lines): what the title said before
        with_packet = sum(1 for it in scr.items if isinstance(it[2], int))
        assert with_packet > frames
        frame_lines = [it for it in scr.items if isinstance(it[2], int) and not it[0].startswith(" " * 32)]
        assert len(frame_lines) == frames and len({it[2] for it in frame_lines}) == packets


@sync
async def test_follow_connection_title_gives_transport_payload_each_way():
    """Following a whole connection (F on its SYN, which carries no frame): the bytes each way
    are the TCP payload, tshark's ``tcp.len`` summed per direction (Wireshark's Follow TCP
    Stream's "Entire conversation" split by side); frames and packets are those listed."""
    tcp_stream = _tcp_stream(1)
    out = run_tool("tshark", "-r", str(H2), "-Y", f"tcp.stream == {tcp_stream}", "-T", "fields", "-e", "tcp.dstport", "-e", "tcp.len")
    by = collections.Counter()
    for line in out.splitlines():
        dport, ln = line.split("\t")
        by[0 if dport == _server_port() else 1] += int(ln)
    app = WirefallApp(str(H2), [str(H2_KEYS)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        scr = await _follow_from_packet(pilot, app, 1)
        title = scr.title_text
        assert title.startswith("Follow connection "), title
        frame_lines = [it for it in scr.items if isinstance(it[2], int) and not it[0].startswith(" " * 32)]
        assert (f" (h2): {len(frame_lines):,} frames in {len({it[2] for it in frame_lines}):,} packets; "
                f"TCP payload: client {by[0]:,} B, server {by[1]:,} B — ") in title, title


def _contrast(a: str, b: str) -> float:
    def lum(h: str) -> float:
        v = [int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        v = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in v]
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]
    la, lb = lum(a), lum(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


@sync
async def test_legend_tick_colours_are_the_rows_and_differ():
    """On screen: the legend's ┃ before each tick kind's name is in the colour the rows draw
    that kind's tick with (a row of page-h2 without one given one marker of each kind); the three differ,
    none is the legend text's grey or white, and loss reads on a dark and on a light terminal."""
    from rich.color import Color

    from wirefall.analyzer.waterfall_model import Marker
    from wirefall.ui.tui.widgets import TICK_GLYPH, TICK_LABELS, WaterfallView, tick_colors
    from wirefall.ui.waterfall_layout import TICK_KINDS

    app = WirefallApp(str(H2), [str(H2_KEYS)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("2")
        await pilot.pause(0.3)
        leg = app.query_one("#wf-legend")
        segs = [s for y in range(leg.size.height) for s in leg.render_line(y)]
        legend = {}
        for k, s in enumerate(segs):
            if s.text == TICK_GLYPH and k + 1 < len(segs):
                name = segs[k + 1].text.split("  ")[0].strip()
                legend[name] = s.style.color
        wv = app.query_one(WaterfallView)
        bare = [j for j in range(wv.count) if not any(m.kind in TICK_KINDS for m in wv.rows[j].markers)]
        i = max(bare, key=lambda j: wv.rows[j].end - wv.rows[j].start)  # the longest bar with no tick of its own
        r = wv.rows[i]
        r.markers.extend(Marker(kind, r.start + (r.end - r.start) * (q + 1) / 4, kind) for q, kind in enumerate(TICK_KINDS))
        wv.cursor = 0 if i else 1  # (not the cursor's row)
        drawn = [s.style.color for s in wv.render_line(i - wv.scroll_offset.y) if s.text == TICK_GLYPH]
    assert len(drawn) == 3, drawn  # in time order, as the markers were placed
    for kind, color in zip(TICK_KINDS, drawn):
        assert legend[TICK_LABELS[kind]] == color == Color.parse(tick_colors()[kind]), (kind, legend, drawn)
    hexes = [tick_colors()[k] for k in TICK_KINDS]
    assert len(set(hexes)) == 3
    assert not {h.lower() for h in hexes} & {"#ffffff", "#000000", "#a0a0a0"}
    loss = tick_colors()["gap"]  # (WCAG's 3 : 1 for a graphical object, on both backgrounds)
    assert _contrast(loss, "#ffffff") >= 3 and _contrast(loss, "#121212") >= 3, loss
