"""SPDY/2, /3, /3.1: wirefall's frames, headers and exchanges against outside truth.

- SPDY/3 and 3.1 (cleartext and TLS): every SPDY frame (packet, type, stream id, flags,
  length, associated stream id, priority, decoded headers in order) equals tshark's,
  field by field (tshark 4.0: ``-d tcp.port==P,spdy`` in cleartext,
  ``-o spdy.assemble_data_frames:FALSE``, ``-o tls.keylog_file:K``).
- SPDY/2 (tshark shows no headers): every header block equals what the spdy-transport
  client and server logged sending and receiving (sample_captures/spdy/*.jsonl, written by
  scripts/spdy/hooks.js), for every request, reply and push; tshark still checks framing.
- Requests: URL, status, priority, push parent equal the client's log; request/response
  start/end packets equal the packets where tshark shows the frames.
- Bomb: a header block inflating beyond the cap is marked, later blocks still decode.
"""
from __future__ import annotations

import json
import shutil
import zlib
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from wirefall.oracle.crosscheck import spdy_tshark_frames
from wirefall.analyzer.pipeline import analyze
from wirefall.dissectors.spdy import DICT_V2, DICT_V3, SpdyConnection

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures" / "spdy"
SPECS = ROOT.parent / "shared" / "specs"

# name -> (port, expected protocol)
CAPTURES = {
    "spdy2-plain": (18320, "spdy/2"),
    "spdy3-plain": (18330, "spdy/3"),
    "spdy3.1-plain": (18331, "spdy/3.1"),
    "spdy2-tls": (18420, "spdy/2"),
    "spdy3-tls": (18430, "spdy/3"),
    "spdy3.1-tls": (18431, "spdy/3.1"),
}
V3 = [n for n in CAPTURES if not n.startswith("spdy2")]
TYPE_NAMES = {1: "SYN_STREAM", 2: "SYN_REPLY", 3: "RST_STREAM", 4: "SETTINGS", 5: "NOOP", 6: "PING",
              7: "GOAWAY", 8: "HEADERS", 9: "WINDOW_UPDATE", 10: "CREDENTIAL"}

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _paths(name):
    pcap = SAMPLES / f"{name}.pcap"
    keys = SAMPLES / f"{name}.keys"
    return pcap, (keys if keys.exists() else None)


@cache
def wf(name, limit=None):
    pcap, keys = _paths(name)
    an = analyze(str(pcap), keylogs=[str(keys)] if keys else [], limits={"spdy_header_block": limit} if limit else None)
    return an


def wf_frames(an):
    fr = [f for f in an.frames if f.protocol.startswith("spdy/")]
    fr.sort(key=lambda f: (f.packet, f.direction, f.offset))
    return fr


@cache
def tshark(name):
    """Every SPDY frame tshark dissects: dicts in packet order (oracle.crosscheck, shared with
    ``wirefall crosscheck``)."""
    pcap, keys = _paths(name)
    port = CAPTURES[name][0]
    return spdy_tshark_frames(str(pcap), [str(keys)] if keys else None, None if keys else port)


def mine(f):
    fl = f.fields or {}
    return {
        "packet": f.packet,
        "first_packet": f.first_packet,
        "type": f.type,
        # tshark shows no stream id on SETTINGS / PING / GOAWAY
        "stream_id": f.stream_id if f.type not in ("SETTINGS", "PING", "GOAWAY", "NOOP") else None,
        "flags": f.flags,
        "length": f.length,
        "associated": fl.get("associated_stream_id"),
        "priority": fl.get("priority"),
        "headers": f.headers,
    }


def logs(name, role):
    with open(SAMPLES / f"{name}.{role}.jsonl") as fh:
        return [json.loads(line) for line in fh]


def _split_nul(headers):
    out = []
    for k, v in headers:
        out.extend((k, x) for x in v.split("\0"))
    return out


# ---------------------------------------------------------------- framing vs tshark


@needs_tshark
@pytest.mark.parametrize("name", V3)
def test_v3_frames_equal_tshark(name):
    theirs = tshark(name)
    ours = [mine(f) for f in wf_frames(wf(name))]
    assert len(theirs) > 90
    for t in theirs:  # tshark drops a header list it cannot read; wirefall must not
        if t["headers"] is None:
            t["headers"] = None if t["numheaders"] is None else []
        t.pop("numheaders")
    # headers compared separately below, with a readable diff
    assert [{k: v for k, v in d.items() if k != "headers"} for d in ours] == [{k: v for k, v in d.items() if k != "headers"} for d in theirs]
    n = 0
    for o, t in zip(ours, theirs):
        if t["headers"] is not None:
            assert o["headers"] == t["headers"], (o["packet"], o["type"], o["stream_id"])
            n += 1
    assert n >= 24  # 11 requests + 11 replies + 2 pushes


@needs_tshark
@pytest.mark.parametrize("name", V3)
def test_v3_counts_by_type_and_stream(name):
    theirs = Counter((t["type"], t["stream_id"]) for t in tshark(name))
    ours = Counter((o["type"], o["stream_id"]) for o in map(mine, wf_frames(wf(name))))
    assert ours == theirs
    assert theirs[("SYN_STREAM", 2)] == 1 and theirs[("SYN_STREAM", 4)] == 1  # pushes
    assert sum(c for (t, _), c in theirs.items() if t == "WINDOW_UPDATE") >= 5


@needs_tshark
@pytest.mark.parametrize("name", ["spdy2-plain", "spdy2-tls"])
def test_v2_framing_equals_tshark(name):
    """tshark cannot decode SPDY/2 header blocks but does frame it: same frames, ids, flags."""
    theirs = tshark(name)
    ours = [mine(f) for f in wf_frames(wf(name))]
    assert len(theirs) > 90
    key = lambda d: (d["packet"], d["first_packet"], d["type"], d["flags"], d["length"])
    assert [key(o) for o in ours] == [key(t) for t in theirs]
    # tshark 4.0 gives stream ids of SPDY/2 DATA frames only ("Unsupported Version" for control)
    data = [(o["stream_id"], t["stream_id"]) for o, t in zip(ours, theirs) if t["type"] == "DATA"]
    assert len(data) > 40 and all(a == b for a, b in data)


# ---------------------------------------------------------------- headers vs the implementations' logs


@pytest.mark.parametrize("name", list(CAPTURES))
def test_headers_equal_client_and_server_logs(name):
    frames = [f for f in wf_frames(wf(name)) if f.type in ("SYN_STREAM", "SYN_REPLY", "HEADERS")]
    for role, sent_dir in (("client", 0), ("server", 1)):
        lg = logs(name, role)
        for direction, what in ((sent_dir, "send"), (1 - sent_dir, "recv")):
            expect = [(e["frame"], e["stream"], _split_nul([tuple(h) for h in e["headers"]])) for e in lg if e["dir"] == what]
            got = [(f.type, f.stream_id, f.headers) for f in frames if f.direction == direction]
            assert len(expect) >= 11
            assert got == expect, (role, what)
            # SYN_STREAM details the sender logged: associated id, priority bits, FIN
            if what == "recv":
                syn = [e for e in lg if e["dir"] == what and e["frame"] == "SYN_STREAM"]
                fs = [f for f in frames if f.direction == direction and f.type == "SYN_STREAM"]
                assert [(e["assoc"], e["priority"], e["flags"]) for e in syn] == [
                    (f.fields["associated_stream_id"], f.fields["priority"], f.flags) for f in fs]


# ---------------------------------------------------------------- requests


def _client_view(name):
    """From the client's log: stream -> (path, priority, status, pushed parent)."""
    out = {}
    for e in logs(name, "client"):
        hd = dict(e["headers"])
        if e["frame"] == "SYN_STREAM":
            path = hd.get(":path") or hd.get("url")
            out[e["stream"]] = {"path": path, "priority": e["priority"], "parent": e.get("assoc") or None,
                                "status": hd.get(":status") or hd.get("status")}
        elif e["frame"] == "SYN_REPLY":
            out[e["stream"]]["status"] = hd.get(":status") or hd.get("status")
    # priority as the receiver parsed it from the wire (the client's send log has the 3-bit
    # value it meant; SPDY/2 carries only its top 2 bits)
    for e in logs(name, "server"):
        if e["dir"] == "recv" and e["frame"] == "SYN_STREAM":
            out[e["stream"]]["priority"] = e["priority"]
    return out


@pytest.mark.parametrize("name", list(CAPTURES))
def test_requests_url_status_priority(name):
    an = wf(name)
    port, proto = CAPTURES[name]
    conns = [c for c in an.connections if c.protocol and c.protocol.startswith("spdy")]
    assert len(conns) == 1 and conns[0].protocol == proto
    exs = {e.stream_id: e for e in an.exchanges if e.protocol == proto}
    view = _client_view(name)
    assert set(exs) == set(view) and len(view) == 13
    for sid, v in view.items():
        ex = exs[sid]
        assert ex.url == f"https://localhost:{port}{v['path']}"
        assert ex.path == v["path"]
        assert ex.status == int(v["status"].split(" ")[0])
        assert ex.priority["priority"] == v["priority"]
        assert ex.pushed == (sid % 2 == 0)
        assert ex.push_parent == v["parent"]
        assert ex.method == ("POST" if v["path"] == "/api/echo" else "GET")
    assert sorted(e.status for e in exs.values()).count(404) == 1
    assert exs[17].response_body_bytes == 200000  # /big.bin


@needs_tshark
@pytest.mark.parametrize("name", V3)  # tshark gives no stream ids to SPDY/2 control frames
def test_exchange_packets_equal_tshark(name):
    """request/response start and end packets are where tshark shows the frames."""
    theirs = tshark(name)
    exs = {e.stream_id: e for e in wf(name).exchanges if e.protocol.startswith("spdy")}
    for sid, ex in exs.items():
        on = [t for t in theirs if t["stream_id"] == sid and t["type"] in ("SYN_STREAM", "SYN_REPLY", "HEADERS", "DATA")]
        syn = on[0]
        assert syn["type"] == "SYN_STREAM"
        assert ex.request_start_packet == syn["first_packet"]
        if sid % 2:  # client stream: request ends at the client's FIN, response at the server's
            reply = [t for t in on if t["type"] == "SYN_REPLY"][0]
            assert ex.response_start_packet == reply["first_packet"]
            fin_frames = [t for t in on if t["flags"] & 1]
            assert len(fin_frames) == 2
            assert ex.request_end_packet == fin_frames[0]["packet"]
            assert ex.response_end_packet == fin_frames[1]["packet"]
        else:
            assert ex.response_start_packet == syn["first_packet"]
            assert ex.response_end_packet == [t for t in on if t["flags"] & 1][-1]["packet"]
        assert ex.request_start <= ex.request_end <= ex.response_end


@needs_tshark
@pytest.mark.parametrize("name", V3)
def test_header_bytes_wire_equal_tshark_block(name):
    """Compressed header bytes = the header block tshark shows, per exchange direction."""
    theirs = tshark(name)
    pcap, keys = _paths(name)
    exs = {e.stream_id: e for e in wf(name).exchanges if e.protocol.startswith("spdy")}
    for sid, ex in exs.items():
        blocks = [t for t in theirs if t["stream_id"] == sid and t["type"] in ("SYN_STREAM", "SYN_REPLY", "HEADERS")]
        fixed = {"SYN_STREAM": 10, "SYN_REPLY": 4, "HEADERS": 4}
        c2s = sum(t["length"] - fixed[t["type"]] for t in blocks if t["type"] == "SYN_STREAM" and sid % 2)
        s2c = sum(t["length"] - fixed[t["type"]] for t in blocks) - c2s
        assert ex.request_header_bytes_wire == c2s
        assert ex.response_header_bytes_wire == s2c
        req = [t for t in blocks if t["type"] == "SYN_STREAM" and sid % 2]
        if req:
            assert ex.request_header_bytes_decoded == sum(len(k) + len(v) for k, v in req[0]["headers"])


# ---------------------------------------------------------------- version, flow control


def test_cleartext_31_detected_by_session_window_update():
    an = wf("spdy3.1-plain")
    fr = wf_frames(an)
    first_wu0 = next(f for f in fr if f.type == "WINDOW_UPDATE" and f.stream_id == 0)
    assert first_wu0.protocol == "spdy/3.1"
    assert {f.protocol for f in fr} == {"spdy/3.1"}  # relabelled from the start
    assert {f.protocol for f in wf_frames(wf("spdy3-plain"))} == {"spdy/3"}


def test_flow_control_windows_and_stalls():
    # TLS 3.1: /big.bin (stream 17) exhausts the client's 64 KiB session window exactly
    fr = wf_frames(wf("spdy3.1-tls"))
    stalled = [f for f in fr if f.fields and f.fields.get("stalled")]
    assert stalled and all(f.type == "DATA" and f.direction == 1 for f in stalled)
    assert any(f.fields["window_connection"] == 0 for f in stalled)
    assert not any(f.error for f in fr)
    # the window a WINDOW_UPDATE reopens is the window before it + its increment
    s2c_sent = sum(f.length for f in fr if f.type == "DATA" and f.direction == 1 and f.packet < stalled[0].packet) + stalled[0].length
    assert s2c_sent == 65536  # the client's session window: SPDY/3.1 initial 64 KiB
    # SPDY/3 cleartext: stream window of stream 17 exhausted, reopened by WINDOW_UPDATEs
    fr3 = wf_frames(wf("spdy3-plain"))
    st17 = [f for f in fr3 if f.stream_id == 17 and f.fields and f.fields.get("stalled") == "stream"]
    assert st17 and st17[0].fields["window_stream"] == 0
    wu = [f for f in fr3 if f.type == "WINDOW_UPDATE" and f.stream_id == 17 and "stall_duration" in f.fields]
    assert wu and wu[0].fields["stall_duration"] > 0
    assert any("window exhausted" in n for n in wf("spdy3-plain").connections[0].notes)
    # the cleartext 3.1 server overruns the session window: an error, not a crash
    c31 = wf("spdy3.1-plain").connections[0]
    assert any("overruns the session window" in n for n in c31.notes)


def test_settings_and_push_hints():
    fr = wf_frames(wf("spdy3-plain"))
    st = [f for f in fr if f.type == "SETTINGS"]
    assert [(f.direction, f.fields["settings"][0]["name"], f.fields["settings"][0]["value"], f.fields["settings"][0]["persist_value"]) for f in st] == [
        (0, "INITIAL_WINDOW_SIZE", 65536, True), (1, "INITIAL_WINDOW_SIZE", 1048576, True)]
    st2 = [f for f in wf_frames(wf("spdy2-plain")) if f.type == "SETTINGS"]  # v2 little-endian ids
    assert [f.fields["settings"][0]["id"] for f in st2] == [7, 7]
    reply = next(f for f in fr if f.type == "SYN_REPLY" and f.stream_id == 1)
    assert [a["url"] for a in reply.fields["associated_content"]] == ["http://localhost/pushed.css", "http://localhost/pushed.js"]
    assert reply.fields["subresources"] == ["/style.css", "/app.js", "/img/logo.png"]


# ---------------------------------------------------------------- dictionaries, bombs


def test_dictionary_ids_match_real_streams():
    """The zlib header of each direction's first block names its dictionary (RFC 1950 DICTID)."""
    for name, d in (("spdy2-plain", DICT_V2), ("spdy3-plain", DICT_V3)):
        an = wf(name)
        first = next(f for f in wf_frames(an) if f.type == "SYN_STREAM")
        assert first.fields["first_block"] is True
        assert len(d) == (907 if d is DICT_V2 else 1423)
    spec = SPECS / "draft-mbelshe-httpbis-spdy-00.txt"
    if spec.exists():
        import re
        t = spec.read_text()
        body = t[t.index("SPDY_dictionary_txt[] = {") : t.index("};", t.index("SPDY_dictionary_txt[] = {"))]
        bs = bytes(int(x, 16) for line in body.splitlines() for x in re.findall(r"0x([0-9a-f]{2})", line.split("\\\\")[0]))
        assert bs == DICT_V3
    # DICTIDs as the real (Node zlib) streams carry them: bytes 2..5 of the first header block
    raw = (SAMPLES / "spdy3-plain.pcap").read_bytes()
    assert zlib.adler32(DICT_V3).to_bytes(4, "big") in raw
    assert zlib.adler32(DICT_V2).to_bytes(4, "big") in (SAMPLES / "spdy2-plain.pcap").read_bytes()


def _nv3(pairs):
    out = [len(pairs).to_bytes(4, "big")]
    for k, v in pairs:
        out += [len(k).to_bytes(4, "big"), k, len(v).to_bytes(4, "big"), v]
    return b"".join(out)


def _syn(sid, block, version=3):
    payload = sid.to_bytes(4, "big") + b"\0\0\0\0" + b"\x20\0" + block
    return bytes([0x80, version, 0, 1, 1]) + len(payload).to_bytes(3, "big") + payload


def test_header_bomb_marked_and_stream_stays_in_sync():
    comp = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICT_V3)
    bomb = comp.compress(_nv3([(b":path", b"/" + b"a" * (3 << 20))])) + comp.flush(zlib.Z_SYNC_FLUSH)
    assert len(bomb) < 16 << 10  # a few KB on the wire, 3 MiB inflated
    ok_pairs = [(b":method", b"GET"), (b":path", b"/after"), (b":host", b"x")]
    nxt = comp.compress(_nv3(ok_pairs)) + comp.flush(zlib.Z_SYNC_FLUSH)
    wire = _syn(1, bomb) + _syn(3, nxt) + bytes([0, 0, 0, 3, 1, 0, 0, 2]) + b"hi"
    sc = SpdyConnection(header_limit=1 << 20)
    frames = []
    for i in range(0, len(wire), 1000):  # arbitrary segmentation
        frames += sc.receive(0, wire[i : i + 1000])
    assert [f.type for f in frames] == ["SYN_STREAM", "SYN_STREAM", "DATA"]
    assert frames[0].headers is None and "cap" in frames[0].error
    assert frames[1].error is None
    assert frames[1].headers == [(k.decode(), v.decode()) for k, v in ok_pairs]
    assert frames[2].stream_id == 3 and frames[2].fin and frames[2].data == b"hi"


@needs_tshark
def test_cap_on_real_capture_keeps_later_blocks():
    """With a 170-byte cap some real blocks are over it; every other block still equals tshark."""
    an = wf("spdy3-plain", 170)
    ours = [mine(f) | {"error": f.error} for f in wf_frames(an)]
    theirs = tshark("spdy3-plain")
    over = [o for o in ours if o["error"] and "cap" in o["error"]]
    assert over
    checked = 0
    for o, t in zip(ours, theirs):
        if o["type"] in ("SYN_STREAM", "SYN_REPLY") and not o["error"]:
            assert o["headers"] == t["headers"]
            checked += 1
    assert checked >= 10


def test_garbage_never_raises():
    sc = SpdyConnection()
    import random
    rnd = random.Random(5)
    for _ in range(200):
        sc.receive(rnd.randint(0, 1), bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 300))))
    sc.gap(0, 100)
    sc.receive(0, _syn(5, b"\x78\xbb junk"))


def test_gaps_resynchronise():
    """Bytes lost inside a DATA payload: framing goes on; lost inside a control frame: the
    next control frame is found again and header blocks are marked (zlib out of step)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICT_V3)
    blk = lambda p: comp.compress(_nv3(p)) + comp.flush(zlib.Z_SYNC_FLUSH)
    s1, s3, s5 = (_syn(i, blk([(b":path", p)])) for i, p in ((1, b"/a"), (3, b"/b"), (5, b"/c")))
    d1 = bytes([0, 0, 0, 1, 1, 0, 0, 100]) + b"x" * 100
    ping = bytes([0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 9])
    sc = SpdyConnection()
    out = sc.receive(0, s1 + d1[:50]) + sc.gap(0, 30) + sc.receive(0, d1[80:] + s3[:5])
    out += sc.gap(0, 10) + sc.receive(0, s3[15:] + ping + s5)
    assert [(f.type, f.stream_id, f.offset) for f in out] == [
        ("SYN_STREAM", 1, 0), ("DATA", 1, len(s1)), ("PING", None, len(s1) + len(d1) + len(s3)),
        ("SYN_STREAM", 5, len(s1) + len(d1) + len(s3) + len(ping))]
    assert out[0].headers == [(":path", "/a")] and "lost" in out[1].error
    assert out[3].headers is None and "out of step" in out[3].error
