"""Review 27: HAR ``postData``, TLS record overhead of suites wirefall does not decrypt (and when
the figure is only a lower bound), and what ``stats --json``'s ``frames`` counts — each against
an outside truth: tshark's reassembled request bodies and urlencoded-form fields, tshark's TLS
record lengths and suites with the protocol's fixed plaintext sizes, the HAR 1.2 schema, and
the decrypted (exact) overhead of the same captures with their keys."""
from __future__ import annotations

import gzip
import io
import json
import pickle
import socket
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool, shared, unpack_amazon

from wirefall.analyzer import export as ex
from wirefall.analyzer import stats as S
from wirefall.analyzer.pipeline import analyze
from wirefall.dissectors.tls_suites import CIPHER_SUITES, RecordOverhead, overhead_bound, record_protection

TLS = SAMPLES / "tls"
SCHEMA = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())


@pytest.fixture(autouse=True)
def _no_env_keylog(monkeypatch):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)


def _validate(har: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    errors = list(jsonschema.Draft7Validator(SCHEMA).iter_errors(json.loads(json.dumps(har, allow_nan=False))))
    assert not errors, errors[:3]


def _entries(har: dict) -> list[dict]:
    return har["log"]["entries"] + [o for o in har["log"]["_orphans"] if "request" in o]


def _tshark_json(*args: str) -> list[dict]:
    return json.loads(run_tool("tshark", *args, "-T", "json", "-x") or "[]")


def _layer_values(obj, key: str) -> list:
    """Every value of ``key`` anywhere in a tshark JSON layer tree, in order."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:  # (a list: several occurrences — but a *_raw value is itself a list)
                out.extend(v if isinstance(v, list) and not key.endswith("_raw") else [v])
            else:
                out.extend(_layer_values(v, key))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(_layer_values(v, key))
    return out


def _raw_hex(v) -> bytes:
    """A tshark ``-x`` ``*_raw`` value: [hex, offset, length, bitmask, type] (or a list of them)."""
    if isinstance(v, list) and v and isinstance(v[0], list):
        return b"".join(_raw_hex(x) for x in v)
    return bytes.fromhex(v[0] if isinstance(v, list) else v)


# ------------------------------------------------------------------------ HAR postData


def _http1_capture(reqs: list[bytes]) -> bytes:
    """An Ethernet pcap of one HTTP/1.1 connection per request in ``reqs``, each answered 200."""
    import dpkt

    pkts = []
    for i, req in enumerate(reqs):
        cport, sport, cseq, sseq = 40000 + i, 8080, 1000, 5000
        c, s = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")

        def seg(src, dst, sp, dp, seq, ack, flags, data=b""):
            tcp = dpkt.tcp.TCP(sport=sp, dport=dp, seq=seq, ack=ack, flags=flags, win=65535, data=data)
            ip = dpkt.ip.IP(src=src, dst=dst, p=6, data=tcp, ttl=64)
            ip.len = 20 + len(bytes(tcp))
            return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))

        A, P = dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH
        pkts.append(seg(c, s, cport, sport, cseq, 0, dpkt.tcp.TH_SYN))
        cseq += 1
        pkts.append(seg(s, c, sport, cport, sseq, cseq, dpkt.tcp.TH_SYN | A))
        sseq += 1
        pkts.append(seg(c, s, cport, sport, cseq, sseq, A))
        for k in range(0, len(req), 1400):
            pkts.append(seg(c, s, cport, sport, cseq, sseq, A | P, req[k : k + 1400]))
            cseq += len(req[k : k + 1400])
        resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
        pkts.append(seg(s, c, sport, cport, sseq, cseq, A | P, resp))
        sseq += len(resp)
        pkts.append(seg(c, s, cport, sport, cseq, sseq, A | dpkt.tcp.TH_FIN))
        pkts.append(seg(s, c, sport, cport, sseq, cseq + 1, A | dpkt.tcp.TH_FIN))
        pkts.append(seg(c, s, cport, sport, cseq + 1, sseq + 1, A))
    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, linktype=1)
    for i, p in enumerate(pkts):
        w.writepkt(p, ts=1.0 + i * 0.001)
    return buf.getvalue()


def _post(path: str, body: bytes, headers: list[tuple[str, str]]) -> bytes:
    h = "".join(f"{k}: {v}\r\n" for k, v in headers)
    return f"POST {path} HTTP/1.1\r\nHost: example.test\r\n{h}Content-Length: {len(body)}\r\n\r\n".encode() + body


SECRET_JSON = '{"user": "ana", "pass": "s3cr\u00e9t", "n": [1, 2, 3]}'.encode() * 40
BODIES = {
    "/gz": (gzip.compress(SECRET_JSON), [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]),
    "/latin": ("na\u00efve caf\u00e9 \u00e0 la carte".encode("latin-1"), [("Content-Type", "text/plain; charset=ISO-8859-1")]),
    "/bin": (bytes(range(256)) * 4, [("Content-Type", "application/octet-stream")]),
    "/form": (b"user=ana&pass=s3cr%C3%A9t+x&empty=&a=1&a=2", [("Content-Type", "application/x-www-form-urlencoded")]),
    "/none": (b"plain words, no type", []),
}


@pytest.fixture(scope="module")
def bodies_cap(tmp_path_factory) -> Path:
    pytest.importorskip("dpkt")
    p = tmp_path_factory.mktemp("r27") / "bodies.pcap"
    p.write_bytes(_http1_capture([_post(k, b, h) for k, (b, h) in BODIES.items()]))
    return p


def _tshark_http1_bodies(cap: Path) -> dict[str, dict]:
    """tshark's view of each POST: uri -> {body (http.file_data, Content-Encoding undone by
    tshark), content_type, form [(key, value)]}."""
    out = {}
    for pk in _tshark_json("-r", str(cap), "-Y", "http.request"):
        lay = pk["_source"]["layers"]
        http = lay["http"]
        uri = _layer_values(http, "http.request.uri")[0]
        raw = _layer_values(http, "http.file_data_raw")
        form = lay.get("urlencoded-form")
        pairs = []
        if form:
            for v in form.values():
                if isinstance(v, dict) and "urlencoded-form.key" in v:
                    pairs.append((v["urlencoded-form.key"], v.get("urlencoded-form.value", "")))
        ct = _layer_values(http, "http.content_type")
        out[uri] = {"body": _raw_hex(raw[0]) if raw else b"", "content_type": ct[0] if ct else "", "form": pairs}
    return out


def test_postdata_text_params_against_tshark_bodies(bodies_cap):
    """With --include-sensitive: postData.mimeType is the Content-Type tshark reads, text the body
    tshark reassembles (its Content-Encoding undone: tshark's http.file_data of the gzip body) in
    the Content-Type's charset, params tshark's urlencoded-form pairs; a binary body has no text."""
    need_tool("tshark")
    truth = _tshark_http1_bodies(bodies_cap)
    assert set(truth) == set(BODIES)
    har = ex.har(analyze(str(bodies_cap)), include_sensitive=True)
    _validate(har)
    got = {e["request"]["url"].split("example.test", 1)[1]: e["request"] for e in _entries(har)}
    assert set(got) == set(BODIES)
    for uri, t in truth.items():
        req = got[uri]
        assert req["bodySize"] == len(BODIES[uri][0])  # (on the wire, before decoding)
        pd = req["postData"]
        assert pd["mimeType"] == t["content_type"]
        if uri == "/bin":
            assert "text" not in pd and "params" not in pd
            assert "binary request body (1024 bytes) not included" in pd["comment"]
            continue
        charset = "iso-8859-1" if uri == "/latin" else "utf-8"
        assert pd["text"] == t["body"].decode(charset), uri
        if uri == "/form":
            assert [(p["name"], p["value"]) for p in pd["params"]] == t["form"]
            assert t["form"][1] == ("pass", "s3cr\u00e9t x")
        else:
            assert "params" not in pd
    assert got["/gz"]["postData"]["text"] == SECRET_JSON.decode()  # gzip undone
    assert got["/latin"]["postData"]["text"] == "na\u00efve caf\u00e9 \u00e0 la carte"
    assert got["/none"]["postData"]["mimeType"] == ""


def test_postdata_left_out_without_include_sensitive(bodies_cap):
    """Without --include-sensitive every request with a body has postData with its mimeType only
    (and a comment): none of the bodies' content is anywhere in the HAR; a request without a body
    has no postData (HAR 1.2: optional)."""
    har = ex.har(analyze(str(bodies_cap)))
    _validate(har)
    blob = json.dumps(har)
    assert "s3cr" not in blob and "ana&" not in blob and "carte" not in blob
    for e in _entries(har):
        pd = e["request"]["postData"]
        assert set(pd) == {"mimeType", "comment"}
        assert "left out: it may hold credentials" in pd["comment"]
    page = ex.har(analyze(str(SAMPLES / "page" / "page-h2.pcapng"), keylogs=[str(SAMPLES / "page" / "page-h2.keys")]),
                  include_sensitive=True)
    assert all("postData" not in e["request"] for e in _entries(page))  # 13 GETs


def test_postdata_cli(bodies_cap, tmp_path):
    """``wirefall export --include-sensitive`` writes the postData text; the default export does not."""
    from wirefall.ui.cli import main

    a, b = tmp_path / "a.har", tmp_path / "b.har"
    assert main(["export", str(bodies_cap), "-o", str(a), "--include-sensitive"]) in (0, None)
    assert main(["export", str(bodies_cap), "-o", str(b)]) in (0, None)
    ra = {e["request"]["url"]: e["request"]["postData"] for e in json.loads(a.read_text())["log"]["entries"]}
    rb = {e["request"]["url"]: e["request"]["postData"] for e in json.loads(b.read_text())["log"]["entries"]}
    assert ra["http://example.test/latin"]["text"] == "na\u00efve caf\u00e9 \u00e0 la carte"
    assert "text" not in rb["http://example.test/latin"]


def test_postdata_http1_nginx_form_against_tshark():
    """http1-nginx's POST /a.txt (application/x-www-form-urlencoded, 1321 bytes): text and params
    as tshark reads them (http.file_data, urlencoded-form)."""
    need_tool("tshark")
    cap = SAMPLES / "http" / "http1-nginx.pcap"
    truth = _tshark_http1_bodies(cap)
    (uri, t), = [(u, t) for u, t in truth.items() if t["body"]]
    har = ex.har(analyze(str(cap)), include_sensitive=True)
    _validate(har)
    (req,) = [e["request"] for e in _entries(har) if "postData" in e["request"]]
    assert req["url"].endswith(uri) and req["bodySize"] == len(t["body"]) == 1321
    assert req["postData"]["mimeType"] == t["content_type"] == "application/x-www-form-urlencoded"
    assert req["postData"]["text"] == t["body"].decode()
    assert [(p["name"], p["value"]) for p in req["postData"]["params"]] == t["form"]


def _tshark_h2_request_body(cap: str, client_port: int, stream: int, *opts: str) -> bytes:
    """The client's DATA of HTTP/2 ``stream`` as tshark reassembles it (``http2.body.reassembled.data``
    where the body took several frames, else the one frame's ``http2.data.data``)."""
    out = run_tool("tshark", "-r", cap, *opts, "-Y", f"http2.type==0 && http2.streamid=={stream} && tcp.srcport=={client_port}",
                   "-T", "fields", "-E", "occurrence=a", "-e", "http2.body.reassembled.data", "-e", "http2.data.data")
    rows = [ln.split("\t") for ln in out.split("\n") if ln]
    whole = [r[0] for r in rows if r[0]]
    if whole:
        return bytes.fromhex(whole[-1].replace(":", ""))
    return b"".join(bytes.fromhex(x.replace(":", "")) for r in rows for x in r[1].split(",") if x)


def test_postdata_h2c_node_against_tshark():
    """h2c-node's POST /post (application/octet-stream, 50000 bytes of text): the text is the
    bytes of the stream's DATA frames tshark reassembles."""
    need_tool("tshark")
    cap = SAMPLES / "http" / "h2c-node.pcap"
    an = analyze(str(cap))
    (e,) = [x for x in an.exchanges if x.request_body_bytes]
    conn = an.connections[e.connection]
    body = _tshark_h2_request_body(str(cap), conn.client[1], e.stream_id, "-d", f"tcp.port=={conn.server[1]},http2")
    assert len(body) == e.request_body_bytes == 50000
    har = ex.har(an, include_sensitive=True)
    (req,) = [en["request"] for en in _entries(har) if en["_exchange"] == e.id]
    assert req["postData"] == {"mimeType": "application/octet-stream", "text": body.decode()}


def test_postdata_amazon_h2_against_tshark(tmp_path):
    """The amazon load's HTTP/2 POST to fls-na.amazon.com (text/plain;charset=UTF-8, 15977 bytes):
    text is what tshark decrypts and reassembles from the stream's DATA frames; the two HTTP/3
    multipart POSTs (9133, 9194 bytes) have their whole body as text."""
    need_tool("tshark")
    cap, keys = unpack_amazon(tmp_path)
    an = analyze(str(cap), keylogs=[str(keys)])
    har = ex.har(an, include_sensitive=True)
    _validate(har)
    by_id = {en["_exchange"]: en["request"] for en in _entries(har)}
    posts = [e for e in an.exchanges if e.request_body_bytes]
    assert sorted(e.request_body_bytes for e in posts) == [9133, 9194, 15977]
    for e in posts:
        req = by_id[e.id]
        assert req["bodySize"] == e.request_body_bytes
        assert req["postData"]["mimeType"] == e.header("content-type", response=False)
        if e.protocol == "h2":
            conn = an.connections[e.connection]
            body = _tshark_h2_request_body(str(cap), conn.client[1], e.stream_id, "-o", f"tls.keylog_file:{keys}")
            assert len(body) == 15977
            assert req["postData"]["mimeType"] == "text/plain;charset=UTF-8"
            assert req["postData"]["text"] == body.decode("utf-8")
        else:
            assert req["postData"]["mimeType"].startswith("multipart/form-data; boundary=")
            assert len(req["postData"]["text"].encode()) == e.request_body_bytes
    default = ex.har(an)
    assert all(set(en["request"]["postData"]) == {"mimeType", "comment"} for en in _entries(default) if "postData" in en["request"])


# ------------------------------------------------------------------- TLS record overhead


def _tls_records(cap: Path | str, *opts: str) -> dict[int, dict]:
    """tshark's TLS records per tcp.stream: {stream: {"ports": (client, server), "suite", "version",
    "comp", "records": [(direction, content type, length)]}} (direction 0 client→server)."""
    out: dict[int, dict] = {}
    rows = run_tool("tshark", "-r", str(cap), *opts, "-Y", "tls", "-T", "fields", "-E", "occurrence=a", "-e", "tcp.stream",
                    "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tls.record.content_type", "-e", "tls.record.opaque_type",
                    "-e", "tls.record.length", "-e", "tls.handshake.type", "-e", "tls.handshake.ciphersuite",
                    "-e", "tls.handshake.version", "-e", "tls.handshake.comp_method")
    for ln in rows.split("\n"):
        if not ln:
            continue
        st, sp, dp, ct, ot, ln_, ht, cs, ver, comp = (ln.split("\t") + [""] * 10)[:10]
        s = out.setdefault(int(st), {"records": []})
        hts = [int(x) for x in ht.split(",") if x]
        if 1 in hts:
            s["ports"] = (int(sp), int(dp))
        if 2 in hts:
            s["suite"], s["version"] = int(cs.split(",")[0], 16), int(ver.split(",")[0], 16)
            s["comp"] = int(comp.split(",")[-1])
        types = [int(x) for x in (ct or ot).split(",") if x]
        client = s.get("ports", (None,))[0] == int(sp)
        for t, n in zip(types, [int(x) for x in ln_.split(",") if x]):
            s["records"].append((0 if client else 1, t, n))
    return out


def _stats(cap, keys=None):
    return S.compute(analyze(str(cap), keylogs=[str(keys)] if keys else None))


def _by_ports(st, an_conns) -> dict:
    return {tuple(int(p) for p in (c.client[1], c.server[1])): b for c, b in zip(an_conns, st.connections)}


def test_record_protection_from_iana_names():
    """Every TLS 1.0–1.2 suite of the registry with a stream, CBC or AEAD bulk cipher has its
    record protection: the MAC by the name's hash, 8-byte blocks for (3)DES/IDEA/RC2, 16 for
    AES/Camellia/SEED/ARIA; AEAD 8-byte explicit nonce (none for ChaCha20) and its tag."""
    macs = {"MD5": 16, "SHA": 20, "SHA256": 32, "SHA384": 48}
    for cs, name in CIPHER_SUITES.items():
        rp = record_protection(cs)
        tail = name.partition("_WITH_")[2]
        if not name.startswith("TLS_") or not tail or any(x in tail for x in ("GOST", "28147", "KUZNYECHIK", "MAGMA", "SALSA20", "SM4", "SM1")):
            assert rp is None, name
            continue
        assert rp is not None, name
        if "_GCM" in tail or "_CCM" in tail or "POLY1305" in tail:
            assert rp.kind == "aead" and rp.nonce == (0 if "CHACHA20" in tail else 8)
            assert rp.tag == (8 if "CCM_8" in tail else 16), name
        elif tail.startswith(("RC4", "NULL")):
            assert rp.kind == "stream" and rp.block == 0
            assert rp.mac == (0 if tail == "NULL_NULL" else macs[tail.rsplit("_", 1)[1]]), name
        else:
            assert rp.kind == "cbc" and rp.mac == macs[tail.rsplit("_", 1)[1]], name
            assert rp.block == (8 if tail.startswith(("3DES", "DES", "IDEA", "RC2")) else 16), name
    assert record_protection(0xC012) == ("cbc", 8, 20, 0, 0)  # ECDHE_RSA_WITH_3DES_EDE_CBC_SHA
    assert record_protection(0xC011) == ("stream", 0, 20, 0, 0)  # ECDHE_RSA_WITH_RC4_128_SHA
    assert record_protection(0x0096).minimum(0x0303) == 16 + 20 + 1  # SEED_CBC_SHA, TLS 1.2
    assert record_protection(0x0096).minimum(0x0301) == 20 + 1  # TLS 1.0: implicit IV


def test_tls_ciphers_overhead_from_record_lengths():
    """retina/tls_ciphers.pcap (73 suites, no keys, DEFLATE compression): every connection's
    overhead from tshark's records — 5 per record, and per protected record (after the
    ChangeCipherSpec) the suite's least overhead (``minimum``); exact for stream and AEAD suites,
    a lower bound for CBC ones (the Finished and alerts are compressed: their plaintext length
    is not known).  The reviewer's connections: 3DES ≥ 117, RC4 exactly 90 (before 30 each),
    AES_256_CBC_SHA384 ≥ 225 (the reviewer's 253 took the compressed Finished and alert for 16
    and 2 bytes)."""
    need_tool("tshark")
    cap = shared("retina/tls_ciphers.pcap")
    truth = _tls_records(cap)
    an = analyze(str(cap))
    st = S.compute(an)
    blocks = _by_ports(st, an.connections)
    assert len(truth) == 73
    for stream, t in truth.items():
        assert t["version"] == 0x0303
        assert t["comp"] == (0 if stream in (64, 71, 72) else 1)  # (DEFLATE but for three)
        rp = record_protection(t["suite"])
        assert rp is not None, hex(t["suite"])
        want = [0, 0]
        ccs, finished = [False, False], [False, False]
        for d, ctype, n in t["records"]:
            ov = 0
            if ccs[d] and ctype != 20:  # protected
                ov = rp.minimum(0x0303)
                if rp.kind == "cbc" and not t["comp"]:  # the Finished (16 bytes) and alerts (2) count exactly
                    if ctype == 21:
                        ov = n - 2
                    elif ctype == 22 and not finished[d]:
                        ov = n - 16
                finished[d] = finished[d] or ctype == 22
            want[d] += 5 + ov
            ccs[d] = ccs[d] or ctype == 20
        b = blocks[t["ports"]]
        assert b.tls_record_overhead == want, (stream, hex(t["suite"]))
        exact = rp.kind != "cbc"  # (every connection has application data records both ways)
        assert b.tls_record_overhead_exact == [exact, exact], stream
    # RC2_CBC_40_MD5 without compression: the client's Finished 48 - 16 and close_notify 32 - 2
    assert truth[71]["suite"] == 0x0006 and blocks[truth[71]["ports"]].tls_record_overhead[0] == 5 * 5 + 32 + 30 + (8 + 16 + 1)
    assert truth[24]["suite"] == 0xC012 and blocks[truth[24]["ports"]].tls_record_overhead[0] == 117
    assert truth[59]["suite"] == 0xC011 and blocks[truth[59]["ports"]].tls_record_overhead[0] == 90
    assert truth[2]["suite"] == 0xC028 and blocks[truth[2]["ports"]].tls_record_overhead[0] == 225
    assert st.capture.tls_record_overhead_exact == [False, False]


CBC = ["tls12_cbc_sha1_noetm", "tls12_cbc_sha1_etm", "tls12_cbc_sha256_noetm", "tls12_cbc_sha384_etm", "tls10_cbc_sha1",
       "tls11_cbc_sha1"]
AEAD12 = ["tls12_aes128gcm", "tls12_aes256gcm", "tls12_aes128ccm", "tls12_chacha20"]


@pytest.mark.parametrize("name", CBC + AEAD12)
def test_overhead_without_keys_against_decrypted(name):
    """The same capture without and with its key log: decrypted, the overhead is exact (flag
    true); without keys, TLS 1.2 AEAD suites give the very same figure (exact: no padding), and
    CBC suites a lower bound that misses only the application-data records' padding beyond one
    byte — less than one block per such record (tshark's records): the Finished and the
    close_notify alert count exactly (16 and 2 bytes of plaintext), which one byte of padding did
    not (11 + 9 bytes short on tls12_cbc_sha1_noetm's client side)."""
    need_tool("tshark")
    cap, keys = TLS / f"{name}.pcap", TLS / f"{name}.keys"
    exact, est = _stats(cap, keys), _stats(cap)
    (xb,), (eb,) = exact.connections, est.connections
    assert xb.tls_record_overhead_exact == [True, True]
    t = next(iter(_tls_records(cap).values()))
    assert t["comp"] == 0
    rp = record_protection(t["suite"])
    if name in AEAD12:
        assert eb.tls_record_overhead == xb.tls_record_overhead
        assert eb.tls_record_overhead_exact == [True, True]
        return
    assert rp is not None and rp.kind == "cbc"
    for d in (0, 1):
        # application-data records: after CCS, content type 23 (the rest — handshake = Finished, alerts — are exact)
        ccs, app = False, 0
        for dd, ctype, _n in t["records"]:
            if dd != d:
                continue
            app += ccs and ctype == 23
            ccs = ccs or ctype == 20
        gap = xb.tls_record_overhead[d] - eb.tls_record_overhead[d]
        assert 0 <= gap <= (rp.block - 1) * app, (d, gap, app)
        assert eb.tls_record_overhead_exact[d] is (app == 0)


def test_decrypted_figures_kept():
    """The decrypted captures' figures the reviewer checked by hand stay, exact."""
    for name, want in (("tls12_aes128gcm", [102, 146]), ("tls12_cbc_sha1_noetm", [162, 235]), ("tls10_cbc_sha1", [167, 269])):
        (b,) = _stats(TLS / f"{name}.pcap", TLS / f"{name}.keys").connections
        assert b.tls_record_overhead == want and b.tls_record_overhead_exact == [True, True], name


def test_tls13_without_keys_is_a_lower_bound():
    (b,) = _stats(TLS / "tls13_aes128gcm.pcap").connections
    (x,) = _stats(TLS / "tls13_aes128gcm.pcap", TLS / "tls13_aes128gcm.keys").connections
    assert b.tls_record_overhead_exact == [False, False] and x.tls_record_overhead_exact == [True, True]
    assert all(e <= v for e, v in zip(b.tls_record_overhead, x.tls_record_overhead))


def test_stats_text_and_json_say_lower_bound(capsys):
    """The text tables put ≥ before a lower bound and say why under the Traffic table; the JSON
    has tls_record_overhead_exact per direction (null without TLS over TCP)."""
    st = _stats(TLS / "tls12_cbc_sha1_noetm.pcap")
    text = S.render_text(st)
    assert "≥161 / ≥218" in text and "≥: a lower bound" in text
    d = S.to_dict(st)
    assert d["capture"]["tls_record_overhead_exact"] == [False, False]
    assert d["connections"][0]["tls_record_overhead_exact"] == [False, False]
    st2 = _stats(TLS / "tls12_cbc_sha1_noetm.pcap", TLS / "tls12_cbc_sha1_noetm.keys")
    text2 = S.render_text(st2)
    assert "162 / 235" in text2 and "≥" not in text2.split("Header bytes")[0]
    assert S.to_dict(st2)["connections"][0]["tls_record_overhead_exact"] == [True, True]
    h2c = S.to_dict(_stats(SAMPLES / "http" / "h2c-node.pcap"))
    assert h2c["capture"]["tls_record_overhead_exact"] is None
    from wirefall.ui.cli import main

    assert main(["stats", "--json", str(TLS / "tls12_cbc_sha1_noetm.pcap")]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["connections"][0]["tls_record_overhead_exact"] == [False, False]


def test_bound_survives_pickle_and_parallel():
    """The flag travels with record_overhead: the cache pickles the analysis, parallel workers send theirs."""
    ro = RecordOverhead([3, 4], [True, False])
    back = pickle.loads(pickle.dumps(ro, protocol=5))
    assert back == [3, 4] and back.bound == [True, False] and isinstance(back, RecordOverhead)
    assert json.dumps(back) == "[3, 4]"
    cap = shared("retina/tls_ciphers.pcap")
    serial, par = analyze(str(cap)), analyze(str(cap), workers=2)
    assert [overhead_bound(c.tls) for c in serial.connections] == [overhead_bound(c.tls) for c in par.connections]
    assert any(overhead_bound(c.tls)[0] for c in par.connections)


# --------------------------------------------------------------------------- stats frames


def test_stats_frames_counts_tls_records_and_http2_frames():
    """docs/JSON.md: a connection's ``frames`` is every entry ``wirefall frames`` lists for it —
    page-h2 connection 0: its 64 TLS records and the 81 HTTP/2 frames in them (tshark's counts)."""
    need_tool("tshark")
    cap, keys = SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "page" / "page-h2.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    st = S.compute(an)
    rows = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "tls", "-T", "fields", "-E", "occurrence=a",
                    "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tls.record.content_type", "-e", "tls.record.opaque_type",
                    "-e", "http2.type")
    for c, b in zip(an.connections, st.connections):
        ports = {c.client[1], c.server[1]}
        tls = h2 = 0
        for ln in rows.split("\n"):
            if not ln:
                continue
            sp, dp, ct, ot, ht = (ln.split("\t") + [""] * 5)[:5]
            if {int(sp), int(dp)} == ports:
                tls += len([x for x in (ct or ot).split(",") if x])
                h2 += len([x for x in ht.split(",") if x])
        assert b.frames == tls + h2, (c.id, b.frames, tls, h2)
        if c.id == 0:
            assert (b.frames, tls, h2) == (145, 64, 81)


def test_summary_json_says_when_the_overhead_is_a_lower_bound():
    """summary --json's connections[].tls.record_overhead_exact (additive) is the stats block's
    flag for that connection: on retina/tls_ciphers.pcap, true for the stream and AEAD suites
    and false for the CBC ones (their padding unknown without keys: tshark's records, above)."""
    from wirefall.analyzer.jsonout import connection_dict

    need_tool("tshark")
    cap = shared("retina/tls_ciphers.pcap")
    truth = _tls_records(cap)
    an = analyze(str(cap))
    seen = 0
    for c in an.connections:
        if c.tls is None:
            continue
        d = connection_dict(c)["tls"]
        ports = (int(c.client[1]), int(c.server[1]))
        (t,) = [t for t in truth.values() if t["ports"] == ports]
        exact = record_protection(t["suite"]).kind != "cbc"
        assert d["record_overhead_exact"] == [exact, exact], t["suite"]
        seen += 1
    assert seen == 73
    an = analyze(str(SAMPLES / "tls" / "tls12_aes128gcm.pcap"), keylogs=[str(SAMPLES / "tls" / "tls12_aes128gcm.keys")])
    (c,) = [c for c in an.connections if c.tls is not None]
    assert connection_dict(c)["tls"]["record_overhead_exact"] == [True, True]  # (decrypted: exact)
