"""The lab's page samples are good: tshark (and Chromium's own NetLog) see every resource of the page.

For sample_captures/page/page-{h1,h2,h3}.pcapng, decrypted by tshark with the
committed key log, the list of (method, path, status, body bytes) equals the
page's resource list from scripts/lab/page/generate.py (index.html + its
sub-resources; the page suppresses the favicon). HTTP/1.1 and HTTP/2 come from
tshark's own http/http2 dissectors; for HTTP/3 (tshark 4.0 has no QPACK) the
stream bytes come from tshark's QUIC decryption and the header blocks are
decoded with pylsqpack. Chromium's NetLog for the same load must agree.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, need_tool, run_tool

# WIREFALL_LAB_PAGE=DIR checks another serve_and_capture.py output directory the same way
PAGE = Path(os.environ.get("WIREFALL_LAB_PAGE", SAMPLES / "page"))
LAB = ROOT / "scripts" / "lab"


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


generate = _module("lab_page_generate", LAB / "page" / "generate.py")
netlog = _module("lab_netlog", LAB / "netlog.py")


def manifest() -> dict:
    p = PAGE / "manifest.json"
    if not p.exists():
        pytest.skip("sample_captures/page/manifest.json absent")
    return json.loads(p.read_text())


def sample(proto: str) -> tuple[Path, Path, dict]:
    cap, keys = PAGE / f"page-{proto}.pcapng", PAGE / f"page-{proto}.keys"
    m = manifest()
    if not cap.exists() or proto not in m.get("runs", {}):
        pytest.skip(f"{cap.name} not made yet")
    return cap, keys, m["runs"][proto]


def expected() -> list[tuple[str, str, int, int]]:
    """(method, path, status, body bytes) the page needs, from the generator + the page's file sizes."""
    m = manifest()
    count = m["page"]["count"]
    paths = generate.request_paths(count)
    assert paths == m["page"]["requests"], "manifest's request list differs from the generator's"
    size = {f["path"]: f["bytes"] for f in m["page"]["files"]}
    size["/"] = size["/index.html"]
    out = sorted(("GET", p, 200, size[p]) for p in paths)
    assert len(out) == count + 1 and count > 0
    return out


def tshark_json(cap: Path, keys: Path | None, display_filter: str, layers: str, extra: tuple = ()) -> list[dict]:
    need_tool("tshark")
    opts = ("-o", f"tls.keylog_file:{keys}") if keys is not None and keys.exists() else ()
    out = run_tool("tshark", "-r", str(cap), *opts, *extra, "-Y", display_filter,
                   "-T", "json", "--no-duplicate-keys", "-J", layers)
    return [p["_source"]["layers"] for p in json.loads(out)]


def as_list(x) -> list:
    if x is None:
        return []
    return x if isinstance(x, list) else [x]


# ------------------------------------------------------------------ the page itself

def test_page_generator_matches_committed_manifest(tmp_path):
    """Regenerating the page gives the very files the samples served (same sizes and hashes)."""
    if not shutil.which("cjpeg"):
        pytest.skip("cjpeg (libjpeg-turbo-progs) not installed")
    m = manifest()
    built = generate.build(tmp_path, m["page"]["count"], m["page"]["seed"])
    assert built["files"] == m["page"]["files"]
    kinds = Counter(r["kind"] for r in generate.resources(m["page"]["count"]))
    assert {"css", "js", "jpeg", "png", "json"} <= set(kinds)
    assert (tmp_path / "img" / "hero.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert (tmp_path / "img" / "logo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ HTTP/1.1

def find(tree, key):
    """First value of key anywhere in a tshark JSON subtree (tshark nests header fields)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for x in tree:
            v = find(x, key)
            if v is not None:
                return v
    return None


def h1_exchanges(cap: Path, keys: Path | None, port: str, extra: tuple = ()) -> tuple[list, set]:
    """(method, uri, status, content-length) per response, paired by tshark's http.request_in; TCP streams used."""
    by_frame, got, conns = {}, [], set()
    for L in tshark_json(cap, keys, "http.request", "frame tcp http", extra):
        assert L["tcp"]["tcp.dstport"] == port
        for h in as_list(L.get("http")):
            if find(h, "http.request.method"):
                by_frame[L["frame"]["frame.number"]] = (find(h, "http.request.method"), find(h, "http.request.uri"))
                conns.add(L["tcp"]["tcp.stream"])
    for L in tshark_json(cap, keys, "http.response", "frame tcp http", extra):
        assert L["tcp"]["tcp.srcport"] == port
        for h in as_list(L.get("http")):
            if find(h, "http.response.code"):
                method, uri = by_frame.pop(find(h, "http.request_in"))
                # tshark shows a response once its whole body is reassembled (http.file_data)
                assert find(h, "http.file_data"), f"no body for {uri}"
                got.append((method, uri, int(find(h, "http.response.code")), int(find(h, "http.content_length"))))
    assert by_frame == {}, f"requests without a response: {by_frame}"
    return got, conns


def test_h1_sample_has_every_resource():
    cap, keys, run = sample("h1")
    got, conns = h1_exchanges(cap, keys, str(run["port"]))
    assert sorted(got) == expected()
    # Chromium spreads an HTTP/1.1 page over several connections (at most 6 per host)
    assert len(conns) > 1 and len(conns) <= 6
    server_conns = {line.split()[0] for line in (PAGE / run["server_log"]).read_text().splitlines()}
    assert len(server_conns) == len(conns)


def test_h1c_sample_has_every_resource():
    cap, _, run = sample("h1c")
    got, conns = h1_exchanges(cap, None, str(run["port"]))
    assert sorted(got) == expected()
    assert len(conns) == 1  # curl reuses one keep-alive connection
    served = [ln.split('"')[1].split()[1] for ln in (PAGE / run["server_log"]).read_text().splitlines()]
    assert served == generate.request_paths(manifest()["page"]["count"])  # in the order curl was given


# ------------------------------------------------------------------ HTTP/2

def h2_exchanges(cap: Path, keys: Path | None, port: str, extra: tuple = ()) -> tuple[list, set, set]:
    """(method, path, status, DATA payload bytes) per stream from tshark's HPACK-decoded HEADERS."""
    heads: dict[tuple, dict] = defaultdict(dict)
    data: Counter = Counter()
    conns = set()
    for L in tshark_json(cap, keys, "http2", "tcp http2", extra):
        conn = L["tcp"]["tcp.stream"]
        for h2 in as_list(L.get("http2")):
            for fr in as_list(h2.get("http2.stream")) if isinstance(h2, dict) else []:
                sid = int(fr.get("http2.streamid", 0))
                if sid == 0:
                    continue
                if fr.get("http2.type") == "1":
                    conns.add(conn)
                    for hd in as_list(fr.get("http2.header")):
                        heads[conn, sid][hd["http2.header.name"]] = hd.get("http2.header.value", "")
                elif fr.get("http2.type") == "0":
                    assert L["tcp"]["tcp.srcport"] == port  # no request bodies on this page
                    data[conn, sid] += int(fr["http2.length"]) - int(fr.get("http2.pad_length", 0))
    got = [(h.get(":method"), h.get(":path"), int(h[":status"]) if ":status" in h else None, data[k]) for k, h in heads.items()]
    return got, conns, {sid for _, sid in heads}


def test_h2_sample_has_every_resource():
    cap, keys, run = sample("h2")
    got, conns, sids = h2_exchanges(cap, keys, str(run["port"]))
    assert sorted(got) == expected()
    assert len(conns) == 1  # one HTTP/2 connection carries the whole page
    assert all(sid % 2 == 1 for sid in sids)


def test_h2c_sample_has_every_resource():
    cap, _, run = sample("h2c")
    got, conns, sids = h2_exchanges(cap, None, str(run["port"]), tuple(run["tshark"].split()))
    # nghttp -a asks for the page by the URI it was given, /index.html
    want = sorted(("GET", "/index.html" if p == "/" else p, st, n) for _, p, st, n in expected())
    assert sorted(got) == want
    assert len(conns) == 1 and all(sid % 2 == 1 for sid in sids)


# ------------------------------------------------------------------ HTTP/3

def _varint(b: bytes, i: int) -> tuple[int, int] | None:
    if i >= len(b):
        return None
    n = 1 << (b[i] >> 6)
    if i + n > len(b):
        return None
    v = b[i] & 0x3F
    for k in range(1, n):
        v = (v << 8) | b[i + k]
    return v, i + n


def _frames(buf: bytes, pos: int):
    """Complete HTTP/3 frames (type, payload) from pos; returns (frames, new pos)."""
    out = []
    while True:
        t = _varint(buf, pos)
        if t is None:
            break
        ln = _varint(buf, t[1])
        if ln is None or ln[1] + ln[0] > len(buf):
            break
        out.append((t[0], buf[ln[1]:ln[1] + ln[0]]))
        pos = ln[1] + ln[0]
    return out, pos


def test_h3_sample_has_every_resource():
    pylsqpack = pytest.importorskip("pylsqpack")
    cap, keys, run = sample("h3")
    port = str(run["port"])
    streams: dict[tuple[int, int], bytearray] = defaultdict(bytearray)  # (dir, stream id) -> contiguous bytes
    pending: dict[tuple[int, int], dict[int, bytes]] = defaultdict(dict)
    pos: Counter = Counter()
    uni_type: dict[tuple[int, int], int] = {}
    settings: dict[int, dict[int, int]] = {0: {}, 1: {}}  # sender dir -> settings
    decoders: dict[int, object] = {}  # dir of the header block's sender -> Decoder
    heads: dict[int, dict] = defaultdict(dict)  # stream id -> merged request+response pseudo headers
    body: Counter = Counter()
    blocked: dict[tuple[int, int], bytes] = {}
    conns = set()

    def decoder(d: int):
        # a header block sent in direction d is decoded by the peer, with the peer's SETTINGS
        if d not in decoders:
            s = settings[1 - d]
            decoders[d] = pylsqpack.Decoder(s.get(0x01, 0), s.get(0x07, 0))
        return decoders[d]

    def got_headers(d: int, sid: int, hs):
        for k, v in hs:
            heads[sid][k.decode()] = v.decode()

    def advance(d: int, sid: int):
        key = (d, sid)
        buf = bytes(streams[key])
        if sid & 2:  # unidirectional
            if key not in uni_type:
                t = _varint(buf, 0)
                if t is None:
                    return
                uni_type[key], pos[key] = t
            if uni_type[key] == 0x00:  # control
                frames, pos[key] = _frames(buf, pos[key])
                for ft, payload in frames:
                    if ft == 0x04:
                        i = 0
                        while i < len(payload):
                            k, i = _varint(payload, i)
                            v, i = _varint(payload, i)
                            settings[d][k] = v
            elif uni_type[key] == 0x02:  # QPACK encoder stream of direction d
                new = buf[pos[key]:]
                pos[key] = len(buf)
                if new:
                    for unblocked in decoder(d).feed_encoder(new):
                        _, hs = decoder(d).resume_header(unblocked)
                        blocked.pop((d, unblocked))
                        got_headers(d, unblocked, hs)
            return
        frames, pos[key] = _frames(buf, pos[key])
        for ft, payload in frames:
            if ft == 0x01:
                try:
                    _, hs = decoder(d).feed_header(sid, payload)
                    got_headers(d, sid, hs)
                except pylsqpack.StreamBlocked:
                    blocked[d, sid] = payload
            elif ft == 0x00 and d == 1:
                body[sid] += len(payload)

    for L in tshark_json(cap, keys, "quic", "udp quic"):
        d = 1 if L["udp"]["udp.srcport"] == port else 0
        for q in as_list(L.get("quic")):
            if isinstance(q, dict) and "QUIC Connection information" in q:
                conns.add(q["QUIC Connection information"]["quic.connection.number"])
            for fr in as_list(q.get("quic.frame") if isinstance(q, dict) else None):
                if "quic.stream.stream_id" not in fr or "quic.stream_data" not in fr:
                    continue
                sid = int(fr["quic.stream.stream_id"])
                off = int(fr.get("quic.stream.offset", 0))
                chunk = bytes.fromhex(fr["quic.stream_data"].replace(":", ""))
                key = (d, sid)
                buf = streams[key]
                if off <= len(buf):
                    buf[off:off + len(chunk)] = chunk
                    while len(buf) in pending[key]:  # out-of-order data now contiguous
                        buf += pending[key].pop(len(buf))
                else:
                    pending[key][off] = chunk
                advance(d, sid)

    assert blocked == {}, f"header blocks never unblocked: {list(blocked)}"
    got = [(h.get(":method"), h.get(":path"), int(h.get(":status", 0)), body[sid]) for sid, h in heads.items()]
    assert sorted(got) == expected()
    assert all(sid % 4 == 0 for sid in heads)  # client-initiated bidirectional streams
    assert len(conns) == 1
    # the aioquic server's own record of what it answered agrees
    log = [json.loads(x) for x in (PAGE / run["server_log"]).read_text().splitlines()]
    assert sorted((r["method"], r["path"], r["status"], r["bytes"]) for r in log) == expected()
    assert {r["stream_id"]: r["path"] for r in log} == {sid: h[":path"] for sid, h in heads.items()}


# ------------------------------------------------------------------ Chromium's own account

@pytest.mark.parametrize("proto,transport", [("h1", "http1"), ("h2", "h2"), ("h3", "quic")])
def test_netlog_agrees(proto, transport):
    cap, keys, run = sample(proto)
    reqs = netlog.requests(PAGE / run["netlog"], origin="https://127.0.0.1")
    assert sorted((r.method, r.path, r.status, r.body_bytes) for r in reqs) == expected()
    assert {r.transport for r in reqs} == {transport}
    assert all(r.url.startswith(f"https://127.0.0.1:{run['port']}/") for r in reqs)
    assert all(r.start_ms <= r.headers_ms <= r.end_ms for r in reqs)
