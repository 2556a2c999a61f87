"""HTTP/3 on a QUIC connection the capture joined mid-way, and QPACK encoder-stream bytes.

sample_captures/quic/page-h3-late.pcapng (scripts/quic/late_join_capture.py): one headless
Chromium loads the lab page over HTTP/3 from aioquic, then tcpdump starts, then the browser
loads the page again (``/?late=1``) and reloads it on the same QUIC connection.  The capture has
no handshake (no ALPN), the unidirectional streams are seen mid-stream, and most QPACK entries
the requests refer to were inserted before the capture.  Outside truth: Chromium's own NetLog
of the load (every request's stream id, method, headers and status), and for the byte counts
tshark on sample_captures/quic/page-h3.pcapng (whose handshake tshark sees).
"""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SAMPLES

from wirefall.analyzer.pipeline import analyze

QUIC = SAMPLES / "quic"
LATE = QUIC / "page-h3-late.pcapng"
LATE_KEYS = QUIC / "page-h3-late.keys"
LATE_NETLOG = QUIC / "page-h3-late.netlog.json.gz"
UNKNOWN = "<unknown>"


def _netlog_streams(path: Path) -> tuple[dict, float]:
    """{stream id: {"request": [headers] | None, "response": [headers] | None, "sent": ms,
    "decoded": ms}} from the QUIC session's HTTP3_HEADERS_SENT / HTTP3_HEADERS_DECODED events
    (epoch milliseconds), and the NetLog's timeTickOffset."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    names = {v: k for k, v in c["logEventTypes"].items()}
    off = float(c["timeTickOffset"])
    out: dict[int, dict] = {}
    for e in d["events"]:
        t = names.get(e["type"])
        if t not in ("HTTP3_HEADERS_SENT", "HTTP3_HEADERS_DECODED"):
            continue
        p = e["params"]
        r = out.setdefault(int(p["stream_id"]), {"request": None, "response": None, "sent": None, "decoded": None})
        hs = [h.split(": ", 1) if not h.startswith(":") else [":" + h[1:].split(": ", 1)[0], h[1:].split(": ", 1)[1]]
              for h in p["headers"]]
        if t == "HTTP3_HEADERS_SENT":
            r["request"], r["sent"] = hs, float(e["time"]) + off
        elif r["response"] is None:
            r["response"], r["decoded"] = hs, float(e["time"]) + off
    return out, off


@pytest.fixture(scope="module")
def late():
    if not LATE.exists():
        pytest.skip("sample_captures/quic/page-h3-late.pcapng absent")
    return analyze(str(LATE), keylogs=[str(LATE_KEYS)])


def _window(an) -> tuple[float, float]:
    ts = an.index.ts
    return ts[0] * 1000.0, ts[len(ts) - 1] * 1000.0


def test_late_join_is_http3_inferred_with_a_note(late):
    (conn,) = late.connections
    assert conn.connect_start is None  # no handshake in the capture
    assert conn.quic.alpn is None and conn.quic.alpn_inferred is True
    assert conn.protocol == "h3"
    assert any("HTTP/3 recognised by the shape of its streams" in n for n in conn.notes)
    st = late.quic_stats[conn.id]
    # the unidirectional streams, seen mid-stream, typed by their bytes: Chromium opens control 2,
    # QPACK decoder 6, encoder 10; aioquic control 3, encoder 7, decoder 11 (both NetLog and RFC order)
    types = st["h3_stream_types"]
    assert types["0:2"] == "control" and types["0:6"] == "qpack_decoder" and types["0:10"] == "qpack_encoder"
    assert types["1:7"] == "qpack_encoder" and types["1:11"] == "qpack_decoder"
    assert set(st["h3_streams_inferred"]) == {"0:2", "0:6", "0:10", "1:7", "1:11"}
    from wirefall.analyzer.jsonout import connection_dict
    assert connection_dict(conn)["quic"]["alpn_inferred"] is True


def test_every_netlog_request_in_the_capture_window_has_its_row(late):
    """Request by request against Chromium's NetLog: each stream whose request was sent or whose
    response arrived within the capture has a row; method and status match; the path is the
    NetLog's exactly where the capture holds it (a literal, or an entry the encoder stream
    inserted during the capture) and <unknown> otherwise."""
    streams, _ = _netlog_streams(LATE_NETLOG)
    lo, hi = _window(late)
    inside = {sid: r for sid, r in streams.items()
              if any(t is not None and lo - 1 <= t <= hi + 1 for t in (r["sent"], r["decoded"]))}
    assert len(inside) == 26 and len(streams) == 39  # 13 requests before the capture, 2 x 13 in it
    rows = {e.stream_id: e for e in late.exchanges}
    assert set(rows) == set(inside)
    exact_paths = 0
    for sid, r in sorted(inside.items()):
        e = rows[sid]
        want = dict(r["request"])
        assert e.method == want[":method"], sid
        assert e.status == int(dict(r["response"])[":status"]), sid
        got = dict(e.request_headers)
        if ":path" in got:
            assert got[":path"] == want[":path"], sid
            exact_paths += 1
        else:
            assert any(k == UNKNOWN for k, _ in e.request_headers), sid
        if ":authority" in got:
            assert e.url == f"https://{want[':authority']}{want[':path']}"
        # every header shown is the NetLog's (same name, same value), unknown ones apart
        sent = [tuple(h) for h in r["request"]]
        assert [h for h in e.request_headers if h[0] != UNKNOWN] == [h for h in sent if h in set(e.request_headers)], sid
        got_resp = [h for h in e.response_headers if h[0] != UNKNOWN]
        assert all(tuple(h) in {tuple(x) for x in r["response"]} for h in got_resp), sid
    # the document's path, inserted by the encoder stream during the capture, is exact on both loads
    assert exact_paths == 2 and all(dict(rows[s].request_headers).get(":path") == "/?late=1" for s in (52, 104))


def test_the_unknown_paths_are_not_in_the_captured_bytes(late):
    """Where a row's path is <unknown>, the capture really lacks it: neither its literal nor its
    Huffman encoding is in the client's decrypted stream bytes (request and encoder streams)."""
    from hpack.huffman import HuffmanEncoder
    from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
    import wirefall.analyzer.sessions.quic as sq

    huff = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
    client = bytearray()
    orig = sq.QuicSession._events

    def spy(self, events):
        for ev in events:
            if ev[0] == "stream" and ev[1] == 0:
                client.extend(ev[4])
        return orig(self, events)

    sq.QuicSession._events = spy
    try:
        analyze(str(LATE), keylogs=[str(LATE_KEYS)])
    finally:
        sq.QuicSession._events = orig
    streams, _ = _netlog_streams(LATE_NETLOG)
    unknown = [e for e in late.exchanges if ":path" not in dict(e.request_headers)]
    assert len(unknown) == 24
    for e in unknown:
        path = dict(streams[e.stream_id]["request"])[":path"].encode()
        assert path not in client and huff.encode(path) not in client, e.stream_id
    assert huff.encode(b"/?late=1") in client  # (the one path the capture does hold)


def test_completeness_counts_the_unknown_fields_and_the_html_marker_is_the_document(late):
    from wirefall.analyzer import completeness as C
    from wirefall.analyzer import waterfall

    c = C.compute(late)
    assert c.joined_midway == [0] and c.requests_on_joined == 26
    assert c.requests_unknown == 26 and c.unknown_url == 24 and c.unknown_headers == 26
    assert c.unknown_method == 0 and c.unknown_status == 0
    wf = waterfall.build(late)
    html = wf.milestone("html_first_byte")
    doc = next(e for e in late.exchanges if e.stream_id == 52)  # GET /?late=1, the document
    assert html.packet == doc.response_start_packet


def test_response_sizes_match_the_netlog(late):
    """The response bodies (DATA frames) equal the content-length the NetLog shows."""
    streams, _ = _netlog_streams(LATE_NETLOG)
    for e in late.exchanges:
        want = int(dict(streams[e.stream_id]["response"])["content-length"])
        assert e.response_body_bytes == want, e.stream_id
        if "content-length" in dict(e.response_headers):
            assert int(dict(e.response_headers)["content-length"]) == want


def test_cut_of_a_full_capture_matches_the_full_decode(tmp_path):
    """The page-h3 sample cut after its handshake (editcap): every request seen in the cut is
    the full capture's, method, status and sizes equal, header values equal wherever known."""
    src = QUIC / "page-h3.pcapng"
    keys = QUIC / "page-h3.keys"
    if shutil.which("editcap") is None:
        pytest.skip("editcap needed")
    full = {e.stream_id: e for e in analyze(str(src), keylogs=[str(keys)]).exchanges}
    for first in (60, 120):
        cut = tmp_path / f"cut{first}.pcapng"
        subprocess.run(["editcap", "-r", str(src), str(cut), f"{first}-999999"], check=True)
        an = analyze(str(cut), keylogs=[str(keys)])
        (conn,) = [c for c in an.connections if c.transport == "udp"]
        assert conn.protocol == "h3" and conn.quic.alpn_inferred
        rows = [e for e in an.exchanges]
        assert rows
        for e in rows:
            f = full[e.stream_id]
            if e.status is not None:
                assert e.status == f.status
            if e.method is not None:
                assert e.method == f.method
            for mine, truth in ((e.request_headers, f.request_headers), (e.response_headers, f.response_headers)):
                known = [h for h in mine if h[0] != UNKNOWN]
                assert all(h in truth for h in known), (first, e.stream_id, known, truth)
        # streams that begin inside the cut have their response body whole
        for e in rows:
            if e.response_headers and e.error is None:
                assert e.response_body_bytes == full[e.stream_id].response_body_bytes


# ----------------------------------------------------------------- QPACK encoder-stream bytes

def _tshark_stream_bytes(cap: Path, keys: Path, stream: int) -> int:
    out = subprocess.run(["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-q", "-z", f"follow,quic,raw,0,{stream}"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    hexs = "".join(ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith(("=", "Follow", "Filter", "Node")))
    return len(hexs) // 2


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark needed")
def test_qpack_encoder_bytes_equal_tshark_and_are_charged_to_the_requests():
    cap, keys = QUIC / "page-h3.pcapng", QUIC / "page-h3.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    (conn,) = [c for c in an.connections if c.protocol == "h3"]
    st = an.quic_stats[conn.id]
    types = st["h3_stream_types"]
    enc = {d: int(k.split(":")[1]) for k, v in types.items() if v == "qpack_encoder" for d in (int(k.split(":")[0]),)}
    truth = [_tshark_stream_bytes(cap, keys, enc[d]) for d in (0, 1)]
    assert truth == [749, 23]  # Chromium's encoder stream 10, aioquic's 7 (type byte included)
    assert st["qpack_encoder_bytes"] == truth
    # every insertion is referenced by some block here: all bytes are charged, once
    assert st["qpack_encoder_bytes_charged"] == truth
    ex = an.exchanges
    assert sum(e.request_qpack_encoder_bytes for e in ex) == truth[0]
    assert sum(e.response_qpack_encoder_bytes for e in ex) == truth[1]
    # the first request carries the insertions it needs (the type byte and the table built for it)
    first = min(ex, key=lambda e: e.stream_id)
    assert first.request_qpack_encoder_bytes > 0
    # stats: header compression counts them with the HEADERS frames
    from wirefall.analyzer import stats

    s = stats.compute(an)
    stats.to_dict(s) if hasattr(stats, "to_dict") else None
    wire = sum(e.request_header_bytes_wire for e in ex)
    decoded = sum(e.request_header_bytes_decoded for e in ex)
    req = s.protocols["h3"].req_headers if hasattr(s, "protocols") else None
    assert req is not None and req[0] == wire + truth[0] and req[1] == decoded
    assert round(1 - req[0] / req[1], 3) == round(1 - (237 + 749) / 6606, 3)


# ----------------------------------------------------------------- lenient QPACK, against pylsqpack

def _qpack_run(cap: int, nreq: int, cut: int, seed: int, announce: bool) -> tuple[int, int, int]:
    """pylsqpack's encoder and decoder (kept in step, decoder acknowledgements fed back) encode
    ``nreq`` header lists; the lenient decoder sees only what follows request ``cut`` (the
    capture joined there), and the capacity only if ``announce``.  (wrong, unknown, known)
    fields against what pylsqpack's decoder, which saw everything, decoded."""
    import random

    from pylsqpack import Decoder, Encoder
    from wirefall.dissectors.qpack_lenient import Blocked, LenientQpack

    rnd = random.Random(seed)
    enc, dec = Encoder(), Decoder(cap, 16)
    dec.feed_encoder(enc.apply_settings(max_table_capacity=cap, blocked_streams=16))
    lq = LenientQpack()
    if announce:
        lq.max_capacity = cap
    wrong = unknown = known = 0
    for i in range(nreq):
        hdrs = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"example.com"),
                (b":path", f"/r/{rnd.randrange(40)}".encode()), (b"x-id", f"v{rnd.randrange(30)}".encode()),
                (b"user-agent", b"sim/1.0")]
        e, block = enc.encode(4 * i, hdrs)
        dec.feed_encoder(e)
        ctrl, truth = dec.feed_header(4 * i, block)
        enc.feed_decoder(ctrl)
        if i < cut:
            continue
        if e:
            lq.feed_encoder(e)
        try:
            got, _, _ = lq.decode(block)
        except Blocked:
            got, _, _ = lq.decode(block, force=True)
        assert len(got) == len(truth)
        for g, t in zip(got, truth):
            if g[0] == b"<unknown>":
                unknown += 1
            elif g != t:
                wrong += 1
            else:
                known += 1
    return wrong, unknown, known


@pytest.mark.parametrize("cap", [256, 512, 2048, 4096, 65536])
def test_lenient_qpack_never_shows_a_wrong_field(cap):
    """Joined after 3, 17 or 120 requests, with the table capacity unknown (so its Required
    Insert Count wraps at an unknown 2 x MaxEntries) or known: no field is ever shown wrong;
    with the capacity unknown nearly as many are known as with it known."""
    for seed in range(4):
        for cut in (3, 17, 120):
            w, u, k = _qpack_run(cap, 200, cut, seed, announce=False)
            wa, ua, ka = _qpack_run(cap, 200, cut, seed, announce=True)
            assert w == 0 and wa == 0, (seed, cut)
            assert u and k and k >= 0.98 * ka, (seed, cut, k, ka)


def test_lenient_qpack_on_random_bytes_fails_cleanly():
    """Garbage on the encoder stream and in header blocks: only the decoder's own errors, bounded
    output, never another exception."""
    import random

    from wirefall.dissectors.qpack_lenient import Blocked, LenientQpack, QpackError

    rnd = random.Random(7)
    for _ in range(300):
        lq = LenientQpack(max_header_list=1 << 14)
        lq.feed_encoder(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 400))))
        for _ in range(5):
            block = bytes(rnd.randrange(256) for _ in range(rnd.randrange(2, 200)))
            try:
                out, _, _ = lq.decode(block, force=rnd.random() < 0.5)
            except (QpackError, IndexError, Blocked):
                continue
            assert sum(len(k) + len(v) + 32 for k, v in out) <= 1 << 14
        assert lq.size <= 1 << 20


def test_qlog_export_decrypts_the_late_joined_connection_as_the_analysis_did(late):
    """The qlog export decodes the QUIC packets again: a connection whose handshake the capture
    missed has its keys found by trial there too (every packet its number, every frame listed,
    as the analysis lists them), not 1-RTT headers with no frames."""
    from collections import Counter

    from wirefall.analyzer import export

    q = json.loads(json.dumps(export.qlog(late)))
    events = [e for t in q["traces"] for e in t["events"] if e["name"].startswith("transport:packet_")]
    assert events and all("packet_number" in e["data"]["header"] for e in events)
    got = Counter(f["frame_type"] for e in events for f in e["data"].get("frames") or ())
    want = Counter(f.type.lower() for f in late.frames if f.protocol == "quic" and f.type in ("STREAM", "ACK"))
    assert got == want and got["stream"] > 700
