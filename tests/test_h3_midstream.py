"""Request streams the capture joined mid-stream (issue 20, reopened): a body size is never a
number that includes frame headers.

HTTP/3: aioquic's client and server (scripts/quic/h3_midstream.py) send responses as DATA
frames of chosen sizes, with a reserved frame and trailers; the capture begins inside them.
The truth is aioquic's: the frames as the server sent them and the first stream offset of each
stream in the captured datagrams (what aioquic's client received), never wirefall's encoder.
HTTP/2: a real Chromium capture (sample_captures/page/page-h2) cut with editcap inside a
response, its DATA frames from tshark on the whole capture.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path


from wirefall.analyzer import completeness
from wirefall.analyzer.pipeline import analyze
from wirefall.dissectors.http3 import resync_request_stream

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "quic"))


def _run(tmp_path, **kw):
    from h3_midstream import run

    cap = run(**kw)
    (tmp_path / "m.pcap").write_bytes(cap.pcap)
    (tmp_path / "m.keys").write_text(cap.keys)
    return cap, analyze(str(tmp_path / "m.pcap"), keylogs=[str(tmp_path / "m.keys")])


def _framed(st, start):
    """DATA payload bytes of the frames (as aioquic sent them) from stream offset ``start``."""
    return sum(n for off, kind, _h, n in st.frames if kind == "DATA" and off >= start)


def test_http3_body_is_the_data_payload_from_a_true_frame_boundary(tmp_path):
    bodies = [[3000, 3000, 3000, 1000], [2500, 1200, 800, 400, 300], [500] * 8, [9000, 4000, 20, 5]]
    cap, an = _run(tmp_path, bodies=bodies, cut=4, grease=True, trailers=True)
    rows = {e.stream_id: e for e in an.exchanges}
    mid = {sid: st for sid, st in cap.streams.items() if st.first}
    assert len(mid) >= 3  # the cut falls inside several responses
    for sid, st in mid.items():
        e = rows[sid]
        body = sum(n for _o, kind, _h, n in st.frames if kind == "DATA")
        starts = [off for off, _k, _h, _n in st.frames]
        assert st.first not in starts  # cut inside a frame (the test's premise)
        # the number is the DATA payload from a true frame boundary after the cut: never a
        # header byte, never a byte of the frame the capture cut
        possible = {_framed(st, b) for b in starts if b >= st.first} | {0}
        assert e.response_body_bytes in possible, (sid, e.response_body_bytes, possible)
        assert e.response_body_bytes < body
        assert e.sources["response_body_bytes"] == "lower_bound"
        # the rule: the third boundary after the cut (the first candidate's first two frames
        # are not trusted), when the stream still holds two frames after it
        after = [b for b in starts if b > st.first]
        if len(after) >= 4:
            assert e.response_body_bytes == _framed(st, after[2]), (sid, after)
    # before: the bytes of the captured stream, frame headers included, were the body
    s0 = cap.streams[0]
    captured = s0.frames[-1][0] + s0.frames[-1][2] + s0.frames[-1][3] - s0.first
    assert rows[0].response_body_bytes < captured
    c = completeness.compute(an)
    assert c.unknown_body == len(mid)
    assert all("body" in c.unknown_exchanges[rows[sid].id] for sid in mid)
    assert completeness.to_dict(c)["unknown"]["body"] == len(mid)


def test_http3_stream_without_its_fin_is_not_framed():
    """aioquic-encoded DATA frames fed from the middle, the FIN never seen (the capture ends,
    or more than the hold before it): no frame, the bytes said unframed; with the FIN: framed."""
    from aioquic.h3.connection import encode_frame

    from wirefall.dissectors.http3 import Http3Dissector

    rnd = random.Random(3)
    s = b"".join(encode_frame(0, rnd.randbytes(n)) for n in (5000, 3000, 2000, 1000, 700))
    cut = 1234
    for fin in (False, True):
        h = Http3Dissector(lenient=True)
        out = []
        for i in range(cut, len(s), 1200):
            chunk = s[i:i + 1200]
            out += h.stream_data(1, 0, chunk, 10 + i // 1200, fin and i + 1200 >= len(s), offset=i)
        out += h.finish()
        data = [f for f in out if f.type == "DATA"]
        at, skipped, why = h.mid_sync[(1, 0)]
        if not fin:
            assert not data and at is None and skipped == len(s) - cut and "end is not in the capture" in why
        else:
            assert at == 5003 + 3003 + 2003 and [f.length for f in data] == [1000, 700]
    assert h.lenient_held_bytes == 0


def test_resync_rule_on_aioquic_made_frames_cut_everywhere():
    """Frames encoded by aioquic (encode_frame), random payloads, cut at every point of a
    random sample: the boundary found is a true one, or none."""
    from aioquic.h3.connection import encode_frame

    rnd = random.Random(7)
    wrong = found = 0
    for _ in range(3000):
        frames = [encode_frame(1, rnd.randbytes(rnd.randrange(5, 60)))]
        frames += [encode_frame(0, rnd.randbytes(rnd.randrange(1, 6000))) for _ in range(rnd.randrange(1, 7))]
        if rnd.random() < 0.3:
            frames.insert(2, encode_frame(rnd.choice([0x21, 0x21 + 0x1F * 10]), rnd.randbytes(rnd.randrange(0, 20))))
        s = b"".join(frames)
        bounds, o = set(), 0
        for f in frames:
            bounds.add(o)
            o += len(f)
        cut = rnd.randrange(1, len(s))
        r = resync_request_stream(s[cut:], True)
        if r is not None and r < len(s) - cut:
            found += 1
            wrong += (r + cut) not in bounds
    assert found > 300 and wrong == 0


def test_resync_is_bounded_on_bytes_that_read_as_headers_everywhere():
    from wirefall.dissectors.budget import Budget

    assert resync_request_stream(bytes(1 << 20), True) is None  # zeros: a header at every byte
    b = Budget("h3_resync", 1000)
    assert resync_request_stream(os.urandom(1 << 20), True, b) is None and b.hit


# -------------------------------------------------------------------------------- HTTP/2


def _tshark_data_frames(path, keys):
    out = subprocess.run(["tshark", "-r", str(path), "-o", f"tls.keylog_file:{keys}", "-Y", "http2.type == 0",
                          "-T", "json", "-e", "frame.number", "-e", "http2.streamid", "-e", "http2.length",
                          "-e", "http2.type", "-e", "tcp.stream"], capture_output=True, text=True, timeout=120, check=True)
    frames = []
    for p in json.loads(out.stdout or "[]"):
        f = p["_source"]["layers"]
        for sid, ln, t in zip(f["http2.streamid"], f["http2.length"], f["http2.type"]):
            if t == "0":
                frames.append((int(f["frame.number"][0]), int(f["tcp.stream"][0]), int(sid), int(ln)))
    return frames


def test_http2_data_on_a_connection_joined_mid_way_is_a_lower_bound(tmp_path):
    src = ROOT / "sample_captures" / "page" / "page-h2.pcapng"
    keys = ROOT / "sample_captures" / "page" / "page-h2.keys"
    frames = _tshark_data_frames(src, keys)
    # the largest response; cut the capture one packet after its first DATA frame
    by = {}
    for fn, ts, sid, ln in frames:
        by.setdefault((ts, sid), []).append((fn, ln))
    (ts, sid), fl = max(by.items(), key=lambda kv: sum(ln for _f, ln in kv[1]))
    cut = fl[0][0] + 1
    cut_path = tmp_path / "cut.pcapng"
    subprocess.run(["editcap", "-r", str(src), str(cut_path), f"{cut}-1000000"], check=True, timeout=60)
    an = analyze(str(cut_path), keylogs=[str(keys)])
    rows = [e for e in an.exchanges if e.stream_id == sid and e.sources]
    assert rows, "the cut response has its row"
    e = rows[0]
    assert e.sources["response_body_bytes"] == "lower_bound"
    # DATA payloads of a suffix of the frames tshark shows after the cut: never more, never a header
    after = [ln for fn, ln in fl if fn >= cut]
    suffixes = {sum(after[i:]) for i in range(len(after) + 1)}
    assert e.response_body_bytes in suffixes
    assert e.response_body_bytes < sum(ln for _f, ln in fl)
    assert completeness.compute(an).unknown_body >= 1
