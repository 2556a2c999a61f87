"""Fuzz seeds recorded from real captures, shared by the hypothesis tests and ``fuzz/run.py``.

Each dissector target is fed exactly what the pipeline fed it while analysing a real
sample capture: the recorder wraps the dissectors' public entry points (and, for QUIC
frames, the decrypted-payload parser) for the duration of ``analyze()`` and keeps the
calls grouped per dissector instance (one connection).  A seed is a list of *ops*:
``(header ints..., bytes)``.  ``replay(target, ops)`` feeds them to a fresh dissector.

Serialised form (what atheris/libFuzzer mutates): per op, the target's header bytes,
a 2-byte big-endian length, the data.  ``decode`` is total: any byte string decodes
(a short tail becomes the last op's data), so every mutation is a valid input.
"""
from __future__ import annotations

import gzip
import os
import struct
import tempfile
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"

MAX_OPS = 48  # ops kept per seed
MAX_OP_BYTES = 4096  # bytes kept per op
MAX_SEEDS = 12  # seeds kept per target

# (capture, key log or None) — small, diverse captures per protocol.
SEED_CAPTURES = [
    (SAMPLES / "http/http1-nginx.pcap", None),
    (SAMPLES / "http/http1-node.pcap", None),
    (SAMPLES / "http/h2c-curl.pcap", None),
    (SAMPLES / "http/h2c-upgrade.pcap", None),
    (SAMPLES / "spdy/spdy2-plain.pcap", None),
    (SAMPLES / "spdy/spdy3-plain.pcap", None),
    (SAMPLES / "spdy/spdy3.1-tls.pcap", SAMPLES / "spdy/spdy3.1-tls.keys"),
    (SAMPLES / "tls/tls12_aes128gcm.pcap", SAMPLES / "tls/tls12_aes128gcm.keys"),
    (SAMPLES / "tls/tls12_cbc_sha1_noetm.pcap", SAMPLES / "tls/tls12_cbc_sha1_noetm.keys"),
    (SAMPLES / "tls/tls13_hrr.pcap", SAMPLES / "tls/tls13_hrr.keys"),
    (SAMPLES / "tls/tls13_keyupdate.pcap", SAMPLES / "tls/tls13_keyupdate.keys"),
    (SAMPLES / "tls/curl_h2_nghttpd.pcap", SAMPLES / "tls/curl_h2_nghttpd.keys"),
    (SAMPLES / "quic/aioquic-h3.pcap", SAMPLES / "quic/aioquic-h3.keys"),
    (SHARED / "quic-illustrated/capture.pcap", SHARED / "quic-illustrated/keylog.txt"),
    (SHARED / "tls12/capture.pcap", SHARED / "tls12/keylog.txt"),
    (SHARED / "tls13/capture.pcap", SHARED / "tls13/keylog.txt"),
    (SHARED / "pcap2qlog/ngtcp2-29-dsb.pcapng", None),
    (SHARED / "retina/quic_retry.pcapng", None),
    (SHARED / "gquic/dragon3.pcap", None),
    (SAMPLES / "page/page-h3.pcapng", SAMPLES / "page/page-h3.keys"),
]

# target -> (number of header bytes per op, description)
HEADERS = {
    "http1": 1,  # direction (bit 7 set: gap of len bytes instead of data)
    "h2": 1,
    "spdy": 1,
    "tls": 1,
    "quic": 1,  # direction; data = one UDP datagram
    "quic_frames": 2,  # direction, epoch; data = decrypted packet payload
    "h3": 3,  # direction, stream id, fin
    "gquic": 1,
    "dns": 0,
}
STREAM_TARGETS = ("http1", "h2", "spdy", "tls")
DISSECTOR_TARGETS = tuple(HEADERS)


def available_captures() -> list[tuple[Path, Path | None]]:
    return [(c, k) for c, k in SEED_CAPTURES if c.exists()]


# ------------------------------------------------------------------ serialisation

def encode(target: str, ops: list[tuple]) -> bytes:
    nh = HEADERS[target]
    if nh == 0:  # one message, no framing
        return bytes(ops[0][-1]) if ops else b""
    out = bytearray()
    for op in ops:
        *hdr, data = op
        out += bytes(h & 0xFF for h in hdr[:nh])
        data = bytes(data[:0xFFFF])
        out += struct.pack(">H", len(data)) + data
    return bytes(out)


def decode(target: str, blob: bytes) -> list[tuple]:
    nh = HEADERS[target]
    if nh == 0:
        return [(blob,)]
    ops = []
    p, n = 0, len(blob)
    while p + nh < n and len(ops) < 4 * MAX_OPS:
        hdr = tuple(blob[p : p + nh])
        p += nh
        ln = int.from_bytes(blob[p : p + 2], "big") if p + 2 <= n else n - p
        p += 2
        ops.append(hdr + (blob[p : p + ln],))
        p += ln
    return ops


# ------------------------------------------------------------------ replay

def replay(target: str, ops: list[tuple], limits: dict | None = None) -> list:
    """Feed ``ops`` to a fresh dissector of ``target``; return everything it produced."""
    limits = limits or {}
    out: list = []
    if target == "http1":
        from wirefall.dissectors.http1 import H1Connection

        c = H1Connection(max_head=limits.get("http1_header_bytes", 1 << 20), max_fields=limits.get("http1_header_count", 1000))
        for i, (d, data) in enumerate(ops, 1):
            out += c.gap(d & 1, len(data), i) if d & 0x80 else c.receive(d & 1, data, i)
        out += c.end()
    elif target == "h2":
        from wirefall.dissectors.http2 import H2Connection

        c = H2Connection(mid_stream=bool(ops and ops[0][0] & 0x40), max_header_list=limits.get("hpack_header_list", 1 << 20),
                         max_continuation=limits.get("continuation_frames", 1000))
        for i, (d, data) in enumerate(ops, 1):
            if d & 0x80:
                c.gap(d & 1, len(data), i)
            else:
                out += c.receive(d & 1, data, i)
        out += c.notes
    elif target == "spdy":
        from wirefall.dissectors.spdy import SpdyConnection

        c = SpdyConnection(header_limit=limits.get("spdy_header_block", 1 << 20))
        for d, data in ops:
            out += c.gap(d & 1, len(data)) if d & 0x80 else c.receive(d & 1, data)
    elif target == "tls":
        out += _replay_tls(ops)
    elif target == "quic":
        from wirefall.dissectors.quic import QuicConnectionDissector

        q = QuicConnectionDissector(None, limits.get("quic_stream_buffer", 16 << 20))
        for i, (d, data) in enumerate(ops, 1):
            out += q.datagram(d & 1, data, i)
            out += q.pop_events()
    elif target == "quic_frames":
        from wirefall.dissectors.quic import QuicConnectionDissector, QuicPacket

        q = QuicConnectionDissector(None, limits.get("quic_stream_buffer", 16 << 20))
        ptypes = ("Initial", "0-RTT", "Handshake", "1-RTT")
        for i, (d, epoch, data) in enumerate(ops, 1):
            qp = QuicPacket(d & 1, i, ptypes[epoch & 3])
            q._frames(d & 1, qp, bytes(data), epoch & 3, i)
            out += qp.frames
            out += q.pop_events()
    elif target == "h3":
        from wirefall.dissectors.http3 import Http3Dissector

        h = Http3Dissector(limits.get("hpack_header_list", 1 << 20))
        for i, (d, sid, fin, data) in enumerate(ops, 1):
            out += h.stream_data(d & 1, sid & 0x3F, data, i, bool(fin & 1))
        out += h.finish()
        out += h.errors
    elif target == "gquic":
        from wirefall.dissectors.gquic import GquicDissector

        g = GquicDissector()
        for i, (d, data) in enumerate(ops, 1):
            out.append(g.datagram(d & 1, data, i))
    elif target == "dns":
        from wirefall.dissectors import dns

        for (data,) in ops:
            try:
                out.append(dns.parse(data))
            except dns.DnsError as e:  # the documented way dns.parse reports bad input
                out.append(e)
    else:
        raise ValueError(target)
    return out


def _replay_tls(ops):
    from wirefall.dissectors import tls as T

    readers = (T.RecordReader(), T.RecordReader())
    hs = (T.HandshakeReader(), T.HandshakeReader())
    offs = [0, 0]
    out = []
    parsers = {1: T.parse_client_hello, 2: T.parse_server_hello, 8: T.parse_encrypted_extensions,
               11: T.parse_certificate, 4: T.parse_new_session_ticket, 67: T.parse_next_protocol}
    for i, (d, data) in enumerate(ops, 1):
        k = d & 1
        if d & 0x80:
            readers[k].gap(offs[k], len(data))
            offs[k] += len(data)
            continue
        for rec in readers[k].feed(data, offs[k], i):
            out.append(rec)
            if rec.sslv2:
                out.append(T.parse_sslv2_client_hello(rec.body))
            elif rec.type == 22:
                for mtype, body in hs[k].feed(rec.body):
                    p = parsers.get(mtype)
                    if p is not None:
                        try:
                            out.append(p(body))
                        except ValueError as e:  # parse_* report malformed messages with ValueError
                            out.append(e)
            elif rec.type == 21:
                out.append(T.parse_alert(rec.body))
        offs[k] += len(data)
    return out


# ------------------------------------------------------------------ recording

def _wrap(cls, name, target, sink, make_op):
    orig = getattr(cls, name)

    def wrapper(self, *a, **kw):
        seq = sink.setdefault(id(self), (self, []))[1]
        if len(seq) < MAX_OPS:
            op = make_op(*a, **kw)
            if op is not None:
                seq.append(op)
        return orig(self, *a, **kw)

    setattr(cls, name, wrapper)
    return (cls, name, orig)


def _trim(b) -> bytes:
    return bytes(b)[:MAX_OP_BYTES]


@lru_cache(maxsize=1)
def seeds() -> dict[str, list[list[tuple]]]:
    """Record seeds from the available sample captures (a few seconds; cached)."""
    from wirefall.analyzer.keylog import KeyLog
    from wirefall.analyzer.pipeline import analyze
    from wirefall.dissectors import dns, gquic, http1, http2, http3, quic, spdy
    from wirefall.dissectors import tls as T

    sinks: dict[str, dict] = {t: {} for t in HEADERS}
    patches = [
        _wrap(http1.H1Connection, "receive", "http1", sinks["http1"], lambda d, data, pkt, off=None: (d, _trim(data))),
        _wrap(http1.H1Connection, "gap", "http1", sinks["http1"], lambda d, ln, pkt: (0x80 | d, b"\0" * min(ln, 4096))),
        _wrap(http2.H2Connection, "receive", "h2", sinks["h2"], lambda d, data, pkt, off=None: (d, _trim(data))),
        _wrap(spdy.SpdyConnection, "receive", "spdy", sinks["spdy"], lambda d, data: (d, _trim(data))),
        _wrap(T.RecordReader, "feed", "tls", sinks["tls"], lambda data, off, pkt: (0, _trim(data))),
        _wrap(quic.QuicConnectionDissector, "datagram", "quic", sinks["quic"], lambda d, data, pkt: (d, _trim(data))),
        _wrap(quic.QuicConnectionDissector, "_frames", "quic_frames", sinks["quic_frames"],
              lambda d, qp, plain, epoch, pkt: (d, epoch, _trim(plain))),
        _wrap(http3.Http3Dissector, "stream_data", "h3", sinks["h3"],
              lambda d, sid, data, pkt, fin=False, offset=0: (d, sid, int(fin), _trim(data)) if sid < 64 else None),
        _wrap(gquic.GquicDissector, "datagram", "gquic", sinks["gquic"], lambda d, data, pkt: (d, _trim(data))),
    ]
    dns_seen: list = []
    orig_dns = dns.parse

    def dns_parse(data):
        if len(dns_seen) < MAX_SEEDS:
            dns_seen.append([(bytes(data),)])
        return orig_dns(data)

    dns.parse = dns_parse
    try:
        for cap, keys in available_captures():
            kl = KeyLog()
            if keys is not None:
                kl.add_file(str(keys))
            analyze(str(cap), keylog=kl)
    finally:
        for cls, name, orig in patches:
            setattr(cls, name, orig)
        dns.parse = orig_dns
    out: dict[str, list] = {}
    for t, sink in sinks.items():
        lst = [seq for _, seq in sink.values() if seq]
        if t == "tls":
            lst = _tls_pairs(sink)
        # prefer diverse seeds: spread the picks across the list
        if len(lst) > MAX_SEEDS:
            step = len(lst) / MAX_SEEDS
            lst = [lst[int(i * step)] for i in range(MAX_SEEDS)]
        out[t] = lst
    dns_seen += _dns_payloads(MAX_SEEDS - len(dns_seen))
    out["dns"] = dns_seen
    return out


def _dns_payloads(n: int) -> list:
    """DNS messages (UDP port 53) of the real Amazon page load, read without analysing it."""
    from wirefall.analyzer.capture import read_capture
    from wirefall.analyzer.packet import PROTO_UDP, Decoder

    cap = SHARED / "pageload-amazon/amazon1.cap.gz"
    if n <= 0 or not cap.exists():
        return []
    dec, res, seen = Decoder(), [], set()
    for rec in read_capture(str(cap)):
        d = dec.decode(rec.linktype, rec.data)
        if d is None or type(d) is str or d.proto != PROTO_UDP or 53 not in (d.sport, d.dport):
            continue
        b = bytes(d.payload)
        if b[2:3] not in seen or len(res) < n // 2:  # queries and answers
            seen.add(b[2:3])
            res.append([(b,)])
        if len(res) >= n:
            break
    return res


def _tls_pairs(sink) -> list:
    """RecordReaders are made in (client, server) pairs by the TLS session: interleave
    each pair's feeds into one seed with directions."""
    readers = list(sink.values())  # insertion order = creation order of first feed
    # group by the session that owns them: consecutive readers of the same session share
    # a 'pair' — the session object is not visible here, so pair readers whose first feed
    # looks like a ClientHello (direction 0) with the next one (direction 1)
    seeds, i = [], 0
    while i < len(readers):
        _, a = readers[i]
        if a and a[0][1][:1] == b"\x16" and len(a[0][1]) > 5 and a[0][1][5:6] == b"\x01" and i + 1 < len(readers):
            _, b = readers[i + 1]
            seq = [(0, x[1]) for x in a[:4]] + [(1, x[1]) for x in b[:6]] + [(0, x[1]) for x in a[4:12]] + [(1, x[1]) for x in b[6:12]]
            seeds.append(seq)
            i += 2
        else:
            seeds.append([(0, x[1]) for x in a])
            i += 1
    return seeds


# ------------------------------------------------------------------ small captures for the pipeline target

def small_captures(max_packets: int = 40) -> list[tuple[str, bytes, str | None]]:
    """(name, pcap/pcapng bytes, key log text) — the first packets of each seed capture."""
    res = []
    for cap, keys in available_captures():
        raw = cap.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        raw = head_packets(raw, max_packets)
        kt = keys.read_text() if keys is not None else None
        res.append((f"{cap.parent.name}/{cap.name}", raw, kt))
    return res


def head_packets(raw: bytes, n: int) -> bytes:
    """The file header and first ``n`` packet records of a pcap, or first blocks of a pcapng."""
    magic = raw[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        p = 24
        for _ in range(n):
            if p + 16 > len(raw):
                break
            incl = struct.unpack_from(e + "I", raw, p + 8)[0]
            p += 16 + incl
        return raw[:p]
    if magic == b"\x0a\x0d\x0d\x0a":
        e = "<" if raw[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        p, pk = 0, 0
        while p + 12 <= len(raw) and pk < n:
            btype, blen = struct.unpack_from(e + "II", raw, p)
            if blen < 12:
                break
            if btype in (6, 3):
                pk += 1
            p += blen
        return raw[:p]
    return raw


def record_offsets(raw: bytes) -> list[int]:
    """Byte offset of each packet record (pcap) / block (pcapng) in ``raw``: cut points."""
    magic = raw[:4]
    offs = []
    if magic == b"\x0a\x0d\x0d\x0a":
        e = "<" if raw[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        p = 0
        while p + 12 <= len(raw):
            btype, blen = struct.unpack_from(e + "II", raw, p)
            if blen < 12:
                break
            if btype in (6, 3):
                offs.append(p)
            p += blen
        return offs
    e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    p = 24
    while p + 16 <= len(raw):
        offs.append(p)
        p += 16 + struct.unpack_from(e + "I", raw, p + 8)[0]
    return offs


def analyze_bytes(raw: bytes, keys: str | None = None, limits: dict | None = None, keep: bool = False):
    """Run the whole pipeline on capture bytes (written to a private temp file).  With
    ``keep`` the file stays while the returned Analysis lives (views re-read packets)."""
    import weakref

    from wirefall.analyzer.keylog import KeyLog
    from wirefall.analyzer.pipeline import analyze

    kl = KeyLog()
    if keys:
        kl.add_text(keys, "fuzz")
    d = "/dev/shm" if os.path.isdir("/dev/shm") else None
    fd, path = tempfile.mkstemp(suffix=".pcap", dir=d)
    done = False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        an = analyze(path, keylog=kl, limits=limits)
        if keep:
            weakref.finalize(an, _unlink, path)
            done = True
        return an
    finally:
        if not done:
            _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
