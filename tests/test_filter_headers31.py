"""``header.NAME`` in the request filter (``requests -Y``, the TUI's waterfall, the web app) is
every instance of the header, in the request and in the response, as a Wireshark field that
occurs several times: ``==``, ``contains``, ``matches`` match when any instance does, ``!=`` when
every instance differs (all_ne, tshark 4.0), ``~=`` when any does (review 31, finding 1: only the
first instance was read, the request's before the response's, so the POST mp_verify requests of
the amazon load, ``content-type: multipart/form-data`` out and ``application/json`` back, were not
``header.content-type contains "json"``, and a second Set-Cookie was never read).

The header lists are not wirefall's (``requests --json`` prints wirefall's own reading): HTTP/2
headers are tshark's ``http2.header.name``/``.value`` per stream, HTTP/3 headers Chrome's NetLog
(``HTTP3_HEADERS_SENT``/``_DECODED``: tshark 4.0 does not decode QPACK), HTTP/1 headers tshark's
``http.request.line``/``http.response.line``; they are mapped to wirefall's requests by the
connection's two endpoints and the stream ID (HTTP/1: the request's rank on the connection)."""
from __future__ import annotations

import gzip
import ipaddress
import json
import struct
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import tshark_tap  # noqa: E402
from conftest import SAMPLES, SHARED, unpack_amazon  # noqa: E402

from wirefall.analyzer.filter import compile_filter  # noqa: E402
from wirefall.analyzer.jsonout import exchange_dict  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402

pytestmark = pytest.mark.skipif(subprocess.run(["which", "tshark"], capture_output=True).returncode != 0,
                                reason="tshark not installed")

Key = tuple  # (frozenset of the two (address, port) endpoints, stream ID or rank)


def _ep(addr: str, port) -> tuple[str, int]:
    return (str(ipaddress.ip_address(addr.strip("[]"))), int(port))


def _pair(a, b) -> frozenset:
    return frozenset((a, b))


def _tshark_json(cap: Path, yfilter: str, protos: str, extra: list[str]) -> list[dict]:
    out = subprocess.run(["tshark", "-n", "-r", str(cap), *extra, "-Y", yfilter, "-T", "json", "--no-duplicate-keys",
                          "-J", protos], capture_output=True, text=True, check=True, timeout=300).stdout
    return [p["_source"]["layers"] for p in json.loads(out or "[]")]


def _list(x) -> list:
    return x if isinstance(x, list) else [] if x is None else [x]


def _endpoints(layers: dict) -> frozenset:
    ip = layers.get("ip") or layers.get("ipv6")
    v6 = "ip" not in layers
    src, dst = (ip["ipv6.src"], ip["ipv6.dst"]) if v6 else (ip["ip.src"], ip["ip.dst"])
    tcp = layers["tcp"]
    return _pair(_ep(src, tcp["tcp.srcport"]), _ep(dst, tcp["tcp.dstport"]))


def tshark_h2(cap: Path, extra: list[str]) -> dict[Key, list[tuple[str, str]]]:
    """(endpoints, stream ID) -> every header tshark decodes on the stream's HEADERS and
    CONTINUATION frames, both ways, in order."""
    out: dict[Key, list[tuple[str, str]]] = defaultdict(list)
    for layers in _tshark_json(cap, "http2.header", "ip ipv6 tcp http2", extra):
        eps = _endpoints(layers)
        for rec in _list(layers.get("http2")):
            for st in _list(rec.get("http2.stream")):
                if st.get("http2.type") not in ("1", "9"):
                    continue
                for h in _list(st.get("http2.header")):
                    out[eps, int(st["http2.streamid"])].append((h["http2.header.name"].lower(), h["http2.header.value"]))
    return dict(out)


def tshark_h1(cap: Path, extra: list[str]) -> dict[Key, list[tuple[str, str]]]:
    """(endpoints, rank of the request on the connection) -> the request's header lines and
    its final response's (1xx interim responses left out; 101 is final), as tshark reads them."""
    reqs: dict[frozenset, list[list]] = defaultdict(list)
    resps: dict[frozenset, list[list]] = defaultdict(list)
    for layers in _tshark_json(cap, "http.request || http.response", "ip ipv6 tcp http", extra):
        eps = _endpoints(layers)
        for m in _list(layers.get("http")):
            def lines(field, m=m):
                return [(ln.split(":", 1)[0].strip().lower(), ln.split(":", 1)[1].strip()) for ln in _list(m.get(field))]

            if "http.request" in m:
                reqs[eps].append(lines("http.request.line"))
            else:
                code = next((int(v["http.response.code"]) for v in m.values() if isinstance(v, dict) and "http.response.code" in v), 0)
                if "http.response" in m and (code >= 200 or code == 101):
                    resps[eps].append(lines("http.response.line"))
    out = {}
    for eps, rq in reqs.items():
        for i, r in enumerate(rq):
            rs = resps[eps][i] if i < len(resps[eps]) else []
            out[eps, i] = r + rs
    return out


def netlog_h3(path: Path) -> dict[Key, list[tuple[str, str]]]:
    """(endpoints, stream ID) -> the headers Chrome sent (HTTP3_HEADERS_SENT: the stream is that of
    the next STREAM frame the session sends on a client bidirectional stream) and decoded
    (HTTP3_HEADERS_DECODED, after HTTP3_HEADERS_RECEIVED naming the stream) on each QUIC session."""
    d = json.load(gzip.open(path) if path.suffix == ".gz" else open(path))
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    by_src: dict[int, list] = defaultdict(list)
    for e in d["events"]:
        by_src[e["source"]["id"]].append(e)
    out: dict[Key, list[tuple[str, str]]] = defaultdict(list)

    def split(h: str) -> tuple[str, str]:
        i = h.index(": ", 1)  # (":method: GET": the name's own leading colon)
        return h[:i].lower(), h[i + 2:]

    for evs in by_src.values():
        eps = None
        pending: list | None = None
        recv_sid = None
        for e in evs:
            t, p = names[e["type"]], e.get("params") or {}
            if t == "QUIC_SESSION_PACKET_RECEIVED" and eps is None:
                peer, self_ = p["peer_address"].rsplit(":", 1), p["self_address"].rsplit(":", 1)
                eps = _pair(_ep(*peer), _ep(*self_))
            elif t == "HTTP3_HEADERS_SENT":
                pending = [split(h) for h in p["headers"]]
            elif t in ("QUIC_SESSION_STREAM_FRAME_SENT", "QUIC_SESSION_STREAM_FRAME_COALESCED") and pending is not None \
                    and p["stream_id"] % 4 == 0:
                out[eps, p["stream_id"]] += pending
                pending = None
            elif t == "HTTP3_HEADERS_RECEIVED":
                recv_sid = p["stream_id"]
            elif t == "HTTP3_HEADERS_DECODED" and recv_sid is not None:
                out[eps, recv_sid] += [split(h) for h in p["headers"]]
                recv_sid = None
    return dict(out)


def _key(an, e, rank: dict) -> Key:
    c = an.connections[e.connection]
    eps = _pair(_ep(*c.client), _ep(*c.server))
    return (eps, rank[e.id]) if e.protocol in ("http/1.0", "http/1.1") else (eps, e.stream_id)


def _ranks(an) -> dict[int, int]:
    by_conn: dict[int, list] = defaultdict(list)
    for e in an.exchanges:
        by_conn[e.connection].append(e)
    return {e.id: i for es in by_conn.values() for i, e in enumerate(sorted(es, key=lambda x: (x.request_start or 0, x.id)))}


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check(an, truth: dict[Key, list[tuple[str, str]]], names: list[str] | None = None) -> int:
    """Every ``header.NAME`` comparison against the outside header lists: presence, ``==``,
    ``!=`` (all_ne), ``~=`` (any_ne), ``contains``, ``count()``, on the exchanges and on their
    JSON (``requests --json``'s dicts, the unscoped filter). Returns the comparisons made."""
    rank = _ranks(an)
    keyed = {e.id: _key(an, e, rank) for e in an.exchanges}
    exs = [e for e in an.exchanges if keyed[e.id] in truth]
    assert exs and len(exs) == len(an.exchanges), ("every request has its outside header lists",
                                                   [e.id for e in an.exchanges if keyed[e.id] not in truth])
    dicts = {e.id: exchange_dict(e) for e in exs}

    def vals(e, n):
        return [v for k, v in truth[keyed[e.id]] if k == n]

    wanted = names or sorted({k for e in exs for k, _ in truth[keyed[e.id]]})
    n = 0
    for name in wanted:
        values = sorted({v for e in exs for v in vals(e, name)})[:4]
        cases = [(f"header.{name}", lambda vs: bool(vs))]
        for v in values:
            cases += [(f"header.{name} == {_q(v)}", lambda vs, v=v: v in vs),
                      (f"header.{name} != {_q(v)}", lambda vs, v=v: bool(vs) and all(x != v for x in vs)),
                      (f"header.{name} ~= {_q(v)}", lambda vs, v=v: any(x != v for x in vs))]
            if len(v) > 3:
                sub = v[1:-1][:12]
                cases.append((f"header.{name} contains {_q(sub)}", lambda vs, s=sub.lower(): any(s in x.lower() for x in vs)))
        for c in sorted({len(vals(e, name)) for e in exs} - {0}):
            cases.append((f"count(header.{name}) == {c}", lambda vs, c=c: len(vs) == c))
        upper = "header." + name.upper() if not name.startswith(":") else None
        for expr, want in cases:
            expected = [e.id for e in exs if want(vals(e, name))]
            f = compile_filter(expr, "exchanges")
            assert [e.id for e in exs if f(e)] == expected, expr
            g = compile_filter(expr)
            assert [e.id for e in exs if g(dicts[e.id])] == expected, ("JSON", expr)
            if upper and expr.startswith("header."):  # an HTTP header name is case-insensitive
                h = compile_filter(upper + expr[len("header.") + len(name):], "exchanges")
                assert [e.id for e in exs if h(e)] == expected, ("upper case", expr)
            n += 1
    return n


# ---------------------------------------------------------------- the review's case: amazon

@pytest.fixture(scope="module")
def amazon_truth(tmp_path_factory):
    cap, keys = unpack_amazon(tmp_path_factory.mktemp("amazon31"))
    netlog = SHARED / "pageload-amazon" / "amazon1_netlog.json.gz"
    an = analyze(str(cap), keylogs=[str(keys)])
    extra = tshark_tap.decode_args(an) + ["-o", f"tls.keylog_file:{keys}"]
    truth = tshark_h2(cap, extra)
    h3 = netlog_h3(netlog)
    assert not set(truth) & set(h3)
    return an, {**truth, **h3}


def test_amazon_uploads_with_a_json_response_are_selected(amazon_truth):
    """The review's command: the two POST mp_verify requests send multipart/form-data and get
    application/json back (Chrome's NetLog); with the GET before them they are the three
    requests with a JSON content-type, as the header lists outside wirefall say."""
    an, truth = amazon_truth
    rank = _ranks(an)
    want = sorted(e.id for e in an.exchanges
                  if any(k == "content-type" and "json" in v.lower() for k, v in truth[_key(an, e, rank)]))
    posts = [e.id for e in an.exchanges if e.method == "POST" and "mp_verify" in (e.url or "")]
    assert len(posts) == 2 and set(posts) < set(want) and len(want) == 3
    f = compile_filter('header.content-type contains "json"', "exchanges")
    assert sorted(e.id for e in an.exchanges if f(e)) == want
    # each of them has a request content-type that is not JSON: "!=" (all not equal) is false,
    # "~=" (any not equal) true, and there are two instances
    for expr, sel in (('header.content-type != "application/json"', False), ('header.content-type ~= "application/json"', True),
                      ("count(header.content-type) == 2", True), ('header.content-type matches "^multipart/"', True),
                      ('all header.content-type contains "json"', False)):
        f = compile_filter(expr, "exchanges")
        assert [f(e) for e in an.exchanges if e.id in posts] == [sel, sel], expr


def test_amazon_every_header_against_tshark_and_the_netlog(amazon_truth):
    an, truth = amazon_truth
    assert check(an, truth) > 500


# ---------------------------------------------------------------- bundled captures

def test_h2c_request_and_response_headers_against_tshark():
    """h2c-curl: a POST whose request content-type and content-length are not its response's."""
    cap = SAMPLES / "http" / "h2c-curl.pcap"
    an = analyze(str(cap))
    truth = tshark_h2(cap, tshark_tap.decode_args(an))
    assert any(sum(k == "content-type" for k, _ in hs) == 2 for hs in truth.values())
    check(an, truth)


def test_http1_request_and_response_headers_against_tshark():
    """http1-node: a POST sending a form and getting text/plain; interim 100 and 103 responses,
    whose headers are not the request's response headers (tshark shows them apart)."""
    cap = SAMPLES / "http" / "http1-node.pcap"
    an = analyze(str(cap))
    truth = tshark_h1(cap, tshark_tap.decode_args(an))
    assert any(sum(k == "content-type" for k, _ in hs) == 2 for hs in truth.values())
    check(an, truth)


# ---------------------------------------------------------------- repeated headers

def _crafted_set_cookies(path: Path) -> None:
    """One HTTP/1.1 POST on a TCP connection; the response sets three cookies (three Set-Cookie
    lines) and has a Content-Type other than the request's."""
    cli, srv = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    cport, sport = 40000, 80
    req = (b"POST /login HTTP/1.1\r\nHost: example.test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
           b"Content-Length: 7\r\n\r\nuser=me")
    resp = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: a=1; Path=/\r\n"
            b"Set-Cookie: session=XYZ; HttpOnly\r\nset-cookie: theme=dark\r\nContent-Length: 2\r\n\r\n{}")

    def tcp(src, dst, sp, dp, seq, ack, flags, payload=b""):
        t = struct.pack("!HHIIBBHHH", sp, dp, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(t), 1, 0x4000, 64, 6, 0, src, dst)
        s = sum(struct.unpack("!10H", ip))
        s = (s >> 16) + (s & 0xFFFF)
        s += s >> 16
        ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
        return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + t

    c0, s0 = 1000, 5000
    pkts = [tcp(cli, srv, cport, sport, c0, 0, 0x02), tcp(srv, cli, sport, cport, s0, c0 + 1, 0x12),
            tcp(cli, srv, cport, sport, c0 + 1, s0 + 1, 0x10), tcp(cli, srv, cport, sport, c0 + 1, s0 + 1, 0x18, req),
            tcp(srv, cli, sport, cport, s0 + 1, c0 + 1 + len(req), 0x18, resp),
            tcp(cli, srv, cport, sport, c0 + 1 + len(req), s0 + 1 + len(resp), 0x11),
            tcp(srv, cli, sport, cport, s0 + 1 + len(resp), c0 + 2 + len(req), 0x11),
            tcp(cli, srv, cport, sport, c0 + 2 + len(req), s0 + 2 + len(resp), 0x10)]
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(pkts):
            f.write(struct.pack("<IIII", 1795976384, 1000 * i, len(p), len(p)) + p)


def test_every_set_cookie_is_an_instance(tmp_path):
    cap = tmp_path / "cookies.pcap"
    _crafted_set_cookies(cap)
    an = analyze(str(cap))
    truth = tshark_h1(cap, [])
    # tshark's own http.set_cookie: the three, in order
    out = subprocess.run(["tshark", "-n", "-r", str(cap), "-Y", "http.set_cookie", "-T", "fields", "-e", "http.set_cookie",
                          "-E", "aggregator=|"], capture_output=True, text=True, check=True).stdout.strip()
    cookies = [v for k, v in next(iter(truth.values())) if k == "set-cookie"]
    assert "|".join(cookies) == out and len(cookies) == 3
    assert len(an.exchanges) == 1
    check(an, truth)
    e = an.exchanges[0]
    for expr in ('header.set-cookie contains "session="', 'header.set-cookie == "theme=dark"', "count(header.set-cookie) == 3",
                 'header.content-type == "application/json"', 'header.content-type contains "form"'):
        assert compile_filter(expr, "exchanges")(e), expr
    assert not compile_filter('header.set-cookie != "theme=dark"', "exchanges")(e)


def test_unknown_entries_are_no_instance():
    """A capture joined mid-way: HPACK/QPACK entries inserted before it are ``<unknown>``
    (name and value), as Wireshark shows them. Such an entry is no instance of any name: it adds
    nothing to ``header.NAME`` (== and !=, count, presence are those of the known entries)."""
    cap = SAMPLES / "quic" / "page-multi-late.pcapng"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    ex = [e for e in an.exchanges if any(k == "<unknown>" for k, _ in e.request_headers + e.response_headers)]
    assert ex
    for e in ex:
        known = [(k.lower(), v) for k, v in e.request_headers + e.response_headers if k != "<unknown>"]
        for name in sorted({k for k, _ in known})[:6]:
            vs = [v for k, v in known if k == name]
            assert compile_filter(f"count(header.{name}) == {len(vs)}", "exchanges")(e)
            assert compile_filter(f"header.{name} != {_q(vs[0])}", "exchanges")(e) == all(v != vs[0] for v in vs)
        assert not compile_filter('header.content-type == "<unknown>"', "exchanges")(e) or \
            any(v == "<unknown>" for k, v in known if k == "content-type")
