"""A TLS handshake message carried by several QUIC CRYPTO frames is shown as tshark 4.0 shows it
(``-T pdml``): Chrome's ClientHello scattered over a dozen frames in two packets, a ServerHello
or a server's Certificate over several packets.  Under each CRYPTO frame: ``N Reassembled QUIC
CRYPTO Data Fragments (…): #467(30), …`` where out-of-order frames were put together, then
``TLSv1.3 Record Layer: Handshake Protocol: …`` with a message's ``(fragment)`` where it goes on
later, its ``(last fragment)``, ``N Reassembled Handshake Fragments (…)`` and the whole message
where it ends; a retransmitted frame hands on nothing.

Before (session 35): only a message whole in one frame from its stream's offset 0 was shown;
Chrome's ClientHello and the server's Certificate had no TLS lines at all."""
from __future__ import annotations

from collections import Counter

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.protocols.quic import (CRYPTO_HOLD_MAX, HANDSHAKE_MESSAGE_MAX, crypto_deliveries,
                                              handshake_pieces)

import pdml
from conftest import capture_and_keys

CAPTURES = {
    "kyber": ("shared", "retina/quic_kyber.pcapng", None),  # Chrome 124: a ClientHello over 2 packets
    "amazon": ("shared", "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"),
    "page-h3": ("sample", "page/page-h3.pcapng", "page/page-h3.keys"),
    "lossy-h3": ("sample", "lossy/page-h3.pcapng", "lossy/page-h3.keys"),
    "multi-late": ("sample", "quic/page-multi-late.pcapng", "quic/page-multi-late.keys"),  # ClientHellos sent again
    "aioquic-h3": ("sample", "quic/aioquic-h3.pcap", "quic/aioquic-h3.keys"),
    "ngtcp2-29": ("shared", "pcap2qlog/ngtcp2-29-dsb.pcapng", None),  # (keys in the file)
}
# the lines of tshark's that a CRYPTO frame's reassembly and handshake always has
MUST = ("TLSv1.3 Record Layer: ", "Handshake Protocol: ", "Handshake Type: ", "Reassembled ", "Frame: ",
        "Fragment count: ", "Handshake Fragment count: ")
_REASSEMBLED = ("Reassembled QUIC CRYPTO Data Fragments", "Reassembled Handshake Fragments")


def _words(x: str) -> str:
    return pdml.label(x)


def _tshark(path: str, keys: str | None) -> dict[int, list[list[str]]]:
    """Packet -> per CRYPTO frame, in order, the lines under it after its own four."""
    args = ["-n", "-r", path, "-Y", "quic", *(["-o", f"tls.keylog_file:{keys}"] if keys else [])]
    out: dict[int, list[list[str]]] = {}
    for num, pkt in pdml.packets(*args):
        for f in pkt.iter("field"):
            if f.get("name") != "quic.frame" or not any(c.get("name") == "quic.frame_type" and c.get("show") == "6" for c in f):
                continue
            lines: list[str] = []

            def walk(el):
                for c in el:
                    if c.tag in ("field", "proto") and c.get("hide") != "yes":
                        lines.append(_words(c.get("showname") or c.get("show") or ""))
                        walk(c)
            walk(f)
            out.setdefault(num, []).append(lines)
    return out


def _ours(an, src, n: int) -> list[list[str]]:
    out = []
    for top in packet_detail(an, src, n):
        if not top.label.startswith("QUIC IETF"):
            continue
        for fn in (x for x in top.walk() if x.abbrev == "quic.frame" and x.label == "CRYPTO"):
            own = {id(y) for w in fn.children if w.label.startswith("[wirefall: ") for y in w.walk()}
            out.append([_words(x.label) for x in fn.walk() if x is not fn and id(x) not in own])
    return out


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_crypto_reassembly_is_tsharks(name, tmp_path):
    path, kpath = capture_and_keys(*CAPTURES[name], tmp_path)
    want = _tshark(path, kpath)
    an = analyze(path, keylogs=[kpath] if kpath else [])
    src = PacketSource(path)
    seen: Counter = Counter()
    for n, theirs in want.items():
        ours = _ours(an, src, n)
        assert len(ours) == len(theirs), f"packet {n}: {len(ours)} CRYPTO frames, tshark {len(theirs)}"
        for i, (o, t) in enumerate(zip(ours, theirs)):
            where = f"packet {n}, CRYPTO frame {i}"
            pdml.in_order(o, t, where)
            pdml.all_there((x for x in t if x.startswith(MUST)), (x for x in o if x.startswith(MUST)), where)
            seen.update(k for x in o for k in ("fragment)", *_REASSEMBLED, "Handshake Type: ") if k in x)
    assert seen["Handshake Type: "] >= 1, seen  # (a comparison that compared handshakes)
    if name in ("kyber", "amazon"):  # (the reassemblies this file is about were there, and compared)
        assert seen["Reassembled QUIC CRYPTO Data Fragments"] >= 1 and seen["Reassembled Handshake Fragments"] >= 1, seen
        assert seen["fragment)"] >= 3, seen


# ------------------------------------------------------------------ the model, on made-up streams


def _frames(stream: bytes, cuts: list[tuple[int, int, int]]) -> list[tuple[int, int, bytes]]:
    """(packet, offset, data) for each (packet, start, end) cut of ``stream``."""
    return [(p, a, stream[a:b]) for p, a, b in cuts]


def test_in_order_frames_are_handed_on_as_they_come():
    s = bytes(range(256)) * 4
    d = crypto_deliveries(_frames(s, [(1, 0, 100), (1, 100, 300), (2, 300, 1024)]))
    assert [(x.offset, len(x.data), x.parts) for x in d] == [(0, 100, ((1, 100),)), (100, 200, ((1, 200),)), (300, 724, ((2, 724),))]


def test_out_of_order_frames_wait_for_the_last_gap():
    s = bytes(range(200))
    d = crypto_deliveries(_frames(s, [(1, 30, 60), (1, 150, 200), (1, 0, 30), (2, 60, 150)]))
    assert d[:3] == [None, None, None]
    assert d[3] is not None and d[3].offset == 0 and d[3].data == s
    assert d[3].parts == ((1, 30), (1, 30), (2, 90), (1, 50))  # (in offset order)


def test_retransmitted_and_overlapping_data():
    s = bytes(range(100))
    d = crypto_deliveries(_frames(s, [(1, 0, 50), (2, 0, 50), (2, 40, 100), (3, 10, 20)]))
    assert d[1] is None and d[3] is None  # (nothing new)
    assert d[2] is not None and (d[2].offset, d[2].data) == (50, s[50:])  # (only what was not handed on)


def test_held_bytes_are_bounded():
    """Frames far ahead of a gap that never fills: held up to the budget, then the stream stops."""
    chunk = bytes(4096)
    frames = [(1, 10 + i * 4096, chunk) for i in range(CRYPTO_HOLD_MAX // 4096 + 8)]
    d = crypto_deliveries(frames)
    assert all(x is None for x in d)
    assert crypto_deliveries([(1, 0, b"x" * 5), (1, 1 << 61, b"y")])[1] is None


def _msg(t: int, n: int) -> bytes:
    return bytes([t]) + n.to_bytes(3, "big") + bytes([t]) * n


def test_handshake_pieces_across_deliveries():
    ee, cert, cv, fin = _msg(8, 20), _msg(11, 3834), _msg(15, 70), _msg(20, 32)
    stream = ee + cert + cv + fin
    # deliveries as amazon1's server Handshake flight: 1064, 1149, 1149, the rest
    cuts = [0, 1064, 2213, 3362, len(stream)]
    pcs = handshake_pieces([(470 + i, stream[a:b]) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))])
    assert [[(k.kind, k.type) for k in p] for p in pcs] == [
        [("whole", 8), ("first", 11)], [("middle", 11)], [("middle", 11)], [("last", 11), ("whole", 15), ("whole", 20)]]
    last = pcs[3][0]
    assert last.body == cert[4:] and sum(m for _p, m in last.fragments) == len(cert)
    assert last.fragments[0] == (470, 1064 - len(ee)) and [p for p, _m in last.fragments] == [470, 471, 472, 473]


def test_a_header_cut_between_deliveries():
    m = _msg(1, 10) + _msg(2, 5)
    pcs = handshake_pieces([(1, m[:2]), (2, m[2:7]), (3, m[7:])])
    assert [[(k.kind, k.type) for k in p] for p in pcs] == [[("first", 1)], [("middle", 1)], [("last", 1), ("whole", 2)]]
    assert pcs[2][0].body == m[4:14]


def test_a_message_over_the_budget_stops_the_stream():
    big = bytes([11]) + (HANDSHAKE_MESSAGE_MAX + 1).to_bytes(3, "big") + bytes(100)
    pcs = handshake_pieces([(1, big), (2, bytes(5000)), (3, _msg(20, 32))])
    assert [[(k.kind, k.type) for k in p] for p in pcs] == [[("first", 11)], [], []]


@pytest.mark.parametrize("seed", range(40))
def test_hostile_streams_never_raise(seed):
    """Random cuts, duplicates and reorderings of random bytes: deliveries cover each byte once,
    in order, and the pieces of each delivery tile it."""
    import random

    rnd = random.Random(seed)
    s = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 3000)))
    cuts = sorted({0, len(s), *(rnd.randrange(len(s)) for _ in range(rnd.randrange(0, 12)))})
    frames = [(rnd.randrange(1, 5), a, s[a:b]) for a, b in zip(cuts, cuts[1:])]
    rnd.shuffle(frames)
    frames += [frames[rnd.randrange(len(frames))] for _ in range(rnd.randrange(0, 3))]
    d = crypto_deliveries(frames)
    handed = [x for x in d if x is not None]
    assert b"".join(x.data for x in handed) == s[: sum(len(x.data) for x in handed)]
    pcs = handshake_pieces([(1, x.data) for x in handed])
    for x, p in zip(handed, pcs):
        assert sum(k.size for k in p) <= len(x.data)
        assert all(k.start + k.size <= len(x.data) for k in p)


# ------------------------------------------------------------------ crafted (scripts/hostile/quic_inputs.py)

def _hostile():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "hostile"))
    import quic_inputs

    return quic_inputs


def _write(tmp_path, built) -> tuple[str, str]:
    pcap, keys = built
    (tmp_path / "c.pcap").write_bytes(pcap)
    (tmp_path / "c.keys").write_text(keys)
    return str(tmp_path / "c.pcap"), str(tmp_path / "c.keys")


def test_a_helloretryrequest_cut_over_two_packets_is_tsharks(tmp_path):
    """Reassembled, it is named as tshark names it: the record 'Hello Retry Request', the
    fragment 'Server Hello (last fragment)' (review of session 36: was 'Server Hello')."""
    path, keys = _write(tmp_path, _hostile().split_server_hello(30, hrr=True))
    want = _tshark(path, keys)
    an = analyze(path, keylogs=[keys])
    src = PacketSource(path)
    ours = _ours(an, src, 3)
    assert [x for x in ours[0] if x.startswith(MUST)][:2] == [x for x in want[3][0] if x.startswith(MUST)][:2] == [
        "TLSv1.3 Record Layer: Handshake Protocol: Hello Retry Request", "Handshake Protocol: Server Hello (last fragment)"]
    pdml.all_there((x for x in want[3][0] if x.startswith(MUST)), (x for x in ours[0] if x.startswith(MUST)), "packet 3")


def test_scattered_one_byte_frames_are_held_within_bounds(tmp_path):
    """3,000 one-byte CRYPTO frames at shuffled offsets, offset 0 never sent: every frame held,
    nothing handed on — no TLS line, as tshark — and the frames a tree reassembles are bounded
    (``CRYPTO_HOLD_FRAMES``; review of session 36: the tree of the last packet took 70 s, the
    held frames sorted again for each one)."""
    from wirefall.analyzer.protocols.quic import CRYPTO_HOLD_FRAMES

    path, keys = _write(tmp_path, _hostile().crypto_scatter(20, 150))
    an = analyze(path, keylogs=[keys])
    src = PacketSource(path)
    ours = _ours(an, src, 20)
    assert len(ours) == 150 and not any(x.startswith(MUST) for o in ours for x in o)
    frames = [(1, 1 + i, b"\x01") for i in range(CRYPTO_HOLD_FRAMES + 10)]
    d = crypto_deliveries(frames + [(2, 0, b"\x01")])
    assert all(x is None for x in d)  # (past the bound the stream hands on nothing more, even once the gap fills)
    assert crypto_deliveries(frames[:CRYPTO_HOLD_FRAMES - 1] + [(2, 0, b"\x01")])[-1].data == b"\x01" * CRYPTO_HOLD_FRAMES


def test_frames_listed_as_counts_keep_the_crypto_frames_bytes(tmp_path):
    """Past the budget quic_frames_listed a datagram's PADDING and PING frames are one Frame
    each (with a count): the CRYPTO frames after them still read their own bytes (review of
    session 36: the frame's position then named another frame's bytes, and amazon's
    ClientHellos were lost)."""
    path, keys = capture_and_keys(*CAPTURES["page-h3"], tmp_path)
    src = PacketSource(path)
    full = analyze(path, keylogs=[keys])
    counted = analyze(path, keylogs=[keys], limits={"quic_frames_listed": 0})
    assert any((f.fields or {}).get("count", 1) > 1 for f in counted.frames if f.packet == 2)  # (the budget did count)
    assert _ours(full, src, 2) == [o for o in _ours(counted, src, 2) if o[0].startswith("Frame Type: CRYPTO")]
    assert any("Reassembled QUIC CRYPTO Data Fragments" in x for o in _ours(counted, src, 2) for x in o)
