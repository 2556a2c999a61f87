"""TLS: record layer, handshake facts and decryption, checked against tshark on the same
captures (third-party ones in ../shared/captures, and loopback captures made by
scripts/make_tls_captures.sh with openssl s_server/s_client, curl and nghttpd)."""
from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import wirefall.analyzer.sessions.tls as tls_session
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures" / "tls"

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def shared(*parts) -> Path:
    if not SHARED.is_dir():
        pytest.skip("third-party captures folder absent")
    return SHARED.joinpath(*parts)


def tshark(*args: str) -> str:
    r = subprocess.run(["tshark", *args], capture_output=True, text=True, check=True)
    return r.stdout


# ------------------------------------------------------------------ wirefall side


class Collector:
    """Stands in for the inner session: keeps the decrypted bytes per direction and checks
    that the plaintext offsets are contiguous."""

    def __init__(self, conn, store):
        self.buf = store.setdefault(conn.id, [bytearray(), bytearray()])
        self.packets = store.setdefault(("packets", conn.id), [[], []])

    def data(self, direction, data, offset, packet):
        assert offset == len(self.buf[direction]), "plaintext offsets must be contiguous"
        self.buf[direction] += data
        self.packets[direction].append(packet)

    def gap(self, *a):
        pass

    def end(self):
        pass


def run(cap: Path, keylogs: list[Path] | None, monkeypatch=None):
    """Analyse; returns (Analysis, {conn id: [c2s bytes, s2c bytes]})."""
    store: dict = {}
    orig = tls_session.TlsSession._make_inner
    tls_session.TlsSession._make_inner = lambda self: Collector(self.conn, store)
    try:
        an = analyze(str(cap), keylogs=[str(k) for k in keylogs or []])
    finally:
        tls_session.TlsSession._make_inner = orig
    return an, store


# ------------------------------------------------------------------ tshark side


def tshark_streams(cap: Path) -> dict[int, tuple[int, int]]:
    """tcp.stream -> (client port, server port), from the packets carrying a ClientHello."""
    out = {}
    for line in tshark("-r", str(cap), "-Y", "tcp && tls.handshake.type == 1", "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.dstport").splitlines():
        s, sp, dp = line.split("\t")
        out.setdefault(int(s), (int(sp), int(dp)))
    return out


def tshark_follow_tls(cap: Path, keylog: Path, stream: int, client_port: int) -> tuple[bytes, bytes]:
    """Decrypted bytes per direction from ``-z follow,tls,raw``.  Lines without a leading tab
    belong to "Node 0"; tshark 4.0 names Node 0 by address:port, which tells its direction."""
    text = tshark("-r", str(cap), "-o", f"tls.keylog_file:{keylog}", "-q", "-z", f"follow,tls,raw,{stream}")
    m = re.search(r"^Node 0: .*:(\d+)$", text, re.M)
    node0_is_client = m is not None and int(m.group(1)) == client_port
    c2s, s2c = bytearray(), bytearray()
    body = text.split("=" * 67)[1] if text.count("=" * 67) >= 2 else ""
    for line in body.splitlines():
        if not line or line.startswith(("Follow:", "Filter:", "Node ")):
            continue
        tab = line.startswith("\t")
        data = bytes.fromhex(line.strip())
        if tab != node0_is_client:
            c2s += data
        else:
            s2c += data
    return bytes(c2s), bytes(s2c)


def conn_by_ports(an, cport: int, sport: int):
    for c in an.connections:
        if c.transport == "tcp" and c.client[1] == cport and c.server[1] == sport:
            return c
    return None


def check_follow_equal(cap: Path, keylog: Path, keylogs_for_wirefall=None, streams=None) -> int:
    """Every TLS stream tshark sees: wirefall's decrypted bytes == tshark's, both directions.
    Returns the number of plaintext bytes compared (so callers can require > 0)."""
    an, store = run(cap, keylogs_for_wirefall or [keylog])
    compared = 0
    smap = tshark_streams(cap)
    assert smap, "tshark found no ClientHello"
    for s, (cp, sp) in sorted(smap.items()):
        if streams is not None and s not in streams:
            continue
        conn = conn_by_ports(an, cp, sp)
        assert conn is not None, f"stream {s}: no connection {cp}->{sp}"
        want_c, want_s = tshark_follow_tls(cap, keylog, s, cp)
        got = store.get(conn.id, [b"", b""])
        assert bytes(got[0]) == want_c, f"stream {s} c2s: {len(got[0])} bytes vs tshark {len(want_c)}"
        assert bytes(got[1]) == want_s, f"stream {s} s2c: {len(got[1])} bytes vs tshark {len(want_s)}"
        if want_c or want_s:
            assert conn.tls.decrypted, f"stream {s}: not marked decrypted ({conn.tls.reason})"
        compared += len(want_c) + len(want_s)
    return compared


# ------------------------------------------------------------------ third-party captures


@needs_tshark
@pytest.mark.parametrize("name", ["tls12", "tls13"])
def test_illustrated_decrypts_like_tshark(name):
    cap, key = shared(name, "capture.pcap"), shared(name, "keylog.txt")
    assert check_follow_equal(cap, key) > 0
    an, store = run(cap, [key])
    (conn,) = [c for c in an.connections if c.tls]
    assert bytes(store[conn.id][0]) == b"ping" and bytes(store[conn.id][1]) == b"pong"
    info = conn.tls
    assert info.sni == "example.ulfheim.net"
    assert info.certificate_subject and "CN=example.ulfheim.net" in info.certificate_subject
    assert info.reason is None and info.decrypted
    assert conn.tls_start == info.client_hello_time and conn.tls_end is not None and conn.tls_end > conn.tls_start


@needs_tshark
@pytest.mark.parametrize("name", ["tls12", "tls13"])
def test_illustrated_records_like_tshark(name):
    """One frame per record, at the packet tshark shows it in, with tshark's record length and
    content type (decrypted TLS 1.3 records: tshark's inner content type)."""
    cap, key = shared(name, "capture.pcap"), shared(name, "keylog.txt")
    an, _ = run(cap, [key])
    ours = [(f.packet, f.length) for f in an.frames if f.protocol == "tls"]
    rows = tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tls", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;",
                  "-e", "frame.number", "-e", "tls.record.length").splitlines()
    theirs = []
    for r in rows:
        num, lens = r.split("\t")
        theirs += [(int(num), int(x)) for x in lens.split(";")]
    assert ours == theirs and len(ours) >= 10


def _retina_rows(cap):
    rows = tshark("-r", str(cap), "-Y", "tls.handshake.type == 2", "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport",
                  "-e", "tls.handshake.ciphersuite").splitlines()
    ssl2 = {int(x) for x in tshark("-r", str(cap), "-Y", "tls.record.version == 0x0002", "-T", "fields", "-e", "tcp.srcport").split()}
    return rows, ssl2


def _check_retina(an, rows, only):
    n = 0
    for r in rows:
        sp, cp, cs = r.split("\t")
        if not only(int(cp)):
            continue
        conn = conn_by_ports(an, int(cp), int(sp))
        assert conn is not None and conn.tls is not None, f"connection {cp}->{sp} not recognised as TLS"
        assert conn.tls.cipher_suite_id == int(cs, 16), (cp, cs)
        assert not conn.tls.decrypted
        assert conn.tls.reason in ("no key log given", "no key for this client random") or conn.tls.reason.startswith("unsupported cipher suite "), conn.tls.reason
        assert not conn.notes, conn.notes
        n += 1
    return n


@needs_tshark
def test_retina_cipher_suites_like_tshark():
    cap = shared("retina", "tls_ciphers.pcap")
    an, store = run(cap, [])
    rows, ssl2 = _retina_rows(cap)
    assert len(rows) == 73 and len(ssl2) == 3
    assert _check_retina(an, rows, lambda cp: cp not in ssl2) == 70
    assert not store  # nothing decrypted


@needs_tshark
def test_retina_sslv2_hello_session(monkeypatch):
    """The 3 connections that open with an SSLv2-compatible ClientHello (first byte 0x80, which
    sniff_stream leaves to SPDY): the TLS session handles them once it is chosen."""
    import wirefall.analyzer.sessions as S

    orig = S.sniff_stream

    def sniff(head, direction):
        if len(head) >= 5 and head[0] & 0x80 and head[2] == 1 and head[3] == 3 and direction == 0:
            return "tls"
        return orig(head, direction)

    monkeypatch.setattr(S, "sniff_stream", sniff)
    cap = shared("retina", "tls_ciphers.pcap")
    an, _ = run(cap, [])
    rows, ssl2 = _retina_rows(cap)
    assert _check_retina(an, rows, lambda cp: cp in ssl2) == 3
    for c in an.connections:
        if c.client[1] in ssl2:
            f = [f for f in an.frames if f.connection == c.id][0]
            assert f.type == "SSLV2_CLIENT_HELLO" and c.tls.client_random is not None


@needs_tshark
def test_retina_sslv2_hello_recognised_by_pipeline():
    """Needs sniff_stream (analyzer/sessions/__init__.py) to tell an SSLv2-compatible hello
    (0x80 LEN 0x01 0x03 ..) from a SPDY control frame (0x80 0x02|0x03 TYPE)."""
    cap = shared("retina", "tls_ciphers.pcap")
    an, _ = run(cap, [])
    rows, ssl2 = _retina_rows(cap)
    assert _check_retina(an, rows, lambda cp: cp in ssl2) == 3


def _amazon():
    cap = shared("pageload-amazon", "amazon1.cap.gz")
    key = shared("pageload-amazon", "amazon1.key_log.txt.gz")
    return cap, key


@pytest.fixture(scope="module")
def amazon(tmp_path_factory):
    cap, key = _amazon()
    d = tmp_path_factory.mktemp("amazon")
    (d / "amazon1.cap").write_bytes(gzip.decompress(cap.read_bytes()))
    (d / "keys.txt").write_bytes(gzip.decompress(key.read_bytes()))
    return d / "amazon1.cap", d / "keys.txt"


@needs_tshark
def test_amazon_sni_alpn_like_tshark(amazon):
    cap, key = amazon
    an, _ = run(cap, [key])
    ch = tshark("-r", str(cap), "-Y", "tcp && tls.handshake.type == 1", "-T", "fields", "-E", "aggregator=,", "-e", "tcp.srcport", "-e", "tcp.dstport",
                "-e", "tls.handshake.extensions_server_name", "-e", "tls.handshake.extensions_alpn_str").splitlines()
    # selected ALPN: ServerHello (TLS 1.2) or EncryptedExtensions (TLS 1.3, visible decrypted)
    sh = tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tcp && (tls.handshake.type == 2 || tls.handshake.type == 8)",
                "-T", "fields", "-E", "aggregator=,", "-e", "tcp.srcport", "-e", "tcp.dstport",
                "-e", "tls.handshake.extensions_alpn_str", "-e", "tls.handshake.ciphersuite").splitlines()
    offered = 0
    for r in ch:  # every ClientHello's SNI is the connection's, as tshark reads it
        cp, sp, sni, _alpn = r.split("\t")
        assert (conn_by_ports(an, int(cp), int(sp)).tls.sni or "") == sni
        offered += 1
    assert offered >= 5
    selected: dict = {}
    for r in sh:
        sp, cp, alpn, cs = r.split("\t")
        d = selected.setdefault((int(cp), int(sp)), {"alpn": "", "cs": None})
        d["alpn"] = d["alpn"] or alpn
        d["cs"] = d["cs"] or (cs and int(cs, 16))
    assert len(selected) >= 5
    for (cp, sp), d in selected.items():
        conn = conn_by_ports(an, cp, sp)
        assert (conn.tls.alpn or "") == d["alpn"]
        assert conn.tls.cipher_suite_id == d["cs"]
        assert conn.protocol == (d["alpn"] or "tls")
        assert conn.tls.decrypted and conn.tls.reason is None


@needs_tshark
def test_amazon_decrypts_like_tshark(amazon):
    cap, key = amazon
    smap = tshark_streams(cap)
    streams = sorted(smap)[:4]
    assert check_follow_equal(cap, key, streams=set(streams)) > 10000


# ------------------------------------------------------------------ our loopback captures


def sample_names():
    return sorted(p.stem for p in SAMPLES.glob("*.pcap"))


@needs_tshark
@pytest.mark.parametrize("name", sample_names())
def test_sample_decrypts_like_tshark(name):
    cap, key = SAMPLES / f"{name}.pcap", SAMPLES / f"{name}.keys"
    assert check_follow_equal(cap, key) > 0
    an, _ = run(cap, [key])
    for c in an.connections:
        if c.tls is not None:
            assert c.tls.decrypted and c.tls.reason is None, (c.id, c.tls.reason)
            assert not c.notes, c.notes
    # one frame per record, where tshark shows it, with its length
    ours = sorted((f.packet, f.offset, f.length) for f in an.frames if f.protocol == "tls")
    rows = tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tls", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;",
                  "-e", "frame.number", "-e", "tls.record.length").splitlines()
    theirs = [(int(n), int(x)) for n, ls in (r.split("\t") for r in rows) for x in ls.split(";")]
    assert [(p, ln) for p, _, ln in ours] == theirs


def _frames(an, conn):
    return [f for f in an.frames if f.protocol == "tls" and f.connection == conn.id]


@needs_tshark
def test_samples_handshake_facts():
    """What the tools did (per scripts/make_tls_captures.sh) and tshark sees, wirefall sees."""
    def load(name):
        cap, key = SAMPLES / f"{name}.pcap", SAMPLES / f"{name}.keys"
        an, store = run(cap, [key])
        return cap, key, an, store, [c for c in an.connections if c.tls]

    # HelloRetryRequest
    cap, key, an, _, (c,) = load("tls13_hrr")
    hrr = tshark("-r", str(cap), "-Y", "tls.handshake.random == cf:21:ad:74:e5:9a:61:11:be:1d:8c:02:1e:65:b8:91:c2:a2:11:16:7a:bb:8c:5e:07:9e:09:e2:c8:a8:33:9c", "-T", "fields", "-e", "frame.number")
    assert hrr.strip() and c.tls.hello_retry and c.tls.version == "TLS 1.3"
    # KeyUpdate: same records as tshark, and both directions updated
    cap, key, an, _, (c,) = load("tls13_keyupdate")
    theirs = [int(x) for x in tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tls.handshake.type == 24", "-T", "fields", "-e", "frame.number").split()]
    ours = [f for f in _frames(an, c) if f.fields.get("key_update")]
    assert [f.packet for f in ours] == theirs and len(theirs) >= 3
    assert {f.direction for f in ours} == {0, 1}
    # 0-RTT: the early data line decrypted and flagged
    cap, key, an, store, conns = load("tls13_0rtt")
    early = [f for f in an.frames if f.protocol == "tls" and f.fields.get("early_data") and f.fields.get("decrypted")]
    assert early and bytes(store[conns[1].id][0]).startswith(b"early data GET\n")
    assert conns[1].tls.resumed and not conns[0].tls.resumed
    # resumption
    for name, n in (("tls12_resumed_sessionid", 6), ("tls12_resumed_ticket", 2), ("tls13_resumed", 2)):
        cap, key, an, _, conns = load(name)
        assert [c.tls.resumed for c in conns] == [False] + [True] * (n - 1), name
        assert all(c.tls.certificate_subject for c in conns[:1])
    # encrypt-then-MAC and extended master secret: as negotiated in the hellos tshark shows
    for name in ("tls12_cbc_sha1_etm", "tls12_cbc_sha1_noetm", "tls12_noems", "tls12_aes128gcm"):
        cap = SAMPLES / f"{name}.pcap"
        exts = tshark("-r", str(cap), "-Y", "tls.handshake.type == 2", "-T", "fields", "-e", "tls.handshake.extension.type").split(",")
        exts = {int(x) for x in ",".join(exts).replace("\n", ",").split(",") if x.strip()}
        assert (22 in exts) == ("etm" in name and "noetm" not in name), name
        assert (23 in exts) == (name != "tls12_noems"), name
    # TLS 1.2: ALPN in the ServerHello; NPN chosen in the encrypted NextProtocol message
    cap, key, an, _, (c,) = load("tls12_alpn")
    assert c.tls.alpn == "http/1.1" and c.tls.alpn_offered == ["http/1.1"] and c.protocol == "http/1.1"
    cap, key, an, _, (c,) = load("tls12_npn")
    npn = tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tls.handshake.type == 67", "-T", "fields", "-e", "tls.handshake.npn_selected_protocol").strip()
    assert npn == "http/1.1" and c.tls.npn == npn and c.tls.alpn is None and c.protocol == npn
    # ALPN from curl / nghttpd
    for name, alpn in (("curl_http11", "http/1.1"), ("curl_h2_nghttpd", "h2")):
        cap, key, an, _, (c,) = load(name)
        assert c.tls.alpn == alpn and c.protocol == alpn and alpn in c.tls.alpn_offered


@needs_tshark
@pytest.mark.parametrize("name", ["tls12_resumed_sessionid", "tls12_resumed_ticket"])
def test_resumption_with_only_the_first_master_secret(name, tmp_path):
    """Key log holding only the full handshake's CLIENT_RANDOM: the resumed connection is
    decrypted through the session id / ticket, as tshark does."""
    cap, key = SAMPLES / f"{name}.pcap", SAMPLES / f"{name}.keys"
    first = [ln for ln in key.read_text().splitlines() if ln.startswith("CLIENT_RANDOM")][:1]
    k = tmp_path / "first.keys"
    k.write_text("\n".join(first) + "\n")
    assert check_follow_equal(cap, k) > 0
    an, store = run(cap, [k])
    last = [c for c in an.connections if c.tls][-1]
    assert last.tls.resumed and last.tls.decrypted and store[last.id][1]


@needs_tshark
def test_no_keys_gives_timeline_and_reason():
    cap = SAMPLES / "tls13_aes128gcm.pcap"
    an, store = run(cap, [])
    (c,) = [c for c in an.connections if c.tls]
    assert not store and not c.tls.decrypted and c.tls.reason == "no key log given" and c.tls.reason.kind == "no_keylog"
    rows = tshark("-r", str(cap), "-Y", "tls", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;", "-e", "frame.number", "-e", "tls.record.length").splitlines()
    theirs = [(int(n), int(x)) for n, ls in (r.split("\t") for r in rows) for x in ls.split(";")]
    assert [(f.packet, f.length) for f in _frames(an, c)] == theirs
    # TLS 1.3 without keys: the client's first encrypted record (its Finished) ends the handshake
    fin = tshark("-r", str(cap), "-o", f"tls.keylog_file:{SAMPLES / 'tls13_aes128gcm.keys'}", "-Y", "tls.handshake.type == 20", "-T", "fields", "-e", "frame.time_epoch").split()
    assert c.tls_end == pytest.approx(max(float(x) for x in fin), abs=1e-6)


@needs_tshark
def test_gap_stops_one_direction_and_says_where(tmp_path):
    """A server segment deleted from the capture (editcap): the reason names the stream offset
    tshark gives for the lost segment; the client direction still matches tshark byte for
    byte; the server plaintext before the gap is a prefix of tshark's full stream."""
    src, key = SAMPLES / "tls13_aes128gcm.pcap", SAMPLES / "tls13_aes128gcm.keys"
    rows = [r.split("\t") for r in tshark("-r", str(src), "-Y", "tcp.len > 9000", "-T", "fields", "-e", "frame.number", "-e", "tcp.seq", "-e", "tcp.srcport").splitlines()]
    num, seq, sport = rows[-1]  # the second segment of the response body
    cap = tmp_path / "gap.pcap"
    subprocess.run(["editcap", str(src), str(cap), num], check=True, capture_output=True)
    an, store = run(cap, [key])
    (c,) = [c for c in an.connections if c.tls]
    assert c.server[1] == int(sport)
    assert c.tls.reason == f"gap in the stream at offset {int(seq) - 1}"
    full_c, full_s = tshark_follow_tls(src, key, 0, c.client[1])
    assert bytes(store[c.id][0]) == full_c
    got_s = bytes(store[c.id][1])
    assert got_s and full_s.startswith(got_s) and len(got_s) < len(full_s)
    # the record layer found its way back: the close_notify after the gap is a frame
    assert any(f.offset > int(seq) for f in an.frames if f.connection == c.id and f.direction == 1 and f.protocol == "tls")


def test_bad_input_never_raises():
    from hypothesis import given, settings, strategies as st

    from wirefall.dissectors import tls as T

    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=300))
    def parsers(b):
        for fn in (T.parse_client_hello, T.parse_server_hello, T.parse_encrypted_extensions, T.parse_sslv2_client_hello, T.parse_alert):
            assert isinstance(fn(b), dict)
        T.parse_certificate(b, True)
        T.parse_certificate(b, False)
        T.parse_new_session_ticket(b, True)
        T.parse_handshake_messages(b)
        r = T.RecordReader()
        for i in range(0, len(b), 7):
            r.feed(b[i : i + 7], i, 1 + i)

    parsers()


def test_mangled_captures_never_raise(tmp_path):
    """Flip bytes inside TLS records of a real capture: decoding goes on, problems are noted."""
    import random

    src = (SAMPLES / "tls12_cbc_sha1_etm.pcap").read_bytes()
    key = SAMPLES / "tls12_cbc_sha1_etm.keys"
    rnd = random.Random(7)
    failures = 0
    for i in range(40):
        b = bytearray(src)
        for _ in range(1 + i % 5):
            p = rnd.randrange(200, len(b))
            b[p] ^= 1 << rnd.randrange(8)
        cap = tmp_path / f"m{i}.pcap"
        cap.write_bytes(bytes(b))
        an, _ = run(cap, [key])  # must not raise
        c = next(c for c in an.connections if c.tls)
        failures += c.tls.reason is not None and c.tls.reason.startswith("decryption failed at record")
    assert failures > 0  # some flips hit ciphertext, and say so


@needs_tshark
@pytest.mark.parametrize("name", ["tls13_aes128gcm", "tls13_hrr", "tls12_cbc_sha1_etm", "tls12_resumed_ticket", "tls13_0rtt", "curl_h2_nghttpd"])
def test_sample_handshake_times_like_tshark(name):
    """ClientHello / ServerHello / Finished times per connection = the times of the packets
    where tshark shows those messages (the last ServerHello after a HelloRetryRequest)."""
    cap, key = SAMPLES / f"{name}.pcap", SAMPLES / f"{name}.keys"
    an, _ = run(cap, [key])
    rows = tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tls.handshake", "-T", "fields", "-E", "aggregator=,",
                  "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "frame.time_epoch", "-e", "tls.handshake.type").splitlines()
    seen: dict = {}
    for r in rows:
        sp, dp, t, types = r.split("\t")
        for ty in types.split(","):
            seen.setdefault((int(sp), int(dp), int(ty)), []).append(float(t))
    n = 0
    for c in an.connections:
        if not c.tls:
            continue
        cp, sp = c.client[1], c.server[1]
        info = c.tls
        assert info.client_hello_time == pytest.approx(seen[(cp, sp, 1)][0], abs=1e-6)
        assert info.server_hello_time == pytest.approx(seen[(sp, cp, 2)][-1], abs=1e-6)
        assert info.client_finished_time == pytest.approx(seen[(cp, sp, 20)][0], abs=1e-6)
        assert info.server_finished_time == pytest.approx(seen[(sp, cp, 20)][0], abs=1e-6)
        assert c.tls_start == info.client_hello_time
        assert c.tls_end == max(info.client_finished_time, info.server_finished_time)
        n += 1
    assert n >= 1


@needs_tshark
def test_capture_starting_mid_connection(tmp_path):
    """Handshake cut off (editcap keeps the packets after it): every record still becomes a
    frame where tshark shows one, none is read as plaintext, and the reason says why."""
    src, key = SAMPLES / "tls12_aes128gcm.pcap", SAMPLES / "tls12_aes128gcm.keys"
    first_app = tshark("-r", str(src), "-Y", "tls.record.content_type == 23 && tls.record.length > 9000", "-T", "fields", "-e", "frame.number").split()[0]
    cap = tmp_path / "mid.pcap"
    subprocess.run(["editcap", "-r", str(src), str(cap), f"{first_app}-1000"], check=True, capture_output=True)
    an, store = run(cap, [key])
    (c,) = [c for c in an.connections if c.tls]
    # (its first records were tried against the key log's TLS 1.3 secrets: the reason says so, and why TLS 1.2 cannot be)
    assert c.tls.reason == "no ClientHello in the capture; " + tls_session._TRIED and not store
    frames = [f for f in an.frames if f.protocol == "tls"]
    assert all(f.fields["encrypted"] and "alert" not in f.fields for f in frames)
    rows = tshark("-r", str(cap), "-Y", "tls", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;", "-e", "frame.number", "-e", "tls.record.length").splitlines()
    theirs = [(int(n), int(x)) for n, ls in (r.split("\t") for r in rows) for x in ls.split(";")]
    assert [(f.packet, f.length) for f in frames] == theirs and len(theirs) >= 3


@needs_tshark
def test_wrong_key_says_which_record(tmp_path):
    """A key log with a wrong master secret: decryption fails at the client Finished, the
    first protected record, in the packet tshark (with the right key) shows it in."""
    cap, key = SAMPLES / "tls12_aes128gcm.pcap", SAMPLES / "tls12_aes128gcm.keys"
    bad = []
    for ln in key.read_text().splitlines():
        if ln.startswith("CLIENT_RANDOM"):
            label, cr, secret = ln.split()
            ln = f"{label} {cr} {'00' * (len(secret) // 2)}"
        bad.append(ln)
    k = tmp_path / "bad.keys"
    k.write_text("\n".join(bad) + "\n")
    an, store = run(cap, [k])
    (c,) = [c for c in an.connections if c.tls]
    fin = tshark("-r", str(cap), "-o", f"tls.keylog_file:{key}", "-Y", "tls.handshake.type == 20", "-T", "fields", "-e", "frame.number").split()[0]
    m = re.fullmatch(r"decryption failed at record (\d+) \(packet (\d+)\)", c.tls.reason or "")
    assert m and m.group(2) == fin, c.tls.reason
    assert not store and not c.tls.decrypted
    assert all("00000000" not in n for n in c.notes)  # no secrets in notes


@pytest.mark.parametrize("name", ["tls13_aes128gcm", "tls13_chacha20", "tls13_aes256gcm", "tls13_hrr"])
def test_tls13_server_hello_lost_by_the_capture(name, tmp_path):
    """The packet holding the ServerHello dropped by the capture: the client's records are still
    decrypted (TLS 1.3 client secrets need no server random), with the cipher suite of the
    HelloRetryRequest or, without one, the suite whose key opens the client's first protected
    record. The suite is the one tshark reads in the whole capture's ServerHello, and the records
    agree with tshark's on the capture without it."""
    from wirefall.oracle.crosscheck import crosscheck_report

    if shutil.which("editcap") is None or shutil.which("tshark") is None:
        pytest.skip("editcap and tshark needed")
    src = SAMPLES / f"{name}.pcap"
    keys = [str(SAMPLES / f"{name}.keys")]
    out = subprocess.run(["tshark", "-r", str(src), "-Y", "tls.handshake.type==2", "-T", "fields", "-e", "frame.number",
                          "-e", "tls.handshake.ciphersuite"], capture_output=True, text=True, check=True).stdout.split("\n")
    sh_packet, suite = out[-2].split("\t") if out[-1] == "" else out[-1].split("\t")
    cut = tmp_path / "no-sh.pcapng"
    subprocess.run(["editcap", str(src), str(cut), sh_packet], check=True)
    an = analyze(str(cut), keylogs=keys)
    (c,) = [c for c in an.connections if c.tls]
    assert c.tls.cipher_suite_id == int(suite, 0) and c.tls.version == "TLS 1.3"
    assert any("ServerHello not in the capture" in n for n in c.notes)
    client = [f for f in an.frames if f.protocol == "tls" and f.direction == 0 and (f.fields or {}).get("decrypted")]
    assert len(client) >= 2  # the client's Finished and its request
    from wirefall.oracle.crosscheck import _TLS_NO_SH

    r = crosscheck_report(str(cut), keys, analysis=an)["tls"]
    assert r.problems == [] and r.matched + r.set_aside.get(_TLS_NO_SH, 0) >= len(client) + 1  # + the ClientHello
    assert set(r.set_aside) <= {_TLS_NO_SH}
