"""Each HTTP/3 frame in the detail tree says what tshark says of it: the stream's type before
the first frame of a unidirectional stream (``Stream Type: Control Stream (0x0000000000000000)``),
``Type: HEADERS (0x0000000000000001)``, ``Length``, ``Frame Payload``, and a SETTINGS frame's
settings in tshark's words (``Settings - Max Table Capacity: 4096``, an identifier tshark 4.0 does
not name ``Unknown``, a reserved one ``Settings - GREASE`` / ``Type: GREASE (0x21)``) — on every
packet of real captures (aioquic, Chromium, a lossy load, amazon.com), in order, every such line
tshark shows is there.

Before (session 34): ``Setting: QPACK_MAX_TABLE_CAPACITY (0x1) = 4096`` and wirefall's own fields
(``Protocol: h3``, ``stream_type: control``), now in a ``[wirefall: …]`` node.  wirefall's decoded
header list (``Header list (5 headers)``: tshark 4.0 does not decode QPACK) is not compared; nor a
frame split over several STREAM frames or packets (tshark reassembles it)."""
from __future__ import annotations

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import capture_and_keys

CAPTURES = {
    "aioquic-h3": ("sample", "quic/aioquic-h3.pcap", "quic/aioquic-h3.keys"),
    "page-h3": ("sample", "page/page-h3.pcapng", "page/page-h3.keys"),
    "lossy-h3": ("sample", "lossy/page-h3.pcapng", "lossy/page-h3.keys"),
    "amazon": ("shared", "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"),
}
MUST = ("Type: ", "Length: ", "Settings - ", "Settings Identifier: ", "Settings Value: ")


def _tshark(path: str, keys: str | None) -> dict[int, list[str]]:
    args = ["-n", "-r", path, "-Y", "http3", *(["-o", f"tls.keylog_file:{keys}"] if keys else [])]
    return {num: [r[0] for proto in pkt.iter("proto") if proto.get("name") == "http3" for r in pdml.field_lines(proto)]
            for num, pkt in pdml.packets(*args)}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_h3_frames_are_tsharks(name, tmp_path):
    path, kpath = capture_and_keys(*CAPTURES[name], tmp_path)
    want = _tshark(path, kpath)
    an = analyze(path, keylogs=[kpath] if kpath else [])
    src = PacketSource(path)
    frames = settings = 0
    for n, theirs in want.items():
        ours: list[str] = []
        whole = True  # (a frame continued from or into another packet: tshark shows it reassembled, where it ends)
        for top in packet_detail(an, src, n):
            if not top.label.startswith("Hypertext Transfer Protocol Version 3"):
                continue
            for fn in top.children:
                if "[continued" in fn.label or "[packets" in fn.label or not any(c.label.startswith("Frame Payload: ") for c in fn.children):
                    whole = False
                    continue
                frames += 1
                skip = {id(y) for w in fn.children if w.label.startswith(("[wirefall: ", "Header list")) for y in w.walk()}
                ours += [pdml.label(x.label) for x in fn.walk() if x is not fn and id(x) not in skip]
                settings += sum(1 for x in fn.children if x.label.startswith("Settings - "))
        pdml.in_order(ours, theirs, f"packet {n}")
        if whole:
            pdml.all_there((t for t in theirs if t.startswith(MUST)), (lb for lb in ours if lb.startswith(MUST)), f"packet {n}")
    assert frames >= 5 and settings >= 2
