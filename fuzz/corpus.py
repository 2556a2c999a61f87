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
import re
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


# ------------------------------------------------------------------ the packet detail, as the UIs show one packet

DETAIL_MAX_PACKETS = 200  # packets whose detail is built per input (the first ones)
DETAIL_RECHECK = 12  # trees built again, last packet first, from a second source: caches must not change a tree
# output linear in input: one packet's tree holds at most this many nodes and label characters
# per byte of the capture, plus a constant (a packet of a few bytes still has its frame lines)
DETAIL_PER_BYTE = 64
DETAIL_CONST = 1 << 16
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


class DetailBroken(AssertionError):
    """An invariant of the packet detail (tree, bytes pane, Info) does not hold."""


# Functions the detail code calls inside an ``except Exception`` that turns any exception into
# a line of the tree ("[Malformed packet: …]"), an error of a bytes tab, or nothing (a line left
# out, wirefall's own Info): (module, attribute).  While ``Surfacing`` is on they record what
# they raise, so that a swallowed bug still counts as a crash, with its own traceback (one renamed
# away is skipped: ``tests/test_fuzz_detail37.py`` checks that each is there).
SWALLOWING = [
    ("wirefall.analyzer.detail", "_transport_and_frames"),  # packet_detail: "[Malformed packet: …]"
    ("wirefall.analyzer.detail", "decrypted_quic"),  # _quic_tabs, h3_wire_type, quic_crypto_frames
    ("wirefall.analyzer.detail", "_redecrypt"),  # decrypted_tls: the tab's error
    ("wirefall.analyzer.detail", "_quic_redecrypt"),  # decrypted_quic: the tab's error
    ("wirefall.analyzer.detail", "_udp_payload"),
    ("wirefall.analyzer.detail", "_crypto_frames_in"),  # quic_crypto_frames: None
    ("wirefall.analyzer.detail", "_crypto_packets"),
    ("wirefall.analyzer.info", "datagram_info"),  # _udp_info: wirefall's own Info instead
    ("wirefall.dissectors.quic", "frame_starts"),  # decrypted_quic: the tab's error
]


class Surfacing:
    """Context manager: while on, the functions of ``SWALLOWING`` and every display-filter
    field's getter (``detail._packet_fields`` leaves a field that raises out of the tree) record
    the exceptions they raise; ``raise_caught`` raises the first one again."""

    def __init__(self) -> None:
        self.caught: list[tuple[str, BaseException]] = []
        self.saved: list[tuple[object, str, object]] = []

    def _wrap(self, where: str, fn):
        caught = self.caught

        def wrapper(*a, **kw):
            try:
                return fn(*a, **kw)
            except Exception as e:
                caught.append((where, e))
                raise

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper

    def __enter__(self) -> Surfacing:
        import importlib

        from wirefall.analyzer.fields import FIELDS

        for mod, name in SWALLOWING:
            m = importlib.import_module(mod)
            orig = getattr(m, name, None)
            if orig is None:
                continue
            self.saved.append((m, name, orig))
            setattr(m, name, self._wrap(f"{mod.rsplit('.', 1)[-1]}.{name}", orig))
        for f in FIELDS.values():
            self.saved.append((f, "get", f.get))
            f.get = self._wrap(f"field {f.name}", f.get)
        return self

    def __exit__(self, *exc) -> None:
        for obj, name, orig in reversed(self.saved):
            setattr(obj, name, orig)
        self.saved.clear()
        self.caught.clear()

    def raise_caught(self, what: str) -> None:
        if self.caught:
            where, e = self.caught[0]
            self.caught.clear()
            e.add_note(f"(swallowed by the detail code: raised in {where}, while building {what})")
            raise e


class DetailChecker:
    """The invariants of what a selected packet shows.  ``report``: None raises ``DetailBroken``
    at the first broken one; else it is called with each message and checking goes on (the
    fuzzer records every distinct one instead of stopping at the first of a known bug)."""

    def __init__(self, report=None) -> None:
        from wirefall.analyzer.safetext import UNSAFE

        self.report = report
        self.unsafe = re.compile(f"[{UNSAFE}]")
        self.broken = 0

    def fail(self, msg: str) -> None:
        self.broken += 1
        if self.report is None:
            raise DetailBroken(msg)
        self.report(msg)

    def text(self, n: int, what: str, s) -> None:
        """Captured text on its way to a terminal or a page: a str, inert once escaped."""
        from wirefall.analyzer.safetext import printable

        if type(s) is not str:
            return self.fail(f"packet {n}: {what} is a {type(s).__name__}: {s!r:.200}")
        shown = printable(s)
        if self.unsafe.search(shown):
            return self.fail(f"packet {n}: {what} keeps a control character once escaped: {shown!r:.200}")
        try:
            shown.encode("utf-8")  # (the TUI and the web page write UTF-8)
        except UnicodeEncodeError as e:
            self.fail(f"packet {n}: {what} cannot be written as UTF-8 once escaped ({e})")

    def nodes(self, nodes, n: int, data: bytes, tabs: list, budget: int) -> None:
        """Every node of packet ``n``'s tree: well typed, its byte range inside the bytes it
        names (``source`` 0 the packet, k the k-th bytes tab: the decrypted TLS records, then
        the decrypted QUIC packets, as the TUI lists them), its label a str that is inert once
        escaped, its field name a field name; the whole tree within ``budget`` nodes and label
        characters."""
        from wirefall.analyzer.detail import Node

        if type(nodes) is not list or not nodes:
            return self.fail(f"packet {n}: packet_detail gave {nodes!r:.200}")
        chars = seen = 0
        widest = (0, "")
        stack = [(x, "") for x in reversed(nodes)]
        while stack:
            x, under = stack.pop()
            seen += 1
            if type(x) is not Node:
                self.fail(f"packet {n}: a tree node is a {type(x).__name__}: {x!r:.200}{under}")
                continue
            self.text(n, "a node's label", x.label)
            chars += len(x.label) if type(x.label) is str else 0
            what = f"node {str(x.label)[:100]!r}{under}"
            if x.abbrev is not None and (type(x.abbrev) is not str or not _FIELD_NAME.fullmatch(x.abbrev)):
                self.fail(f"packet {n}: {what} has abbrev {x.abbrev!r:.120}, not a field name")
            if any(type(v) is not int for v in (x.start, x.end, x.source)):
                self.fail(f"packet {n}: {what}: start, end, source {x.start!r:.40}, {x.end!r:.40}, {x.source!r:.40}")
            elif x.start >= 0 or x.end >= 0:
                self._range(n, what, x, data, tabs)
            elif not 0 <= x.source <= len(tabs):
                self.fail(f"packet {n}: {what} names bytes tab {x.source}, the packet has {len(tabs)}")
            if type(x.children) is not list:
                self.fail(f"packet {n}: {what} has children {type(x.children).__name__}")
                continue
            if len(x.children) > widest[0]:
                widest = (len(x.children), str(x.label)[:60])
            inner = f" (under {str(x.label)[:50]!r})"
            stack.extend((c, inner) for c in reversed(x.children))
            if seen > budget or chars > budget:
                return self.fail(f"packet {n}: the tree passed {budget} nodes or label characters, {DETAIL_PER_BYTE} per byte "
                                 f"of the capture (the widest node so far: {widest[1]!r} with {widest[0]} children)")

    def _range(self, n: int, what: str, x, data: bytes, tabs: list) -> None:
        if not 0 <= x.start <= x.end:
            return self.fail(f"packet {n}: {what} has byte range [{x.start}, {x.end})")
        if x.source == 0:
            if x.end > len(data):
                self.fail(f"packet {n}: {what} covers [{x.start}, {x.end}) of a packet of {len(data)} bytes")
            return
        if not 1 <= x.source <= len(tabs):
            return self.fail(f"packet {n}: {what} points at bytes tab {x.source}, the packet has {len(tabs)}")
        t = tabs[x.source - 1]
        size = len(t.data) if t.error is None else t.pt_length
        if x.end > size:
            self.fail(f"packet {n}: {what} covers [{x.start}, {x.end}) of bytes tab {x.source} "
                      f"({t.title}{', ' + t.error if t.error else ''})")

    def tab(self, n: int, r, kind: str) -> None:
        if type(r.data) is not bytes or (r.error is not None and type(r.error) is not str):
            return self.fail(f"packet {n}: {kind} tab data {type(r.data).__name__}, error {r.error!r:.80}")
        if r.error is None and len(r.data) != r.pt_length:
            self.fail(f"packet {n}: {kind} tab of {len(r.data)} bytes says {r.pt_length}")
        if r.error is not None and r.data:
            self.fail(f"packet {n}: {kind} tab has bytes and an error ({r.error!r:.80})")
        self.text(n, f"the {kind} tab's title", r.title)
        if r.error is not None:
            self.text(n, f"the {kind} tab's error", r.error)

    def record(self, n: int, rec) -> None:
        """The packet list's record: its columns text, the Info within tshark's column."""
        from wirefall.analyzer.info import COL_MAX_INFO_LEN

        if rec.number != n:
            self.fail(f"packet {n}: its record says packet {rec.number}")
        for a in ("source", "destination", "protocol", "info"):
            self.text(n, f"the {a} column", getattr(rec, a))
        if type(rec.info) is str and len(rec.info.encode("utf-8", "surrogatepass")) >= COL_MAX_INFO_LEN:
            self.fail(f"packet {n}: an Info of {len(rec.info)} characters passes tshark's column ({COL_MAX_INFO_LEN} bytes)")
        if type(rec.protocol) is str and not rec.protocol:
            self.fail(f"packet {n}: empty Protocol column")

    def packet(self, an, src, n: int, budget: int, sur: Surfacing | None = None):
        """What the TUI and the web app build when packet ``n`` is selected (``ui/tui/app.py``
        ``show_packet``, ``ui/web/views.py`` ``packet_detail_view``): the tree, the packet's
        bytes and their hex dump, the bytes tabs (decrypted TLS records, decrypted QUIC
        packets) — checked; returns the tree."""
        from wirefall.analyzer.detail import decrypted_quic, decrypted_tls, frames_on_packet, hexdump, packet_bytes, packet_detail

        frames_on_packet(an, n)
        nodes = packet_detail(an, src, n)
        if sur is not None:
            sur.raise_caught(f"the tree of packet {n}")
        data = packet_bytes(src, an, n)
        caplen = an.index.caplen[n - 1]
        if type(data) is not bytes or len(data) != caplen:
            self.fail(f"packet {n}: packet_bytes gave {len(data)} bytes, the index says {caplen}")
        hx = hexdump(data)
        if len(hx) != (len(data) + 15) // 16 or not all(ln.isascii() and ln.isprintable() for ln in hx):
            self.fail(f"packet {n}: a hex dump of {len(hx)} lines for {len(data)} bytes, or not printable ASCII")
        tls = decrypted_tls(an, src, n)
        quic = decrypted_quic(an, src, n)
        if sur is not None:
            sur.raise_caught(f"the bytes tabs of packet {n}")
        tabs: list = [*tls, *quic]  # (the TUI's bytes tabs after the packet's own, in this order)
        for k, r in enumerate(tabs):
            self.tab(n, r, "Decrypted TLS" if k < len(tls) else "Decrypted QUIC")
        self.nodes(nodes, n, data, tabs, budget)
        return nodes


def tree_shape(nodes) -> list:
    """A tree as nested lists (label, range, source, field name, children): to compare two."""
    return [(x.label, x.start, x.end, x.source, x.abbrev, tree_shape(x.children)) for x in nodes]


def _first_diff(a: list, b: list, path: str = "") -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x[:5] != y[:5]:
            return f"at {path}/{i}: {x[:5]!r:.300} vs {y[:5]!r:.300}"
        d = _first_diff(x[5], y[5], f"{path}/{i}")
        if d:
            return d
    return f"at {path}: {len(a)} vs {len(b)} nodes" if len(a) != len(b) else ""


def detail_check(an, path: str, max_packets: int = DETAIL_MAX_PACKETS, input_bytes: int = 0,
                 recheck: int = DETAIL_RECHECK, report=None) -> int:
    """Build and check what the UIs show for each of the first ``max_packets`` packets of
    ``an`` (its capture at ``path``): the detail tree (``packet_detail``), the bytes pane
    (``packet_bytes``, ``hexdump``, ``decrypted_tls``, ``decrypted_quic``) and the packet list's
    record (``packet_record``: Source, Destination, Protocol, Info), each checked
    (``DetailChecker``); then the records a window at a time (``packet_records``, as the lists
    read them) must be the same, and the last ``recheck`` trees, built again last packet first
    from a second source, too; the packets before the first and after the last are one line.
    Any exception — also one the detail code would swallow into the tree (``Surfacing``) —
    raises; a broken invariant raises ``DetailBroken`` (or goes to ``report``).  Returns the
    number of packets checked."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.detail import packet_detail
    from wirefall.analyzer.packet_record import packet_record, packet_records

    ck = DetailChecker(report)
    npk = min(len(an.index), max_packets)
    budget = DETAIL_PER_BYTE * max(input_bytes, os.path.getsize(path)) + DETAIL_CONST
    src = PacketSource(path)
    src2 = PacketSource(path)  # (a second view of the capture, as a second web page: caches are per source)
    try:
        with Surfacing() as sur:
            shapes = {}
            recs = []
            for n in range(1, npk + 1):
                nodes = ck.packet(an, src, n, budget, sur)
                if n > npk - recheck:
                    shapes[n] = tree_shape(nodes)
                rec = packet_record(an, src, n)
                sur.raise_caught(f"the packet list's record of packet {n}")
                ck.record(n, rec)
                recs.append(rec)
            got = list(packet_records(an, src, range(1, npk + 1)))
            sur.raise_caught("the packet list's records")
            if got != recs:
                bad = next((i for i, (a, b) in enumerate(zip(got, recs)) if a != b), min(len(got), len(recs)))
                ck.fail(f"packet {bad + 1}: packet_records gives {got[bad] if bad < len(got) else None!r:.300}, "
                        f"packet_record {recs[bad] if bad < len(recs) else None!r:.300}")
            for k in (0, -1, len(an.index) + 1):
                t = packet_detail(an, src, k)
                if type(t) is not list or len(t) != 1 or t[0].children:
                    ck.fail(f"packet {k}: packet_detail of a packet not in the capture of {len(an.index)} gave {t!r:.200}")
            for n in sorted(shapes, reverse=True):
                again = tree_shape(packet_detail(an, src2, n))
                sur.raise_caught(f"the tree of packet {n} again")
                if again != shapes[n]:
                    ck.fail(f"packet {n}: its tree differs when built again after packet {n + 1} "
                            f"{_first_diff(shapes[n], again)}")
    finally:
        src.close()
        src2.close()
    return npk


def detail_bytes(raw: bytes, keys: str | None = None, limits: dict | None = None, max_packets: int = DETAIL_MAX_PACKETS,
                 report=None) -> int:
    """The ``detail`` fuzz target on capture bytes: ``analyze`` them (a file that is no capture
    is ``CaptureError``, the documented answer: 0 packets checked), then ``detail_check``."""
    from wirefall.analyzer.capture import CaptureError
    from wirefall.analyzer.keylog import KeyLog
    from wirefall.analyzer.pipeline import analyze

    kl = KeyLog()
    if keys:
        kl.add_text(keys, "fuzz")
    d = "/dev/shm" if os.path.isdir("/dev/shm") else None
    fd, path = tempfile.mkstemp(suffix=".pcap", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        try:
            an = analyze(path, keylog=kl, limits=limits)
        except CaptureError:
            return 0
        return detail_check(an, path, max_packets, len(raw), report=report)
    finally:
        _unlink(path)
