"""The TUI's notice line on a page whose only partial part is background traffic (session 31).

The amazon load (../shared/captures/pageload-amazon) is complete for the page: its 15 requests
with every field known; one QUIC connection joined mid-way carries none of them (tshark finds no
QUIC in it: the handshake was before the capture).  The notice said that
connection's whole story, four wrapped lines at 80 columns, which left the packet list 5 rows;
now one line says the page is complete and where the rest is, and the list keeps its rows."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from test_labels30 import CAP, KEYS, _need
from tuifix import sync, wait_loaded

from wirefall.analyzer.completeness import compute


def _joined_midway_by_tshark() -> set[tuple[str, int]]:
    """The UDP conversations to port 443 in which tshark finds no QUIC packet (without the
    handshake it cannot tell a short-header packet from other UDP): (client address, port)."""
    out = subprocess.run(["tshark", "-n", "-r", str(CAP), "-Y", "udp.port == 443", "-T", "fields", "-e", "udp.stream",
                          "-e", "frame.protocols", "-e", "ipv6.src", "-e", "ip.src", "-e", "udp.srcport", "-e", "udp.dstport"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    quic, client = set(), {}
    for line in out.splitlines():
        stream, protos, s6, s4, sp, dp = (line.split("\t") + [""] * 6)[:6]
        if "quic" in protos.split(":"):
            quic.add(stream)
        if dp == "443":
            client.setdefault(stream, (s6 or s4, int(sp)))
    return {client[s] for s in client if s not in quic}


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@sync
async def test_a_complete_page_with_partial_background_traffic_takes_one_notice_line():
    _need()
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import PacketList

    app = WirefallApp(str(CAP), [str(KEYS)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.pause()
        c = compute(app.an)
        assert c.page_complete and not c.complete
        # the partial part is the connection tshark sees joined mid-way, and only it
        # (of unknown owner since 2026-12-05: joined mid-way, no request seen — not called background)
        bg = {i.connection for i in c.issues if i.background or i.whose == "unknown"}
        conns = {k.id: k for k in app.an.connections}
        assert {(str(conns[b].client[0]), conns[b].client[1]) for b in bg} == _joined_midway_by_tshark()
        note = app.query_one("#notice")
        text = str(note.render())
        assert note.display and note.size.height == 1, text
        assert text == "Page complete · 1 connection of unknown owner — 4 Statistics, Completeness", text
        assert "Completeness" in text
        assert app.query_one(PacketList).size.height >= 7  # (4 with the four-line notice)
