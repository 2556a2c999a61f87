"""Each decrypted QUIC frame in the detail tree is Wireshark's: ``STREAM id=3 fin=0 off=0 len=12
dir=Unidirectional origin=Server-initiated``, ``ACK``, ``PADDING Length: 220``, ``CRYPTO``, its
frame type with a STREAM frame's FIN/LEN/OFF bits, a stream ID's initiator and direction bits,
offsets, lengths, ACK ranges, stream data, connection IDs and error codes — on every packet of
real captures (Chromium, aioquic, ngtcp2, a lossy load), the lines of the frames are tshark's
(``-T pdml``), in order, and every line tshark shows of these kinds is there.

Before (session 34): "QUIC: STREAM" with wirefall's own fields ("packet_type: 1-RTT",
"frame_type: 10", "fin: False"), now in a ``[wirefall: …]`` node of their own.  The TLS handshake a
CRYPTO frame hands on is tshark's ``TLSv1.3 Record Layer: Handshake Protocol: …`` node under it,
with tshark's reassembly of several CRYPTO frames (session 36: tests/test_quic_crypto36.py)."""
from __future__ import annotations

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import capture_and_keys

CAPTURES = {
    "page-h3": ("sample", "page/page-h3.pcapng", "page/page-h3.keys"),
    "lossy-h3": ("sample", "lossy/page-h3.pcapng", "lossy/page-h3.keys"),
    "aioquic-h3": ("sample", "quic/aioquic-h3.pcap", "quic/aioquic-h3.keys"),
    "quic-illustrated": ("shared", "quic-illustrated/capture.pcap", "quic-illustrated/keylog.txt"),
    "amazon": ("shared", "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"),
}
MUST = ("PING", "PADDING", "ACK", "CRYPTO", "STREAM", "HANDSHAKE_DONE", "NEW_CONNECTION_ID", "CONNECTION_CLOSE",
        "Frame Type: ", "Largest Acknowledged: ", "ACK Delay: ", "ACK Range Count: ", "First ACK Range: ", "Gap: ",
        "ACK Range: ", "Offset: ", "Length: ", "Crypto Data", "Stream ID: ", "Stream Data: ", "Padding Length: ",
        "Sequence: ", "Connection ID: ", "Error code: ", "Reason phrase")
# (a stream ID's and a STREAM frame type's bit lines: their names, after " = ")
MUST_BITS = ("Fin", "Len(gth)", "Off(set)", "Stream initiator", "Stream direction")


def _must(lb: str) -> bool:
    return lb.startswith(MUST) or " = " in lb and lb.split(" = ", 1)[1].split(":", 1)[0] in MUST_BITS


def _tshark(path: str, keys: str | None) -> dict[int, list[tuple[str, bool]]]:
    """Packet -> the lines of its QUIC frames: (words, inside the TLS handshake a CRYPTO frame carries)."""
    args = ["-n", "-r", path, "-Y", "quic", *(["-o", f"tls.keylog_file:{keys}"] if keys else [])]
    out: dict[int, list[tuple[str, bool]]] = {}
    for num, pkt in pdml.packets(*args):
        lines: list[tuple[str, bool]] = []
        for f in pkt.iter("field"):
            if f.get("name") == "quic.frame":
                lines.append((pdml.label(f.get("showname") or f.get("show") or ""), False))
                lines += _lines(f)
        out[num] = lines
    return out


def _lines(el, inside: bool = False) -> list[tuple[str, bool]]:
    """The lines under a frame's element, depth first: its fields, and a protocol it carries (the
    TLS handshake of a CRYPTO frame, a <proto> of its own in PDML, whose words are the record's
    line) with that protocol's lines, marked ``inside``."""
    out: list[tuple[str, bool]] = []
    for c in el:
        text = pdml.label(c.get("showname") or c.get("show") or "")
        if c.tag not in ("field", "proto") or c.get("hide") == "yes":
            continue
        out.append((text, inside or c.tag == "proto"))
        out += _lines(c, inside or c.tag == "proto")
    return out


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_quic_frames_are_tsharks(name, tmp_path):
    path, kpath = capture_and_keys(*CAPTURES[name], tmp_path)
    want = _tshark(path, kpath)
    an = analyze(path, keylogs=[kpath] if kpath else [])
    src = PacketSource(path)
    frames = streams = acks = hellos = 0
    for n, theirs in want.items():
        ours: list[str] = []
        quic_lines: list[str] = []  # (ours outside the TLS handshake a CRYPTO frame carries)
        for top in packet_detail(an, src, n):
            if not top.label.startswith("QUIC IETF"):
                continue
            for fn in (x for x in top.walk() if x.abbrev == "quic.frame"):
                frames += 1
                streams += fn.label.startswith("STREAM")
                acks += fn.label == "ACK"
                hellos += any(x.label == "Handshake Type: Client Hello (1)" for x in fn.walk())
                own = {id(y) for w in fn.children if w.label.startswith("[wirefall: ") for y in w.walk()}
                tls = {id(y) for w in fn.children if w.label.startswith("TLSv") for y in w.walk()}
                for x in fn.walk():
                    if id(x) not in own:
                        ours.append(pdml.label(x.label))
                        if id(x) not in tls:
                            quic_lines.append(ours[-1])
        pdml.in_order(ours, [t for t, _ in theirs], f"packet {n}")
        pdml.all_there((t for t, tls in theirs if _must(t) and not tls), (lb for lb in quic_lines if _must(lb)), f"packet {n}")
    assert frames >= 10 and streams >= 1 and acks >= 1
    if name == "aioquic-h3":  # (a ClientHello whole in one CRYPTO frame: its TLS tree, as tshark's)
        assert hellos == 1
