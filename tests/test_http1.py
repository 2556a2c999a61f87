"""HTTP/1.x against tshark (and the servers' own logs where tshark is wrong), field by field."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
HTTP = ROOT / "sample_captures" / "http"
PAGE = ROOT / "sample_captures" / "page"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

SEP = "\x1f"

CASES = {  # capture, key log, port tshark decodes as http (None: its default ports / TLS)
    "http1-nginx": (HTTP / "http1-nginx.pcap", None, 18085),
    "http1-node": (HTTP / "http1-node.pcap", None, 18086),
    "page-h1c": (PAGE / "page-h1c.pcapng", None, None),
    "page-h1": (PAGE / "page-h1.pcapng", PAGE / "page-h1.keys", None),
}


def _port_of(path):
    """page-h1c's server port, read from the capture's first SYN (tshark)."""
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0", "-c", "1",
                          "-T", "fields", "-e", "tcp.dstport"], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def tshark_http(path, keys, port, fields, yfilter="http"):
    cmd = ["tshark", "-n", "-r", str(path)]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    if port is None and keys is None:
        port = _port_of(path)
    if port:
        cmd += ["-d", f"tcp.port=={port},http"]
    cmd += ["-Y", yfilter, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", f"aggregator={SEP}"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()], port


def _sp(v):
    return v.split(SEP) if v else []


def _unesc(line):
    """tshark -T fields prints a field line's CRLF as the four characters \\r\\n."""
    return line.replace("\\r", "\r").replace("\\n", "\n")


def _client_port(an, ex):
    return an.connections[ex.connection].client[1]


FIELDS = ["frame.number", "frame.time_epoch", "tcp.srcport", "tcp.dstport", "http.request.method", "http.request.uri",
          "http.request.version", "http.response.code", "http.response.version", "http.response.phrase",
          "http.request.line", "http.response.line", "tcp.stream"]


def _messages(path, keys, port):
    """tshark's HTTP messages per TCP connection, keyed by the client port, in order."""
    rows, port = tshark_http(path, keys, port, FIELDS)
    reqs: dict = {}
    resps: dict = {}
    for num, ts, sport, dport, meth, uri, rver, code, sver, phrase, rlines, slines, _stream in rows:
        for m, u, v in zip(_sp(meth), _sp(uri), _sp(rver)):
            reqs.setdefault(int(sport), []).append({"packet": int(num), "time": float(ts), "method": m, "uri": u, "version": v,
                                                    "lines": _sp(rlines)})
        for c, v, p in zip(_sp(code), _sp(sver), _sp(phrase) or [""] * len(_sp(code))):
            resps.setdefault(int(dport), []).append({"packet": int(num), "time": float(ts), "code": int(c), "version": v,
                                                     "phrase": p, "lines": _sp(slines)})
    return reqs, resps


def _skip_pipelined(an, ex):
    """tshark gets a pipelined HEAD response wrong (takes the next response as its body):
    that connection is checked against nginx's access log instead."""
    reqs = [e for e in an.exchanges if e.connection == ex.connection]
    return len({e.request_end_packet for e in reqs}) < len(reqs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_requests_and_responses_match_tshark(name):
    path, keys, port = CASES[name]
    an = analyze(str(path), keylogs=[str(keys)] if keys else None)
    reqs, resps = _messages(path, keys and str(keys), port)
    assert sum(len(v) for v in reqs.values()) >= 4
    checked = 0
    for cport in reqs:
        mine = sorted((e for e in an.exchanges if _client_port(an, e) == cport and e.method), key=lambda e: e.request_start_packet)
        if mine and _skip_pipelined(an, mine[0]):
            continue
        theirs = reqs[cport]
        assert [(e.method, e.path) for e in mine] == [(r["method"], r["uri"]) for r in theirs]
        final = [r for r in resps.get(cport, []) if not 100 <= r["code"] < 200 or r["code"] == 101]
        interim = [r for r in resps.get(cport, []) if 100 <= r["code"] < 200 and r["code"] != 101]
        assert len(final) == len([e for e in mine if e.status is not None])
        for ex, r, s in zip(mine, theirs, final):
            # tshark shows a message at the packet of its last byte (body included)
            assert ex.request_end_packet == r["packet"]
            assert ex.request_end == pytest.approx(r["time"], abs=1e-6)
            assert ex.status == s["code"]
            frames = [f for f in an.frames if f.fields and f.fields.get("exchange") == ex.id]
            body = [f for f in frames if f.type == "BODY" and f.direction == 1]
            # tshark shows a close-delimited response at the server's FIN, where it ends (since
            # 2026-12-06 wirefall's end is that FIN too; before, the body's last byte)
            assert ex.response_end_packet == s["packet"]
            assert ex.response_end == pytest.approx(s["time"], abs=1e-6)
            if body and body[0].fields["framing"] == "close":
                assert body[0].packet == s["packet"] and not body[0].fields.get("incomplete")
            # header bytes as sent: start line + field lines (tshark lists them with their CRLF) + CRLF
            start = len(r["method"]) + 1 + len(r["uri"]) + 1 + len(r["version"]) + 2
            assert ex.request_header_bytes_wire == start + sum(len(_unesc(x)) for x in r["lines"]) + 2
            ours = [f for f in frames if f.type == "RESPONSE" and not f.fields.get("interim")][0]
            sline = len(s["version"]) + 1 + 3 + 1 + len(s["phrase"]) + 2
            assert ours.length == sline + sum(len(_unesc(x)) for x in s["lines"]) + 2
            checked += 1
        mine_interim = sorted(f.packet for e in mine for f in an.frames
                              if f.type == "RESPONSE" and f.fields.get("exchange") == e.id and f.fields.get("interim"))
        assert mine_interim == sorted(r["packet"] for r in interim)
    assert checked >= 4


@pytest.mark.parametrize("name", ["http1-nginx", "page-h1c", "page-h1"])
def test_bodies_match_tshark(name):
    """Body payload = Content-Length / sum of chunk sizes; gzip sizes as tshark decodes them."""
    path, keys, port = CASES[name]
    an = analyze(str(path), keylogs=[str(keys)] if keys else None)
    rows, port = tshark_http(path, keys and str(keys), port,
                             ["frame.number", "http.content_length_header", "http.chunk_size", "http.content_encoding"],
                             yfilter="http.response && !http.response.code == 304 && !http.response.code == 101")
    ends = {}
    for e in an.exchanges:
        if e.response_end_packet is not None and not _skip_pipelined(an, e):
            ends.setdefault(e.response_end_packet, []).append(e)
    n = 0
    for num, cl, chunks, _enc in rows:
        exs = ends.get(int(num))
        if not exs or len(exs) != 1 or exs[0].method == "HEAD":
            continue
        ex = exs[0]
        if chunks:
            assert ex.response_body_bytes == sum(int(c) for c in _sp(chunks))
        elif cl:
            assert ex.response_body_bytes == int(_sp(cl)[0])
        n += 1
    assert n >= 5
    if name == "http1-nginx":
        # "Content-encoded entity body (gzip): X bytes -> Y bytes" from tshark's JSON
        cmd = ["tshark", "-n", "-r", str(path), "-d", f"tcp.port=={port},http", "-Y", "http.content_encoding", "-T", "json",
               "-J", "frame http"]
        data = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        pairs = []
        for pkt in json.loads(data):
            num = int(pkt["_source"]["layers"]["frame"]["frame.number"])
            m = re.search(r"Content-encoded entity body \(gzip\): (\d+) bytes -> (\d+) bytes", json.dumps(pkt))
            if m:
                pairs.append((num, int(m.group(1)), int(m.group(2))))
        pairs = [p for p in pairs if p[0] in ends]  # the pipelined connection is checked elsewhere
        assert len(pairs) >= 4
        for num, wire, decoded in pairs:
            (ex,) = ends[num]
            assert (ex.response_body_bytes, ex.response_body_decoded_bytes) == (wire, decoded)


def test_pipelining_against_nginx_access_log():
    """Four requests in one segment (one HEAD among them): matched in order, responses where
    their status lines are (tshark mis-frames the HEAD response, so the truth is nginx's log
    and the packets whose TCP payload starts with a status line)."""
    an = analyze(str(HTTP / "http1-nginx.pcap"))
    log = [line for line in (HTTP / "http1-nginx.access.log").read_text().splitlines() if "wirefall-pipeline" in line]
    want = [(m.group(1), m.group(2), int(m.group(3))) for m in
            (re.search(r'"(\w+) (\S+) HTTP/1\.1" (\d+)', line) for line in log)]
    conn = [c for c in an.connections if any(e.connection == c.id and e.request_headers and
                                             dict(e.request_headers).get("User-Agent") == "wirefall-pipeline/1"
                                             for e in an.exchanges)]
    assert len(conn) == 1
    mine = [e for e in an.exchanges if e.connection == conn[0].id]
    assert [(e.method, e.path, e.status) for e in mine] == want and len(want) == 4
    assert len({e.request_start_packet for e in mine}) == 1  # sent at once
    rows, _ = tshark_http(HTTP / "http1-nginx.pcap", None, None,
                          ["frame.number"], yfilter=f'tcp.port == {conn[0].client[1]} && tcp.srcport == 18085 && tcp.payload[0:9] == "HTTP/1.1 "')
    assert [e.response_start_packet for e in mine] == [int(r[0]) for r in rows]
    head = [e for e in mine if e.method == "HEAD"][0]
    assert head.response_body_bytes == 0 and head.response_end_packet == head.response_start_packet


def test_keepalive_head_304_http10_and_close_delimited():
    an = analyze(str(HTTP / "http1-nginx.pcap"))
    by = {(e.method, e.path, e.status): e for e in an.exchanges}
    conns = {c.id: c for c in an.connections}
    first = [e for e in an.exchanges if e.connection == an.exchanges[0].connection]
    assert len(first) == 5  # curl keep-alive: five requests on one connection
    assert by[("HEAD", "/a.txt", 200)].response_body_bytes == 0
    assert by[("GET", "/a.txt", 304)].response_body_bytes == 0
    assert conns[by[("GET", "/js/j1.js", 200)].connection].protocol == "http/1.0"
    assert by[("POST", "/a.txt", 405)].request_body_bytes == 1321  # curl --data-binary of css/s1.css
    an = analyze(str(HTTP / "http1-node.pcap"))
    close = [e for e in an.exchanges if e.path == "/close"][0]
    assert close.response_body_bytes == len("close-delimited body part one\nand part two\n")
    ws = [e for e in an.exchanges if e.path == "/ws"][0]
    assert ws.status == 101 and any("websocket" in n for n in an.connections[ws.connection].notes)
    up = [e for e in an.exchanges if e.path == "/upload"][0]
    assert up.status == 200 and up.request_body_bytes == 2641
    assert up.response_start_packet < up.request_end_packet  # 100 Continue came before the body


def test_h2c_upgrade_request_becomes_stream_1():
    path = HTTP / "h2c-upgrade.pcap"
    an = analyze(str(path))
    rows, _ = tshark_http(path, None, None, ["frame.number", "tcp.srcport", "http.request.method", "http.request.uri",
                                             "http.upgrade", "http.response.code"], yfilter="http")
    upgrades = [r for r in rows if r[2]]
    assert len(upgrades) == 2
    s1 = tshark_http(path, None, None, ["frame.number", "tcp.dstport", "http2.headers.status", "http2.flags"],
                     yfilter="http2.streamid == 1 && http2.type == 1 && tcp.srcport == 18082")[0]
    for num, sport, meth, uri, _upg, _ in upgrades:
        ex = [e for e in an.exchanges if _client_port(an, e) == int(sport) and e.stream_id == 1]
        assert len(ex) == 1
        ex = ex[0]
        assert (ex.method, ex.path, ex.protocol) == (meth, uri, "h2c")
        assert ex.request_end_packet == int(num)
        resp = [r for r in s1 if int(r[1]) == int(sport)]
        assert ex.status == int(_sp(resp[0][2])[0])
        sw = [int(r[0]) for r in rows if r[5] == "101" and int(r[0]) > int(num)]
        assert ex.response_start_packet == sw[0]  # the 101 is the response's first byte
        assert [f.packet for f in an.frames if f.connection == ex.connection and f.stream_id == 1 and f.type == "HEADERS"
                and f.direction == 1] == [int(resp[0][0])]
        assert an.connections[ex.connection].protocol == "h2c"


# -- Content-Encoding sizes (analyzer.content): bodies compressed by the reference libraries ------------
def _pieces(b, n=777):
    return [b[i : i + n] for i in range(0, len(b), n)]


def test_content_decoded_sizes_and_bombs():
    import gzip as gz
    import os
    import zlib

    import brotli
    import zstandard

    from wirefall.analyzer.content import decoded_size

    raw = os.urandom(3000) * 40 + b"tail"
    cases = {
        "gzip": gz.compress(raw),
        "x-gzip": gz.compress(raw),
        "deflate": zlib.compress(raw),
        "br": brotli.compress(raw),
        "zstd": zstandard.ZstdCompressor().compress(raw),
        "gzip, br": brotli.compress(gz.compress(raw)),
        "identity": raw,
    }
    for enc, body in cases.items():
        d = decoded_size(enc, _pieces(body))
        assert (d.result, d.capped, d.error, d.wire) == (len(raw), False, None, len(body)), enc
    raw_deflate = zlib.compressobj(wbits=-15)
    rd = raw_deflate.compress(raw) + raw_deflate.flush()
    assert decoded_size("deflate", _pieces(rd)).result == len(raw)  # raw deflate, as some servers send
    assert decoded_size("gzip", [gz.compress(raw) + gz.compress(raw)]).result == 2 * len(raw)  # two members
    # bombs: 96 MiB of zeros stop at the cap, counted, marked
    zeros = b"\0" * (96 << 20)
    for enc, body in (("gzip", gz.compress(zeros, 9)), ("br", brotli.compress(zeros, quality=5)),
                      ("zstd", zstandard.ZstdCompressor().compress(zeros))):
        d = decoded_size(enc, _pieces(body, 65536), cap=8 << 20)
        assert d.capped and d.result == 8 << 20, enc
    del zeros
    # broken and unknown codings are marked, never raised
    d = decoded_size("gzip", [b"definitely not gzip"])
    assert d.error and d.result == 0
    d = decoded_size("br", [brotli.compress(raw)[:-20]])
    assert d.error and "truncated" in d.error
    d = decoded_size("compress", [b"x"])
    assert d.result is None and "compress" in d.error


_NGX = {}


def _nginx_streams():
    if not _NGX:
        out = subprocess.run(["tshark", "-n", "-r", str(HTTP / "http1-nginx.pcap"), "-q", "-z", "follow,tcp,raw,0"],
                             capture_output=True, text=True, check=True).stdout
        c, s = bytearray(), bytearray()
        for line in out.splitlines():
            if not line or line.startswith(("=", "Follow", "Filter", "Node")):
                continue
            (s if line.startswith("\t") else c).extend(bytes.fromhex(line.strip()))
        _NGX["c"], _NGX["s"] = bytes(c), bytes(s)
    return _NGX["c"], _NGX["s"]


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0, 1), st.integers(0, 255)), max_size=10),
       st.integers(20, 700))
def test_damaged_http1_streams_never_raise(damage, step):
    from wirefall.analyzer.model import Analysis, Connection, PacketIndex
    from wirefall.analyzer.sessions import Context
    from wirefall.analyzer.sessions.http1 import Http1Session

    c, s = _nginx_streams()
    assert c.startswith(b"GET ") and s.startswith(b"HTTP/1.1 ")
    bufs = [bytearray(c), bytearray(s)]
    for d, where, val in damage:
        bufs[d][int(where * (len(bufs[d]) - 1))] = val
    idx = PacketIndex()
    for i in range(10):
        idx.ts.append(1.0 + i)
        idx.proto.append(0)
    an = Analysis(path="-", index=idx)
    conn = Connection(id=0, transport="tcp", client=("127.0.0.1", 1), server=("127.0.0.1", 2))
    an.connections.append(conn)
    sess = Http1Session(Context(an, None), conn)
    offs = [0, 0]
    for i in range(0, max(map(len, bufs)), step):
        for d in (0, 1):
            piece = bytes(bufs[d][i : i + step])
            if piece:
                sess.data(d, piece, offs[d], 1 + (i // step) % 9)
                offs[d] += len(piece)
    sess.end()
    assert an.exchanges
    if not damage:
        assert [e.status for e in an.exchanges] == [200, 200, 200, 200, 404]


def test_http1_resyncs_after_garbage():
    """A damaged request line and a capture starting mid-body: parsing picks up at the next message."""
    from wirefall.analyzer.model import Analysis, Connection, PacketIndex
    from wirefall.analyzer.sessions import Context
    from wirefall.analyzer.sessions.http1 import Http1Session

    c, s = _nginx_streams()
    idx = PacketIndex()
    idx.ts.extend([1.0, 2.0, 3.0])
    idx.proto.extend([0, 0, 0])
    an = Analysis(path="-", index=idx)
    conn = Connection(id=0, transport="tcp", client=("127.0.0.1", 1), server=("127.0.0.1", 2))
    an.connections.append(conn)
    sess = Http1Session(Context(an, None), conn)
    first_resp_end = s.index(b"HTTP/1.1", 10)  # the server stream starts inside the first response's body
    sess.data(0, b"\x00\x01garbage\r\n" + c[c.index(b"GET ", 4):], 0, 1)
    sess.data(1, s[first_resp_end - 7:], 0, 2)
    sess.end()
    paths = [e.path for e in an.exchanges if e.method]
    assert paths == ["/css/s2.css", "/lorem.txt", "/img/i1.png", "/missing"]
    assert [e.status for e in an.exchanges if e.method] == [200, 200, 200, 404]
    assert any("skipped" in n for n in conn.notes)
