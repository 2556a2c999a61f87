"""HTTP/3 responses the capture ends inside: their body sizes count only the DATA payload in
the capture, are marked ``"lower_bound"`` with HTTP/2's error text, end at the last byte that
came, and each frame the capture ends inside is counted in ``completeness.cut_short`` — as
HTTP/2's are (docs/JSON.md, ``sources`` and ``cut_short``).

The outside truth: tshark's decryption of each request stream's STREAM frames (offset, bytes,
FIN, packet; PDML), reassembled here in capture order as a receiver does (the bytes in order
from offset 0, and the packet that last extended them), and framed by HTTP/3's two varints
(RFC 9114 §7.1: type, length; DATA is type 0): the DATA payload bytes in the capture, whether
the stream's last frame is cut, and whether its FIN came.  Captures: page-h3 cut at packet
150 by ``editcap -r`` (four responses, hero.jpg's among them, in flight), the bundled
quic/aioquic-h3-cut.pcap (125 responses in flight), and the whole page-h3 capture (every
stream ended: unchanged, complete)."""
from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool

from wirefall.analyzer import completeness
from wirefall.analyzer.pipeline import analyze
from wirefall.dissectors.http3 import Http3Dissector

PAGE = SAMPLES / "page" / "page-h3.pcapng"
PAGE_KEYS = SAMPLES / "page" / "page-h3.keys"
AIO_CUT = SAMPLES / "quic" / "aioquic-h3-cut.pcap"
AIO_CUT_KEYS = SAMPLES / "quic" / "aioquic-h3-cut.keys"
INCOMPLETE = "response incomplete at the end of the capture"


def _varint(b: bytes, p: int) -> tuple[int, int] | None:
    if p >= len(b):
        return None
    n = 1 << (b[p] >> 6)
    if p + n > len(b):
        return None
    v = b[p] & 0x3F
    for i in range(1, n):
        v = v << 8 | b[p + i]
    return v, p + n


def _frame(stream: bytes) -> tuple[int, bool]:
    """(DATA payload bytes in ``stream``, whether it ends inside a frame or frame header)."""
    p = total = 0
    while p < len(stream):
        t = _varint(stream, p)
        ln = _varint(stream, t[1]) if t is not None else None
        if ln is None:
            return total, True
        have = min(ln[0], len(stream) - ln[1])
        if t[0] == 0:
            total += have
        p = ln[1] + have
        if have < ln[0]:
            return total, True
    return total, False


def _oracle(cap: Path, keys: Path) -> dict[tuple[int, int], dict]:
    """(direction, request stream id) -> {"bytes", "data", "cut", "fin", "last"} from tshark:
    direction 1 is the server's (the source port of the capture's first packet's destination)."""
    server_port = run_tool("tshark", "-r", str(cap), "-c", "1", "-T", "fields", "-e", "udp.dstport").split()[0]
    xml = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-T", "pdml", "-Y", "quic.stream.stream_id")
    chunks: dict[tuple[int, int], list[tuple[int, int, bytes, bool]]] = {}
    for pkt in ET.fromstring(xml).iter("packet"):
        top = {f.get("name"): f.get("show") for f in pkt.iter("field") if f.get("name") in ("frame.number", "udp.srcport")}
        num, d = int(top["frame.number"] or 0), int(top["udp.srcport"] == server_port)
        for fr in pkt.iter("field"):
            if fr.get("name") != "quic.frame":
                continue
            fd = {c.get("name"): c for c in fr.iter("field")}
            if "quic.stream.stream_id" not in fd:
                continue
            sid = int(fd["quic.stream.stream_id"].get("show") or 0)
            if sid & 3:  # (request streams only: client-initiated bidirectional)
                continue
            off = int(fd["quic.stream.offset"].get("show") or 0) if "quic.stream.offset" in fd else 0
            raw = fd.get("quic.stream_data")
            data = bytes.fromhex(raw.get("value") or "") if raw is not None else b""
            fin = "quic.stream.fin" in fd and fd["quic.stream.fin"].get("show") in ("1", "True")
            chunks.setdefault((d, sid), []).append((num, off, data, fin))
    out = {}
    for key, cs in chunks.items():
        buf, pending, last, final = bytearray(), {}, None, None
        for num, off, data, fin in sorted(cs, key=lambda c: c[0]):  # in capture order, as a receiver reads them
            if fin:
                final = off + len(data)
            pending[off] = max(pending.get(off, b""), data, key=len)
            grew = True
            while grew:
                grew = False
                for o in sorted(pending):
                    dat = pending[o]
                    if o <= len(buf) < o + len(dat):
                        buf[o:] = dat
                        grew, last = True, num
                    if o + len(dat) <= len(buf):
                        del pending[o]
        data_bytes, cut = _frame(bytes(buf))
        out[key] = {"bytes": len(buf), "data": data_bytes, "cut": cut, "last": last,
                    "fin": final is not None and len(buf) >= final}
    return out


@pytest.fixture(scope="module")
def page_cut(tmp_path_factory) -> tuple[Path, Path]:
    need_tool("editcap")
    cut = tmp_path_factory.mktemp("h3cut") / "page-h3-150.pcapng"
    subprocess.run(["editcap", "-r", str(PAGE), str(cut), "1-150"], check=True, capture_output=True)
    return cut, PAGE_KEYS


CASES = {"page_cut": None, "aioquic_cut": (AIO_CUT, AIO_CUT_KEYS)}


@pytest.fixture(scope="module", params=sorted(CASES))
def cut_case(request, page_cut):
    cap, keys = page_cut if request.param == "page_cut" else CASES[request.param]
    need_tool("tshark")
    return request.param, analyze(str(cap), keylogs=[str(keys)]), _oracle(cap, keys)


def _responses(an) -> dict[int, object]:
    (conn,) = an.connections
    return {e.stream_id: e for e in an.exchanges if e.connection == conn.id and not e.pushed}


def test_cut_body_sizes_are_the_bytes_in_the_capture(cut_case):
    name, an, oracle = cut_case
    ex = _responses(an)
    server = {sid: o for (d, sid), o in oracle.items() if d == 1}
    assert server and set(server) <= set(ex)
    unfinished = {sid for sid, o in server.items() if not o["fin"] and o["bytes"]}
    assert unfinished, name  # (the capture ends inside responses)
    for sid, o in server.items():
        e = ex[sid]
        # never a declared length the capture lacks: exactly the DATA payload that came
        assert e.response_body_bytes == o["data"] <= o["bytes"], (name, sid)
        if sid in unfinished:
            assert (e.sources or {}).get("response_body_bytes") == "lower_bound", (name, sid)
            assert e.error == INCOMPLETE, (name, sid)
            assert e.response_end_packet == o["last"], (name, sid)  # the last byte that came
            assert e.response_body_decoded_bytes is None or e.response_body_decoded_bytes <= e.response_body_bytes or \
                (e.sources or {}).get("response_body_decoded_bytes") == "lower_bound"
        else:
            assert not (e.sources or {}).get("response_body_bytes"), (name, sid)
            assert e.error is None, (name, sid)
    # "lower_bound" on exactly the streams the capture ends without their FIN
    low = {sid for sid, e in ex.items() if (e.sources or {}).get("response_body_bytes") == "lower_bound"}
    assert low == unfinished, name


def test_cut_frames_counted_in_completeness(cut_case):
    name, an, oracle = cut_case
    c = completeness.compute(an)
    cut_frames = sum(1 for o in oracle.values() if o["cut"] and not o["fin"])
    unfinished = sum(1 for (d, _), o in oracle.items() if d == 1 and not o["fin"] and o["bytes"])
    assert cut_frames > 0
    assert c.cut_short == cut_frames, name
    assert not c.complete
    assert c.unknown_body == unfinished
    head = completeness.headline(an)
    assert head.startswith("Incomplete: ") and f"{cut_frames} frame" in head and "cut by the capture's end" in head
    assert f"{unfinished} body size" in head and "only a lower bound" in head


def test_numbers_of_the_reviewed_cases(cut_case):
    """The reviewer's cases, by number (tshark's, as the oracle above computes them)."""
    name, an, oracle = cut_case
    ex = _responses(an)
    if name == "page_cut":
        hero = ex[16]  # /img/hero.jpg: 97342 bytes declared, 29325 of them in the first 150 packets
        assert hero.url.endswith("/img/hero.jpg")
        assert oracle[(1, 16)]["data"] == hero.response_body_bytes == 29325
        assert hero.response_end_packet == 146
        assert {sid for sid, e in ex.items() if e.sources} == {16, 24, 28, 32}
        assert completeness.compute(an).cut_short == 4
    else:
        e = ex[224]  # the server sent 1161 bytes of stream 224, no FIN: 1129 of DATA payload
        assert oracle[(1, 224)]["bytes"] == 1161 and not oracle[(1, 224)]["fin"]
        assert e.response_body_bytes == 1129 and e.response_end_packet == 465
        assert completeness.compute(an).cut_short == 125


def test_whole_page_h3_unchanged():
    """Every stream of the whole capture ends with its FIN: complete, the same body sizes as
    before (the DATA payloads tshark's bytes hold), no bound, no error, nothing cut."""
    need_tool("tshark")
    an = analyze(str(PAGE), keylogs=[str(PAGE_KEYS)])
    oracle = _oracle(PAGE, PAGE_KEYS)
    ex = _responses(an)
    sizes = {sid: e.response_body_bytes for sid, e in ex.items()}
    assert sizes == {0: 1993, 4: 24000, 8: 6000, 12: 3931, 16: 97342, 20: 8201, 24: 38298, 28: 89869, 32: 38312,
                     36: 29843, 40: 7858, 44: 1512, 48: 1478}
    for (d, sid), o in oracle.items():
        assert o["fin"] and not o["cut"], (d, sid)
        if d == 1:
            assert sizes[sid] == o["data"]
            assert ex[sid].response_end_packet == o["last"]
    assert all(e.sources is None and e.error is None for e in ex.values())
    c = completeness.compute(an)
    assert c.complete and c.cut_short == 0 and c.unknown_body == 0
    assert completeness.headline(an).startswith("Complete: ")


def test_dissector_reports_what_the_capture_ends_inside():
    """Http3Dissector alone: a DATA frame cut by the capture's end carries the payload bytes
    that never came (``missing``), a frame a FIN cuts too, and ``ends_inside`` lists the frames
    and frame headers the capture ends inside (not those of a stream its FIN or a reset ended)."""
    h3 = Http3Dissector()
    # stream 0: DATA of 100 bytes, 40 of them in the capture (two chunks, packets 5 and 6)
    assert h3.stream_data(1, 0, b"\x00\x40\x64" + b"a" * 10, 5) == []
    assert h3.stream_data(1, 0, b"a" * 30, 6) == []
    # stream 4: a complete DATA frame, then the first byte of a two-byte frame header (packet 8)
    (done,) = h3.stream_data(1, 4, b"\x00\x03abc", 7)
    assert done.type == "DATA" and done.missing == 0 and done.length == 3
    assert h3.stream_data(1, 4, b"\x00", 8) == []
    # stream 8: its FIN ends a DATA frame of 10 bytes after 4 of them
    (fin_cut,) = h3.stream_data(1, 8, b"\x00\x0aabcd", 9, fin=True)
    assert fin_cut.missing == 6 and fin_cut.length - fin_cut.missing == 4
    # stream 12: reset inside a DATA frame
    h3.stream_data(1, 12, b"\x00\x0aab", 10)
    h3.stream_reset(1, 12)
    (cut,) = [f for f in h3.finish() if f.type == "DATA"]
    assert cut.stream_id == 0 and cut.length == 100 and cut.missing == 60 and cut.packet == 6
    assert cut.error == "capture ends 60 bytes before the end of the DATA frame"
    assert sorted(h3.ends_inside) == [(1, 0, "DATA", 100, 40, 6), (1, 4, None, 1, 0, 8)]
